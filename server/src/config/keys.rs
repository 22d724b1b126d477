//! Each key of `zoo.cfg`: read into [`Draft`], then checked across keys into a
//! [`Config`]; and the keys of ZooKeeper features Paddock lacks or ignores.

use super::*;

/// Values as read, before the checks that span several keys.
#[derive(Default)]
pub(super) struct Draft {
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
    admin: admin::AdminDraft,
    tls: TlsDraft,
    pub(super) warnings: Vec<ConfigWarning>,
}

impl Draft {
    /// A draft for a file in `base_dir` (relative paths resolve against it).
    pub(super) fn new(base_dir: &Path) -> Self {
        Draft {
            base_dir: base_dir.to_owned(),
            ..Draft::default()
        }
    }

    /// Parses one key's value; the checks that span keys wait for [`Draft::finish`].
    pub(super) fn apply(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
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
        if self.tls.apply(key, value, &mut self.warnings)? {
            return Ok(());
        }
        if self.admin.apply(key, value, &mut self.warnings)? {
            return Ok(());
        }
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
    pub(super) fn finish(
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
        let tls = std::mem::take(&mut self.tls).finish(
            self.servers.is_empty(),
            &self.base_dir,
            &mut self.warnings,
        )?;
        let admin = std::mem::take(&mut self.admin).finish(&mut self.warnings)?;

        let (server_id, ensemble, client_addr) = if self.servers.is_empty() {
            if let Some(configured) = self.peer_type {
                self.check_peer_type(configured, PeerType::Participant);
            }
            (1, None, configured_client_addr)
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

        if client_addr.is_none() && tls.secure_client_addr.is_none() {
            return Err(ConfigError::NoClientPort);
        }
        Ok(Config {
            tick_time: Duration::from_millis(tick_ms),
            data_dir,
            data_log_dir,
            client_addr,
            secure_client_addr: tls.secure_client_addr,
            port_unification: tls.port_unification,
            client_tls: tls.client,
            quorum_tls: tls.quorum,
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
            admin,
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

/// The keys of ZooKeeper features Paddock lacks, where the operator expects an effect.
pub(super) fn no_effect_reason(key: &str) -> Option<&'static str> {
    const SASL: &str = "SASL and Kerberos are not supported";
    Some(match key {
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
pub(super) fn leaves_feature_off(value: &str) -> bool {
    ["false", "no", "0", ""]
        .iter()
        .any(|off| value.eq_ignore_ascii_case(off))
}

/// ZooKeeper keys that tune the Java implementation (threads, caches, throttles, ...)
/// and have no counterpart here.
/// Accepted in silence so a ZooKeeper `zoo.cfg` runs unchanged.
pub(super) fn is_ignored(key: &str) -> bool {
    const KEYS: &[&str] = &[
        "advancedFlowControlEnabled",
        "bitHashCacheSize",
        "clientPortListenBacklog",
        "clientTcpKeepAlive",
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
        "syncEnabled",
        "tcpKeepAlive",
        "throttledOpWaitTime",
        "txnLogSizeLimitInKb",
        "watchManagerName",
        "watcherCleanIntervalInSeconds",
        "watcherCleanThreadsNum",
        "watcherCleanThreshold",
    ];
    const PREFIXES: &[&str] = &[
        "fastleader.",
        "jvm.pause.",
        "kerberos.",
        "learner.",
        "leader.",
        "multiAddress.",
        "netty.",
        "observer.",
        "snapshot.",
        "znode.container.",
        "zookeeper.",
    ];
    KEYS.contains(&key) || PREFIXES.iter().any(|prefix| key.starts_with(prefix))
}

pub(super) fn four_letter_words(value: &str, warnings: &mut Vec<ConfigWarning>) -> FourLetterWords {
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

pub(super) fn super_digest(key: &str, value: &str) -> Result<SuperDigest, ConfigError> {
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
