//! `toolhost workspace serve DIR`: the far end of a remote workspace, for a
//! toolhost elsewhere that reaches it with `--workspace-exec` (the work is
//! `toolhost::workspace_service`'s). Its stdout carries the protocol, so
//! nothing else is ever printed there; what goes wrong goes to stderr.

use crate::*;

pub(crate) async fn workspace(command: WorkspaceCommand, no_network: bool) -> Result<ExitCode> {
    match command {
        WorkspaceCommand::Serve {
            dir,
            allow_unconfined,
        } => {
            let jail = if allow_unconfined {
                toolhost::JailMode::Auto
            } else {
                toolhost::JailMode::Required
            };
            let builder = Host::builder()
                .workspace(&dir)
                .jail(jail)
                .commands(|p| p.network(!no_network));
            toolhost::workspace_service::serve_workspace(
                builder,
                std::io::stdin(),
                std::io::stdout(),
            )
            .await
            .with_context(|| format!("serving the workspace {}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
