//! `toolhost serve` over HTTP and `toolhost mcp`: the protocol servers on stdio or an HTTP
//! listener.

use crate::*;

/// Serve `route` over HTTP until the process is interrupted.
pub(crate) async fn serve_http(
    what: &str,
    args: &HttpArgs,
    addr: std::net::SocketAddr,
    route: impl FnOnce(usize, CancellationToken) -> toolhost::http_server::Route,
) -> Result<ExitCode> {
    let options = args.options(what, addr)?;
    let shutdown = CancellationToken::new();
    let route = route(options.max_body_bytes, shutdown.clone());
    let path = route.path;
    let listener = toolhost::http_server::HttpListener::bind(options, vec![route])
        .await
        .with_context(|| format!("listening on {addr}"))?;
    // Tests and scripts read the address (the port, for port 0) from here:
    // one write, so that a reader never sees the line cut short
    // (`eprintln!` writes each formatted piece by itself).
    let line = format!(
        "toolhost {what}: listening on http://{}{path}\n",
        listener.local_addr()
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    #[cfg(unix)]
    {
        let stop = shutdown.clone();
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::spawn(async move {
                term.recv().await;
                stop.cancel();
            });
        }
    }
    listener
        .run(shutdown)
        .await
        .with_context(|| format!("serving {what} over HTTP"))?;
    Ok(ExitCode::SUCCESS)
}

/// How often `mcp` looks at the extension files.
pub(crate) const RELOAD_INTERVAL: Duration = Duration::from_millis(300);

pub(crate) async fn mcp(
    host: Host,
    options: HostOptions,
    http: HttpArgs,
    sessions: SessionArgs,
) -> Result<ExitCode> {
    // Recorded: the tools it offers too, for a replay to offer.
    let recorded = options.record.clone().map(|to| (to, host.active_tools()));
    // Everything that decides what loads: a reload applies the same trust
    // rules as the first load.
    let mut watch = vec![
        host.workspace().join(".toolhost").join("extensions"),
        host.workspace()
            .join(toolhost::extensions::policy::POLICY_FILE),
    ];
    if let Some(config) = toolhost::extensions::policy::default_user_config_dir() {
        watch.push(config.join(toolhost::extensions::policy::POLICY_FILE));
        watch.push(config.join(toolhost::extensions::trust::TRUST_FILE));
        watch.push(config.join("extensions"));
    }
    watch.extend(options.extensions.iter().cloned());
    let factory: toolhost::mcp::HostFactory = Arc::new(move || {
        let builder = options.builder();
        Box::pin(builder.build())
    });
    let server = toolhost::mcp::McpServer::new(host)
        .log(Arc::new(|line| eprintln!("toolhost mcp: {}", escape(line))))
        .reload(toolhost::mcp::Reload {
            factory,
            watch,
            interval: RELOAD_INTERVAL,
        });
    if let Some(addr) = http.http {
        return serve_http("mcp", &http, addr, |max_body, shutdown| {
            server.http_route(max_body, sessions.bounds(), shutdown)
        })
        .await;
    }
    let served = match recorded {
        // Recorded: the lines it reads too, for a replay to feed.
        Some((to, offered)) => {
            let (input, output) = to.stdio(offered, tokio::io::stdin(), tokio::io::stdout());
            server.serve(input, output).await
        }
        None => server.serve_stdio().await,
    };
    served.context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
}
