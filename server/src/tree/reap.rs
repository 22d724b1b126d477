//! Containers and TTL nodes: which are due for deletion (ZooKeeper's
//! `ContainerManager.getCandidates`) and the deletion itself (`deleteContainer`),
//! which checks the condition again when applied, because a child may have been
//! created or a TTL node modified since the candidate was picked.

use paddock_wire::ErrorCode;

use super::node::{Node, NodeKind};
use super::write::{parent_for_delete, Applied, TxnContext};
use super::DataTree;

/// Whether a container or TTL node is due at `now` (ms). Containers qualify once they
/// have had a child and have none left (cversion > 0 keeps a new container alive until
/// it is used), or, when `max_never_used_ms` is not 0, when never used for longer than
/// that (`znode.container.maxNeverUsedIntervalMs`). TTL nodes qualify when childless
/// and not modified for longer than their TTL.
fn is_due(node: &Node, now: i64, max_never_used_ms: i64) -> bool {
    if node.has_children() {
        return false;
    }
    let idle = now.saturating_sub(node.stat().mtime);
    match node.kind() {
        NodeKind::Container => {
            node.stat().cversion > 0 || (max_never_used_ms != 0 && idle > max_never_used_ms)
        }
        NodeKind::Ttl { ttl_ms } => ttl_ms != 0 && idle > ttl_ms,
        NodeKind::Persistent | NodeKind::Ephemeral { .. } => false,
    }
}

impl DataTree {
    /// The containers and TTL nodes due for deletion at `now`, sorted.
    pub fn expired_containers_and_ttls(&self, now: i64, max_never_used_ms: i64) -> Vec<String> {
        let mut due: Vec<String> = self
            .containers
            .iter()
            .chain(self.ttls.iter())
            .filter(|path| {
                self.node(path.as_str())
                    .is_some_and(|node| is_due(node, now, max_never_used_ms))
            })
            .cloned()
            .collect();
        due.sort_unstable();
        due
    }

    /// Deletes a container or TTL node if it is still due at `ctx.time`: `NotEmpty` if
    /// it has children, `BadVersion` if it is no longer due or not a container or TTL
    /// node (ZooKeeper's code for the latter; unlike ZooKeeper, a persistent node that
    /// took the path in the meantime is left alone). No ACL check: the server asks.
    pub fn delete_container(
        &mut self,
        path: &str,
        max_never_used_ms: i64,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<()>, ErrorCode> {
        parent_for_delete(path)?;
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        if node.has_children() {
            return Err(ErrorCode::NotEmpty);
        }
        if !is_due(node, ctx.time, max_never_used_ms) {
            return Err(ErrorCode::BadVersion);
        }
        Ok(Applied {
            result: (),
            triggers: self.unlink(path, ctx.zxid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use paddock_wire::{Acl, CreateMode};

    fn at(zxid: i64, time: i64) -> TxnContext<'static> {
        TxnContext {
            zxid,
            time,
            session_id: 3,
            caller: &[],
            enforce_quota: false,
        }
    }

    fn mk(
        tree: &mut DataTree,
        path: &str,
        mode: CreateMode,
        ttl: Option<i64>,
        ctx: &TxnContext<'_>,
    ) {
        tree.create(
            path,
            Bytes::new().into(),
            &Acl::open_unsafe(),
            mode,
            ttl,
            ctx,
        )
        .unwrap();
    }

    #[test]
    fn candidates_match_zookeepers_reaper() {
        // verify/t4.py on ZooKeeper 3.8 (check interval 1 s, 4.5 s wait): of these,
        // "never", "busy" and "ttlkid" survived; "used", "ttl" and "ttlused" were
        // deleted. (Its "c2flag" and "ccflag0" cases are CreateSpec::for_op's.)
        let mut tree = DataTree::new();
        let t0 = at(1, 1_000);
        mk(&mut tree, "/reap", CreateMode::Persistent, None, &t0);
        for name in ["never", "used", "busy"] {
            mk(
                &mut tree,
                &format!("/reap/{name}"),
                CreateMode::Container,
                None,
                &t0,
            );
        }
        for name in ["ttl", "ttlkid", "ttlused"] {
            mk(
                &mut tree,
                &format!("/reap/{name}"),
                CreateMode::PersistentWithTtl,
                Some(1500),
                &t0,
            );
        }
        for parent in ["used", "busy", "ttlkid", "ttlused"] {
            mk(
                &mut tree,
                &format!("/reap/{parent}/ch"),
                CreateMode::Persistent,
                None,
                &t0,
            );
        }
        tree.delete("/reap/used/ch", -1, &at(2, 1_000)).unwrap();
        tree.delete("/reap/ttlused/ch", -1, &at(3, 1_000)).unwrap();

        assert_eq!(
            tree.expired_containers_and_ttls(2_500, 0),
            ["/reap/used"],
            "TTL not yet passed"
        );
        assert_eq!(
            tree.expired_containers_and_ttls(2_501, 0),
            ["/reap/ttl", "/reap/ttlused", "/reap/used"]
        );
        assert_eq!(
            tree.expired_containers_and_ttls(2_501, 1_000),
            ["/reap/never", "/reap/ttl", "/reap/ttlused", "/reap/used"],
            "never-used containers with a limit"
        );
    }

    #[test]
    fn deletion_rechecks_at_apply_time() {
        let mut tree = DataTree::new();
        let t0 = at(1, 1_000);
        mk(&mut tree, "/c", CreateMode::Container, None, &t0);
        mk(&mut tree, "/c/x", CreateMode::Persistent, None, &t0);
        tree.delete("/c/x", -1, &at(2, 1_000)).unwrap();
        mk(
            &mut tree,
            "/t",
            CreateMode::PersistentWithTtl,
            Some(100),
            &t0,
        );
        mk(&mut tree, "/p", CreateMode::Persistent, None, &t0);
        assert_eq!(tree.expired_containers_and_ttls(2_000, 0), ["/c", "/t"]);

        // Between picking and applying, /c got a child and /t new data.
        mk(
            &mut tree,
            "/c/y",
            CreateMode::Persistent,
            None,
            &at(3, 1_900),
        );
        tree.set_data("/t", Bytes::new().into(), -1, &at(4, 1_950))
            .unwrap();
        assert_eq!(
            tree.delete_container("/c", 0, &at(5, 2_000)).unwrap_err(),
            ErrorCode::NotEmpty
        );
        assert_eq!(
            tree.delete_container("/t", 0, &at(5, 2_000)).unwrap_err(),
            ErrorCode::BadVersion
        );
        assert_eq!(
            tree.delete_container("/p", 0, &at(5, 2_000)).unwrap_err(),
            ErrorCode::BadVersion
        );
        assert_eq!(
            tree.delete_container("/nope", 0, &at(5, 2_000))
                .unwrap_err(),
            ErrorCode::NoNode
        );
        assert_eq!(
            tree.delete_container("/zookeeper", 0, &at(5, 2_000))
                .unwrap_err(),
            ErrorCode::BadArguments
        );

        tree.delete("/c/y", -1, &at(6, 2_000)).unwrap();
        let reaped = tree.delete_container("/c", 0, &at(7, 2_100)).unwrap();
        assert_eq!(reaped.triggers.len(), 2);
        assert!(tree.delete_container("/t", 0, &at(8, 2_051)).is_ok());
        assert!(tree.node("/c").is_none() && tree.node("/t").is_none());
        assert_eq!(tree.stat("/", &[]).unwrap().pzxid, 8);
        assert!(tree.expired_containers_and_ttls(i64::MAX, 1).is_empty());
    }
}
