//! Accepts client connections, enforcing `maxClientCnxns` per IP address; on a TLS
//! port, runs the handshake and turns a verified client certificate into the
//! connection's `x509` identity.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::conn::{self, ClientStream};
use crate::server::Server;
use crate::session::Caller;
use crate::tls;

/// How long a TLS client may take over its handshake: a JVM's first handshake (class
/// loading, key generation) can take seconds on a busy machine, so this is not the
/// session timeout; it still bounds what a silent client holds.
const TLS_HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The first byte of a TLS handshake record: how a unified port tells TLS clients
/// from plain ones, as ZooKeeper's `portUnification` does.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// How a port's connections are secured.
#[derive(Clone)]
pub enum Security {
    Plain,
    /// TLS only (`secureClientPort`).
    Tls(ClientTls),
    /// Plain and TLS clients on one port (`portUnification`).
    Unified(ClientTls),
}

/// What a TLS port needs.
#[derive(Clone)]
pub struct ClientTls {
    pub acceptor: TlsAcceptor,
    /// The certificate subject that is the super user.
    pub super_user: Option<Arc<str>>,
}

pub async fn run(listener: TcpListener, server: Arc<Server>, security: Security) {
    let per_ip: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = server.shutdown.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Typically EMFILE: back off briefly rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let limit = server.settings.max_client_cnxns;
        {
            let mut counts = per_ip.lock();
            let count = counts.entry(peer.ip()).or_default();
            if limit > 0 && *count >= limit {
                tracing::warn!(%peer, "too many connections from {} - max is {limit}", peer.ip());
                continue;
            }
            *count += 1;
        }
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        let per_ip = per_ip.clone();
        let security = security.clone();
        tokio::spawn(async move {
            // The handshake is bounded: a client that says nothing is not held on to.
            let limit = match security {
                Security::Plain => Duration::MAX,
                Security::Tls(_) | Security::Unified(_) => {
                    TLS_HANDSHAKE_LIMIT.max(server.settings.min_session_timeout)
                }
            };
            let secured = tokio::select! {
                secured = tokio::time::timeout(limit, secure(stream, peer, &security)) => secured,
                _ = server.shutdown.cancelled() => Ok(None),
            };
            match secured {
                Ok(Some((stream, caller))) => conn::serve(stream, peer, caller, server).await,
                Ok(None) => {}
                Err(_) => tracing::info!(%peer, "no TLS handshake within {limit:?}; closing"),
            }
            let mut counts = per_ip.lock();
            if let Some(count) = counts.get_mut(&peer.ip()) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&peer.ip());
                }
            }
        });
    }
}

/// The connection as the server will serve it, and who its client has proven to be;
/// `None` when it was refused (logged).
async fn secure(
    stream: TcpStream,
    peer: SocketAddr,
    security: &Security,
) -> Option<(ClientStream, Caller)> {
    let caller = Caller::for_peer(peer);
    let tls = match security {
        Security::Plain => return Some((ClientStream::plain(stream), caller)),
        Security::Tls(tls) => tls,
        Security::Unified(tls) => {
            let mut first = [0u8; 1];
            match stream.peek(&mut first).await {
                Ok(1) if first[0] == TLS_HANDSHAKE_RECORD => tls,
                Ok(_) => return Some((ClientStream::plain(stream), caller)),
                Err(e) => {
                    tracing::debug!(%peer, "connection failed before its first byte: {e}");
                    return None;
                }
            }
        }
    };
    let stream = match tls.acceptor.accept(stream).await {
        Ok(stream) => stream,
        Err(e) => {
            // ZooKeeper logs "Unsuccessful handshake" and closes: a client without a
            // certificate (ssl.clientAuth=need) or with one the trust store does not
            // vouch for ends here.
            tracing::warn!(%peer, "refused a client: TLS handshake failed: {e}");
            return None;
        }
    };
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first());
    let caller = match certificate {
        None => caller,
        Some(cert) => match tls::subject_name(cert) {
            Some(subject) => {
                tracing::info!(%peer, "authenticated x509 id {subject:?}");
                caller.with_certificate(subject, tls.super_user.as_deref())
            }
            None => {
                tracing::warn!(%peer, "refused a client: its certificate's subject is unreadable");
                return None;
            }
        },
    };
    Some((ClientStream::tls(stream), caller))
}
