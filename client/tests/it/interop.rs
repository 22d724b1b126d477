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
