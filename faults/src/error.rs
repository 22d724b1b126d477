//! The harness's one error type.

/// Why the harness could not set up or drive a run. Violations found by the checkers
/// are not errors: they are the report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Network namespaces cannot be made here (not root, no `ip netns`, no `nft`): the
    /// run is skipped, not failed.
    #[error("network namespaces unavailable: {0}")]
    Unavailable(String),
    /// A setup command (`ip`, `nft`, `cargo build`) failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A server did not come up or no leader was elected in time.
    #[error("cluster: {0}")]
    Cluster(String),
    /// The client library failed during setup.
    #[error("client: {0}")]
    Client(#[from] paddock_client::Error),
    /// Local I/O: temp dirs, config files, logs.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}
