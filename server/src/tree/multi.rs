//! Write requests as values, and `multi`: a batch of them applied all or nothing.

use paddock_wire::{ErrorCode, OpCode, OpResult, Request};

use super::write::{Applied, CreateSpec, TxnContext, WatchTrigger};
use super::DataTree;

impl DataTree {
    /// Applies one write request (a create of any kind, delete, setData or check) as a
    /// multi op: `Create` answers [`OpResult::Create`], the other creates
    /// [`OpResult::Create2`]. Other requests are `BadArguments`.
    pub fn apply_op(
        &mut self,
        op: &Request,
        ctx: &TxnContext<'_>,
    ) -> Result<Applied<OpResult>, ErrorCode> {
        let plain = |result| Applied {
            result,
            triggers: Vec::new(),
        };
        match op {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => {
                let spec = CreateSpec::for_op(op.op_code(), r.flags, None)?;
                let created = self.create_with(&r.path, r.data.clone(), &r.acl, spec, ctx)?;
                let (path, stat) = created.result;
                let result = if op.op_code() == OpCode::Create {
                    OpResult::Create { path }
                } else {
                    OpResult::Create2 { path, stat }
                };
                Ok(Applied {
                    result,
                    triggers: created.triggers,
                })
            }
            Request::CreateTtl(r) => {
                let spec = CreateSpec::for_op(OpCode::CreateTtl, r.flags, Some(r.ttl))?;
                let created = self.create_with(&r.path, r.data.clone(), &r.acl, spec, ctx)?;
                let (path, stat) = created.result;
                Ok(Applied {
                    result: OpResult::Create2 { path, stat },
                    triggers: created.triggers,
                })
            }
            Request::Delete(r) => {
                let deleted = self.delete(&r.path, r.version, ctx)?;
                Ok(Applied {
                    result: OpResult::Delete,
                    triggers: deleted.triggers,
                })
            }
            Request::SetData(r) => {
                let set = self.set_data(&r.path, r.data.clone(), r.version, ctx)?;
                Ok(Applied {
                    result: OpResult::SetData { stat: set.result },
                    triggers: set.triggers,
                })
            }
            Request::Check(r) => {
                self.check(&r.path, r.version, ctx.caller)?;
                Ok(plain(OpResult::Check))
            }
            _ => Err(ErrorCode::BadArguments),
        }
    }

    /// Applies `ops` in order, all at `ctx.zxid`, or none of them. On failure the tree
    /// is as before and the results are ZooKeeper's: `Error(Ok)` for the ops before
    /// the failing one, its own code for it, `Error(RuntimeInconsistency)` after.
    /// The triggers are those of every op, in op order, or none on failure.
    pub fn multi(&mut self, ops: &[Request], ctx: &TxnContext<'_>) -> Applied<Vec<OpResult>> {
        // O(1): the maps are persistent, so the copy shares everything until written.
        let before = self.clone();
        let mut results = Vec::with_capacity(ops.len());
        let mut triggers: Vec<WatchTrigger> = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            match self.apply_op(op, ctx) {
                Ok(applied) => {
                    results.push(applied.result);
                    triggers.extend(applied.triggers);
                }
                Err(code) => {
                    *self = before;
                    let results = (0..ops.len())
                        .map(|i| match i.cmp(&index) {
                            std::cmp::Ordering::Less => OpResult::Error(ErrorCode::Ok),
                            std::cmp::Ordering::Equal => OpResult::Error(code),
                            std::cmp::Ordering::Greater => {
                                OpResult::Error(ErrorCode::RuntimeInconsistency)
                            }
                        })
                        .collect();
                    return Applied {
                        result: results,
                        triggers: Vec::new(),
                    };
                }
            }
        }
        Applied {
            result: results,
            triggers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use paddock_wire::{
        Acl, CreateRequest, CreateTtlRequest, EventType, PathVersionRequest, SetDataRequest,
    };

    fn ctx(zxid: i64) -> TxnContext<'static> {
        TxnContext {
            zxid,
            time: zxid,
            session_id: 5,
            caller: &[],
            enforce_quota: false,
        }
    }

    fn create(path: &str, flags: i32) -> CreateRequest {
        CreateRequest {
            path: path.into(),
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags,
        }
    }

    fn pv(path: &str, version: i32) -> PathVersionRequest {
        PathVersionRequest {
            path: path.into(),
            version,
        }
    }

    #[test]
    fn all_ops_share_the_zxid_and_report_in_order() {
        // 3.8 (verify/t5.py) answered [/mm, /mm/a, stat, check, delete] for this
        // batch; the setData stat showed version 1, cversion 1, numChildren 1, and
        // every zxid of /mm was the multi's.
        let mut tree = DataTree::new();
        let ops = [
            Request::Create(create("/mm", 0)),
            Request::Create2(create("/mm/a", 0)),
            Request::SetData(SetDataRequest {
                path: "/mm".into(),
                data: Bytes::from_static(b"x").into(),
                version: -1,
            }),
            Request::Check(pv("/mm", 1)),
            Request::Delete(pv("/mm/a", -1)),
            Request::CreateTtl(CreateTtlRequest {
                path: "/t-".into(),
                data: Bytes::new().into(),
                acl: Acl::open_unsafe(),
                flags: 6,
                ttl: 100,
            }),
            Request::CreateContainer(create("/c", 4)),
        ];
        let applied = tree.multi(&ops, &ctx(173));
        let r = &applied.result;
        assert_eq!(r[0], OpResult::Create { path: "/mm".into() });
        assert!(
            matches!(&r[1], OpResult::Create2 { path, stat } if path == "/mm/a" && stat.czxid == 173)
        );
        let OpResult::SetData { stat } = &r[2] else {
            panic!("{:?}", r[2])
        };
        assert_eq!(
            (stat.version, stat.cversion, stat.num_children, stat.mzxid),
            (1, 1, 1, 173)
        );
        assert_eq!(r[3], OpResult::Check);
        assert_eq!(r[4], OpResult::Delete);
        assert!(matches!(&r[5], OpResult::Create2 { path, .. } if path == "/t-0000000001"));
        assert!(matches!(&r[6], OpResult::Create2 { .. }));
        let mm = tree.stat("/mm", &[]).unwrap();
        assert_eq!(
            (mm.cversion, mm.num_children, mm.pzxid, mm.mzxid),
            (2, 0, 173, 173)
        );

        let events: Vec<(&str, EventType)> = applied
            .triggers
            .iter()
            .map(|t| (t.path.as_str(), t.event))
            .collect();
        use EventType::*;
        assert_eq!(
            events,
            [
                ("/mm", NodeCreated),
                ("/", NodeChildrenChanged),
                ("/mm/a", NodeCreated),
                ("/mm", NodeChildrenChanged),
                ("/mm", NodeDataChanged),
                ("/mm/a", NodeDeleted),
                ("/mm", NodeChildrenChanged),
                ("/t-0000000001", NodeCreated),
                ("/", NodeChildrenChanged),
                ("/c", NodeCreated),
                ("/", NodeChildrenChanged),
            ]
        );
    }

    #[test]
    fn a_failure_rolls_everything_back() {
        // 3.8 (verify/t3.py): create, failing check, create answered
        // [RolledBack(0), BadVersion, RuntimeInconsistency]; create, delete, create
        // below the deleted node answered [0, 0, NoNode].
        let mut tree = DataTree::new();
        tree.multi(&[Request::Create(create("/p", 0))], &ctx(1));
        let before = tree.clone();
        let ops = [
            Request::Create(create("/m2", 0)),
            Request::Check(pv("/p", 99)),
            Request::Create(create("/m3", 0)),
        ];
        let applied = tree.multi(&ops, &ctx(2));
        use ErrorCode::*;
        assert_eq!(
            applied.result,
            [
                OpResult::Error(Ok),
                OpResult::Error(BadVersion),
                OpResult::Error(RuntimeInconsistency)
            ]
        );
        assert!(applied.triggers.is_empty());
        assert_eq!(tree, before);
        assert_eq!(tree.digest(), before.digest());

        let ops = [
            Request::Create(create("/m4", 0)),
            Request::Delete(pv("/m4", -1)),
            Request::Create(create("/m4/x", 0)),
        ];
        assert_eq!(
            tree.multi(&ops, &ctx(3)).result,
            [
                OpResult::Error(Ok),
                OpResult::Error(Ok),
                OpResult::Error(NoNode)
            ]
        );
        assert_eq!(tree, before);

        // Sequential names count the creates made earlier in the same multi, and a
        // rolled-back multi gives its numbers back (ZOOKEEPER-1624).
        let seq = [
            Request::Create(create("/p/q-", 2)),
            Request::Create(create("/p/q-", 2)),
            Request::Delete(pv("/p/none", -1)),
        ];
        assert_eq!(tree.multi(&seq, &ctx(4)).result[2], OpResult::Error(NoNode));
        let ok = tree.multi(&seq[..2], &ctx(5)).result;
        assert_eq!(
            ok,
            [
                OpResult::Create {
                    path: "/p/q-0000000000".into()
                },
                OpResult::Create {
                    path: "/p/q-0000000001".into()
                }
            ]
        );

        assert_eq!(
            tree.multi(&[Request::Ping], &ctx(6)).result,
            [OpResult::Error(BadArguments)]
        );
        assert!(tree.multi(&[], &ctx(7)).result.is_empty());
    }
}
