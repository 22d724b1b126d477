//! kazoo's `DataWatch` and `ChildrenWatch`: a node's data, or its children, now and
//! after every change, built on one-shot watches (so they work on any server version
//! and, re-armed from the last zxid seen, catch changes made while disconnected).
//!
//! Like kazoo's, they report the newest state when they look: two changes in quick
//! succession may be reported as one. For every change with old and new values, and
//! whole subtrees, use a [cache](crate::cache).

use bytes::Bytes;
use paddock_wire::Stat;

use crate::watch::WatchFuture;
use crate::{Client, Error, ErrorCode};

/// A node's data and `Stat` after each change (kazoo `DataWatch`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::DataWatch;
/// let mut config = DataWatch::new(&client, "/config");
/// loop {
///     match config.next_data().await? {
///         Some((data, stat)) => println!("version {}: {data:?}", stat.version),
///         None => println!("no config"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct DataWatch {
    client: Client,
    path: String,
    /// Fires on the next change after the last state returned.
    armed: Option<WatchFuture>,
    /// `(czxid, mzxid)` of the last state returned (`None` inside: absent).
    last: Option<Option<(i64, i64)>>,
}

impl DataWatch {
    /// Watches the node at `path` (which need not exist).
    pub fn new(client: &Client, path: &str) -> Self {
        DataWatch {
            client: client.clone(),
            path: path.to_owned(),
            armed: None,
            last: None,
        }
    }

    /// The first call returns the node's data and stat now (`None`: it does not
    /// exist); each later call waits for the next change and returns the new state.
    /// Fails when the session ends. Dropping the future loses nothing: the next call
    /// reads again and returns the state if it changed.
    pub async fn next_data(&mut self) -> Result<Option<(Bytes, Stat)>, Error> {
        loop {
            if let Some(armed) = self.armed.take() {
                armed.await?;
            }
            let (state, armed) = match self.read().await {
                Ok(Some(read)) => read,
                Ok(None) => continue,
                Err(err) if err.is_retryable() => continue,
                Err(err) => return Err(err),
            };
            self.armed = Some(armed);
            let key = state.as_ref().map(|(_, stat)| (stat.czxid, stat.mzxid));
            if self.last != Some(key) {
                self.last = Some(key);
                return Ok(state);
            }
        }
    }

    /// The node's state with a watch armed after it; `None` when the node appeared
    /// between the two reads that find it missing (read again).
    #[allow(clippy::type_complexity)] // one private helper; a type alias would hide the shape
    async fn read(&self) -> Result<Option<(Option<(Bytes, Stat)>, WatchFuture)>, Error> {
        match self.client.get_data_w(&self.path).await {
            Ok((data, stat, armed)) => Ok(Some((Some((data, stat)), armed))),
            Err(Error::Keeper(ErrorCode::NoNode)) => {
                match self.client.exists_w(&self.path).await? {
                    (None, armed) => Ok(Some((None, armed))),
                    (Some(_), _) => Ok(None),
                }
            }
            Err(err) => Err(err),
        }
    }
}

/// A node's children after each change (kazoo `ChildrenWatch`).
#[derive(Debug)]
pub struct ChildrenWatch {
    client: Client,
    path: String,
    armed: Option<WatchFuture>,
    last: Option<Vec<String>>,
}

impl ChildrenWatch {
    /// Watches the children of the node at `path`.
    pub fn new(client: &Client, path: &str) -> Self {
        ChildrenWatch {
            client: client.clone(),
            path: path.to_owned(),
            armed: None,
            last: None,
        }
    }

    /// The first call returns the children's names now (sorted); each later call waits
    /// for the next change of the set and returns it. Fails with `NoNode` once the node
    /// is gone (kazoo's watch stops there too), and when the session ends.
    pub async fn next_children(&mut self) -> Result<Vec<String>, Error> {
        loop {
            if let Some(armed) = self.armed.take() {
                armed.await?;
            }
            let (mut children, armed) = match self.client.get_children_w(&self.path).await {
                Ok(read) => read,
                Err(err) if err.is_retryable() => continue,
                Err(err) => return Err(err),
            };
            self.armed = Some(armed);
            children.sort();
            if self.last.as_ref() != Some(&children) {
                self.last = Some(children.clone());
                return Ok(children);
            }
        }
    }
}
