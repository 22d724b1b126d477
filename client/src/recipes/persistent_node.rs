//! Curator's `PersistentNode`: a node (typically ephemeral) that stays there while the
//! recipe runs: created at start, created again whenever it is deleted, and, after the
//! session ends, on the new session given to [`PersistentNode::restart`]. Sequential
//! modes get Curator's protection prefix (`_c_<uuid>-`), so a create whose reply was
//! lost is found again instead of made twice.

use std::sync::{Arc, Mutex};

use paddock_wire::path::basename;
use tokio::sync::watch;

use crate::recipes::{delete_if_exists, join, random_hex};
use crate::{Client, CreateOptions, Error, ErrorCode, EventType};

/// Where a [`PersistentNode`] stands.
#[derive(Debug, Clone)]
pub enum NodeState {
    /// Creating the node (at start, or after it was deleted).
    Creating,
    /// The node exists at this path (with the sequence suffix, for sequential modes).
    Created(String),
    /// The recipe stopped: closed, or its session ended.
    Ended(Error),
}

/// A node kept in existence (Curator `PersistentNode`, `PersistentEphemeralNode`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::PersistentNode;
/// use paddock_client::CreateMode;
/// let member = PersistentNode::start(&client, "/services/api/host-1", b"10.0.0.1:80", CreateMode::Ephemeral)?;
/// member.wait_created().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentNode {
    config: Arc<Config>,
    state: watch::Sender<NodeState>,
    /// Dropped with the recipe (or sent `true` by `close`), which stops its task.
    stop: watch::Sender<bool>,
}

#[derive(Debug)]
struct Config {
    path: String,
    options: CreateOptions,
    /// The data to create the node with; `set_data` changes it.
    data: Mutex<Vec<u8>>,
    /// For sequential modes: the name prefix that finds our node again.
    protection: Option<String>,
}

impl Config {
    fn data(&self) -> Vec<u8> {
        self.data
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl PersistentNode {
    /// Starts keeping a node at `path` (the prefix, for sequential modes) with `data`,
    /// created with `options` (a [`CreateMode`] or [`CreateOptions`]); parents are
    /// created as needed. Runs in a tokio task.
    pub fn start(
        client: &Client,
        path: &str,
        data: &[u8],
        options: impl Into<CreateOptions>,
    ) -> Result<PersistentNode, Error> {
        let options = options.into();
        crate::client::validate(path, options.mode.is_sequential())?;
        let protection = options
            .mode
            .is_sequential()
            .then(|| format!("_c_{}-", random_hex()));
        let config = Arc::new(Config {
            path: path.to_owned(),
            options,
            data: Mutex::new(data.to_vec()),
            protection,
        });
        let (state, _) = watch::channel(NodeState::Creating);
        let (stop, _) = watch::channel(false);
        let node = PersistentNode {
            config,
            state,
            stop,
        };
        node.launch(client);
        Ok(node)
    }

    fn launch(&self, client: &Client) {
        let keeper = Keeper {
            client: client.clone(),
            config: self.config.clone(),
            state: self.state.clone(),
            stop: self.stop.subscribe(),
        };
        tokio::spawn(keeper.run());
    }

    /// Waits until the node exists; returns its path. Fails if the recipe ended.
    pub async fn wait_created(&self) -> Result<String, Error> {
        let mut state = self.state.subscribe();
        let state = state
            .wait_for(|s| !matches!(s, NodeState::Creating))
            .await
            .map_err(|_| Error::Closed)?
            .clone();
        match state {
            NodeState::Created(path) => Ok(path),
            NodeState::Ended(err) => Err(err),
            NodeState::Creating => Err(Error::Closed),
        }
    }

    /// The node's path while it exists.
    pub fn actual_path(&self) -> Option<String> {
        match &*self.state.borrow() {
            NodeState::Created(path) => Some(path.clone()),
            _ => None,
        }
    }

    /// Sees every change of state.
    pub fn state_watcher(&self) -> watch::Receiver<NodeState> {
        self.state.subscribe()
    }

    /// Changes the data: now, if the node exists, and in every later re-creation.
    pub async fn set_data(&self, client: &Client, data: &[u8]) -> Result<(), Error> {
        *self
            .config
            .data
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = data.to_vec();
        match self.actual_path() {
            Some(path) => match client.set_data(&path, data, None).await {
                // Deleted meanwhile: the re-creation carries the new data.
                Ok(_) | Err(Error::Keeper(ErrorCode::NoNode)) => Ok(()),
                Err(err) => Err(err),
            },
            None => Ok(()),
        }
    }

    /// Resumes after the session ended, on a new client's session: the node is
    /// created there. `BadArguments` if the recipe is still running.
    pub fn restart(&self, client: &Client) -> Result<(), Error> {
        if !matches!(*self.state.borrow(), NodeState::Ended(_)) || *self.stop.borrow() {
            return Err(Error::BadArguments(
                "the persistent node is running or closed".to_owned(),
            ));
        }
        self.state.send_replace(NodeState::Creating);
        self.launch(client);
        Ok(())
    }

    /// Stops keeping the node and deletes it.
    pub async fn close(self) -> Result<(), Error> {
        let _ = self.stop.send(true);
        let mut state = self.state.subscribe();
        let end = state
            .wait_for(|s| matches!(s, NodeState::Ended(_)))
            .await
            .map(|end| end.clone());
        match end {
            Ok(NodeState::Ended(err)) if !matches!(err, Error::Closed) => Err(err),
            _ => Ok(()),
        }
    }
}

/// The task behind a [`PersistentNode`].
struct Keeper {
    client: Client,
    config: Arc<Config>,
    state: watch::Sender<NodeState>,
    stop: watch::Receiver<bool>,
}

impl Keeper {
    async fn run(mut self) {
        let mut node: Option<String> = None;
        let end = loop {
            if *self.stop.borrow() {
                break Error::Closed;
            }
            match self.keep(&mut node).await {
                Ok(true) => {}
                Ok(false) => break Error::Closed,
                Err(err) if err.is_retryable() => {}
                Err(err) => break err,
            }
        };
        if matches!(end, Error::Closed) {
            if let Some(node) = &node {
                // Best effort: an ephemeral node left behind goes with the session.
                let _ = delete_if_exists(&self.client, node).await;
            }
        }
        self.state.send_replace(NodeState::Ended(end));
    }

    /// Makes sure the node exists, then waits until it is deleted (true: go on) or the
    /// recipe is stopped (false).
    async fn keep(&mut self, node: &mut Option<String>) -> Result<bool, Error> {
        let path = match node.clone() {
            Some(path) => path,
            None => {
                self.state.send_replace(NodeState::Creating);
                let created = self.create().await?;
                *node = Some(created.clone());
                created
            }
        };
        let (stat, fired) = self.client.exists_w(&path).await?;
        if stat.is_none() {
            *node = None;
            return Ok(true);
        }
        self.state.send_replace(NodeState::Created(path));
        tokio::select! {
            event = fired => {
                if event?.event_type == EventType::NodeDeleted {
                    *node = None;
                }
                Ok(true)
            }
            _ = self.stop.changed() => Ok(false),
        }
    }

    /// Creates the node (and its parents); returns its path.
    async fn create(&self) -> Result<String, Error> {
        let config = &self.config;
        let data = config.data();
        let parent = paddock_wire::path::parent(&config.path).unwrap_or("/");
        let create_path = match &config.protection {
            Some(protection) => join(parent, &format!("{protection}{}", basename(&config.path))),
            None => config.path.clone(),
        };
        loop {
            self.client.ensure_path(parent).await?;
            match self
                .client
                .create(&create_path, &data, config.options.clone())
                .await
            {
                Ok(path) => return Ok(path),
                Err(Error::Keeper(ErrorCode::NodeExists)) => {
                    // Ours from a lost reply, or a node somebody else holds: adopt it
                    // if it is ours or persistent, else wait for it to go.
                    let (stat, gone) = self.client.exists_w(&create_path).await?;
                    match stat {
                        None => continue,
                        Some(stat)
                            if !config.options.mode.is_ephemeral()
                                || stat.ephemeral_owner == self.client.session_id() =>
                        {
                            return Ok(create_path)
                        }
                        Some(_) => {
                            gone.await?;
                        }
                    }
                }
                Err(err) if err.is_retryable() && config.protection.is_some() => {
                    let prefix = basename(&create_path);
                    let children = self.client.get_children(parent).await?;
                    if let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) {
                        return Ok(join(parent, &name));
                    }
                }
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) => return Err(err),
            }
        }
    }
}
