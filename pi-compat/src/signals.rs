//! Linux signals by the names Node gives them (`os.constants.signals`):
//! the host names how a process ended (`SIGKILL`), and Pi 1.x's bash turns
//! a name back into its number for `Command exited with code {128 + n}`.

/// The signals 1 to 31, in number order.
const NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// The conventional name of signal `signal` (`SIGKILL`); `SIG34` past 31.
pub fn name(signal: i32) -> String {
    match signal {
        1..=31 => NAMES[signal as usize - 1].to_string(),
        n => format!("SIG{n}"),
    }
}

/// The number of the signal named `name` (`SIGKILL` → 9, `SIG34` → 34);
/// 0 for a name it does not know, as Pi's `?? 0`.
pub fn number(name: &str) -> i32 {
    match NAMES.iter().position(|n| *n == name) {
        Some(i) => i as i32 + 1,
        None => name
            .strip_prefix("SIG")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_and_numbers_go_both_ways() {
        for n in 1..=40 {
            assert_eq!(super::number(&super::name(n)), n);
        }
        assert_eq!(super::name(9), "SIGKILL");
        assert_eq!(super::number("SIGTERM"), 15);
        assert_eq!(super::number("SIGSYS"), 31);
        assert_eq!(super::number("SIG34"), 34);
        assert_eq!(super::number("SIGNOPE"), 0);
    }
}
