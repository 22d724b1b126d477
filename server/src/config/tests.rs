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
    assert_eq!(config.client_addr, Some("0.0.0.0:2181".parse().unwrap()));
}

#[test]
fn installed_debian_example_parses_when_present() {
    let path = Path::new("/etc/zookeeper/conf_example/zoo.cfg");
    if path.exists() {
        let config = Config::load(path).unwrap();
        assert_eq!(config.warnings, []);
        assert_eq!(config.client_addr.map(|a| a.port()), Some(2181));
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
    assert_eq!(config.client_addr, Some("127.0.0.1:2181".parse().unwrap()));
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
        (
            "standalone.cfg",
            include_str!("../../../conf/standalone.cfg"),
        ),
        ("zoo1.cfg", include_str!("../../../conf/zoo1.cfg")),
        ("zoo2.cfg", include_str!("../../../conf/zoo2.cfg")),
        ("zoo3.cfg", include_str!("../../../conf/zoo3.cfg")),
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
        // Every client of the loopback setup comes from 127.0.0.1, and the README's load
        // scenario opens 400 connections: a per-IP limit refused most of them.
        assert_eq!(
            config.max_client_cnxns, None,
            "{name}: a per-IP connection limit"
        );
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
    assert_eq!(
        error("dataDir=/d"),
        "neither clientPort nor secureClientPort is set"
    );
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
        "sslQuorumReloadCertFiles=true
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
            ConfigWarning::NoEffect { key, .. } | ConfigWarning::UnknownKey { key } => key.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        keys,
        [
            "sslQuorumReloadCertFiles",
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
        "sslQuorumReloadCertFiles has no effect in Paddock: certificate files are read once, \
         at start-up"
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
    assert_eq!(config.client_addr.map(|a| a.port()), Some(2181));
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
    assert_eq!(config.client_addr, Some("0.0.0.0:2181".parse().unwrap()));
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
    assert_eq!(config.client_addr, Some("127.0.0.1:2182".parse().unwrap()));
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
        Err(ConfigError::NoClientPort)
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

#[test]
fn zookeepers_tls_lines_configure_the_secure_port_and_peer_links() {
    let text = "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=/var/lib/zk\n\
                clientPort=2181\nsecureClientPort=2281\n\
                serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                ssl.keyStore.location=certs/server.pem\nssl.keyStore.type=PEM\n\
                ssl.trustStore.location=/etc/zk/ca.pem\nssl.trustStore.type=PEM\n\
                ssl.clientAuth=want\n\
                X509AuthenticationProvider.superUser=CN=admin,O=Ops\n\
                authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n\
                sslQuorum=true\nssl.quorum.keyStore.location=/etc/zk/peer.pem\n\
                ssl.quorum.trustStore.location=/etc/zk/ca.pem\n\
                ssl.quorum.hostnameVerification=false\n\
                server.1=h1:2888:3888\nserver.2=h2:2888:3888\nserver.3=h3:2888:3888\n";
    let config = parse_as(text, "1").unwrap();
    assert_eq!(config.warnings, []);
    assert_eq!(
        config.secure_client_addr,
        Some("0.0.0.0:2281".parse().unwrap())
    );
    let client = config.client_tls.expect("client TLS");
    assert_eq!(client.client_auth, ClientAuth::Want);
    assert_eq!(client.super_user.as_deref(), Some("CN=admin,O=Ops"));
    assert_eq!(
        client.stores.key_store,
        Path::new("/etc/paddock/certs/server.pem")
    );
    assert_eq!(
        client.stores.trust_store.as_deref(),
        Some(Path::new("/etc/zk/ca.pem"))
    );
    let quorum = config.quorum_tls.expect("quorum TLS");
    assert!(!quorum.hostname_verification);
    assert_eq!(quorum.stores.key_store, Path::new("/etc/zk/peer.pem"));
}

#[test]
fn tls_defaults_follow_zookeeper() {
    let config = parse(&minimal(
        "secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem",
    ))
    .unwrap();
    // ZooKeeper's X509Util.ClientAuth: an unset ssl.clientAuth means need.
    assert_eq!(config.client_tls.unwrap().client_auth, ClientAuth::Need);
    // A secure port alone is enough: clients need not have a plain one.
    let secure_only = parse(
        "tickTime=2000\ndataDir=/d\nsecureClientPort=2281\n\
         ssl.keyStore.location=/k.pem\nssl.clientAuth=none",
    )
    .unwrap();
    assert_eq!(secure_only.client_addr, None);
    assert_eq!(secure_only.client_tls.unwrap().stores.trust_store, None);
}

#[test]
fn tls_settings_that_would_weaken_security_are_refused() {
    let secure = "secureClientPort=2281\nssl.keyStore.location=/k.pem\n\
                  ssl.trustStore.location=/t.pem\n";
    for (line, expected) in [
        (
            "ssl.keyStore.password=secret",
            "encrypted private keys are not supported",
        ),
        ("ssl.crl=true", "revocation"),
        ("ssl.context.supplier.class=a.B", "SSLContext supplier"),
        ("ssl.keyStore.type=JKS", "PEM key and trust stores only"),
        ("ssl.quorum.clientAuth=none", "both ends"),
        ("ssl.clientAuth=maybe", "none, want or need"),
    ] {
        let message = error(&minimal(&format!("{secure}{line}")));
        assert!(message.contains(expected), "{line}: {message}");
    }
    assert_eq!(
        error(&minimal(
            "secureClientPort=2281\nssl.keyStore.location=/keys/server.jks"
        )),
        "/keys/server.jks is not a PEM file (its name does not end in .pem): Paddock reads \
         PEM key and trust stores only; convert the store (openssl, keytool) and set \
         ssl.keyStore.type=PEM"
    );
    assert_eq!(
        error(&minimal(
            "secureClientPort=2281\nssl.keyStore.location=/k.pem"
        )),
        "ssl.trustStore.location is not set"
    );
    assert_eq!(
        error(&minimal("secureClientPortAddress=127.0.0.1")),
        "secureClientPortAddress is set but secureClientPort is not set"
    );
    let peers = "initLimit=5\nsyncLimit=2\nserver.1=h1:2888:3888\nserver.2=h2:2888:3888\n\
                 server.3=h3:2888:3888\nsslQuorum=true\nssl.quorum.keyStore.location=/p.pem\n";
    assert!(matches!(
        parse_as(&minimal(peers), "1"),
        Err(ConfigError::Missing {
            key: "ssl.quorum.trustStore.location"
        })
    ));
}
