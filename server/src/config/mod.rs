//! `zoo.cfg`, ZooKeeper's configuration file: read once at start-up, checked, and handed
//! down as typed values, so no other module parses a string or picks a default.
//!
//! The format is Java properties as ZooKeeper's `QuorumPeerConfig` reads them: `key=value`
//! (or `key: value`, or `key value`), `#` and `!` comment lines, `\` line continuations and
//! escapes, keys and values trimmed, and the last of a repeated key wins. The keys are
//! ZooKeeper 3.8's (`QuorumPeerConfig.parseProperties` and the administrator's guide), so
//! an existing `zoo.cfg` works: keys Paddock uses are parsed and validated, keys of the
//! Java implementation with no counterpart here are accepted in silence, keys whose feature
//! Paddock lacks (TLS, SASL, read-only mode, ...) are accepted with a warning, and keys that
//! would change the quorum in a way Paddock cannot honour are errors.
//!
//! Where Paddock departs from ZooKeeper:
//! - `autopurge.purgeInterval` defaults to 1 hour (ZooKeeper: 0, never purge), so a
//!   default install does not fill its disk with snapshots and logs.
//! - Relative paths are resolved against the config file's directory (ZooKeeper: the
//!   working directory), so a server starts the same from anywhere.
//! - Server ids must be 1..=255: raft reserves 0, and session ids carry the server id in
//!   their top byte (as ZooKeeper's `SessionTrackerImpl` does).
//! - `commitBatchMaxEntries` is Paddock's own: the most txns written per fsync.
//! - `superDigest` is accepted as a short form of `DigestAuthenticationProvider.superDigest`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod admin;
mod ensemble;
mod keys;
mod properties;
#[cfg(test)]
mod tests;
mod tls;
mod values;

pub use self::admin::{AdminServer, HttpListen};
use self::ensemble::*;
use self::keys::*;
use self::properties::*;
use self::tls::*;
use self::values::*;

pub use self::tls::{ClientAuth, ClientTls, PemStores, QuorumTls};

/// The server's configuration, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// ZooKeeper's unit of time (`tickTime`): sessions expire on tick boundaries, and the
    /// session-timeout defaults and `initLimit`/`syncLimit` are counted in ticks.
    pub tick_time: Duration,
    /// Where snapshots and the `myid` file live (`dataDir`).
    pub data_dir: PathBuf,
    /// Where the txn log lives (`dataLogDir`, default `dataDir`): a log on its own device
    /// keeps fsync latency clear of snapshot writes.
    pub data_log_dir: PathBuf,
    /// Where plain client connections are accepted: `clientPortAddress:clientPort`, or
    /// the client address on this server's own `server.N` line; `None` when clients
    /// connect only over TLS.
    pub client_addr: Option<SocketAddr>,
    /// Where TLS client connections are accepted
    /// (`secureClientPortAddress:secureClientPort`).
    pub secure_client_addr: Option<SocketAddr>,
    /// The plain client port also takes TLS connections (`portUnification`).
    pub port_unification: bool,
    /// Certificates for TLS clients; set when a port takes TLS connections.
    pub client_tls: Option<ClientTls>,
    /// Mutual TLS on peer links (`sslQuorum=true`).
    pub quorum_tls: Option<QuorumTls>,
    /// How many connections one client IP may hold at once (`maxClientCnxns`), against
    /// file-descriptor exhaustion; `None` means no limit (ZooKeeper's 0).
    pub max_client_cnxns: Option<NonZeroU32>,
    /// The shortest session timeout a client may negotiate; shorter requests are raised.
    pub min_session_timeout: Duration,
    /// The longest session timeout a client may negotiate; longer requests are lowered.
    pub max_session_timeout: Duration,
    /// Txns logged between snapshots (`snapCount`); each server snapshots at a random
    /// point in `[snapCount/2+1, snapCount]` so an ensemble does not stall all at once.
    pub snap_count: u32,
    /// Deleting old snapshots and logs (`autopurge.*`).
    pub autopurge: Autopurge,
    /// Whether the txn log is fsynced before a write is acknowledged (`forceSync`).
    /// Off trades durability on power loss for latency.
    pub force_sync: bool,
    /// Txn-log files grow in blocks of this many bytes (`preAllocSize`, given in KiB) so
    /// appends rarely change the file size, which would cost a metadata write per fsync.
    /// 0: no preallocation.
    pub pre_alloc_size: u64,
    /// Requests in flight on this server before it stops reading from client sockets
    /// (`globalOutstandingLimit`), so a burst cannot exhaust memory.
    pub global_outstanding_limit: u32,
    /// The four-letter-word commands answered on the client port
    /// (`4lw.commands.whitelist`).
    pub four_letter_words: FourLetterWords,
    /// The largest record accepted, in bytes (`jute.maxbuffer`): ZooKeeper's sanity limit
    /// on znode data and on every request and response, so it also bounds frames.
    pub jute_max_buffer: u32,
    /// The most bytes one connection may hold waiting to go out — replies not yet
    /// written and notifications not yet taken (`maxClientOutgoingBytes`, Paddock's
    /// own): past it the server stops reading the connection's requests, and closes a
    /// connection whose events overflow it or whose output does not move for its
    /// session timeout. One reply larger than the bound is still sent whole.
    pub max_client_outgoing_bytes: u32,
    /// Whether TTL nodes may be created (`extendedTypesEnabled`). Their ephemeral-owner
    /// encoding leaves room for server ids below 255 only.
    pub extended_types_enabled: bool,
    /// Refuse creates and setData past a hard quota (`enforceQuota`, ZooKeeper's
    /// `zookeeper.enforceQuota`). Checked as txns are applied, so every server of an
    /// ensemble must agree.
    pub enforce_quota: bool,
    /// The `super` user who bypasses every ACL; `None` for no such user.
    pub super_digest: Option<SuperDigest>,
    /// The most txns the log writer puts under one fsync (`commitBatchMaxEntries`):
    /// larger batches mean fewer fsyncs, but a longer wait for the first write in a batch.
    pub group_commit_max_entries: u32,
    /// This server's id: from `dataDir/myid` in an ensemble, 1 when standalone (the id
    /// ZooKeeper gives a standalone server's session tracker).
    pub server_id: u64,
    /// The ensemble from the `server.N` lines; `None` when standalone.
    pub ensemble: Option<Ensemble>,
    /// The HTTP listeners for operators (`admin.*`, `metricsProvider.*`).
    pub admin: AdminServer,
    /// What the operator should hear about but that does not stop the server; the
    /// binary logs them with [`Config::log_warnings`].
    pub warnings: Vec<ConfigWarning>,
}

/// The servers of a replicated deployment and the limits that govern them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ensemble {
    /// Every `server.N` line by id, participants and observers.
    pub servers: BTreeMap<u64, ServerSpec>,
    /// Ticks a follower may take to connect to and catch up with a leader (`initLimit`).
    pub init_limit: u32,
    /// Ticks a follower may fall behind the leader before it is dropped (`syncLimit`).
    pub sync_limit: u32,
    /// Listen for peers on every interface instead of only this server's own host
    /// (`quorumListenOnAllIPs`), for hosts whose listed name is a NAT or public address.
    pub quorum_listen_on_all_ips: bool,
}

impl Ensemble {
    /// The membership as ZooKeeper writes it to `/zookeeper/config` and under `conf`'s
    /// `membership:` (`QuorumMaj.toString`): a `server.N=` line per server by id, then
    /// the config's version — 0 for a static config, which this always is. A server's
    /// client address is shown only when its line gives one.
    pub fn membership(&self) -> String {
        let mut out = String::new();
        for server in self.servers.values() {
            let peer = HostPort {
                host: server.host.clone(),
                port: server.peer_port,
            };
            out.push_str(&format!(
                "server.{}={peer}:{}:{}",
                server.id, server.election_port, server.role
            ));
            if let Some(client) = &server.client {
                out.push_str(&format!(";{client}"));
            }
            out.push('\n');
        }
        out.push_str("version=0");
        out
    }

    /// The servers that vote.
    pub fn participants(&self) -> impl Iterator<Item = &ServerSpec> {
        self.servers
            .values()
            .filter(|server| server.role == PeerType::Participant)
    }

    /// The servers that replicate without voting.
    pub fn observers(&self) -> impl Iterator<Item = &ServerSpec> {
        self.servers
            .values()
            .filter(|server| server.role == PeerType::Observer)
    }
}

/// One `server.N=host:peerPort:electionPort[:role][;[clientHost:]clientPort]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub id: u64,
    /// The name or address peers reach this server at. Kept unresolved: DNS may change
    /// while the ensemble runs, so the transport resolves it when it connects.
    pub host: String,
    /// The port of the replication protocol between servers.
    pub peer_port: u16,
    /// ZooKeeper's leader-election port; kept so ZooKeeper configs keep their meaning,
    /// and, as there, it must differ from `peer_port`.
    pub election_port: u16,
    pub role: PeerType,
    /// The client address of ZooKeeper 3.5's `;[host:]port` suffix (host defaults to
    /// 0.0.0.0); for this server it decides [`Config::client_addr`].
    pub client: Option<HostPort>,
}

/// A host, unresolved, and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Whether a server votes (`participant`) or only replicates (`observer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerType {
    Participant,
    Observer,
}

impl fmt::Display for PeerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PeerType::Participant => "participant",
            PeerType::Observer => "observer",
        })
    }
}

/// The purge of old snapshots and txn logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Autopurge {
    /// Snapshots kept, with the logs needed to replay from the oldest (at least 3, so a
    /// corrupt newest snapshot still leaves one to recover from).
    pub snap_retain_count: u32,
    /// How often the purge runs; `None` never.
    pub interval: Option<Duration>,
}

/// The four-letter-word commands a server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FourLetterWords {
    /// `*`: every command.
    All,
    /// These commands only; `srvr` is always among them, since `zkServer.sh status`
    /// depends on it.
    Only(BTreeSet<String>),
}

impl FourLetterWords {
    pub fn is_enabled(&self, command: &str) -> bool {
        match self {
            FourLetterWords::All => true,
            FourLetterWords::Only(commands) => commands.contains(command),
        }
    }
}

/// The commands ZooKeeper 3.8 knows (`FourLetterCommands`).
pub(super) const FOUR_LETTER_WORDS: [&str; 18] = [
    "conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro", "mntr", "ruok", "srst",
    "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
];

/// The super user's credentials as ZooKeeper's `DigestAuthenticationProvider` generates
/// them: `user:base64(sha1("user:password"))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuperDigest {
    pub user: String,
    pub digest: String,
}

impl fmt::Display for SuperDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.user, self.digest)
    }
}

/// Something the operator should hear about that does not stop the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// Neither Paddock nor ZooKeeper 3.8 knows the key; most likely a typo.
    UnknownKey { key: String },
    /// The key appears more than once; the last value wins, as in Java.
    DuplicateKey { key: String },
    /// A ZooKeeper feature Paddock does not have; the setting changes nothing.
    NoEffect { key: String, reason: &'static str },
    /// `autopurge.snapRetainCount` below 3 was raised to 3, as ZooKeeper does.
    SnapRetainCountRaised { given: i64 },
    /// `snapCount` below 2 was raised to 2, as ZooKeeper does.
    SnapCountRaised { given: i64 },
    /// A name in `4lw.commands.whitelist` that is no command.
    UnknownFourLetterWord { word: String },
    /// `peerType` disagrees with this server's `server.N` line; the line wins.
    PeerTypeMismatch {
        configured: PeerType,
        listed: PeerType,
    },
    /// One or two voters: losing any server stops the ensemble.
    NoFaultTolerance { participants: usize },
    /// An even number of voters tolerates no more failures than one fewer.
    EvenParticipants { participants: usize },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::UnknownKey { key } => write!(f, "unknown key {key}, ignored"),
            ConfigWarning::DuplicateKey { key } => {
                write!(f, "{key} is set more than once; the last value wins")
            }
            ConfigWarning::NoEffect { key, reason } => {
                write!(f, "{key} has no effect in Paddock: {reason}")
            }
            ConfigWarning::SnapRetainCountRaised { given } => write!(
                f,
                "invalid autopurge.snapRetainCount {given}, using the minimum of 3"
            ),
            ConfigWarning::SnapCountRaised { given } => {
                write!(f, "snapCount {given} is below 2, using 2")
            }
            ConfigWarning::UnknownFourLetterWord { word } => write!(
                f,
                "{word:?} in 4lw.commands.whitelist is not a four-letter-word command"
            ),
            ConfigWarning::PeerTypeMismatch { configured, listed } => write!(
                f,
                "peerType is {configured} but this server's server.N line says {listed}; \
                 using {listed}"
            ),
            ConfigWarning::NoFaultTolerance { participants } => write!(
                f,
                "{participants} participant(s): no server failure will be tolerated; \
                 you need at least 3 servers"
            ),
            ConfigWarning::EvenParticipants { participants } => write!(
                f,
                "{participants} participants: an even number tolerates no more failures \
                 than one fewer; consider an odd number"
            ),
        }
    }
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: &'static str },
    #[error("invalid value {value:?} for {key}: expected {expected}")]
    InvalidValue {
        key: String,
        value: String,
        expected: String,
    },
    #[error("invalid key {key:?}: expected {expected}")]
    InvalidKey { key: String, expected: &'static str },
    #[error("{key} is not set")]
    Missing { key: &'static str },
    /// ZooKeeper refuses a config without tickTime too ("tickTime is not set"): every
    /// timeout is counted in ticks, so a silent default would hide a typo.
    #[error(
        "tickTime is not set: add a line such as tickTime=2000 (milliseconds; session \
         timeouts default to 2 to 20 ticks)"
    )]
    MissingTickTime,
    #[error("{key} is not supported: {reason}")]
    Unsupported { key: String, reason: &'static str },
    #[error(
        "minSessionTimeout ({} ms) must not be larger than maxSessionTimeout ({} ms)",
        min.as_millis(),
        max.as_millis()
    )]
    SessionTimeoutsInverted { min: Duration, max: Duration },
    #[error("clientPortAddress is set but clientPort is not set")]
    ClientPortAddressWithoutPort,
    #[error("secureClientPortAddress is set but secureClientPort is not set")]
    SecureClientPortAddressWithoutPort,
    #[error("neither clientPort nor secureClientPort is set")]
    NoClientPort,
    #[error(
        "{path} is not a PEM file ({}): Paddock reads PEM key and trust stores only; \
         convert the store (openssl, keytool) and set {key}=PEM",
        given.as_deref().map_or("its name does not end in .pem".to_owned(), |t| format!("type {t}"))
    )]
    NotPem {
        key: String,
        path: String,
        given: Option<String>,
    },
    #[error("cannot resolve {host:?} for {key}: {source}")]
    Unresolvable {
        key: &'static str,
        host: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "client address {configured} (clientPortAddress, clientPort) differs from {listed} \
         on this server's server.{id} line"
    )]
    ClientAddressConflict {
        id: u64,
        configured: SocketAddr,
        listed: SocketAddr,
    },
    #[error("server.{id}: the peer port and the election port must differ")]
    SamePeerAndElectionPort { id: u64 },
    #[error("server.{first} and server.{second} both use {addr}")]
    DuplicateAddress {
        first: u64,
        second: u64,
        addr: HostPort,
    },
    #[error("the server.N lines list observers but no participants")]
    NoParticipants,
    #[error(
        "{} is missing: with server.N lines, it must hold this server's id",
        path.display()
    )]
    MyidMissing { path: PathBuf },
    #[error("{} holds {content:?}: expected a server id from 1 to 255", path.display())]
    InvalidMyid { path: PathBuf, content: String },
    #[error("this server's id {id} (from myid) has no server.{id} line")]
    MyidNotInServers { id: u64 },
    #[error("extendedTypesEnabled needs a server id below 255, this server's is {id}")]
    ServerIdTooLargeForExtendedTypes { id: u64 },
}

impl Config {
    /// Reads and validates a `zoo.cfg`; relative paths in it are taken from its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base_dir = path.parent().unwrap_or(Path::new("."));
        Config::parse(&decode(bytes), base_dir)
    }

    /// Validates the text of a `zoo.cfg`; relative paths are taken from `base_dir`. Reads
    /// `dataDir/myid` when there are `server.N` lines.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        Config::parse_with_myid(text, base_dir, read_myid)
    }

    /// [`Config::parse`] with the `myid` read left to the caller: `Ok(None)` when the
    /// file does not exist.
    fn parse_with_myid(
        text: &str,
        base_dir: &Path,
        myid: impl FnOnce(&Path) -> Result<Option<String>, ConfigError>,
    ) -> Result<Config, ConfigError> {
        let mut settings = Draft::new(base_dir);
        for (key, value) in last_values(read_properties(text)?, &mut settings.warnings) {
            settings.apply(&key, &value)?;
        }
        settings.finish(myid)
    }

    /// True when there are no `server.N` lines.
    pub fn is_standalone(&self) -> bool {
        self.ensemble.is_none()
    }

    /// This server's own `server.N` line; `None` when standalone.
    pub fn me(&self) -> Option<&ServerSpec> {
        self.ensemble
            .as_ref()
            .and_then(|ensemble| ensemble.servers.get(&self.server_id))
    }

    /// Whether this server votes; a standalone server does.
    pub fn role(&self) -> PeerType {
        self.me().map_or(PeerType::Participant, |me| me.role)
    }

    /// Logs every warning through `tracing`.
    pub fn log_warnings(&self) {
        for warning in &self.warnings {
            tracing::warn!("zoo.cfg: {warning}");
        }
    }
}

/// Paddock's own default for `autopurge.purgeInterval`, in hours.
pub(super) const DEFAULT_PURGE_INTERVAL_HOURS: u64 = 1;
/// 16 MiB: sixteen replies of a full jute.maxbuffer, or some 100,000 watch events.
pub(super) const DEFAULT_MAX_CLIENT_OUTGOING_BYTES: u32 = 16 << 20;
/// ZooKeeper's floor for `autopurge.snapRetainCount`.
pub(super) const MIN_SNAP_RETAIN_COUNT: u32 = 3;
/// The largest server id: raft reserves 0, and session ids keep the id in one byte.
pub(super) const MAX_SERVER_ID: u64 = 255;
pub(super) const SERVER_FORMAT: &str =
    "host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]";
pub(super) const PORT_RANGE: &str = "a port number from 1 to 65535";
