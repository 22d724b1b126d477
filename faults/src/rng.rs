//! A small seeded generator (SplitMix64): the whole schedule of a run follows from one
//! printed seed, and the harness needs no more than uniform picks.

/// Deterministic for a given seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0; the modulo bias is irrelevant at these sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform index into a slice of length `n`.
    pub fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.below(n as u64)).unwrap_or(0)
    }

    /// Uniform in `[lo, hi]` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> std::time::Duration {
        std::time::Duration::from_millis(lo + self.below(hi.saturating_sub(lo) + 1))
    }

    /// A generator for a sub-task, independent of this one's later draws.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// A seed from the clock, for runs not asked to replay one.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Rng::new(nanos as u64 ^ u64::from(std::process::id())).next_u64() % 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = Rng::new(7);
        assert!((0..1000).all(|_| c.below(3) < 3));
    }
}
