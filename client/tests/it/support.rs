//! Where the tests find a server: `PADDOCK_TEST_SERVER=host:port` (and
//! `PADDOCK_TEST_SERVERS=h:p,h:p,h:p` for an ensemble), or else one started here on a
//! free loopback port with a temporary dataDir: Apache ZooKeeper 3.8 for the `it` test
//! binary, Paddock for the `paddock` one (`crate::TARGET`), with the same zoo.cfg.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use paddock_client::{Client, ConnectOptions, CreateMode, Error, SessionState};

/// Debian's layout, as zkEnv.sh builds it: the conf dir (log4j.properties) and the
/// server jar, whose manifest names the jars it needs.
const ZK_CLASSPATH: &str = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar";
const ZK_TLS_CLASSPATH: &str = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:\
                                /usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar";
const ZK_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
/// ZooKeeper's tick; sessions may last 2 to 60 ticks (1 s to 30 s).
const TICK_MS: u64 = 500;

/// The server a test binary runs its tests against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    ZooKeeper,
    Paddock,
}

/// A server process (ZooKeeper or Paddock), stopped when dropped.
pub struct ZkServer {
    /// `sh` runs java and kills it (and removes the dataDir) when this pipe closes: on
    /// drop, or when the test process exits however it exits.
    wrapper: Child,
    stdin: Option<ChildStdin>,
    pub addr: String,
    /// The server's directory, with `server.pid` (the server process, for kill -9).
    dir: PathBuf,
}

/// The settings every test server shares.
fn common_config(dir: &std::path::Path, port: u16) -> String {
    format!(
        "tickTime={TICK_MS}\n\
         dataDir={dir}/data\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         maxClientCnxns=0\n\
         minSessionTimeout={min}\n\
         maxSessionTimeout={max}\n\
         4lw.commands.whitelist=*\n\
         extendedTypesEnabled=true\n\
         forceSync=no\n\
         enforceQuota=true\n\
         admin.enableServer=false\n",
        dir = dir.display(),
        min = 2 * TICK_MS,
        max = 60 * TICK_MS,
    )
}

fn temp_dir() -> PathBuf {
    tempfile::Builder::new()
        .prefix("paddock-client-zk-")
        .tempdir()
        .expect("temp dir")
        .keep()
}

impl ZkServer {
    /// A standalone server.
    pub fn start() -> ZkServer {
        let dir = temp_dir();
        let port = free_port();
        std::fs::write(dir.join("zoo.cfg"), common_config(&dir, port)).expect("write zoo.cfg");
        let server = ZkServer::launch(&dir, port);
        server.wait_until_serving(Duration::from_secs(60));
        server
    }

    /// A standalone server with `extra` zoo.cfg lines (ZooKeeper gets netty's codec
    /// and resolver jars too, which its TLS code needs and Debian's zookeeper.jar
    /// leaves out of its class path).
    pub fn start_with(extra: &str) -> ZkServer {
        let dir = temp_dir();
        let port = free_port();
        std::fs::write(
            dir.join("zoo.cfg"),
            format!("{}{extra}\n", common_config(&dir, port)),
        )
        .expect("write zoo.cfg");
        let server = ZkServer::launch_with(&dir, port, ZK_TLS_CLASSPATH);
        server.wait_until_serving(Duration::from_secs(60));
        server
    }

    /// Runs the test binary's server (`crate::TARGET`) on `dir/zoo.cfg`.
    fn launch(dir: &std::path::Path, port: u16) -> ZkServer {
        ZkServer::launch_with(dir, port, ZK_CLASSPATH)
    }

    fn launch_with(dir: &std::path::Path, port: u16, zk_classpath: &str) -> ZkServer {
        // The wrapper starts the server, and kills it (and removes the dataDir) when its
        // stdin closes: on drop, or when the test process exits however it exits.
        let script = r#"dir="$1"; shift
"$@" >"$dir/server.out" 2>&1 &
pid=$!
echo "$pid" >"$dir/server.pid"
cat >/dev/null
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -rf "$dir""#;
        let mut command = Command::new("sh");
        command.arg("-c").arg(script).arg("server-wrapper").arg(dir);
        match crate::TARGET {
            Target::ZooKeeper => {
                let classpath = std::env::var("PADDOCK_ZK_CLASSPATH")
                    .unwrap_or_else(|_| zk_classpath.to_owned());
                require_zookeeper(&classpath);
                command
                    .arg("java")
                    .arg("-Xmx256m")
                    // TTL and container nodes checked every 500 ms (default: a minute),
                    // as Paddock checks them every tick.
                    .arg("-Dznode.container.checkIntervalMs=500")
                    .arg("-cp")
                    .arg(classpath)
                    .arg(ZK_MAIN)
                    .arg(dir.join("zoo.cfg"));
            }
            Target::Paddock => {
                command
                    .arg(paddock_binary())
                    .arg("--config")
                    .arg(dir.join("zoo.cfg"));
            }
        }
        let mut wrapper = command
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn the server (is ZooKeeper installed?)");
        let stdin = wrapper.stdin.take();
        ZkServer {
            wrapper,
            stdin,
            addr: format!("127.0.0.1:{port}"),
            dir: dir.to_owned(),
        }
    }

    /// Kills the server process with SIGKILL, as a crash would; the wrapper then only
    /// removes the directory on drop.
    pub fn kill9(&self) {
        self.signal("KILL");
    }

    /// Sends the server process `SIG<name>` (STOP and CONT pause and resume it: to its
    /// clients and peers, a server cut off and then back).
    pub fn signal(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid = loop {
            let pid = std::fs::read_to_string(self.dir.join("server.pid")).unwrap_or_default();
            if !pid.trim().is_empty() || Instant::now() > deadline {
                break pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let status = Command::new("kill")
            .args([format!("-{name}").as_str(), pid.trim()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} {} failed", pid.trim());
    }

    /// Polls the `srvr` four-letter word until the server reports its mode (standalone,
    /// leader or follower): only then does it serve clients.
    fn wait_until_serving(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if four_letter(&self.addr, "srvr").is_some_and(|answer| answer.contains("Mode: ")) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let output = std::fs::read_to_string(self.dir.join("server.out")).unwrap_or_default();
        let tail: Vec<&str> = output.lines().rev().take(40).collect();
        panic!(
            "ZooKeeper at {} did not come up within {limit:?}; the end of its output:\n{}",
            self.addr,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
}

/// A ZooKeeper ensemble of `n` servers on loopback ports.
pub fn start_ensemble(n: usize) -> Vec<ZkServer> {
    let ports = free_ports(3 * n);
    let peers: Vec<(PathBuf, u16, u16, u16)> = (0..n)
        .map(|i| (temp_dir(), ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]))
        .collect();
    let members: String = peers
        .iter()
        .enumerate()
        .map(|(i, (_, _, quorum, election))| {
            format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
        })
        .collect();
    let servers: Vec<ZkServer> = peers
        .iter()
        .enumerate()
        .map(|(i, (dir, port, _, _))| {
            std::fs::create_dir_all(dir.join("data")).expect("data dir");
            std::fs::write(dir.join("data/myid"), format!("{}\n", i + 1)).expect("myid");
            let cfg = format!(
                "{}initLimit=10\nsyncLimit=5\n{members}",
                common_config(dir, *port)
            );
            std::fs::write(dir.join("zoo.cfg"), cfg).expect("write zoo.cfg");
            ZkServer::launch(dir, *port)
        })
        .collect();
    for server in &servers {
        server.wait_until_serving(Duration::from_secs(60));
    }
    servers
}

/// Fails the test in one line when the classpath's ZooKeeper jar or java is missing.
fn require_zookeeper(classpath: &str) {
    let jar_missing = classpath
        .split(':')
        .any(|part| part.ends_with(".jar") && !std::path::Path::new(part).exists());
    let java_missing = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err();
    assert!(
        !jar_missing && !java_missing,
        "Apache ZooKeeper is not installed: run scripts/test.sh, which installs it \
         (or apt-get install zookeeper)"
    );
}

/// Fails the test in one line when python3 cannot import kazoo.
pub fn require_kazoo() {
    static FOUND: OnceLock<bool> = OnceLock::new();
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

impl Drop for ZkServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.wrapper.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.wrapper.kill();
    }
}

/// The `paddock` binary of this build (`target/<profile>/paddock`, next to the test
/// binary's `deps/`), built first if this test run did not build it.
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

pub use paddock_testkit::free_port;
use paddock_testkit::free_ports;

pub fn four_letter(addr: &str, word: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

static SHARED: OnceLock<ZkServer> = OnceLock::new();

/// The server every test uses: `PADDOCK_TEST_SERVER`, or one ZooKeeper started for the
/// whole test binary.
pub async fn server() -> String {
    if let Ok(addr) = std::env::var("PADDOCK_TEST_SERVER") {
        return addr;
    }
    tokio::task::spawn_blocking(|| SHARED.get_or_init(ZkServer::start).addr.clone())
        .await
        .expect("start ZooKeeper")
}

/// `PADDOCK_TEST_SERVERS`, if an ensemble was provided.
pub fn ensemble() -> Option<String> {
    std::env::var("PADDOCK_TEST_SERVERS").ok()
}

/// A path no other test (or earlier run) uses.
pub fn unique(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("/it-{name}-{}-{n}-{nanos}", std::process::id())
}

pub fn options(session_timeout_ms: u64) -> ConnectOptions {
    ConnectOptions::with_session_timeout(Duration::from_millis(session_timeout_ms))
}

pub async fn connect() -> Client {
    connect_with(options(10_000)).await
}

pub async fn connect_with(options: ConnectOptions) -> Client {
    init_tracing();
    Client::connect(&server().await, options)
        .await
        .expect("connect")
}

/// Logs to the test's output when `RUST_LOG` is set.
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A client chrooted at a fresh node, so tests never see each other's nodes.
pub async fn sandbox(name: &str) -> (Client, String) {
    sandbox_with(name, options(10_000)).await
}

pub async fn sandbox_with(name: &str, options: ConnectOptions) -> (Client, String) {
    let root = unique(name);
    let admin = connect().await;
    admin
        .create(&root, b"", CreateMode::Persistent)
        .await
        .expect("create sandbox");
    admin.close().await.expect("close");
    let client = Client::connect(&format!("{}{root}", server().await), options)
        .await
        .expect("connect chrooted");
    (client, root)
}

/// Waits (bounded) until the client reports `want`.
pub async fn wait_for_state(client: &Client, want: SessionState, limit: Duration) {
    let mut states = client.state_watcher();
    let reached = tokio::time::timeout(limit, states.wait_for(|s| *s == want)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "state {want:?} not reached within {limit:?}; now {:?}",
        client.state()
    );
}

/// Bounds a future in time so that a hang fails the test instead of stalling it.
pub async fn within<T>(limit: Duration, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, fut)
        .await
        .expect("did not finish in time")
}

pub fn keeper(code: paddock_client::ErrorCode) -> impl Fn(&Error) -> bool {
    move |err| matches!(err, Error::Keeper(c) if *c == code)
}
