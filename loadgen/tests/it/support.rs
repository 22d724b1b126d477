//! A Paddock ensemble on loopback for the tests, from this build's `paddock` binary
//! (built first if this test run did not build it). Every server is killed, and its
//! directory removed, when the ensemble drops; every wait is bounded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const LOADGEN: &str = env!("CARGO_BIN_EXE_paddock-loadgen");

pub use paddock_testkit::free_ports;

struct Member {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

pub struct Ensemble {
    members: Vec<Member>,
}

impl Ensemble {
    /// Three voters, serving (one of them leading) before this returns.
    pub fn start() -> Ensemble {
        let ports = free_ports(9);
        let lines: String = (0..3)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[3 * i],
                    ports[3 * i + 1]
                )
            })
            .collect();
        let members = (0..3)
            .map(|i| {
                let dir = tempfile::tempdir().expect("tempdir");
                let port = ports[3 * i + 2];
                let data = dir.path().join("data");
                std::fs::create_dir_all(&data).expect("data dir");
                std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("myid");
                let config = dir.path().join("zoo.cfg");
                std::fs::write(
                    &config,
                    format!(
                        "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\n\
                         clientPort={port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n\
                         4lw.commands.whitelist=*\nforceSync=no\n{lines}",
                        data.display()
                    ),
                )
                .expect("zoo.cfg");
                let log = std::fs::File::create(dir.path().join("paddock.log")).expect("log");
                let child = Command::new(paddock_binary())
                    .arg("--config")
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .expect("start paddock");
                Member {
                    child,
                    port,
                    _dir: dir,
                }
            })
            .collect();
        let ensemble = Ensemble { members };
        ensemble.wait_for_leader(Duration::from_secs(120));
        ensemble
    }

    pub fn hosts(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.child.id()).collect()
    }

    fn wait_for_leader(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let modes: Vec<String> = self
                .members
                .iter()
                .filter_map(|m| four_letter(m.port, "srvr"))
                .collect();
            if modes.len() == 3 && modes.iter().any(|m| m.contains("Mode: leader")) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the ensemble elected no leader within {limit:?}");
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.child.kill();
            let _ = m.child.wait();
        }
    }
}

fn four_letter(port: u16, word: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// `target/<profile>/paddock`, next to the test binary's `deps/`, built if missing.
fn paddock_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let profile_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/<profile>/deps");
            let binary = profile_dir.join("paddock");
            if !binary.exists() {
                let mut build = Command::new(env!("CARGO"));
                build.args(["build", "-p", "paddock-server", "--bin", "paddock"]);
                if profile_dir.ends_with("release") {
                    build.arg("--release");
                }
                let status = build.status().expect("run cargo build");
                assert!(status.success(), "building paddock failed");
            }
            binary
        })
        .clone()
}

/// Waits for `child` at most `limit`, killing it if it overruns; its output.
pub fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{what} still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}
