//! Curator's `LeaderLatch`: a participant that, once started, is leader or not at any
//! moment, and says so to a listener. Layout as Curator's: ephemeral sequential
//! children `<path>/_c_<uuid>-latch-<sequence>`; the smallest sequence leads, each other
//! participant watches the one just before it.
//!
//! As in Curator, a participant whose connection is lost stops counting itself as
//! leader at once (it cannot know whether its session still holds the node) and looks
//! again once reconnected. The latch ends when the session ends.

use paddock_wire::path::basename;
use tokio::sync::watch;

use crate::recipes::{delete_if_exists, join, random_hex};
use crate::{Client, CreateMode, Error, ErrorCode, EventType, SessionState};

const LATCH_NAME: &str = "latch-";

/// Where a [`LeaderLatch`] stands.
#[derive(Debug, Clone)]
pub enum LatchState {
    /// Not (or no longer) the leader; also while disconnected.
    NotLeader,
    /// The leader.
    Leader,
    /// The latch stopped: closed, or its session ended (the error says how).
    Ended(Error),
}

impl LatchState {
    /// Whether this is `Leader`.
    pub fn is_leader(&self) -> bool {
        matches!(self, LatchState::Leader)
    }
}

/// A started leader latch (Curator `LeaderLatch`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::LeaderLatch;
/// let latch = LeaderLatch::start(&client, "/latch/scheduler", "node-1")?;
/// let mut listener = latch.listener();
/// loop {
///     println!("leader: {}", listener.borrow_and_update().is_leader());
///     if listener.changed().await.is_err() { break; }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeaderLatch {
    client: Client,
    path: String,
    state: watch::Receiver<LatchState>,
    /// Dropped (or sent to) to stop the task.
    stop: watch::Sender<bool>,
}

impl LeaderLatch {
    /// Joins the latch at `path` as `id` (written to this participant's node). The
    /// participant runs in a tokio task until [`close`](LeaderLatch::close), the drop of
    /// the latch, or the end of the session.
    pub fn start(client: &Client, path: &str, id: &str) -> Result<LeaderLatch, Error> {
        crate::client::validate(path, false)?;
        let (state_tx, state) = watch::channel(LatchState::NotLeader);
        let (stop, stop_rx) = watch::channel(false);
        let participant = Participant {
            client: client.clone(),
            path: path.to_owned(),
            id: id.to_owned(),
            prefix: format!("_c_{}-{LATCH_NAME}", dashed_uuid()),
            state: state_tx,
            stop: stop_rx,
        };
        tokio::spawn(participant.run());
        Ok(LeaderLatch {
            client: client.clone(),
            path: path.to_owned(),
            state,
            stop,
        })
    }

    /// Whether this participant leads now.
    pub fn has_leadership(&self) -> bool {
        self.state.borrow().is_leader()
    }

    /// Sees every change of leadership (Curator's `isLeader`/`notLeader`). A watch
    /// channel keeps the newest value: a short-lived state may be skipped, never the
    /// current one.
    pub fn listener(&self) -> watch::Receiver<LatchState> {
        self.state.clone()
    }

    /// Waits until this participant leads; fails if the latch ends first.
    pub async fn await_leadership(&self) -> Result<(), Error> {
        let mut state = self.state.clone();
        let state = state
            .wait_for(|s| !matches!(s, LatchState::NotLeader))
            .await
            .map_err(|_| Error::Closed)?
            .clone();
        match state {
            LatchState::Ended(err) => Err(err),
            _ => Ok(()),
        }
    }

    /// The participants' ids, leader first.
    pub async fn participants(&self) -> Result<Vec<String>, Error> {
        let mut ids = Vec::new();
        for child in sorted_participants(&self.client, &self.path).await? {
            match self.client.get_data(&join(&self.path, &child)).await {
                Ok((data, _)) => ids.push(String::from_utf8_lossy(&data).into_owned()),
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(ids)
    }

    /// Leaves the latch: deletes this participant's node (handing leadership on) and
    /// waits until the task has.
    pub async fn close(self) -> Result<(), Error> {
        let _ = self.stop.send(true);
        let mut state = self.state.clone();
        let end = state
            .wait_for(|s| matches!(s, LatchState::Ended(_)))
            .await
            .map(|end| end.clone());
        match end {
            Ok(LatchState::Ended(err)) if !matches!(err, Error::Closed) => Err(err),
            _ => Ok(()),
        }
    }
}

/// The task behind a [`LeaderLatch`].
struct Participant {
    client: Client,
    path: String,
    id: String,
    /// Curator's protection prefix: finds our node again after a lost create reply.
    prefix: String,
    state: watch::Sender<LatchState>,
    stop: watch::Receiver<bool>,
}

/// Why the participant stopped looking.
enum Wake {
    /// Look at the children again.
    Again,
    Stop,
}

impl Participant {
    async fn run(mut self) {
        let mut node: Option<String> = None;
        let end = loop {
            match self.round(&mut node).await {
                Ok(Wake::Again) => {}
                Ok(Wake::Stop) => break Error::Closed,
                Err(err) if err.is_retryable() => {}
                Err(err) => break err,
            }
        };
        if let Some(node) = node {
            // Best effort: a node left behind goes with the session.
            let _ = delete_if_exists(&self.client, &join(&self.path, &node)).await;
        }
        self.state.send_replace(LatchState::Ended(end));
    }

    /// One look at the latch: lead, or watch the predecessor, until something changes.
    async fn round(&mut self, node: &mut Option<String>) -> Result<Wake, Error> {
        if *self.stop.borrow() {
            return Ok(Wake::Stop);
        }
        if !self.client.state().is_connected() {
            self.set(LatchState::NotLeader);
            return self.until_connected().await;
        }
        let name = match node.clone() {
            Some(name) => name,
            None => {
                let created = self.create().await?;
                *node = Some(created.clone());
                created
            }
        };
        let children = sorted_participants(&self.client, &self.path).await?;
        let Some(position) = children.iter().position(|c| *c == name) else {
            // Our node is gone (deleted by hand): join again.
            *node = None;
            return Ok(Wake::Again);
        };
        let watched = match position {
            0 => name.clone(),
            _ => children[position - 1].clone(),
        };
        let (stat, fired) = self.client.exists_w(&join(&self.path, &watched)).await?;
        if stat.is_none() {
            return Ok(Wake::Again);
        }
        self.set(if position == 0 {
            LatchState::Leader
        } else {
            LatchState::NotLeader
        });
        let mut states = self.client.state_watcher();
        tokio::select! {
            event = fired => {
                let event = event?;
                if position == 0 && event.event_type == EventType::NodeDeleted {
                    self.set(LatchState::NotLeader);
                    *node = None;
                }
                Ok(Wake::Again)
            }
            _ = states.wait_for(|s| *s != SessionState::Connected) => {
                self.set(LatchState::NotLeader);
                Ok(Wake::Again)
            }
            _ = self.stop.changed() => {
                self.set(LatchState::NotLeader);
                Ok(Wake::Stop)
            }
        }
    }

    async fn until_connected(&mut self) -> Result<Wake, Error> {
        let mut states = self.client.state_watcher();
        tokio::select! {
            state = states.wait_for(|s| s.is_connected() || s.is_terminal()) => {
                let state = state.map(|s| *s).unwrap_or(SessionState::Closed);
                if state.is_terminal() {
                    return Err(state.terminal_error());
                }
                Ok(Wake::Again)
            }
            _ = self.stop.changed() => Ok(Wake::Stop),
        }
    }

    /// Creates our node; after a lost reply, finds it by its prefix.
    async fn create(&self) -> Result<String, Error> {
        self.client.ensure_path(&self.path).await?;
        let create_path = join(&self.path, &self.prefix);
        match self
            .client
            .create(
                &create_path,
                self.id.as_bytes(),
                CreateMode::EphemeralSequential,
            )
            .await
        {
            Ok(path) => Ok(basename(&path).to_owned()),
            Err(err) if err.is_retryable() => {
                let children = self.client.get_children(&self.path).await?;
                children
                    .into_iter()
                    .find(|c| c.starts_with(&self.prefix))
                    .ok_or(err)
            }
            Err(err) => Err(err),
        }
    }

    fn set(&self, leadership: LatchState) {
        self.state.send_if_modified(|current| {
            let changed = current.is_leader() != leadership.is_leader()
                || matches!(current, LatchState::Ended(_));
            if changed {
                *current = leadership.clone();
            }
            changed
        });
    }
}

/// The latch's participant nodes, in Curator's order: by what follows `latch-`.
async fn sorted_participants(client: &Client, path: &str) -> Result<Vec<String>, Error> {
    let mut children: Vec<String> = match client.get_children(path).await {
        Ok(children) => children,
        Err(Error::Keeper(ErrorCode::NoNode)) => Vec::new(),
        Err(err) => return Err(err),
    };
    children.retain(|c| c.contains(LATCH_NAME));
    children.sort_by(|a, b| sequence(a).cmp(sequence(b)));
    Ok(children)
}

/// The part of a participant's name after `latch-` (Curator's `fixForSorting`).
fn sequence(name: &str) -> &str {
    name.rfind(LATCH_NAME)
        .map_or(name, |i| &name[i + LATCH_NAME.len()..])
}

/// A random UUID in its usual text form, as Curator's protection prefix has it.
fn dashed_uuid() -> String {
    let hex = random_hex();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn participants_sort_by_sequence_whatever_their_prefix() {
        let mut names = [
            "_c_ffff-latch-0000000003",
            "_c_0000-latch-0000000010",
            "_c_aaaa-latch-0000000001",
        ];
        names.sort_by(|a, b| sequence(a).cmp(sequence(b)));
        assert_eq!(
            names,
            [
                "_c_aaaa-latch-0000000001",
                "_c_ffff-latch-0000000003",
                "_c_0000-latch-0000000010"
            ]
        );
        assert_eq!(dashed_uuid().len(), 36);
    }
}
