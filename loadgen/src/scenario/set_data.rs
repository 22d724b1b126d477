//! Scenario 3: each connection sets the data of each of its paths over and over; no
//! subscribers.

use paddock_client::Client;

use super::{ensure, timed, Ctx};

pub async fn worker(ctx: Ctx, client: Client, conn: usize) {
    let data = ctx.data();
    let mut paths = Vec::with_capacity(ctx.plan.paths_per_conn);
    for j in 0..ctx.plan.paths_per_conn {
        let path = ctx.path(&format!("s{conn}-{j}"));
        if let Err(e) = ensure(&client, &path, &data).await {
            tracing::warn!("cannot create {path}: {e}");
            ctx.stats.requests.fail();
            continue;
        }
        paths.push(path);
    }
    while !ctx.stop.is_cancelled() && !paths.is_empty() {
        for path in &paths {
            if ctx.stop.is_cancelled() {
                return;
            }
            timed(&ctx.stats.requests, client.set_data(path, &data, None)).await;
        }
    }
}
