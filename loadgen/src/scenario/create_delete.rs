//! Scenario 1: each connection creates an ephemeral node and deletes it, on each of its
//! paths, over and over. Nobody watches.

use paddock_client::Client;
use paddock_wire::CreateMode;

use super::{timed, Ctx};
use crate::stats::Op;

pub async fn worker(ctx: Ctx, client: Client, conn: usize) {
    let data = ctx.data();
    let paths: Vec<String> = (0..ctx.plan.paths_per_conn)
        .map(|j| ctx.path(&format!("c{conn}-{j}")))
        .collect();
    let mut pacer = ctx.pacer(conn);
    loop {
        for path in &paths {
            let Some(at) = pacer.next_or_stop(&ctx.stop).await else {
                return;
            };
            timed(
                &ctx.stats,
                Op::Create,
                at,
                client.create(path, &data, CreateMode::Ephemeral),
            )
            .await;
            let Some(at) = pacer.next_or_stop(&ctx.stop).await else {
                return;
            };
            timed(&ctx.stats, Op::Delete, at, client.delete(path, None)).await;
        }
    }
}
