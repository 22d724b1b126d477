//! "A watch event reaches the client before any read result that reflects the change"
//! (ZooKeeper Programmer's Guide, "Guarantees"), checked under load: one client keeps a
//! data watch on each of many nodes and polls them, other clients change them. Every
//! reply that shows a version newer than the one the watch was set at must come after
//! the watch's event on the wire — for the watcher's reads and for its own writes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::jute::Reader;
use paddock_wire::{
    Acl, CreateRequest, EventType, Record, ReplyHeader, Request, Response, SetDataRequest, Stat,
    WatchedPathRequest, WatcherEvent,
};

use crate::support::{paddock, read_frame, RawClient};

const NODES: usize = 16;
const WRITERS: usize = 2;
const WRITES_PER_WRITER: usize = 1_500;
/// Polling rounds of the watcher; each reads every node once and writes one.
const MAX_ROUNDS: usize = 4_000;

fn node(i: usize) -> String {
    format!("/order/n{i}")
}

/// Sends `request` and reads up to its reply, handing every notification before it
/// to `on_event`; the reply's Stat.
fn call_seeing_events(
    client: &mut RawClient,
    xid: i32,
    request: &Request,
    on_event: &mut dyn FnMut(WatcherEvent),
) -> Stat {
    client.send(xid, request);
    loop {
        let frame = read_frame(&mut client.stream).expect("a frame");
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r).expect("header");
        if header.xid == -1 {
            on_event(WatcherEvent::decode(&mut r).expect("event"));
            continue;
        }
        assert_eq!(header.xid, xid, "replies come in request order");
        assert!(header.err.is_ok(), "{request:?}: {:?}", header.err);
        return match Response::decode(request.op_code(), &mut r).expect("body") {
            Response::GetData { stat, .. } | Response::Stat(stat) => stat,
            other => panic!("unexpected reply {other:?}"),
        };
    }
}

fn get(path: &str, watch: bool) -> Request {
    Request::GetData(WatchedPathRequest {
        path: path.into(),
        watch,
    })
}

#[test]
fn events_precede_replies_that_reflect_them() {
    let server = paddock("");
    let mut setup = RawClient::connect(server.addr);
    let create = |path: String| {
        Request::Create(CreateRequest {
            path,
            data: Bytes::new().into(),
            acl: Acl::open_unsafe(),
            flags: 0,
        })
    };
    setup.call(1, &create("/order".into()));
    for i in 0..NODES {
        setup.call(2, &create(node(i)));
    }

    let stop = std::sync::atomic::AtomicBool::new(false);
    let violations = std::thread::scope(|s| {
        for w in 0..WRITERS {
            let addr = server.addr;
            let stop = &stop;
            s.spawn(move || {
                let mut client = RawClient::connect(addr);
                for n in 0..WRITES_PER_WRITER {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let set = Request::SetData(SetDataRequest {
                        path: node((n * 7 + w) % NODES),
                        data: Bytes::from_static(b"w").into(),
                        version: -1,
                    });
                    client.call(i32::try_from(n).unwrap_or(0) + 1, &set);
                }
            });
        }

        let mut watcher = RawClient::connect(server.addr);
        // path -> the version the live watch was set at; absent while re-arming.
        let mut watched: HashMap<String, i32> = HashMap::new();
        let mut fired: Vec<String> = Vec::new();
        let mut violations = Vec::new();
        let mut xid = 0;
        for i in 0..NODES {
            xid += 1;
            let mut events = |e: WatcherEvent| fired.push(e.path);
            let stat = call_seeing_events(&mut watcher, xid, &get(&node(i), true), &mut events);
            watched.insert(node(i), stat.version);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        for round in 0..MAX_ROUNDS {
            if Instant::now() > deadline {
                break;
            }
            for i in 0..NODES {
                let path = node(i);
                // Every 4th round the watcher writes too: its own write's reply must
                // not overtake the events of the writes applied before it.
                let request = if round % 4 == 0 && i == round % NODES {
                    Request::SetData(SetDataRequest {
                        path: path.clone(),
                        data: Bytes::from_static(b"r").into(),
                        version: -1,
                    })
                } else {
                    get(&path, false)
                };
                xid += 1;
                let mut events = |e: WatcherEvent| {
                    assert_eq!(e.event_type, EventType::NodeDataChanged);
                    fired.push(e.path)
                };
                let stat = call_seeing_events(&mut watcher, xid, &request, &mut events);
                for path in fired.drain(..) {
                    watched.remove(&path);
                }
                match watched.get(&path) {
                    Some(&version) if stat.version > version => {
                        let own = matches!(request, Request::SetData(_));
                        // The watcher's own setData fires its own watch too: the event
                        // must still precede the reply.
                        violations.push(format!(
                            "{path}: watch set at version {version}, {} shows {} before the event",
                            if own { "own setData reply" } else { "getData" },
                            stat.version
                        ));
                    }
                    Some(_) => {}
                    None => {
                        // The event came: re-arm at the version seen now.
                        xid += 1;
                        let mut events = |e: WatcherEvent| fired.push(e.path);
                        let stat =
                            call_seeing_events(&mut watcher, xid, &get(&path, true), &mut events);
                        watched.insert(path.clone(), stat.version);
                    }
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        violations
    });
    assert!(
        violations.is_empty(),
        "{} replies overtook their watch events, e.g.:\n{}",
        violations.len(),
        violations
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
