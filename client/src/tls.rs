//! TLS to a server's secure client port (ZooKeeper's `secureClientPort`): rustls with
//! the ring provider, TLS 1.2 and 1.3.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use paddock_client::{Client, ConnectOptions, TlsOptions};
//! let options = ConnectOptions {
//!     // Trust the CA in ca.pem; present client.pem (certificate chain and key).
//!     tls: Some(TlsOptions::from_pem("ca.pem", Some(("client.pem", "client.pem")))?),
//!     ..ConnectOptions::default()
//! };
//! let client = Client::connect("zk1.example.com:2281", options).await?;
//! # Ok(()) }
//! ```
//!
//! The server's certificate must chain to a CA of the trust file and name the host of
//! the connect string (a DNS name, or an IP address for a literal address). For other
//! policies, build a rustls `ClientConfig` and use [`TlsOptions::new`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// How to secure connections to the servers; see the [module docs](self).
#[derive(Clone)]
pub struct TlsOptions {
    config: Arc<ClientConfig>,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions").finish_non_exhaustive()
    }
}

/// Why [`TlsOptions::from_pem`] cannot use the files.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or is not PEM.
    #[error("cannot read {}: {source}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The file has no certificate where one is needed.
    #[error("{} holds no certificate", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file has no (unencrypted) private key.
    #[error("{} holds no unencrypted private key", path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the certificates or the key.
    #[error("{context}: {source}")]
    Rustls {
        /// What was being set up.
        context: String,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
}

impl TlsOptions {
    /// Uses a rustls configuration as it is.
    pub fn new(config: Arc<ClientConfig>) -> Self {
        TlsOptions { config }
    }

    /// Trusts the CA certificates in the PEM file `ca` and, with `identity` (a PEM
    /// certificate chain and a PEM private key; one file may hold both, as ZooKeeper's
    /// PEM key stores do), presents a client certificate.
    pub fn from_pem(
        ca: impl AsRef<Path>,
        identity: Option<(impl AsRef<Path>, impl AsRef<Path>)>,
    ) -> Result<TlsOptions, TlsError> {
        let ca = ca.as_ref();
        let mut roots = RootCertStore::empty();
        for cert in certificates(ca)? {
            roots.add(cert).map_err(|source| TlsError::Rustls {
                context: format!("the CA certificates in {}", ca.display()),
                source,
            })?;
        }
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|source| TlsError::Rustls {
                    context: "TLS protocol versions".into(),
                    source,
                })?
                .with_root_certificates(roots);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let (cert, key) = (cert.as_ref(), key.as_ref());
                let chain = certificates(cert)?;
                let private_key = match PrivateKeyDer::from_pem_file(key) {
                    Ok(private_key) => private_key,
                    Err(rustls_pki_types::pem::Error::NoItemsFound) => {
                        return Err(TlsError::NoKey { path: key.into() })
                    }
                    Err(source) => {
                        return Err(TlsError::Pem {
                            path: key.into(),
                            source,
                        })
                    }
                };
                builder
                    .with_client_auth_cert(chain, private_key)
                    .map_err(|source| TlsError::Rustls {
                        context: format!("the client certificate {}", cert.display()),
                        source,
                    })?
            }
        };
        Ok(TlsOptions::new(Arc::new(config)))
    }

    /// Runs the handshake with the server at `host` (`host:port` from the connect
    /// string), checking its certificate against the host's name.
    pub(crate) async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let name = server_name(host)?;
        TlsConnector::from(self.config.clone())
            .connect(name, stream)
            .await
    }
}

/// The name a server's certificate must hold: the host of `host:port`, brackets of an
/// IPv6 literal removed.
fn server_name(host_port: &str) -> std::io::Result<ServerName<'static>> {
    let host = host_port
        .rsplit_once(':')
        .map_or(host_port, |(host, _port)| host);
    let host = host
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(host.to_owned()).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{host:?} cannot be checked against a certificate: {e}"),
        )
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem_error = |source| TlsError::Pem {
        path: path.into(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { path: path.into() });
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_the_host_of_the_address() {
        assert_eq!(
            server_name("zk1.example.com:2281").unwrap(),
            ServerName::try_from("zk1.example.com").unwrap()
        );
        assert_eq!(
            server_name("127.0.0.1:2281").unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            server_name("[::1]:2281").unwrap(),
            ServerName::try_from("::1").unwrap()
        );
    }
}
