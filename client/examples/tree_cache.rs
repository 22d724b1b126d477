//! Mirrors a subtree and prints every change, with the node before and after: the
//! events, applied in order, rebuild the mirror, and a dropped connection or a server
//! restart costs no change (the cache re-reads the subtree and reports the difference).
//!
//! ```text
//! cargo run -p paddock-client --example tree_cache -- 127.0.0.1:2181 /services
//! ```

use paddock_client::cache::{CacheEvent, TreeCache};
use paddock_client::{Client, ConnectOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/services".to_owned());
    let client = Client::connect(&server, ConnectOptions::default()).await?;
    let (cache, mut events) = TreeCache::start(&client, &path)?;
    loop {
        let event = tokio::select! {
            event = events.next_event() => event,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Some(event) = event else { break };
        match event? {
            CacheEvent::Created { path, node } => {
                println!("+ {path} = {}", String::from_utf8_lossy(&node.data));
            }
            CacheEvent::Changed { path, old, new } => println!(
                "~ {path}: {} -> {} (version {})",
                String::from_utf8_lossy(&old.data),
                String::from_utf8_lossy(&new.data),
                new.stat.version
            ),
            CacheEvent::Deleted { path, .. } => println!("- {path}"),
            CacheEvent::Initialized => println!("{} nodes mirrored", cache.len()),
        }
    }
    client.close().await?;
    Ok(())
}
