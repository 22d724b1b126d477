//! Calls on a whole path or subtree: [`Client::subtree`], [`Client::ensure_path`] (kazoo's `ensure_path`,
//! Curator's `creatingParentsIfNeeded`) and [`Client::delete_all`] (zkCli's
//! `deleteall`, kazoo's `delete(recursive=True)`, Curator's
//! `deletingChildrenIfNeeded`), which deletes in multi batches as ZooKeeper's
//! `ZKUtil.deleteRecursive` does.

use paddock_wire::path;

use crate::client::validate;
use crate::recipes::join;
use crate::{Client, CreateMode, Error, ErrorCode};

/// Ops per multi: ZooKeeper's `ZKUtil` default batch.
const DELETE_BATCH_OPS: usize = 1000;
/// Bytes of paths per multi, well inside the default 1 MiB frame.
const DELETE_BATCH_BYTES: usize = 512 * 1024;
/// Listings read at once while walking a subtree.
const LIST_BATCH: usize = 256;
/// Walks of a subtree that others keep changing before `delete_all` gives up.
const DELETE_ATTEMPTS: usize = 10;

impl Client {
    /// Creates `path` and any missing ancestors as empty persistent nodes; nodes that
    /// exist are left alone.
    pub async fn ensure_path(&self, path: &str) -> Result<(), Error> {
        validate(path, false)?;
        if path == "/" || self.exists(path).await?.is_some() {
            return Ok(());
        }
        let mut missing = vec![path];
        let mut current = path;
        while let Some(parent) = path::parent(current) {
            if parent == "/" || self.exists(parent).await?.is_some() {
                break;
            }
            missing.push(parent);
            current = parent;
        }
        for node in missing.into_iter().rev() {
            match self.create(node, b"", CreateMode::Persistent).await {
                Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Deletes `path` and everything below it, children before parents, in multi
    /// batches of up to 1,000 deletes. `NoNode` if `path` does not exist. Nodes created
    /// under it meanwhile are deleted too: a batch that fails because the subtree
    /// changed (or the connection broke) is retried on a fresh listing, up to ten
    /// times. For `/`, everything but `/` and `/zookeeper` is deleted.
    ///
    /// Not atomic: a failure part-way leaves the nodes of the batches not yet sent.
    pub async fn delete_all(&self, path: &str) -> Result<(), Error> {
        validate(path, false)?;
        let mut last = Error::Keeper(ErrorCode::NotEmpty);
        for attempt in 0..DELETE_ATTEMPTS {
            let nodes = match self.subtree(path).await {
                Ok(nodes) => nodes,
                // Gone: deleted by an earlier attempt whose answer was lost, or by
                // somebody else.
                Err(Error::Keeper(ErrorCode::NoNode)) if attempt > 0 => return Ok(()),
                Err(err) if err.is_retryable() => {
                    last = err;
                    continue;
                }
                Err(err) => return Err(err),
            };
            match self.delete_batches(nodes).await {
                Ok(()) => return Ok(()),
                Err(
                    err @ Error::MultiFailed {
                        code: ErrorCode::NoNode | ErrorCode::NotEmpty,
                        ..
                    },
                ) => last = err,
                Err(err) if err.is_retryable() => last = err,
                Err(err) => return Err(err),
            }
        }
        Err(last)
    }

    /// `path` and every node below it, parents before children (breadth first, each
    /// node's children in name order), as ZooKeeper's `ZKUtil.listSubTreeBFS`. Not a
    /// snapshot: nodes created or deleted during the walk may or may not be listed.
    pub async fn subtree(&self, path: &str) -> Result<Vec<String>, Error> {
        let mut nodes = vec![path.to_owned()];
        let mut level = vec![path.to_owned()];
        while !level.is_empty() {
            let mut next = Vec::new();
            for batch in level.chunks(LIST_BATCH) {
                let listings: Vec<_> = batch.iter().map(|n| self.get_children_now(n)).collect();
                for (node, listing) in batch.iter().zip(listings) {
                    let mut children = match listing.await {
                        Ok(children) => children,
                        // Deleted meanwhile: nothing below it either.
                        Err(Error::Keeper(ErrorCode::NoNode)) if node != path => continue,
                        Err(err) => return Err(err),
                    };
                    children.sort();
                    next.extend(children.iter().map(|child| join(node, child)));
                }
            }
            nodes.extend(next.iter().cloned());
            level = next;
        }
        Ok(nodes)
    }

    /// Deletes `nodes` (parents before children) deepest first, in batches.
    async fn delete_batches(&self, nodes: Vec<String>) -> Result<(), Error> {
        let mut batch = self.transaction();
        let mut bytes = 0;
        for node in nodes.iter().rev().filter(|node| deletable(node)) {
            if batch.len() >= DELETE_BATCH_OPS || bytes + node.len() > DELETE_BATCH_BYTES {
                std::mem::replace(&mut batch, self.transaction())
                    .commit()
                    .await?;
                bytes = 0;
            }
            bytes += node.len();
            batch = batch.delete(node, None);
        }
        if !batch.is_empty() {
            batch.commit().await?;
        }
        Ok(())
    }
}

/// ZooKeeper's own nodes and the root cannot be deleted.
fn deletable(node: &str) -> bool {
    node != "/" && node != "/zookeeper" && !node.starts_with("/zookeeper/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_nodes_are_kept() {
        assert!(!deletable("/"));
        assert!(!deletable("/zookeeper/quota"));
        assert!(deletable("/zookeeperx"));
        assert!(deletable("/a"));
        assert_eq!(join("/", "a"), "/a");
    }
}
