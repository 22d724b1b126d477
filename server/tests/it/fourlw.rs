//! Four-letter words on the client port, with ZooKeeper's whitelist behaviour.

use paddock_wire::{Acl, AddWatchRequest, CreateRequest, Data, Request, WatchedPathRequest};

use crate::support::{four_letter, paddock, zookeeper, RawClient, Server};

#[test]
fn four_letter_words_answer_in_zookeepers_formats() {
    let server = paddock("");
    let answer = |cmd| four_letter(server.addr, cmd).unwrap_or_default();
    assert_eq!(answer("ruok"), "imok");
    assert_eq!(answer("isro"), "rw");
    let srvr = answer("srvr");
    assert!(
        srvr.starts_with("Zookeeper version: 3.8.0-paddock"),
        "{srvr}"
    );
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    assert!(srvr.contains("Node count: 4"), "{srvr}");
    let mntr = answer("mntr");
    for key in [
        "zk_server_state\tstandalone",
        "zk_znode_count\t4",
        "zk_watch_count\t0",
        "zk_ephemerals_count\t0",
        "zk_outstanding_requests\t0",
        "zk_avg_latency\t",
        "zk_approximate_data_size\t",
    ] {
        assert!(mntr.contains(key), "{key} missing from:\n{mntr}");
    }
    assert!(answer("envi").contains("zookeeper.version=3.8.0-paddock"));
    // Requests are counted.
    let mut client = crate::support::RawClient::connect(server.addr);
    let exists = paddock_wire::Request::Exists(paddock_wire::WatchedPathRequest {
        path: "/".into(),
        watch: false,
    });
    client.call(1, &exists);
    let srvr = answer("srvr");
    assert!(
        srvr.contains("Received: 1\n") && srvr.contains("Sent: 1\n"),
        "{srvr}"
    );
    assert!(answer("wchs").contains("connections watching"));
    assert!(answer("conf").contains(&format!("clientPort={}", server.addr.port())));
}

#[test]
fn the_whitelist_defaults_to_srvr_alone() {
    let server = paddock("4lw.commands.whitelist=srvr");
    assert!(four_letter(server.addr, "srvr")
        .unwrap_or_default()
        .contains("Mode:"));
    assert_eq!(
        four_letter(server.addr, "mntr").unwrap_or_default(),
        "mntr is not executed because it is not in the whitelist.\n"
    );
}

/// Sets up the same watches on either server: two sessions, data and exist watches, a
/// child watch and a persistent one, and 140 writes so `hash` has a line.
fn watched(server: &Server) -> Vec<RawClient> {
    let create = |path: &str| {
        Request::Create(CreateRequest {
            path: path.into(),
            data: Data::from(&b"d"[..]),
            acl: Acl::open_unsafe(),
            flags: 0,
        })
    };
    let watch = |path: &str| WatchedPathRequest {
        path: path.into(),
        watch: true,
    };
    let mut one = RawClient::connect(server.addr);
    one.call(1, &create("/w"));
    for i in 0..140 {
        one.call(2, &create(&format!("/w/{i}")));
    }
    one.call(3, &Request::GetData(watch("/w")));
    one.call(4, &Request::Exists(watch("/missing")));
    one.call(5, &Request::GetChildren(watch("/")));
    let mut two = RawClient::connect(server.addr);
    two.call(1, &Request::Exists(watch("/w")));
    two.call(
        2,
        &Request::AddWatch(AddWatchRequest {
            path: "/p".into(),
            mode: 0,
        }),
    );
    vec![one, two]
}

/// Replaces each maximal run of characters accepted by `class` that follows `prefix`
/// (not empty) with `*`.
fn mask_after(line: &str, prefix: &str, class: fn(char) -> bool) -> String {
    assert!(!prefix.is_empty());
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at + prefix.len()]);
        rest = &rest[at + prefix.len()..];
        let end = rest.find(|c: char| !class(c)).unwrap_or(rest.len());
        out.push('*');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A word's answer with what differs by nature between two servers (ports, session
/// ids, times, sizes, paths, digests) masked, and lines sorted where ZooKeeper's order
/// is a hash map's.
fn comparable(word: &str, answer: &str) -> Vec<String> {
    let hex = |c: char| c.is_ascii_hexdigit() || c == 'x';
    let any = |c: char| c != ',' && c != ')' && c != '\n';
    let mut lines: Vec<String> = answer
        .split('\n')
        .map(|line| match word {
            "cons" => {
                let mut line = mask_after(line, "/127.0.0.1:", |c| c.is_ascii_digit());
                for key in [
                    "sid=", "est=", "lresp=", "lzxid=", "lcxid=", "llat=", "minlat=", "avglat=",
                    "maxlat=",
                ] {
                    line = mask_after(&line, key, any);
                }
                line
            }
            "wchc" | "wchp" => mask_after(line, "0x", hex),
            "dirs" => mask_after(line, ": ", |c| c.is_ascii_digit()),
            "hash" => match line.split_once(": ") {
                Some((zxid, digest))
                    if i64::from_str_radix(zxid, 16).is_ok() && digest.parse::<i64>().is_ok() =>
                {
                    "ZXID: DIGEST".to_owned()
                }
                _ => line.to_owned(),
            },
            "conf" => match line.split_once('=') {
                Some((
                    key @ ("clientPort" | "dataDir" | "dataDirSize" | "dataLogDir" | "dataLogSize"),
                    _,
                )) => {
                    format!("{key}=*")
                }
                _ => line.to_owned(),
            },
            _ => line.to_owned(),
        })
        .collect();
    if matches!(word, "cons" | "wchc" | "wchp") {
        lines.sort();
    }
    lines
}

#[test]
fn four_letter_words_match_zookeeper() {
    let ours = paddock("");
    let theirs = zookeeper("");
    let _clients = (watched(&ours), watched(&theirs));
    let words = [
        "ruok", "isro", "wchs", "wchc", "wchp", "dirs", "conf", "cons", "crst", "cons", "hash",
        "srst", "xyzw", "abcd",
    ];
    for word in words {
        let (a, b) = (
            four_letter(ours.addr, word).unwrap_or_default(),
            four_letter(theirs.addr, word).unwrap_or_default(),
        );
        assert_eq!(
            comparable(word, &a),
            comparable(word, &b),
            "{word}: Paddock (left) and ZooKeeper (right) differ:\n{a}\n---\n{b}"
        );
    }
    let wchp = four_letter(ours.addr, "wchp").unwrap_or_default();
    assert_eq!(
        comparable("wchp", &wchp),
        ["", "", "\t0x*", "\t0x*", "\t0x*", "\t0x*", "/missing", "/p", "/w"]
    );
}
