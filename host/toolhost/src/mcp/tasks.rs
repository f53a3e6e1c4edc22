//! MCP's tasks extension: a call that runs past [`TASK_AFTER`] (or asks its client)
//! becomes a task, kept for [`TASK_TTL`], its result fetched with `tasks/get`.

use super::*;

impl McpServer {
    /// A running call as a task: what it answers becomes the task's result;
    /// a crash fails it; `client` (the questions it asks) learns its task.
    pub(super) fn as_task(
        &self,
        running: tokio::task::JoinHandle<Result<(CallToolResponse, Outcome), McpError>>,
        stop: CancellationToken,
        client: Option<Arc<ask::TaskClient>>,
    ) -> CallToolResponse {
        let options = rmcp::task_manager::TaskOptions::new()
            .with_ttl_ms(TASK_TTL.as_millis() as u64)
            .with_poll_interval_ms(TASK_POLL.as_millis() as u64);
        let task = self.shared.tasks.spawn(options, move |task| {
            let task = Arc::new(task);
            if let Some(client) = client {
                client.attach(task.clone());
            }
            Box::pin(async move {
                use rmcp::task_manager::TaskExit;
                let cancelled = stop.clone();
                let watch = tokio::spawn(async move {
                    task.cancelled().await;
                    cancelled.cancel();
                });
                let ended = joined(running.await);
                watch.abort();
                match ended {
                    Ok((CallToolResponse::Complete(_), _)) if stop.is_cancelled() => {
                        Err(TaskExit::Cancelled)
                    }
                    // The tool did not answer: a protocol error, not its result.
                    Ok((CallToolResponse::Complete(result), Outcome::Crashed)) => {
                        let text = serde_json::to_value(&result)
                            .ok()
                            .and_then(|r| r["content"][0]["text"].as_str().map(str::to_string))
                            .unwrap_or_else(|| "the tool crashed".into());
                        Err(TaskExit::Error(McpError::internal_error(text, None)))
                    }
                    Ok((CallToolResponse::Complete(result), _)) => Ok(result),
                    Ok(_) => Err(TaskExit::Error(McpError::internal_error(
                        "a task's call answered with an input-required result",
                        None,
                    ))),
                    Err(e) => Err(TaskExit::Error(e)),
                }
            })
        });
        CallToolResponse::Task(rmcp::model::CreateTaskResult::new(task))
    }
}

/// A call of a client that declared tasks and is still running after this
/// becomes a task (the conformance suite's fixtures: a job of about a
/// second is a task, a greeting is not).
pub const TASK_AFTER: Duration = Duration::from_millis(500);
/// How long a task's state is kept (`ttlMs`), and the polling interval
/// suggested to the client (`pollIntervalMs`).
pub const TASK_TTL: Duration = Duration::from_secs(3600);
pub const TASK_POLL: Duration = Duration::from_millis(500);
