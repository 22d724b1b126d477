//! Campaigns for leadership and leads until Ctrl-C or until leadership is lost.
//!
//! ```text
//! cargo run -p paddock-client --example election -- 127.0.0.1:2181 /election/demo node-a
//! ```
//! Start a few; stop the leader (Ctrl-C) and watch the next one take over with a larger
//! fencing token.

use std::time::Duration;

use paddock_client::recipes::Election;
use paddock_client::{Client, ConnectOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/election/demo".to_owned());
    let me = args
        .next()
        .unwrap_or_else(|| format!("pid-{}", std::process::id()));
    let client = Client::connect(
        &server,
        ConnectOptions::with_session_timeout(Duration::from_secs(5)),
    )
    .await?;
    let election = Election::new(&client, &path, &me);
    println!(
        "{me}: campaigning; current leader: {:?}",
        election.leader().await?
    );
    let leadership = election.campaign().await?;
    println!(
        "{me}: leading with fencing token {:#x}",
        leadership.fencing_token()
    );
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = ticks.tick() => println!("{me}: still leading"),
            reason = leadership.lost() => {
                println!("{me}: lost leadership: {reason}");
                break;
            }
            _ = tokio::signal::ctrl_c() => {
                leadership.resign().await?;
                println!("{me}: resigned");
                break;
            }
        }
    }
    client.close().await?;
    Ok(())
}
