//! `search`: the search Operations' types at the edge, and their glue.

use super::{OpsCtx, search};
use crate::ops::search::{self as ops, run_search};
use crate::ops::usage::Use;

impl From<search::GrepRequest> for ops::GrepRequest {
    fn from(r: search::GrepRequest) -> Self {
        ops::GrepRequest {
            pattern: r.pattern,
            root: r.root,
            glob: r.glob,
            ignore_case: r.ignore_case,
            literal: r.literal,
            context: r.context,
            max_matches: r.max_matches,
            max_line_bytes: r.max_line_bytes,
        }
    }
}

impl From<ops::GrepResult> for search::GrepResult {
    fn from(r: ops::GrepResult) -> Self {
        search::GrepResult {
            files: r
                .files
                .into_iter()
                .map(|f| search::GrepFile {
                    path: f.path,
                    lines: f
                        .lines
                        .into_iter()
                        .map(|l| search::GrepLine {
                            line_number: l.line_number,
                            text: l.text,
                            is_match: l.is_match,
                            cut: l.cut,
                        })
                        .collect(),
                })
                .collect(),
            matches: r.matches,
            limit_reached: r.limit_reached,
            warnings: r.warnings,
        }
    }
}

impl From<search::GlobRequest> for ops::GlobRequest {
    fn from(r: search::GlobRequest) -> Self {
        ops::GlobRequest {
            pattern: r.pattern,
            root: r.root,
            max_results: r.max_results,
        }
    }
}

impl From<ops::GlobResult> for search::GlobResult {
    fn from(r: ops::GlobResult) -> Self {
        search::GlobResult {
            paths: r.paths,
            limit_reached: r.limit_reached,
            warnings: r.warnings,
        }
    }
}

impl From<ops::SearchError> for search::SearchError {
    fn from(e: ops::SearchError) -> Self {
        match e {
            ops::SearchError::NotFound(s) => Self::NotFound(s),
            ops::SearchError::InvalidPattern(s) => Self::InvalidPattern(s),
            ops::SearchError::InvalidGlob(s) => Self::InvalidGlob(s),
            ops::SearchError::OutsideRoots(s) => Self::OutsideRoots(s),
            ops::SearchError::Cancelled => Self::Cancelled,
            ops::SearchError::Other(s) => Self::Other(s),
        }
    }
}

impl OpsCtx<'_> {
    /// Run a search of `root` on the blocking pool and record it: read, or
    /// refused.
    async fn searched<T: Send + 'static, W: From<T>>(
        &mut self,
        root: String,
        run: impl FnOnce(&dyn ops::Search, &ops::StopFlag) -> Result<T, ops::SearchError>
        + Send
        + 'static,
    ) -> wasmtime::Result<Result<W, search::SearchError>> {
        let Some(backend) = self.caps.search.clone() else {
            return Ok(Err(search::SearchError::Other(
                "search is not granted".into(),
            )));
        };
        let found = run_search(backend, self.cancel.clone(), run).await;
        match &found {
            Ok(_) => self.usage.note(Use::Read, &root),
            Err(ops::SearchError::OutsideRoots(_)) => self
                .usage
                .note(Use::Denied, &format!("search {root}: outside-roots")),
            Err(_) => {}
        }
        Ok(found.map(Into::into).map_err(Into::into))
    }
}

impl search::Host for OpsCtx<'_> {
    async fn grep(
        &mut self,
        request: search::GrepRequest,
    ) -> wasmtime::Result<Result<search::GrepResult, search::SearchError>> {
        let request = ops::GrepRequest::from(request);
        let root = request.root.clone();
        self.searched(root, move |backend, stop| backend.grep(&request, stop))
            .await
    }

    async fn glob(
        &mut self,
        request: search::GlobRequest,
    ) -> wasmtime::Result<Result<search::GlobResult, search::SearchError>> {
        let request = ops::GlobRequest::from(request);
        let root = request.root.clone();
        self.searched(root, move |backend, stop| backend.glob(&request, stop))
            .await
    }
}
