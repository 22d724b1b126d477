//! ACLs shared between nodes. Almost every node of a real tree carries one of a few
//! ACLs (most often `world:anyone` with all permissions); one `Arc` per node would cost
//! some 150 bytes each (the entry, the two id strings, the allocations' headers), as
//! much as the node itself. ZooKeeper shares them through its `ReferenceCountedACLCache`.
//! Sharing changes no behaviour: ACLs are compared by value everywhere.

use std::sync::{Arc, LazyLock};

use paddock_wire::Acl;

/// How many distinct ACLs a restore remembers: enough for the handful a tree uses,
/// few enough that a tree with an ACL per node costs a short scan per node.
const RECENT: usize = 8;

static OPEN_UNSAFE: LazyLock<Arc<[Acl]>> = LazyLock::new(|| Acl::open_unsafe().into());

/// `world:anyone` with all permissions, the ACL most nodes have.
pub fn open_unsafe() -> Arc<[Acl]> {
    OPEN_UNSAFE.clone()
}

/// `acl` as an `Arc` shared with `near` (the parent's ACL, for a create) or the open
/// ACL when equal to one of them; a new allocation otherwise.
pub fn share_with(acl: Vec<Acl>, near: &Arc<[Acl]>) -> Arc<[Acl]> {
    if **near == *acl {
        near.clone()
    } else if **OPEN_UNSAFE == *acl {
        open_unsafe()
    } else {
        acl.into()
    }
}

/// The ACLs met last while rebuilding a tree from a snapshot, each handed out again
/// for every equal ACL that follows.
#[derive(Debug, Default)]
pub struct RecentAcls {
    /// Most recently used first.
    recent: Vec<Arc<[Acl]>>,
}

impl RecentAcls {
    pub fn share(&mut self, acl: Vec<Acl>) -> Arc<[Acl]> {
        let shared = match self.recent.iter().position(|known| **known == *acl) {
            Some(at) => self.recent.remove(at),
            None => share_with(acl, &OPEN_UNSAFE),
        };
        self.recent.truncate(RECENT - 1);
        self.recent.insert(0, shared.clone());
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_wire::Id;

    #[test]
    fn equal_acls_share_one_allocation() {
        let mut recent = RecentAcls::default();
        let open = recent.share(Acl::open_unsafe());
        assert!(Arc::ptr_eq(&open, &open_unsafe()));
        let digest = || {
            vec![Acl {
                perms: 31,
                id: Id::new("digest", "u:hash"),
            }]
        };
        let first = recent.share(digest());
        for _ in 0..3 {
            assert!(Arc::ptr_eq(&recent.share(digest()), &first));
        }
        assert!(Arc::ptr_eq(&share_with(digest(), &first), &first));
        let other = share_with(Acl::read_unsafe(), &first);
        assert_eq!(*other, *Acl::read_unsafe());
    }

    #[test]
    fn an_acl_forgotten_is_only_allocated_again() {
        let mut recent = RecentAcls::default();
        let ids: Vec<Vec<Acl>> = (0..RECENT + 2)
            .map(|i| {
                vec![Acl {
                    perms: 1,
                    id: Id::new("ip", format!("10.0.0.{i}")),
                }]
            })
            .collect();
        for acl in &ids {
            assert_eq!(*recent.share(acl.clone()), **acl);
        }
        assert_eq!(recent.recent.len(), RECENT);
        assert_eq!(*recent.share(ids[0].clone()), *ids[0]);
    }
}
