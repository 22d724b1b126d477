//! Numbers that must never repeat across servers or across restarts of one server:
//! request ids (a reply or a late commit must never complete another request's waiter)
//! and connection ids (a write from a connection of an earlier incarnation must never
//! pass for one of a new connection's).
//!
//! Each counter starts at a random point of a 2^62 space and counts up, so two
//! incarnations' ranges overlap only with negligible probability.

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter whose values are unique to this process incarnation.
#[derive(Debug)]
pub struct UniqueIds {
    next: AtomicU64,
}

impl UniqueIds {
    pub fn new() -> Self {
        let mut seed = [0u8; 8];
        if getrandom::getrandom(&mut seed).is_err() {
            // No entropy source: the clock still differs between incarnations.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            seed = nanos.to_le_bytes();
        }
        // Positive as an i64 (it travels in jute longs), never 0 (0 means "none").
        let start = (u64::from_le_bytes(seed) >> 2).max(1);
        UniqueIds {
            next: AtomicU64::new(start),
        }
    }

    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

impl Default for UniqueIds {
    fn default() -> Self {
        UniqueIds::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incarnations_do_not_share_ids() {
        let first = UniqueIds::new();
        let second = UniqueIds::new();
        let a: Vec<u64> = (0..1000).map(|_| first.next()).collect();
        let b: Vec<u64> = (0..1000).map(|_| second.next()).collect();
        assert!(a.iter().all(|id| !b.contains(id)));
        assert!(a.iter().chain(&b).all(|id| *id > 0 && (*id as i64) > 0));
    }
}
