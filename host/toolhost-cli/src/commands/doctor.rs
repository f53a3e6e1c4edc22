//! `toolhost doctor`: what this machine offers the confinement.

use crate::*;

/// This machine's layers; with a remote workspace, its service's too, and
/// those decide the exit code (they confine the workspace's commands).
pub(crate) fn doctor(json: bool, remote: Option<Remote>) -> Result<ExitCode> {
    let layers = toolhost::doctor::layers();
    let far = remote.as_ref().map(|r| &r.hello().confinement);
    if json {
        let shown = match &remote {
            None => serde_json::to_value(&layers)?,
            Some(remote) => serde_json::json!({
                "here": layers,
                "remote": {
                    "workspace": remote.shown(),
                    "release": remote.hello().release,
                    "root": remote.root(),
                    "layers": remote.hello().confinement,
                },
            }),
        };
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        println!("{}", doctor_text(&layers));
        if let Some(remote) = &remote {
            let title = format!(
                "How programs started by tools are confined on the other side of {} ({}), \
                 where the workspace's commands run:",
                remote.shown(),
                remote.hello().release
            );
            let text = doctor_text(&remote.hello().confinement);
            let body = text.split_once('\n').map_or("", |(_, rest)| rest);
            println!("\n{}{}", escape(&title), body);
        }
    }
    let on = |layers: &[toolhost::doctor::Layer]| layers.iter().all(|l| l.on);
    Ok(if far.map_or(on(&layers), |far| on(far)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The layers as a person reads them: each with its state, what it means
/// and how to turn it on. Their texts name what was found on this machine
/// (paths of programs and cgroups), shown escaped.
pub(crate) fn doctor_text(layers: &[toolhost::doctor::Layer]) -> String {
    let mut out = String::from("How programs started by tools are confined on this machine:\n");
    for layer in layers {
        let state = if layer.on { "on " } else { "OFF" };
        out.push_str(&format!(
            "\n{:<9} {state}  {}\n",
            escape(&layer.name),
            escape(&layer.state)
        ));
        out.push_str(&indent(&wrap(&escape(&layer.means), 76)));
        out.push('\n');
        if let Some(fix) = &layer.fix {
            let fix = escape(fix);
            out.push_str(&indent(&wrap(&format!("to turn it on: {fix}"), 76)));
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

/// `text` broken into lines of at most `width` characters at spaces.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost::doctor::Layer;

    /// `doctor` shows what it found on this machine (program and cgroup
    /// paths, a probe's first line) escaped. Nothing a tool can write
    /// reaches those values, so the layers are forged here.
    #[test]
    fn doctor_shows_what_it_found_escaped() {
        let layers = [
            Layer {
                name: "jail".into(),
                on: true,
                state: "/opt/x\x1b[1A\x1b[2K/bwrap (bubblewrap 0.8.0)".into(),
                means: "own user\u{202e}, PID\rnamespaces".into(),
                fix: None,
            },
            Layer {
                name: "limits".into(),
                on: false,
                state: "cgroup v2 under /sys/fs/cgroup/a\u{9b}2Kb".into(),
                means: "one\ntwo".into(),
                fix: Some("run it \x1b]0;owned\x07 here".into()),
            },
        ];
        let text = doctor_text(&layers);
        for shown in [
            "jail      on   /opt/x\\x1b[1A\\x1b[2K/bwrap (bubblewrap 0.8.0)",
            "  own user\\u{202e}, PID\\x0dnamespaces",
            "limits    OFF  cgroup v2 under /sys/fs/cgroup/a\\u{9b}2Kb",
            "  one\\x0atwo",
            "  to turn it on: run it \\x1b]0;owned\\x07 here",
        ] {
            assert!(text.lines().any(|l| l == shown), "{shown:?} in\n{text}");
        }
        assert!(
            !text.contains(|c| c != '\n' && toolhost::display::needs_escape(c)),
            "{text:?}"
        );
    }
}
