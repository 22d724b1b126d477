//! The session's state as the application observes it.

use crate::error::Error;

/// Where the session stands. Observe changes with
/// [`Client::state_watcher`](crate::Client::state_watcher).
///
/// `Expired`, `AuthFailed` and `Closed` are terminal: every later call on the client
/// fails, and a new [`Client`](crate::Client) has to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Connected to a server that serves reads and writes.
    Connected,
    /// Connected to a server in read-only mode (partitioned from its quorum); writes fail
    /// with `NotReadOnly`. Only when [`ConnectOptions::read_only`](crate::ConnectOptions)
    /// is set.
    ConnectedReadOnly,
    /// The connection broke; the client is reconnecting. The session, its ephemeral nodes
    /// and its watches survive if it reconnects within the session timeout. Requests made
    /// meanwhile wait and are sent after the reconnect.
    Disconnected,
    /// The session is gone: the server said so, or no server could be reached for a
    /// whole session timeout.
    Expired,
    /// The server refused the credentials of an `addauth`.
    AuthFailed,
    /// [`Client::close`](crate::Client::close) was called, or every handle was dropped.
    Closed,
}

impl SessionState {
    /// Connected, read-write or read-only.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    /// The session can never be used again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }

    /// The error that calls fail with in this terminal state.
    pub(crate) fn terminal_error(self) -> Error {
        match self {
            SessionState::Expired => Error::SessionExpired,
            SessionState::AuthFailed => Error::AuthFailed,
            _ => Error::Closed,
        }
    }
}
