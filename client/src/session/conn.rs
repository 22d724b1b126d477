//! One TCP (or TLS) connection to one server: the host list it is picked from, and the
//! handshake (`ConnectRequest` → `ConnectResponse`) that opens or reattaches the
//! session on it.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use paddock_wire::codec::write_frame;
use paddock_wire::{ConnectRequest, ConnectResponse, FrameCodec, Record};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

use crate::error::Error;
use crate::tls::TlsOptions;

/// The reading half of a connection, TCP or TLS.
pub(crate) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The writing half; a TLS one may hold bytes back until flushed.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// The servers of the connect string, shuffled once (as ZooKeeper's `StaticHostProvider`
/// does, to spread clients), then tried round-robin.
#[derive(Debug)]
pub(crate) struct HostList {
    hosts: Vec<String>,
    next: usize,
}

impl HostList {
    pub fn new(mut hosts: Vec<String>) -> Self {
        shuffle(&mut hosts);
        HostList { hosts, next: 0 }
    }

    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// True when every server has been tried since the round began.
    pub fn at_round_end(&self) -> bool {
        self.next >= self.hosts.len()
    }

    /// The next server to try; after the last comes the first again.
    pub fn next_host(&mut self) -> &str {
        let i = self.next % self.hosts.len().max(1);
        self.next = i + 1;
        self.hosts.get(i).map_or("", String::as_str)
    }
}

/// Fisher–Yates with the OS's randomness; an unavailable RNG leaves the order as given.
fn shuffle<T>(items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let mut bytes = [0u8; 8];
        if getrandom::getrandom(&mut bytes).is_err() {
            return;
        }
        let bound = u64::try_from(i + 1).unwrap_or(u64::MAX);
        let j = usize::try_from(u64::from_le_bytes(bytes) % bound).unwrap_or(0);
        items.swap(i, j);
    }
}

/// An open connection after a successful handshake. The reader keeps whatever bytes
/// arrived after the `ConnectResponse`.
pub(crate) struct Conn {
    pub frames: FramedRead<ReadHalf, FrameCodec>,
    pub writer: WriteHalf,
    pub addr: SocketAddr,
}

/// Resolves `host` and tries each of its addresses in turn.
pub(crate) async fn handshake(
    host: &str,
    request: &ConnectRequest,
    max_frame: usize,
    tls: Option<&TlsOptions>,
) -> Result<(Conn, ConnectResponse), Error> {
    let mut last_error = Error::ConnectionLoss;
    for addr in tokio::net::lookup_host(host).await? {
        match handshake_at(host, addr, request, max_frame, tls).await {
            Ok(done) => return Ok(done),
            Err(err) => {
                tracing::debug!(%addr, %err, "connection attempt failed");
                last_error = err;
            }
        }
    }
    Err(last_error)
}

async fn handshake_at(
    host: &str,
    addr: SocketAddr,
    request: &ConnectRequest,
    max_frame: usize,
    tls: Option<&TlsOptions>,
) -> Result<(Conn, ConnectResponse), Error> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (reader, mut writer): (ReadHalf, WriteHalf) = match tls {
        None => {
            let (reader, writer) = stream.into_split();
            (Box::new(reader), Box::new(writer))
        }
        Some(tls) => {
            let (reader, writer) = tokio::io::split(tls.connect(host, stream).await?);
            (Box::new(reader), Box::new(writer))
        }
    };
    let mut buf = BytesMut::new();
    write_frame(&mut buf, max_frame, |buf| request.encode(buf))
        .map_err(|err| Error::BadArguments(err.to_string()))?;
    writer.write_all(&buf).await?;
    writer.flush().await?;
    let mut frames = FramedRead::new(reader, FrameCodec::new(max_frame));
    let frame: Bytes = match frames.next().await {
        Some(Ok(frame)) => frame,
        // Kept as it is: a TLS server that refuses the client's certificate after the
        // handshake (TLS 1.3) says so here, as InvalidData.
        Some(Err(paddock_wire::codec::FrameError::Io(err))) => return Err(err.into()),
        Some(Err(err)) => return Err(std::io::Error::other(err).into()),
        // A server that has seen a newer zxid than we have, or that is not serving,
        // closes without answering.
        None => return Err(Error::ConnectionLoss),
    };
    let response = ConnectResponse::from_bytes(frame)?;
    Ok((
        Conn {
            frames,
            writer,
            addr,
        },
        response,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_list_cycles_through_every_host() {
        let mut hosts = HostList::new(vec!["a:1".into(), "b:2".into(), "c:3".into()]);
        let mut seen: Vec<String> = (0..3).map(|_| hosts.next_host().to_owned()).collect();
        let again: Vec<String> = (0..3).map(|_| hosts.next_host().to_owned()).collect();
        assert_eq!(seen, again);
        seen.sort();
        assert_eq!(seen, ["a:1", "b:2", "c:3"]);
    }
}
