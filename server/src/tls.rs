//! TLS for the client port and peer links, from ZooKeeper's PEM key and trust stores
//! (`config::ClientTls`, `config::QuorumTls`), read once at start-up. rustls with the
//! ring provider; TLS 1.2 and 1.3.
//!
//! - Client port: the server's certificate from `ssl.keyStore.location`; clients'
//!   certificates checked against `ssl.trustStore.location` as `ssl.clientAuth` says.
//!   A verified client certificate gives the connection the identity
//!   `x509:<subject>` (and `super:` for `X509AuthenticationProvider.superUser`), as
//!   ZooKeeper's `X509AuthenticationProvider` does.
//! - Peer links: both ends present a certificate from `ssl.quorum.keyStore.location`
//!   and check the other's against `ssl.quorum.trustStore.location`; the connecting
//!   end also checks it against the peer's `server.N` host unless
//!   `ssl.quorum.hostnameVerification=false`.

mod subject;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::config::{ClientAuth, ClientTls, PemStores, QuorumTls};

pub use subject::{is_distinguished_name, subject_name};

/// Why the TLS set-up cannot be used; the server does not start.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Pem {
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("{} holds no certificate (a PEM key store holds the private key and the certificate chain)", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{} holds no private key, or one that is encrypted (a PEM key store holds an unencrypted PKCS#8, PKCS#1 or SEC1 key and the certificate chain)", path.display())]
    NoKey { path: PathBuf },
    #[error("{} holds no usable CA certificate: {reason}", path.display())]
    BadTrustStore { path: PathBuf, reason: String },
    #[error("{context}: {source}")]
    Rustls {
        context: String,
        #[source]
        source: rustls::Error,
    },
    #[error("cannot check certificates against {}: {reason}", path.display())]
    Verifier { path: PathBuf, reason: String },
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// The acceptor for TLS client connections.
pub fn client_acceptor(tls: &ClientTls) -> Result<TlsAcceptor, TlsError> {
    let (chain, key) = key_store(&tls.stores.key_store)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| rustls_error("TLS protocol versions", source))?;
    let builder = match (&tls.stores.trust_store, tls.client_auth) {
        (_, ClientAuth::None) | (None, _) => builder.with_no_client_auth(),
        (Some(path), auth) => {
            let roots = trust_store(path)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider());
            let verifier = if auth == ClientAuth::Want {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| TlsError::Verifier {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|source| key_error(&tls.stores.key_store, source))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Both ends of mutually authenticated peer links.
#[derive(Clone)]
pub struct PeerTls {
    pub acceptor: TlsAcceptor,
    pub connector: TlsConnector,
    /// The name each peer's certificate is checked against: its `server.N` host.
    pub names: Arc<HashMap<u64, ServerName<'static>>>,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerTls")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Peer TLS for the servers `hosts` (id → `server.N` host).
pub fn peer_tls(tls: &QuorumTls, hosts: &HashMap<u64, String>) -> Result<PeerTls, TlsError> {
    let PemStores {
        key_store: key_path,
        trust_store: trust_path,
    } = &tls.stores;
    let trust_path = trust_path.as_ref().ok_or_else(|| TlsError::BadTrustStore {
        path: PathBuf::from("ssl.quorum.trustStore.location"),
        reason: "not set".into(),
    })?;
    let (chain, key) = key_store(key_path)?;
    let roots = trust_store(trust_path)?;
    let verifier_error = |reason: String| TlsError::Verifier {
        path: trust_path.clone(),
        reason,
    };
    let client_verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
        .build()
        .map_err(|e| verifier_error(e.to_string()))?;
    let server = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| rustls_error("TLS protocol versions", source))?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(chain.clone(), key.clone_key())
        .map_err(|source| key_error(key_path, source))?;
    let server_verifier = WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| verifier_error(e.to_string()))?;
    let server_verifier: Arc<dyn ServerCertVerifier> = if tls.hostname_verification {
        server_verifier
    } else {
        Arc::new(AnyName(server_verifier))
    };
    let client = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| rustls_error("TLS protocol versions", source))?
        .dangerous()
        .with_custom_certificate_verifier(server_verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|source| key_error(key_path, source))?;
    let mut names = HashMap::new();
    for (&id, host) in hosts {
        let literal = host
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(host);
        let name = ServerName::try_from(literal.to_owned()).map_err(|e| TlsError::Verifier {
            path: trust_path.clone(),
            reason: format!(
                "server.{id}'s host {host:?} is not a name a certificate can hold: {e}"
            ),
        })?;
        names.insert(id, name);
    }
    Ok(PeerTls {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
        names: Arc::new(names),
    })
}

/// The private key and certificate chain of a PEM key store.
fn key_store(
    path: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let pem_error = |source| TlsError::Pem {
        path: path.to_owned(),
        source,
    };
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    let key = match PrivateKeyDer::from_pem_file(path) {
        Ok(key) => key,
        Err(rustls_pki_types::pem::Error::NoItemsFound) => {
            return Err(TlsError::NoKey {
                path: path.to_owned(),
            })
        }
        Err(source) => return Err(pem_error(source)),
    };
    Ok((chain, key))
}

/// The CA certificates of a PEM trust store.
fn trust_store(path: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let pem_error = |source| TlsError::Pem {
        path: path.to_owned(),
        source,
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(pem_error)? {
        roots
            .add(cert.map_err(pem_error)?)
            .map_err(|e| TlsError::BadTrustStore {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
    }
    if roots.is_empty() {
        return Err(TlsError::BadTrustStore {
            path: path.to_owned(),
            reason: "no certificate found".into(),
        });
    }
    Ok(Arc::new(roots))
}

fn rustls_error(context: &str, source: rustls::Error) -> TlsError {
    TlsError::Rustls {
        context: context.to_owned(),
        source,
    }
}

fn key_error(path: &Path, source: rustls::Error) -> TlsError {
    TlsError::Rustls {
        context: format!("the key and certificates of {}", path.display()),
        source,
    }
}

/// A peer's certificate checked against the trust store but not against its host
/// name (`ssl.quorum.hostnameVerification=false`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
