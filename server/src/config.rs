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
    /// Where client connections are accepted: `clientPortAddress:clientPort`, or the
    /// client address on this server's own `server.N` line.
    pub client_addr: SocketAddr,
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
const FOUR_LETTER_WORDS: [&str; 18] = [
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
        let mut settings = Settings {
            base_dir: base_dir.to_owned(),
            ..Settings::default()
        };
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
const DEFAULT_PURGE_INTERVAL_HOURS: u64 = 1;
/// 16 MiB: sixteen replies of a full jute.maxbuffer, or some 100,000 watch events.
const DEFAULT_MAX_CLIENT_OUTGOING_BYTES: u32 = 16 << 20;
/// ZooKeeper's floor for `autopurge.snapRetainCount`.
const MIN_SNAP_RETAIN_COUNT: u32 = 3;
/// The largest server id: raft reserves 0, and session ids keep the id in one byte.
const MAX_SERVER_ID: u64 = 255;
const SERVER_FORMAT: &str =
    "host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]";
const PORT_RANGE: &str = "a port number from 1 to 65535";

/// Values as read, before the checks that span several keys.
#[derive(Default)]
struct Settings {
    base_dir: PathBuf,
    tick_time_ms: Option<u32>,
    init_limit: Option<u32>,
    sync_limit: Option<u32>,
    data_dir: Option<PathBuf>,
    data_log_dir: Option<PathBuf>,
    client_port: Option<u16>,
    client_port_address: Option<String>,
    max_client_cnxns: Option<u32>,
    min_session_timeout_ms: Option<u32>,
    max_session_timeout_ms: Option<u32>,
    snap_count: Option<u32>,
    snap_retain_count: Option<u32>,
    purge_interval_hours: Option<i64>,
    force_sync: Option<bool>,
    pre_alloc_size: Option<u64>,
    global_outstanding_limit: Option<u32>,
    four_letter_words: Option<FourLetterWords>,
    jute_max_buffer: Option<u32>,
    max_client_outgoing_bytes: Option<u32>,
    extended_types_enabled: Option<bool>,
    enforce_quota: Option<bool>,
    super_digest: Option<SuperDigest>,
    group_commit_max_entries: Option<u32>,
    peer_type: Option<PeerType>,
    quorum_listen_on_all_ips: Option<bool>,
    servers: BTreeMap<u64, ServerSpec>,
    warnings: Vec<ConfigWarning>,
}

impl Settings {
    /// Parses one key's value; the checks that span keys wait for [`Settings::finish`].
    fn apply(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        match key {
            "tickTime" => self.tick_time_ms = Some(int(key, value, 1)?),
            "initLimit" => self.init_limit = Some(int(key, value, 1)?),
            "syncLimit" => self.sync_limit = Some(int(key, value, 1)?),
            "dataDir" => self.data_dir = Some(self.dir(key, value)?),
            "dataLogDir" => self.data_log_dir = Some(self.dir(key, value)?),
            "clientPort" => self.client_port = Some(port(key, value)?),
            "clientPortAddress" => {
                if value.is_empty() {
                    return Err(invalid(key, value, "an IP address or host name"));
                }
                self.client_port_address = Some(value.to_owned());
            }
            "maxClientCnxns" => self.max_client_cnxns = Some(int(key, value, 0)?),
            "minSessionTimeout" => self.min_session_timeout_ms = Some(int(key, value, 1)?),
            "maxSessionTimeout" => self.max_session_timeout_ms = Some(int(key, value, 1)?),
            "snapCount" => {
                let given = java_int(key, value)?;
                self.snap_count = Some(if given < 2 {
                    self.warnings.push(ConfigWarning::SnapCountRaised {
                        given: given.into(),
                    });
                    2
                } else {
                    given.unsigned_abs()
                });
            }
            "autopurge.snapRetainCount" => {
                let given = java_int(key, value)?;
                self.snap_retain_count = Some(match u32::try_from(given) {
                    Ok(count) if count >= MIN_SNAP_RETAIN_COUNT => count,
                    _ => {
                        self.warnings.push(ConfigWarning::SnapRetainCountRaised {
                            given: given.into(),
                        });
                        MIN_SNAP_RETAIN_COUNT
                    }
                });
            }
            // Zero or less turns the purge off, as in ZooKeeper.
            "autopurge.purgeInterval" => {
                self.purge_interval_hours = Some(java_int(key, value)?.into());
            }
            "forceSync" => self.force_sync = Some(yes_no(key, value)?),
            "preAllocSize" => {
                let kib: u64 = value
                    .parse()
                    .map_err(|_| invalid(key, value, "a size in KiB (a non-negative integer)"))?;
                let bytes = kib
                    .checked_mul(1024)
                    .ok_or_else(|| invalid(key, value, "a size in KiB below 2^54"))?;
                self.pre_alloc_size = Some(bytes);
            }
            "globalOutstandingLimit" => self.global_outstanding_limit = Some(int(key, value, 1)?),
            "4lw.commands.whitelist" => {
                self.four_letter_words = Some(four_letter_words(value, &mut self.warnings));
            }
            "jute.maxbuffer" => self.jute_max_buffer = Some(java_decode(key, value)?),
            "maxClientOutgoingBytes" => {
                self.max_client_outgoing_bytes = Some(java_decode(key, value)?);
            }
            "extendedTypesEnabled" => self.extended_types_enabled = Some(boolean(key, value)?),
            "enforceQuota" | "zookeeper.enforceQuota" => {
                self.enforce_quota = Some(boolean(key, value)?);
            }
            "superDigest" | "DigestAuthenticationProvider.superDigest" => {
                self.super_digest = Some(super_digest(key, value)?);
            }
            "commitBatchMaxEntries" => self.group_commit_max_entries = Some(int(key, value, 1)?),
            "peerType" => {
                self.peer_type = Some(match value.to_ascii_lowercase().as_str() {
                    "participant" => PeerType::Participant,
                    "observer" => PeerType::Observer,
                    _ => return Err(invalid(key, value, "participant or observer")),
                });
            }
            "quorumListenOnAllIPs" => self.quorum_listen_on_all_ips = Some(boolean(key, value)?),
            // A raft group runs one pipeline at any size, so "standalone" changes nothing.
            "standaloneEnabled" => {
                boolean(key, value)?;
            }
            "reconfigEnabled" => {
                if boolean(key, value)? {
                    self.no_effect(key, "dynamic reconfiguration is not supported");
                }
            }
            "electionAlg" => {
                if java_int(key, value)? != 3 {
                    return Err(invalid(
                        key,
                        value,
                        "3, the only algorithm ZooKeeper supports",
                    ));
                }
            }
            "dynamicConfigFile" => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    reason: "put the server.N lines in this file",
                })
            }
            _ => self.apply_other(key, value)?,
        }
        Ok(())
    }

    /// Server lines, ZooKeeper's keys Paddock has no use for, and unknown keys.
    fn apply_other(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        if let Some(id) = key.strip_prefix("server.") {
            let id = server_id(key, id)?;
            let server = parse_server(key, id, value)?;
            self.servers.insert(id, server);
        } else if key.starts_with("group.") || key.starts_with("weight.") {
            return Err(ConfigError::Unsupported {
                key: key.to_owned(),
                reason: "hierarchical quorums are not supported",
            });
        } else if let Some(reason) = no_effect_reason(key) {
            if !leaves_feature_off(value) {
                self.no_effect(key, reason);
            }
        } else if key == "DigestAuthenticationProvider.digestAlg" {
            if !value.eq_ignore_ascii_case("SHA1") {
                self.no_effect(key, "digests are always SHA1");
            }
        } else if !is_ignored(key) {
            self.warnings.push(ConfigWarning::UnknownKey {
                key: key.to_owned(),
            });
        }
        Ok(())
    }

    fn no_effect(&mut self, key: &str, reason: &'static str) {
        self.warnings.push(ConfigWarning::NoEffect {
            key: key.to_owned(),
            reason,
        });
    }

    fn dir(&self, key: &str, value: &str) -> Result<PathBuf, ConfigError> {
        if value.is_empty() {
            return Err(invalid(key, value, "a directory path"));
        }
        Ok(self.base_dir.join(value))
    }

    /// Defaults and the checks that span keys.
    fn finish(
        mut self,
        myid: impl FnOnce(&Path) -> Result<Option<String>, ConfigError>,
    ) -> Result<Config, ConfigError> {
        let tick_ms = u64::from(self.tick_time_ms.ok_or(ConfigError::MissingTickTime)?);
        let min_session_timeout = self.min_session_timeout_ms.map_or(tick_ms * 2, u64::from);
        let max_session_timeout = self.max_session_timeout_ms.map_or(tick_ms * 20, u64::from);
        if min_session_timeout > max_session_timeout {
            return Err(ConfigError::SessionTimeoutsInverted {
                min: Duration::from_millis(min_session_timeout),
                max: Duration::from_millis(max_session_timeout),
            });
        }
        let data_dir = self
            .data_dir
            .take()
            .ok_or(ConfigError::Missing { key: "dataDir" })?;
        let data_log_dir = self.data_log_dir.take().unwrap_or_else(|| data_dir.clone());
        if self.client_port_address.is_some() && self.client_port.is_none() {
            return Err(ConfigError::ClientPortAddressWithoutPort);
        }
        let configured_client_addr = match self.client_port {
            Some(port) => Some(resolve(
                "clientPortAddress",
                self.client_port_address.as_deref().unwrap_or("0.0.0.0"),
                port,
            )?),
            None => None,
        };
        let extended_types_enabled = self.extended_types_enabled.unwrap_or(false);

        let (server_id, ensemble, client_addr) = if self.servers.is_empty() {
            if let Some(configured) = self.peer_type {
                self.check_peer_type(configured, PeerType::Participant);
            }
            let client_addr =
                configured_client_addr.ok_or(ConfigError::Missing { key: "clientPort" })?;
            (1, None, client_addr)
        } else {
            let id = read_server_id(&data_dir, myid)?;
            let ensemble = self.ensemble()?;
            let me = ensemble
                .servers
                .get(&id)
                .ok_or(ConfigError::MyidNotInServers { id })?;
            if extended_types_enabled && id >= MAX_SERVER_ID {
                return Err(ConfigError::ServerIdTooLargeForExtendedTypes { id });
            }
            if let Some(configured) = self.peer_type {
                self.check_peer_type(configured, me.role);
            }
            let client_addr = own_client_addr(me, configured_client_addr)?;
            (id, Some(ensemble), client_addr)
        };

        Ok(Config {
            tick_time: Duration::from_millis(tick_ms),
            data_dir,
            data_log_dir,
            client_addr,
            max_client_cnxns: NonZeroU32::new(self.max_client_cnxns.unwrap_or(60)),
            min_session_timeout: Duration::from_millis(min_session_timeout),
            max_session_timeout: Duration::from_millis(max_session_timeout),
            snap_count: self.snap_count.unwrap_or(100_000),
            autopurge: Autopurge {
                snap_retain_count: self.snap_retain_count.unwrap_or(MIN_SNAP_RETAIN_COUNT),
                interval: match self.purge_interval_hours {
                    None => Some(hours(DEFAULT_PURGE_INTERVAL_HOURS)),
                    Some(hours_given) => u64::try_from(hours_given)
                        .ok()
                        .filter(|&n| n > 0)
                        .map(hours),
                },
            },
            force_sync: self.force_sync.unwrap_or(true),
            pre_alloc_size: self.pre_alloc_size.unwrap_or(65536 * 1024),
            global_outstanding_limit: self.global_outstanding_limit.unwrap_or(1000),
            four_letter_words: self
                .four_letter_words
                .take()
                .unwrap_or_else(|| FourLetterWords::Only(BTreeSet::from(["srvr".to_owned()]))),
            jute_max_buffer: self.jute_max_buffer.unwrap_or(0xfffff),
            max_client_outgoing_bytes: self
                .max_client_outgoing_bytes
                .unwrap_or(DEFAULT_MAX_CLIENT_OUTGOING_BYTES),
            extended_types_enabled,
            enforce_quota: self.enforce_quota.unwrap_or(false),
            super_digest: self.super_digest.take(),
            group_commit_max_entries: self.group_commit_max_entries.unwrap_or(1000),
            server_id,
            ensemble,
            warnings: self.warnings,
        })
    }

    fn check_peer_type(&mut self, configured: PeerType, listed: PeerType) {
        if configured != listed {
            self.warnings
                .push(ConfigWarning::PeerTypeMismatch { configured, listed });
        }
    }

    /// The ensemble from the server lines, checked as a whole.
    fn ensemble(&mut self) -> Result<Ensemble, ConfigError> {
        let servers = std::mem::take(&mut self.servers);
        let participants = servers
            .values()
            .filter(|server| server.role == PeerType::Participant)
            .count();
        match participants {
            0 => return Err(ConfigError::NoParticipants),
            1 | 2 => self
                .warnings
                .push(ConfigWarning::NoFaultTolerance { participants }),
            n if n % 2 == 0 => self
                .warnings
                .push(ConfigWarning::EvenParticipants { participants }),
            _ => {}
        }
        let mut taken: HashMap<HostPort, u64> = HashMap::new();
        for server in servers.values() {
            for port in [server.peer_port, server.election_port] {
                let addr = HostPort {
                    host: server.host.clone(),
                    port,
                };
                if let Some(&first) = taken.get(&addr) {
                    return Err(ConfigError::DuplicateAddress {
                        first,
                        second: server.id,
                        addr,
                    });
                }
                taken.insert(addr, server.id);
            }
        }
        Ok(Ensemble {
            servers,
            init_limit: self
                .init_limit
                .ok_or(ConfigError::Missing { key: "initLimit" })?,
            sync_limit: self
                .sync_limit
                .ok_or(ConfigError::Missing { key: "syncLimit" })?,
            quorum_listen_on_all_ips: self.quorum_listen_on_all_ips.unwrap_or(false),
        })
    }
}

/// This server's client address: its server line's, which must agree with
/// `clientPortAddress:clientPort` when both are given (ZooKeeper's `setupClientPort`).
fn own_client_addr(
    me: &ServerSpec,
    configured: Option<SocketAddr>,
) -> Result<SocketAddr, ConfigError> {
    let Some(listed) = &me.client else {
        return configured.ok_or(ConfigError::Missing { key: "clientPort" });
    };
    let listed = resolve("server.N", &listed.host, listed.port)?;
    if let Some(configured) = configured {
        let agrees = if configured.ip().is_unspecified() {
            configured.port() == listed.port()
        } else {
            configured == listed
        };
        if !agrees {
            return Err(ConfigError::ClientAddressConflict {
                id: me.id,
                configured,
                listed,
            });
        }
    }
    Ok(listed)
}

fn read_server_id(
    data_dir: &Path,
    myid: impl FnOnce(&Path) -> Result<Option<String>, ConfigError>,
) -> Result<u64, ConfigError> {
    let path = data_dir.join("myid");
    let content = myid(&path)?.ok_or_else(|| ConfigError::MyidMissing { path: path.clone() })?;
    match content.trim().parse::<u64>() {
        Ok(id) if (1..=MAX_SERVER_ID).contains(&id) => Ok(id),
        _ => Err(ConfigError::InvalidMyid { path, content }),
    }
}

fn read_myid(path: &Path) -> Result<Option<String>, ConfigError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(decode(bytes))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Resolves a listen address as ZooKeeper's `InetAddress.getByName` would: an IP literal
/// as is, a name through the system resolver (first answer).
fn resolve(key: &'static str, host: &str, port: u16) -> Result<SocketAddr, ConfigError> {
    let literal = host
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let unresolvable = |source| ConfigError::Unresolvable {
        key,
        host: host.to_owned(),
        source,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(unresolvable)?
        .next()
        .ok_or_else(|| unresolvable(io::Error::new(io::ErrorKind::NotFound, "no addresses")))
}

fn server_id(key: &str, id: &str) -> Result<u64, ConfigError> {
    match id.parse::<u64>() {
        Ok(id) if (1..=MAX_SERVER_ID).contains(&id) => Ok(id),
        _ => Err(ConfigError::InvalidKey {
            key: key.to_owned(),
            expected: "server.N with N a server id from 1 to 255",
        }),
    }
}

/// `host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]`, as
/// ZooKeeper's `QuorumServer` reads it (without the multi-address `|` form).
fn parse_server(key: &str, id: u64, value: &str) -> Result<ServerSpec, ConfigError> {
    let malformed = || invalid(key, value, SERVER_FORMAT);
    let mut halves = value.split(';');
    let server_part = halves.next().unwrap_or_default();
    let client_part = halves.next();
    if halves.next().is_some() {
        return Err(malformed());
    }
    if server_part.contains('|') {
        return Err(ConfigError::Unsupported {
            key: key.to_owned(),
            reason: "several addresses per server (multiAddress) are not supported",
        });
    }
    let parts = host_and_ports(server_part).ok_or_else(malformed)?;
    let (host, peer_port, election_port, role) = match parts.as_slice() {
        [host, peer, election] => (*host, *peer, *election, None),
        [host, peer, election, role] => (*host, *peer, *election, Some(*role)),
        _ => return Err(malformed()),
    };
    if host.is_empty() {
        return Err(malformed());
    }
    let peer_port = port(key, peer_port)?;
    let election_port = port(key, election_port)?;
    if peer_port == election_port {
        return Err(ConfigError::SamePeerAndElectionPort { id });
    }
    let role = match role.map(|role| role.trim().to_ascii_lowercase()).as_deref() {
        None | Some("participant") => PeerType::Participant,
        Some("observer") => PeerType::Observer,
        Some(_) => return Err(invalid(key, value, "a role of participant or observer")),
    };
    let client = match client_part {
        None => None,
        Some(client) => {
            let parts = host_and_ports(client.trim()).ok_or_else(malformed)?;
            Some(match parts.as_slice() {
                [client_port] => HostPort {
                    host: Ipv4Addr::UNSPECIFIED.to_string(),
                    port: port(key, client_port)?,
                },
                [host, client_port] if !host.is_empty() => HostPort {
                    host: (*host).to_owned(),
                    port: port(key, client_port)?,
                },
                _ => return Err(malformed()),
            })
        }
    };
    Ok(ServerSpec {
        id,
        host: host.to_owned(),
        peer_port,
        election_port,
        role,
        client,
    })
}

/// Splits `host:port:...` or `[ipv6]:port:...` (ZooKeeper's `ConfigUtils.getHostAndPort`).
fn host_and_ports(s: &str) -> Option<Vec<&str>> {
    let Some(rest) = s.strip_prefix('[') else {
        return Some(s.split(':').collect());
    };
    let (host, after) = rest.split_once(']')?;
    if after.is_empty() {
        return Some(vec![host]);
    }
    let ports = after.strip_prefix(':').filter(|ports| !ports.is_empty())?;
    Some(std::iter::once(host).chain(ports.split(':')).collect())
}

/// The keys of ZooKeeper features Paddock lacks, where the operator expects an effect.
fn no_effect_reason(key: &str) -> Option<&'static str> {
    const TLS: &str = "TLS is not supported";
    const SASL: &str = "SASL and Kerberos are not supported";
    Some(match key {
        "secureClientPort"
        | "secureClientPortAddress"
        | "sslQuorum"
        | "portUnification"
        | "client.portUnification" => TLS,
        "sessionRequireClientSASLAuth" | "enforce.auth.enabled" | "enforce.auth.schemes" => SASL,
        "localSessionsEnabled" | "localSessionsUpgradingEnabled" => {
            "local sessions are not supported; every session is global"
        }
        "readonlymode.enabled" => "read-only mode is not supported",
        "skipACL" => "ACLs are always checked",
        "maxCnxns" => "only the per-address limit maxClientCnxns is enforced",
        "oraclePath" => "the two-server oracle is not supported",
        "DigestAuthenticationProvider.enabled" => "digest authentication is always on",
        _ if key.starts_with("quorum.auth.") => SASL,
        _ if key.starts_with("authProvider.") => {
            "only the digest and ip authentication schemes are built in"
        }
        _ if key.starts_with("audit.") => "audit logging is not supported",
        _ => return None,
    })
}

/// Values that keep a missing feature switched off, so naming them is worth no warning.
fn leaves_feature_off(value: &str) -> bool {
    ["false", "no", "0", ""]
        .iter()
        .any(|off| value.eq_ignore_ascii_case(off))
}

/// ZooKeeper keys that tune the Java implementation (threads, caches, throttles, the
/// admin and metrics servers, TLS key material, ...) and have no counterpart here.
/// Accepted in silence so a ZooKeeper `zoo.cfg` runs unchanged.
fn is_ignored(key: &str) -> bool {
    const KEYS: &[&str] = &[
        "advancedFlowControlEnabled",
        "bitHashCacheSize",
        "clientPortListenBacklog",
        "clientTcpKeepAlive",
        "client.certReload",
        "cnxTimeout",
        "commitLogCount",
        "connectToLearnerMasterLimit",
        "connectionDecreaseRatio",
        "connectionDropDecrease",
        "connectionDropIncrease",
        "connectionFreezeTime",
        "connectionMaxTokens",
        "connectionTokenFillCount",
        "connectionTokenFillTime",
        "digest.enabled",
        "electionPortBindRetry",
        "emulate353TTLNodes",
        "enableEagerACLCheck",
        "flushDelay",
        "forward_learner_requests_to_commit_processor_disabled",
        "fsync.warningthresholdms",
        "jute.maxbuffer.extrasize",
        "largeRequestMaxBytes",
        "largeRequestThreshold",
        "leaderServes",
        "maxBatchSize",
        "maxConcurrentDiffSyncs",
        "maxConcurrentSnapSyncs",
        "maxGetChildrenResponseCacheSize",
        "maxInProcessingDeadWatchers",
        "maxResponseCacheSize",
        "maxTimeToWaitForEpoch",
        "maxWriteQueuePollTime",
        "observerMasterPort",
        "outstandingHandshake.limit",
        "quorum.cnxn.threads.size",
        "quorumCnxnTimeoutMs",
        "requestStaleConnectionCheck",
        "requestStaleLatencyCheck",
        "requestThrottleDropStale",
        "requestThrottleLimit",
        "requestThrottleStallTime",
        "serverCnxnFactory",
        "snapSizeLimitInKb",
        "sslQuorumReloadCertFiles",
        "syncEnabled",
        "tcpKeepAlive",
        "throttledOpWaitTime",
        "txnLogSizeLimitInKb",
        "watchManagerName",
        "watcherCleanIntervalInSeconds",
        "watcherCleanThreadsNum",
        "watcherCleanThreshold",
        "X509AuthenticationProvider.superUser",
    ];
    const PREFIXES: &[&str] = &[
        "admin.",
        "fastleader.",
        "jvm.pause.",
        "kerberos.",
        "learner.",
        "leader.",
        "metricsProvider.",
        "multiAddress.",
        "netty.",
        "observer.",
        "snapshot.",
        "ssl.",
        "znode.container.",
        "zookeeper.",
    ];
    KEYS.contains(&key) || PREFIXES.iter().any(|prefix| key.starts_with(prefix))
}

fn four_letter_words(value: &str, warnings: &mut Vec<ConfigWarning>) -> FourLetterWords {
    let mut words = BTreeSet::from(["srvr".to_owned()]);
    for word in value
        .split(',')
        .map(str::trim)
        .filter(|word| !word.is_empty())
    {
        if word == "*" {
            return FourLetterWords::All;
        }
        if !FOUR_LETTER_WORDS.contains(&word) {
            warnings.push(ConfigWarning::UnknownFourLetterWord {
                word: word.to_owned(),
            });
        }
        words.insert(word.to_owned());
    }
    FourLetterWords::Only(words)
}

fn super_digest(key: &str, value: &str) -> Result<SuperDigest, ConfigError> {
    let is_base64 = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    };
    match value.split_once(':') {
        Some((user, digest)) if !user.is_empty() && is_base64(digest) => Ok(SuperDigest {
            user: user.to_owned(),
            digest: digest.to_owned(),
        }),
        _ => Err(invalid(key, value, "user:base64-digest")),
    }
}

fn invalid(key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

/// A Java `int`, as `Integer.parseInt` reads it.
fn java_int(key: &str, value: &str) -> Result<i32, ConfigError> {
    value.parse().map_err(|_| invalid(key, value, "an integer"))
}

/// A Java `int` of at least `min`.
fn int(key: &str, value: &str, min: u32) -> Result<u32, ConfigError> {
    let n = java_int(key, value)?;
    match u32::try_from(n) {
        Ok(n) if n >= min => Ok(n),
        _ => Err(invalid(
            key,
            value,
            &format!("an integer from {min} to {}", i32::MAX),
        )),
    }
}

/// A positive Java `int` as `Integer.decode` reads it (`jute.maxbuffer` is a system
/// property there, usually written in hex): `0x`/`#` hex, leading-`0` octal, decimal.
fn java_decode(key: &str, value: &str) -> Result<u32, ConfigError> {
    let (radix, digits) = if let Some(hex) = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .or_else(|| value.strip_prefix('#'))
    {
        (16, hex)
    } else if value.len() > 1 && value.starts_with('0') {
        (8, &value[1..])
    } else {
        (10, value)
    };
    let well_formed = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    let max = i32::MAX.unsigned_abs();
    match u32::from_str_radix(digits, radix) {
        Ok(n) if well_formed && (1..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            key,
            value,
            "a size in bytes from 1 to 2147483647 (decimal, 0x hex or 0 octal)",
        )),
    }
}

fn port(key: &str, value: &str) -> Result<u16, ConfigError> {
    match value.trim().parse::<u16>() {
        Ok(port) if port != 0 => Ok(port),
        _ => Err(invalid(key, value, PORT_RANGE)),
    }
}

/// `true`/`false` in any case, as `QuorumPeerConfig.parseBoolean` reads them.
fn boolean(key: &str, value: &str) -> Result<bool, ConfigError> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(key, value, "true or false"))
    }
}

/// `forceSync`'s `yes`/`no`. ZooKeeper treats anything but `yes` as `no`, so a `true`
/// there silently turns fsync off; here it is an error instead.
fn yes_no(key: &str, value: &str) -> Result<bool, ConfigError> {
    if value.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err(invalid(key, value, "yes or no"))
    }
}

fn hours(n: u64) -> Duration {
    Duration::from_secs(n.saturating_mul(3600))
}

/// UTF-8, or Latin-1 (what Java's `Properties.load` assumes) when the bytes are not UTF-8.
fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| error.into_bytes().into_iter().map(char::from).collect())
}

/// The last value of each key, in order of first appearance, warning once per repeated key.
fn last_values(
    properties: Vec<(String, String)>,
    warnings: &mut Vec<ConfigWarning>,
) -> Vec<(String, String)> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut repeated: BTreeSet<String> = BTreeSet::new();
    let mut unique: Vec<(String, String)> = Vec::with_capacity(properties.len());
    for (key, value) in properties {
        if let Some(&at) = index.get(&key) {
            unique[at].1 = value;
            if repeated.insert(key.clone()) {
                warnings.push(ConfigWarning::DuplicateKey { key });
            }
        } else {
            index.insert(key.clone(), unique.len());
            unique.push((key, value));
        }
    }
    unique
}

/// Java's properties whitespace.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// The `(key, value)` pairs of a properties text, unescaped as `Properties.load` does and
/// trimmed as ZooKeeper does.
fn read_properties(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut properties = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let mut piece = line.trim_start_matches(is_blank);
        // Only a line that starts a logical line can be a comment.
        if piece.is_empty() || piece.starts_with(['#', '!']) {
            continue;
        }
        let mut logical = String::new();
        loop {
            let trailing = piece.len() - piece.trim_end_matches('\\').len();
            if trailing % 2 == 0 {
                logical.push_str(piece);
                break;
            }
            logical.push_str(&piece[..piece.len() - 1]);
            match lines.next() {
                Some((_, next)) => piece = next.trim_start_matches(is_blank),
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        let syntax = |reason| ConfigError::Syntax {
            line: number,
            reason,
        };
        let key = unescape(key).map_err(syntax)?;
        let value = unescape(value).map_err(syntax)?;
        // ZooKeeper trims with Java's String.trim: every char up to U+0020.
        let trim = |s: &str| s.trim_matches(|c| c <= ' ').to_owned();
        properties.push((trim(&key), trim(&value)));
    }
    Ok(properties)
}

/// Splits a logical line at the first unescaped `=`, `:` or whitespace; whitespace may be
/// followed by one `=` or `:`.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => {
                return (&line[..at], line[at + 1..].trim_start_matches(is_blank));
            }
            c if is_blank(c) => {
                let rest = line[at..].trim_start_matches(is_blank);
                let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
                return (&line[..at], rest.trim_start_matches(is_blank));
            }
            _ => {}
        }
    }
    (line, "")
}

/// Java properties escapes: `\t \n \r \f`, `\uXXXX` (surrogate pairs joined), and `\c`
/// for any other `c`.
fn unescape(s: &str) -> Result<String, &'static str> {
    const MALFORMED: &str = "malformed \\uXXXX escape";
    fn read_u(chars: &mut std::str::Chars<'_>) -> Result<u32, &'static str> {
        let hex: String = chars.by_ref().take(4).collect();
        if hex.chars().count() != 4 {
            return Err(MALFORMED);
        }
        u32::from_str_radix(&hex, 16).map_err(|_| MALFORMED)
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let unit = read_u(&mut chars)?;
                let code = if (0xd800..0xdc00).contains(&unit) {
                    if chars.next() != Some('\\') || chars.next() != Some('u') {
                        return Err("unpaired surrogate in \\u escapes");
                    }
                    let low = read_u(&mut chars)?;
                    if !(0xdc00..0xe000).contains(&low) {
                        return Err("unpaired surrogate in \\u escapes");
                    }
                    0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
                } else {
                    unit
                };
                out.push(char::from_u32(code).ok_or("unpaired surrogate in \\u escapes")?);
            }
            Some(other) => out.push(other),
            // A lone trailing backslash (a continuation at the end of the file) vanishes.
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Debian package's `/etc/zookeeper/conf_example/zoo.cfg` (ZooKeeper 3.8.0).
    const DEBIAN_EXAMPLE: &str = "\
# The number of milliseconds of each tick
tickTime=2000
# The number of ticks that the initial 
# synchronization phase can take
initLimit=10
# The number of ticks that can pass between 
# sending a request and getting an acknowledgement
syncLimit=5
# the directory where the snapshot is stored.
# do not use /tmp for storage, /tmp here is just 
# example sakes.
dataDir=/tmp/zookeeper
# the port at which the clients will connect
clientPort=2181
# the maximum number of client connections.
# increase this if you need to handle more clients
#maxClientCnxns=60
#
# Be sure to read the maintenance section of the 
# administrator guide before turning on autopurge.
#
# https://zookeeper.apache.org/doc/current/zookeeperAdmin.html#sc_maintenance
#
# The number of snapshots to retain in dataDir
#autopurge.snapRetainCount=3
# Purge task interval in hours
# Set to \"0\" to disable auto purge feature
#autopurge.purgeInterval=1

## Metrics Providers
#
# https://prometheus.io Metrics Exporter
#metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
#metricsProvider.httpHost=0.0.0.0
#metricsProvider.httpPort=7000
#metricsProvider.exportJvmInfo=true
";

    const ENSEMBLE: &str = "\
tickTime=2000
initLimit=10
syncLimit=5
dataDir=/var/lib/zk
clientPort=2181
server.1=zk1:2888:3888
server.2=zk2:2888:3888
server.3=zk3:2888:3888
";

    /// The tests' configs leave tickTime out unless they are about it.
    fn with_tick(text: &str) -> String {
        if text.contains("tickTime") {
            text.to_owned()
        } else {
            format!("{text}\ntickTime=2000")
        }
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse_with_myid(&with_tick(text), Path::new("/etc/paddock"), |_| Ok(None))
    }

    fn parse_as(text: &str, myid: &str) -> Result<Config, ConfigError> {
        let myid = myid.to_owned();
        Config::parse_with_myid(&with_tick(text), Path::new("/etc/paddock"), move |path| {
            assert_eq!(path, Path::new("/var/lib/zk/myid"));
            Ok(Some(myid))
        })
    }

    fn minimal(extra: &str) -> String {
        format!("dataDir=/var/lib/zk\nclientPort=2181\n{extra}\n")
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn debian_example_parses_without_warnings() {
        let config = parse(DEBIAN_EXAMPLE).unwrap();
        assert_eq!(config.warnings, []);
        assert!(config.is_standalone());
        assert_eq!(config.server_id, 1);
        assert_eq!(config.role(), PeerType::Participant);
        assert_eq!(config.tick_time, Duration::from_secs(2));
        assert_eq!(config.data_dir, Path::new("/tmp/zookeeper"));
        assert_eq!(config.client_addr, "0.0.0.0:2181".parse().unwrap());
    }

    #[test]
    fn installed_debian_example_parses_when_present() {
        let path = Path::new("/etc/zookeeper/conf_example/zoo.cfg");
        if path.exists() {
            let config = Config::load(path).unwrap();
            assert_eq!(config.warnings, []);
            assert_eq!(config.client_addr.port(), 2181);
        }
    }

    #[test]
    fn defaults_are_zookeepers_except_the_purge_interval() {
        let config = parse(&minimal("")).unwrap();
        assert_eq!(config.data_log_dir, config.data_dir);
        assert_eq!(config.max_client_cnxns, NonZeroU32::new(60));
        assert_eq!(config.min_session_timeout, Duration::from_millis(4000));
        assert_eq!(config.max_session_timeout, Duration::from_millis(40000));
        assert_eq!(config.snap_count, 100_000);
        assert_eq!(
            config.autopurge,
            Autopurge {
                snap_retain_count: 3,
                interval: Some(Duration::from_secs(3600)),
            }
        );
        assert!(config.force_sync);
        assert_eq!(config.pre_alloc_size, 64 * 1024 * 1024);
        assert_eq!(config.global_outstanding_limit, 1000);
        assert!(config.four_letter_words.is_enabled("srvr"));
        assert!(!config.four_letter_words.is_enabled("ruok"));
        assert_eq!(config.jute_max_buffer, 0xfffff);
        assert_eq!(config.max_client_outgoing_bytes, 16 << 20);
        assert!(!config.extended_types_enabled);
        assert_eq!(config.super_digest, None);
        assert_eq!(config.group_commit_max_entries, 1000);
        assert_eq!(config.warnings, []);
    }

    #[test]
    fn membership_is_written_as_zookeeper_writes_it() {
        let config = parse_as(
            &minimal(
                "initLimit=10
syncLimit=5
server.2=10.0.0.2:2888:3888:observer;10.0.0.2:2181
server.1=10.0.0.1:2888:3888
server.3=[fe80::3]:2888:3888",
            ),
            "1",
        )
        .unwrap();
        let ensemble = config.ensemble.as_ref().unwrap();
        assert_eq!(
            ensemble.membership(),
            "server.1=10.0.0.1:2888:3888:participant\n\
             server.2=10.0.0.2:2888:3888:observer;10.0.0.2:2181\n\
             server.3=[fe80::3]:2888:3888:participant\n\
             version=0"
        );
    }

    #[test]
    fn every_paddock_key_is_read() {
        let config = parse(&minimal(
            "tickTime=500
dataLogDir=/fast/log
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1500
maxSessionTimeout=90000
snapCount=5000
autopurge.snapRetainCount=5
autopurge.purgeInterval=24
forceSync=no
preAllocSize=1024
globalOutstandingLimit=200
4lw.commands.whitelist=stat, ruok,conf
jute.maxbuffer=0x400000
maxClientOutgoingBytes=1048576
extendedTypesEnabled=true
superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
commitBatchMaxEntries=64",
        ))
        .unwrap();
        assert_eq!(config.tick_time, Duration::from_millis(500));
        assert_eq!(config.data_log_dir, Path::new("/fast/log"));
        assert_eq!(config.client_addr, "127.0.0.1:2181".parse().unwrap());
        assert_eq!(config.max_client_cnxns, None);
        assert_eq!(config.min_session_timeout, Duration::from_millis(1500));
        assert_eq!(config.max_session_timeout, Duration::from_secs(90));
        assert_eq!(config.snap_count, 5000);
        assert_eq!(config.autopurge.snap_retain_count, 5);
        assert_eq!(
            config.autopurge.interval,
            Some(Duration::from_secs(24 * 3600))
        );
        assert!(!config.force_sync);
        assert_eq!(config.pre_alloc_size, 1024 * 1024);
        assert_eq!(config.global_outstanding_limit, 200);
        let words = ["conf", "ruok", "srvr", "stat"].map(String::from);
        assert_eq!(
            config.four_letter_words,
            FourLetterWords::Only(BTreeSet::from(words))
        );
        assert_eq!(config.jute_max_buffer, 0x400000);
        assert_eq!(config.max_client_outgoing_bytes, 1 << 20);
        assert!(config.extended_types_enabled);
        assert_eq!(
            config
                .super_digest
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")
        );
        assert_eq!(config.group_commit_max_entries, 64);
        assert_eq!(config.warnings, []);
    }

    #[test]
    fn invalid_values_name_the_key() {
        assert_eq!(
            error(&minimal("tickTime=abc")),
            r#"invalid value "abc" for tickTime: expected an integer"#
        );
        assert_eq!(
            error(&minimal("tickTime=0")),
            r#"invalid value "0" for tickTime: expected an integer from 1 to 2147483647"#
        );
        assert_eq!(
            error("dataDir=/d\nclientPort=70000"),
            r#"invalid value "70000" for clientPort: expected a port number from 1 to 65535"#
        );
        assert_eq!(
            error(&minimal("forceSync=true")),
            r#"invalid value "true" for forceSync: expected yes or no"#
        );
        for bad in [
            "maxClientCnxns=-1",
            "minSessionTimeout=0",
            "maxSessionTimeout=-5",
            "snapCount=many",
            "preAllocSize=-1",
            "globalOutstandingLimit=0",
            "jute.maxbuffer=0",
            "jute.maxbuffer=0xZZ",
            "extendedTypesEnabled=yes",
            "peerType=leader",
            "superDigest=nocolon",
            "superDigest=super:not base64!",
            "commitBatchMaxEntries=0",
            "standaloneEnabled=maybe",
            "clientPortAddress=",
            "electionAlg=1",
            "initLimit=x",
        ] {
            let message = error(&minimal(bad));
            let key = bad.split('=').next().unwrap();
            assert!(message.contains(key), "{bad}: {message}");
        }
    }

    /// The shipped configs: valid, without warnings, and set up as production wants
    /// (autopurge on, the txn log apart from the snapshots, fsync on).
    #[test]
    fn the_shipped_configs_parse_and_are_production_minded() {
        let files = [
            ("standalone.cfg", include_str!("../../conf/standalone.cfg")),
            ("zoo1.cfg", include_str!("../../conf/zoo1.cfg")),
            ("zoo2.cfg", include_str!("../../conf/zoo2.cfg")),
            ("zoo3.cfg", include_str!("../../conf/zoo3.cfg")),
        ];
        for (i, (name, text)) in files.into_iter().enumerate() {
            let myid = i.max(1).to_string();
            let config = Config::parse_with_myid(text, Path::new("/repo/conf"), |_| Ok(Some(myid)))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(config.warnings, [], "{name}");
            assert!(config.autopurge.interval.is_some(), "{name}: autopurge off");
            assert_ne!(config.data_dir, config.data_log_dir, "{name}");
            assert!(config.force_sync, "{name}");
            assert_eq!(config.is_standalone(), i == 0, "{name}");
            assert!(
                text.lines().filter(|l| l.starts_with('#')).count() > 5,
                "{name}"
            );
        }
    }

    #[test]
    fn tick_time_is_required_as_zookeeper_requires_it() {
        let text = "dataDir=/var/lib/zk\nclientPort=2181\n";
        let refused = Config::parse_with_myid(text, Path::new("/etc/paddock"), |_| Ok(None));
        let message = refused.unwrap_err().to_string();
        assert!(message.starts_with("tickTime is not set"), "{message}");
        assert!(message.contains("tickTime=2000"), "{message}");
    }

    #[test]
    fn data_dir_and_client_port_are_required() {
        assert_eq!(error("clientPort=2181"), "dataDir is not set");
        assert_eq!(error("dataDir=/d"), "clientPort is not set");
        assert_eq!(
            error("dataDir=/d\nclientPortAddress=127.0.0.1"),
            "clientPortAddress is set but clientPort is not set"
        );
    }

    #[test]
    fn session_timeouts_follow_tick_time_and_must_be_ordered() {
        let config = parse(&minimal("tickTime=100")).unwrap();
        assert_eq!(config.min_session_timeout, Duration::from_millis(200));
        assert_eq!(config.max_session_timeout, Duration::from_millis(2000));
        assert_eq!(
            error(&minimal("minSessionTimeout=5000\nmaxSessionTimeout=4000")),
            "minSessionTimeout (5000 ms) must not be larger than maxSessionTimeout (4000 ms)"
        );
        // The default maximum moves with tickTime, so a large minimum can cross it.
        assert!(matches!(
            parse(&minimal("tickTime=100\nminSessionTimeout=3000")),
            Err(ConfigError::SessionTimeoutsInverted { .. })
        ));
    }

    #[test]
    fn small_retain_and_snap_counts_are_raised_with_a_warning() {
        let config = parse(&minimal("autopurge.snapRetainCount=1\nsnapCount=1")).unwrap();
        assert_eq!(config.autopurge.snap_retain_count, 3);
        assert_eq!(config.snap_count, 2);
        assert_eq!(
            config.warnings,
            [
                ConfigWarning::SnapRetainCountRaised { given: 1 },
                ConfigWarning::SnapCountRaised { given: 1 },
            ]
        );
    }

    #[test]
    fn purge_interval_zero_turns_purging_off() {
        for off in ["0", "-1"] {
            let config = parse(&minimal(&format!("autopurge.purgeInterval={off}"))).unwrap();
            assert_eq!(config.autopurge.interval, None);
        }
    }

    #[test]
    fn four_letter_words_star_and_unknown_names() {
        let config = parse(&minimal("4lw.commands.whitelist=*")).unwrap();
        assert_eq!(config.four_letter_words, FourLetterWords::All);
        let config = parse(&minimal("4lw.commands.whitelist=ruok, ,nope")).unwrap();
        assert!(config.four_letter_words.is_enabled("ruok"));
        assert!(config.four_letter_words.is_enabled("srvr"));
        assert_eq!(
            config.warnings,
            [ConfigWarning::UnknownFourLetterWord {
                word: "nope".into()
            }]
        );
    }

    #[test]
    fn jute_max_buffer_reads_like_integer_decode() {
        for (text, bytes) in [
            ("1048575", 1048575),
            ("0xfffff", 0xfffff),
            ("#10", 16),
            ("010", 8),
        ] {
            let config = parse(&minimal(&format!("jute.maxbuffer={text}"))).unwrap();
            assert_eq!(config.jute_max_buffer, bytes, "{text}");
        }
    }

    #[test]
    fn both_super_digest_keys_are_read() {
        let config = parse(&minimal(
            "DigestAuthenticationProvider.superDigest=super:abc+/=",
        ))
        .unwrap();
        assert_eq!(
            config.super_digest,
            Some(SuperDigest {
                user: "super".into(),
                digest: "abc+/=".into()
            })
        );
    }

    #[test]
    fn zookeepers_other_keys_are_accepted_quietly() {
        let config = parse(&minimal(
            "admin.enableServer=false
admin.serverPort=8080
standaloneEnabled=false
reconfigEnabled=false
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpPort=7000
quorumListenOnAllIPs=true
electionAlg=3
syncEnabled=true
sslQuorum=false
localSessionsEnabled=false
DigestAuthenticationProvider.digestAlg=SHA1
zookeeper.commitProcessor.numWorkerThreads=4
maxResponseCacheSize=400",
        ))
        .unwrap();
        assert_eq!(config.warnings, []);
    }

    #[test]
    fn missing_features_and_unknown_keys_are_warnings() {
        let config = parse(&minimal(
            "secureClientPort=2281
reconfigEnabled=true
quorum.auth.enableSasl=true
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
tickTme=100",
        ))
        .unwrap();
        let keys: Vec<String> = config
            .warnings
            .iter()
            .map(|warning| match warning {
                ConfigWarning::NoEffect { key, .. } | ConfigWarning::UnknownKey { key } => {
                    key.clone()
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            keys,
            [
                "secureClientPort",
                "reconfigEnabled",
                "quorum.auth.enableSasl",
                "authProvider.1",
                "tickTme"
            ]
        );
        assert!(matches!(
            &config.warnings[4],
            ConfigWarning::UnknownKey { .. }
        ));
        assert_eq!(
            config.warnings[0].to_string(),
            "secureClientPort has no effect in Paddock: TLS is not supported"
        );
    }

    #[test]
    fn unsupported_quorum_shapes_are_errors() {
        assert_eq!(
            error(&minimal("dynamicConfigFile=/etc/zk/zoo.cfg.dynamic")),
            "dynamicConfigFile is not supported: put the server.N lines in this file"
        );
        assert!(matches!(
            parse(&minimal("group.1=1:2:3")),
            Err(ConfigError::Unsupported { .. })
        ));
        assert!(matches!(
            parse(&minimal("weight.1=2")),
            Err(ConfigError::Unsupported { .. })
        ));
        assert!(matches!(
            parse(&minimal("server.1=a:1:2|b:1:2")),
            Err(ConfigError::Unsupported { .. })
        ));
    }

    #[test]
    fn java_properties_syntax() {
        let text = "\
! a bang comment
   # an indented comment
dataDir = /var/lib/zk
clientPort: 2181
tickTime 1000
dataLogDir=/var/lib/zk/\\
    log\\ dir
superDigest=super\\u003aabc=
commitBatchMaxEntries=10\r
commitBatchMaxEntries=20
# a comment that ends in a backslash does not continue \\
4lw.commands.whitelist=ruok
";
        let config = parse(text).unwrap();
        assert_eq!(config.data_dir, Path::new("/var/lib/zk"));
        assert_eq!(config.client_addr.port(), 2181);
        assert_eq!(config.tick_time, Duration::from_secs(1));
        assert_eq!(config.data_log_dir, Path::new("/var/lib/zk/log dir"));
        assert_eq!(
            config.super_digest.map(|d| d.digest),
            Some("abc=".to_owned())
        );
        assert_eq!(config.group_commit_max_entries, 20);
        assert!(config.four_letter_words.is_enabled("ruok"));
        assert_eq!(
            config.warnings,
            [ConfigWarning::DuplicateKey {
                key: "commitBatchMaxEntries".into()
            }]
        );
    }

    #[test]
    fn only_the_last_of_repeated_keys_is_checked() {
        let config = parse(&minimal("tickTime=abc\ntickTime=3000")).unwrap();
        assert_eq!(config.tick_time, Duration::from_secs(3));
    }

    #[test]
    fn malformed_unicode_escape_reports_its_line() {
        assert_eq!(
            error("dataDir=/d\nclientPort=2181\nx=\\u12G4"),
            "line 3: malformed \\uXXXX escape"
        );
        assert_eq!(unescape("\\ud83d\\ude00").unwrap(), "\u{1f600}");
        assert!(unescape("\\ud83d").is_err());
    }

    #[test]
    fn relative_paths_are_taken_from_the_config_directory() {
        let config = parse("dataDir=data\nclientPort=2181").unwrap();
        assert_eq!(config.data_dir, Path::new("/etc/paddock/data"));
        assert_eq!(config.data_log_dir, Path::new("/etc/paddock/data"));
    }

    #[test]
    fn latin1_files_are_read_as_java_would() {
        assert_eq!(decode(b"dataDir=/caf\xe9".to_vec()), "dataDir=/caf\u{e9}");
    }

    #[test]
    fn ensemble_with_myid() {
        let config = parse_as(ENSEMBLE, "2\n").unwrap();
        assert_eq!(config.server_id, 2);
        assert!(!config.is_standalone());
        assert_eq!(config.role(), PeerType::Participant);
        let ensemble = config.ensemble.as_ref().unwrap();
        assert_eq!(ensemble.servers.len(), 3);
        assert_eq!(ensemble.init_limit, 10);
        assert_eq!(ensemble.sync_limit, 5);
        assert_eq!(
            config.me(),
            Some(&ServerSpec {
                id: 2,
                host: "zk2".into(),
                peer_port: 2888,
                election_port: 3888,
                role: PeerType::Participant,
                client: None,
            })
        );
        assert_eq!(config.client_addr, "0.0.0.0:2181".parse().unwrap());
        assert_eq!(config.warnings, []);
    }

    #[test]
    fn zookeeper_3_5_server_lines() {
        let text = "\
tickTime=2000
initLimit=10
syncLimit=5
dataDir=/var/lib/zk
server.1=127.0.0.1:2888:3888:participant;2181
server.2=127.0.0.1:2889:3889;127.0.0.1:2182
server.3=[::1]:2890:3890:participant;[::1]:2183
server.4=10.0.0.4:2888:3888:observer;2181
peerType=observer
";
        let config = parse_as(text, "2").unwrap();
        assert_eq!(config.client_addr, "127.0.0.1:2182".parse().unwrap());
        let ensemble = config.ensemble.as_ref().unwrap();
        assert_eq!(ensemble.participants().count(), 3);
        assert_eq!(ensemble.observers().map(|s| s.id).collect::<Vec<_>>(), [4]);
        let three = &ensemble.servers[&3];
        assert_eq!(three.host, "::1");
        assert_eq!(
            three.client.as_ref().map(ToString::to_string).as_deref(),
            Some("[::1]:2183")
        );
        assert_eq!(
            ensemble.servers[&1].client,
            Some(HostPort {
                host: "0.0.0.0".into(),
                port: 2181
            })
        );
        assert_eq!(
            config.warnings,
            [ConfigWarning::PeerTypeMismatch {
                configured: PeerType::Observer,
                listed: PeerType::Participant,
            }]
        );
        let observer = parse_as(text, "4").unwrap();
        assert_eq!(observer.role(), PeerType::Observer);
        assert_eq!(observer.warnings, []);
    }

    #[test]
    fn client_port_must_agree_with_the_server_line() {
        let text = "initLimit=1\nsyncLimit=1\ndataDir=/var/lib/zk\n\
                    server.1=h:2888:3888;2181\nserver.2=h2:2888:3888\nserver.3=h3:2888:3888\n";
        assert!(parse_as(&format!("{text}clientPort=2181"), "1").is_ok());
        assert!(matches!(
            parse_as(&format!("{text}clientPort=2182"), "1"),
            Err(ConfigError::ClientAddressConflict { id: 1, .. })
        ));
        assert!(matches!(
            parse_as(text, "2"),
            Err(ConfigError::Missing { key: "clientPort" })
        ));
    }

    #[test]
    fn myid_must_exist_parse_and_be_listed() {
        assert!(matches!(
            parse(ENSEMBLE),
            Err(ConfigError::MyidMissing { .. })
        ));
        for bad in ["", "two", "0", "256", "-1"] {
            assert!(
                matches!(
                    parse_as(ENSEMBLE, bad),
                    Err(ConfigError::InvalidMyid { .. })
                ),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_as(ENSEMBLE, "4").unwrap_err().to_string(),
            "this server's id 4 (from myid) has no server.4 line"
        );
    }

    #[test]
    fn server_lines_are_checked() {
        let with = |line: &str| parse_as(&format!("{ENSEMBLE}{line}\n"), "1");
        for line in [
            "server.4=zk4:2888",
            "server.4=zk4:2888:3888:leader",
            "server.4=zk4:2888:3888:participant:extra",
            "server.4=:2888:3888",
            "server.4=zk4:2888:3888;a;b",
            "server.4=zk4:2888:3888;h:p:q",
            "server.4=[::1:2888:3888",
        ] {
            assert!(
                matches!(with(line), Err(ConfigError::InvalidValue { .. })),
                "{line}"
            );
        }
        assert_eq!(
            with("server.4=zk4:65536:3888").unwrap_err().to_string(),
            r#"invalid value "65536" for server.4: expected a port number from 1 to 65535"#
        );
        assert!(matches!(
            with("server.4=zk4:2888:2888"),
            Err(ConfigError::SamePeerAndElectionPort { id: 4 })
        ));
        assert!(matches!(
            with("server.4=zk1:3888:3999"),
            Err(ConfigError::DuplicateAddress {
                first: 1,
                second: 4,
                ..
            })
        ));
        for key in ["server.0", "server.256", "server.x", "server."] {
            assert!(
                matches!(
                    with(&format!("{key}=zk9:1:2")),
                    Err(ConfigError::InvalidKey { .. })
                ),
                "{key}"
            );
        }
    }

    #[test]
    fn ensembles_need_participants_and_limits() {
        let observers_only =
            "initLimit=1\nsyncLimit=1\ndataDir=/var/lib/zk\nclientPort=2181\nserver.1=h:1:2:observer";
        assert!(matches!(
            parse_as(observers_only, "1"),
            Err(ConfigError::NoParticipants)
        ));
        let no_limits = ENSEMBLE.replace("initLimit=10\n", "");
        assert_eq!(
            parse_as(&no_limits, "1").unwrap_err().to_string(),
            "initLimit is not set"
        );
    }

    #[test]
    fn fault_tolerance_warnings() {
        let two = "initLimit=1\nsyncLimit=1\ndataDir=/var/lib/zk\nclientPort=2181\n\
                   server.1=a:1:2\nserver.2=b:1:2";
        assert_eq!(
            parse_as(two, "1").unwrap().warnings,
            [ConfigWarning::NoFaultTolerance { participants: 2 }]
        );
        let four = format!("{ENSEMBLE}server.4=zk4:2888:3888");
        assert_eq!(
            parse_as(&four, "1").unwrap().warnings,
            [ConfigWarning::EvenParticipants { participants: 4 }]
        );
    }

    #[test]
    fn extended_types_limit_server_ids() {
        let text = format!("{ENSEMBLE}extendedTypesEnabled=true\nserver.255=zk255:2888:3888");
        assert!(parse_as(&text, "1").is_ok());
        assert!(matches!(
            parse_as(&text, "255"),
            Err(ConfigError::ServerIdTooLargeForExtendedTypes { id: 255 })
        ));
    }

    #[test]
    fn standalone_ignores_myid() {
        // The Debian example's myid holds prose; a standalone server never reads it.
        let config = Config::parse_with_myid(&with_tick(&minimal("")), Path::new("/"), |_| {
            panic!("myid read in standalone mode")
        })
        .unwrap();
        assert_eq!(config.server_id, 1);
    }

    #[test]
    fn load_reads_the_file_and_myid_from_disk() {
        let dir = std::env::temp_dir().join(format!("paddock-config-{}", std::process::id()));
        fs::create_dir_all(dir.join("data")).unwrap();
        fs::write(dir.join("data/myid"), "3\n").unwrap();
        let cfg = dir.join("zoo.cfg");
        fs::write(
            &cfg,
            "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=data\nclientPort=2181\n\
             server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n\
             server.3=127.0.0.1:2890:3890\n",
        )
        .unwrap();
        let loaded = Config::load(&cfg);
        let missing = Config::load(dir.join("nope.cfg"));
        fs::remove_dir_all(&dir).unwrap();
        let config = loaded.unwrap();
        assert_eq!(config.server_id, 3);
        assert_eq!(config.data_dir, dir.join("data"));
        assert!(matches!(missing, Err(ConfigError::Read { .. })));
    }
}
