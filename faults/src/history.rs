//! Histories as Jepsen records them: each operation with its invocation and completion
//! times and an outcome that is `Ok` (it happened, with this result), `Fail` (it
//! certainly did not happen) or `Info` (unknown: the connection or session broke, or the
//! harness stopped waiting).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paddock_client::{Error as ClientError, ErrorCode};

/// Microseconds since the run started, on one monotonic clock shared by every task of
/// the run, so that real-time order between clients can be checked.
pub type Micros = u64;

/// The run's clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// Time zero is now.
    pub fn start() -> Self {
        Clock(Instant::now())
    }

    /// Microseconds since time zero.
    pub fn now(&self) -> Micros {
        u64::try_from(self.0.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// Milliseconds, for printing.
pub fn ms(t: Micros) -> f64 {
    t as f64 / 1000.0
}

/// `Micros` of a duration.
pub fn micros(d: Duration) -> Micros {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<O> {
    /// It took effect, with this result.
    Ok(O),
    /// It certainly did not take effect (the server said why).
    Fail(String),
    /// Nobody knows whether it took effect.
    Info(String),
}

impl<O> Outcome<O> {
    /// Whether the operation was acknowledged.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok(_))
    }
}

/// Sorts a client error into `Fail` or `Info`: only the server's own verdicts on the
/// request (`NodeExists`, `BadVersion`, `NoNode`, ...) say it did not happen. Any other
/// code (a `ConnectionLoss` reply from the server included), a broken connection or an
/// expired session leaves the outcome unknown.
pub fn outcome_of_error<O>(err: &ClientError) -> Outcome<O> {
    match err {
        // The server's verdict on the request itself: it was not applied.
        ClientError::Keeper(
            ErrorCode::NoNode
            | ErrorCode::NodeExists
            | ErrorCode::BadVersion
            | ErrorCode::NotEmpty
            | ErrorCode::NoChildrenForEphemerals
            | ErrorCode::BadArguments
            | ErrorCode::NoAuth
            | ErrorCode::InvalidAcl,
        ) => Outcome::Fail(format!("{err}")),
        _ => Outcome::Info(format!("{err}")),
    }
}

/// One operation of one process.
#[derive(Debug, Clone)]
pub struct Op<I, O> {
    /// Who ran it: a client session of the workload (a new one after each expiry).
    pub process: u64,
    /// When it was invoked.
    pub invoke: Micros,
    /// When its outcome was known (for `Info`, when the harness gave up on it).
    pub complete: Micros,
    /// What was asked.
    pub input: I,
    /// What came back.
    pub outcome: Outcome<O>,
}

/// A history shared by the tasks of a workload; append-only.
#[derive(Debug)]
pub struct History<I, O> {
    ops: Arc<Mutex<Vec<Op<I, O>>>>,
}

impl<I, O> Clone for History<I, O> {
    fn clone(&self) -> Self {
        History {
            ops: self.ops.clone(),
        }
    }
}

impl<I, O> Default for History<I, O> {
    fn default() -> Self {
        History {
            ops: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<I: Clone, O: Clone> History<I, O> {
    /// Appends a completed operation.
    pub fn push(&self, op: Op<I, O>) {
        // A poisoned lock only means a panic elsewhere; the Vec is still whole.
        self.ops
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(op);
    }

    /// Every operation so far, in completion order.
    pub fn snapshot(&self) -> Vec<Op<I, O>> {
        self.ops
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// Counts for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Operations invoked.
    pub ops: usize,
    /// Acknowledged (`Ok`).
    pub acked: usize,
}

impl Tally {
    /// Counts a history.
    pub fn of<I, O>(ops: &[Op<I, O>]) -> Tally {
        Tally {
            ops: ops.len(),
            acked: ops.iter().filter(|op| op.outcome.is_ok()).count(),
        }
    }
}

impl std::ops::Add for Tally {
    type Output = Tally;
    fn add(self, other: Tally) -> Tally {
        Tally {
            ops: self.ops + other.ops,
            acked: self.acked + other.acked,
        }
    }
}

/// What a checker found wrong, with enough context to look it up in the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The check that failed (`linearizable`, `lock-overlap`, ...).
    pub check: &'static str,
    /// When (run time, µs), for matching against the nemesis log.
    pub at: Micros,
    /// What exactly.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] at {:.1} ms: {}",
            self.check,
            ms(self.at),
            self.detail
        )
    }
}
