//! Search in a remote workspace: `grep` and `glob` run natively by its
//! service (one request each, not a walk of requests), cancelled there
//! when the call is.

use super::Connection;
use super::wire::{Op, Reply};
use crate::ops::search::{
    GlobRequest, GlobResult, GrepRequest, GrepResult, Search, SearchError, StopFlag,
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

    fn ask(&self, op: Op, stop: &StopFlag) -> Result<Reply, SearchError> {
        match self
            .connection
            .request(op, Vec::new(), &|| stop.is_raised())
        {
            None => Err(SearchError::Cancelled),
            Some(Ok((Reply::SearchError { error }, _))) => Err(error),
            Some(Ok((reply, _))) => Ok(reply),
            Some(Err(why)) => Err(SearchError::Other(why)),
        }
    }
}

fn unexpected(reply: &Reply) -> SearchError {
    SearchError::Other(super::out_of_turn(reply))
}

impl Search for RemoteSearch {
    fn grep(&self, request: &GrepRequest, stop: &StopFlag) -> Result<GrepResult, SearchError> {
        let op = Op::Grep {
            request: request.clone(),
        };
        match self.ask(op, stop)? {
            Reply::Grep { result } => Ok(result),
            other => Err(unexpected(&other)),
        }
    }

    fn glob(&self, request: &GlobRequest, stop: &StopFlag) -> Result<GlobResult, SearchError> {
        let op = Op::Glob {
            request: request.clone(),
        };
        match self.ask(op, stop)? {
            Reply::Glob { result } => Ok(result),
            other => Err(unexpected(&other)),
        }
    }

    fn roots(&self) -> Vec<String> {
        vec![self.connection.root().to_string()]
    }
}
