//! `paddock-loadgen merge LOG...`: several processes' interval logs as one run.
//!
//! Intervals are placed on one time line by their wall-clock start (each log's
//! StartTime plus the interval's offset), in slots of `--interval`; the intervals that
//! fall in a slot are added up (counts and histograms alike), and the result goes
//! through the same [`Series`] as a single run's intervals. Nothing is averaged or
//! resampled, so the merged percentiles are those of the combined samples and the
//! merged totals the sums of the parts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::histlog::{self, LogError, Recording};
use crate::report::{CombineError, RunInfo, Summary};
use crate::resources;
use crate::run::Outcome;
use crate::series::Series;
use crate::stats::Interval;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{path}: {source}")]
    Combine { path: PathBuf, source: CombineError },
    #[error("no logs to merge")]
    Nothing,
}

/// Reads and merges the logs at `paths`.
pub fn merge_files(paths: &[PathBuf]) -> Result<Outcome, MergeError> {
    let mut recordings = Vec::with_capacity(paths.len());
    for path in paths {
        recordings.push((path.clone(), histlog::read(path)?));
    }
    let mut info: Option<RunInfo> = None;
    for (path, recording) in &recordings {
        match &mut info {
            None => info = Some(recording.info.clone()),
            Some(info) => info
                .combine(&recording.info)
                .map_err(|source| MergeError::Combine {
                    path: path.clone(),
                    source,
                })?,
        }
    }
    let info = info.ok_or(MergeError::Nothing)?;
    let recordings: Vec<Recording> = recordings.into_iter().map(|(_, r)| r).collect();
    Ok(merge(&info, &recordings))
}

/// Merges recordings of the same load (their infos already combined into `info`).
pub fn merge(info: &RunInfo, recordings: &[Recording]) -> Outcome {
    let t0 = recordings
        .iter()
        .map(|r| r.start_unix)
        .fold(f64::INFINITY, f64::min);
    let slot = info.interval.max(1e-3);
    let mut slots: BTreeMap<i64, Interval> = BTreeMap::new();
    let mut seconds: f64 = 0.0;
    let mut interrupted = false;
    let mut samples = Vec::new();
    for r in recordings {
        let offset = r.start_unix - t0;
        for interval in &r.intervals {
            let k = ((offset + interval.start) / slot).round() as i64;
            slots
                .entry(k)
                .or_insert_with(|| Interval::empty(k as f64 * slot, 0.0))
                .absorb(interval);
        }
        seconds = seconds.max(offset + r.seconds());
        if let Some(end) = &r.end {
            interrupted |= end.interrupted;
            samples.extend(end.samples.iter().map(|s| {
                let mut s = s.clone();
                s.t += offset;
                s
            }));
        } else {
            interrupted = true;
        }
    }
    let mut series = Series::new(info.scenario, info.get_after_notify, info.data_size);
    // A slot nobody reported (a process started late) is still a row: an empty one.
    let last = slots.keys().next_back().copied().unwrap_or(-1);
    for k in 0..=last {
        let interval = slots
            .remove(&k)
            .unwrap_or_else(|| Interval::empty(k as f64 * slot, slot));
        series.push(&interval);
    }
    let summary = Summary::new(
        info,
        &series,
        seconds,
        interrupted,
        resources::summarize(&samples),
    );
    let totals = series.totals().clone();
    Outcome {
        summary,
        rows: series.into_rows(),
        totals,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::histlog::tests::info;
    use crate::histlog::{End, LogWriter};
    use crate::stats::{histogram, Op, Percentiles};

    /// A deterministic spread of latencies, different per process.
    fn samples(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // 1 µs .. ~2 s, skewed toward small values as latencies are.
                1 + (x >> 33) % ((x >> 20) % 2_000_000 + 1)
            })
            .collect()
    }

    #[test]
    fn merging_logs_equals_one_histogram_of_all_samples() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut union = histogram();
        let mut paths = Vec::new();
        let mut failures = 0;
        for p in 0..3u64 {
            let path = dir.path().join(format!("p{p}.hlog"));
            // The processes started a few ms apart, as --start-at leaves them.
            let started = t0 + Duration::from_millis(3 * p);
            let mut writer = LogWriter::create(&path, &info(&format!("p{p}")), started).unwrap();
            for k in 0..4u64 {
                let mut interval = Interval::empty(k as f64, 1.0);
                for v in samples(p * 10 + k, 500 + 100 * p as usize) {
                    interval.hist_mut(Op::Create).record(v).unwrap();
                    union.record(v).unwrap();
                }
                *interval.failures_mut(Op::Delete) = p + k;
                failures += p + k;
                writer.interval(&interval).unwrap();
            }
            writer
                .end(&End {
                    seconds: 4.0,
                    ..End::default()
                })
                .unwrap();
            paths.push(path);
        }
        let outcome = merge_files(&paths).unwrap();
        assert_eq!(outcome.totals.hist(Op::Create), &union);
        let summary = &outcome.summary;
        assert_eq!(summary.ops["create"], Percentiles::of(&union, 0));
        assert_eq!(summary.total_req, union.len());
        assert_eq!(summary.fail_total, failures);
        assert_eq!(
            outcome.rows.len(),
            4,
            "the processes' intervals share slots"
        );
        assert_eq!(summary.client_ids, ["p0", "p1", "p2"]);
        assert_eq!(summary.conns, 6);
        assert!((summary.seconds - 4.006).abs() < 1e-6);
        assert!(!summary.interrupted);
    }

    #[test]
    fn different_loads_are_not_merged() {
        let mut a = info("a");
        let mut b = info("b");
        b.data_size = 1024;
        assert!(a.combine(&b).is_err());
        let same_id = info("a");
        assert!(matches!(
            a.combine(&same_id),
            Err(CombineError::DuplicateClient(_))
        ));
    }
}
