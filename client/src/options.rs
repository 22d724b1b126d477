//! How to connect: session timeout, credentials, read-only mode, TLS.

use std::time::Duration;

use bytes::Bytes;
use paddock_wire::{Acl, CreateMode, DEFAULT_MAX_FRAME};

use crate::tls::TlsOptions;

/// Options for [`Client::connect`](crate::Client::connect).
///
/// ```
/// # use std::time::Duration;
/// # use paddock_client::ConnectOptions;
/// let options = ConnectOptions {
///     session_timeout: Duration::from_secs(5),
///     ..ConnectOptions::default()
/// };
/// ```
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The session timeout to ask for. The server clamps it into its own bounds
    /// (by default 2 to 20 ticks); [`Client::session_timeout`](crate::Client::session_timeout)
    /// gives the negotiated value, which drives pings (after a third of it idle) and
    /// reconnects.
    pub session_timeout: Duration,
    /// How long [`Client::connect`](crate::Client::connect) tries the servers before it
    /// gives up; `None` means the session timeout.
    pub connect_timeout: Option<Duration>,
    /// Accept a server in read-only mode (`ConnectedReadOnly`) when no read-write one
    /// answers.
    pub read_only: bool,
    /// Credentials (`scheme`, `auth`) sent with `addauth` as soon as the session is
    /// established, before `connect` returns.
    pub auth: Vec<(String, Vec<u8>)>,
    /// Reattach to an existing session instead of creating one.
    pub session: Option<SessionCredentials>,
    /// The largest frame accepted from or sent to the server (ZooKeeper's
    /// `jute.maxbuffer` plus its header allowance, by default).
    pub max_frame: usize,
    /// Give up at once with [`Error::Refused`](crate::Error::Refused) when every server
    /// of the connect string refuses the connection, instead of retrying until the
    /// connect timeout: for tools a person is waiting on, where a refused port is
    /// almost always a wrong address or a server that is not running. (A library
    /// client usually wants to ride out servers that are restarting.) A TLS handshake
    /// the server refused (no certificate, an untrusted one) or whose certificate the
    /// client does not trust counts as refused too.
    pub fail_fast_when_refused: bool,
    /// Connect with TLS (to ZooKeeper's `secureClientPort`); `None` for plain TCP.
    pub tls: Option<TlsOptions>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            session_timeout: Duration::from_secs(10),
            connect_timeout: None,
            read_only: false,
            auth: Vec::new(),
            session: None,
            max_frame: DEFAULT_MAX_FRAME,
            fail_fast_when_refused: false,
            tls: None,
        }
    }
}

impl ConnectOptions {
    /// Default options with the given session timeout.
    pub fn with_session_timeout(session_timeout: Duration) -> Self {
        ConnectOptions {
            session_timeout,
            ..ConnectOptions::default()
        }
    }
}

/// What identifies a session to the server: enough to reattach to it from another
/// connection (see [`Client::session_credentials`](crate::Client::session_credentials)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    /// The id the server assigned.
    pub session_id: i64,
    /// The secret that proves ownership of the session.
    pub password: Bytes,
}

/// How to create a node: the mode, the ACL and, for TTL modes, the TTL.
///
/// A bare [`CreateMode`] converts into options with the open ACL
/// (`world:anyone` with every permission):
/// `client.create("/a", b"x", CreateMode::Ephemeral)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// Persistent or ephemeral, sequential or not, container, TTL.
    pub mode: CreateMode,
    /// Who may do what to the node.
    pub acl: Vec<Acl>,
    /// Required for (and only allowed with) `PersistentWithTtl` and
    /// `PersistentSequentialWithTtl`: the node is removed once it has had no children and
    /// no change for this long. The server must run with `extendedTypesEnabled=true`.
    pub ttl: Option<Duration>,
}

impl CreateOptions {
    /// `mode` with the open ACL and no TTL.
    pub fn new(mode: CreateMode) -> Self {
        CreateOptions {
            mode,
            acl: Acl::open_unsafe(),
            ttl: None,
        }
    }

    /// Sets the ACL.
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// Sets the TTL of a TTL mode.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

impl From<CreateMode> for CreateOptions {
    fn from(mode: CreateMode) -> Self {
        CreateOptions::new(mode)
    }
}
