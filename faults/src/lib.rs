//! Fault injection for Paddock (issue 11, "the instrument"): three real `paddock`
//! servers, each on its own host (a network namespace), faults injected between them,
//! clients of the project's own library recording histories, and checkers that say
//! what went wrong.
//!
//! # Layout
//! - [`net`]: the hosts: namespaces, veths, a bridge, nft rules; claimed per instance
//!   and removed even after a crash.
//! - [`cluster`]: the servers: zoo.cfg, start, `kill -9`, restart, `SIGSTOP`, `mntr`.
//! - [`nemesis`]: the faults: isolate, split, partial, one-way, pause, kill.
//! - [`history`]: operations with times and ok / fail / info outcomes.
//! - [`lin`]: a linearizability checker (WGL with memoisation).
//! - [`workload`]: the clients and a pure checker per workload: registers, unique
//!   creates, per-session order, locks, ephemerals, watches, the stall probe.
//! - [`sessions`]: every client's session states; time until a cut-off client is told.
//! - [`convergence`]: tree digests agree at equal zxids; servers catch up after a heal.
//! - [`run`]: one run, start to verdict; [`report`]: its table.
//! - [`rng`]: the seeded generator behind every random choice.
//!
//! `cargo test -p paddock-faults` runs two cycles of each nemesis with every workload;
//! the `paddock-faults` binary runs the long soak (see its `--help`).

pub mod cluster;
pub mod convergence;
pub mod error;
pub mod history;
pub mod lin;
pub mod nemesis;
pub mod net;
pub mod report;
pub mod rng;
pub mod run;
pub mod sessions;
pub mod workload;

pub use error::Error;
pub use nemesis::NemesisKind;
pub use report::Report;
pub use run::{run, Options, WorkloadKind};
