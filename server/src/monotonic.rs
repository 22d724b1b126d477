//! An `Instant` that threads can share without a lock: the time since a process-wide
//! epoch, in microseconds, in an atomic (0 means "never").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // Set lazily, so an hour back: an Instant taken just before the first use still
    // comes after it.
    *EPOCH.get_or_init(|| {
        let now = Instant::now();
        now.checked_sub(Duration::from_secs(3600)).unwrap_or(now)
    })
}

#[derive(Debug, Default)]
pub struct AtomicInstant {
    micros: AtomicU64,
}

impl AtomicInstant {
    pub fn store(&self, at: Instant) {
        let micros = at.saturating_duration_since(epoch()).as_micros();
        // +1 keeps a time at the epoch itself distinct from "never".
        let micros = u64::try_from(micros).unwrap_or(u64::MAX - 1) + 1;
        self.micros.store(micros, Ordering::Release);
    }

    pub fn clear(&self) {
        self.micros.store(0, Ordering::Release);
    }

    pub fn load(&self) -> Option<Instant> {
        match self.micros.load(Ordering::Acquire) {
            0 => None,
            micros => Some(epoch() + Duration::from_micros(micros - 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_loads_to_the_microsecond() {
        let shared = AtomicInstant::default();
        assert_eq!(shared.load(), None);
        let now = Instant::now();
        shared.store(now);
        let back = shared.load().unwrap();
        assert!(back <= now && now.duration_since(back) < Duration::from_micros(1));
        shared.clear();
        assert_eq!(shared.load(), None);
    }
}
