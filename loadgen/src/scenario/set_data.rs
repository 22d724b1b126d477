//! Scenario 3: each connection sets the data of each of its paths over and over; no
//! subscribers.

use paddock_client::Client;

use super::{ensure, timed, Ctx};
use crate::stats::Op;

pub async fn worker(ctx: Ctx, client: Client, conn: usize) {
    let data = ctx.data();
    let mut paths = Vec::with_capacity(ctx.plan.paths_per_conn);
    for j in 0..ctx.plan.paths_per_conn {
        let path = ctx.path(&format!("s{conn}-{j}"));
        if let Err(e) = ensure(&client, &path, &data).await {
            tracing::warn!("cannot create {path}: {e}");
            ctx.stats.fail(Op::SetData);
            continue;
        }
        paths.push(path);
    }
    let mut pacer = ctx.pacer(conn);
    while !paths.is_empty() {
        for path in &paths {
            let Some(at) = pacer.next_or_stop(&ctx.stop).await else {
                return;
            };
            timed(
                &ctx.stats,
                Op::SetData,
                at,
                client.set_data(path, &data, None),
            )
            .await;
        }
    }
}
