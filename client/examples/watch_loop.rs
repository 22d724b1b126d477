//! Keeps a local copy of a node's data up to date with one-shot watches: read with a
//! watch, wait for it to fire, read again. The re-read after each event sees every
//! change, even ones made while the client was reconnecting.
//!
//! ```text
//! cargo run -p paddock-client --example watch_loop -- 127.0.0.1:2181 /config
//! ```

use paddock_client::{Client, ConnectOptions, Error, ErrorCode};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/config".to_owned());
    let client = Client::connect(&server, ConnectOptions::default()).await?;
    loop {
        let changed = match client.get_data_w(&path).await {
            Ok((data, stat, changed)) => {
                println!(
                    "{path} v{}: {}",
                    stat.version,
                    String::from_utf8_lossy(&data)
                );
                changed
            }
            Err(Error::Keeper(ErrorCode::NoNode)) => {
                // Wait for it to exist.
                let (stat, created) = client.exists_w(&path).await?;
                if stat.is_some() {
                    continue;
                }
                println!("{path} does not exist yet (create it with data to see it here)");
                created
            }
            Err(err) => return Err(err.into()),
        };
        tokio::select! {
            event = changed => {
                let event = event?;
                println!("-> {:?}", event.event_type);
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    client.close().await?;
    Ok(())
}
