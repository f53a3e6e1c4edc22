//! `search`: the search Operations' types at the edge, and their glue.

use super::search;
use crate::ops::search as ops;
use crate::wit::OpsCtx;

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

/// A search's outcome, in the interface's types.
fn wit<T, U: From<T>>(
    r: Result<T, ops::SearchError>,
) -> wasmtime::Result<Result<U, search::SearchError>> {
    Ok(r.map(U::from).map_err(Into::into))
}

impl search::Host for OpsCtx<'_> {
    async fn grep(
        &mut self,
        request: search::GrepRequest,
    ) -> wasmtime::Result<Result<search::GrepResult, search::SearchError>> {
        wit(self.search(ops::GrepRequest::from(request)).await?)
    }

    async fn glob(
        &mut self,
        request: search::GlobRequest,
    ) -> wasmtime::Result<Result<search::GlobResult, search::SearchError>> {
        wit(self.search(ops::GlobRequest::from(request)).await?)
    }
}
