//! Applies committed txns: the only writer of the tree and the session table.
//!
//! Every replica runs this on the same txns in the same order and reaches the same
//! state: each write is validated here, when applied, against the tree as it is then.
//! For each txn it (1) changes the state, (2) queues watch notifications on the
//! connections, (3) completes the proposer's waiter — in that order, under the tree's
//! write lock, so no read can see a change before its notification is queued.

use std::sync::Arc;

use bytes::Bytes;
use std::time::{Duration, Instant};

use paddock_wire::{ErrorCode, KeeperState};
use paddock_wire::{EventType, OpResult, Request, Response, WatcherEvent};
use raft::prelude::Entry;

use crate::consensus::{Applier, SnapshotWriter};
use crate::image::Image;
use crate::server::{ConnId, Db, Outbound, Shared};
use crate::session::Session;
use crate::tree::{TxnContext, WatchTrigger};
use crate::txn::{Txn, TxnKind};
use crate::wait::Applied;
use crate::watch::{Change, WatchRegistry};

/// ZooKeeper's `znode.container.maxNeverUsedIntervalMs` default: a container that
/// never had a child is kept.
const CONTAINER_MAX_NEVER_USED_MS: i64 = 0;

pub struct StateMachine {
    shared: Arc<Shared>,
}

impl StateMachine {
    pub fn new(shared: Arc<Shared>) -> Self {
        StateMachine { shared }
    }
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
            let (result, triggers) = apply_txn(shared, &mut db, &txn, zxid);
            db.last_zxid = zxid;
            shared.metrics.applied_digest(zxid, db.tree.digest());
            fan_out(shared, &mut watches, zxid, triggers);
            shared.waits.complete(txn.origin, Applied { zxid, result });
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
    let now = Instant::now();
    let mut expiry = shared.expiry.lock();
    expiry.clear();
    for session in image.sessions.iter() {
        let timeout = Duration::from_millis(u64::try_from(session.timeout).unwrap_or(0));
        expiry.add(session.id, timeout, now);
    }
    db.tree = image.tree;
    db.sessions = image.sessions;
    db.last_zxid = image.last_zxid;
}

type TxnOutcome = (Result<Response, ErrorCode>, Vec<WatchTrigger>);

fn apply_txn(shared: &Shared, db: &mut Db, txn: &Txn, zxid: i64) -> TxnOutcome {
    let ctx = TxnContext {
        zxid,
        time: txn.time,
        session_id: txn.session_id,
        caller: &txn.caller,
    };
    match &txn.kind {
        TxnKind::Client(request) => {
            match db.sessions.get(txn.session_id) {
                None => return (Err(ErrorCode::SessionExpired), Vec::new()),
                // Proposed for a connection the session has since left.
                Some(session) if session.owner != txn.origin.server => {
                    return (Err(ErrorCode::SessionMoved), Vec::new())
                }
                Some(_) => {}
            }
            apply_request(shared, db, request, &ctx)
        }
        TxnKind::MoveSession => {
            let Some(session) = db.sessions.get_mut(txn.session_id) else {
                return (Err(ErrorCode::SessionExpired), Vec::new());
            };
            session.owner = txn.origin.server;
            if txn.origin.server != shared.settings.server_id {
                // The client is on another server now: its old connection here goes.
                shared.conns.close_session(txn.session_id);
            }
            (Ok(Response::Empty), Vec::new())
        }
        TxnKind::CreateSession { timeout, passwd } => {
            db.sessions.insert(Session {
                id: txn.session_id,
                timeout: *timeout,
                passwd: passwd.clone(),
                owner: txn.origin.server,
            });
            let timeout = Duration::from_millis(u64::try_from(*timeout).unwrap_or(0));
            shared
                .expiry
                .lock()
                .add(txn.session_id, timeout, Instant::now());
            (Ok(Response::Empty), Vec::new())
        }
        TxnKind::CloseSession | TxnKind::ExpireSession => {
            let expired = matches!(txn.kind, TxnKind::ExpireSession);
            if db.sessions.remove(txn.session_id).is_none() {
                return (Ok(Response::Empty), Vec::new());
            }
            shared.expiry.lock().remove(txn.session_id);
            let killed = db.tree.kill_session(txn.session_id, zxid);
            if expired {
                // Closing it lets the client see the expiry when it reconnects.
                shared.conns.close_session(txn.session_id);
            }
            (Ok(Response::Empty), killed.triggers)
        }
        TxnKind::DeleteContainer { path } => {
            match db
                .tree
                .delete_container(path, CONTAINER_MAX_NEVER_USED_MS, &ctx)
            {
                Ok(applied) => (Ok(Response::Empty), applied.triggers),
                // A child arrived, or the node is gone: nothing to do.
                Err(code) => (Err(code), Vec::new()),
            }
        }
    }
}

fn apply_request(
    shared: &Shared,
    db: &mut Db,
    request: &Request,
    ctx: &TxnContext<'_>,
) -> TxnOutcome {
    if uses_extended_types(request) && !shared.settings.extended_types {
        // As ZooKeeper: TTL nodes exist only with extendedTypesEnabled=true.
        return (Err(ErrorCode::Unimplemented), Vec::new());
    }
    match request {
        Request::Multi(ops) => {
            let applied = db.tree.multi(ops, ctx);
            (Ok(Response::Multi(applied.result)), applied.triggers)
        }
        Request::SetAcl(r) => match db.tree.set_acl(&r.path, &r.acl, r.version, ctx) {
            Ok(applied) => (Ok(Response::Stat(applied.result)), applied.triggers),
            Err(code) => (Err(code), Vec::new()),
        },
        op => match db.tree.apply_op(op, ctx) {
            Ok(applied) => (Ok(single_response(applied.result)), applied.triggers),
            Err(code) => (Err(code), Vec::new()),
        },
    }
}

fn uses_extended_types(request: &Request) -> bool {
    match request {
        Request::CreateTtl(_) => true,
        Request::Multi(ops) => ops.iter().any(uses_extended_types),
        _ => false,
    }
}

/// The reply to a write made outside a multi, from the result it would have in one.
fn single_response(result: OpResult) -> Response {
    match result {
        OpResult::Create { path } => Response::Create { path },
        OpResult::Create2 { path, stat } => Response::Create2 { path, stat },
        OpResult::SetData { stat } => Response::Stat(stat),
        OpResult::GetData { data, stat } => Response::GetData { data, stat },
        OpResult::GetChildren { children } => Response::GetChildren { children },
        OpResult::Delete | OpResult::Check | OpResult::Error(_) => Response::Empty,
    }
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
