//! Property tests: every record decodes to what was encoded, and re-encodes to the
//! same bytes.

use bytes::{Bytes, BytesMut};
use paddock_wire::jute::Reader;
use paddock_wire::*;
use proptest::collection::vec;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    "[a-z0-9/._-]{0,12}"
}

fn bytes() -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..64).prop_map(Bytes::from)
}

fn stat() -> impl Strategy<Value = Stat> {
    (
        (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
        (any::<i32>(), any::<i32>(), any::<i32>()),
        (any::<i64>(), any::<i32>(), any::<i32>(), any::<i64>()),
    )
        .prop_map(
            |(
                (czxid, mzxid, ctime, mtime),
                (version, cversion, aversion),
                (owner, len, n, pzxid),
            )| Stat {
                czxid,
                mzxid,
                ctime,
                mtime,
                version,
                cversion,
                aversion,
                ephemeral_owner: owner,
                data_length: len,
                num_children: n,
                pzxid,
            },
        )
}

fn acls() -> impl Strategy<Value = Vec<Acl>> {
    vec(
        (any::<i32>(), text(), text()).prop_map(|(perms, scheme, id)| Acl {
            perms,
            id: Id::new(scheme, id),
        }),
        0..4,
    )
}

fn create() -> impl Strategy<Value = CreateRequest> {
    (text(), bytes(), acls(), any::<i32>()).prop_map(|(path, data, acl, flags)| CreateRequest {
        path,
        data: data.into(),
        acl,
        flags,
    })
}

fn watched() -> impl Strategy<Value = WatchedPathRequest> {
    (text(), any::<bool>()).prop_map(|(path, watch)| WatchedPathRequest { path, watch })
}

fn path_version() -> impl Strategy<Value = PathVersionRequest> {
    (text(), any::<i32>()).prop_map(|(path, version)| PathVersionRequest { path, version })
}

fn path_only() -> impl Strategy<Value = PathRequest> {
    text().prop_map(|path| PathRequest { path })
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    vec(text(), 0..4)
}

fn multi_write_op() -> impl Strategy<Value = Request> {
    prop_oneof![
        create().prop_map(Request::Create),
        create().prop_map(Request::Create2),
        create().prop_map(Request::CreateContainer),
        (create(), any::<i64>()).prop_map(|(c, ttl)| Request::CreateTtl(CreateTtlRequest {
            path: c.path,
            data: c.data,
            acl: c.acl,
            flags: c.flags,
            ttl,
        })),
        path_version().prop_map(Request::Delete),
        (text(), bytes(), any::<i32>()).prop_map(|(path, data, version)| Request::SetData(
            SetDataRequest {
                path,
                data: data.into(),
                version
            }
        )),
        path_version().prop_map(Request::Check),
    ]
}

fn multi_read_op() -> impl Strategy<Value = Request> {
    prop_oneof![
        watched().prop_map(Request::GetData),
        watched().prop_map(Request::GetChildren),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        multi_write_op(),
        watched().prop_map(Request::Exists),
        watched().prop_map(Request::GetData),
        watched().prop_map(Request::GetChildren),
        watched().prop_map(Request::GetChildren2),
        path_only().prop_map(Request::GetAcl),
        (text(), acls(), any::<i32>())
            .prop_map(|(path, acl, version)| Request::SetAcl(SetAclRequest { path, acl, version })),
        path_only().prop_map(Request::Sync),
        Just(Request::Ping),
        vec(multi_write_op(), 0..4).prop_map(Request::Multi),
        vec(multi_read_op(), 0..4).prop_map(Request::MultiRead),
        (text(), text(), text(), any::<i64>()).prop_map(|(j, l, n, c)| Request::Reconfig(
            ReconfigRequest {
                joining_servers: j,
                leaving_servers: l,
                new_members: n,
                cur_config_id: c,
            }
        )),
        (text(), any::<i32>()).prop_map(|(path, t)| Request::CheckWatches(WatchesRequest {
            path,
            watcher_type: t
        })),
        (text(), any::<i32>()).prop_map(|(path, t)| Request::RemoveWatches(WatchesRequest {
            path,
            watcher_type: t
        })),
        (any::<i32>(), text(), bytes()).prop_map(|(auth_type, scheme, auth)| Request::Auth(
            AuthPacket {
                auth_type,
                scheme,
                auth
            }
        )),
        (any::<i64>(), strings(), strings(), strings()).prop_map(|(z, d, e, c)| {
            Request::SetWatches(SetWatches {
                relative_zxid: z,
                data_watches: d,
                exist_watches: e,
                child_watches: c,
            })
        }),
        (
            any::<i64>(),
            strings(),
            strings(),
            strings(),
            strings(),
            strings()
        )
            .prop_map(|(z, d, e, c, p, r)| Request::SetWatches2(SetWatches2 {
                relative_zxid: z,
                data_watches: d,
                exist_watches: e,
                child_watches: c,
                persistent_watches: p,
                persistent_recursive_watches: r,
            })),
        bytes().prop_map(Request::Sasl),
        path_only().prop_map(Request::GetEphemerals),
        path_only().prop_map(Request::GetAllChildrenNumber),
        (text(), any::<i32>())
            .prop_map(|(path, mode)| Request::AddWatch(AddWatchRequest { path, mode })),
        Just(Request::WhoAmI),
        Just(Request::CloseSession),
    ]
}

fn op_result() -> impl Strategy<Value = OpResult> {
    prop_oneof![
        text().prop_map(|path| OpResult::Create { path }),
        (text(), stat()).prop_map(|(path, stat)| OpResult::Create2 { path, stat }),
        Just(OpResult::Delete),
        stat().prop_map(|stat| OpResult::SetData { stat }),
        Just(OpResult::Check),
        (bytes(), stat()).prop_map(|(data, stat)| OpResult::GetData {
            data: data.into(),
            stat
        }),
        strings().prop_map(|children| OpResult::GetChildren { children }),
        any::<i32>().prop_map(|c| OpResult::Error(ErrorCode::from_i32(c))),
    ]
}

/// A response together with the op it answers (replies carry no op code).
fn response() -> impl Strategy<Value = (OpCode, Response)> {
    prop_oneof![
        Just((OpCode::Delete, Response::Empty)),
        text().prop_map(|path| (OpCode::Create, Response::Create { path })),
        (text(), stat())
            .prop_map(|(path, stat)| (OpCode::Create2, Response::Create2 { path, stat })),
        stat().prop_map(|s| (OpCode::Exists, Response::Stat(s))),
        (bytes(), stat()).prop_map(|(data, stat)| (
            OpCode::GetData,
            Response::GetData {
                data: data.into(),
                stat
            }
        )),
        (acls(), stat()).prop_map(|(acl, stat)| (OpCode::GetAcl, Response::GetAcl { acl, stat })),
        strings().prop_map(|children| (OpCode::GetChildren, Response::GetChildren { children })),
        (strings(), stat()).prop_map(|(children, stat)| (
            OpCode::GetChildren2,
            Response::GetChildren2 { children, stat }
        )),
        text().prop_map(|path| (OpCode::Sync, Response::Sync { path })),
        vec(op_result(), 0..5).prop_map(|r| (OpCode::Multi, Response::Multi(r))),
        strings().prop_map(|e| (OpCode::GetEphemerals, Response::Ephemerals(e))),
        any::<i32>().prop_map(|n| (OpCode::GetAllChildrenNumber, Response::AllChildrenNumber(n))),
        vec((text(), text()), 0..3).prop_map(|v| (
            OpCode::WhoAmI,
            Response::WhoAmI(
                v.into_iter()
                    .map(|(auth_scheme, user)| ClientInfo { auth_scheme, user })
                    .collect()
            )
        )),
        bytes().prop_map(|t| (OpCode::Sasl, Response::Sasl(t))),
    ]
}

fn connect_request() -> impl Strategy<Value = ConnectRequest> {
    (
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        bytes(),
        any::<Option<bool>>(),
    )
        .prop_map(
            |(protocol_version, last_zxid_seen, timeout, session_id, passwd, read_only)| {
                ConnectRequest {
                    protocol_version,
                    last_zxid_seen,
                    timeout,
                    session_id,
                    passwd,
                    read_only,
                }
            },
        )
}

fn connect_response() -> impl Strategy<Value = ConnectResponse> {
    (
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        bytes(),
        any::<Option<bool>>(),
    )
        .prop_map(
            |(protocol_version, timeout, session_id, passwd, read_only)| ConnectResponse {
                protocol_version,
                timeout,
                session_id,
                passwd,
                read_only,
            },
        )
}

fn round_trip<T: Record + PartialEq + std::fmt::Debug>(value: &T) {
    let bytes = value.to_bytes();
    let decoded = T::from_bytes(bytes.clone()).expect("decodes");
    assert_eq!(&decoded, value);
    assert_eq!(decoded.to_bytes(), bytes);
}

proptest! {
    #[test]
    fn requests_round_trip(xid in any::<i32>(), request in request()) {
        let mut buf = BytesMut::new();
        request.encode_with_header(xid, &mut buf);
        let frame = buf.freeze();
        let (header, decoded) = Request::decode_frame(frame.clone()).expect("decodes");
        prop_assert_eq!(header.xid, xid);
        prop_assert_eq!(header.op, request.op_code().as_i32());
        prop_assert_eq!(&decoded, &request);
        let mut again = BytesMut::new();
        decoded.encode_with_header(xid, &mut again);
        prop_assert_eq!(again.freeze(), frame);
    }

    #[test]
    fn responses_round_trip((op, response) in response()) {
        let mut buf = BytesMut::new();
        response.encode(&mut buf);
        let bytes = buf.freeze();
        let mut r = Reader::new(bytes.clone());
        let decoded = Response::decode(op, &mut r).expect("decodes");
        prop_assert!(r.finish().is_ok());
        prop_assert_eq!(&decoded, &response);
        let mut again = BytesMut::new();
        decoded.encode(&mut again);
        prop_assert_eq!(again.freeze(), bytes);
    }

    #[test]
    fn connect_records_round_trip(req in connect_request(), rsp in connect_response()) {
        round_trip(&req);
        round_trip(&rsp);
    }

    #[test]
    fn headers_and_events_round_trip(
        xid in any::<i32>(), zxid in any::<i64>(), err in any::<i32>(), path in text(),
        stat in stat(),
    ) {
        round_trip(&ReplyHeader { xid, zxid, err: ErrorCode::from_i32(err) });
        round_trip(&RequestHeader { xid, op: err });
        round_trip(&MultiHeader { op: xid, done: err % 2 == 0, err });
        round_trip(&stat);
        round_trip(&WatcherEvent {
            event_type: EventType::NodeChildrenChanged,
            state: KeeperState::SyncConnected,
            path,
        });
    }
}
