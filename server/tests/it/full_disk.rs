//! A full disk under the txn log or the snapshots: the server stops acknowledging
//! writes and exits with a message naming the directory and the cause; nothing it
//! acknowledged is lost; once space is freed, a restart recovers. Each test mounts a
//! small tmpfs of its own (root only; skipped with a message elsewhere) and unmounts it
//! however the test ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use paddock_wire::{Acl, CreateMode, CreateRequest, ErrorCode, Request, WatchedPathRequest};

use crate::support::{paddock, wait_until, RawClient, Server};

/// A tmpfs mounted for one test.
struct Tmpfs {
    path: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (after saying why) where this process may not mount.
    fn mount(size: &str) -> Option<Tmpfs> {
        let parent = tempfile::tempdir().expect("tempdir");
        let path = parent.path().join("fs");
        std::fs::create_dir(&path).expect("mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(Tmpfs {
            path,
            _parent: parent,
        })
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.path)
            .status()
            .expect("mount");
        assert!(status.success(), "remount failed");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn create(client: &mut RawClient, xid: i32, path: &str) -> Option<ErrorCode> {
    let request = Request::Create(CreateRequest {
        path: path.into(),
        data: Bytes::from(vec![b'x'; 4096]).into(),
        acl: Acl::open_unsafe(),
        flags: CreateMode::Persistent.flags(),
    });
    client.try_call(xid, &request).map(|(header, _)| header.err)
}

/// Writes 4 KiB nodes until the server stops answering; the acknowledged paths.
fn fill(server: &Server) -> Vec<String> {
    let mut client = RawClient::connect(server.addr);
    let mut acknowledged = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..20_000 {
        assert!(Instant::now() < deadline, "the disk never filled");
        let path = format!("/n{i}");
        match create(&mut client, i + 1, &path) {
            Some(ErrorCode::Ok) => acknowledged.push(path),
            Some(code) => panic!("write refused with {code:?} instead of the server stopping"),
            None => return acknowledged,
        }
    }
    panic!("20,000 writes fit on the small disk");
}

fn wait_exit(server: &mut Server) {
    wait_until(
        Duration::from_secs(30),
        "the server kept running on a full disk",
        || !server.is_running(),
    );
}

fn assert_all_present(server: &Server, acknowledged: &[String]) {
    let mut client = RawClient::connect(server.addr);
    for (i, path) in acknowledged.iter().enumerate() {
        let request = Request::Exists(WatchedPathRequest {
            path: path.clone(),
            watch: false,
        });
        let (header, _) = client.call(i as i32 + 1, &request);
        assert_eq!(header.err, ErrorCode::Ok, "acknowledged {path} was lost");
    }
}

/// Runs the scenario; `failing_step` is what the exit message must say failed.
fn full_disk_scenario(dir_key: &str, extra: &str, failing_step: &str) {
    let Some(disk) = Tmpfs::mount("2m") else {
        return;
    };
    let dir: &Path = &disk.path;
    let mut server = paddock(&format!("{dir_key}={}\n{extra}", dir.display()));
    let acknowledged = fill(&server);
    wait_exit(&mut server);
    let log = server.log_text();
    assert!(
        log.contains("No space left on device") && log.contains(&dir.display().to_string()),
        "the exit does not name the full directory and the cause:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("No space left") && l.contains(failing_step)),
        "the disk filled elsewhere than in {failing_step}:\n{log}"
    );
    assert!(!acknowledged.is_empty());
    let exit_line = log
        .lines()
        .find(|l| l.contains("No space left"))
        .unwrap_or_default();
    eprintln!(
        "{} writes acknowledged before: {exit_line}",
        acknowledged.len()
    );
    disk.resize("64m");
    server.restart();
    assert_all_present(&server, &acknowledged);
}

/// The txn log's disk fills: the preallocation (fallocate) fails before any append
/// that the disk could not hold.
#[test]
fn a_full_txn_log_disk_stops_the_server_and_loses_nothing() {
    full_disk_scenario(
        "dataLogDir",
        "preAllocSize=256\nforceSync=yes",
        "preallocating",
    );
}

/// The snapshot disk fills (the log is elsewhere; snapshots are taken often).
#[test]
fn a_full_snapshot_disk_stops_the_server_and_loses_nothing() {
    let log_dir = tempfile::tempdir().expect("tempdir");
    full_disk_scenario(
        "dataDir",
        &format!(
            "dataLogDir={}\nsnapCount=50\nforceSync=yes",
            log_dir.path().display()
        ),
        "snapshot",
    );
}
