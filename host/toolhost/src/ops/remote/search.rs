//! Search in a remote workspace: `grep` and `glob` run natively by its
//! service (one request each, not a walk of requests), cancelled there
//! when the call is.

use super::Connection;
use super::wire::{Op, Reply};
use crate::ops::search::{
    GlobRequest, GlobResult, GrepRequest, GrepResult, Request, Search, SearchError, StopFlag,
};
use std::sync::Arc;

/// Search served by a remote workspace's service.
#[derive(Clone, Debug)]
pub struct RemoteSearch {
    connection: Arc<Connection>,
}

impl RemoteSearch {
    pub fn new(connection: Arc<Connection>) -> RemoteSearch {
        RemoteSearch { connection }
    }

    /// `request`, asked of the service.
    fn ask<R: Request>(&self, request: R, stop: &StopFlag) -> Result<R::Found, SearchError> {
        let op = Op::Search {
            query: request.into(),
        };
        match self
            .connection
            .request(op, Vec::new(), &|| stop.is_raised())
        {
            None => Err(SearchError::Cancelled),
            Some(Ok((Reply::SearchError { error }, _))) => Err(error),
            Some(Ok((Reply::Found { found }, _))) => R::found(found).ok_or_else(|| {
                SearchError::Other("the workspace service answered another kind of search".into())
            }),
            Some(Ok((other, _))) => Err(SearchError::Other(super::out_of_turn(&other))),
            Some(Err(why)) => Err(SearchError::Other(why)),
        }
    }
}

impl Search for RemoteSearch {
    fn grep(&self, request: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError> {
        self.ask(request.clone(), stop)
    }

    fn glob(&self, request: &GlobRequest, stop: &StopFlag) -> Result<GlobResult, SearchError> {
        self.ask(request.clone(), stop)
    }

    fn roots(&self) -> Vec<String> {
        vec![self.connection.root().to_string()]
    }
}
