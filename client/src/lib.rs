//! An async (tokio) client for ZooKeeper and Paddock, with the classic recipes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), paddock_client::Error> {
//! use paddock_client::{Client, ConnectOptions, CreateMode};
//! let client = Client::connect("127.0.0.1:2181,127.0.0.1:2182/app", ConnectOptions::default()).await?;
//! client.create("/config", b"v1", CreateMode::Persistent).await?;
//! let (data, _stat, changed) = client.get_data_w("/config").await?;
//! println!("config is {data:?}");
//! let event = changed.await?;
//! println!("{:?} on {}", event.event_type, event.path);
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`client`](Client): the cheap `Clone` handle, one async method per ZooKeeper op;
//!   validates paths and applies the chroot.
//! - `session`: the one task that owns the socket: xids, pending replies, write
//!   batching, pings, reconnects, and the watch table it re-arms with `setWatches2`.
//! - [`watch`]: one-shot watches as futures, persistent watches as streams.
//! - [`transaction`]: multi (`Transaction`) and multiRead (`ReadOp`).
//! - [`options`]: [`ConnectOptions`], [`CreateOptions`].
//! - [`tls`]: [`TlsOptions`], for a server's secure client port.
//! - [`state`]: [`SessionState`], observable through [`Client::state_watcher`].
//! - `backoff`: the pauses between rounds of connection attempts (exponential, capped,
//!   jittered).
//! - `connect_string`: `host:port,...[/chroot]` and the chroot.
//! - [`error`]: [`Error`], with [`Error::code`] mapping onto ZooKeeper's codes.
//! - [`recipes`]: locks, read/write locks, semaphore, leader election, barriers, queue
//!   and counter, in kazoo's node layouts so they interoperate with it.
//!
//! The zkCli-style shell, `paddock-cli`, is its own crate (`cli/`), so that this library
//! pulls in nothing a library user does not need.

#![warn(missing_docs)]

mod backoff;
mod client;
mod connect_string;
pub mod error;
pub mod options;
pub mod recipes;
mod session;
pub mod state;
pub mod tls;
pub mod transaction;
pub mod watch;

pub use bytes::Bytes;
pub use client::Client;
pub use error::Error;
pub use options::{ConnectOptions, CreateOptions, SessionCredentials};
pub use paddock_wire::{
    perms, Acl, AddWatchMode, ClientInfo, CreateMode, ErrorCode, EventType, Id, KeeperState,
    OpResult, Stat, WatcherType,
};
pub use state::SessionState;
pub use tls::TlsOptions;
pub use transaction::{ReadOp, Transaction};
pub use watch::{PersistentWatch, WatchFuture, WatchedEvent};
