//! Multi: a [`Transaction`] of writes applied all together or not at all, and the
//! [`ReadOp`]s of a `multiRead`.

use bytes::Bytes;
use paddock_wire::{ErrorCode, OpResult, PathVersionRequest, Request, Response, SetDataRequest};

use crate::client::{unexpected, Client};
use crate::error::Error;
use crate::options::CreateOptions;

/// A builder for a multi, from [`Client::transaction`].
///
/// Argument errors (a bad path, a TTL where none belongs) are kept and reported by
/// [`commit`](Transaction::commit), so the chain reads straight.
#[derive(Debug)]
#[must_use = "a transaction does nothing until committed"]
pub struct Transaction {
    client: Client,
    ops: Vec<Request>,
    error: Option<Error>,
}

impl Transaction {
    pub(crate) fn new(client: Client) -> Self {
        Transaction {
            client,
            ops: Vec::new(),
            error: None,
        }
    }

    fn push(mut self, op: Result<Request, Error>) -> Self {
        match op {
            Ok(op) => self.ops.push(op),
            Err(err) => {
                self.error.get_or_insert(err);
            }
        }
        self
    }

    /// Creates a node; its result is `OpResult::Create` with the created path.
    pub fn create(self, path: &str, data: &[u8], options: impl Into<CreateOptions>) -> Self {
        let op = self
            .client
            .create_request(path, data, &options.into(), false);
        self.push(op)
    }

    /// Creates a node with the `create2` op. Its result is `OpResult::Create2` with the
    /// path and `Stat` where the server reports one; ZooKeeper 3.8 answers a create2
    /// inside a multi with a plain `OpResult::Create`.
    pub fn create2(self, path: &str, data: &[u8], options: impl Into<CreateOptions>) -> Self {
        let op = self
            .client
            .create_request(path, data, &options.into(), true);
        self.push(op)
    }

    /// Deletes a node if its version is `version` (any if `None`).
    pub fn delete(self, path: &str, version: Option<i32>) -> Self {
        let op = self.client.server_path(path).map(|path| {
            Request::Delete(PathVersionRequest {
                path,
                version: version.unwrap_or(-1),
            })
        });
        self.push(op)
    }

    /// Sets a node's data if its version is `version` (any if `None`).
    pub fn set_data(self, path: &str, data: &[u8], version: Option<i32>) -> Self {
        let op = self.client.server_path(path).map(|path| {
            Request::SetData(SetDataRequest {
                path,
                data: Bytes::copy_from_slice(data).into(),
                version: version.unwrap_or(-1),
            })
        });
        self.push(op)
    }

    /// Fails the whole transaction unless the node's version is `version`.
    pub fn check(self, path: &str, version: i32) -> Self {
        let op = self
            .client
            .server_path(path)
            .map(|path| Request::Check(PathVersionRequest { path, version }));
        self.push(op)
    }

    /// The number of ops so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no op was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Sends the transaction. On success, one result per op, in order. If an op fails,
    /// nothing is applied and the error is [`Error::MultiFailed`] naming the op, its code
    /// and every op's result (`Ok` before it, `RuntimeInconsistency` after it).
    pub async fn commit(self) -> Result<Vec<OpResult>, Error> {
        if let Some(err) = self.error {
            return Err(err);
        }
        let client = self.client;
        let mut results = match client.call(Request::Multi(self.ops), None).await? {
            Response::Multi(results) => results,
            other => return Err(unexpected(other)),
        };
        for result in &mut results {
            if let OpResult::Create { path } | OpResult::Create2 { path, .. } = result {
                *path = client.strip(path);
            }
        }
        let failed = results
            .iter()
            .enumerate()
            .find_map(|(index, result)| match result {
                OpResult::Error(code) if *code != ErrorCode::Ok => Some((index, *code)),
                _ => None,
            });
        match failed {
            Some((index, code)) => Err(Error::MultiFailed {
                index,
                code,
                results,
            }),
            None => Ok(results),
        }
    }
}

/// One read of a [`Client::multi_read`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOp {
    /// Its result is `OpResult::GetData`.
    GetData(String),
    /// Its result is `OpResult::GetChildren`.
    GetChildren(String),
}
