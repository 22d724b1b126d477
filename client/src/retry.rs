//! Retry policies to wrap around any call (Curator's `RetryPolicy` family):
//! exponential with jitter and a bounded pause, a fixed number of times, or until a
//! total time has passed.
//!
//! ```no_run
//! # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
//! use std::time::Duration;
//! use paddock_client::retry::RetryPolicy;
//! let retry = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(5), 8);
//! let (data, _stat) = retry.run(|| client.get_data("/config")).await?;
//! # Ok(()) }
//! ```
//!
//! Only errors after which the same call may succeed are retried: a lost connection
//! (the session lives on and the call waits for the reconnect), and the server's
//! `ConnectionLoss`, `OperationTimeout` and `SessionMoved`. A write whose connection
//! was lost may have been applied: retry only calls that are safe to repeat (a
//! versioned `set_data`, a delete that accepts `NoNode`, a read), as with Curator.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::{Error, ErrorCode};

/// When and how often to retry a failed call.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// The first pause; it doubles after each retry up to `max_pause`.
    first_pause: Duration,
    max_pause: Duration,
    /// Retries after the first attempt, at most.
    max_retries: Option<u32>,
    /// No retry starts later than this after the first attempt.
    max_elapsed: Option<Duration>,
}

impl RetryPolicy {
    /// Up to `max_retries` retries, pausing `first_pause` (jittered into its upper
    /// half), doubling each time up to `max_pause` (Curator's
    /// `BoundedExponentialBackoffRetry`, `ExponentialBackoffRetry`).
    pub fn exponential(first_pause: Duration, max_pause: Duration, max_retries: u32) -> Self {
        RetryPolicy {
            first_pause,
            max_pause,
            max_retries: Some(max_retries),
            max_elapsed: None,
        }
    }

    /// Up to `retries` retries, `pause` (jittered into its upper half) apart (Curator's
    /// `RetryNTimes`).
    pub fn n_times(retries: u32, pause: Duration) -> Self {
        RetryPolicy {
            first_pause: pause,
            max_pause: pause,
            max_retries: Some(retries),
            max_elapsed: None,
        }
    }

    /// Retries `pause` (jittered) apart as long as `total` has not passed since the
    /// first attempt (Curator's `RetryUntilElapsed`).
    pub fn until_elapsed(total: Duration, pause: Duration) -> Self {
        RetryPolicy {
            first_pause: pause,
            max_pause: pause,
            max_retries: None,
            max_elapsed: Some(total),
        }
    }

    /// Never retries.
    pub fn never() -> Self {
        RetryPolicy::n_times(0, Duration::ZERO)
    }

    /// Whether this error is one a retry may cure.
    pub fn is_retryable(err: &Error) -> bool {
        err.is_retryable()
            || matches!(
                err,
                Error::Keeper(
                    ErrorCode::ConnectionLoss
                        | ErrorCode::OperationTimeout
                        | ErrorCode::SessionMoved
                )
            )
    }

    /// Runs `call` until it succeeds, fails with an error no retry cures, or the policy
    /// gives up; then returns its last result.
    pub async fn run<T, F, Fut>(&self, mut call: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let start = Instant::now();
        let mut backoff = Backoff::new(self.first_pause, self.max_pause);
        let mut retries = 0u32;
        loop {
            let err = match call().await {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            if !RetryPolicy::is_retryable(&err)
                || self.max_retries.is_some_and(|max| retries >= max)
            {
                return Err(err);
            }
            let pause = backoff.next_delay();
            if self
                .max_elapsed
                .is_some_and(|total| start.elapsed() + pause > total)
            {
                return Err(err);
            }
            tracing::debug!(%err, retry = retries + 1, ?pause, "retrying");
            tokio::time::sleep(pause).await;
            retries += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const MS: Duration = Duration::from_millis(1);

    /// A call that fails with `err` `failures` times, then succeeds; counts calls.
    async fn flaky(calls: &Cell<u32>, failures: u32, err: Error) -> Result<u32, Error> {
        calls.set(calls.get() + 1);
        if calls.get() <= failures {
            Err(err)
        } else {
            Ok(calls.get())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_lost_connections_until_success() {
        let calls = Cell::new(0);
        let policy = RetryPolicy::exponential(10 * MS, 100 * MS, 5);
        let start = Instant::now();
        let out = policy.run(|| flaky(&calls, 3, Error::ConnectionLoss)).await;
        assert_eq!(out.unwrap(), 4);
        // Three pauses, each at least half its step: 5 + 10 + 20 ms.
        assert!(start.elapsed() >= 35 * MS, "{:?}", start.elapsed());
        assert!(start.elapsed() <= 70 * MS, "{:?}", start.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_its_retries_with_the_last_error() {
        let calls = Cell::new(0);
        let out = RetryPolicy::n_times(2, 10 * MS)
            .run(|| flaky(&calls, 100, Error::Keeper(ErrorCode::OperationTimeout)))
            .await;
        assert!(matches!(
            out,
            Err(Error::Keeper(ErrorCode::OperationTimeout))
        ));
        assert_eq!(calls.get(), 3);
        let calls = Cell::new(0);
        let out = RetryPolicy::never()
            .run(|| flaky(&calls, 100, Error::ConnectionLoss))
            .await;
        assert!(out.is_err());
        assert_eq!(calls.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_are_not_retried() {
        let calls = Cell::new(0);
        let out = RetryPolicy::n_times(5, 10 * MS)
            .run(|| flaky(&calls, 100, Error::Keeper(ErrorCode::NoNode)))
            .await;
        assert!(matches!(out, Err(Error::Keeper(ErrorCode::NoNode))));
        assert_eq!(calls.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn until_elapsed_stops_starting_retries_after_the_total() {
        let calls = Cell::new(0);
        let start = Instant::now();
        let out = RetryPolicy::until_elapsed(1000 * MS, 100 * MS)
            .run(|| flaky(&calls, u32::MAX, Error::ConnectionLoss))
            .await;
        assert!(out.is_err());
        assert!(start.elapsed() <= 1000 * MS, "{:?}", start.elapsed());
        // Pauses of 50 to 100 ms: between 10 and 20 retries fit in a second.
        assert!((10..=21).contains(&calls.get()), "{}", calls.get());
    }
}
