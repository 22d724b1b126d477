//! Barriers in kazoo's layout: a [`Barrier`] is up while its node exists; a
//! [`DoubleBarrier`] gathers members as ephemeral children and opens with a `ready` child.

use std::time::Duration;

use crate::recipes::{delete_if_exists, ensure_path, join, random_hex};
use crate::{Client, CreateMode, Error, ErrorCode, EventType};

/// Holds processes back while its node exists (kazoo `Barrier`).
#[derive(Debug, Clone)]
pub struct Barrier {
    client: Client,
    path: String,
}

impl Barrier {
    /// A barrier whose node is `path`.
    pub fn new(client: &Client, path: &str) -> Self {
        Barrier {
            client: client.clone(),
            path: path.to_owned(),
        }
    }

    /// Raises the barrier (creates its node and parents).
    pub async fn create(&self) -> Result<(), Error> {
        ensure_path(&self.client, &self.path).await
    }

    /// Lowers the barrier; false if it was not up.
    pub async fn remove(&self) -> Result<bool, Error> {
        match self.client.delete(&self.path, None).await {
            Ok(()) => Ok(true),
            Err(Error::Keeper(ErrorCode::NoNode)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Waits until the barrier is lowered; with a timeout, false if it was still up.
    pub async fn wait(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let wait = async {
            loop {
                let (stat, watch) = self.client.exists_w(&self.path).await?;
                if stat.is_none() {
                    return Ok(true);
                }
                if watch.await?.event_type == EventType::NodeDeleted {
                    return Ok(true);
                }
            }
        };
        match timeout {
            Some(limit) => tokio::time::timeout(limit, wait).await.unwrap_or(Ok(false)),
            None => wait.await,
        }
    }
}

/// Makes `members` processes start together and finish together (kazoo
/// `DoubleBarrier`): each enters as an ephemeral child of the path; the last to arrive
/// creates `ready`, which lets everyone in; leaving waits until every member has left.
#[derive(Debug)]
pub struct DoubleBarrier {
    client: Client,
    path: String,
    members: usize,
    identifier: String,
    /// This member's child name, random so that members never collide.
    node_name: String,
}

impl DoubleBarrier {
    /// A barrier for `members` processes under `path`; `identifier` is written to this
    /// member's node.
    pub fn new(client: &Client, path: &str, members: usize, identifier: &str) -> Self {
        DoubleBarrier {
            client: client.clone(),
            path: path.to_owned(),
            members,
            identifier: identifier.to_owned(),
            node_name: random_hex(),
        }
    }

    fn ready_path(&self) -> String {
        join(&self.path, "ready")
    }

    fn own_path(&self) -> String {
        join(&self.path, &self.node_name)
    }

    /// Joins the barrier and waits until all members have.
    pub async fn enter(&self) -> Result<(), Error> {
        ensure_path(&self.client, &self.path).await?;
        match self
            .client
            .create(
                &self.own_path(),
                self.identifier.as_bytes(),
                CreateMode::Ephemeral,
            )
            .await
        {
            Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => {}
            Err(err) => return Err(err),
        }
        let (ready, opened) = self.client.exists_w(&self.ready_path()).await?;
        if ready.is_some() {
            return Ok(());
        }
        let children = self.client.get_children(&self.path).await?;
        let members = children.iter().filter(|c| *c != "ready").count();
        if members < self.members {
            return wait_created(self, opened).await;
        }
        match self
            .client
            .create(&self.ready_path(), b"", CreateMode::Persistent)
            .await
        {
            Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Leaves the barrier and waits until every member has (kazoo's algorithm: the
    /// lowest member waits for the highest, the others delete themselves and wait for
    /// the lowest).
    pub async fn leave(&self) -> Result<(), Error> {
        delete_if_exists(&self.client, &self.ready_path()).await?;
        loop {
            let mut children = self.client.get_children(&self.path).await?;
            children.retain(|c| c != "ready");
            if children.is_empty() {
                return Ok(());
            }
            if children.len() == 1 && children[0] == self.node_name {
                return delete_if_exists(&self.client, &self.own_path()).await;
            }
            children.sort();
            let lowest = &children[0];
            let watched = if *lowest == self.node_name {
                join(&self.path, &children[children.len() - 1])
            } else {
                delete_if_exists(&self.client, &self.own_path()).await?;
                join(&self.path, lowest)
            };
            let (stat, gone) = self.client.exists_w(&watched).await?;
            if stat.is_some() {
                gone.await?;
            }
        }
    }
}

/// Waits for a `ready` node to be created, re-arming on unrelated events.
async fn wait_created(barrier: &DoubleBarrier, mut watch: crate::WatchFuture) -> Result<(), Error> {
    loop {
        if watch.await?.event_type == EventType::NodeCreated {
            return Ok(());
        }
        let (ready, again) = barrier.client.exists_w(&barrier.ready_path()).await?;
        if ready.is_some() {
            return Ok(());
        }
        watch = again;
    }
}
