//! Takes a distributed lock, works under it, and lets go.
//!
//! ```text
//! cargo run -p paddock-client --example lock -- 127.0.0.1:2181 /locks/demo
//! ```
//! Run several at once: they take turns, each printing a larger fencing token.

use std::time::Duration;

use paddock_client::recipes::Lock;
use paddock_client::{Client, ConnectOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/locks/demo".to_owned());
    let client = Client::connect(&server, ConnectOptions::default()).await?;
    let me = format!("pid-{}", std::process::id());
    let lock = Lock::new(&client, &path).identifier(&me);

    println!(
        "{me}: waiting for {path} (contenders: {:?})",
        lock.contenders().await?
    );
    let guard = lock.acquire().await?;
    println!(
        "{me}: holding {path} with fencing token {:#x}",
        guard.fencing_token()
    );
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(3)) => println!("{me}: work done"),
        reason = guard.lost() => println!("{me}: lost the lock mid-work: {reason}"),
    }
    guard.release().await?;
    println!("{me}: released");
    client.close().await?;
    Ok(())
}
