//! Quotas, kept as ZooKeeper 3.8 keeps them (`DataTree.updateQuotaStat`,
//! `ZooKeeperServer.checkQuota`), so that zkCli's `setquota`/`listquota` work unchanged.
//!
//! A quota on path `P` is the node `/zookeeper/quota/P/zookeeper_limits`, which clients
//! write (`setquota`); its sibling `zookeeper_stats` holds the count of nodes in `P`'s
//! subtree (`P` included) and the sum of their data lengths. The tree keeps the stats
//! current on every create, delete and setData under `P` — it replaces the stats
//! node's data without a new version, as ZooKeeper does — and fills them in from the
//! subtree when the stats node is created. Both are records of the form
//! `count=4,bytes=5=;byteHardLimit=-1;countHardLimit=10` (ZooKeeper's `StatsTrack`,
//! whose odd `=;` keeps 3.4 parsers working; a missing value reads as -1).
//!
//! Soft limits (`count`, `bytes`) are only ever exceeded; hard limits
//! (`countHardLimit`, `byteHardLimit`) make a create or setData that would pass them
//! fail with QuotaExceeded when the server runs with `enforceQuota=true`. The check is
//! made when the txn is applied, on every replica, so every server of an ensemble must
//! have the same setting (as `extendedTypesEnabled`).

use std::collections::BTreeMap;

use bytes::Bytes;
use paddock_wire::ErrorCode;

use super::DataTree;

/// Where quota nodes live (ZooKeeper's `Quotas.quotaZookeeper`).
pub const QUOTA_ROOT: &str = "/zookeeper/quota";
/// The limits node's name.
pub const LIMITS: &str = "zookeeper_limits";
/// The stats node's name.
pub const STATS: &str = "zookeeper_stats";

/// A `StatsTrack` record: named counts, -1 when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsTrack {
    values: BTreeMap<String, i64>,
}

impl StatsTrack {
    /// Parses `key=value` pairs separated by `,` or `;`. Pairs that do not parse are
    /// skipped (ZooKeeper would throw, and leave the quota unenforced).
    pub fn parse(text: &str) -> StatsTrack {
        let values = text
            .split([',', ';'])
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
            .collect();
        StatsTrack { values }
    }

    pub fn get(&self, key: &str) -> i64 {
        self.values.get(key).copied().unwrap_or(-1)
    }

    pub fn set(&mut self, key: &str, value: i64) {
        self.values.insert(key.to_owned(), value);
    }

    pub fn count(&self) -> i64 {
        self.get("count")
    }

    pub fn bytes(&self) -> i64 {
        self.get("bytes")
    }

    /// ZooKeeper's `StatsTrack.toString`: count and bytes first, then `=` and the
    /// other keys, sorted, each after a `;`.
    pub fn format(&self) -> String {
        let mut out = format!("count={},bytes={}", self.count(), self.bytes());
        let others: Vec<_> = self
            .values
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

/// `/zookeeper/quota<path>/<name>`.
fn quota_node(path: &str, name: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{name}")
}

impl DataTree {
    /// The path whose quota governs `path`: the deepest of `path` and its ancestors
    /// (never `/`) that has a limits node (ZooKeeper's `getMaxPrefixWithQuota`).
    pub(super) fn quota_root(&self, path: &str) -> Option<String> {
        // No quota anywhere: the common case costs one lookup.
        if !self.node(QUOTA_ROOT)?.has_children() {
            return None;
        }
        let mut candidate = path;
        while candidate.len() > 1 {
            if self.contains(quota_node(candidate, LIMITS).as_str()) {
                return Some(candidate.to_owned());
            }
            candidate = &candidate[..candidate.rfind('/')?];
        }
        None
    }

    /// Refuses a change of `count` nodes and `bytes` bytes under `path` that would pass
    /// a hard limit, when quotas are enforced.
    pub(super) fn check_quota(
        &self,
        path: &str,
        count: i64,
        bytes: i64,
        enforce: bool,
    ) -> Result<(), ErrorCode> {
        if !enforce {
            return Ok(());
        }
        let Some(root) = self.quota_root(path) else {
            return Ok(());
        };
        let limits = self.track(&quota_node(&root, LIMITS));
        let stats = self.track(&quota_node(&root, STATS));
        let passes = |used: i64, change: i64, limit: i64| {
            change > 0 && limit > -1 && used.saturating_add(change) > limit
        };
        if passes(stats.count(), count, limits.get("countHardLimit"))
            || passes(stats.bytes(), bytes, limits.get("byteHardLimit"))
        {
            return Err(ErrorCode::QuotaExceeded);
        }
        Ok(())
    }

    /// Adds a change of `count` nodes and `bytes` bytes under `path` to its quota's
    /// stats, if it has one.
    pub(super) fn count_in_quota(&mut self, path: &str, count: i64, bytes: i64) {
        let Some(root) = self.quota_root(path) else {
            return;
        };
        let stats_path = quota_node(&root, STATS);
        let mut stats = self.track(&stats_path);
        stats.set("count", stats.count().saturating_add(count));
        stats.set("bytes", stats.bytes().saturating_add(bytes));
        self.set_track(&stats_path, &stats);
    }

    /// After a create: a new stats node starts from its subtree's real counts.
    pub(super) fn on_created(&mut self, path: &str) {
        let Some(inner) = path.strip_prefix(QUOTA_ROOT) else {
            return;
        };
        let Some(quota_path) = inner.strip_suffix(&format!("/{STATS}")) else {
            return;
        };
        if quota_path.is_empty() {
            return;
        }
        let (count, bytes) = self
            .node(quota_path)
            .into_iter()
            .chain(self.descendants(quota_path).map(|(_, node)| node))
            .fold((0i64, 0i64), |(count, bytes), node| {
                (count + 1, bytes + node.data().len() as i64)
            });
        let mut stats = StatsTrack::default();
        stats.set("count", count);
        stats.set("bytes", bytes);
        self.set_track(path, &stats);
    }

    fn track(&self, path: &str) -> StatsTrack {
        self.node(path)
            .map(|node| StatsTrack::parse(&String::from_utf8_lossy(node.data())))
            .unwrap_or_default()
    }

    fn set_track(&mut self, path: &str, track: &StatsTrack) {
        let data = Bytes::from(track.format());
        self.update(path, |node| node.set_data(data.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::TxnContext;
    use paddock_wire::{Acl, CreateMode};

    fn ctx(zxid: i64, enforce_quota: bool) -> TxnContext<'static> {
        TxnContext {
            zxid,
            time: zxid,
            session_id: 1,
            caller: &[],
            enforce_quota,
        }
    }

    fn create(tree: &mut DataTree, path: &str, data: &str, enforce: bool) -> Result<(), ErrorCode> {
        let zxid = tree.node_count() as i64 + 100;
        tree.create(
            path,
            Bytes::copy_from_slice(data.as_bytes()).into(),
            &Acl::open_unsafe(),
            CreateMode::Persistent,
            None,
            &ctx(zxid, enforce),
        )
        .map(|_| ())
    }

    /// What zkCli's `setquota` writes: the quota path's parents, limits, then stats.
    fn set_quota(tree: &mut DataTree, path: &str, limits: &str) {
        create(tree, &format!("{QUOTA_ROOT}{path}"), "", false).unwrap();
        create(tree, &quota_node(path, LIMITS), limits, false).unwrap();
        create(tree, &quota_node(path, STATS), "count=0,bytes=0", false).unwrap();
    }

    fn stats(tree: &DataTree, path: &str) -> String {
        String::from_utf8_lossy(tree.node(&quota_node(path, STATS)).unwrap().data()).into_owned()
    }

    #[test]
    fn stats_track_reads_and_writes_zookeepers_format() {
        // Written by ZooKeeper 3.8's setquota -N 2.
        let text = "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2";
        let track = StatsTrack::parse(text);
        assert_eq!(track.get("countHardLimit"), 2);
        assert_eq!(track.count(), -1);
        assert_eq!(track.format(), text);
        assert_eq!(
            StatsTrack::parse("count=4,bytes=0").format(),
            "count=4,bytes=0"
        );
        assert_eq!(StatsTrack::parse("").get("count"), -1);
    }

    #[test]
    fn stats_follow_the_subtree_as_in_zookeeper() {
        // ZooKeeper 3.8: create /zz, setquota -n 2 /zz -> count=1; three children ->
        // count=4 (the soft limit is only exceeded).
        let mut tree = DataTree::new();
        create(&mut tree, "/zz", "", false).unwrap();
        set_quota(
            &mut tree,
            "/zz",
            "count=2,bytes=-1=;byteHardLimit=-1;countHardLimit=-1",
        );
        assert_eq!(stats(&tree, "/zz"), "count=1,bytes=0");
        for child in ["a", "b", "c"] {
            create(&mut tree, &format!("/zz/{child}"), "", true).unwrap();
        }
        assert_eq!(stats(&tree, "/zz"), "count=4,bytes=0");
        let ctx = ctx(500, false);
        tree.set_data("/zz/a", Bytes::from_static(b"12345").into(), -1, &ctx)
            .unwrap();
        assert_eq!(stats(&tree, "/zz"), "count=4,bytes=5");
        tree.delete("/zz/a", -1, &ctx).unwrap();
        assert_eq!(stats(&tree, "/zz"), "count=3,bytes=0");
        // Outside the quota nothing is counted.
        create(&mut tree, "/zzz", "x", false).unwrap();
        assert_eq!(stats(&tree, "/zz"), "count=3,bytes=0");
    }

    #[test]
    fn hard_limits_refuse_only_when_enforced() {
        // ZooKeeper 3.8 with enforceQuota=true: setquota -N 2 /yy, then /yy/a is
        // created and /yy/b refused; -B 4 refuses a 5-byte setData.
        let mut tree = DataTree::new();
        create(&mut tree, "/yy", "", false).unwrap();
        set_quota(
            &mut tree,
            "/yy",
            "count=-1,bytes=-1=;byteHardLimit=4;countHardLimit=2",
        );
        create(&mut tree, "/yy/a", "", true).unwrap();
        let digest = tree.digest();
        assert_eq!(
            create(&mut tree, "/yy/b", "", true),
            Err(ErrorCode::QuotaExceeded)
        );
        assert_eq!(tree.digest(), digest, "a refused create changed the tree");
        assert_eq!(
            tree.set_data(
                "/yy",
                Bytes::from_static(b"12345").into(),
                -1,
                &ctx(600, true)
            )
            .map(|_| ()),
            Err(ErrorCode::QuotaExceeded)
        );
        tree.set_data(
            "/yy",
            Bytes::from_static(b"123").into(),
            -1,
            &ctx(601, true),
        )
        .unwrap();
        assert_eq!(stats(&tree, "/yy"), "count=2,bytes=3");
        // Not enforced: counted past the limit.
        create(&mut tree, "/yy/b", "", false).unwrap();
        assert_eq!(stats(&tree, "/yy"), "count=3,bytes=3");
    }
}
