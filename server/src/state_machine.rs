//! Applies committed txns: the only writer of the tree and the session table.
//!
//! For each txn it (1) changes the state ([`crate::apply`], a pure function), (2)
//! queues watch notifications on the connections, (3) carries out the other effects
//! (session clocks, connections to close), (4) completes the proposer's waiter — in
//! that order, under the tree's write lock, so no read can see a change before its
//! notification is queued.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paddock_wire::{KeeperState, Response, WatcherEvent};
use raft::prelude::{Entry, Snapshot};

use crate::apply::{apply, Effect, Rules};
use crate::conns::{ConnId, ConnRegistry, Outbound};
use crate::consensus::{Applier, SnapshotWriter};
use crate::fatal::fatal;
use crate::image::Image;
use crate::liveness::{Liveness, LivenessEvent};
use crate::metrics::Metrics;
use crate::replicated::Replicated;
use crate::server::Settings;
use crate::store::snapshot::{LoadedSnapshot, SnapshotDir};
use crate::tree::WatchTrigger;
use crate::txn::{Origin, Txn};
use crate::wait::{Completion, WaitRegistry};
use crate::watch::{Change, WatchRegistry};

/// The applier the raft thread calls. It holds no way to propose: applying never
/// leads to a new proposal.
pub struct StateMachine {
    /// Written here only.
    replicated: Arc<Replicated>,
    /// Effects: watch events and connections to close.
    conns: Arc<ConnRegistry>,
    /// Effects: the proposers' waiters, completed once their txn is applied.
    waits: Arc<WaitRegistry>,
    /// Effects: session clocks started, restarted and stopped.
    liveness: Liveness,
    metrics: Arc<Metrics>,
    server_id: u64,
    /// Where a snapshot from the leader is read from if it was not decoded in advance.
    data_dir: PathBuf,
    rules: Rules,
    inbox: SnapshotInbox,
}

/// The parts of the server the state machine writes to or reads.
pub struct Parts {
    pub replicated: Arc<Replicated>,
    pub conns: Arc<ConnRegistry>,
    pub waits: Arc<WaitRegistry>,
    pub liveness: Liveness,
    pub metrics: Arc<Metrics>,
}

/// A snapshot streamed from the leader, decoded off the raft thread before raft sees
/// its message, so that installing it is a swap.
#[derive(Clone, Default)]
pub struct SnapshotInbox {
    prepared: Arc<parking_lot::Mutex<Option<(u64, Image)>>>,
}

impl SnapshotInbox {
    /// Decodes `snapshot` and keeps it for the raft thread (in place of any older one);
    /// false if it cannot be read.
    pub fn prepare(&self, snapshot: &LoadedSnapshot) -> bool {
        match Image::read_from(snapshot.payload.clone()) {
            Ok(image) => {
                *self.prepared.lock() = Some((snapshot.metadata.index, image));
                true
            }
            Err(e) => {
                tracing::error!(
                    "cannot read the snapshot {} from the leader: {e}",
                    snapshot.path.display()
                );
                false
            }
        }
    }

    fn take(&self, index: u64) -> Option<Image> {
        let mut prepared = self.prepared.lock();
        match prepared.take() {
            Some((at, image)) if at == index => Some(image),
            // Older than the one raft installs: of no use any more.
            Some((at, _)) if at < index => None,
            other => {
                *prepared = other;
                None
            }
        }
    }
}

impl StateMachine {
    pub fn new(parts: Parts, settings: &Settings, inbox: SnapshotInbox) -> Self {
        StateMachine {
            replicated: parts.replicated,
            conns: parts.conns,
            waits: parts.waits,
            liveness: parts.liveness,
            metrics: parts.metrics,
            server_id: settings.server_id,
            data_dir: settings.data_dir.clone(),
            rules: Rules {
                extended_types: settings.extended_types,
                enforce_quota: settings.enforce_quota,
            },
            inbox,
        }
    }
}

impl StateMachine {
    /// Does what applying a txn asked of this server.
    fn carry_out(&self, effect: Effect) {
        match effect {
            Effect::SessionOpened { session, timeout } => {
                self.liveness.send(LivenessEvent::Opened {
                    session,
                    timeout: millis(timeout),
                })
            }
            Effect::SessionMoved { session, conn, .. } => {
                self.liveness.send(LivenessEvent::Reattached { session });
                // The client is on connection `conn` now (here or on another server):
                // any other connection holding the session here goes.
                self.conns.close_session_unless(session, conn);
            }
            Effect::SessionEnded { session, expired } => {
                self.liveness.send(LivenessEvent::Ended { session });
                if expired {
                    // Closing it lets the client see the expiry when it reconnects.
                    self.conns.close_session(session);
                }
            }
        }
    }
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl Applier for StateMachine {
    fn apply(&mut self, entries: &[Entry]) {
        let mut db = self.replicated.db.write();
        let mut watches = self.replicated.watches.lock();
        for entry in entries {
            let zxid = entry.index as i64;
            let txn = match Txn::decode(entry.data.clone()) {
                Ok(txn) => txn,
                Err(e) => {
                    // Entries are written only by Txn::encode: this is corruption, and
                    // applying anything after it would fork this replica.
                    fatal(format_args!("undecodable txn at zxid {zxid:#x}"), &e);
                }
            };
            let outcome = apply(self.rules, &mut db, &txn, zxid);
            self.metrics.applied_digest(zxid, db.tree.digest());
            fan_out(&self.conns, &mut watches, zxid, outcome.triggers);
            for effect in outcome.effects {
                self.carry_out(effect);
            }
            self.waits.complete(
                txn.head.origin,
                Completion {
                    zxid,
                    result: outcome.result,
                },
            );
        }
    }

    fn restore(&mut self, snapshot: &Snapshot) {
        let index = snapshot.get_metadata().index;
        let image = if !snapshot.data.is_empty() {
            Image::read_from(snapshot.data.clone())
        } else if let Some(image) = self.inbox.take(index) {
            Ok(image)
        } else {
            // Not prepared (it could not be decoded then): read the file here.
            let data_dir = &self.data_dir;
            match SnapshotDir::open(data_dir).and_then(|dir| dir.load_index(index)) {
                Ok(Some(loaded)) => Image::read_from(loaded.payload),
                Ok(None) => {
                    fatal(
                        format_args!("the snapshot at {index}"),
                        &format_args!("missing from {}", data_dir.display()),
                    );
                }
                Err(e) => {
                    fatal(format_args!("reading the snapshot at {index}"), &e);
                }
            }
        };
        match image {
            Ok(image) => {
                install(&self.replicated, &self.liveness, image);
                // As a ZooKeeper follower that resyncs: its clients reconnect, so that
                // setWatches delivers the events of what changed inside the snapshot,
                // and sessions that expired meanwhile learn it. Their pending writes'
                // outcomes are unknown to them, as after any connection loss.
                let closed = self.conns.close_all();
                tracing::info!(
                    "installed the leader's snapshot at {index}: closed {closed} client \
                     connections so that they re-sync"
                );
            }
            Err(e) => {
                // The snapshot's checksum held, so this is a bug or a foreign format:
                // carrying on would fork this replica.
                fatal(format_args!("reading the leader's snapshot"), &e);
            }
        }
    }

    fn image(&mut self) -> SnapshotWriter {
        let image = Image::of(&self.replicated.db.read());
        Box::new(move |out: &mut dyn std::io::Write| image.write_to(out))
    }

    fn dropped(&mut self, head: &[u8]) {
        if let Some(origin) = Origin::from_txn_head(head) {
            self.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(paddock_wire::ErrorCode::ConnectionLoss),
                },
            );
        }
    }

    fn read_ready(&mut self, request: u64) {
        let zxid = self.replicated.last_zxid();
        let origin = crate::txn::Origin {
            server: self.server_id,
            request,
        };
        self.waits.complete(
            origin,
            Completion {
                zxid,
                result: Ok(Response::Empty),
            },
        );
    }
}

/// Replaces the replicated state with `image` (at start-up, or from the leader). Every
/// session gets a fresh timeout: nobody knows when its client was last heard from.
pub fn install(replicated: &Replicated, liveness: &Liveness, image: Image) {
    let mut db = replicated.db.write();
    let sessions = image
        .sessions
        .iter()
        .map(|session| (session.id, millis(session.timeout)))
        .collect();
    liveness.send(LivenessEvent::Installed { sessions });
    db.tree = image.tree;
    db.sessions = image.sessions;
    db.last_zxid = image.last_zxid;
}

/// Queues each fired watch's event on the connections that hold it, with the ACL
/// that decides whether each may hear of it (checked by the connection against its
/// own identities, which only it knows).
fn fan_out(
    conns: &ConnRegistry,
    watches: &mut WatchRegistry<ConnId>,
    zxid: i64,
    triggers: Vec<WatchTrigger>,
) {
    for trigger in triggers {
        let Some(change) = Change::of(trigger.event) else {
            continue;
        };
        let Some(fired) = watches.trigger(&trigger.path, change) else {
            continue;
        };
        for conn in fired.watchers {
            conns.send(
                conn,
                Outbound::Notification {
                    zxid,
                    event: WatcherEvent {
                        event_type: trigger.event,
                        state: KeeperState::SyncConnected,
                        path: trigger.path.clone(),
                    },
                    acl: trigger.acl.clone(),
                },
            );
        }
    }
}
