//! A benchmark of the log alone, on the real disk with real fsyncs:
//! `cargo test --release -- --ignored --nocapture txnlog_bench`. Each run submits one
//! entry per batch (a raft `Ready` per proposal, the worst case for the writer), either
//! as fast as possible or with a bounded number of entries waiting for durability (as
//! that many clients with one write outstanding each would).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use raft::prelude::Entry;

use super::*;

struct Run {
    entry_size: usize,
    entries: u64,
    /// Entries submitted but not yet reported durable; `None` for no limit.
    window: Option<u64>,
}

fn run(dir: &std::path::Path, run: &Run) {
    let _ = std::fs::remove_dir_all(dir); // a previous run's files, if any
    let durable = Arc::new(AtomicU64::new(0));
    let reported = durable.clone();
    let on_durable: OnDurable =
        Box::new(move |d| reported.store(d.ready_number, Ordering::Release));
    let config = LogConfig::new(dir);
    let (_, writer, _) = open(Arc::new(OsDisk), config, Position::default(), on_durable).unwrap();
    let data = Bytes::from(vec![0x5a; run.entry_size]);
    let started = Instant::now();
    for i in 1..=run.entries {
        if let Some(window) = run.window {
            while i - durable.load(Ordering::Acquire) > window {
                std::hint::spin_loop();
            }
        }
        writer.submit(AppendBatch {
            entries: vec![Entry {
                index: i,
                term: 1,
                data: data.clone(),
                ..Default::default()
            }],
            hard_state: None,
            ready_number: i,
        });
    }
    while durable.load(Ordering::Acquire) < run.entries {
        std::thread::sleep(Duration::from_micros(100));
    }
    let took = started.elapsed().as_secs_f64();
    let s = writer.stats().snapshot();
    println!(
        "{:>5} B entries, window {:>9}: {:>8.0} entries/s {:>6.1} MiB/s | {:>6.0} fsyncs/s, \
         fsync avg {:>5.2} ms max {:>6.2} ms | batch avg {:>6.1} max {:>4}",
        run.entry_size,
        run.window.map_or("unbounded".to_owned(), |w| w.to_string()),
        run.entries as f64 / took,
        s.bytes_written as f64 / took / (1024.0 * 1024.0),
        s.fsyncs as f64 / took,
        s.avg_fsync().as_secs_f64() * 1e3,
        s.fsync_max.as_secs_f64() * 1e3,
        s.avg_batch_entries(),
        s.max_batch_entries,
    );
    drop(writer);
    let started = Instant::now();
    let on_durable: OnDurable = Box::new(|_| {});
    let (recovered, _, _) = open(
        Arc::new(OsDisk),
        LogConfig::new(dir),
        Position::default(),
        on_durable,
    )
    .unwrap();
    assert_eq!(recovered.len() as u64, run.entries);
    println!(
        "      recovery of {} entries ({:.0} MiB on disk): {:.0} ms",
        run.entries,
        s.size_on_disk as f64 / (1024.0 * 1024.0),
        started.elapsed().as_secs_f64() * 1e3
    );
}

#[test]
#[ignore = "a benchmark on the real disk"]
fn txnlog_bench() {
    let tmp =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let dir = tmp.path().join("log");
    for entry_size in [255, 4096] {
        let entries = if entry_size == 255 { 200_000 } else { 50_000 };
        for window in [None, Some(1), Some(100), Some(1000)] {
            let entries = if window == Some(1) { 2_000 } else { entries };
            run(
                &dir,
                &Run {
                    entry_size,
                    entries,
                    window,
                },
            );
        }
    }
}
