//! The writes. Each runs ZooKeeper's checks in ZooKeeper's order (so a request that is
//! wrong in several ways gets the same error code), then either applies completely or
//! returns the error having changed nothing.

use std::sync::Arc;

use paddock_wire::path::validate_path;
use paddock_wire::{perms, Acl, CreateMode, Data, ErrorCode, EventType, Id, OpCode, Stat};

use super::node::{Node, NodeKind, StatPersisted, MAX_TTL_MS};
use super::shared_acl;
use super::{is_special_path, DataTree};
use crate::acl;

/// What a write is applied with, all taken from the replicated txn so that every
/// replica computes the same result.
#[derive(Debug, Clone, Copy)]
pub struct TxnContext<'a> {
    /// Stamped on every node the txn touches; the ops of a multi share one.
    pub zxid: i64,
    /// Milliseconds since the epoch, stamped once by the proposer.
    pub time: i64,
    /// The session that sent the request: the owner of the ephemerals it creates.
    pub session_id: i64,
    /// The identities that session has authenticated as, for ACL checks.
    pub caller: &'a [Id],
    /// `enforceQuota`: refuse creates and setData past a hard quota (see `quota`).
    pub enforce_quota: bool,
}

/// A watch event a write causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchTrigger {
    pub path: String,
    pub event: EventType,
    /// The ACL of the node the event is about (the parent's, for
    /// `NodeChildrenChanged`): ZooKeeper 3.9 delivers an event only to watchers
    /// holding READ on it.
    pub acl: Arc<[Acl]>,
}

/// The result of a write that succeeded, with the watch events it causes in the order
/// ZooKeeper fires them. `NodeDeleted` fires both the data and the child watches left
/// on its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied<T> {
    pub result: T,
    pub triggers: Vec<WatchTrigger>,
}

/// The kind of node a create makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateKind {
    Persistent,
    /// Owned by the creating session.
    Ephemeral,
    Container,
    Ttl {
        ttl_ms: i64,
    },
}

/// What a create request asks for, once its flags and TTL have been checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateSpec {
    pub kind: CreateKind,
    /// Append the parent's cversion, `%010d`, to the name.
    pub sequential: bool,
}

impl CreateSpec {
    /// A create in `mode`; `ttl` is required for the TTL modes and refused (when not
    /// negative) for the others, as `EphemeralType.validateTTL`.
    #[cfg(test)]
    pub fn from_mode(mode: CreateMode, ttl: Option<i64>) -> Result<Self, ErrorCode> {
        validate_ttl(mode, ttl)?;
        let kind = match (mode, ttl) {
            (CreateMode::Persistent | CreateMode::PersistentSequential, _) => {
                CreateKind::Persistent
            }
            (CreateMode::Ephemeral | CreateMode::EphemeralSequential, _) => CreateKind::Ephemeral,
            (CreateMode::Container, _) => CreateKind::Container,
            (
                CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl,
                Some(ttl_ms),
            ) => CreateKind::Ttl { ttl_ms },
            (CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl, None) => {
                return Err(ErrorCode::BadArguments)
            }
        };
        Ok(CreateSpec {
            kind,
            sequential: mode.is_sequential(),
        })
    }

    /// What one of the four create ops asks for, decided as ZooKeeper 3.8 does
    /// (verified with raw requests, verify/t4.py): the op code, not the flags, makes a
    /// container or a TTL node — `createContainer` with flags 0 or 2 makes a
    /// (sequential) container, `create2` with the container flag a plain persistent
    /// node. TTL flags without a valid TTL, or a TTL with other flags, are
    /// `BadArguments`; so are unknown flags.
    pub fn for_op(op: OpCode, flags: i32, ttl: Option<i64>) -> Result<Self, ErrorCode> {
        let mode = CreateMode::from_flags(flags).map_err(|_| ErrorCode::BadArguments)?;
        validate_ttl(mode, ttl)?;
        let kind = match op {
            OpCode::CreateContainer => CreateKind::Container,
            // Non-TTL flags with a negative TTL pass ZooKeeper's checks and then fail
            // while being applied; refuse them here instead.
            OpCode::CreateTtl => match ttl {
                Some(ttl_ms) if mode.is_ttl() => CreateKind::Ttl { ttl_ms },
                _ => return Err(ErrorCode::BadArguments),
            },
            OpCode::Create | OpCode::Create2 if mode.is_ephemeral() => CreateKind::Ephemeral,
            OpCode::Create | OpCode::Create2 => CreateKind::Persistent,
            _ => return Err(ErrorCode::BadArguments),
        };
        Ok(CreateSpec {
            kind,
            sequential: mode.is_sequential(),
        })
    }
}

/// `EphemeralType.validateTTL`: a TTL mode needs `0 < ttl <= MAX_TTL_MS`; any other
/// mode refuses a TTL that is not negative.
fn validate_ttl(mode: CreateMode, ttl: Option<i64>) -> Result<(), ErrorCode> {
    let valid = if mode.is_ttl() {
        matches!(ttl, Some(t) if t > 0 && t <= MAX_TTL_MS)
    } else {
        !matches!(ttl, Some(t) if t >= 0)
    };
    if valid {
        Ok(())
    } else {
        Err(ErrorCode::BadArguments)
    }
}

/// `checkAndIncVersion`: -1 matches any version; the new version is one more (Java
/// int arithmetic, so it wraps).
fn next_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

/// `validatePath` for setData, setACL and check.
fn validate(path: &str) -> Result<(), ErrorCode> {
    validate_path(path, false).map_err(|_| ErrorCode::BadArguments)
}

/// The parent of a path to delete (`getParentPathAndValidate`). Only the last slash is
/// looked at, not the whole path: a malformed path names no node, so it ends in
/// `NoNode` (or `NoAuth` first), as in ZooKeeper.
pub(super) fn parent_for_delete(path: &str) -> Result<&str, ErrorCode> {
    match path.rfind('/') {
        Some(slash) if !path.contains('\0') && !is_special_path(path) => {
            Ok(if slash == 0 { "/" } else { &path[..slash] })
        }
        _ => Err(ErrorCode::BadArguments),
    }
}

impl DataTree {
    /// Creates a node in `mode` (see [`CreateSpec::from_mode`]) and returns its path,
    /// with the sequence suffix if any, and its stat.
    #[cfg(test)]
    pub fn create(
        &mut self,
        path: &str,
        data: Data,
        acl: &[Acl],
        mode: CreateMode,
        ttl: Option<i64>,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<(String, Stat)>, ErrorCode> {
        let spec = CreateSpec::from_mode(mode, ttl)?;
        self.create_with(path, data, acl, spec, ctx)
    }

    /// Creates a node as [`CreateSpec`] says, with the checks of
    /// `PrepRequestProcessor.pRequest2TxnCreate` in its order: path shape, ACL, parent,
    /// CREATE permission, full path rules, existence, ephemeral parent.
    pub fn create_with(
        &mut self,
        path: &str,
        data: Data,
        acl: &[Acl],
        spec: CreateSpec,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<(String, Stat)>, ErrorCode> {
        let kind = match spec.kind {
            CreateKind::Persistent => NodeKind::Persistent,
            CreateKind::Ephemeral => NodeKind::Ephemeral {
                session_id: ctx.session_id,
            },
            CreateKind::Container => NodeKind::Container,
            CreateKind::Ttl { ttl_ms } => NodeKind::Ttl { ttl_ms },
        };
        // A session id that reads back as another kind (0, or a container or TTL
        // pattern) cannot own an ephemeral.
        if NodeKind::from_ephemeral_owner(kind.ephemeral_owner()) != kind {
            return Err(ErrorCode::BadArguments);
        }
        // Only the last slash matters until the full path rules are checked below,
        // after the parent: `/a/.` is NoNode when /a is missing, BadArguments when not.
        let slash = match path.rfind('/') {
            Some(slash) if !path.contains('\0') => slash,
            _ => return Err(ErrorCode::BadArguments),
        };
        let parent_path = if slash == 0 { "/" } else { &path[..slash] };
        let acl = acl::fixup(acl, ctx.caller)?;
        let parent = self.node(parent_path).ok_or(ErrorCode::NoNode)?;
        acl::check(parent.acl(), perms::CREATE, ctx.caller)?;
        let acl = shared_acl::share_with(acl, parent.acl());
        let path = if spec.sequential {
            // The stored cversion counts creates only, so names skip no numbers
            // when children are deleted (3.8: /p/a, /p/b, delete a -> s-0000000002).
            format!("{path}{:010}", parent.stat().cversion)
        } else {
            path.to_owned()
        };
        validate_path(&path, false).map_err(|_| ErrorCode::BadArguments)?;
        if self.contains(path.as_str()) {
            return Err(ErrorCode::NodeExists);
        }
        // Containers and TTL nodes may have children; only session-owned nodes not.
        if matches!(parent.kind(), NodeKind::Ephemeral { .. }) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let parent_acl = parent.acl().clone();
        // Last, as ZooKeeper checks it after every other reason to refuse.
        self.check_quota(&path, 1, data.len() as i64, ctx.enforce_quota)?;
        let data_len = data.len() as i64;

        let node = Node::new(
            data,
            acl.clone(),
            StatPersisted::new_node(ctx.zxid, ctx.time, kind.ephemeral_owner()),
        );
        let stat = node.to_stat();
        // Cannot fail (the path was checked above), and changes nothing if it did.
        self.insert(&path, node)
            .map_err(|_| ErrorCode::NodeExists)?;
        self.update(parent_path, |parent| {
            parent.add_child();
            let stat = parent.stat_mut();
            let cversion = stat.cversion.wrapping_add(1);
            // As DataTree.createNode: only ever moves cversion forward.
            if cversion > stat.cversion {
                stat.cversion = cversion;
                stat.pzxid = ctx.zxid;
            }
        });
        self.count_in_quota(&path, 1, data_len);
        self.on_created(&path);
        let triggers = vec![
            trigger(&path, EventType::NodeCreated, acl),
            trigger(parent_path, EventType::NodeChildrenChanged, parent_acl),
        ];
        Ok(Applied {
            result: (path, stat),
            triggers,
        })
    }

    /// Deletes a childless node. The checks, in ZooKeeper's order: not one of its own
    /// nodes (`BadArguments`), parent exists, DELETE on the parent, node exists,
    /// version, no children.
    pub fn delete(
        &mut self,
        path: &str,
        version: i32,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<()>, ErrorCode> {
        let parent_path = parent_for_delete(path)?;
        let parent = self.node(parent_path).ok_or(ErrorCode::NoNode)?;
        // Before the node's existence: a caller without DELETE cannot probe for
        // children (3.8: NoAuth for a missing child of such a parent).
        acl::check(parent.acl(), perms::DELETE, ctx.caller)?;
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        next_version(node.stat().version, version)?;
        if node.has_children() {
            return Err(ErrorCode::NotEmpty);
        }
        Ok(Applied {
            result: (),
            triggers: self.unlink(path, ctx.zxid),
        })
    }

    /// Replaces a node's data; WRITE permission and the version must match.
    pub fn set_data(
        &mut self,
        path: &str,
        data: Data,
        version: i32,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<Stat>, ErrorCode> {
        validate(path)?;
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        acl::check(node.acl(), perms::WRITE, ctx.caller)?;
        let version = next_version(node.stat().version, version)?;
        let acl = node.acl().clone();
        let bytes = data.len() as i64 - node.data().len() as i64;
        self.check_quota(path, 0, bytes, ctx.enforce_quota)?;
        let stat = self
            .update(path, |node| {
                node.set_data(data);
                let stat = node.stat_mut();
                stat.version = version;
                stat.mtime = ctx.time;
                stat.mzxid = ctx.zxid;
                node.to_stat()
            })
            .ok_or(ErrorCode::NoNode)?;
        self.count_in_quota(path, 0, bytes);
        Ok(Applied {
            result: stat,
            triggers: vec![trigger(path, EventType::NodeDataChanged, acl)],
        })
    }

    /// Replaces a node's ACL (after [`acl::fixup`]); ADMIN permission and the aversion
    /// must match. Fires no watch, as in ZooKeeper.
    pub fn set_acl(
        &mut self,
        path: &str,
        acl: &[Acl],
        aversion: i32,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<Stat>, ErrorCode> {
        validate(path)?;
        // Before the node lookup: an invalid ACL on a missing node is InvalidACL (3.8).
        let acl = acl::fixup(acl, ctx.caller)?;
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        acl::check(node.acl(), perms::ADMIN, ctx.caller)?;
        let acl = shared_acl::share_with(acl, node.acl());
        let aversion = next_version(node.stat().aversion, aversion)?;
        let stat = self
            .update(path, |node| {
                node.set_acl(acl);
                node.stat_mut().aversion = aversion;
                node.to_stat()
            })
            .ok_or(ErrorCode::NoNode)?;
        Ok(Applied {
            result: stat,
            triggers: Vec::new(),
        })
    }

    /// The `check` op of a multi: the node exists, the caller may READ it and its
    /// version matches. Changes nothing.
    pub fn check(&self, path: &str, version: i32, caller: &[Id]) -> Result<(), ErrorCode> {
        validate(path)?;
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        acl::check(node.acl(), perms::READ, caller)?;
        next_version(node.stat().version, version).map(|_| ())
    }

    /// Deletes every ephemeral node of a session (close or expiry) and returns their
    /// paths, in order.
    pub fn kill_session(&mut self, session_id: i64, zxid: i64) -> Applied<Vec<String>> {
        let paths: Vec<String> = self
            .ephemerals
            .of_session(session_id)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut triggers = Vec::with_capacity(paths.len() * 2);
        for path in &paths {
            triggers.extend(self.unlink(path, zxid));
        }
        Applied {
            result: paths,
            triggers,
        }
    }

    /// Removes a node known to exist and to have no children, and updates its parent
    /// as `DataTree.deleteNode`: pzxid moves forward, cversion stays (the reported
    /// cversion still grows, as it counts the missing child).
    pub(super) fn unlink(&mut self, path: &str, zxid: i64) -> Vec<WatchTrigger> {
        let mut triggers = Vec::with_capacity(2);
        let Some(node) = self.remove(path) else {
            return triggers;
        };
        self.count_in_quota(path, -1, -(node.data().len() as i64));
        triggers.push(trigger(path, EventType::NodeDeleted, node.acl().clone()));
        let parent_path = paddock_wire::path::parent(path).unwrap_or("/");
        let parent_acl = self.update(parent_path, |parent| {
            parent.remove_child();
            let stat = parent.stat_mut();
            if zxid > stat.pzxid {
                stat.pzxid = zxid;
            }
            parent.acl().clone()
        });
        if let Some(parent_acl) = parent_acl {
            triggers.push(trigger(
                parent_path,
                EventType::NodeChildrenChanged,
                parent_acl,
            ));
        }
        triggers
    }
}

fn trigger(path: &str, event: EventType, acl: Arc<[Acl]>) -> WatchTrigger {
    WatchTrigger {
        path: path.to_owned(),
        event,
        acl,
    }
}

#[cfg(test)]
mod tests;
