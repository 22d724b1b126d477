//! The wire crate's integration tests: one binary, a module per concern.

mod fixtures;
mod malformed;
mod roundtrip;
