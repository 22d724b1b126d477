//! `paddock-loadgen`: the three load scenarios of the 2011 ZooKeeper performance test
//! (`loadgen/SCENARIOS.md`), against any ZooKeeper-protocol server, from one process
//! or several (on several machines) merged into one report.
//!
//! # Layout
//! - [`plan`]: what to run — the command-line flags, checked once.
//! - [`run`]: connects the clients, claims `<root>/<client-id>`, waits for
//!   `--start-at`, starts one worker per connection, takes an interval every
//!   `--interval`, stops by duration, request count or Ctrl-C, and cleans up.
//! - [`scenario`]: the workers: [`scenario::create_delete`], [`scenario::pubsub`],
//!   [`scenario::set_data`], and their pacing (closed loop, or `--rate`'s open loop).
//! - [`stats`]: what the workers record into: a histogram and a failure count per
//!   operation ([`stats::Op`]) for the interval in progress.
//! - [`series`]: the pure core: intervals in, live rows and totals out.
//! - [`histlog`]: `--hist-log`, the intervals as an HdrHistogram interval log.
//! - [`merge`]: `paddock-loadgen merge`, several logs as one run.
//! - [`resources`]: the servers' CPU and memory (/proc) or mntr figures.
//! - [`report`]: the live lines, the summary, `--json` and `--csv`.
//! - [`plot`]: `--plot`, TPS, mean and p99 over time (and pub/sub's distributions)
//!   as an SVG.

pub mod histlog;
pub mod merge;
pub mod plan;
pub mod plot;
pub mod report;
pub mod resources;
pub mod run;
pub mod scenario;
pub mod series;
pub mod stats;

pub use plan::{Plan, Scenario, StopAt};
pub use report::Summary;
pub use run::run;
