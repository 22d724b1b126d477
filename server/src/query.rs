//! Reads and the other requests a server answers on its own, from its local tree
//! (ZooKeeper semantics: reads are not linearizable unless preceded by `sync`).
//!
//! The caller holds the tree's read lock for the whole request: a watch is registered
//! under it, so no write can slip in between the read and the registration and go
//! unnoticed, and the caller drains the connection's notifications under the same lock
//! (see `conn.rs`), so the reply cannot overtake the events of what it shows.

use bytes::Bytes;
use paddock_wire::path::validate_path;
use paddock_wire::{
    AddWatchMode, ClientInfo, Data, ErrorCode, OpResult, Request, Response, WatcherEvent,
    WatcherType,
};

use crate::conns::ConnId;
use crate::replicated::Db;
use crate::server::{Server, Settings};
use crate::session::Caller;
use crate::watch::{NodeZxids, WatchKind, WatchRegistry};

/// A local request's reply, and any events that must reach the client before it (the
/// watches a `setWatches` finds already fired).
pub struct Outcome {
    pub zxid: i64,
    pub result: Result<Response, ErrorCode>,
    pub events: Vec<WatcherEvent>,
}

pub fn run(
    server: &Server,
    db: &Db,
    conn: ConnId,
    session_id: i64,
    caller: &Caller,
    request: Request,
) -> Outcome {
    let mut events = Vec::new();
    let result = {
        let mut watches = server.replicated.watches.lock();
        let mut ctx = Ctx {
            db,
            settings: &server.settings,
            watches: &mut watches,
            conn,
            caller,
        };
        match request {
            Request::SetWatches(request) => {
                events = ctx
                    .watches
                    .set_watches(conn, &request, |path| zxids(db, path));
                events.retain(|event| may_hear(db, caller, event));
                Ok(Response::Empty)
            }
            Request::SetWatches2(request) => {
                events = ctx
                    .watches
                    .set_watches(conn, &request, |path| zxids(db, path));
                events.retain(|event| may_hear(db, caller, event));
                Ok(Response::Empty)
            }
            Request::GetEphemerals(request) => Ok(Response::Ephemerals(
                db.tree.get_ephemerals(session_id, &request.path),
            )),
            request => ctx.run(request),
        }
    };
    Outcome {
        zxid: db.last_zxid,
        result,
        events,
    }
}

/// Whether a missed event found by `setWatches` may be sent: READ on the node as it
/// is now (the ACL it had when it changed is gone). ZooKeeper sends these unchecked,
/// which would let any client learn of changes to nodes it cannot read by naming them
/// in a `setWatches`. A deleted node has no ACL left: its deletion is told, as
/// `exists` would tell it.
fn may_hear(db: &Db, caller: &Caller, event: &WatcherEvent) -> bool {
    db.tree.node(&event.path).is_none_or(|node| {
        crate::acl::is_allowed(node.acl(), paddock_wire::perms::READ, caller.ids())
    })
}

/// What `setWatches` compares a re-armed watch with.
pub(crate) fn zxids(db: &Db, path: &str) -> Option<NodeZxids> {
    db.tree.node(path).map(|node| NodeZxids {
        mzxid: node.stat().mzxid,
        pzxid: node.stat().pzxid,
    })
}

/// The node ZooKeeper keeps the ensemble's membership in.
const CONFIG_NODE: &str = "/zookeeper/config";

fn data_length(data: &Data) -> i32 {
    i32::try_from(data.len()).unwrap_or(i32::MAX)
}

struct Ctx<'a> {
    db: &'a Db,
    settings: &'a Settings,
    watches: &'a mut WatchRegistry<ConnId>,
    conn: ConnId,
    caller: &'a Caller,
}

impl Ctx<'_> {
    /// What `path` reads as if it is `/zookeeper/config` in an ensemble. Each server
    /// serves it from its own config, as ZooKeeper does from its quorum verifier: the
    /// replicated node stays empty, so replicas and snapshots never carry one server's
    /// view of it. The path is checked first: every `exists` and `getData` asks, and
    /// formatting the membership is not free (2.4 % of server samples in pub/sub).
    fn membership_at(&self, path: &str) -> Option<Data> {
        if path != CONFIG_NODE {
            return None;
        }
        let ensemble = self.settings.ensemble.as_ref()?;
        Some(Bytes::from(ensemble.membership()).into())
    }

    fn run(&mut self, request: Request) -> Result<Response, ErrorCode> {
        let tree = &self.db.tree;
        let caller = self.caller.ids();
        match request {
            Request::Exists(r) => {
                valid(&r.path)?;
                let mut found = tree.stat(&r.path, caller);
                if let (Ok(stat), Some(membership)) = (&mut found, self.membership_at(&r.path)) {
                    stat.data_length = data_length(&membership);
                }
                // An exists watch is left whether or not the node exists (on a missing
                // node it waits for the creation), but not when access was denied.
                if r.watch && found != Err(ErrorCode::NoAuth) {
                    self.watches.add_watch(self.conn, &r.path, WatchKind::Data);
                }
                found.map(Response::Stat)
            }
            Request::GetData(r) => {
                valid(&r.path)?;
                let (mut data, mut stat) = tree.get_data(&r.path, caller)?;
                if let Some(membership) = self.membership_at(&r.path) {
                    stat.data_length = data_length(&membership);
                    data = membership;
                }
                if r.watch {
                    self.watches.add_watch(self.conn, &r.path, WatchKind::Data);
                }
                Ok(Response::GetData { data, stat })
            }
            Request::GetChildren(r) => {
                valid(&r.path)?;
                let (children, _) = tree.get_children(&r.path, caller)?;
                if r.watch {
                    self.watches.add_watch(self.conn, &r.path, WatchKind::Child);
                }
                Ok(Response::GetChildren { children })
            }
            Request::GetChildren2(r) => {
                valid(&r.path)?;
                let (children, stat) = tree.get_children(&r.path, caller)?;
                if r.watch {
                    self.watches.add_watch(self.conn, &r.path, WatchKind::Child);
                }
                Ok(Response::GetChildren2 { children, stat })
            }
            Request::GetAcl(r) => {
                valid(&r.path)?;
                let (acl, stat) = tree.get_acl(&r.path, caller)?;
                Ok(Response::GetAcl { acl, stat })
            }
            Request::GetAllChildrenNumber(r) => {
                valid(&r.path)?;
                tree.all_children_number(&r.path, caller)
                    .map(Response::AllChildrenNumber)
            }
            Request::MultiRead(ops) => Ok(Response::Multi(
                ops.into_iter().map(|op| self.read_op(op)).collect(),
            )),
            Request::AddWatch(r) => {
                valid(&r.path)?;
                let mode = AddWatchMode::from_i32(r.mode).map_err(|_| ErrorCode::BadArguments)?;
                let kind = match mode {
                    AddWatchMode::Persistent => WatchKind::Persistent,
                    AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
                };
                self.watches.add_watch(self.conn, &r.path, kind);
                Ok(Response::Code(ErrorCode::Ok))
            }
            Request::CheckWatches(r) => {
                let kind = watcher_type(r.watcher_type)?;
                self.watches
                    .check_watches(self.conn, &r.path, kind)
                    .map(|()| Response::Empty)
                    .map_err(|e| e.code())
            }
            Request::RemoveWatches(r) => {
                let kind = watcher_type(r.watcher_type)?;
                self.watches
                    .remove_watches(self.conn, &r.path, kind)
                    .map(|_| Response::Empty)
                    .map_err(|e| e.code())
            }
            Request::WhoAmI => Ok(Response::WhoAmI(
                caller
                    .iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.clone(),
                        // As ZooKeeper's providers name users: a digest id is
                        // `user:hash`, and only the user is reported.
                        user: match id.scheme.as_str() {
                            "digest" => id.id.split(':').next().unwrap_or_default().to_owned(),
                            _ => id.id.clone(),
                        },
                    })
                    .collect(),
            )),
            // Dynamic reconfiguration is off, as in a default ZooKeeper.
            Request::Reconfig(_) => Err(ErrorCode::ReconfigDisabled),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    /// One op of a multiRead: failures are per op, never for the whole request.
    fn read_op(&mut self, op: Request) -> OpResult {
        let result = match op {
            Request::GetData(r) => self
                .run(Request::GetData(r))
                .map(|response| match response {
                    Response::GetData { data, stat } => OpResult::GetData { data, stat },
                    _ => OpResult::Error(ErrorCode::SystemError),
                }),
            Request::GetChildren(r) => {
                self.run(Request::GetChildren(r))
                    .map(|response| match response {
                        Response::GetChildren { children } => OpResult::GetChildren { children },
                        _ => OpResult::Error(ErrorCode::SystemError),
                    })
            }
            _ => Err(ErrorCode::BadArguments),
        };
        result.unwrap_or_else(OpResult::Error)
    }
}

fn valid(path: &str) -> Result<(), ErrorCode> {
    validate_path(path, false).map_err(|_| ErrorCode::BadArguments)
}

fn watcher_type(raw: i32) -> Result<WatcherType, ErrorCode> {
    WatcherType::from_i32(raw).map_err(|_| ErrorCode::BadArguments)
}
