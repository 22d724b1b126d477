//! What the test suites of the server, the client and the loadgen share.
//!
//! Only what must be the same everywhere lives here; each suite's own support module
//! keeps what is particular to it.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// Ports are taken from here, below the kernel's ephemeral range (32768 and up by
/// default).
const FIRST_PORT: u16 = 20_000;
const PORT_SPAN: u16 = 12_000;

/// A port free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct ports free on 127.0.0.1 a moment ago: held together while chosen, so
/// none is handed out twice.
///
/// Not from `bind(0)`: such a port sits in the ephemeral range, where any outgoing
/// connection (the suites make thousands) may take it as its local port between the
/// choice and the server's own bind, and a server that cannot bind never serves. Here
/// a process-wide cursor walks the range below it, from an offset of its own in each
/// test binary, and each port is checked by binding it.
pub fn free_ports(n: usize) -> Vec<u16> {
    static CURSOR: OnceLock<AtomicU32> = OnceLock::new();
    let cursor = CURSOR.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        AtomicU32::new(nanos ^ std::process::id())
    });
    let mut held: Vec<TcpListener> = Vec::with_capacity(n);
    for _ in 0..PORT_SPAN {
        if held.len() == n {
            break;
        }
        let next = cursor.fetch_add(1, Ordering::Relaxed) % u32::from(PORT_SPAN);
        let port = FIRST_PORT + u16::try_from(next).unwrap_or(0);
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
        }
    }
    assert_eq!(held.len(), n, "no {n} free ports from {FIRST_PORT} up");
    held.iter()
        .map(|l| l.local_addr().expect("a bound listener's address").port())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_below_the_ephemeral_range_and_free() {
        let ports = free_ports(50);
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), 50);
        for port in ports {
            assert!((FIRST_PORT..FIRST_PORT + PORT_SPAN).contains(&port));
            TcpListener::bind(("127.0.0.1", port)).expect("still free");
        }
    }
}
