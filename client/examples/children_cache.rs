//! Keeps the members of a group (the children of a node, with their data) in memory,
//! as a service registry does: `cache.children()` is the current set at any time.
//!
//! ```text
//! cargo run -p paddock-client --example children_cache -- 127.0.0.1:2181 /members
//! ```

use paddock_client::cache::{CacheEvent, ChildrenCache};
use paddock_client::{Client, ConnectOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/members".to_owned());
    let client = Client::connect(&server, ConnectOptions::default()).await?;
    let (cache, mut events) = ChildrenCache::start(&client, &path)?;
    // The first load reports every child; print the set once it is complete, then
    // after each change.
    let mut loaded = false;
    loop {
        let event = tokio::select! {
            event = events.next_event() => event,
            _ = tokio::signal::ctrl_c() => break,
        };
        match event {
            Some(Ok(event)) => {
                loaded |= event == CacheEvent::Initialized;
                if !loaded {
                    continue;
                }
                let members: Vec<String> = cache
                    .children()
                    .into_iter()
                    .map(|(name, node)| format!("{name}={}", String::from_utf8_lossy(&node.data)))
                    .collect();
                println!("[{}]", members.join(", "));
            }
            Some(Err(err)) => return Err(err.into()),
            None => break,
        }
    }
    client.close().await?;
    Ok(())
}
