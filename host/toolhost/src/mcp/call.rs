//! One `tools/call`: a one-call batch through the pipeline, its progress, its
//! questions (as elicitations, input-required rounds or through its task), its result
//! in MCP's shape.

use super::*;

impl McpServer {
    /// A `tools/call` as a request, or as a task (see `ServerHandler::call_tool`).
    pub(super) async fn call_as_request_or_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        use super::offers::TaskSupport;
        let host = self.served();
        let tasks_declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let active = host.is_active(&request.name);
        let support = host.offers().task_support(&request.name);
        if active && support == TaskSupport::Required && !tasks_declared {
            let tasks = json!({ "extensions": { rmcp::model::TASKS_EXTENSION_ID: {} } });
            return Err(missing_capability(tasks));
        }
        if !tasks_declared || !active || support == TaskSupport::Forbidden {
            return self.run_call(request, context, Mode::Request).await;
        }
        let stop = CancellationToken::new();
        let request_gone = call_token(&context);
        if support == TaskSupport::Required {
            // Its questions are input-required rounds until it runs on; the
            // round that runs it answers with a task.
            let mut running = {
                let (this, stop) = (self.clone(), stop.clone());
                let mode = Mode::ThenTask { cancel: stop };
                tokio::spawn(async move { this.run_call_ended(request, context, mode).await })
            };
            tokio::select! {
                biased;
                ended = &mut running => {
                    let ended = joined(ended);
                    if let Ok((CallToolResponse::InputRequired(question), _)) = ended {
                        return Ok(CallToolResponse::InputRequired(question));
                    }
                    let finished = tokio::spawn(async move { ended });
                    return Ok(self.as_task(finished, stop, None));
                }
                () = request_gone.cancelled() => {
                    stop.cancel();
                    return joined(running.await).map(|(response, _)| response);
                }
                () = tokio::time::sleep(TASK_AFTER) => {}
            }
            return Ok(self.as_task(running, stop, None));
        }
        // A retry that answers an input-required round stays a request.
        if request.input_responses.is_some() {
            return self.run_call(request, context, Mode::Request).await;
        }
        // The call starts as a request: most calls end at once, and a task
        // is state the server keeps for its TTL. It becomes a task once it
        // runs past TASK_AFTER, or when it asks the client (a question of a
        // task is answered through tasks/update).
        let client = Arc::new(ask::TaskClient::new(ask::declared(&context)));
        let mut running = {
            let (this, client, stop) = (self.clone(), client.clone(), stop.clone());
            let mode = Mode::Task {
                cancel: stop,
                client,
            };
            tokio::spawn(async move { this.run_call_ended(request, context, mode).await })
        };
        tokio::select! {
            biased;
            ended = &mut running => return joined(ended).map(|(response, _)| response),
            () = request_gone.cancelled() => {
                stop.cancel();
                return joined(running.await).map(|(response, _)| response);
            }
            () = client.wants_task() => {}
            () = tokio::time::sleep(TASK_AFTER) => {}
        }
        Ok(self.as_task(running, stop, Some(client)))
    }

    /// One `tools/call` to its result, in `mode`.
    pub(super) async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        mode: Mode,
    ) -> Result<CallToolResponse, McpError> {
        self.run_call_ended(request, context, mode)
            .await
            .map(|(response, _)| response)
    }

    /// One `tools/call` to its result and how it ended, in `mode`.
    pub(super) async fn run_call_ended(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        mode: Mode,
    ) -> Result<(CallToolResponse, Outcome), McpError> {
        // Over HTTP, the call holds its request's `--max-requests` permit
        // for as long as it runs, in whatever task it runs: a client that
        // drops its connection (its stream recorded for a resume) or a call
        // that became a task still counts.
        #[cfg(feature = "http")]
        let _permit = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::http_server::PermitSlot>())
            .and_then(crate::http_server::PermitSlot::take);
        let (task_cancel, task_client) = match mode {
            Mode::Request => (None, None),
            Mode::Task { cancel, client } => (Some(cancel), Some(client)),
            Mode::ThenTask { cancel } => (Some(cancel), None),
        };
        let host = self.host();
        let name = request.name.to_string();
        // MCP makes an unknown tool a protocol error (-32602, every
        // revision), not a tool's error result.
        if !host.is_active(&name) {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall {
            id: format!("mcp-{}", context.id),
            name: name.clone(),
            arguments: arguments.clone(),
        };
        // Updates arrive on the tool's thread; one task sends them in order.
        // Without a progress token they are not wanted and not kept.
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| Progress::start(token, context.peer.clone()));
        // A tool's log messages go to a client that asked for them.
        let logs = self
            .shared
            .log_levels
            .wanted(&context)
            .map(|wanted| ask::ToolLogs::start(context.peer.clone(), wanted));
        let log_sender = logs.as_ref().map(ask::ToolLogs::sender);
        let sink = event_sink(progress.as_ref().map(|p| p.queue.clone()), log_sender);
        let cancel = task_cancel.clone().unwrap_or_else(|| call_token(&context));
        // A question of a 2026-07-28 round stops the call (its own token),
        // not the request.
        let run = cancel.child_token();
        let round = if ask::stateless(&context) && task_client.is_none() {
            let state = request.request_state.as_deref();
            let responses = request.input_responses.as_ref();
            let declared = ask::declared(&context);
            let round = self
                .shared
                .states
                .round(&name, &arguments, state, responses, declared, run.clone())
                .map_err(|refused| McpError::invalid_params(refused, None))?;
            Some(round)
        } else {
            None
        };
        let asker = match &round {
            Some(round) if ask::can_elicit(&context) => {
                Some(crate::permissions::Asker::new(round.clone()))
            }
            Some(_) => None,
            None => self.shared.askers.of(&context),
        };
        // A tool's own requests to the client: answered by the retry of a
        // 2026-07-28 round, sent as they come to an older session.
        let client: Arc<dyn crate::ops::client::Client> = match (&round, task_client) {
            (Some(round), _) => round.clone(),
            (None, Some(task)) => task,
            (None, None) => Arc::new(ask::LiveClient::of(&context)),
        };
        // A client calls what it was offered: the active tools.
        let mut call = host
            .call(call)
            .active_only()
            .cancel(run)
            .events(sink)
            .client(client);
        if let Some(asker) = asker {
            call = call.asking(asker);
        }
        if let Some(turn) = Arrival::of(&context) {
            call = call.turns(vec![turn]);
        }
        let (processes, new) = self.shared.processes.of(&context, host.session_processes());
        if let Some(key) = new {
            let exits = processes.exits();
            let shared = Arc::downgrade(&self.shared);
            tokio::spawn(tell_exits(shared, key, context.peer.clone(), exits));
        }
        call = call.processes(processes);
        let (result, outcome) = call.with_outcome().await;
        if let Some(logs) = logs {
            logs.finish().await;
        }
        if let Some((round, needed)) = round.and_then(|r| r.needed().map(|n| (r, n))) {
            if let Some(progress) = progress {
                progress.finish().await;
            }
            if let ask::Needed::Missing(method) = needed {
                return Err(missing_capability(json!({ method.name(): {} })));
            }
            let required = self.shared.states.input_required(
                &round,
                &needed,
                &name,
                &arguments,
                crate::permissions::DEFAULT_WAIT,
            );
            let required: rmcp::model::InputRequiredResult = serde_json::from_value(required)
                .map_err(|e| internal("asking for the person's answer", e))?;
            return Ok((required.into(), outcome));
        }
        if let Some(progress) = progress {
            progress.finish().await;
        }
        if cancel.is_cancelled() {
            let line = format!(
                "tools/call {name} (request {}) was cancelled; the tool answered: {}",
                context.id,
                result.text()
            );
            self.log_line(&line);
            #[allow(deprecated)]
            let notice = LoggingLevel::Notice;
            self.shared.log_levels.send(&context, notice, &line).await;
        }
        Ok((completed(result)?, outcome))
    }
}

/// What a call sends while it runs: its updates as progress (when the
/// client gave a token, `updates`), its log messages to a client that
/// asked for them (`logs`).
fn event_sink(
    updates: Option<Arc<super::progress::UpdateQueue>>,
    logs: Option<ask::LogSender>,
) -> Arc<dyn crate::events::EventSink> {
    Arc::new(move |event: Event| match event {
        Event::ToolExecutionUpdate { partial_result, .. } => {
            if let Some(updates) = &updates {
                updates.push(text_of(&partial_result.content));
            }
        }
        Event::ToolExecutionLog {
            tool_name,
            level,
            logger,
            message,
            ..
        } => {
            if let (Some(sender), Ok(level)) = (&logs, serde_json::from_value(json!(level))) {
                let logger = logger.unwrap_or(tool_name);
                let _ = sender.send((level, logger, message));
            }
        }
        _ => {}
    })
}

/// A finished call's result in MCP's shape (its structured content checked
/// against the tool's output schema by the call).
fn completed(result: crate::message::ToolResultMessage) -> Result<CallToolResponse, McpError> {
    let mut reply = json!({
        "content": result.content,
        "isError": result.is_error,
        "resultType": "complete",
    });
    if let Some(structured) = result.structured_content {
        reply["structuredContent"] = structured;
    }
    let result: CallToolResult =
        serde_json::from_value(reply).map_err(|e| internal("converting the result", e))?;
    Ok(result.into())
}

/// How a `tools/call` runs.
pub(super) enum Mode {
    /// As a request: cancelled with it.
    Request,
    /// Towards a task, its questions through the task (`tasks/update`).
    Task {
        cancel: CancellationToken,
        client: Arc<ask::TaskClient>,
    },
    /// Towards a task, its questions input-required rounds first (a tool
    /// that requires tasks).
    ThenTask { cancel: CancellationToken },
}

/// The turn a `tools/call` took in the host's order of file mutations when
/// it was read (see `crate::ops::fs::lock`); the call takes it out.
#[derive(Clone)]
pub(super) struct Arrival(pub(super) Arc<crate::ops::fs::TurnSlot>);

impl Arrival {
    /// The turn of the call in `context`, if it brought one.
    pub(super) fn of(context: &RequestContext<RoleServer>) -> Option<crate::ops::fs::Turn> {
        let arrival = context.extensions.get::<Arrival>();
        #[cfg(feature = "http")]
        let arrival = arrival.or_else(|| {
            context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Arrival>())
        });
        arrival.and_then(|a| a.0.take())
    }
}

/// The token of a call: the request's own (the client cancelled it, or
/// the session ended) or, over HTTP, its client going away.
pub(super) fn call_token(context: &RequestContext<RoleServer>) -> CancellationToken {
    #[cfg(feature = "http")]
    if let Some(resume::ClientGone { token: gone, .. }) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<resume::ClientGone>())
    {
        let token = context.ct.child_token();
        let (gone, either) = (gone.clone(), token.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = gone.cancelled() => either.cancel(),
                () = either.cancelled() => {}
            }
        });
        return token;
    }
    context.ct.clone()
}
