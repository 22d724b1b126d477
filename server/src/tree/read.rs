//! The reads, with the permission checks of ZooKeeper 3.9's `FinalRequestProcessor`:
//! the node must exist (`NoNode`), then the caller needs READ (getACL: READ or ADMIN).
//! Read paths are looked up as given, not validated: a malformed path names no node.

use paddock_wire::{perms, Acl, Data, ErrorCode, Id, Stat};

use super::node::Node;
use super::DataTree;
use crate::acl;

impl DataTree {
    /// The node at `path`, without permission checks (for the server's own use:
    /// watches, snapshots, four-letter words).
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Whether a node is at `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.nodes.contains(path)
    }

    /// A node the caller may read with `perm`.
    fn readable(&self, path: &str, perm: i32, caller: &[Id]) -> Result<&Node, ErrorCode> {
        let node = self.node(path).ok_or(ErrorCode::NoNode)?;
        acl::check(node.acl(), perm, caller)?;
        Ok(node)
    }

    pub fn get_data(&self, path: &str, caller: &[Id]) -> Result<(Data, Stat), ErrorCode> {
        let node = self.readable(path, perms::READ, caller)?;
        Ok((node.data().clone(), node.to_stat()))
    }

    /// `exists`. ZooKeeper 3.9 checks READ on a node that exists (3.8 did not: it
    /// returned the stat of a node the caller could not read). A path with NUL is
    /// `BadArguments`.
    pub fn stat(&self, path: &str, caller: &[Id]) -> Result<Stat, ErrorCode> {
        if path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        Ok(self.readable(path, perms::READ, caller)?.to_stat())
    }

    /// The child names, sorted, and the node's stat.
    pub fn get_children(
        &self,
        path: &str,
        caller: &[Id],
    ) -> Result<(Vec<String>, Stat), ErrorCode> {
        let node = self.readable(path, perms::READ, caller)?;
        let children = self.children(path).map(str::to_owned).collect();
        Ok((children, node.to_stat()))
    }

    /// The node's ACL and stat. READ or ADMIN is enough to ask; without ADMIN, digest
    /// ids come back as `user:x` (3.8 and 3.9 both redact).
    pub fn get_acl(&self, path: &str, caller: &[Id]) -> Result<(Vec<Acl>, Stat), ErrorCode> {
        let node = self.readable(path, perms::READ | perms::ADMIN, caller)?;
        let acl = if acl::is_allowed(node.acl(), perms::ADMIN, caller) {
            node.acl().to_vec()
        } else {
            acl::redact(node.acl())
        };
        Ok((acl, node.to_stat()))
    }

    /// The session's ephemeral paths, sorted, that start with `prefix` as a string (so
    /// `/cn` matches `/cnt/x`); a blank prefix or `/` means all. No permission check,
    /// as in ZooKeeper.
    pub fn get_ephemerals(&self, session_id: i64, prefix: &str) -> Vec<String> {
        // Java's String.trim: strips every char up to U+0020.
        let trimmed = prefix.trim_matches(|c: char| c <= ' ');
        let all = trimmed.is_empty() || trimmed == "/";
        self.ephemerals
            .of_session(session_id)
            .into_iter()
            .filter(|path| all || path.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }

    /// The number of nodes below `path` at any depth (for `/`, every node but the
    /// root, ZooKeeper's own included). Needs READ on `path`.
    pub fn all_children_number(&self, path: &str, caller: &[Id]) -> Result<i32, ErrorCode> {
        self.readable(path, perms::READ, caller)?;
        let count = if path == "/" {
            self.nodes.len() - 1
        } else {
            self.descendants(path).count()
        };
        Ok(i32::try_from(count).unwrap_or(i32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{generate_digest, SUPER_SCHEME};
    use crate::tree::TxnContext;
    use bytes::Bytes;
    use paddock_wire::perms::{ADMIN, ALL, READ};
    use paddock_wire::CreateMode;

    fn ctx<'a>(zxid: i64, session_id: i64, caller: &'a [Id]) -> TxnContext<'a> {
        TxnContext {
            zxid,
            time: zxid,
            session_id,
            caller,
            enforce_quota: false,
        }
    }

    fn mk(tree: &mut DataTree, path: &str, mode: CreateMode, ctx: &TxnContext<'_>) {
        tree.create(
            path,
            Bytes::new().into(),
            &Acl::open_unsafe(),
            mode,
            None,
            ctx,
        )
        .unwrap();
    }

    #[test]
    fn permissions_and_redaction() {
        // The outcomes ZooKeeper 3.8 gave an anonymous caller (verify/t3.py), except
        // exists, which follows 3.9.
        let user = generate_digest("user:pass");
        let owner = [Id::new("ip", "127.0.0.1"), Id::new("digest", user.clone())];
        let anon = [Id::new("ip", "127.0.0.1")];
        let digest_all = Acl {
            perms: ALL,
            id: Id::new("digest", user.clone()),
        };
        let world = |perms| Acl {
            perms,
            id: Id::new("world", "anyone"),
        };
        let mut tree = DataTree::new();
        let c = ctx(1, 1, &owner);
        tree.create(
            "/r1",
            Bytes::from_static(b"d").into(),
            &[world(READ), digest_all.clone()],
            CreateMode::Persistent,
            None,
            &c,
        )
        .unwrap();
        tree.create(
            "/r2",
            Bytes::new().into(),
            std::slice::from_ref(&digest_all),
            CreateMode::Persistent,
            None,
            &c,
        )
        .unwrap();
        tree.create(
            "/r3",
            Bytes::new().into(),
            &[world(ADMIN), digest_all.clone()],
            CreateMode::Persistent,
            None,
            &c,
        )
        .unwrap();

        let redacted = Acl {
            perms: ALL,
            id: Id::new("digest", "user:x"),
        };
        assert_eq!(
            tree.get_acl("/r1", &anon).unwrap().0,
            [world(READ), redacted]
        );
        assert_eq!(
            tree.get_acl("/r1", &owner).unwrap().0,
            [world(READ), digest_all.clone()]
        );
        assert_eq!(
            tree.get_acl("/r3", &anon).unwrap().0,
            [world(ADMIN), digest_all.clone()]
        );
        assert_eq!(tree.get_acl("/r2", &anon).unwrap_err(), ErrorCode::NoAuth);
        assert_eq!(tree.get_acl("/nope", &anon).unwrap_err(), ErrorCode::NoNode);

        assert_eq!(tree.get_data("/r2", &anon).unwrap_err(), ErrorCode::NoAuth);
        assert_eq!(
            tree.get_children("/r2", &anon).unwrap_err(),
            ErrorCode::NoAuth
        );
        assert_eq!(tree.stat("/r2", &anon).unwrap_err(), ErrorCode::NoAuth);
        assert_eq!(tree.stat("/r2/x", &anon).unwrap_err(), ErrorCode::NoNode);
        assert_eq!(
            tree.stat("/r2\0", &anon).unwrap_err(),
            ErrorCode::BadArguments
        );
        assert_eq!(
            tree.get_data("/r1/", &anon).unwrap_err(),
            ErrorCode::NoNode,
            "reads do not validate"
        );
        assert_eq!(
            tree.get_data("/r1", &anon).unwrap().0,
            Bytes::from_static(b"d").into()
        );
        let superuser = [Id::new(SUPER_SCHEME, "")];
        assert!(tree.get_data("/r2", &superuser).is_ok());
        assert_eq!(tree.get_acl("/r2", &superuser).unwrap().0, [digest_all]);
        assert_eq!(
            tree.all_children_number("/r2", &anon).unwrap_err(),
            ErrorCode::NoAuth
        );
    }

    #[test]
    fn descendants_and_ephemerals() {
        // ZooKeeper 3.8 (verify/t4.py): /cnt/a/b/c plus /cnt/a2 give 4 under /cnt, 2
        // under /cnt/a, 0 under a leaf, 2 under /zookeeper; prefixes match as strings.
        let mut tree = DataTree::new();
        let c = ctx(1, 9, &[]);
        for path in [
            "/cnt",
            "/cnt/a",
            "/cnt/a/b",
            "/cnt/a/b/c",
            "/cnt/a2",
            "/cnt-x",
            "/cnt0",
        ] {
            mk(&mut tree, path, CreateMode::Persistent, &c);
        }
        for path in ["/eph1", "/cnt/eph2", "/cnt/a/eph3"] {
            mk(&mut tree, path, CreateMode::Ephemeral, &c);
        }
        let n = |path| tree.all_children_number(path, &[]);
        assert_eq!(n("/cnt"), Ok(6));
        assert_eq!(n("/cnt/a"), Ok(3));
        assert_eq!(n("/cnt/a/b/c"), Ok(0));
        assert_eq!(n("/zookeeper"), Ok(2));
        assert_eq!(n("/"), Ok(i32::try_from(tree.node_count()).unwrap() - 1));
        assert_eq!(n("/nope"), Err(ErrorCode::NoNode));

        let all = ["/cnt/a/eph3", "/cnt/eph2", "/eph1"];
        for prefix in ["", "/", " / "] {
            assert_eq!(tree.get_ephemerals(9, prefix), all, "{prefix:?}");
        }
        assert_eq!(tree.get_ephemerals(9, "/cnt"), ["/cnt/a/eph3", "/cnt/eph2"]);
        assert_eq!(tree.get_ephemerals(9, "/cn"), ["/cnt/a/eph3", "/cnt/eph2"]);
        assert_eq!(tree.get_ephemerals(9, "/cnt/a"), ["/cnt/a/eph3"]);
        assert!(tree.get_ephemerals(9, "cnt").is_empty());
        assert!(tree.get_ephemerals(8, "/").is_empty());
    }
}
