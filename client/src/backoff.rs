//! Pauses between rounds of connection attempts: exponential, capped, with jitter.
//!
//! Each pause is drawn from the upper half of the current step ("equal jitter"): never
//! under half the step, so the doubling still spaces the rounds out, yet spread enough
//! that clients cut off together (a server restart, a partition) do not all come back
//! in the same instant.

use std::time::Duration;

#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    /// The step of the next pause, before jitter.
    step: Duration,
    /// No step grows past this, so a long outage is noticed within `max` of healing.
    max: Duration,
}

impl Backoff {
    /// Steps of `initial`, doubling up to `max` (an `initial` above `max` is `max`).
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            step: initial.min(max),
            max,
        }
    }

    /// The next pause, in `[step / 2, step]`; the step then doubles up to the cap.
    pub fn next_delay(&mut self) -> Duration {
        self.next_with(random_u64())
    }

    /// `next_delay` with the draw given: `None` (no randomness to be had) is the full
    /// step, as before jitter.
    fn next_with(&mut self, draw: Option<u64>) -> Duration {
        let step = self.step;
        self.step = self.step.saturating_mul(2).min(self.max);
        match draw {
            Some(draw) => jittered(step, draw),
            None => step,
        }
    }
}

/// A pause in `[step / 2, step]`, placed by `draw` (0 is the bottom, `u64::MAX` the top).
fn jittered(step: Duration, draw: u64) -> Duration {
    let half = step / 2;
    let span = (step - half).as_nanos();
    // The draw's top 32 bits: fine enough, and the product fits in u128 for any step.
    let extra = span * u128::from(draw >> 32) / u128::from(u32::MAX);
    half + Duration::from_nanos(u64::try_from(extra).unwrap_or(u64::MAX))
}

fn random_u64() -> Option<u64> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(u64::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn session_backoff() -> Backoff {
        Backoff::new(50 * MS, 1000 * MS)
    }

    #[test]
    fn each_pause_lies_between_half_the_step_and_the_step() {
        let mut backoff = session_backoff();
        let mut step = 50 * MS;
        for _ in 0..20 {
            let pause = backoff.next_delay();
            assert!(pause >= step / 2 && pause <= step, "{pause:?} for {step:?}");
            step = (step * 2).min(1000 * MS);
        }
    }

    #[test]
    fn steps_double_until_the_cap_then_stay() {
        let mut backoff = session_backoff();
        let tops: Vec<Duration> = (0..8).map(|_| backoff.next_with(Some(u64::MAX))).collect();
        let want: Vec<Duration> = [50, 100, 200, 400, 800, 1000, 1000, 1000]
            .map(|ms| ms * MS)
            .to_vec();
        assert_eq!(tops, want);
    }

    #[test]
    fn no_pause_exceeds_the_cap() {
        let mut backoff = Backoff::new(5000 * MS, 1000 * MS);
        for _ in 0..100 {
            assert!(backoff.next_delay() <= 1000 * MS);
        }
        // Doubling a huge step saturates instead of overflowing.
        let mut backoff = Backoff::new(Duration::MAX, Duration::MAX);
        assert!(backoff.next_delay() <= Duration::MAX);
        assert!(backoff.next_delay() <= Duration::MAX);
    }

    #[test]
    fn the_draw_spans_the_upper_half_of_the_step() {
        let step = 1000 * MS;
        assert_eq!(jittered(step, 0), 500 * MS);
        assert_eq!(jittered(step, u64::MAX), step);
        assert_eq!(
            jittered(step, u64::MAX / 2),
            750 * MS - Duration::from_nanos(1)
        );
        // Without randomness the pause is the plain step.
        assert_eq!(session_backoff().next_with(None), 50 * MS);
    }

    #[test]
    fn real_draws_spread_over_the_range() {
        // A fleet must not pause alike. 1000 uniform draws span less than a fifth of the
        // range with a probability below 1000 * 0.2^999.
        let pauses: Vec<Duration> = (0..1000)
            .map(|_| Backoff::new(1000 * MS, 1000 * MS).next_delay())
            .collect();
        let low = pauses.iter().min().copied().unwrap_or_default();
        let high = pauses.iter().max().copied().unwrap_or_default();
        assert!(low >= 500 * MS && high <= 1000 * MS, "{low:?}..{high:?}");
        assert!(high - low >= 100 * MS, "{low:?}..{high:?}");
    }
}
