//! The supervisor: one task per child that reads its output, watches its
//! exit, enforces its timeout and cancellation, and stops its group.

use super::*;

/// The host's ends of a jail: the init's status and control pipes, the
/// jail's own error output, and its pid 1.
pub(super) struct JailEnds {
    /// The init's status line; `None` once it closed.
    pub(super) status: Option<OwnedFd>,
    pub(super) status_line: Vec<u8>,
    /// bubblewrap's and the init's errors, forwarded as output.
    pub(super) setup: Option<OwnedFd>,
    /// bubblewrap's `--info-fd`: the jail's pid 1 as the host sees it.
    pub(super) info: Option<OwnedFd>,
    pub(super) info_text: Vec<u8>,
    /// The control pipe; dropping it ends the jail.
    pub(super) control: Option<OwnedFd>,
    /// A pidfd of the jail's pid 1: readable once every process in the
    /// jail is gone (the kernel ends a PID namespace with its pid 1).
    pub(super) ns_init: Option<OwnedFd>,
    pub(super) ns_gone: bool,
    /// How bubblewrap itself ended, if it did before any status came.
    pub(super) leader_status: Option<ExitStatus>,
}

impl JailEnds {
    /// Send the init a control byte (`T`: SIGTERM the command's group).
    pub(super) fn send(&self, byte: u8) {
        if let Some(control) = &self.control {
            let _ = rustix::io::write(control, &[byte]);
        }
    }

    /// End the jail: the init exits, and with it every process in the jail.
    pub(super) fn end(&mut self) {
        self.send(b'E');
        self.control = None;
    }
}

/// Why a group is being stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StopReason {
    TimedOut,
    Cancelled,
    Killed,
    Dropped,
}

/// Requests from the [`Child`] handle to its supervisor.
#[derive(Default)]
pub(super) struct Control {
    pub(super) stop: Mutex<Option<StopReason>>,
    pub(super) notify: Notify,
}

impl Control {
    pub(super) fn request(&self, reason: StopReason) {
        let mut stop = self.stop.lock().expect("control lock");
        if stop.is_none() {
            *stop = Some(reason);
        }
        drop(stop);
        // A stored permit wakes the supervisor even if it is not waiting yet.
        self.notify.notify_one();
    }

    pub(super) async fn requested(&self) -> StopReason {
        loop {
            if let Some(reason) = *self.stop.lock().expect("control lock") {
                return reason;
            }
            self.notify.notified().await;
        }
    }
}

/// Owns one child: reads its output, watches its exit, enforces its
/// timeout and cancellation, and stops its group.
pub(super) struct Supervisor {
    /// Not reaped until the group is gone (see the module docs).
    pub(super) leader: Option<std::process::Child>,
    pub(super) pgid: Pid,
    /// stdout, stderr; `None` once closed.
    pub(super) pipes: [Option<OwnedFd>; 2],
    pub(super) pidfd: Option<OwnedFd>,
    /// Set when the child runs in the jail (its leader is bubblewrap).
    pub(super) jail: Option<JailEnds>,
    /// The call's cgroup, when it has one; removed once all is over.
    pub(super) cgroup: Option<CallCgroup>,
    pub(super) limits: ProcessLimits,
    pub(super) tx: mpsc::Sender<ChildEvent>,
    /// Events read but not yet taken by the tool (at most one epoll round).
    pub(super) pending: VecDeque<ChildEvent>,
    pub(super) control: Arc<Control>,
    pub(super) cancel: CancellationToken,
    pub(super) deadline: Option<Instant>,
    pub(super) timeout: Option<Duration>,
    /// The leader's status once it exited.
    pub(super) exit: Option<ExitStatus>,
    /// After exit: the call completes when this passes without output.
    pub(super) quiet_until: Option<Instant>,
    /// When a look at the pipes last found something to read: a wake-up
    /// after [`COALESCE`] without any is a burst after quiet, worth waiting
    /// for whole; one sooner is a stream that goes on, read at once.
    pub(super) last_busy: Option<Instant>,
    /// Released once the child (its jail, every process of its group) is
    /// gone: when the supervisor ends, or when a still-dying leader is
    /// reaped.
    pub(super) spawned: Option<SpawnToken>,
    /// The child's own temp directory, removed once it is gone.
    pub(super) scratch: Option<super::scratch::Scratch>,
    /// Stops the child's egress proxy, if it has one, once it is gone.
    pub(super) _proxy: Option<tokio_util::sync::DropGuard>,
}

pub(super) const TOKEN_PIDFD: u64 = 2;
pub(super) const TOKEN_STATUS: u64 = 3;
pub(super) const TOKEN_SETUP: u64 = 4;
pub(super) const TOKEN_INFO: u64 = 5;
pub(super) const TOKEN_NS_INIT: u64 = 6;

/// What woke the supervisor.
pub(super) enum Wake<'a> {
    Stop(StopReason),
    Readable(tokio::io::unix::AsyncFdReadyGuard<'a, OwnedFd>),
    Sent,
    ReceiverGone,
    Quiet,
    ExitPoll,
}

impl Supervisor {
    pub(super) async fn run(mut self, epoll: AsyncFd<OwnedFd>) {
        match self.watch(&epoll).await {
            Ok(status) => {
                // Natural end: deliver, then stop whatever is left of the
                // group (of the jail: all of it, at once). A limit hit on the
                // way is the end that counts.
                let status = match self.cgroup.as_ref().and_then(CallCgroup::exceeded) {
                    Some(which) => ExitStatus::LimitExceeded(self.limits.exceeded(which)),
                    None => status,
                };
                self.pending.push_back(ChildEvent::Exit(status));
                self.deliver().await;
                if self.jail.is_some() {
                    self.end_jail(None).await;
                } else if group_alive(self.pgid) {
                    self.stop_group(None).await;
                }
                self.finish().await;
            }
            Err(reason) => {
                self.stop_group(Some(&epoll)).await;
                self.finish().await;
                self.drain_pipes();
                let status = match reason {
                    StopReason::TimedOut => ExitStatus::TimedOut(
                        self.timeout.map(|t| t.as_millis() as u64).unwrap_or(0),
                    ),
                    _ => ExitStatus::Cancelled,
                };
                self.pending.push_back(ChildEvent::Exit(status));
                self.deliver().await;
            }
        }
    }

    /// Until the child ends by itself (`Ok(status)`) or must be stopped.
    pub(super) async fn watch(
        &mut self,
        epoll: &AsyncFd<OwnedFd>,
    ) -> Result<ExitStatus, StopReason> {
        let mut exit_poll = tokio::time::interval(EXIT_POLL);
        loop {
            if let Some(status) = &self.exit
                && self.pipes.iter().all(Option::is_none)
                && self.pending.is_empty()
            {
                return Ok(status.clone());
            }
            let wake = tokio::select! {
                biased;
                reason = self.control.requested() => Wake::Stop(reason),
                _ = self.cancel.cancelled() => Wake::Stop(StopReason::Cancelled),
                _ = sleep_until(self.deadline), if self.deadline.is_some() => {
                    Wake::Stop(StopReason::TimedOut)
                }
                permit = self.tx.reserve(), if !self.pending.is_empty() => match permit {
                    Ok(permit) => {
                        permit.send(self.pending.pop_front().expect("pending event"));
                        Wake::Sent
                    }
                    Err(_) => Wake::ReceiverGone,
                },
                ready = epoll.readable(), if self.pending.is_empty() => match ready {
                    Ok(guard) => Wake::Readable(guard),
                    // An epoll set cannot fail to poll; treat it as dropped.
                    Err(_) => Wake::ReceiverGone,
                },
                _ = sleep_until(self.quiet_until), if self.quiet_until.is_some() && self.pending.is_empty() => {
                    Wake::Quiet
                }
                _ = exit_poll.tick(), if self.pidfd.is_none() && !self.leader_known() => Wake::ExitPoll,
            };
            match wake {
                Wake::Stop(reason) => return Err(reason),
                Wake::ReceiverGone => return Err(StopReason::Dropped),
                Wake::Quiet => {
                    return Ok(self.exit.clone().expect("quiet only after exit"));
                }
                Wake::ExitPoll => self.check_exit(),
                Wake::Readable(mut guard) => {
                    if self.last_busy.is_none_or(|at| at.elapsed() >= COALESCE) {
                        tokio::time::sleep(COALESCE).await;
                    }
                    if self.pump(guard.get_inner()) {
                        self.last_busy = Some(Instant::now());
                    } else {
                        guard.clear_ready();
                    }
                }
                Wake::Sent => {}
            }
        }
    }

    /// One round over the ready sources, in readiness order: one read per
    /// ready pipe, an exit check for the pidfd. False when nothing was ready
    /// but the jail's bookkeeping (its pid 1 announced or gone), which says
    /// nothing of the command's output: a burst after it is still coalesced
    /// as after quiet.
    pub(super) fn pump(&mut self, epoll: &OwnedFd) -> bool {
        let mut ready = Vec::with_capacity(4);
        // A zero timeout: the outer reactor already said something is ready.
        let events = epoll::wait(
            epoll,
            rustix::buffer::spare_capacity(&mut ready),
            Some(&Default::default()),
        )
        .unwrap_or_default();
        if events == 0 {
            return false;
        }
        let mut busy = false;
        for event in &ready {
            let token = event.data.u64();
            busy |= !matches!(token, TOKEN_INFO | TOKEN_NS_INIT);
            match token {
                TOKEN_PIDFD => {
                    self.check_exit();
                    if self.leader_known()
                        && let Some(pidfd) = self.pidfd.take()
                    {
                        let _ = epoll::delete(epoll, &pidfd);
                    }
                }
                TOKEN_STATUS => self.read_status(epoll),
                TOKEN_SETUP => self.read_setup(epoll),
                TOKEN_INFO => self.read_info(epoll),
                TOKEN_NS_INIT => {
                    if let Some(jail) = &mut self.jail {
                        jail.ns_gone = true;
                        if let Some(pidfd) = jail.ns_init.take() {
                            let _ = epoll::delete(epoll, &pidfd);
                        }
                    }
                }
                token => {
                    self.read_pipe(token as usize, Some(epoll));
                }
            }
        }
        busy
    }

    /// Whether the leader's end is known (in the jail, bubblewrap's, which
    /// is not the command's).
    pub(super) fn leader_known(&self) -> bool {
        match &self.jail {
            Some(jail) => jail.leader_status.is_some(),
            None => self.exit.is_some(),
        }
    }

    /// The command's end, as the jail's init reports it: `exit N`,
    /// `signal N` or `exec-failed ERRNO`. If the status pipe closes without
    /// a line, the jail itself failed: bubblewrap's own status stands in.
    pub(super) fn read_status(&mut self, epoll: &OwnedFd) {
        let Some(jail) = &mut self.jail else { return };
        let Some(pipe) = &jail.status else { return };
        let mut buf = [0u8; 64];
        match rustix::io::read(pipe, &mut buf) {
            Err(Errno::AGAIN) | Err(Errno::INTR) => return,
            Ok(n) if n > 0 => {
                jail.status_line.extend_from_slice(&buf[..n]);
                if jail.status_line.len() > 256 {
                    jail.status_line.truncate(256);
                }
                if !jail.status_line.contains(&b'\n') {
                    return;
                }
            }
            _ => {}
        }
        let _ = epoll::delete(epoll, pipe);
        jail.status = None;
        let line = String::from_utf8_lossy(&jail.status_line).into_owned();
        let mut words = line.split_whitespace();
        let number = |w: Option<&str>| w.and_then(|n| n.parse::<i32>().ok());
        let status = match (words.next(), number(words.next())) {
            (Some("exit"), Some(code)) => Some(ExitStatus::Code(code)),
            (Some("signal"), Some(signal)) => {
                Some(ExitStatus::Signal(pi_compat::signals::name(signal)))
            }
            (Some("exec-failed"), Some(errno)) => {
                let why = io::Error::from_raw_os_error(errno);
                self.pending.push_back(ChildEvent::Output(
                    format!("toolhost: the command could not be started: {why}\n").into_bytes(),
                ));
                Some(ExitStatus::Code(127))
            }
            _ => jail.leader_status.clone(),
        };
        if self.exit.is_none() && status.is_some() {
            self.exit = status;
            self.quiet_until = Some(Instant::now() + EXIT_QUIET);
        }
    }

    /// The jail's own errors (bubblewrap could not make a mount, the init
    /// could not restrict itself): forwarded as output, so they are seen.
    pub(super) fn read_setup(&mut self, epoll: &OwnedFd) {
        let Some(jail) = &mut self.jail else { return };
        let Some(pipe) = &jail.setup else { return };
        let mut buf = vec![0u8; 4096];
        match rustix::io::read(pipe, &mut buf) {
            Ok(n) if n > 0 => {
                buf.truncate(n);
                self.pending.push_back(ChildEvent::Output(buf));
            }
            Err(Errno::AGAIN) | Err(Errno::INTR) => {}
            _ => {
                let _ = epoll::delete(epoll, pipe);
                jail.setup = None;
            }
        }
    }

    /// bubblewrap's `{"child-pid": N, …}`: the jail's pid 1, watched so the
    /// host knows when every process in the jail is gone.
    pub(super) fn read_info(&mut self, epoll: &OwnedFd) {
        let Some(jail) = &mut self.jail else { return };
        let Some(pipe) = &jail.info else { return };
        let mut buf = [0u8; 512];
        match rustix::io::read(pipe, &mut buf) {
            Ok(n) if n > 0 && jail.info_text.len() < 4096 => {
                jail.info_text.extend_from_slice(&buf[..n]);
                if !jail.info_text.contains(&b'}') {
                    return;
                }
            }
            Err(Errno::AGAIN) | Err(Errno::INTR) => return,
            _ => {}
        }
        let _ = epoll::delete(epoll, pipe);
        jail.info = None;
        let text = String::from_utf8_lossy(&jail.info_text);
        let pid = text
            .split_once("\"child-pid\"")
            .and_then(|(_, rest)| rest.trim_start().strip_prefix(':'))
            .and_then(|rest| {
                let digits: String = rest
                    .trim_start()
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse::<i32>().ok()
            })
            .and_then(Pid::from_raw);
        let pidfd = pid.and_then(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        });
        if let Some(pidfd) = pidfd
            && epoll::add(
                epoll,
                &pidfd,
                epoll::EventData::new_u64(TOKEN_NS_INIT),
                epoll::EventFlags::IN,
            )
            .is_ok()
        {
            jail.ns_init = Some(pidfd);
        }
    }

    /// One read of pipe `i`: a chunk, or the pipe closes.
    pub(super) fn read_pipe(&mut self, i: usize, epoll: Option<&OwnedFd>) -> bool {
        let Some(pipe) = &self.pipes[i] else {
            return false;
        };
        // Read into the spare capacity: a chunk is written once, not zeroed
        // first (a command's output may be gigabytes).
        let mut buf = Vec::with_capacity(CHUNK_BYTES);
        match rustix::io::read(pipe, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(0) => {
                // End of file: stop watching it.
                if let Some(epoll) = epoll {
                    let _ = epoll::delete(epoll, pipe);
                }
                self.pipes[i] = None;
                false
            }
            Ok(_) => {
                self.pending.push_back(ChildEvent::Output(buf));
                if self.exit.is_some() {
                    self.quiet_until = Some(Instant::now() + EXIT_QUIET);
                }
                true
            }
            Err(Errno::AGAIN) | Err(Errno::INTR) => false,
            Err(_) => {
                if let Some(epoll) = epoll {
                    let _ = epoll::delete(epoll, pipe);
                }
                self.pipes[i] = None;
                false
            }
        }
    }

    /// Read whatever the pipes still hold, without waiting (after a stop).
    pub(super) fn drain_pipes(&mut self) {
        for i in 0..2 {
            let mut budget = CHANNEL_EVENTS;
            while budget > 0 && self.read_pipe(i, None) {
                budget -= 1;
            }
        }
    }

    /// Note the leader's status if it exited (leaving it unreaped). In the
    /// jail the leader is bubblewrap: its status stands in for the command's
    /// only when the init reported none.
    pub(super) fn check_exit(&mut self) {
        if self.leader_known() {
            return;
        }
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let status = match &self.pidfd {
            Some(pidfd) => rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), options),
            None => rustix::process::waitid(WaitId::Pid(self.pgid), options),
        };
        if let Ok(Some(status)) = status {
            let status = match (status.exit_status(), status.terminating_signal()) {
                (Some(code), _) => ExitStatus::Code(code),
                (None, Some(signal)) => ExitStatus::Signal(pi_compat::signals::name(signal)),
                (None, None) => ExitStatus::Code(-1),
            };
            match &mut self.jail {
                Some(jail) => {
                    let no_report = jail.status.is_none();
                    jail.leader_status = Some(status.clone());
                    if no_report && self.exit.is_none() {
                        self.exit = Some(status);
                        self.quiet_until = Some(Instant::now() + EXIT_QUIET);
                    }
                }
                None => {
                    self.exit = Some(status);
                    self.quiet_until = Some(Instant::now() + EXIT_QUIET);
                }
            }
        }
    }

    /// End the jail and wait (bounded) until every process in it is gone.
    /// Unless the command ended already, it first gets SIGTERM (relayed by
    /// the init to its process group) and [`STOP_GRACE`] to finish; with
    /// `epoll`, output produced meanwhile is kept (bounded).
    pub(super) async fn end_jail(&mut self, epoll: Option<&AsyncFd<OwnedFd>>) {
        let Some(jail) = &self.jail else { return };
        if self.exit.is_none() {
            jail.send(b'T');
            let term_at = Instant::now();
            while self.exit.is_none() && Instant::now() < term_at + STOP_GRACE {
                if self.jail.as_ref().is_some_and(|j| j.status.is_none()) {
                    break; // The init is gone: nothing more will report.
                }
                self.wait_a_little(epoll).await;
            }
        }
        if let Some(jail) = &mut self.jail {
            jail.end();
        }
        let end_at = Instant::now();
        // The init's pidfd turns readable when it exits, which ends the jail:
        // waited for, not polled (a poll would cost every command up to a
        // STOP_POLL after its exit).
        let init = self.jail.as_ref().and_then(|jail| jail.ns_init.as_ref());
        let init = init.and_then(|fd| rustix::io::fcntl_dupfd_cloexec(fd, 0).ok());
        #[allow(unsafe_code)]
        // SAFETY: the AsyncFd owns this OwnedFd: open, and the same file,
        // for as long as it lives.
        let init = init.and_then(|fd| {
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
        });
        if let Some(init) = init {
            let _ = tokio::time::timeout(STOP_GRACE, init.readable()).await;
        }
        loop {
            if self.jail_gone() || Instant::now() >= end_at + KILL_WAIT {
                return;
            }
            if Instant::now() >= end_at + STOP_GRACE {
                // bubblewrap itself did not go: its death ends the jail too.
                let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
            }
            self.wait_a_little(epoll).await;
        }
    }

    /// Whether every process of the jail is gone: its pid 1 has exited (the
    /// kernel ends a PID namespace with it), or, before that is known,
    /// bubblewrap itself.
    pub(super) fn jail_gone(&mut self) -> bool {
        let Some(jail) = &mut self.jail else {
            return true;
        };
        if jail.ns_gone {
            return true;
        }
        match &jail.ns_init {
            Some(pidfd) => {
                let mut fds = [rustix::event::PollFd::new(
                    pidfd,
                    rustix::event::PollFlags::IN,
                )];
                let zero = rustix::event::Timespec::default();
                let exited = rustix::event::poll(&mut fds, Some(&zero)).unwrap_or(0) > 0;
                jail.ns_gone = exited;
                exited
            }
            None => !group_alive(self.pgid),
        }
    }

    /// Pump `epoll` for up to [`STOP_POLL`] (without it: sleep).
    pub(super) async fn wait_a_little(&mut self, epoll: Option<&AsyncFd<OwnedFd>>) {
        match epoll {
            Some(epoll) if self.pending.len() < CHANNEL_EVENTS => {
                tokio::select! {
                    ready = epoll.readable() => {
                        if let Ok(mut guard) = ready
                            && !self.pump(guard.get_inner())
                        {
                            guard.clear_ready();
                        }
                    }
                    _ = tokio::time::sleep(STOP_POLL) => {}
                }
            }
            _ => tokio::time::sleep(STOP_POLL).await,
        }
    }

    /// Hand pending events to the tool, in order, while it listens.
    pub(super) async fn deliver(&mut self) {
        while let Some(event) = self.pending.pop_front() {
            if self.tx.send(event).await.is_err() {
                self.pending.clear();
                return;
            }
        }
    }

    /// SIGTERM the group, SIGKILL it after [`STOP_GRACE`], and wait for it
    /// to vanish. With `epoll`, output produced meanwhile is kept (bounded).
    pub(super) async fn stop_group(&mut self, epoll: Option<&AsyncFd<OwnedFd>>) {
        if self.jail.is_some() {
            return self.end_jail(epoll).await;
        }
        let _ = rustix::process::kill_process_group(self.pgid, Signal::TERM);
        let term_at = Instant::now();
        let mut kill_at: Option<Instant> = None;
        loop {
            if !group_alive(self.pgid) {
                return;
            }
            let now = Instant::now();
            match kill_at {
                None if now >= term_at + STOP_GRACE => {
                    let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
                    kill_at = Some(now);
                }
                Some(at) if now >= at + KILL_WAIT => return,
                _ => {}
            }
            self.wait_a_little(epoll).await;
        }
    }

    /// The last SIGKILL (harmless: the unreaped leader keeps the group id
    /// ours), then reap the leader.
    pub(super) async fn finish(&mut self) {
        let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
        if let Some(scratch) = self.scratch.take() {
            // Whatever the child left in it (gigabytes, closed directories)
            // goes off the runtime.
            tokio::task::spawn_blocking(move || drop(scratch));
        }
        if let Some(cgroup) = self.cgroup.take() {
            // Removing it may wait for the last process to be gone.
            tokio::task::spawn_blocking(move || drop(cgroup));
        }
        if let Some(mut leader) = self.leader.take() {
            match leader.try_wait() {
                Ok(Some(_)) | Err(_) => {}
                // Still dying (uninterruptible sleep): reap it off the runtime.
                Ok(None) => {
                    let spawned = self.spawned.take();
                    tokio::task::spawn_blocking(move || {
                        let _ = leader.wait();
                        drop(spawned);
                    });
                }
            }
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Dropped before `finish` (runtime shutdown): the leader is unreaped,
        // so the group id is still ours to signal.
        if self.leader.is_some() {
            let _ = rustix::process::kill_process_group(self.pgid, Signal::KILL);
        }
    }
}

pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether any live (not zombie) process is in group `pgid`.
pub(super) fn group_alive(pgid: Pid) -> bool {
    match rustix::process::test_kill_process_group(pgid) {
        Err(Errno::SRCH) => false,
        // Members exist; they may all be zombies (the unreaped leader).
        _ => live_members(pgid.as_raw_nonzero().get()).unwrap_or(true),
    }
}

/// Whether `/proc` shows a live member of group `pgid`; `None` without `/proc`.
pub(super) fn live_members(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue; // Exited meanwhile.
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parens.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        if group == Some(pgid) && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}
