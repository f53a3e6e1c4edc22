//! `toolhost mcp --http`: MCP's Streamable HTTP at `/mcp`, on the shared listener
//! ([`crate::http_server`]): each body judged first ([`super::wire`]), a call's turn
//! taken as it arrives, the session bounds, and a call cancelled when its client goes
//! away for good.

use super::*;

impl McpServer {
    /// Streamable HTTP at `/mcp`, for [`crate::http_server::HttpListener`]: request
    /// bodies up to `max_body_bytes`; handshake sessions within `bounds`
    /// ([`sessions`]); the listener checks `Host`, `Origin` and the token
    /// first. Cancelling `shutdown` ends every session.
    #[cfg(feature = "http")]
    pub fn http_route(
        &self,
        max_body_bytes: usize,
        bounds: SessionBounds,
        shutdown: CancellationToken,
    ) -> crate::http_server::Route {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        self.start_watching();
        let shared = Arc::downgrade(&self.shared);
        let bounded = Arc::new(sessions::BoundedSessions::local(bounds).on_close(Arc::new(
            move |id: &str| {
                if let Some(shared) = shared.upgrade() {
                    shared.processes.close(id);
                    McpServer { shared }.forget_session(&format!("http:{id}"));
                }
            },
        )));
        sessions::BoundedSessions::reap_idle(&bounded, shutdown.clone());
        let config = StreamableHttpServerConfig::default()
            // The listener has checked Host and Origin by its own rules.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(max_body_bytes)
            .with_cancellation_token(shutdown);
        let server = self.clone();
        let service = StreamableHttpService::new(move || Ok(server.clone()), bounded, config);
        let server = self.clone();
        crate::http_server::Route {
            path: "/mcp",
            handler: Arc::new(move |request| {
                let (service, server) = (service.clone(), server.clone());
                Box::pin(async move {
                    // A call takes its turn once its request has arrived
                    // whole, before rmcp gives it a task.
                    let (parts, body) = request.into_parts();
                    let body = match crate::http_server::read_body(body, max_body_bytes).await {
                        Ok(body) => body,
                        Err(refused) => return refused,
                    };
                    // A JSON body rmcp would refuse with a bare 415, answer
                    // without its id, or misread is answered here, 400 with
                    // the JSON-RPC error that fits ([`wire::classify`]). Any
                    // other media type is rmcp's to refuse (415).
                    let json = parts.method == http::Method::POST
                        && parts
                            .headers
                            .get(http::header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok())
                            .is_some_and(|v| v.trim_start().starts_with("application/json"));
                    // Only a `tools/call` takes a turn: one that is never
                    // answered would hold up nothing, but a stream kept
                    // open would hold its turn as long. (A body of another
                    // media type is refused by rmcp and runs nothing.)
                    let mut call = false;
                    if json {
                        match wire::classify(&body) {
                            wire::Read::Message(message) => call = wire::is_tool_call(&message),
                            wire::Read::Answer(rejection) => {
                                return crate::http_server::rejected(
                                    http::StatusCode::BAD_REQUEST,
                                    &rejection,
                                );
                            }
                            wire::Read::Drop => {
                                let rejection = crate::jsonrpc::Rejection::new(
                                    None,
                                    crate::jsonrpc::code::INVALID_REQUEST,
                                    "Invalid request: the message cannot be read",
                                );
                                return crate::http_server::rejected(
                                    http::StatusCode::BAD_REQUEST,
                                    &rejection,
                                );
                            }
                        }
                    }
                    let mut request =
                        http::Request::from_parts(parts, http_body_util::Full::new(body));
                    if call {
                        request.extensions_mut().insert(server.arrival());
                        // The call owns its `--max-requests` permit from
                        // here: rmcp may answer with a stream before the
                        // call starts, and a client that drops that stream
                        // at once must not free the place of a call that
                        // still runs (the call takes it when it starts; a
                        // request rmcp drops unrun releases it).
                        let listener = request
                            .extensions()
                            .get::<crate::http_server::PermitSlot>()
                            .cloned();
                        if let Some(listener) = listener {
                            let own = crate::http_server::PermitSlot::holding(listener.take());
                            request.extensions_mut().insert(own);
                        }
                    }
                    // In a handshake session, rmcp answers a POST on a stream
                    // of its own but does not cancel the call when that
                    // stream's client goes away; this token does.
                    let gone = resume::ClientGone::default();
                    request.extensions_mut().insert(gone.clone());
                    let (response, refused) = sessions::REFUSED
                        .scope(std::cell::Cell::new(false), async move {
                            let response = service.handle(request).await;
                            (response, sessions::REFUSED.with(|r| r.get()))
                        })
                        .await;
                    if refused {
                        return too_many_sessions(bounds);
                    }
                    response.map(|body| crate::http_server::hold(body, gone.guard()))
                })
            }),
        }
    }
}

/// 503 for an `initialize` past the session bound: what the bound is, what
/// frees a place, and how to raise it. Nothing was created.
#[cfg(feature = "http")]
pub(super) fn too_many_sessions(
    bounds: SessionBounds,
) -> http::Response<crate::http_server::HttpBody> {
    crate::http_server::plain(
        http::StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "Service unavailable: this server already keeps {} MCP sessions, its limit \
             (--max-sessions); a session ends when its client closes it (DELETE /mcp) or after \
             {} s without a request (--session-idle). Start the server with a higher \
             --max-sessions to allow more.",
            bounds.max,
            bounds.idle.as_secs()
        ),
    )
}
