//! Curator's `PersistentTtlNode`: a node that lives while its owner does, and outlives
//! a crash by at most a TTL, with no session tied to it. The node itself is a container
//! kept by a [`PersistentNode`]; below it, a `touch` child with a TTL is written every
//! half TTL. If the owner stops without closing (a crash, a lost session), the child
//! expires after its TTL and the server then removes the empty container.
//!
//! TTL and container nodes need `extendedTypesEnabled=true` on ZooKeeper; ZooKeeper
//! checks them once a minute by default (`znode.container.checkIntervalMs`), Paddock
//! every tick.

use std::time::Duration;

use tokio::sync::watch;

use crate::recipes::persistent_node::PersistentNode;
use crate::recipes::{delete_if_exists, join};
use crate::{Client, CreateMode, CreateOptions, Error, ErrorCode};

/// The child whose TTL keeps the container alive (Curator's default name).
const TOUCH: &str = "touch";

/// A node kept alive by a TTL child (Curator `PersistentTtlNode`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use std::time::Duration;
/// use paddock_client::recipes::TtlNode;
/// let node = TtlNode::start(&client, "/workers/w1", b"busy", Duration::from_secs(10))?;
/// node.wait_created().await?;
/// // ... if this process dies, /workers/w1 disappears about 10 s later ...
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TtlNode {
    client: Client,
    node: PersistentNode,
    touch: String,
    /// Dropped (or sent `true`) to stop touching.
    stop: watch::Sender<bool>,
    /// The touching task, waited for by `close` so that no touch follows the delete.
    toucher: tokio::task::JoinHandle<()>,
}

impl TtlNode {
    /// Starts keeping a container at `path` with `data`, alive while touched every
    /// `ttl / 2` (`ttl` of at least 2 ms). Runs in tokio tasks.
    pub fn start(
        client: &Client,
        path: &str,
        data: &[u8],
        ttl: Duration,
    ) -> Result<TtlNode, Error> {
        if ttl < Duration::from_millis(2) {
            return Err(Error::BadArguments(
                "a TTL node needs a TTL of at least 2 ms".into(),
            ));
        }
        let node = PersistentNode::start(client, path, data, CreateMode::Container)?;
        let touch = join(path, TOUCH);
        let (stop, stopped) = watch::channel(false);
        let toucher = tokio::spawn(touch_loop(
            client.clone(),
            node.state_watcher(),
            touch.clone(),
            ttl,
            stopped,
        ));
        Ok(TtlNode {
            client: client.clone(),
            node,
            touch,
            stop,
            toucher,
        })
    }

    /// Waits until the container exists; returns its path.
    pub async fn wait_created(&self) -> Result<String, Error> {
        self.node.wait_created().await
    }

    /// Changes the container's data (now and on every re-creation).
    pub async fn set_data(&self, data: &[u8]) -> Result<(), Error> {
        self.node.set_data(&self.client, data).await
    }

    /// Stops touching and deletes the child and the container.
    pub async fn close(self) -> Result<(), Error> {
        let _ = self.stop.send(true);
        // A touch under way could create the child again after the delete.
        let _ = self.toucher.await;
        delete_if_exists(&self.client, &self.touch).await?;
        self.node.close().await
    }
}

/// Writes the `touch` child every half TTL while the container exists.
async fn touch_loop(
    client: Client,
    mut container: watch::Receiver<crate::recipes::NodeState>,
    touch: String,
    ttl: Duration,
    mut stop: watch::Receiver<bool>,
) {
    use crate::recipes::NodeState;
    let options = CreateOptions::new(CreateMode::PersistentWithTtl).ttl(ttl);
    loop {
        let state = container.borrow_and_update().clone();
        match state {
            NodeState::Ended(_) => return,
            NodeState::Creating => {}
            NodeState::Created(_) => {
                let touched = match client.set_data(&touch, b"", None).await {
                    Err(Error::Keeper(ErrorCode::NoNode)) => {
                        client.create(&touch, b"", options.clone()).await.map(drop)
                    }
                    other => other.map(drop),
                };
                match touched {
                    Ok(()) | Err(Error::Keeper(ErrorCode::NodeExists | ErrorCode::NoNode)) => {}
                    Err(err) if err.is_terminal() => return,
                    Err(err) => tracing::debug!(%err, %touch, "ttl node: touch failed"),
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(ttl / 2) => {}
            _ = container.changed() => {}
            _ = stop.changed() => return,
        }
    }
}
