//! The view of a call's state the Operations' glue is served through, and
//! what the glue of every version of the package shares: each helper here
//! speaks the Operations' own types, so the per-version glue (`glue/`) only
//! converts at the edge.

use crate::ops::Capabilities;
use crate::ops::fs::{self, FsError, FsRead, FsWrite};
use crate::ops::search::{self, run_search};
use crate::ops::tools::ToolSet;
use crate::ops::usage::{Usage, Use};
use crate::store::CallState;
use crate::tape::{Asked, Blobs, CallTape};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasData, ResourceTable};

/// What the Operations' glue sees of a call: the capabilities its
/// component was granted, its cancellation, the record of what it used, and
/// its resource table. The call's state lends it out ([`OpsView`]); nothing
/// else of it is reachable from here.
pub struct OpsCtx<'a> {
    pub caps: &'a Capabilities,
    pub cancel: &'a CancellationToken,
    /// Where the call's use of its capabilities is recorded.
    pub usage: &'a Usage,
    /// The processes the call started (the call's end waits for them).
    pub spawned: &'a crate::ops::process::Spawned,
    /// Its place in the order of file mutations (see `crate::ops::fs::lock`).
    pub(crate) turn: Option<&'a crate::ops::fs::TurnSlot>,
    /// How it asks the person for what it was not granted.
    pub(crate) asking: Option<&'a crate::permissions::ask::CallAsking>,
    /// The person's client, when the call's front end has one.
    pub(crate) client: Option<&'a crate::ops::client::CallClient>,
    /// The processes of the call's session.
    pub(crate) processes: Option<&'a Arc<crate::ops::process::session::SessionProcesses>>,
    /// How it calls other tools, when it may.
    pub(crate) nested: Option<&'a Arc<dyn crate::ops::nested::NestedCalls>>,
    /// Its tape, when the session records or replays.
    pub(crate) tape: Option<&'a CallTape>,
    pub table: &'a mut ResourceTable,
}

/// A call's state that can lend its [`OpsCtx`].
pub trait OpsView: Send {
    fn ops(&mut self) -> OpsCtx<'_>;
}

/// The `HasData` of the Operations' interfaces: they are served by an
/// [`OpsCtx`].
pub(crate) struct HasOps;

impl HasData for HasOps {
    type Data<'a> = OpsCtx<'a>;
}

/// A call's store lends the Operations their view of it.
impl OpsView for CallState {
    fn ops(&mut self) -> OpsCtx<'_> {
        OpsCtx {
            caps: &self.caps,
            cancel: &self.signals.cancel,
            usage: &self.signals.usage,
            spawned: &self.signals.spawned,
            turn: Some(&self.signals.turn),
            asking: self.signals.asking.get().map(|a| a.as_ref()),
            client: self.signals.client.get().map(|c| c.as_ref()),
            processes: self.signals.processes.get(),
            nested: self.signals.nested.get(),
            tape: self.signals.tape.get().map(|t| t.as_ref()),
            table: &mut self.table,
        }
    }
}

/// What an Operation does to its path: what [`OpsCtx::or_beyond`] asks
/// about a path outside the roots (to write; to create as a directory), and
/// how the call's use is recorded (`None`: a check, a lock).
#[derive(Clone, Copy)]
pub(super) struct Access {
    write: bool,
    mkdir: bool,
    noted: Option<Use>,
}

impl Access {
    const READ: Access = Access::new(false, false, Some(Use::Read));
    pub(super) const WRITE: Access = Access::new(true, false, Some(Use::Written));
    pub(super) const MKDIR: Access = Access::new(true, true, Some(Use::Written));
    pub(super) const CHECK: Access = Access::new(true, false, None);

    const fn new(write: bool, mkdir: bool, noted: Option<Use>) -> Access {
        Access {
            write,
            mkdir,
            noted,
        }
    }
}

impl<'a> OpsCtx<'a> {
    /// The question `asked` on the call's tape, when it has one
    /// ([`crate::tape::taped`]). A replay checks the component's grants
    /// again: a question they no longer allow is a divergence.
    pub(super) fn on_tape(
        &self,
        asked: impl FnOnce(&dyn Blobs) -> Asked,
    ) -> Option<(&'a CallTape, Asked)> {
        let tape = self.tape?;
        let asked = asked(tape.blobs());
        if tape.is_replaying() && !self.allows(&asked) {
            let (verb, what) = asked.said("");
            tape.diverge(format!(
                "the component asked to {verb} {what}, which its grants do not allow now"
            ));
        }
        Some((tape, asked))
    }

    /// Whether the component's grants let it ask `asked` at all.
    fn allows(&self, asked: &Asked) -> bool {
        let caps = self.caps;
        match asked {
            Asked::Stat { .. } | Asked::Read { .. } | Asked::ListDir { .. } => {
                caps.fs_read.is_some()
            }
            Asked::Write { .. }
            | Asked::Append { .. }
            | Asked::CreateDirAll { .. }
            | Asked::Access { .. }
            | Asked::Lock { .. } => caps.fs_write.is_some(),
            Asked::Search { .. } => caps.search.is_some(),
            Asked::Spawn { .. } => caps.process.is_some(),
            Asked::Next { .. } | Asked::Kill { .. } | Asked::Cancelled => true,
            Asked::ActiveTools | Asked::AllTools | Asked::SetActiveTools { .. } => {
                caps.tools.is_some()
            }
            Asked::CallableTools | Asked::CallTool { .. } => caps.call_tools.is_some(),
            Asked::Http { .. } => caps.http.is_some(),
            Asked::SessionStart { .. }
            | Asked::SessionRead { .. }
            | Asked::SessionWrite { .. }
            | Asked::SessionList
            | Asked::SessionStop { .. } => caps.session_processes,
            Asked::WasiOpen { .. } => true,
            Asked::Client { requests } => {
                let granted = caps.client.unwrap_or_default();
                requests.iter().all(|(_, method, _)| granted.has(*method))
            }
        }
    }

    /// The granted backend, unless the call was cancelled.
    pub(super) fn granted<T: ?Sized>(
        &self,
        backend: &Option<Arc<T>>,
        what: &str,
    ) -> Result<Arc<T>, FsError> {
        if self.cancel.is_cancelled() {
            return Err(fs::fs_error(
                fs::ErrorCode::Cancelled,
                "the call was cancelled",
            ));
        }
        backend.clone().ok_or_else(|| {
            fs::fs_error(
                fs::ErrorCode::PermissionDenied,
                format!("{what} is not granted"),
            )
        })
    }

    pub(super) fn reader(&self) -> Result<Arc<dyn FsRead>, FsError> {
        self.granted(&self.caps.fs_read, "fs-read")
    }

    pub(super) fn writer(&self) -> Result<Arc<dyn FsWrite>, FsError> {
        self.granted(&self.caps.fs_write, "fs-write")
    }

    /// `r`, the outcome of an Operation on `path`; when it was refused as
    /// outside the roots and a rule or the person allows the place (see
    /// `crate::permissions`), `op` run again on its real path, through a
    /// backend rooted at the approved place.
    pub(super) fn or_beyond<'s, T>(
        &self,
        r: Result<T, FsError>,
        path: &'s str,
        (write, mkdir): (bool, bool),
        op: impl FnOnce(&crate::ops::fs::LocalFs, &str) -> Result<T, FsError> + Send + 's,
    ) -> impl std::future::Future<Output = Result<T, FsError>> + Send + 's
    where
        'a: 's,
        T: Send + 's,
    {
        let (asking, cancel, usage) = (self.asking, self.cancel, self.usage);
        async move {
            match (r, asking) {
                (Err(refused), Some(asking)) if refused.code == fs::ErrorCode::OutsideRoots => {
                    let (fs, real) = asking
                        .beyond(path, write, mkdir, &refused, cancel, usage)
                        .await?;
                    op(&fs, &real)
                }
                (r, _) => r,
            }
        }
    }

    /// `op` on `path` through the `fs-read` backend, or beyond the roots
    /// where a rule or the person allows it, recorded as read.
    pub(super) async fn reading<T: Send + 'static>(
        &mut self,
        path: &str,
        op: impl Fn(&(dyn FsRead + 'static), &str) -> Result<T, FsError> + Send + Sync + 'static,
    ) -> Result<T, FsError> {
        let fs = self.reader().map(|fs| (fs.is_remote(), fs));
        self.through(fs, path, Access::READ, |fs| fs, op).await
    }

    /// `op` on `path` through the `fs-write` backend, or beyond the roots
    /// as `how` says.
    pub(super) async fn writing<T: Send + 'static>(
        &mut self,
        path: &str,
        how: Access,
        op: impl Fn(&(dyn FsWrite + 'static), &str) -> Result<T, FsError> + Send + Sync + 'static,
    ) -> Result<T, FsError> {
        let fs = self.writer().map(|fs| (fs.is_remote(), fs));
        self.through(fs, path, how, |fs| fs, op).await
    }

    /// `op` on `path` through `backend` (whether it is remote, and it): a
    /// remote one's on the blocking pool and never beyond; a local one's
    /// inline, or beyond the roots where a rule or the person allows it
    /// (`local` is the approved place's backend, as `B`). Recorded as `how`
    /// says.
    async fn through<B: ?Sized + Send + Sync + 'static, T: Send + 'static>(
        &mut self,
        backend: Result<(bool, Arc<B>), FsError>,
        path: &str,
        how: Access,
        local: fn(&fs::LocalFs) -> &B,
        op: impl Fn(&B, &str) -> Result<T, FsError> + Send + Sync + 'static,
    ) -> Result<T, FsError> {
        let r = match backend {
            Ok((true, fs)) => {
                let path = path.to_string();
                far(move || op(&*fs, &path)).await
            }
            r => {
                let r = r.and_then(|(_, fs)| op(&*fs, path));
                let beyond = |fs: &fs::LocalFs, p: &str| op(local(fs), p);
                self.or_beyond(r, path, (how.write, how.mkdir), beyond)
                    .await
            }
        };
        match how.noted {
            Some(kind) => self.noted(r, kind, path),
            None => r,
        }
    }

    /// Record what an operation on `path` did: used as `kind` when it
    /// succeeded, denied when the host refused it.
    pub(super) fn noted<T>(
        &self,
        r: Result<T, FsError>,
        kind: Use,
        path: &str,
    ) -> Result<T, FsError> {
        if self.usage.is_recording() {
            match &r {
                Ok(_) => self.usage.note(kind, path),
                Err(e) => {
                    let refused = match e.code {
                        fs::ErrorCode::OutsideRoots => "outside-roots",
                        fs::ErrorCode::PermissionDenied => "permission-denied",
                        fs::ErrorCode::Protected => "protected",
                        _ => "",
                    };
                    if !refused.is_empty() {
                        let op = match kind {
                            Use::Read => "fs-read",
                            _ => "fs-write",
                        };
                        self.usage
                            .note(Use::Denied, &format!("{op} {path}: {refused}"));
                    }
                }
            }
        }
        r
    }
}

impl OpsCtx<'_> {
    /// `request` through the `search` backend; when it is refused as
    /// outside the roots and a rule or the person allows reading the place
    /// (see [`Self::or_beyond`]), run again on its real path over a backend
    /// rooted at the approved place. A refusal that stands keeps the root's
    /// name on its first line and says why on the next. Recorded as read.
    pub(super) async fn search<R: search::Request>(
        &mut self,
        request: R,
    ) -> wasmtime::Result<Result<R::Found, search::SearchError>> {
        let query: search::Query = request.into();
        let tape = self.on_tape(|_| Asked::Search {
            query: query.clone(),
        });
        let found = crate::tape::taped(tape, self.search_live(query)).await?;
        Ok(found.and_then(|found| {
            R::found(found).ok_or_else(|| {
                search::SearchError::Other("the search answered another kind of search".into())
            })
        }))
    }

    async fn search_live(
        &mut self,
        query: search::Query,
    ) -> Result<search::Found, search::SearchError> {
        let root = query.root().to_string();
        let found = match self.caps.search.clone() {
            Some(backend) => {
                let first = query.clone();
                run_search(backend, self.cancel.clone(), move |b, stop| {
                    first.run(b, stop)
                })
                .await
            }
            None => Err(search::SearchError::Other("search is not granted".into())),
        };
        match &found {
            Ok(_) => self.usage.note(Use::Read, &root),
            Err(search::SearchError::OutsideRoots(_)) => self
                .usage
                .note(Use::Denied, &format!("search {root}: outside-roots")),
            Err(_) => {}
        }
        self.search_beyond(found, query).await
    }

    async fn search_beyond(
        &mut self,
        found: Result<search::Found, search::SearchError>,
        query: search::Query,
    ) -> Result<search::Found, search::SearchError> {
        let (named, asking) = match (&found, self.asking) {
            (Err(search::SearchError::OutsideRoots(named)), Some(asking)) => {
                (named.clone(), asking)
            }
            _ => return found,
        };
        let root = query.root().to_string();
        let refused = fs::fs_error(fs::ErrorCode::OutsideRoots, named);
        let (place, real) = match asking
            .beyond(&root, false, false, &refused, self.cancel, self.usage)
            .await
        {
            Ok(allowed) => allowed,
            // Never asked about: refused as before.
            Err(e) if e.code == fs::ErrorCode::Protected => return found,
            Err(e) => return Err(search::SearchError::OutsideRoots(e.message)),
        };
        let backend: Arc<dyn search::Search> = Arc::new(search::LocalSearch::new(place));
        let query = query.rooted(real);
        let found = run_search(backend, self.cancel.clone(), move |b, stop| {
            query.run(b, stop)
        })
        .await;
        if found.is_ok() {
            self.usage.note(Use::Read, &root);
        }
        found
    }

    /// The granted tool set.
    pub(super) fn tool_set(&self) -> wasmtime::Result<&ToolSet> {
        // Linked only with the grant: reaching this without it is a host bug.
        self.caps
            .tools
            .as_ref()
            .ok_or_else(|| wasmtime::format_err!("tools is not granted"))
    }
}

/// `op`, an Operation on a backend whose files are on another machine: on
/// the blocking pool (it waits on the network), and never beyond its roots
/// through this machine's disk.
async fn far<T: Send + 'static>(
    op: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    tokio::task::spawn_blocking(op).await.unwrap_or_else(|e| {
        Err(fs::fs_error(
            fs::ErrorCode::Other,
            format!("the operation on the remote workspace was lost: {e}"),
        ))
    })
}
