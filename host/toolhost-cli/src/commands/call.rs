//! `toolhost call`: one tool call, its result printed.

use crate::*;

pub(crate) async fn call(host: &Host, name: String, args: &str, json: bool) -> Result<ExitCode> {
    let arguments: Value = serde_json::from_str(args)
        .with_context(|| format!("the arguments of {name} are not valid JSON: {args}"))?;
    // `call` names its tool explicitly: active or not, it runs.
    let result = host
        .call(ToolCall {
            id: "call_1".into(),
            name,
            arguments,
        })
        .cancel(cancel_on_ctrl_c())
        .await;
    print_result(&result, json)
}

/// A call's result as `call` prints it: its text (or the message as JSON),
/// and exit 1 when it is an error.
pub(crate) fn print_result(result: &ToolResultMessage, json: bool) -> Result<ExitCode> {
    // What the tool returned, a file's text among it, reaches a person's
    // terminal only through the terminal writer; to a pipe it is kept as is.
    let mut out = Terminal::new(std::io::stdout().lock(), Terminal::stdout().is_terminal());
    if json {
        out.line(Form::Json, &serde_json::to_string_pretty(result)?)?;
    } else {
        for block in &result.content {
            match block {
                ContentBlock::Text { text } => out.line(Form::Text, text)?,
                ContentBlock::Image { data, mime_type } => out.line(
                    Form::Text,
                    &format!(
                        "[image {}, {} bytes of base64]",
                        escape(mime_type),
                        data.len()
                    ),
                )?,
                other => out.line(Form::Text, &escape(&other.described().unwrap_or_default()))?,
            }
        }
    }
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
