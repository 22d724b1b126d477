//! The short fault runs: two cycles of each nemesis, with every workload running at
//! once, against three real servers in network namespaces. Each test prints its report
//! and fails with the checks that found violations; `PADDOCK_FAULTS_SEED=N` replays a
//! run's choices. Skipped (passing, with a one-line message) where network namespaces
//! cannot be made.

mod nemeses;
