//! The `admin.*` and `metricsProvider.*` keys: where the HTTP listener serves
//! `/commands`, `/metrics` and the health checks, and whether `/metrics` is also served
//! where ZooKeeper's Prometheus provider would serve it.
//!
//! ZooKeeper reads `admin.*` as the `zookeeper.admin.*` system properties of its
//! `JettyAdminServer` (enabled, 0.0.0.0:8080, `/commands`), and `metricsProvider.*` as
//! the settings of the class `metricsProvider.className` names; its
//! `PrometheusMetricsProvider` serves `/metrics` on `httpHost:httpPort`
//! (0.0.0.0:7000). Paddock serves `/metrics` on the admin listener in any case, and
//! on that second address too when the Prometheus provider is configured, so that a
//! scrape config written for ZooKeeper keeps working.

use super::*;

/// ZooKeeper's `JettyAdminServer.DEFAULT_PORT`.
pub(super) const DEFAULT_ADMIN_PORT: u16 = 8080;
/// ZooKeeper's `JettyAdminServer.DEFAULT_IDLE_TIMEOUT`, in milliseconds.
pub(super) const DEFAULT_IDLE_TIMEOUT_MS: u32 = 30_000;
/// ZooKeeper's `PrometheusMetricsProvider` default `httpPort`.
pub(super) const DEFAULT_METRICS_PORT: u16 = 7000;
const PROMETHEUS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
/// ZooKeeper's own providers that export nothing over HTTP.
const QUIET_PROVIDERS: [&str; 2] = [
    "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider",
    "org.apache.zookeeper.metrics.impl.NullMetricsProvider",
];

/// The HTTP listeners, from `admin.*` and `metricsProvider.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminServer {
    /// `admin.serverAddress:admin.serverPort`; `None` with `admin.enableServer=false`.
    pub listen: Option<HttpListen>,
    /// Where the commands live (`admin.commandURL`, default `/commands`), without a
    /// trailing slash.
    pub command_url: String,
    /// How long an HTTP connection may wait for its next request's header before it
    /// is closed (`admin.idleTimeout`, ZooKeeper's 30 s), on both listeners.
    pub idle_timeout: Duration,
    /// `metricsProvider.httpHost:httpPort` when `metricsProvider.className` names
    /// ZooKeeper's Prometheus provider: a second listener serving `/metrics` alone.
    pub metrics_listen: Option<HttpListen>,
}

/// One HTTP listen address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpListen {
    pub addr: SocketAddr,
    /// Whether the port was configured. A configured port that cannot be bound stops
    /// the server; ZooKeeper's default port (8080), which another server on the host
    /// may hold, is only warned about, and the server runs without it.
    pub required: bool,
}

/// The `admin.*` and `metricsProvider.*` values as read.
#[derive(Debug, Default)]
pub(super) struct AdminDraft {
    enable_server: Option<bool>,
    server_address: Option<String>,
    server_port: Option<u16>,
    command_url: Option<String>,
    idle_timeout_ms: Option<u32>,
    metrics_class: Option<String>,
    metrics_host: Option<String>,
    metrics_port: Option<u16>,
}

impl AdminDraft {
    /// Takes `key` if it is an `admin.*` or `metricsProvider.*` key; `Ok(false)` if it
    /// is not one.
    pub(super) fn apply(
        &mut self,
        key: &str,
        value: &str,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<bool, ConfigError> {
        let mut no_effect = |reason: &'static str| {
            warnings.push(ConfigWarning::NoEffect {
                key: key.to_owned(),
                reason,
            })
        };
        match key {
            "admin.enableServer" => self.enable_server = Some(boolean(key, value)?),
            "admin.serverAddress" => self.server_address = Some(host(key, value)?),
            "admin.serverPort" => self.server_port = Some(port(key, value)?),
            "admin.commandURL" => {
                let url = value.trim_end_matches('/');
                if !url.starts_with('/') || url.contains(['?', '#', '*']) {
                    return Err(invalid(key, value, "a path such as /commands"));
                }
                self.command_url = Some(url.to_owned());
            }
            "admin.idleTimeout" => self.idle_timeout_ms = Some(int(key, value, 1)?),
            "admin.httpVersion" => no_effect("the admin server speaks HTTP/1.1"),
            "admin.portUnification" | "admin.forceHttps" | "admin.needClientAuth"
                if !leaves_feature_off(value) =>
            {
                no_effect("the admin server speaks plain HTTP")
            }
            "admin.portUnification" | "admin.forceHttps" | "admin.needClientAuth" => {}
            "metricsProvider.className" => self.metrics_class = Some(value.to_owned()),
            "metricsProvider.httpHost" => self.metrics_host = Some(host(key, value)?),
            "metricsProvider.httpPort" => self.metrics_port = Some(port(key, value)?),
            // A Rust process has no JVM to describe; leaving it off asks for nothing.
            "metricsProvider.exportJvmInfo" if !leaves_feature_off(value) => {
                no_effect("there is no JVM; process_* metrics describe the server process")
            }
            "metricsProvider.exportJvmInfo" => {}
            "metricsProvider.numWorkerThreads"
            | "metricsProvider.maxQueueSize"
            | "metricsProvider.workerShutdownTimeoutMs" => {
                no_effect("metrics are recorded in place, with no worker threads or queue")
            }
            _ if key.starts_with("admin.") => {
                no_effect("not an admin server setting Paddock knows")
            }
            _ if key.starts_with("metricsProvider.") => {
                no_effect("not a metrics provider setting Paddock knows")
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The listeners, once every key is read.
    pub(super) fn finish(
        self,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<AdminServer, ConfigError> {
        let listen = if self.enable_server.unwrap_or(true) {
            let port = self.server_port.unwrap_or(DEFAULT_ADMIN_PORT);
            let host = self.server_address.as_deref().unwrap_or("0.0.0.0");
            Some(HttpListen {
                addr: resolve("admin.serverAddress", host, port)?,
                required: self.server_port.is_some(),
            })
        } else {
            None
        };
        let prometheus = match self.metrics_class.as_deref() {
            Some(PROMETHEUS_PROVIDER) => true,
            Some(class) if QUIET_PROVIDERS.contains(&class) => false,
            Some(_) => {
                warnings.push(ConfigWarning::NoEffect {
                    key: "metricsProvider.className".to_owned(),
                    reason: "only ZooKeeper's PrometheusMetricsProvider has a counterpart \
                             (/metrics on metricsProvider.httpPort)",
                });
                false
            }
            None => false,
        };
        let metrics_listen = if prometheus {
            let port = self.metrics_port.unwrap_or(DEFAULT_METRICS_PORT);
            let host = self.metrics_host.as_deref().unwrap_or("0.0.0.0");
            Some(HttpListen {
                addr: resolve("metricsProvider.httpHost", host, port)?,
                required: true,
            })
        } else {
            for (key, set) in [
                ("metricsProvider.httpHost", self.metrics_host.is_some()),
                ("metricsProvider.httpPort", self.metrics_port.is_some()),
            ] {
                if set {
                    warnings.push(ConfigWarning::NoEffect {
                        key: key.to_owned(),
                        reason: "used only with metricsProvider.className=\
                                 org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider; \
                                 /metrics is served on the admin port",
                    });
                }
            }
            None
        };
        if let (Some(admin), Some(metrics)) = (listen, metrics_listen) {
            if admin.addr.port() == metrics.addr.port() {
                return Err(ConfigError::InvalidValue {
                    key: "metricsProvider.httpPort".to_owned(),
                    value: metrics.addr.port().to_string(),
                    expected: "a port other than admin.serverPort (the admin port serves \
                               /metrics already)"
                        .to_owned(),
                });
            }
        }
        Ok(AdminServer {
            listen,
            command_url: self.command_url.unwrap_or_else(|| "/commands".to_owned()),
            idle_timeout: Duration::from_millis(u64::from(
                self.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS),
            )),
            metrics_listen,
        })
    }
}

fn host(key: &str, value: &str) -> Result<String, ConfigError> {
    if value.is_empty() {
        return Err(invalid(key, value, "an IP address or host name"));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admin(lines: &str) -> Result<(AdminServer, Vec<ConfigWarning>), ConfigError> {
        let mut draft = AdminDraft::default();
        let mut warnings = Vec::new();
        for line in lines.lines().filter(|l| !l.is_empty()) {
            let (key, value) = line.split_once('=').expect("key=value");
            assert!(draft.apply(key, value, &mut warnings)?, "{key} not taken");
        }
        Ok((draft.finish(&mut warnings)?, warnings))
    }

    #[test]
    fn defaults_are_zookeepers() {
        let (server, warnings) = admin("").unwrap();
        assert_eq!(
            server.listen,
            Some(HttpListen {
                addr: "0.0.0.0:8080".parse().unwrap(),
                required: false
            })
        );
        assert_eq!(server.command_url, "/commands");
        assert_eq!(server.idle_timeout, Duration::from_secs(30));
        assert_eq!(server.metrics_listen, None);
        assert_eq!(warnings, []);
    }

    #[test]
    fn configured_listeners_are_required() {
        let (server, warnings) = admin(
            "admin.serverAddress=127.0.0.1\nadmin.serverPort=9001\nadmin.commandURL=/cmds/\n\
             admin.idleTimeout=5000\n\
             metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\n\
             metricsProvider.httpHost=127.0.0.1\nmetricsProvider.exportJvmInfo=false",
        )
        .unwrap();
        let listen = server.listen.unwrap();
        assert_eq!(listen.addr, "127.0.0.1:9001".parse().unwrap());
        assert!(listen.required);
        assert_eq!(server.command_url, "/cmds");
        assert_eq!(server.idle_timeout, Duration::from_secs(5));
        assert_eq!(
            server.metrics_listen.map(|l| l.addr),
            Some("127.0.0.1:7000".parse().unwrap())
        );
        assert_eq!(warnings, []);
    }

    #[test]
    fn disabled_and_ignored_keys() {
        let (server, warnings) = admin(
            "admin.enableServer=false\nadmin.httpVersion=11\nmetricsProvider.httpPort=7001\n\
             metricsProvider.numWorkerThreads=4\nadmin.forceHttps=false\nadmin.frobnicate=1",
        )
        .unwrap();
        assert_eq!(server.listen, None);
        assert_eq!(server.metrics_listen, None);
        let keys: Vec<&str> = warnings
            .iter()
            .map(|w| match w {
                ConfigWarning::NoEffect { key, .. } => key.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            keys,
            [
                "admin.httpVersion",
                "metricsProvider.numWorkerThreads",
                "admin.frobnicate",
                "metricsProvider.httpPort"
            ]
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(admin("admin.serverPort=70000").is_err());
        assert!(admin("admin.enableServer=maybe").is_err());
        assert!(admin("admin.commandURL=commands").is_err());
        assert!(admin("admin.idleTimeout=0").is_err());
        assert!(admin(
            "admin.serverPort=7000\nmetricsProvider.className=\
             org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
        )
        .is_err());
    }
}
