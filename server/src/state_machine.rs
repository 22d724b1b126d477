//! Applies committed txns: the only writer of the tree and the session table.
//!
//! For each txn it (1) changes the state ([`crate::apply`], a pure function), (2)
//! queues watch notifications on the connections, (3) carries out the other effects
//! (session clocks, connections to close), (4) completes the proposer's waiter — in
//! that order, under the tree's write lock, so no read can see a change before its
//! notification is queued.

use std::sync::Arc;

use bytes::Bytes;
use std::time::Duration;

use paddock_wire::KeeperState;
use paddock_wire::{EventType, Response, WatcherEvent};
use raft::prelude::Entry;

use crate::apply::{apply, Effect, Rules};
use crate::consensus::{Applier, SnapshotWriter};
use crate::image::Image;
use crate::liveness::LivenessEvent;
use crate::server::{ConnId, Outbound, Shared};
use crate::tree::WatchTrigger;
use crate::txn::Txn;
use crate::wait::Applied;
use crate::watch::{Change, WatchRegistry};

pub struct StateMachine {
    shared: Arc<Shared>,
    rules: Rules,
}

impl StateMachine {
    pub fn new(shared: Arc<Shared>) -> Self {
        let rules = Rules {
            extended_types: shared.settings.extended_types,
        };
        StateMachine { shared, rules }
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
                    tracing::error!("undecodable txn at zxid {zxid:#x}: {e}; exiting");
                    std::process::exit(1);
                }
            };
            let outcome = apply(self.rules, &mut db, &txn, zxid);
            fan_out(shared, &mut watches, zxid, outcome.triggers);
            for effect in outcome.effects {
                carry_out(shared, effect);
            }
            shared.waits.complete(
                txn.origin,
                Applied {
                    zxid,
                    result: outcome.result,
                },
            );
        }
    }

    fn restore(&mut self, payload: &[u8]) {
        match Image::read_from(Bytes::copy_from_slice(payload)) {
            Ok(image) => install(&self.shared, image),
            Err(e) => {
                // The snapshot's checksum held, so this is a bug or a foreign format:
                // carrying on would fork this replica.
                tracing::error!("cannot read the leader's snapshot: {e}; exiting");
                std::process::exit(1);
            }
        }
    }

    fn image(&mut self) -> SnapshotWriter {
        let image = Image::of(&self.shared.db.read());
        Box::new(move |out: &mut dyn std::io::Write| image.write_to(out))
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
            Applied {
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

/// Queues each fired watch's event on the connections that hold it.
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
