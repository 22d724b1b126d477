//! Golden bytes captured from real ZooKeeper software (see `tests/fixtures/README.md`):
//! requests serialized by kazoo, responses and notifications written by an Apache
//! ZooKeeper 3.8.0 server. Each test builds the record in Rust and asserts byte-for-byte
//! equality both ways: our encoding equals the capture, and the capture decodes to the
//! record.

use std::path::Path;

use bytes::{Bytes, BytesMut};
use paddock_wire::jute::Reader;
use paddock_wire::*;

/// A fixture's frame payload: the hex file, with its length prefix checked and removed.
fn fixture(name: &str) -> Bytes {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.hex"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    let digits: String = text.split_whitespace().collect();
    let bytes: Vec<u8> = (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"))
        .collect();
    let (prefix, payload) = bytes.split_at(4);
    let len = i32::from_be_bytes(prefix.try_into().expect("prefix"));
    assert_eq!(len as usize, payload.len(), "{name}: length prefix");
    Bytes::copy_from_slice(payload)
}

fn frame(write: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::new();
    write(&mut buf);
    buf.freeze()
}

fn assert_request(name: &str, xid: i32, request: Request) {
    let golden = fixture(name);
    assert_eq!(
        frame(|b| request.encode_with_header(xid, b)),
        golden,
        "{name}: encode"
    );
    let (header, decoded) = Request::decode_frame(golden).expect("decodes");
    assert_eq!(header.xid, xid, "{name}: xid");
    assert_eq!(decoded, request, "{name}: decode");
}

fn assert_reply(name: &str, op: OpCode, header: ReplyHeader, response: Response) {
    let golden = fixture(name);
    let encoded = frame(|b| {
        header.encode(b);
        response.encode(b);
    });
    assert_eq!(encoded, golden, "{name}: encode");
    let mut r = Reader::new(golden);
    assert_eq!(
        ReplyHeader::decode(&mut r).expect("header"),
        header,
        "{name}"
    );
    // An error reply is the header alone.
    if header.err.is_ok() {
        assert_eq!(
            Response::decode(op, &mut r).expect("body"),
            response,
            "{name}"
        );
    }
    r.finish().expect("no trailing bytes");
}

fn assert_notification(name: &str, event_type: EventType, path: &str) {
    let header = ReplyHeader {
        xid: Xid::Notification.as_i32(),
        zxid: -1,
        err: ErrorCode::Ok,
    };
    let event = WatcherEvent {
        event_type,
        state: KeeperState::SyncConnected,
        path: path.into(),
    };
    let golden = fixture(name);
    assert_eq!(
        frame(|b| {
            header.encode(b);
            event.encode(b);
        }),
        golden
    );
    let mut r = Reader::new(golden);
    assert_eq!(ReplyHeader::decode(&mut r).expect("header"), header);
    assert_eq!(WatcherEvent::decode(&mut r).expect("event"), event);
    r.finish().expect("no trailing bytes");
}

fn ok(xid: i32, zxid: i64) -> ReplyHeader {
    ReplyHeader {
        xid,
        zxid,
        err: ErrorCode::Ok,
    }
}

fn hex(s: &str) -> Bytes {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect::<Vec<u8>>()
        .into()
}

const ROOT: &str = "/paddock-fixture";
const CTIME: i64 = 1796232285219;
const SESSION: i64 = 0x0100_0006_a0f0_0000;

/// The stat of /paddock-fixture before the setData.
fn fixture_stat() -> Stat {
    Stat {
        czxid: 2,
        mzxid: 2,
        ctime: CTIME,
        mtime: CTIME,
        version: 0,
        cversion: 1,
        aversion: 0,
        ephemeral_owner: 0,
        data_length: 5,
        num_children: 1,
        pzxid: 3,
    }
}

#[test]
fn connect_with_and_without_the_read_only_byte() {
    for (name, read_only) in [
        ("connect_request_readonly", Some(false)),
        ("connect_request_no_readonly", None),
        ("connect_request_ro_true", Some(true)),
    ] {
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 30000,
            session_id: 0,
            passwd: Bytes::from_static(&[0; 16]),
            read_only,
        };
        assert_eq!(request.to_bytes(), fixture(name), "{name}");
        assert_eq!(
            ConnectRequest::from_bytes(fixture(name)),
            Ok(request),
            "{name}"
        );
    }
    for (name, session_id, passwd, read_only) in [
        (
            "connect_response_readonly",
            SESSION,
            "e20854aac705b0fe900b9823e89482e0",
            Some(false),
        ),
        (
            "connect_response_no_readonly",
            SESSION + 1,
            "f5294eaa67518f43854eff4ebc1d97ad",
            None,
        ),
        (
            "connect_response_ro_true",
            SESSION + 2,
            "bcc65faa876ef174a685c9cc41835946",
            Some(false),
        ),
    ] {
        let response = ConnectResponse {
            protocol_version: 0,
            timeout: 30000,
            session_id,
            passwd: hex(passwd),
            read_only,
        };
        assert_eq!(response.to_bytes(), fixture(name), "{name}");
        assert_eq!(
            ConnectResponse::from_bytes(fixture(name)),
            Ok(response),
            "{name}"
        );
    }
}

#[test]
fn create_and_create2() {
    assert_request(
        "create_request",
        1,
        Request::Create(CreateRequest {
            path: ROOT.into(),
            data: Bytes::from_static(b"hello").into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::Persistent.flags(),
        }),
    );
    assert_reply(
        "create_response",
        OpCode::Create,
        ok(1, 2),
        Response::Create { path: ROOT.into() },
    );
    assert_request(
        "create2_request",
        2,
        Request::Create2(CreateRequest {
            path: "/paddock-fixture/child".into(),
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags: CreateMode::Ephemeral.flags(),
        }),
    );
    let ctime = 1796232285728;
    assert_reply(
        "create2_response",
        OpCode::Create2,
        ok(2, 3),
        Response::Create2 {
            path: "/paddock-fixture/child".into(),
            stat: Stat {
                czxid: 3,
                mzxid: 3,
                ctime,
                mtime: ctime,
                ephemeral_owner: SESSION,
                pzxid: 3,
                ..Stat::default()
            },
        },
    );
}

#[test]
fn reads_with_watch_and_errors() {
    let watched = |path: &str, watch| WatchedPathRequest {
        path: path.into(),
        watch,
    };
    assert_request(
        "get_data_watch_request",
        3,
        Request::GetData(watched(ROOT, true)),
    );
    assert_reply(
        "get_data_watch_response",
        OpCode::GetData,
        ok(3, 3),
        Response::GetData {
            data: Bytes::from_static(b"hello").into(),
            stat: fixture_stat(),
        },
    );
    assert_request(
        "get_data_nonode_request",
        4,
        Request::GetData(watched("/paddock-fixture/missing", false)),
    );
    assert_reply(
        "get_data_nonode_response",
        OpCode::GetData,
        ReplyHeader {
            xid: 4,
            zxid: 3,
            err: ErrorCode::NoNode,
        },
        Response::Empty,
    );
    assert_request("exists_request", 5, Request::Exists(watched(ROOT, false)));
    assert_reply(
        "exists_response",
        OpCode::Exists,
        ok(5, 3),
        Response::Stat(fixture_stat()),
    );
    assert_request(
        "get_children2_request",
        6,
        Request::GetChildren2(watched(ROOT, false)),
    );
    assert_reply(
        "get_children2_response",
        OpCode::GetChildren2,
        ok(6, 3),
        Response::GetChildren2 {
            children: vec!["child".into()],
            stat: fixture_stat(),
        },
    );
}

#[test]
fn set_data_and_its_notification() {
    assert_request(
        "set_data_request",
        7,
        Request::SetData(SetDataRequest {
            path: ROOT.into(),
            data: Bytes::from_static(b"world").into(),
            version: -1,
        }),
    );
    assert_reply(
        "set_data_response",
        OpCode::SetData,
        ok(7, 4),
        Response::Stat(Stat {
            mzxid: 4,
            mtime: 1796232288253,
            version: 1,
            ..fixture_stat()
        }),
    );
    assert_notification("notification", EventType::NodeDataChanged, ROOT);
    assert_notification(
        "multi_ok_notification_1",
        EventType::NodeChildrenChanged,
        ROOT,
    );
    assert_notification("multi_ok_notification_2", EventType::NodeDataChanged, ROOT);
    assert_notification(
        "close_notification_1",
        EventType::NodeDeleted,
        "/paddock-fixture/child",
    );
}

#[test]
fn set_watches_and_add_watch() {
    assert_request(
        "set_watches_request",
        Xid::SetWatches.as_i32(),
        Request::SetWatches(SetWatches {
            relative_zxid: 4,
            data_watches: vec![ROOT.into()],
            exist_watches: vec!["/paddock-fixture/missing".into()],
            child_watches: vec![ROOT.into()],
        }),
    );
    assert_reply(
        "set_watches_response",
        OpCode::SetWatches,
        ok(-8, 4),
        Response::Empty,
    );
    assert_request(
        "set_watches2_request",
        Xid::SetWatches.as_i32(),
        Request::SetWatches2(SetWatches2 {
            relative_zxid: 6,
            data_watches: vec![ROOT.into()],
            exist_watches: vec!["/paddock-fixture/missing".into()],
            child_watches: vec![ROOT.into()],
            persistent_watches: vec![],
            persistent_recursive_watches: vec![ROOT.into()],
        }),
    );
    assert_reply(
        "set_watches2_response",
        OpCode::SetWatches2,
        ok(-8, 6),
        Response::Empty,
    );
    assert_request(
        "add_watch_request",
        10,
        Request::AddWatch(AddWatchRequest {
            path: ROOT.into(),
            mode: AddWatchMode::PersistentRecursive as i32,
        }),
    );
    assert_reply(
        "add_watch_response",
        OpCode::AddWatch,
        ok(10, 6),
        Response::Code(ErrorCode::Ok),
    );
}

#[test]
fn multi_success() {
    assert_request(
        "multi_ok_request",
        8,
        Request::Multi(vec![
            Request::Create(CreateRequest {
                path: "/paddock-fixture/m1".into(),
                data: Bytes::from_static(b"1").into(),
                acl: Acl::open_unsafe(),
                flags: 0,
            }),
            Request::SetData(SetDataRequest {
                path: ROOT.into(),
                data: Bytes::from_static(b"x").into(),
                version: -1,
            }),
            Request::Check(PathVersionRequest {
                path: ROOT.into(),
                version: 2,
            }),
            Request::Delete(PathVersionRequest {
                path: "/paddock-fixture/m1".into(),
                version: -1,
            }),
        ]),
    );
    assert_reply(
        "multi_ok_response",
        OpCode::Multi,
        ok(8, 5),
        Response::Multi(vec![
            OpResult::Create {
                path: "/paddock-fixture/m1".into(),
            },
            OpResult::SetData {
                stat: Stat {
                    mzxid: 5,
                    mtime: 1796232289777,
                    version: 2,
                    cversion: 2,
                    data_length: 1,
                    num_children: 2,
                    pzxid: 5,
                    ..fixture_stat()
                },
            },
            OpResult::Check,
            OpResult::Delete,
        ]),
    );
}

/// A failed multi: the reply header says Ok; each op reports Ok before the failing op,
/// the failure's code on it, and RuntimeInconsistency after it (ZooKeeper's
/// `DataTree.processTxn` for multi).
#[test]
fn multi_failure() {
    let create = |path: &str| {
        Request::Create(CreateRequest {
            path: path.into(),
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags: 0,
        })
    };
    assert_request(
        "multi_fail_request",
        9,
        Request::Multi(vec![
            create("/paddock-fixture/m2"),
            Request::Check(PathVersionRequest {
                path: ROOT.into(),
                version: 999,
            }),
            create("/paddock-fixture/m3"),
        ]),
    );
    assert_reply(
        "multi_fail_response",
        OpCode::Multi,
        ok(9, 6),
        Response::Multi(vec![
            OpResult::Error(ErrorCode::Ok),
            OpResult::Error(ErrorCode::BadVersion),
            OpResult::Error(ErrorCode::RuntimeInconsistency),
        ]),
    );
}

#[test]
fn multi_read() {
    let read = |path: &str| WatchedPathRequest {
        path: path.into(),
        watch: false,
    };
    assert_request(
        "multi_read_request",
        11,
        Request::MultiRead(vec![
            Request::GetData(read(ROOT)),
            Request::GetChildren(read(ROOT)),
            Request::GetData(read("/paddock-fixture/missing")),
        ]),
    );
    assert_reply(
        "multi_read_response",
        OpCode::MultiRead,
        ok(11, 6),
        Response::Multi(vec![
            OpResult::GetData {
                data: Bytes::from_static(b"x").into(),
                stat: Stat {
                    mzxid: 5,
                    mtime: 1796232289777,
                    version: 2,
                    cversion: 3,
                    data_length: 1,
                    num_children: 1,
                    pzxid: 5,
                    ..fixture_stat()
                },
            },
            OpResult::GetChildren {
                children: vec!["child".into()],
            },
            OpResult::Error(ErrorCode::NoNode),
        ]),
    );
}

#[test]
fn ping_and_close() {
    assert_request("ping_request", Xid::Ping.as_i32(), Request::Ping);
    assert_reply("ping_response", OpCode::Ping, ok(-2, 6), Response::Empty);
    assert_request("close_request", 12, Request::CloseSession);
    assert_reply(
        "close_response",
        OpCode::CloseSession,
        ok(12, 7),
        Response::Empty,
    );
}
