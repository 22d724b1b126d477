//! Paddock's server, tested as users meet it: the real `paddock` binary on 127.0.0.1,
//! driven by real ZooKeeper clients (kazoo, zkCli.sh) and by raw wire bytes, and
//! compared with Apache ZooKeeper 3.8 running the same scenarios.

mod acl_matrix;
mod admin_http;
mod backlog;
mod bad_input;
mod compat;
mod durability;
mod ensemble;
mod ensemble_script;
mod fourlw;
mod full_disk;
mod kazoo;
mod lifecycle;
mod loadgen;
mod memory;
mod nodes;
mod prometheus;
mod reconfig;
mod scale;
mod sessions;
mod shutdown;
mod support;
mod tls;
mod watch_order;
mod zkcli;
