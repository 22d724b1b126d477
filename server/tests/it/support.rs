//! Starting and stopping servers for tests: Paddock from this build, Apache ZooKeeper
//! from Debian's `zookeeper` package (installed by `.ci/run`). Every server is killed
//! when its handle drops, and every wait is bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use paddock_wire::codec::write_frame;
use paddock_wire::jute::Reader;
use paddock_wire::{
    ConnectRequest, ConnectResponse, OpCode, Record, ReplyHeader, Request, Response,
    DEFAULT_MAX_FRAME,
};

pub const ZOOKEEPER_HOME: &str = "/usr/share/zookeeper";

/// How often a wait on another process looks again.
const POLL: Duration = Duration::from_millis(50);

/// Polls `probe` until it yields a value, for at most `limit`. The servers under test
/// are other processes, on the real clock: this is the one place the tests wait for
/// them (the in-process tests use tokio's paused clock or the simulated ensemble).
pub fn eventually<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Waits for at most `limit` until `done` holds; panics with `what` if it never does.
pub fn wait_until(limit: Duration, what: impl std::fmt::Display, mut done: impl FnMut() -> bool) {
    if eventually(limit, || done().then_some(())).is_none() {
        panic!("{what} (waited {limit:?})");
    }
}

pub use paddock_testkit::{free_port, free_ports};

/// A server process under test.
pub struct Server {
    pub addr: SocketAddr,
    child: Child,
    _dir: tempfile::TempDir,
    pub log: PathBuf,
}

impl Server {
    pub fn hosts(&self) -> String {
        self.addr.to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Sends a signal by name (`STOP`, `CONT`, `KILL`, `TERM`). A `STOP` returns once
    /// every thread has stopped: the signal is delivered asynchronously, and a thread
    /// still running on another CPU could, for instance, acknowledge one more write.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{name} failed");
        if name == "STOP" {
            self.wait_stopped(Duration::from_secs(5));
        }
    }

    /// Waits until every thread of the process is stopped (state `T` in its
    /// `/proc/PID/task/TID/stat`).
    fn wait_stopped(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let tasks = format!("/proc/{}/task", self.pid());
        loop {
            let running: Vec<String> = std::fs::read_dir(&tasks)
                .map(|dir| {
                    dir.filter_map(Result::ok)
                        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
                        .filter(|stat| {
                            // The state follows the command name, which is in parentheses.
                            let state = stat.rsplit_once(") ").map(|(_, rest)| rest);
                            !state
                                .is_some_and(|rest| rest.starts_with('T') || rest.starts_with('t'))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if running.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} threads still running {limit:?} after SIGSTOP",
                running.len()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `kill -9`, and waits for the process to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the same server again (same config and data) after [`Server::kill`].
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn_paddock(&self._dir.path().join("zoo.cfg"), &self.log);
        self.wait_serving();
    }

    /// Starts the same server again after [`Server::kill`] or an exit, without waiting
    /// for it to serve (to catch it in a start-up phase).
    pub fn start_again(&mut self) {
        self.kill();
        self.child = spawn_paddock(&self._dir.path().join("zoo.cfg"), &self.log);
    }

    /// Waits up to `limit` for the process to exit; its status, or None if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        eventually(limit, || self.child.try_wait().ok().flatten())
    }

    /// The length of the log so far, to look for lines written after this point.
    pub fn log_len(&self) -> usize {
        self.log_text().len()
    }

    /// Waits up to `limit` for a log line containing `needle` after byte `from` of the
    /// log; whether one appeared.
    pub fn wait_for_log(&self, needle: &str, from: usize, limit: Duration) -> bool {
        eventually(limit, || {
            self.log_text()
                .get(from..)
                .is_some_and(|new| new.contains(needle))
                .then_some(())
        })
        .is_some()
    }

    /// Deletes the server's data (not its myid): it restarts as if new.
    pub fn wipe(&self) {
        let data = self._dir.path().join("data");
        for entry in std::fs::read_dir(&data).expect("data dir").flatten() {
            if entry.file_name() != "myid" {
                let path = entry.path();
                let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            }
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self._dir.path().join("data")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A stopped process must be continued to die of SIGKILL promptly; one that has
        // exited needs nothing (and `kill` would print "No such process").
        if self.is_running() {
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(self.child.id().to_string())
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The zoo.cfg lines both servers get, so their behaviour is comparable.
fn common_config(dir: &Path, port: u16, extra: &str) -> String {
    format!(
        "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
         4lw.commands.whitelist=*\nextendedTypesEnabled=true\n{extra}\n",
        dir.join("data").display()
    )
}

/// Starts `paddock` with a fresh data dir on a free port; `extra` adds zoo.cfg lines.
pub fn paddock(extra: &str) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
    let config = dir.path().join("zoo.cfg");
    std::fs::write(&config, common_config(dir.path(), port, extra)).expect("config");
    let log = dir.path().join("paddock.log");
    let child = spawn_paddock(&config, &log);
    wait_until_serving(child, dir, port, log)
}

/// Starts `paddock` with a fresh data dir (and `myid`, if given) on client port `port`,
/// without waiting for it to serve: for servers that never will, such as one member of
/// an ensemble whose peers are not running.
pub fn paddock_starting(port: u16, extra: &str, myid: Option<u64>) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
    if let Some(id) = myid {
        std::fs::write(dir.path().join("data/myid"), format!("{id}\n")).expect("myid");
    }
    let config = dir.path().join("zoo.cfg");
    std::fs::write(&config, common_config(dir.path(), port, extra)).expect("config");
    let log = dir.path().join("paddock.log");
    let child = spawn_paddock(&config, &log);
    Server {
        addr: ([127, 0, 0, 1], port).into(),
        child,
        _dir: dir,
        log,
    }
}

/// The `paddock` binary of this build, or `PADDOCK_BIN` if set: benchmarks compare
/// builds with the same test code.
fn paddock_binary() -> PathBuf {
    std::env::var_os("PADDOCK_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_paddock").into(), PathBuf::from)
}

/// Runs `paddock --config CONFIG`, appending its log to `log`.
fn spawn_paddock(config: &Path, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log file");
    Command::new(paddock_binary())
        .arg("--config")
        .arg(config)
        .env(
            "RUST_LOG",
            std::env::var("PADDOCK_TEST_RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start paddock")
}

/// A Paddock ensemble on 127.0.0.1: `participants` voters and `observers` learners.
pub struct Ensemble {
    pub servers: Vec<Server>,
}

impl Ensemble {
    pub fn start(participants: usize, observers: usize) -> Ensemble {
        Ensemble::start_with(participants, observers, "")
    }

    /// [`Ensemble::start`] with extra zoo.cfg lines for every server.
    pub fn start_with(participants: usize, observers: usize, extra: &str) -> Ensemble {
        Ensemble::start_each(participants, observers, |_| extra.to_owned())
    }

    /// [`Ensemble::start`] with extra zoo.cfg lines for server `i` (0-based) from
    /// `extra_for(i)`.
    pub fn start_each(
        participants: usize,
        observers: usize,
        extra_for: impl Fn(usize) -> String,
    ) -> Ensemble {
        let count = participants + observers;
        // Peer, election and client ports for every server, all distinct.
        let ports = free_ports(3 * count);
        let peer_ports: Vec<(u16, u16)> = (0..count)
            .map(|i| (ports[3 * i], ports[3 * i + 1]))
            .collect();
        let server_lines: String = peer_ports
            .iter()
            .enumerate()
            .map(|(i, (peer, election))| {
                let role = if i < participants { "" } else { ":observer" };
                format!("server.{}=127.0.0.1:{peer}:{election}{role}\n", i + 1)
            })
            .collect();
        let children: Vec<_> = (0..count)
            .map(|i| {
                let dir = tempfile::tempdir().expect("tempdir");
                let port = ports[3 * i + 2];
                let data = dir.path().join("data");
                std::fs::create_dir_all(&data).expect("data dir");
                std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("myid");
                let role = if i < participants {
                    ""
                } else {
                    "peerType=observer\n"
                };
                let extra = format!(
                    "initLimit=10\nsyncLimit=5\n{role}{server_lines}{}\n",
                    extra_for(i)
                );
                let config = dir.path().join("zoo.cfg");
                std::fs::write(&config, common_config(dir.path(), port, &extra)).expect("config");
                let log = dir.path().join("paddock.log");
                let child = Command::new(paddock_binary())
                    .arg("--config")
                    .arg(&config)
                    .env(
                        "RUST_LOG",
                        std::env::var("PADDOCK_TEST_RUST_LOG").unwrap_or_else(|_| "info".into()),
                    )
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(&log).expect("log file"))
                    .spawn()
                    .expect("start paddock");
                (child, dir, port, log)
            })
            .collect();
        let servers = children
            .into_iter()
            .map(|(child, dir, port, log)| wait_until_serving(child, dir, port, log))
            .collect();
        let ensemble = Ensemble { servers };
        ensemble.wait_for_leader(Duration::from_secs(30));
        ensemble
    }

    pub fn mntr(&self, i: usize) -> std::collections::HashMap<String, String> {
        mntr(&self.servers[i])
    }

    /// The index of the server that reports itself leader, waiting up to `limit`.
    pub fn wait_for_leader(&self, limit: Duration) -> usize {
        eventually(limit, || {
            self.servers.iter().position(|server| {
                mntr(server).get("zk_server_state").map(String::as_str) == Some("leader")
            })
        })
        .unwrap_or_else(|| panic!("no leader within {limit:?}"))
    }
}

/// `mntr` as a map (empty if the server does not answer).
pub fn mntr(server: &Server) -> std::collections::HashMap<String, String> {
    four_letter(server.addr, "mntr")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Whether Debian's ZooKeeper is installed (CI installs it in `.ci/run`).
pub fn zookeeper_installed() -> bool {
    Path::new(ZOOKEEPER_HOME).join("bin/zkServer.sh").exists()
}

/// Starts Apache ZooKeeper 3.8 standalone with the same settings as [`paddock`].
pub fn zookeeper(extra: &str) -> Server {
    start_zookeeper(extra, false, "")
}

/// [`zookeeper`] with extra JVM flags (`JVMFLAGS`, after zkServer.sh's own `-cp`).
pub fn zookeeper_with_jvm_flags(extra: &str, jvm_flags: &str) -> Server {
    start_zookeeper(extra, false, jvm_flags)
}

/// Apache ZooKeeper 3.8 as an ensemble of one (`server.1` and
/// `standaloneEnabled=false`): it runs the quorum code, so it serves what an ensemble
/// member serves (`/zookeeper/config`, `conf`'s membership).
pub fn zookeeper_quorum_of_one() -> Server {
    start_zookeeper("", true, "")
}

fn start_zookeeper(extra: &str, quorum: bool, jvm_flags: &str) -> Server {
    assert!(
        zookeeper_installed(),
        "Apache ZooKeeper is not installed: run scripts/test.sh, which installs it \
         (or apt-get install zookeeper)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("zoo.cfg");
    let mut extra = format!("{extra}\nadmin.enableServer=false\n");
    if quorum {
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        std::fs::write(data.join("myid"), "1\n").expect("myid");
        let ports = free_ports(2);
        extra.push_str(&format!(
            "standaloneEnabled=false\ninitLimit=10\nsyncLimit=5\nserver.1=127.0.0.1:{}:{}\n",
            ports[0], ports[1]
        ));
    }
    std::fs::write(&config, common_config(dir.path(), port, &extra)).expect("config");
    let log = dir.path().join("zookeeper.log");
    let child = Command::new(Path::new(ZOOKEEPER_HOME).join("bin/zkServer.sh"))
        .arg("start-foreground")
        .arg(&config)
        .env("ZOO_LOG_DIR", dir.path())
        .env("JVMFLAGS", jvm_flags)
        .stdout(std::fs::File::create(&log).expect("log file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start zookeeper");
    wait_until_serving(child, dir, port, log)
}

/// Starts Apache ZooKeeper 3.8 standalone, like [`zookeeper`], with its AdminServer
/// on 127.0.0.1:`admin_port`. Runs the server class directly: Debian's zkServer.sh
/// leaves the servlet API, which Jetty needs, off the class path.
pub fn zookeeper_with_admin(admin_port: u16) -> Server {
    assert!(
        zookeeper_installed(),
        "Apache ZooKeeper is not installed: run scripts/test.sh, which installs it \
         (or apt-get install zookeeper)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("zoo.cfg");
    let extra = format!(
        "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={admin_port}\n"
    );
    std::fs::write(&config, common_config(dir.path(), port, &extra)).expect("config");
    let log = dir.path().join("zookeeper.log");
    let child = Command::new("java")
        .arg("-cp")
        .arg("/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar")
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&config)
        .stdout(std::fs::File::create(&log).expect("log file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start zookeeper");
    wait_until_serving(child, dir, port, log)
}

/// `GET path` over HTTP/1.0 with a bounded wait: the status and the body, or None if
/// nothing answered.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

fn wait_until_serving(child: Child, dir: tempfile::TempDir, port: u16, log: PathBuf) -> Server {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut server = Server {
        addr,
        child,
        _dir: dir,
        log,
    };
    server.wait_serving();
    server
}

impl Server {
    fn wait_serving(&mut self) {
        let server = self;
        let addr = server.addr;
        wait_until(
            Duration::from_secs(30),
            format_args!("server on {addr} did not answer ruok"),
            || {
                if !server.is_running() {
                    panic!(
                        "server exited during start-up: {}",
                        std::fs::read_to_string(&server.log).unwrap_or_default()
                    );
                }
                // Any answer means it serves (ruok may be off the whitelist).
                four_letter(addr, "ruok").is_some_and(|answer| !answer.is_empty())
            },
        );
    }
}

/// Sends a four-letter word and returns the answer, or None if nobody answered.
pub fn four_letter(addr: SocketAddr, command: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(command.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// Runs a kazoo scenario (tests/kazoo/scenarios.py) and returns its transcript.
pub fn kazoo(server: &Server, scenario: &str) -> Vec<String> {
    kazoo_hosts(&server.hosts(), scenario)
}

/// [`kazoo`] with an explicit hosts argument (`;` separates the servers of scenarios
/// that put clients on different servers).
pub fn kazoo_hosts(hosts: &str, scenario: &str) -> Vec<String> {
    run_kazoo_script("scenarios.py", &[hosts, scenario], Duration::from_secs(120))
}

/// Runs `tests/kazoo/<script>` with `args` (bounded by `limit`) and returns its output
/// lines; fails the test, with both outputs, if the script fails.
pub fn run_kazoo_script(script: &str, args: &[&str], limit: Duration) -> Vec<String> {
    require_kazoo();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kazoo")
        .join(script);
    let output = run_bounded(Command::new("python3").arg(path).args(args), limit);
    assert!(
        output.status.success(),
        "kazoo {script} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Fails the test in one line when python3 cannot import kazoo.
pub fn require_kazoo() {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        Command::new("python3")
            .args(["-c", "import kazoo"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    assert!(
        found,
        "kazoo is not installed for python3: run scripts/test.sh, which installs it \
         (or python3 -m pip install kazoo)"
    );
}

/// Runs a command with a time limit; a command that overruns is killed.
pub fn run_bounded(command: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn");
    if eventually(limit, || child.try_wait().ok().flatten()).is_none() {
        let _ = child.kill();
        panic!("{command:?} ran longer than {limit:?}");
    }
    child.wait_with_output().expect("output")
}

/// A blocking client that speaks raw frames, for tests that misbehave on purpose.
pub struct RawClient {
    pub stream: TcpStream,
}

impl RawClient {
    /// Opens a new session.
    pub fn connect(addr: SocketAddr) -> RawClient {
        let (client, response) = RawClient::handshake(addr, &Self::new_session())
            .expect("the server answered the handshake");
        assert!(response.timeout > 0, "session refused");
        client
    }

    /// A connect request for a new session with a 10 s timeout.
    pub fn new_session() -> ConnectRequest {
        ConnectRequest {
            timeout: 10_000,
            passwd: Bytes::from_static(&[0; 16]),
            read_only: Some(false),
            ..Default::default()
        }
    }

    /// A new session, or None if the server is unreachable or refuses.
    pub fn try_connect(addr: SocketAddr) -> Option<RawClient> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        let mut out = BytesMut::new();
        write_frame(&mut out, DEFAULT_MAX_FRAME, |b| {
            Self::new_session().encode(b)
        })
        .ok()?;
        stream.write_all(&out).ok()?;
        let response = ConnectResponse::from_bytes(read_frame(&mut stream)?).ok()?;
        (response.timeout > 0).then_some(RawClient { stream })
    }

    /// Sends `connect`; None if the server closed the connection without answering.
    pub fn handshake(
        addr: SocketAddr,
        connect: &ConnectRequest,
    ) -> Option<(RawClient, ConnectResponse)> {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut out = BytesMut::new();
        write_frame(&mut out, DEFAULT_MAX_FRAME, |b| connect.encode(b)).expect("frame");
        stream.write_all(&out).expect("send connect");
        let response = ConnectResponse::from_bytes(read_frame(&mut stream)?).expect("response");
        Some((RawClient { stream }, response))
    }

    pub fn send(&mut self, xid: i32, request: &Request) {
        let mut out = BytesMut::new();
        write_frame(&mut out, DEFAULT_MAX_FRAME, |b| {
            request.encode_with_header(xid, b)
        })
        .expect("frame");
        self.stream.write_all(&out).expect("send");
    }

    /// [`RawClient::call`] that reports a broken connection as `None` instead of
    /// panicking (for tests that kill servers under load).
    pub fn try_call(
        &mut self,
        xid: i32,
        request: &Request,
    ) -> Option<(ReplyHeader, Option<Response>)> {
        let mut out = BytesMut::new();
        write_frame(&mut out, DEFAULT_MAX_FRAME, |b| {
            request.encode_with_header(xid, b)
        })
        .ok()?;
        self.stream.write_all(&out).ok()?;
        loop {
            let mut r = Reader::new(read_frame(&mut self.stream)?);
            let header = ReplyHeader::decode(&mut r).ok()?;
            if header.xid != xid {
                continue;
            }
            let body = if header.err.is_ok() {
                Some(Response::decode(request.op_code(), &mut r).ok()?)
            } else {
                None
            };
            return Some((header, body));
        }
    }

    /// Sends a request and reads frames until its reply (skipping notifications).
    pub fn call(&mut self, xid: i32, request: &Request) -> (ReplyHeader, Option<Response>) {
        self.send(xid, request);
        loop {
            let mut r = Reader::new(read_frame(&mut self.stream).expect("reply"));
            let header = ReplyHeader::decode(&mut r).expect("header");
            if header.xid != xid {
                continue;
            }
            let op: OpCode = request.op_code();
            let body = header
                .err
                .is_ok()
                .then(|| Response::decode(op, &mut r).expect("body"));
            return (header, body);
        }
    }
}

/// Reads one frame's payload; None on EOF or error.
pub fn read_frame(stream: &mut TcpStream) -> Option<Bytes> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).ok()?;
    let len = usize::try_from(i32::from_be_bytes(len)).ok()?;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).ok()?;
    Some(payload.into())
}
