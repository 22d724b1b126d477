//! `scripts/ensemble.sh`, as a user runs it: one server dies, the watcher says which
//! and why while the other two keep serving; `ensemble.sh restart N` (another command,
//! as from a second terminal) brings it back; logs are appended to, never overwritten;
//! SIGTERM to the script stops all three. Runs on free ports, with this build's binary.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use paddock_client::{Client, ConnectOptions, CreateMode};

use crate::support::{eventually, four_letter, free_ports, run_bounded};

const LIMIT: Duration = Duration::from_secs(60);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ensemble.sh")
}

/// The script's environment: this build's binary, and configs and run dir of its own.
fn script_command(dir: &Path) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(script())
        .env("PADDOCK_BIN", env!("CARGO_BIN_EXE_paddock"))
        .env("PADDOCK_CONF_DIR", dir.join("conf"))
        .env("PADDOCK_RUN_DIR", dir.join("run"))
        .env("RUST_LOG", "info");
    command
}

/// The watching script; on drop (pass or fail) every server is stopped by its pid file
/// and the script is killed.
struct Running {
    dir: tempfile::TempDir,
    script: Child,
    output: PathBuf,
    clients: Vec<String>,
}

impl Running {
    fn start() -> Running {
        let dir = tempfile::tempdir().expect("tempdir");
        let ports = free_ports(9);
        let members: String = (0..3)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[3 * i],
                    ports[3 * i + 1]
                )
            })
            .collect();
        std::fs::create_dir_all(dir.path().join("conf")).expect("conf dir");
        for i in 0..3 {
            // Relative dataDir, as in conf/: resolved against the config's directory.
            let cfg = format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=../run/zoo{n}/data\n\
                 clientPort={port}\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n\
                 {members}",
                n = i + 1,
                port = ports[3 * i + 2]
            );
            std::fs::write(dir.path().join(format!("conf/zoo{}.cfg", i + 1)), cfg).expect("config");
        }
        let output = dir.path().join("script.out");
        let script = script_command(dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&output).expect("output file"))
            .stderr(Stdio::from(
                std::fs::File::options()
                    .append(true)
                    .open(&output)
                    .expect("output file"),
            ))
            .spawn()
            .expect("start ensemble.sh");
        let clients = (0..3)
            .map(|i| format!("127.0.0.1:{}", ports[3 * i + 2]))
            .collect();
        Running {
            dir,
            script,
            output,
            clients,
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn pid(&self, n: usize) -> Option<u32> {
        std::fs::read_to_string(self.run_dir().join(format!("zoo{n}.pid")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Waits until the script's output contains `needle`.
    fn wait_output(&self, needle: &str) {
        if eventually(LIMIT, || self.output().contains(needle).then_some(())).is_none() {
            panic!("no {needle:?} from ensemble.sh:\n{}", self.output());
        }
    }

    /// Waits until servers `which` (1-based) report a mode (leader or follower).
    fn wait_serving(&self, which: &[usize]) {
        for n in which {
            let addr = self.clients[n - 1].parse().expect("addr");
            let serves = eventually(LIMIT, || {
                let srvr = four_letter(addr, "srvr").unwrap_or_default();
                (srvr.contains("Mode: leader") || srvr.contains("Mode: follower")).then_some(())
            });
            if serves.is_none() {
                panic!("server {n} does not serve:\n{}", self.output());
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for n in 1..=3 {
            if let Some(pid) = self.pid(n) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = self.script.kill();
        let _ = self.script.wait();
    }
}

/// Creates `path` through the servers `which`, then reads it back from each of them.
fn create_and_read(running: &Running, which: &[usize], path: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = || ConnectOptions::with_session_timeout(Duration::from_secs(10));
        let hosts: Vec<&str> = which
            .iter()
            .map(|n| running.clients[n - 1].as_str())
            .collect();
        let writer = tokio::time::timeout(LIMIT, Client::connect(&hosts.join(","), options()))
            .await
            .expect("connected in time")
            .expect("connect");
        tokio::time::timeout(LIMIT, writer.create(path, b"v", CreateMode::Persistent))
            .await
            .expect("created in time")
            .expect("create");
        writer.close().await.expect("close");
        for host in hosts {
            let reader = tokio::time::timeout(LIMIT, Client::connect(host, options()))
                .await
                .expect("connected in time")
                .expect("connect");
            reader.sync(path).await.expect("sync");
            let (data, _) = reader.get_data(path).await.expect("get");
            assert_eq!(&data[..], b"v", "{path} on {host}");
            reader.close().await.expect("close");
        }
    });
}

#[test]
fn ensemble_script_survives_a_dead_server_and_restarts_it() {
    let mut running = Running::start();
    running.wait_output("ensemble running");
    running.wait_serving(&[1, 2, 3]);
    create_and_read(&running, &[1, 2, 3], "/before");

    // Server 2 dies: the watcher names it and why; 1 and 3 keep serving.
    let pid = running.pid(2).expect("server 2's pid file");
    let killed = run_bounded(
        Command::new("kill").args(["-KILL", &pid.to_string()]),
        Duration::from_secs(5),
    );
    assert!(killed.status.success());
    running.wait_output(&format!("server 2 (pid {pid}) exited with signal KILL"));
    running.wait_output("scripts/ensemble.sh restart 2");
    assert!(running.output().contains("last lines of"));
    create_and_read(&running, &[1, 3], "/while-2-is-down");

    // Restarted by another command, as from another terminal.
    let restarted = run_bounded(
        script_command(running.dir.path()).args(["restart", "2"]),
        LIMIT,
    );
    assert!(
        restarted.status.success(),
        "{}",
        String::from_utf8_lossy(&restarted.stderr)
    );
    running.wait_serving(&[2]);
    create_and_read(&running, &[1, 2, 3], "/after");
    running.wait_output("server 2 is running again");

    // Both runs of server 2 are in its log: the restart appended.
    let log = std::fs::read_to_string(running.run_dir().join("zoo2.log")).expect("log");
    assert_eq!(log.matches("starting server 2").count(), 2, "{log}");
    assert_eq!(log.matches("serving clients on").count(), 2, "{log}");

    // SIGTERM to the script stops all three.
    let pids: Vec<u32> = (1..=3).filter_map(|n| running.pid(n)).collect();
    assert_eq!(pids.len(), 3);
    let signalled = run_bounded(
        Command::new("kill").args(["-TERM", &running.script.id().to_string()]),
        Duration::from_secs(5),
    );
    assert!(signalled.status.success());
    if eventually(LIMIT, || running.script.try_wait().ok().flatten()).is_none() {
        panic!("ensemble.sh still runs:\n{}", running.output());
    }
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "server pid {pid} survived the script's stop"
        );
    }
}
