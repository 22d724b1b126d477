//! The records of `zookeeper.jute` that a client and a server exchange, and the typed
//! [`Request`] and [`Response`] built from them.

mod connect;
mod data;
mod header;
mod multi;
mod request;
mod response;
mod watch;

pub use connect::{ConnectRequest, ConnectResponse};
pub use data::{perms, Acl, ClientInfo, CreateMode, Data, Id, Stat};
pub use header::{MultiHeader, ReplyHeader, RequestHeader};
pub use multi::OpResult;
pub use request::{
    AddWatchRequest, AuthPacket, CreateRequest, CreateTtlRequest, PathRequest, PathVersionRequest,
    ReconfigRequest, Request, SetAclRequest, SetDataRequest, WatchedPathRequest, WatchesRequest,
};
pub use response::Response;
pub use watch::{
    AddWatchMode, EventType, KeeperState, SetWatches, SetWatches2, WatcherEvent, WatcherType,
};
