//! Node kinds that need the server's clock: containers and TTL nodes, removed by the
//! leader; and the size limit on data.

use std::time::Duration;

use bytes::Bytes;
use paddock_wire::{
    Acl, CreateMode, CreateRequest, CreateTtlRequest, ErrorCode, PathVersionRequest, Request,
    Response, SetDataRequest, WatchedPathRequest,
};

use crate::support::{eventually, paddock, RawClient};

fn create(path: &str, mode: CreateMode) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Bytes::new().into(),
        acl: Acl::open_unsafe(),
        flags: mode.flags(),
    }
}

fn exists(client: &mut RawClient, xid: i32, path: &str) -> bool {
    let (header, _) = client.call(
        xid,
        &Request::Exists(WatchedPathRequest {
            path: path.into(),
            watch: false,
        }),
    );
    header.err == ErrorCode::Ok
}

/// Polls until `path` is gone; false if it is still there after `limit`.
fn disappears(client: &mut RawClient, path: &str, limit: Duration) -> bool {
    let mut xid = 1000;
    eventually(limit, || {
        xid += 1;
        (!exists(client, xid, path)).then_some(())
    })
    .is_some()
}

#[test]
fn containers_go_once_their_last_child_does() {
    let server = paddock("");
    let mut client = RawClient::connect(server.addr);
    let (h, body) = client.call(
        1,
        &Request::CreateContainer(create("/used", CreateMode::Container)),
    );
    assert_eq!(h.err, ErrorCode::Ok);
    assert!(matches!(body, Some(Response::Create2 { .. })));
    client.call(
        2,
        &Request::CreateContainer(create("/never-used", CreateMode::Container)),
    );
    client.call(
        3,
        &Request::Create(create("/used/child", CreateMode::Persistent)),
    );
    client.call(
        4,
        &Request::Delete(PathVersionRequest {
            path: "/used/child".into(),
            version: -1,
        }),
    );
    // tickTime=500: the leader checks every tick.
    assert!(disappears(&mut client, "/used", Duration::from_secs(10)));
    // A container that never had a child stays (ZooKeeper's default).
    assert!(exists(&mut client, 5, "/never-used"));
}

#[test]
fn ttl_nodes_expire_without_children_or_changes() {
    let server = paddock("");
    let mut client = RawClient::connect(server.addr);
    let ttl = |path: &str, ttl| {
        Request::CreateTtl(CreateTtlRequest {
            path: path.into(),
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::PersistentWithTtl.flags(),
            ttl,
        })
    };
    assert_eq!(client.call(1, &ttl("/short", 500)).0.err, ErrorCode::Ok);
    assert_eq!(
        client.call(2, &ttl("/long", 3_600_000)).0.err,
        ErrorCode::Ok
    );
    assert_eq!(
        client.call(3, &ttl("/bad", 0)).0.err,
        ErrorCode::BadArguments
    );
    assert!(disappears(&mut client, "/short", Duration::from_secs(10)));
    assert!(exists(&mut client, 4, "/long"));
}

#[test]
fn ttl_nodes_need_extended_types() {
    let server = paddock("extendedTypesEnabled=false");
    let mut client = RawClient::connect(server.addr);
    let (header, _) = client.call(
        1,
        &Request::CreateTtl(CreateTtlRequest {
            path: "/t".into(),
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::PersistentWithTtl.flags(),
            ttl: 1000,
        }),
    );
    assert_eq!(header.err, ErrorCode::Unimplemented);
}

#[test]
fn data_over_jute_maxbuffer_is_refused() {
    let server = paddock("jute.maxbuffer=1000");
    let mut client = RawClient::connect(server.addr);
    client.call(1, &Request::Create(create("/d", CreateMode::Persistent)));
    let set = |len| {
        Request::SetData(SetDataRequest {
            path: "/d".into(),
            data: vec![7u8; len].into(),
            version: -1,
        })
    };
    assert_eq!(client.call(2, &set(1000)).0.err, ErrorCode::Ok);
    assert_eq!(client.call(3, &set(1001)).0.err, ErrorCode::BadArguments);
    // The connection is still usable.
    assert!(exists(&mut client, 4, "/d"));
}
