//! Accepts client connections, enforcing `maxClientCnxns` per IP address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::net::TcpListener;

use crate::conn;
use crate::server::Server;

pub async fn run(listener: TcpListener, server: Arc<Server>) {
    let per_ip: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = server.shutdown.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Typically EMFILE: back off briefly rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let limit = server.settings.max_client_cnxns;
        {
            let mut counts = per_ip.lock();
            let count = counts.entry(peer.ip()).or_default();
            if limit > 0 && *count >= limit {
                tracing::warn!(%peer, "too many connections from {} - max is {limit}", peer.ip());
                continue;
            }
            *count += 1;
        }
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        let per_ip = per_ip.clone();
        tokio::spawn(async move {
            conn::serve(stream, peer, server).await;
            let mut counts = per_ip.lock();
            if let Some(count) = counts.get_mut(&peer.ip()) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&peer.ip());
                }
            }
        });
    }
}
