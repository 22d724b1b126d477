use super::*;
use crate::acl::{generate_digest, SUPER_SCHEME};
use bytes::Bytes;
use paddock_wire::perms::{ALL, READ};

const SESSION: i64 = 0x0100_000b_2f0c_0001;

fn ctx(zxid: i64) -> TxnContext<'static> {
    TxnContext {
        zxid,
        time: 1000 + zxid,
        session_id: SESSION,
        caller: &[],
        enforce_quota: false,
    }
}

fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}

fn mk(tree: &mut DataTree, path: &str, zxid: i64) -> String {
    tree.create(
        path,
        Bytes::new().into(),
        &open(),
        CreateMode::Persistent,
        None,
        &ctx(zxid),
    )
    .unwrap()
    .result
    .0
}

fn stat(tree: &DataTree, path: &str) -> Stat {
    tree.stat(path, &[]).unwrap()
}

#[test]
fn cversion_pzxid_and_sequence_numbers() {
    // Replays verify/t2.py against ZooKeeper 3.8, which printed for /p:
    // after create           cversion 0, pzxid = czxid
    // after creating a, b    cversion 2, numChildren 2, pzxid = b's zxid
    // after deleting a       cversion 3, numChildren 1, pzxid = the delete's zxid
    // then a sequential create is named s-0000000002 (creates only), cversion 4,
    // and after deleting everything cversion 6 while the next name is ...03.
    let mut tree = DataTree::new();
    mk(&mut tree, "/p", 4);
    let p = stat(&tree, "/p");
    assert_eq!(
        (p.czxid, p.mzxid, p.pzxid, p.cversion, p.ctime, p.mtime),
        (4, 4, 4, 0, 1004, 1004)
    );
    mk(&mut tree, "/p/a", 5);
    mk(&mut tree, "/p/b", 6);
    let p = stat(&tree, "/p");
    assert_eq!((p.cversion, p.num_children, p.pzxid, p.mzxid), (2, 2, 6, 4));
    tree.delete("/p/a", -1, &ctx(7)).unwrap();
    let p = stat(&tree, "/p");
    assert_eq!((p.cversion, p.num_children, p.pzxid), (3, 1, 7));
    let seq = tree
        .create(
            "/p/s-",
            Bytes::new().into(),
            &open(),
            CreateMode::PersistentSequential,
            None,
            &ctx(8),
        )
        .unwrap();
    assert_eq!(seq.result.0, "/p/s-0000000002");
    assert_eq!(stat(&tree, "/p").cversion, 4);
    tree.delete("/p/b", -1, &ctx(9)).unwrap();
    tree.delete(&seq.result.0, -1, &ctx(10)).unwrap();
    let p = stat(&tree, "/p");
    assert_eq!((p.cversion, p.num_children, p.pzxid), (6, 0, 10));
    assert_eq!(mk_seq(&mut tree, "/p/s-", 11), "/p/s-0000000003");
    // A sequential path may end in a slash; under the root the name is the number.
    assert_eq!(mk_seq(&mut tree, "/p/", 12), "/p/0000000004");
    assert_eq!(mk_seq(&mut tree, "/", 13), "/0000000001");
}

fn mk_seq(tree: &mut DataTree, path: &str, zxid: i64) -> String {
    tree.create(
        path,
        Bytes::new().into(),
        &open(),
        CreateMode::PersistentSequential,
        None,
        &ctx(zxid),
    )
    .unwrap()
    .result
    .0
}

#[test]
fn create_errors_in_zookeepers_order() {
    // Each outcome was observed on ZooKeeper 3.8 with raw create2 requests
    // (verify/t4.py, t5.py).
    let mut tree = DataTree::new();
    mk(&mut tree, "/y1", 1);
    let c = |tree: &mut DataTree, path: &str, acl: &[Acl]| {
        tree.create(
            path,
            Bytes::new().into(),
            acl,
            CreateMode::Persistent,
            None,
            &ctx(9),
        )
        .map(|_| ())
    };
    assert_eq!(c(&mut tree, "/", &open()), Err(ErrorCode::NodeExists));
    assert_eq!(c(&mut tree, "x1", &open()), Err(ErrorCode::BadArguments));
    assert_eq!(c(&mut tree, "a/b", &open()), Err(ErrorCode::NoNode));
    assert_eq!(c(&mut tree, "/y1/", &open()), Err(ErrorCode::BadArguments));
    assert_eq!(c(&mut tree, "/y1//y", &open()), Err(ErrorCode::NoNode));
    assert_eq!(c(&mut tree, "/y1/.", &open()), Err(ErrorCode::BadArguments));
    assert_eq!(c(&mut tree, "/nope/.", &open()), Err(ErrorCode::NoNode));
    assert_eq!(
        c(&mut tree, "/y1/a\0b", &open()),
        Err(ErrorCode::BadArguments)
    );
    // The ACL is checked before the parent.
    assert_eq!(c(&mut tree, "/nope/x", &[]), Err(ErrorCode::InvalidAcl));
    assert_eq!(c(&mut tree, "/nope/x", &open()), Err(ErrorCode::NoNode));
    // CREATE on the parent is checked before the path rules and existence.
    tree.create(
        "/y2",
        Bytes::new().into(),
        &Acl::read_unsafe(),
        CreateMode::Persistent,
        None,
        &ctx(2),
    )
    .unwrap();
    assert_eq!(c(&mut tree, "/y2/.", &open()), Err(ErrorCode::NoAuth));
    assert_eq!(c(&mut tree, "/y2/k", &open()), Err(ErrorCode::NoAuth));
    assert_eq!(
        c(&mut tree, "/zookeeper/config/x", &open()),
        Err(ErrorCode::NoAuth)
    );
    assert_eq!(c(&mut tree, "/y1", &open()), Err(ErrorCode::NodeExists));
    // Nothing changed along the way.
    assert_eq!(tree.node_count(), 6);
    assert_eq!(stat(&tree, "/y1").cversion, 0);
}

#[test]
fn ephemerals_containers_and_ttls() {
    let mut tree = DataTree::new();
    let e = tree
        .create(
            "/e",
            Bytes::new().into(),
            &open(),
            CreateMode::Ephemeral,
            None,
            &ctx(1),
        )
        .unwrap();
    assert_eq!(e.result.1.ephemeral_owner, SESSION);
    assert_eq!(
        mk_err(&mut tree, "/e/x", CreateMode::Persistent, None),
        ErrorCode::NoChildrenForEphemerals
    );
    assert_eq!(
        mk_err(&mut tree, "/nope/x", CreateMode::Ephemeral, None),
        ErrorCode::NoNode
    );

    let cont = tree
        .create(
            "/c",
            Bytes::new().into(),
            &open(),
            CreateMode::Container,
            None,
            &ctx(2),
        )
        .unwrap();
    assert_eq!(
        cont.result.1.ephemeral_owner, 0,
        "hidden from clients, as 3.8 shows it"
    );
    assert_eq!(tree.node("/c").unwrap().kind(), NodeKind::Container);
    // Children of containers and TTL nodes are allowed, ephemeral ones too.
    tree.create(
        "/c/e",
        Bytes::new().into(),
        &open(),
        CreateMode::Ephemeral,
        None,
        &ctx(3),
    )
    .unwrap();
    tree.create(
        "/t",
        Bytes::new().into(),
        &open(),
        CreateMode::PersistentWithTtl,
        Some(MAX_TTL_MS),
        &ctx(4),
    )
    .unwrap();
    assert_eq!(
        tree.node("/t").unwrap().kind(),
        NodeKind::Ttl { ttl_ms: MAX_TTL_MS }
    );
    assert_eq!(
        tree.node("/t").unwrap().stat().ephemeral_owner as u64,
        0xff00_00ff_ffff_ffff
    );
    mk(&mut tree, "/t/c", 5);

    // TTL bounds (3.8: 0, -5 and max+1 were BadArguments, max was accepted) and a
    // TTL given to another mode.
    for (mode, ttl) in [
        (CreateMode::PersistentWithTtl, Some(0)),
        (CreateMode::PersistentWithTtl, Some(-5)),
        (CreateMode::PersistentWithTtl, Some(MAX_TTL_MS + 1)),
        (CreateMode::PersistentWithTtl, None),
        (CreateMode::Persistent, Some(100)),
        (CreateMode::Ephemeral, Some(0)),
    ] {
        assert_eq!(
            mk_err(&mut tree, "/bad", mode, ttl),
            ErrorCode::BadArguments,
            "{mode:?} {ttl:?}"
        );
    }
    // A negative TTL is how ZooKeeper spells "none".
    tree.create(
        "/neg",
        Bytes::new().into(),
        &open(),
        CreateMode::Persistent,
        Some(-1),
        &ctx(6),
    )
    .unwrap();
    assert_eq!(tree.ephemeral_count(), 2);

    // Session 0 cannot own an ephemeral: it would read back as persistent.
    let anonymous = TxnContext {
        session_id: 0,
        ..ctx(7)
    };
    let err = tree.create(
        "/z",
        Bytes::new().into(),
        &open(),
        CreateMode::Ephemeral,
        None,
        &anonymous,
    );
    assert_eq!(err.unwrap_err(), ErrorCode::BadArguments);
}

fn mk_err(tree: &mut DataTree, path: &str, mode: CreateMode, ttl: Option<i64>) -> ErrorCode {
    let before = tree.clone();
    let err = tree
        .create(path, Bytes::new().into(), &open(), mode, ttl, &ctx(99))
        .unwrap_err();
    assert_eq!(*tree, before, "a failed create changes nothing");
    err
}

#[test]
fn create_spec_follows_the_op_code() {
    use OpCode::*;
    let spec = |op, flags, ttl| CreateSpec::for_op(op, flags, ttl);
    let make = |kind, sequential| Ok(CreateSpec { kind, sequential });
    // Observed on 3.8 (verify/t4.py): createContainer makes containers whatever
    // the flags (and honours sequential), create2 with the container flag makes a
    // plain node that is never reaped.
    assert_eq!(
        spec(CreateContainer, 0, None),
        make(CreateKind::Container, false)
    );
    assert_eq!(
        spec(CreateContainer, 2, None),
        make(CreateKind::Container, true)
    );
    assert_eq!(spec(Create2, 4, None), make(CreateKind::Persistent, false));
    assert_eq!(spec(Create, 3, None), make(CreateKind::Ephemeral, true));
    assert_eq!(
        spec(CreateTtl, 6, Some(1000)),
        make(CreateKind::Ttl { ttl_ms: 1000 }, true)
    );
    // ...and these were BadArguments: unknown flags, TTL flags on create2, a TTL
    // with persistent or ephemeral flags, TTL flags with a bad TTL.
    for (op, flags, ttl) in [
        (Create2, 9, None),
        (Create2, 5, None),
        (CreateTtl, 0, Some(100)),
        (CreateTtl, 1, Some(100)),
        (CreateTtl, 5, Some(0)),
        (CreateTtl, 0, Some(-1)),
        (CreateContainer, 5, None),
        (Delete, 0, None),
    ] {
        assert_eq!(
            spec(op, flags, ttl),
            Err(ErrorCode::BadArguments),
            "{op:?} {flags} {ttl:?}"
        );
    }
}

#[test]
fn delete_errors_in_zookeepers_order() {
    // Observed on 3.8 (verify/t2.py, t4.py).
    let mut tree = DataTree::new();
    for path in [
        "/",
        "/zookeeper",
        "/zookeeper/quota",
        "/zookeeper/config",
        "x1",
        "",
    ] {
        assert_eq!(
            tree.delete(path, -1, &ctx(1)).unwrap_err(),
            ErrorCode::BadArguments,
            "{path}"
        );
    }
    mk(&mut tree, "/d", 1);
    mk(&mut tree, "/d/x", 2);
    mk(&mut tree, "/d/x/y", 3);
    assert_eq!(
        tree.delete("/d/x", 5, &ctx(4)).unwrap_err(),
        ErrorCode::BadVersion,
        "version before children"
    );
    assert_eq!(
        tree.delete("/d/x", 0, &ctx(4)).unwrap_err(),
        ErrorCode::NotEmpty
    );
    assert_eq!(
        tree.delete("/d/zz", -1, &ctx(4)).unwrap_err(),
        ErrorCode::NoNode
    );
    assert_eq!(
        tree.delete("/d/x/", -1, &ctx(4)).unwrap_err(),
        ErrorCode::NoNode
    );
    assert_eq!(
        tree.delete("/nope/a", -1, &ctx(4)).unwrap_err(),
        ErrorCode::NoNode
    );
    let no_delete = [Acl {
        perms: ALL & !perms::DELETE,
        id: Id::new("world", "anyone"),
    }];
    tree.create(
        "/nodel",
        Bytes::new().into(),
        &no_delete,
        CreateMode::Persistent,
        None,
        &ctx(5),
    )
    .unwrap();
    mk(&mut tree, "/nodel/c", 6);
    assert_eq!(
        tree.delete("/nodel/zz", -1, &ctx(7)).unwrap_err(),
        ErrorCode::NoAuth,
        "NoAuth before NoNode"
    );
    assert_eq!(
        tree.delete("/nodel/c", -1, &ctx(7)).unwrap_err(),
        ErrorCode::NoAuth
    );
    // A node under /zookeeper that is not ZooKeeper's own can be deleted.
    mk(&mut tree, "/zookeeper/x", 8);
    assert!(tree.delete("/zookeeper/x", -1, &ctx(9)).is_ok());
}

#[test]
fn set_data_set_acl_and_check() {
    let mut tree = DataTree::new();
    mk(&mut tree, "/p", 1);
    mk(&mut tree, "/p/c", 2);
    assert_eq!(
        tree.set_data("/p", Bytes::from_static(b"x").into(), 7, &ctx(3))
            .unwrap_err(),
        ErrorCode::BadVersion
    );
    let set = tree
        .set_data("/p", Bytes::from_static(b"x").into(), 0, &ctx(3))
        .unwrap();
    let s = set.result;
    assert_eq!(
        (
            s.version,
            s.mzxid,
            s.mtime,
            s.data_length,
            s.czxid,
            s.cversion
        ),
        (1, 3, 1003, 1, 1, 1)
    );
    assert_eq!(
        set.triggers,
        [WatchTrigger {
            path: "/p".into(),
            event: EventType::NodeDataChanged,
            acl: open().into()
        }]
    );
    assert_eq!(
        tree.set_data("/p/", Bytes::new().into(), -1, &ctx(4))
            .unwrap_err(),
        ErrorCode::BadArguments
    );
    assert_eq!(
        tree.set_data("/nope/.", Bytes::new().into(), -1, &ctx(4))
            .unwrap_err(),
        ErrorCode::BadArguments
    );
    assert_eq!(
        tree.set_data("/nope", Bytes::new().into(), -1, &ctx(4))
            .unwrap_err(),
        ErrorCode::NoNode
    );
    assert_eq!(
        tree.set_data("/zookeeper/config", Bytes::new().into(), -1, &ctx(4))
            .unwrap_err(),
        ErrorCode::NoAuth
    );

    // aversion: 3.8 went 0 -> 1 with version 0, then 2 with -1; mzxid unchanged.
    assert_eq!(
        tree.set_acl("/p", &open(), 7, &ctx(5)).unwrap_err(),
        ErrorCode::BadVersion
    );
    let a = tree.set_acl("/p", &open(), 0, &ctx(5)).unwrap();
    assert_eq!((a.result.aversion, a.result.mzxid), (1, 3));
    assert!(a.triggers.is_empty());
    assert_eq!(
        tree.set_acl("/p", &open(), -1, &ctx(6))
            .unwrap()
            .result
            .aversion,
        2
    );
    let auth_only = [Acl {
        perms: ALL,
        id: Id::new("auth", ""),
    }];
    assert_eq!(
        tree.set_acl("/nope", &auth_only, -1, &ctx(7)).unwrap_err(),
        ErrorCode::InvalidAcl
    );
    assert_eq!(
        tree.set_acl("/nope", &open(), -1, &ctx(7)).unwrap_err(),
        ErrorCode::NoNode
    );

    let user = generate_digest("user:pass");
    let owner = [Id::new("digest", user.clone())];
    let private = [Acl {
        perms: ALL,
        id: Id::new("digest", user),
    }];
    tree.set_acl("/p/c", &private, -1, &ctx(8)).unwrap();
    let stranger = ctx(9);
    assert_eq!(
        tree.set_acl("/p/c", &open(), -1, &stranger).unwrap_err(),
        ErrorCode::NoAuth
    );
    assert_eq!(
        tree.set_acl("/p/c", &[], -1, &stranger).unwrap_err(),
        ErrorCode::InvalidAcl,
        "InvalidACL before NoAuth"
    );
    assert_eq!(
        tree.set_data("/p/c", Bytes::new().into(), -1, &stranger)
            .unwrap_err(),
        ErrorCode::NoAuth
    );
    assert_eq!(tree.check("/p/c", 0, &[]), Err(ErrorCode::NoAuth));
    assert_eq!(tree.check("/p/c", 0, &owner), Ok(()));
    assert_eq!(tree.check("/p/c", 3, &owner), Err(ErrorCode::BadVersion));
    assert_eq!(tree.check("/p/c", -1, &[Id::new(SUPER_SCHEME, "")]), Ok(()));
    assert_eq!(tree.check("/p/", -1, &owner), Err(ErrorCode::BadArguments));
    let as_owner = TxnContext {
        caller: &owner,
        ..ctx(10)
    };
    assert!(tree
        .set_data("/p/c", Bytes::new().into(), -1, &as_owner)
        .is_ok());
    // The auth scheme stores the caller's digest ids.
    let creator_all = tree.set_acl("/p", &Acl::creator_all(), -1, &as_owner);
    assert!(creator_all.is_ok());
    assert_eq!(tree.node("/p").unwrap().acl().as_ref(), private);
    assert_eq!(tree.check("/p", -1, &[]), Err(ErrorCode::NoAuth));
    assert_eq!(READ & tree.node("/p").unwrap().acl()[0].perms, READ);
}

#[test]
fn triggers_and_session_close() {
    let mut tree = DataTree::new();
    let parent_acl: Arc<[Acl]> = Acl::read_unsafe().into();
    let open_acl: Arc<[Acl]> = open().into();
    let with_create = [Acl {
        perms: READ | perms::CREATE | perms::DELETE,
        id: Id::new("world", "anyone"),
    }];
    tree.create(
        "/s",
        Bytes::new().into(),
        &with_create,
        CreateMode::Persistent,
        None,
        &ctx(1),
    )
    .unwrap();
    let created = tree
        .create(
            "/s/e",
            Bytes::new().into(),
            &open(),
            CreateMode::EphemeralSequential,
            None,
            &ctx(2),
        )
        .unwrap();
    let e = created.result.0;
    assert_eq!(e, "/s/e0000000000");
    let s_acl: Arc<[Acl]> = with_create.to_vec().into();
    assert_eq!(
        created.triggers,
        [
            WatchTrigger {
                path: e.clone(),
                event: EventType::NodeCreated,
                acl: open_acl.clone()
            },
            WatchTrigger {
                path: "/s".into(),
                event: EventType::NodeChildrenChanged,
                acl: s_acl.clone()
            },
        ]
    );
    tree.create(
        "/e2",
        Bytes::new().into(),
        &Acl::read_unsafe(),
        CreateMode::Ephemeral,
        None,
        &ctx(3),
    )
    .unwrap();
    let other = TxnContext {
        session_id: 77,
        ..ctx(4)
    };
    tree.create(
        "/other",
        Bytes::new().into(),
        &open(),
        CreateMode::Ephemeral,
        None,
        &other,
    )
    .unwrap();
    assert_eq!(tree.ephemeral_count(), 3);

    let closed = tree.kill_session(SESSION, 5);
    assert_eq!(closed.result, ["/e2", e.as_str()]);
    let root_acl: Arc<[Acl]> = open().into();
    assert_eq!(
        closed.triggers,
        [
            WatchTrigger {
                path: "/e2".into(),
                event: EventType::NodeDeleted,
                acl: parent_acl
            },
            WatchTrigger {
                path: "/".into(),
                event: EventType::NodeChildrenChanged,
                acl: root_acl
            },
            WatchTrigger {
                path: e,
                event: EventType::NodeDeleted,
                acl: open_acl
            },
            WatchTrigger {
                path: "/s".into(),
                event: EventType::NodeChildrenChanged,
                acl: s_acl
            },
        ]
    );
    // 3.8 (verify/t6.py): closing a session moves the parent's pzxid to the close
    // txn's zxid and its reported cversion up by one per deleted ephemeral.
    let s = stat(&tree, "/s");
    assert_eq!((s.pzxid, s.cversion, s.num_children), (5, 2, 0));
    assert_eq!(tree.ephemeral_count(), 1);
    assert_eq!(tree.get_ephemerals(SESSION, "/"), Vec::<String>::new());
    assert!(tree.kill_session(SESSION, 6).result.is_empty());
    assert_eq!(tree.sessions_with_ephemerals(), [77]);
}

#[test]
fn digest_and_size_track_every_change() {
    let mut tree = DataTree::new();
    let empty = tree.digest();
    let size = tree.approximate_data_size();
    mk(&mut tree, "/a", 1);
    tree.set_data("/a", Bytes::from_static(b"hello").into(), -1, &ctx(2))
        .unwrap();
    assert_eq!(tree.approximate_data_size(), size + 2 + 5);
    let changed = tree.digest();
    assert_ne!(changed, empty);
    // The same end state reached another way has the same digest...
    let mut other = DataTree::new();
    mk(&mut other, "/a", 1);
    other
        .set_data("/a", Bytes::from_static(b"hello").into(), -1, &ctx(2))
        .unwrap();
    assert_eq!(other.digest(), changed);
    // ...and undoing everything at a later zxid does not restore the root's pzxid.
    tree.delete("/a", -1, &ctx(3)).unwrap();
    assert_ne!(tree.digest(), empty);
    assert_eq!(tree.approximate_data_size(), size);
    let recomputed: u64 = tree.iter().fold(0u64, |sum, (path, node)| {
        sum.wrapping_add(node.digest(&path))
    });
    assert_eq!(tree.digest(), recomputed);
}
