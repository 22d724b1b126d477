//! `paddock-loadgen` as a user runs it: one module per scenario.

mod cli;
mod client_ids;
mod multi;
mod open_loop;
mod resources;
mod support;
