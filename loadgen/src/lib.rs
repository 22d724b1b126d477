//! `paddock-loadgen`: the three load scenarios of the 2011 ZooKeeper performance test
//! (`loadgen/SCENARIOS.md`), against any ZooKeeper-protocol server.
//!
//! # Layout
//! - [`plan`]: what to run — the command-line flags, checked once.
//! - [`run`]: connects the clients, starts one worker per connection, stops them by
//!   duration, request count or Ctrl-C, and cleans the root node up.
//! - [`scenario`]: the workers: [`scenario::create_delete`], [`scenario::pubsub`],
//!   [`scenario::set_data`].
//! - [`stats`]: latency histograms and counters the workers record into.
//! - [`report`]: the live lines, the summary, `--json` and `--csv`.
//! - [`plot`]: `--plot`, TPS and latency over time as an SVG.

pub mod plan;
pub mod plot;
pub mod report;
pub mod run;
pub mod scenario;
pub mod stats;

pub use plan::{Plan, Scenario, StopAt};
pub use report::Summary;
pub use run::run;
