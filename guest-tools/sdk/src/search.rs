//! Searching file contents and names through the host's `search` Operations
//! (needs the `search` grant), at native speed, in sorted path order.

pub use crate::bindings::toolhost::tool::search::{
    GlobRequest, GlobResult, GrepFile, GrepLine, GrepRequest, GrepResult, SearchError, glob, grep,
};
