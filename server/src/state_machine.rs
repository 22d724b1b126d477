//! Applies committed txns: the only writer of the tree and the session table.
//!
//! For each txn it (1) changes the state ([`crate::apply`], a pure function), (2)
//! queues watch notifications on the connections, (3) carries out the other effects
//! (session clocks, connections to close), (4) completes the proposer's waiter — in
//! that order, under the tree's write lock, so no read can see a change before its
//! notification is queued.

use std::sync::Arc;

use std::time::Duration;

use paddock_wire::KeeperState;
use paddock_wire::{EventType, Response, WatcherEvent};
use raft::prelude::{Entry, Snapshot};

use crate::apply::{apply, Effect, Rules};
use crate::consensus::{Applier, SnapshotWriter};
use crate::fatal::fatal;
use crate::image::Image;
use crate::liveness::LivenessEvent;
use crate::server::{ConnId, Outbound, Shared};
use crate::store::snapshot::{LoadedSnapshot, SnapshotDir};
use crate::tree::WatchTrigger;
use crate::txn::{Origin, Txn};
use crate::wait::Completion;
use crate::watch::{Change, WatchRegistry};

pub struct StateMachine {
    shared: Arc<Shared>,
    rules: Rules,
    inbox: SnapshotInbox,
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
    pub fn new(shared: Arc<Shared>, inbox: SnapshotInbox) -> Self {
        let rules = Rules {
            extended_types: shared.settings.extended_types,
            enforce_quota: shared.settings.enforce_quota,
        };
        StateMachine {
            shared,
            rules,
            inbox,
        }
    }
}

/// Does what applying a txn asked of this server.
fn carry_out(shared: &Shared, effect: Effect) {
    match effect {
        Effect::SessionOpened { session, timeout } => shared.liveness.send(LivenessEvent::Opened {
            session,
            timeout: millis(timeout),
        }),
        Effect::SessionMoved { session, conn, .. } => {
            shared.liveness.send(LivenessEvent::Reattached { session });
            // The client is on connection `conn` now (here or on another server): any
            // other connection holding the session here goes.
            shared.conns.close_session_unless(session, conn);
        }
        Effect::SessionEnded { session, expired } => {
            shared.liveness.send(LivenessEvent::Ended { session });
            if expired {
                // Closing it lets the client see the expiry when it reconnects.
                shared.conns.close_session(session);
            }
        }
    }
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl Applier for StateMachine {
    fn apply(&mut self, entries: &[Entry]) {
        let shared = &*self.shared;
        let mut db = shared.db.write();
        let mut watches = shared.watches.lock();
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
            shared.metrics.applied_digest(zxid, db.tree.digest());
            fan_out(shared, &mut watches, zxid, outcome.triggers);
            for effect in outcome.effects {
                carry_out(shared, effect);
            }
            shared.waits.complete(
                txn.origin,
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
            let data_dir = &self.shared.settings.data_dir;
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
                install(&self.shared, image);
                // As a ZooKeeper follower that resyncs: its clients reconnect, so that
                // setWatches delivers the events of what changed inside the snapshot,
                // and sessions that expired meanwhile learn it. Their pending writes'
                // outcomes are unknown to them, as after any connection loss.
                let closed = self.shared.conns.close_all();
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
        let image = Image::of(&self.shared.db.read());
        Box::new(move |out: &mut dyn std::io::Write| image.write_to(out))
    }

    fn dropped(&mut self, head: &[u8]) {
        if let Some(origin) = Origin::from_txn_head(head) {
            self.shared.waits.complete(
                origin,
                Completion {
                    zxid: 0,
                    result: Err(paddock_wire::ErrorCode::ConnectionLoss),
                },
            );
        }
    }

    fn read_ready(&mut self, request: u64) {
        let shared = &*self.shared;
        let zxid = shared.last_zxid();
        let origin = crate::txn::Origin {
            server: shared.settings.server_id,
            request,
        };
        shared.waits.complete(
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
pub fn install(shared: &Shared, image: Image) {
    let mut db = shared.db.write();
    let sessions = image
        .sessions
        .iter()
        .map(|session| (session.id, millis(session.timeout)))
        .collect();
    shared.liveness.send(LivenessEvent::Installed { sessions });
    db.tree = image.tree;
    db.sessions = image.sessions;
    db.last_zxid = image.last_zxid;
}

/// Queues each fired watch's event on the connections that hold it, with the ACL
/// that decides whether each may hear of it (checked by the connection against its
/// own identities, which only it knows).
fn fan_out(
    shared: &Shared,
    watches: &mut WatchRegistry<ConnId>,
    zxid: i64,
    triggers: Vec<WatchTrigger>,
) {
    for trigger in triggers {
        let Some(change) = change_of(trigger.event) else {
            continue;
        };
        let Some(fired) = watches.trigger(&trigger.path, change) else {
            continue;
        };
        for conn in fired.watchers {
            shared.conns.send(
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

fn change_of(event: EventType) -> Option<Change> {
    Some(match event {
        EventType::NodeCreated => Change::NodeCreated,
        EventType::NodeDeleted => Change::NodeDeleted,
        EventType::NodeDataChanged => Change::NodeDataChanged,
        EventType::NodeChildrenChanged => Change::NodeChildrenChanged,
        _ => return None,
    })
}
