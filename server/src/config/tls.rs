//! The TLS keys of `zoo.cfg`, as ZooKeeper 3.8 names them: the secure client port
//! (`secureClientPort`, `ssl.*`, `portUnification`), peer links (`sslQuorum`,
//! `ssl.quorum.*`) and the x509 super user. Files are named here and read when the
//! server starts (`crate::tls`).
//!
//! Paddock reads key and trust stores in ZooKeeper's PEM format only
//! (`ssl.keyStore.type=PEM`, or a name ending in `.pem`): the key store holds the
//! private key and the certificate chain in one file, the trust store the CA
//! certificates. Settings that would quietly weaken what the operator asked for —
//! encrypted keys, revocation checks, peer links without client certificates, a Java
//! `SSLContext` supplier — are refused rather than ignored.

use super::*;

/// The ZooKeeper class that provides the `x509` scheme: naming it in
/// `authProvider.N` is what ZooKeeper needs and what Paddock has built in.
const X509_PROVIDER_CLASS: &str = "org.apache.zookeeper.server.auth.X509AuthenticationProvider";

/// Whether a server asks TLS clients for a certificate (`ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Never asks.
    None,
    /// Asks; a client without one is still served, without an `x509` identity.
    Want,
    /// Refuses a client without a certificate its trust store vouches for
    /// (ZooKeeper's default).
    Need,
}

/// A PEM key store and trust store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemStores {
    /// The private key and the certificate chain (leaf first), in one file.
    pub key_store: PathBuf,
    /// The CA certificates peers' certificates must chain to; `None` only on the client
    /// port with `ssl.clientAuth=none`.
    pub trust_store: Option<PathBuf>,
}

/// TLS on the client port(s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTls {
    pub stores: PemStores,
    pub client_auth: ClientAuth,
    /// The certificate subject (as ZooKeeper writes it, RFC 2253) that is the super
    /// user (`X509AuthenticationProvider.superUser`).
    pub super_user: Option<String>,
}

/// TLS on peer links (`sslQuorum=true`): always mutual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumTls {
    pub stores: PemStores,
    /// Check a peer's certificate against the host name on its `server.N` line
    /// (`ssl.quorum.hostnameVerification`, default true).
    pub hostname_verification: bool,
}

/// The TLS keys as read, before the checks that span keys.
#[derive(Default)]
pub(super) struct TlsDraft {
    pub(super) secure_client_port: Option<u16>,
    secure_client_port_address: Option<String>,
    port_unification: Option<bool>,
    ssl_quorum: Option<bool>,
    super_user: Option<String>,
    client: StoreDraft,
    quorum: StoreDraft,
}

/// One `ssl.` or `ssl.quorum.` family.
#[derive(Default)]
struct StoreDraft {
    key_store: Option<String>,
    key_store_type: Option<String>,
    trust_store: Option<String>,
    trust_store_type: Option<String>,
    client_auth: Option<ClientAuth>,
    hostname_verification: Option<bool>,
}

/// The TLS part of [`Config`].
pub(super) struct TlsSettings {
    pub secure_client_addr: Option<SocketAddr>,
    pub port_unification: bool,
    pub client: Option<ClientTls>,
    pub quorum: Option<QuorumTls>,
}

impl TlsDraft {
    /// Takes `key` if it is a TLS key: `Ok(true)` when it was.
    pub(super) fn apply(
        &mut self,
        key: &str,
        value: &str,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<bool, ConfigError> {
        match key {
            "secureClientPort" => self.secure_client_port = Some(port(key, value)?),
            "secureClientPortAddress" => {
                if value.is_empty() {
                    return Err(invalid(key, value, "an IP address or host name"));
                }
                self.secure_client_port_address = Some(value.to_owned());
            }
            "portUnification" | "client.portUnification" => {
                self.port_unification = Some(boolean(key, value)?);
            }
            "sslQuorum" => self.ssl_quorum = Some(boolean(key, value)?),
            // zoo.cfg's unknown keys become `zookeeper.`-prefixed system properties in
            // ZooKeeper, so this line sets `zookeeper.X509AuthenticationProvider.superUser`.
            "X509AuthenticationProvider.superUser" => {
                self.super_user = (!value.is_empty()).then(|| value.to_owned());
            }
            "client.certReload" | "sslQuorumReloadCertFiles" => {
                if boolean(key, value)? {
                    no_effect(
                        warnings,
                        key,
                        "certificate files are read once, at start-up",
                    );
                }
            }
            _ if key.starts_with("authProvider.") && value == X509_PROVIDER_CLASS => {}
            _ => {
                if let Some(rest) = key.strip_prefix("ssl.quorum.") {
                    return self.quorum.apply(key, rest, value, true, warnings);
                }
                if let Some(rest) = key.strip_prefix("ssl.") {
                    return self.client.apply(key, rest, value, false, warnings);
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The checks across TLS keys. `standalone`: no `server.N` lines.
    pub(super) fn finish(
        self,
        standalone: bool,
        base_dir: &Path,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<TlsSettings, ConfigError> {
        let secure_client_addr = match (self.secure_client_port, &self.secure_client_port_address) {
            (Some(port), address) => Some(resolve(
                "secureClientPortAddress",
                address.as_deref().unwrap_or("0.0.0.0"),
                port,
            )?),
            (None, Some(_)) => return Err(ConfigError::SecureClientPortAddressWithoutPort),
            (None, None) => None,
        };
        let port_unification = self.port_unification.unwrap_or(false);
        let client = if secure_client_addr.is_some() || port_unification {
            let client_auth = self.client.client_auth.unwrap_or(ClientAuth::Need);
            let stores = self
                .client
                .stores("ssl.", base_dir, client_auth != ClientAuth::None)?;
            Some(ClientTls {
                stores,
                client_auth,
                super_user: self.super_user,
            })
        } else {
            None
        };
        let quorum = match self.ssl_quorum {
            Some(true) if standalone => {
                no_effect(warnings, "sslQuorum", "a standalone server has no peers");
                None
            }
            Some(true) => Some(QuorumTls {
                stores: self.quorum.stores("ssl.quorum.", base_dir, true)?,
                hostname_verification: self.quorum.hostname_verification.unwrap_or(true),
            }),
            _ => None,
        };
        Ok(TlsSettings {
            secure_client_addr,
            port_unification,
            client,
            quorum,
        })
    }
}

impl StoreDraft {
    /// One `ssl.`/`ssl.quorum.` key; `rest` is what follows the prefix.
    fn apply(
        &mut self,
        key: &str,
        rest: &str,
        value: &str,
        quorum: bool,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<bool, ConfigError> {
        let set = |value: &str| (!value.is_empty()).then(|| value.to_owned());
        match rest {
            "keyStore.location" => self.key_store = set(value),
            "keyStore.type" => self.key_store_type = set(value),
            "trustStore.location" => self.trust_store = set(value),
            "trustStore.type" => self.trust_store_type = set(value),
            "keyStore.password" | "keyStore.passwordPath" if !value.is_empty() => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    reason: "encrypted private keys are not supported: store the key \
                             unencrypted (openssl pkcs8 -topk8 -nocrypt) in a file only \
                             the server can read",
                })
            }
            "clientAuth" => {
                let auth = match value.to_ascii_lowercase().as_str() {
                    "" | "need" => ClientAuth::Need,
                    "want" => ClientAuth::Want,
                    "none" => ClientAuth::None,
                    _ => return Err(invalid(key, value, "none, want or need")),
                };
                if quorum && auth != ClientAuth::Need {
                    return Err(ConfigError::Unsupported {
                        key: key.to_owned(),
                        reason: "peer links always authenticate both ends (need)",
                    });
                }
                self.client_auth = Some(auth);
            }
            "hostnameVerification" => self.hostname_verification = Some(boolean(key, value)?),
            "crl" | "ocsp" if boolean(key, value)? => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    reason: "certificate revocation (CRL, OCSP) is not checked",
                })
            }
            "context.supplier.class" => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    reason: "a Java SSLContext supplier cannot be loaded; give PEM key and \
                             trust stores",
                })
            }
            "authProvider" if !quorum && !value.is_empty() && value != "x509" => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    reason: "certificates authenticate with the built-in x509 scheme only",
                })
            }
            "protocol" | "enabledProtocols" | "ciphersuites" => no_effect(
                warnings,
                key,
                "TLS 1.2 or 1.3 is negotiated with rustls's cipher suites",
            ),
            // Password-less PEM trust stores, and timings of Java's own TLS detection.
            _ => {}
        }
        Ok(true)
    }

    /// The store files, checked to be PEM; `need_trust`: a trust store is required.
    fn stores(
        &self,
        prefix: &'static str,
        base_dir: &Path,
        need_trust: bool,
    ) -> Result<PemStores, ConfigError> {
        let key_store_key = if prefix == "ssl." {
            "ssl.keyStore.location"
        } else {
            "ssl.quorum.keyStore.location"
        };
        let trust_store_key = if prefix == "ssl." {
            "ssl.trustStore.location"
        } else {
            "ssl.quorum.trustStore.location"
        };
        let key_store = self
            .key_store
            .as_deref()
            .ok_or(ConfigError::Missing { key: key_store_key })?;
        check_pem(
            prefix,
            "keyStore",
            key_store,
            self.key_store_type.as_deref(),
        )?;
        let trust_store = match self.trust_store.as_deref() {
            Some(path) => {
                check_pem(prefix, "trustStore", path, self.trust_store_type.as_deref())?;
                Some(base_dir.join(path))
            }
            None if need_trust => {
                return Err(ConfigError::Missing {
                    key: trust_store_key,
                })
            }
            None => None,
        };
        Ok(PemStores {
            key_store: base_dir.join(key_store),
            trust_store,
        })
    }
}

/// ZooKeeper's `KeyStoreFileType.fromPropertyValueOrFileName`, for PEM alone.
fn check_pem(
    prefix: &str,
    store: &str,
    path: &str,
    given_type: Option<&str>,
) -> Result<(), ConfigError> {
    let is_pem = match given_type {
        Some(kind) => kind.eq_ignore_ascii_case("PEM"),
        None => path.ends_with(".pem"),
    };
    if is_pem {
        return Ok(());
    }
    Err(ConfigError::NotPem {
        key: format!("{prefix}{store}.type"),
        path: path.to_owned(),
        given: given_type.map(str::to_owned),
    })
}

fn no_effect(warnings: &mut Vec<ConfigWarning>, key: &str, reason: &'static str) {
    warnings.push(ConfigWarning::NoEffect {
        key: key.to_owned(),
        reason,
    });
}
