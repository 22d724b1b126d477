//! Interoperability with kazoo: a kazoo `Lock` and a Paddock [`Lock`] on the same path
//! exclude each other, because they share kazoo's node layout.

use std::process::Stdio;
use std::time::Duration;

use paddock_client::recipes::Lock;
use paddock_client::Error;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::{connect, server, unique, within};

/// `try SECONDS`: try to take the lock, print `acquired` or `timeout`.
/// `hold`: take the lock, print `acquired`, release it after a line on stdin.
const KAZOO_LOCK: &str = r#"
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout
hosts, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
zk = KazooClient(hosts=hosts)
zk.start(timeout=15)
lock = zk.Lock(path, "kazoo")
if mode == "try":
    try:
        lock.acquire(timeout=float(sys.argv[4]))
        print("acquired", flush=True)
        lock.release()
    except LockTimeout:
        print("timeout", flush=True)
else:
    lock.acquire()
    print("acquired", flush=True)
    sys.stdin.readline()
    lock.release()
    print("released", flush=True)
zk.stop()
"#;

fn kazoo(path: &str, args: &[&str], hosts: &str) -> Child {
    crate::support::require_kazoo();
    Command::new("python3")
        .arg("-c")
        .arg(KAZOO_LOCK)
        .arg(hosts)
        .arg(path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 with kazoo")
}

async fn next_line(lines: &mut tokio::io::Lines<BufReader<ChildStdout>>) -> String {
    within(Duration::from_secs(30), lines.next_line())
        .await
        .expect("read kazoo's output")
        .expect("kazoo exited early")
}

#[tokio::test]
async fn kazoo_and_paddock_locks_exclude_each_other() {
    within(Duration::from_secs(90), async {
        let hosts = server().await;
        let path = format!("{}/lock", unique("interop"));
        let client = connect().await;
        let lock = Lock::new(&client, &path).identifier("paddock");

        // Paddock holds it: kazoo times out.
        let held = lock.acquire().await.unwrap();
        let mut child = kazoo(&path, &["try", "1.0"], &hosts);
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(next_line(&mut out).await, "timeout");
        child.wait().await.unwrap();
        // Released: kazoo gets it.
        held.release().await.unwrap();
        let mut child = kazoo(&path, &["try", "10"], &hosts);
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(next_line(&mut out).await, "acquired");
        child.wait().await.unwrap();

        // kazoo holds it: Paddock waits behind it, and gets it once kazoo lets go.
        let mut child = kazoo(&path, &["hold"], &hosts);
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(next_line(&mut out).await, "acquired");
        assert!(lock.try_acquire().await.unwrap().is_none());
        let err = lock
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout), "{err}");
        let waiter = lock.clone();
        let waiting = tokio::spawn(async move { waiter.acquire().await });
        let mut contenders = Vec::new();
        for _ in 0..100 {
            contenders = lock.contenders().await.unwrap();
            if contenders.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(contenders, ["kazoo", "paddock"]);
        assert!(!waiting.is_finished());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
        let guard = within(Duration::from_secs(20), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next_line(&mut out).await, "released");
        assert_eq!(guard.wakeups(), 1);
        child.wait().await.unwrap();
        guard.release().await.unwrap();
    })
    .await;
}

/// kazoo's side of the party and locking-queue exchange (see the test).
const KAZOO_PARTY_QUEUE: &str = r#"
import sys
from kazoo.client import KazooClient
hosts, base = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts)
zk.start(timeout=15)
party = zk.Party(base + "/party", "kazoo")
shallow = zk.ShallowParty(base + "/shallow", "kazoo-host")
party.join()
shallow.join()
queue = zk.LockingQueue(base + "/queue")
queue.put_all([b"from-kazoo-1", b"from-kazoo-2"])
print("ready", flush=True)
sys.stdin.readline()
print(",".join(sorted(party)), flush=True)
print(",".join(sorted(shallow)), flush=True)
print(queue.get(10).decode(), flush=True)
print(queue.consume(), flush=True)
zk.stop()
"#;

#[tokio::test]
async fn kazoo_and_paddock_share_parties_and_locking_queues() {
    use paddock_client::recipes::{LockingQueue, Party, ShallowParty};
    within(Duration::from_secs(90), async {
        crate::support::require_kazoo();
        let hosts = server().await;
        let base = unique("interop-party");
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(KAZOO_PARTY_QUEUE)
            .arg(&hosts)
            .arg(&base)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 with kazoo");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(next_line(&mut out).await, "ready");

        let client = connect().await;
        let party = Party::new(&client, &format!("{base}/party"), "paddock");
        let shallow = ShallowParty::new(&client, &format!("{base}/shallow"), "paddock-host");
        party.join().await.unwrap();
        shallow.join().await.unwrap();
        let mut members = party.members().await.unwrap();
        members.sort();
        assert_eq!(members, ["kazoo", "paddock"]);
        let mut hosts_seen = shallow.members().await.unwrap();
        hosts_seen.sort();
        assert_eq!(hosts_seen, ["kazoo-host", "paddock-host"]);

        // kazoo's entries, in order; ours with a lower priority goes before the rest.
        let queue = LockingQueue::new(&client, &format!("{base}/queue"));
        let first = queue.get().await.unwrap();
        assert_eq!(&first.value()[..], b"from-kazoo-1");
        assert!(first.consume().await.unwrap());
        queue.put_all(&[b"from-paddock"], 1).await.unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
        assert_eq!(next_line(&mut out).await, "kazoo,paddock");
        assert_eq!(next_line(&mut out).await, "kazoo-host,paddock-host");
        assert_eq!(next_line(&mut out).await, "from-paddock");
        assert_eq!(next_line(&mut out).await, "True");
        child.wait().await.unwrap();
        let last = queue.get().await.unwrap();
        assert_eq!(&last.value()[..], b"from-kazoo-2");
        assert!(last.consume().await.unwrap());
        assert!(queue.is_empty().await.unwrap());
    })
    .await;
}
