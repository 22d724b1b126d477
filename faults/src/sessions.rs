//! Every client the harness makes, and every session state it goes through, with times:
//! the record from which "how long until a client on a cut-off server is told" is
//! measured.
//!
//! The rule checked (ZooKeeper's contract, Programmer's Guide, "Timeouts"): once a
//! server can no longer vouch for its clients' sessions to a quorum, each of its
//! clients must leave `Connected` (Disconnected or Expired) within one session timeout,
//! because by then the quorum may expire the session, delete its ephemerals and hand
//! its locks to others. The slack of one tick covers the server's expiry granularity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_client::{Client, ConnectOptions, SessionState};

use crate::cluster::Topology;
use crate::history::{micros, ms, Clock, Micros, Violation};

/// One observed state of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateChange {
    /// The harness's id for the client (one per session).
    pub client: u64,
    /// The server it is pinned to.
    pub server: usize,
    /// When the change was observed.
    pub at: Micros,
    /// The new state.
    pub state: SessionState,
}

/// Connects clients and records their state changes.
#[derive(Clone)]
pub struct Sessions {
    clock: Clock,
    topology: Topology,
    timeout: Duration,
    next_id: Arc<AtomicU64>,
    log: Arc<Mutex<Vec<StateChange>>>,
}

impl Sessions {
    /// A recorder for clients with session timeout `timeout`.
    pub fn new(clock: Clock, topology: Topology, timeout: Duration) -> Self {
        Sessions {
            clock,
            topology,
            timeout,
            next_id: Arc::new(AtomicU64::new(1)),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The session timeout clients ask for.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A new session pinned to server `server`, and its id; its state changes are
    /// recorded until it ends.
    pub async fn connect(&self, server: usize) -> Result<(u64, Client), paddock_client::Error> {
        let options = ConnectOptions {
            session_timeout: self.timeout,
            connect_timeout: Some(self.timeout),
            ..ConnectOptions::default()
        };
        let client = Client::connect(&self.topology.pinned(server), options).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut states = client.state_watcher();
        let first = *states.borrow_and_update();
        self.record(id, server, first);
        let this = self.clone();
        tokio::spawn(async move {
            // Ends when the session does (a terminal state) or the client is dropped.
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                this.record(id, server, state);
                if state.is_terminal() {
                    break;
                }
            }
        });
        Ok((id, client))
    }

    fn record(&self, client: u64, server: usize, state: SessionState) {
        let change = StateChange {
            client,
            server,
            at: self.clock.now(),
            state,
        };
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(change);
    }

    /// Every change so far, in observation order.
    pub fn changes(&self) -> Vec<StateChange> {
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// A server cut off from its quorum (isolated, paused or killed) from `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutOff {
    /// The server.
    pub server: usize,
    /// When the fault began.
    pub start: Micros,
    /// When it was healed.
    pub end: Micros,
}

/// For each client Connected to a cut-off server when the fault began: how long until it
/// left `Connected` (the samples), and a violation for each told later than `bound`, or
/// never told while the fault lasted longer than `bound`.
pub fn time_to_tell(
    changes: &[StateChange],
    cuts: &[CutOff],
    bound: Duration,
) -> (Vec<Micros>, Vec<Violation>) {
    let bound = micros(bound);
    let mut samples = Vec::new();
    let mut violations = Vec::new();
    for cut in cuts {
        let mut clients: Vec<u64> = changes
            .iter()
            .filter(|c| c.server == cut.server)
            .map(|c| c.client)
            .collect();
        clients.sort_unstable();
        clients.dedup();
        for client in clients {
            let mine: Vec<&StateChange> = changes.iter().filter(|c| c.client == client).collect();
            let before = mine.iter().rev().find(|c| c.at <= cut.start);
            if before.map(|c| c.state) != Some(SessionState::Connected) {
                continue;
            }
            let told = mine
                .iter()
                .find(|c| c.at > cut.start && c.state != SessionState::Connected);
            match told {
                Some(told) if told.at <= cut.end.max(cut.start + bound) + bound => {
                    let delay = told.at - cut.start;
                    samples.push(delay);
                    if delay > bound {
                        violations.push(Violation {
                            check: "client-told",
                            at: cut.start,
                            detail: format!(
                                "client {client} on cut-off server {} stayed Connected for \
                                 {:.0} ms (> {:.0} ms) before {:?}",
                                cut.server + 1,
                                ms(delay),
                                ms(bound),
                                told.state
                            ),
                        });
                    }
                }
                _ if cut.end - cut.start > bound => violations.push(Violation {
                    check: "client-told",
                    at: cut.start,
                    detail: format!(
                        "client {client} on cut-off server {} was never told during a \
                         {:.0} ms fault (still Connected)",
                        cut.server + 1,
                        ms(cut.end - cut.start)
                    ),
                }),
                _ => {}
            }
        }
    }
    (samples, violations)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(client: u64, at: Micros, state: SessionState) -> StateChange {
        StateChange {
            client,
            server: 0,
            at,
            state,
        }
    }

    const CUT: CutOff = CutOff {
        server: 0,
        start: 1_000_000,
        end: 9_000_000,
    };

    #[test]
    fn a_client_told_in_time_is_a_sample() {
        let changes = [
            change(1, 0, SessionState::Connected),
            change(1, 3_000_000, SessionState::Disconnected),
        ];
        let (samples, violations) = time_to_tell(&changes, &[CUT], Duration::from_secs(4));
        assert_eq!(samples, vec![2_000_000]);
        assert!(violations.is_empty());
    }

    #[test]
    fn a_client_never_told_is_a_violation() {
        let changes = [change(1, 0, SessionState::Connected)];
        let (samples, violations) = time_to_tell(&changes, &[CUT], Duration::from_secs(4));
        assert!(samples.is_empty());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("never told"));
    }

    #[test]
    fn a_client_told_late_is_a_violation() {
        let changes = [
            change(1, 0, SessionState::Connected),
            change(1, 7_000_000, SessionState::Expired),
        ];
        let (samples, violations) = time_to_tell(&changes, &[CUT], Duration::from_secs(4));
        assert_eq!(samples, vec![6_000_000]);
        assert_eq!(violations.len(), 1);
    }

    #[test]
    fn clients_elsewhere_or_not_connected_do_not_count() {
        let mut other = change(2, 0, SessionState::Connected);
        other.server = 1;
        let changes = [other, change(3, 0, SessionState::Disconnected)];
        let (samples, violations) = time_to_tell(&changes, &[CUT], Duration::from_secs(4));
        assert!(samples.is_empty() && violations.is_empty());
    }
}
