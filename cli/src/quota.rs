//! `setquota`, `listquota` and `delquota`, writing the nodes ZooKeeper 3.8's zkCli
//! writes: `/zookeeper/quota<path>/zookeeper_limits` (the limits) and `zookeeper_stats`
//! (the counts, which the server keeps current), both in ZooKeeper's `StatsTrack`
//! format — `count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1`.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use paddock_client::{Client, CreateMode, Error, ErrorCode};

const QUOTA_ROOT: &str = "/zookeeper/quota";
const LIMITS: &str = "zookeeper_limits";
const STATS: &str = "zookeeper_stats";

/// ZooKeeper's `StatsTrack`: named counts, -1 when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StatsTrack(BTreeMap<String, i64>);

impl StatsTrack {
    fn parse(text: &str) -> StatsTrack {
        StatsTrack(
            text.split([',', ';'])
                .filter_map(|pair| {
                    let mut parts = pair.split('=');
                    let key = parts.next()?.trim();
                    let value = parts.next().unwrap_or("").trim();
                    let value = if value.is_empty() {
                        -1
                    } else {
                        value.parse().ok()?
                    };
                    (!key.is_empty()).then(|| (key.to_owned(), value))
                })
                .collect(),
        )
    }

    fn get(&self, key: &str) -> i64 {
        self.0.get(key).copied().unwrap_or(-1)
    }

    fn set(&mut self, key: &str, value: i64) {
        self.0.insert(key.to_owned(), value);
    }

    /// Count and bytes first, then `=` and the rest sorted, each after `;`.
    fn format(&self) -> String {
        let mut out = format!("count={},bytes={}", self.get("count"), self.get("bytes"));
        let others: Vec<_> = self
            .0
            .iter()
            .filter(|(key, _)| *key != "count" && *key != "bytes")
            .collect();
        if !others.is_empty() {
            out.push('=');
            for (key, value) in others {
                out.push_str(&format!(";{key}={value}"));
            }
        }
        out
    }
}

/// The limits `setquota` was given: -1 for those not given.
pub struct Limits {
    pub count: i64,
    pub bytes: i64,
    pub count_hard: i64,
    pub bytes_hard: i64,
}

impl Limits {
    fn fields(&self) -> [(&'static str, i64); 4] {
        [
            ("count", self.count),
            ("bytes", self.bytes),
            ("countHardLimit", self.count_hard),
            ("byteHardLimit", self.bytes_hard),
        ]
    }
}

fn quota_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}")
}

/// Reads a node's data as a `StatsTrack`; `None` if the node is missing.
async fn read(client: &Client, path: &str) -> Result<Option<StatsTrack>> {
    match client.get_data(path).await {
        Ok((data, _)) => Ok(Some(StatsTrack::parse(&String::from_utf8_lossy(&data)))),
        Err(Error::Keeper(ErrorCode::NoNode)) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

async fn create_if_missing(client: &Client, path: &str, data: &[u8]) -> Result<()> {
    match client.create(path, data, CreateMode::Persistent).await {
        Ok(_) | Err(Error::Keeper(ErrorCode::NodeExists)) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// zkCli's `setquota`: checks as zkCli does (the node exists, no quota above or below
/// it), then writes or updates the limits.
pub async fn set(client: &Client, path: &str, limits: &Limits) -> Result<()> {
    if path.starts_with(QUOTA_ROOT) {
        bail!("cannot set a quota under the path: {QUOTA_ROOT}");
    }
    for (name, value) in limits.fields() {
        let positive = name.starts_with("count");
        if value != -1 && (value < 0 || (positive && value == 0)) {
            if positive {
                bail!("the num quota must be greater than zero");
            }
            bail!("the bytes quota must be greater than or equal to zero");
        }
    }
    if client.exists(path).await?.is_none() {
        bail!("{path} does not exist.");
    }
    check_no_quota_below(client, path).await?;
    check_no_quota_above(client, path).await?;
    let mut at = QUOTA_ROOT.to_owned();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        create_if_missing(client, &at, b"").await?;
    }
    let limits_path = format!("{at}/{LIMITS}");
    let stats_path = format!("{at}/{STATS}");
    let limits_now = match read(client, &limits_path).await? {
        None => {
            let mut fresh = StatsTrack::default();
            for (name, value) in limits.fields() {
                fresh.set(name, value);
            }
            client
                .create(
                    &limits_path,
                    fresh.format().as_bytes(),
                    CreateMode::Persistent,
                )
                .await?;
            let mut zero = StatsTrack::default();
            zero.set("count", 0);
            zero.set("bytes", 0);
            create_if_missing(client, &stats_path, zero.format().as_bytes()).await?;
            fresh
        }
        Some(mut existing) => {
            for (name, value) in limits.fields() {
                if value > -1 {
                    existing.set(name, value);
                }
            }
            client
                .set_data(&limits_path, existing.format().as_bytes(), None)
                .await?;
            existing
        }
    };
    let stats = read(client, &stats_path).await?.unwrap_or_default();
    warn_if_already_over(&limits_now, &stats);
    Ok(())
}

fn warn_if_already_over(limits: &StatsTrack, stats: &StatsTrack) {
    let below = |soft: &str, hard: &str, used: i64| {
        [limits.get(soft), limits.get(hard)]
            .iter()
            .any(|limit| *limit > -1 && *limit < used)
    };
    if below("count", "countHardLimit", stats.get("count")) {
        println!(
            "[Warning]: the count quota you create is less than the existing count:{}",
            stats.get("count")
        );
    }
    if below("bytes", "byteHardLimit", stats.get("bytes")) {
        println!(
            "[Warning]: the bytes quota you create is less than the existing bytes:{}",
            stats.get("bytes")
        );
    }
}

/// No node below `path` may have a quota already.
async fn check_no_quota_below(client: &Client, path: &str) -> Result<()> {
    let top = quota_path(path);
    let mut pending = vec![top.clone()];
    while let Some(node) = pending.pop() {
        let children = match client.get_children(&node).await {
            Ok(children) => children,
            Err(Error::Keeper(ErrorCode::NoNode)) => continue,
            Err(err) => return Err(err.into()),
        };
        for child in children {
            if child == LIMITS && node != top {
                let below = &node[QUOTA_ROOT.len()..];
                bail!("{path} has a child {below} which has a quota");
            }
            if child != LIMITS && child != STATS {
                pending.push(format!("{node}/{child}"));
            }
        }
    }
    Ok(())
}

/// No node above `path` may have a quota already.
async fn check_no_quota_above(client: &Client, path: &str) -> Result<()> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut at = String::new();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push('/');
        at.push_str(part);
        match client.get_children(&quota_path(&at)).await {
            Ok(children) if children.iter().any(|c| c == LIMITS) => {
                bail!("{path} has a parent {at} which has a quota");
            }
            Ok(_) => {}
            Err(Error::Keeper(ErrorCode::NoNode)) => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// zkCli's `listquota`.
pub async fn list(client: &Client, path: &str) -> Result<()> {
    let limits_path = format!("{}/{LIMITS}", quota_path(path));
    eprintln!("absolute path is {limits_path}");
    let (Some(limits), Some(stats)) = (
        read(client, &limits_path).await?,
        read(client, &format!("{}/{STATS}", quota_path(path))).await?,
    ) else {
        bail!("quota for {path} does not exist.");
    };
    println!("Output quota for {path} {}", limits.format());
    println!("Output stat for {path} {}", stats.format());
    Ok(())
}

/// Which limits `delquota` removes; none given removes the whole quota.
pub struct Remove {
    pub count: bool,
    pub bytes: bool,
    pub count_hard: bool,
    pub bytes_hard: bool,
}

/// zkCli's `delquota`.
pub async fn delete(client: &Client, path: &str, remove: &Remove) -> Result<()> {
    let at = quota_path(path);
    let limits_path = format!("{at}/{LIMITS}");
    let Some(mut limits) = read(client, &limits_path).await? else {
        bail!("quota for {path} does not exist.");
    };
    let chosen = [
        ("count", remove.count),
        ("bytes", remove.bytes),
        ("countHardLimit", remove.count_hard),
        ("byteHardLimit", remove.bytes_hard),
    ];
    if chosen.iter().any(|(_, on)| *on) {
        for (name, on) in chosen {
            if on {
                limits.set(name, -1);
            }
        }
        client
            .set_data(&limits_path, limits.format().as_bytes(), None)
            .await?;
        return Ok(());
    }
    for node in [limits_path, format!("{at}/{STATS}")] {
        match client.delete(&node, None).await {
            Ok(()) | Err(Error::Keeper(ErrorCode::NoNode)) => {}
            Err(err) => return Err(err.into()),
        }
    }
    // The quota's path nodes, up to the first that is still needed.
    let mut node = at;
    while node.len() > QUOTA_ROOT.len() {
        match client.delete(&node, None).await {
            Ok(()) | Err(Error::Keeper(ErrorCode::NoNode)) => {}
            Err(Error::Keeper(ErrorCode::NotEmpty)) => break,
            Err(err) => return Err(err.into()),
        }
        match node.rfind('/') {
            Some(slash) => node.truncate(slash),
            None => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_track_round_trips_zookeepers_format() {
        let text = "count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1";
        assert_eq!(StatsTrack::parse(text).format(), text);
        assert_eq!(
            StatsTrack::parse("count=4,bytes=0").format(),
            "count=4,bytes=0"
        );
    }
}
