//! Three `paddock` servers, each in its own namespace ([`Net`]), started with
//! `ip netns exec <ns> paddock --config <cfg>` (which execs, so the child's pid is the
//! server's: signals reach it directly). Every server is killed when the cluster drops.
//!
//! The binary is `$PADDOCK_BIN`, or `target/<profile>/paddock` of this workspace, built
//! once per process with `cargo build -p paddock-server --bin paddock`.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::Error;
use crate::net::{Net, SERVERS};

/// The client port, the same in every namespace.
pub const CLIENT_PORT: u16 = 2181;

/// Timing of the servers under test.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// `tickTime`: sessions are clamped to 2..20 ticks.
    pub tick: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            tick: Duration::from_millis(500),
        }
    }
}

/// Which of a server's directories a wipe loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wiped {
    DataDir,
    DataLogDir,
}

/// Addresses of the servers: cheap to clone into every task.
#[derive(Debug, Clone)]
pub struct Topology {
    ips: Vec<Ipv4Addr>,
}

impl Topology {
    /// The client address of server `i`.
    pub fn addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from((self.ips[i], CLIENT_PORT))
    }

    /// A connect string that pins a client to server `i`.
    pub fn pinned(&self, i: usize) -> String {
        self.addr(i).to_string()
    }

    /// `mntr` of server `i` as a map; `None` if it does not answer within a second.
    pub async fn mntr(&self, i: usize) -> Option<HashMap<String, String>> {
        let text = four_letter(self.addr(i), "mntr", Duration::from_secs(1)).await?;
        let map: HashMap<String, String> = text
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        (!map.is_empty()).then_some(map)
    }

    /// The server that reports itself leader, if exactly one does.
    pub async fn leader(&self) -> Option<usize> {
        let mut leaders = Vec::new();
        for i in 0..SERVERS {
            if let Some(m) = self.mntr(i).await {
                if m.get("zk_server_state").map(String::as_str) == Some("leader") {
                    leaders.push(i);
                }
            }
        }
        (leaders.len() == 1).then(|| leaders[0])
    }

    /// Waits up to `limit` for a single leader.
    pub async fn wait_leader(&self, limit: Duration) -> Option<usize> {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if let Some(leader) = self.leader().await {
                return Some(leader);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }
}

/// Sends a four-letter word; `None` if nobody answers in time.
pub async fn four_letter(addr: SocketAddr, word: &str, limit: Duration) -> Option<String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(word.as_bytes()).await.ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        Some(answer)
    };
    tokio::time::timeout(limit, exchange).await.ok().flatten()
}

struct Server {
    namespace: String,
    /// dataDir (raft's term, vote and snapshots) and dataLogDir (the txn log).
    data: PathBuf,
    data_log: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Server {
    fn spawn(&mut self, bin: &Path) -> Result<(), Error> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespace])
            .arg(bin)
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        Ok(())
    }

    fn signal(&self, name: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .arg(format!("-{name}"))
                .arg(child.id().to_string())
                .stderr(Stdio::null())
                .status();
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A stopped process must be continued to die of SIGKILL promptly.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The servers and their network. Drop order: servers first, then the namespaces.
pub struct Cluster {
    servers: Vec<Server>,
    bin: PathBuf,
    topology: Topology,
    dir: tempfile::TempDir,
    net: Net,
}

impl Cluster {
    /// Builds the network, writes each server's zoo.cfg and starts all three; returns
    /// once every server answers `ruok` and one reports itself leader (30 s at most).
    pub async fn start(timing: Timing) -> Result<Cluster, Error> {
        let bin = paddock_bin()?;
        let net = Net::create()?;
        let dir = tempfile::Builder::new()
            .prefix("paddock-faults-")
            .tempdir()?;
        let topology = Topology {
            ips: (0..SERVERS).map(|i| net.server_ip(i)).collect(),
        };
        let server_lines: String = (0..SERVERS)
            .map(|i| format!("server.{}={}:2888:3888\n", i + 1, net.server_ip(i)))
            .collect();
        let mut servers = Vec::new();
        for i in 0..SERVERS {
            let home = dir.path().join(format!("s{}", i + 1));
            let data = home.join("data");
            // The txn log on its own "disk", as recommended, so either can be lost alone.
            let data_log = home.join("log");
            std::fs::create_dir_all(&data)?;
            std::fs::create_dir_all(&data_log)?;
            std::fs::write(data.join("myid"), format!("{}\n", i + 1))?;
            let config = home.join("zoo.cfg");
            std::fs::write(
                &config,
                format!(
                    "tickTime={}\ninitLimit=10\nsyncLimit=5\ndataDir={}\ndataLogDir={}\n\
                     clientPort={CLIENT_PORT}\nclientPortAddress={}\n4lw.commands.whitelist=*\n\
                     maxClientCnxns=0\n{server_lines}",
                    timing.tick.as_millis(),
                    data.display(),
                    data_log.display(),
                    net.server_ip(i),
                ),
            )?;
            servers.push(Server {
                namespace: net.namespace(i),
                data,
                data_log,
                config,
                log: home.join("paddock.log"),
                child: None,
            });
        }
        let mut cluster = Cluster {
            servers,
            bin,
            topology,
            dir,
            net,
        };
        for i in 0..SERVERS {
            let bin = cluster.bin.clone();
            cluster.servers[i].spawn(&bin)?;
        }
        for i in 0..SERVERS {
            cluster.wait_serving(i, Duration::from_secs(30)).await?;
        }
        if cluster
            .topology
            .wait_leader(Duration::from_secs(30))
            .await
            .is_none()
        {
            return Err(Error::Cluster("no leader within 30 s".into()));
        }
        Ok(cluster)
    }

    /// Waits until server `i` answers `ruok`.
    async fn wait_serving(&mut self, i: usize, limit: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(child) = self.servers[i].child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(Error::Cluster(format!(
                        "server {} exited during start-up ({status}): {}",
                        i + 1,
                        self.log_tail(i, 20)
                    )));
                }
            }
            let answer = four_letter(self.topology.addr(i), "ruok", Duration::from_secs(1)).await;
            if answer.is_some_and(|a| !a.is_empty()) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(Error::Cluster(format!(
            "server {} did not answer ruok within {limit:?}",
            i + 1
        )))
    }

    /// The addresses, for tasks.
    pub fn topology(&self) -> Topology {
        self.topology.clone()
    }

    /// The network, for the nemeses' packet filters.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// Where the servers' data and logs are (kept only while the cluster lives).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `SIGSTOP`.
    pub fn pause(&self, i: usize) {
        self.servers[i].signal("STOP");
    }

    /// `SIGCONT`.
    pub fn resume(&self, i: usize) {
        self.servers[i].signal("CONT");
    }

    /// `kill -9`, waiting for the process to be gone.
    pub fn kill(&mut self, i: usize) {
        self.servers[i].kill();
    }

    /// Deletes what server `i` keeps in dataDir (but its myid) or in dataLogDir, as a
    /// lost disk would; the server must be stopped.
    pub fn wipe(&self, i: usize, what: Wiped) -> std::io::Result<()> {
        let server = &self.servers[i];
        let dir = match what {
            Wiped::DataDir => &server.data,
            Wiped::DataLogDir => &server.data_log,
        };
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name() == "myid" {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }

    /// Starts server `i` again on its data after [`Cluster::kill`].
    pub async fn restart(&mut self, i: usize) -> Result<(), Error> {
        self.servers[i].kill();
        let bin = self.bin.clone();
        self.servers[i].spawn(&bin)?;
        self.wait_serving(i, Duration::from_secs(30)).await
    }

    /// The last `lines` lines of server `i`'s log.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.servers[i].log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Copies the servers' logs to `to` (for a failed run's post-mortem).
    pub fn keep_logs(&self, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for (i, server) in self.servers.iter().enumerate() {
            std::fs::copy(&server.log, to.join(format!("paddock-{}.log", i + 1)))?;
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            server.kill();
        }
    }
}

/// The server binary: `$PADDOCK_BIN`, else this workspace's, built once per process.
pub fn paddock_bin() -> Result<PathBuf, Error> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    if let Some(bin) = std::env::var_os("PADDOCK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    BUILT
        .get_or_init(|| build_paddock().map_err(|err| err.to_string()))
        .clone()
        .map_err(Error::Cluster)
}

fn build_paddock() -> Result<PathBuf, Error> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or_else(|| Error::Cluster("no workspace root".into()))?
        .to_path_buf();
    let release = !cfg!(debug_assertions);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&root)
        .args(["build", "-q", "-p", "paddock-server", "--bin", "paddock"]);
    if release {
        build.arg("--release");
    }
    let out = build.stdout(Stdio::null()).output()?;
    if !out.status.success() {
        return Err(Error::Command {
            command: "cargo build -p paddock-server --bin paddock".into(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin = target
        .join(if release { "release" } else { "debug" })
        .join("paddock");
    if bin.exists() {
        Ok(bin)
    } else {
        Err(Error::Cluster(format!("{} was not built", bin.display())))
    }
}
