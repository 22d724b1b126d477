//! Follows one node (say, a configuration) through its life: created, changed,
//! deleted. `cache.node()` is the current copy at any time, without a round trip.
//!
//! ```text
//! cargo run -p paddock-client --example node_cache -- 127.0.0.1:2181 /config
//! ```

use paddock_client::cache::{CacheEvent, NodeCache};
use paddock_client::{Client, ConnectOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/config".to_owned());
    let client = Client::connect(&server, ConnectOptions::default()).await?;
    let (cache, mut events) = NodeCache::start(&client, &path)?;
    cache.initialized().await?;
    loop {
        match cache.node() {
            Some(node) => println!(
                "{path} v{}: {}",
                node.stat.version,
                String::from_utf8_lossy(&node.data)
            ),
            None => println!("{path} does not exist"),
        }
        let event = tokio::select! {
            event = events.next_event() => event,
            _ = tokio::signal::ctrl_c() => break,
        };
        match event {
            Some(Ok(CacheEvent::Initialized)) => {}
            Some(Ok(event)) => println!("-> {:?}", event.path()),
            Some(Err(err)) => return Err(err.into()),
            None => break,
        }
    }
    client.close().await?;
    Ok(())
}
