//! Terminal output made plain text for a model: escape sequences (colours,
//! cursor movements, titles) removed, `\r\n` read as a newline, and a line
//! redrawn with carriage returns (a progress bar) kept as its last state.

/// `raw` without escape sequences, each line as it last stood.
pub fn clean(raw: &str) -> String {
    let plain = strip_escapes(raw);
    let mut out = String::with_capacity(plain.len());
    for (i, line) in plain.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        // What the last carriage return started drawing over the line; what
        // it did not reach of the earlier text stays (as on a terminal).
        let mut shown: Vec<char> = Vec::new();
        for part in line.split('\r') {
            for (at, c) in part.chars().enumerate() {
                if at < shown.len() {
                    shown[at] = c;
                } else {
                    shown.push(c);
                }
            }
        }
        // Backspaces erase the character before them.
        let mut kept: Vec<char> = Vec::with_capacity(shown.len());
        for c in shown {
            if c == '\u{8}' {
                kept.pop();
            } else {
                kept.push(c);
            }
        }
        out.extend(kept);
    }
    out
}

/// `raw` without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] …
/// BEL|ST`, two-character `ESC x`) and other control characters than
/// newline, carriage return, tab and backspace.
fn strip_escapes(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte.
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(_) | None => {}
            },
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\n' | '\r' | '\t' | '\u{8}' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn colours_and_redrawn_lines_come_out_plain() {
        let npm = "\u{1b}[1m\u{1b}[32m> dev\u{1b}[39m\u{1b}[22m\r\n\u{1b}]0;npm run dev\u{7}\
                   progress [#   ] 10%\rprogress [### ] 80%\rprogress [####] 100%\r\n\
                   \u{1b}[2K\u{1b}[1Gready on http://localhost:3000\n";
        assert_eq!(
            clean(npm),
            "> dev\nprogress [####] 100%\nready on http://localhost:3000\n"
        );
        assert_eq!(clean("abcdef\rXY"), "XYcdef");
        assert_eq!(clean("ab\u{8}c"), "ac");
        assert_eq!(clean("tab\there"), "tab\there");
    }
}
