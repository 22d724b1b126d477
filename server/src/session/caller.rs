//! The identities a connection acts as: its IP address always, plus whatever it has
//! proven with `addauth`. They travel in each write's txn so ACLs are checked the same
//! way on every replica.

use std::net::SocketAddr;

use paddock_wire::{ErrorCode, Id};

use crate::acl;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    ids: Vec<Id>,
}

impl Caller {
    pub fn for_peer(peer: SocketAddr) -> Self {
        Caller {
            ids: vec![Id::new("ip", peer.ip().to_string())],
        }
    }

    /// Adds what a TLS client's verified certificate proves: `x509:<subject>`, and the
    /// super user when the subject is `X509AuthenticationProvider.superUser` (as
    /// ZooKeeper's `X509AuthenticationProvider` does once the handshake is done).
    pub fn with_certificate(mut self, subject: String, super_user: Option<&str>) -> Self {
        if super_user == Some(subject.as_str()) {
            self.push(Id::new("super", subject.clone()));
        }
        self.push(Id::new("x509", subject));
        self
    }

    /// The server acting for itself (session moves, housekeeping).
    pub fn internal() -> Self {
        Caller { ids: Vec::new() }
    }

    pub fn ids(&self) -> &[Id] {
        &self.ids
    }

    /// `addauth SCHEME AUTH` with the providers a default ZooKeeper registers:
    /// `digest` (a digest that matches `superDigest` also makes the caller the super
    /// user) and `ip`, which authenticates the connection as its own address whatever
    /// AUTH says — an identity every caller already holds; and `x509`, which succeeds
    /// only on a connection that presented a verified client certificate (whose
    /// identity it already holds).
    pub fn add_auth(
        &mut self,
        scheme: &str,
        auth: &[u8],
        super_digest: Option<&str>,
    ) -> Result<(), ErrorCode> {
        match scheme {
            "ip" => return Ok(()),
            "x509" if self.ids.iter().any(|id| id.scheme == "x509") => return Ok(()),
            "digest" => {}
            _ => return Err(ErrorCode::AuthFailed),
        }
        let credentials = std::str::from_utf8(auth).map_err(|_| ErrorCode::AuthFailed)?;
        if !credentials.contains(':') {
            return Err(ErrorCode::AuthFailed);
        }
        let digest = acl::generate_digest(credentials);
        if super_digest == Some(digest.as_str()) {
            self.push(Id::new("super", ""));
        }
        self.push(Id::new("digest", digest));
        Ok(())
    }

    fn push(&mut self, id: Id) {
        if !self.ids.contains(&id) {
            self.ids.push(id);
        }
    }
}
