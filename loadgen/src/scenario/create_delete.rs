//! Scenario 1: each connection creates an ephemeral node and deletes it, on each of its
//! paths, over and over. Nobody watches.

use paddock_client::Client;
use paddock_wire::CreateMode;

use super::{timed, Ctx};

pub async fn worker(ctx: Ctx, client: Client, conn: usize) {
    let data = ctx.data();
    let paths: Vec<String> = (0..ctx.plan.paths_per_conn)
        .map(|j| ctx.path(&format!("c{conn}-{j}")))
        .collect();
    while !ctx.stop.is_cancelled() {
        for path in &paths {
            if ctx.stop.is_cancelled() {
                return;
            }
            timed(
                &ctx.stats.requests,
                client.create(path, &data, CreateMode::Ephemeral),
            )
            .await;
            timed(&ctx.stats.requests, client.delete(path, None)).await;
        }
    }
}
