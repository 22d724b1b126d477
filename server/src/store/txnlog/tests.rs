//! The txn log's scenarios: round trips, recovery, torn tails against corruption, group
//! commit, truncation, purge, and simulated crashes.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;

use bytes::Bytes;
use raft::prelude::Entry;

use super::segment::{segment_name, HEADER_LEN, SECTOR};
use super::sim::{Rng, SimDisk};
use super::*;

/// A normal entry for tests, shared by the store's test modules.
pub(crate) fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
    Entry {
        index,
        term,
        data: Bytes::copy_from_slice(data),
        ..Default::default()
    }
}

/// Non-zero, index-dependent data, so no record holds a zero sector by accident.
fn data_for(index: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| 1 + ((index as usize * 31 + i) % 251) as u8)
        .collect()
}

fn entries(range: std::ops::RangeInclusive<u64>, term: u64, len: usize) -> Vec<Entry> {
    range.map(|i| entry(i, term, &data_for(i, len))).collect()
}

fn config(dir: &Path) -> LogConfig {
    LogConfig {
        dir: dir.to_owned(),
        segment_size: 4096,
        pre_alloc_size: 8192,
        max_batch_entries: 1000,
        force_sync: true,
    }
}

/// A writer whose reports arrive on a channel.
fn open_log(
    disk: &Arc<dyn Disk>,
    config: LogConfig,
    after: Position,
) -> Result<(Vec<Entry>, LogWriter, Receiver<Durable>), LogError> {
    let (tx, rx) = mpsc::channel();
    let on_durable: OnDurable = Box::new(move |d| {
        let _ = tx.send(d); // the test may have stopped listening
    });
    let (recovered, writer, _) = open(disk.clone(), config, after, on_durable)?;
    Ok((recovered, writer, rx))
}

fn sim() -> (SimDisk, Arc<dyn Disk>) {
    let sim = SimDisk::default();
    let disk: Arc<dyn Disk> = Arc::new(sim.clone());
    (sim, disk)
}

fn dir() -> PathBuf {
    PathBuf::from("/sim/log")
}

fn wait_for(rx: &Receiver<Durable>, ready: u64) -> Durable {
    loop {
        let d = rx.recv().expect("the writer reports every batch");
        if d.ready_number >= ready {
            return d;
        }
    }
}

fn write_all(disk: &Arc<dyn Disk>, config: LogConfig, batches: Vec<Vec<Entry>>) {
    let (_, writer, rx) = open_log(disk, config, Position::default()).unwrap();
    let n = batches.len() as u64;
    for (i, entries) in batches.into_iter().enumerate() {
        writer.submit(AppendBatch {
            entries,
            hard_state: None,
            ready_number: i as u64 + 1,
        });
    }
    wait_for(&rx, n);
}

fn segments(sim: &SimDisk) -> Vec<String> {
    let mut names: Vec<String> = sim
        .list(&dir())
        .unwrap()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    names.sort();
    names
}

#[test]
fn round_trip_on_a_real_disk_across_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Disk> = Arc::new(OsDisk);
    let written = entries(1..=200, 1, 100);
    write_all(
        &disk,
        config(tmp.path()),
        written.chunks(7).map(<[Entry]>::to_vec).collect(),
    );
    let (recovered, writer, _) = open_log(&disk, config(tmp.path()), Position::default()).unwrap();
    assert_eq!(recovered, written);
    // Appends continue where the log ended, and survive another reopen.
    writer.submit(AppendBatch {
        entries: entries(201..=210, 2, 10),
        hard_state: None,
        ready_number: 1,
    });
    drop(writer);
    let (recovered, _, _) = open_log(&disk, config(tmp.path()), Position::default()).unwrap();
    assert_eq!(recovered.len(), 210);
    assert_eq!(recovered[200..], entries(201..=210, 2, 10)[..]);
    let files = std::fs::read_dir(tmp.path()).unwrap().count();
    assert!(files > 3, "4 KiB segments roll: {files} files");
}

#[test]
fn reports_carry_the_newest_hard_state_and_last_index() {
    let (_, disk) = sim();
    let (_, writer, rx) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    let hs = raft::prelude::HardState {
        term: 3,
        vote: 2,
        ..Default::default()
    };
    writer.submit(AppendBatch {
        entries: entries(1..=3, 3, 10),
        hard_state: Some(hs.clone()),
        ready_number: 7,
    });
    let durable = wait_for(&rx, 7);
    assert_eq!(durable.last_index, 3);
    assert_eq!(durable.hard_state, Some(hs));
    assert_eq!(writer.stats().snapshot().durable_index, 3);
}

/// Cuts the last segment at every byte offset of its final records, both as a shorter
/// file and as zeros in preallocated space: recovery keeps exactly the records before
/// the cut, with a warning, never an error.
#[test]
fn a_cut_anywhere_in_the_last_records_recovers_a_valid_prefix() {
    let (sim, disk) = sim();
    let written = entries(1..=30, 1, 40);
    write_all(&disk, config(&dir()), vec![written.clone()]);
    let last = dir().join(segments(&sim).last().unwrap());
    let full = sim.contents(&last).unwrap();
    let first_in_segment = u64::from_le_bytes(full[16..24].try_into().unwrap());
    // Offsets of the records in the last segment.
    let mut offsets = vec![HEADER_LEN as usize];
    while let Ok((_, len)) = segment::read_record(&full, *offsets.last().unwrap()) {
        offsets.push(offsets.last().unwrap() + len);
    }
    let end = offsets.pop().unwrap();
    assert!(offsets.len() >= 3);
    let from = offsets[offsets.len() - 3];
    for cut in from..end {
        for zero_fill in [false, true] {
            let mut bytes = full[..cut].to_vec();
            if zero_fill {
                bytes.resize(full.len(), 0);
            }
            sim.corrupt(&last, bytes.clone());
            let (recovered, writer, _) = open_log(&disk, config(&dir()), Position::default())
                .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            drop(writer);
            // A record survives the cut when its bytes are unchanged: zeros that were
            // there anyway (an empty context's length) don't damage it.
            let complete = offsets
                .iter()
                .zip(offsets.iter().skip(1).chain(std::iter::once(&end)))
                .take_while(|&(&start, &record_end)| {
                    bytes.get(start..record_end) == Some(&full[start..record_end])
                })
                .count();
            let expected = (first_in_segment - 1) as usize + complete;
            assert_eq!(
                recovered[..],
                written[..expected],
                "cut at {cut}, zeros {zero_fill}"
            );
        }
    }
}

/// A bit flipped anywhere in a record with more records after it is reported with the
/// file and the record's offset, never skipped: truncating there would lose entries
/// this server acknowledged.
#[test]
fn a_flipped_bit_in_the_middle_of_a_segment_is_an_error() {
    let (sim, disk) = sim();
    write_all(&disk, config(&dir()), vec![entries(1..=30, 1, 40)]);
    let last = dir().join(segments(&sim).last().unwrap());
    let full = sim.contents(&last).unwrap();
    let second = HEADER_LEN as usize + segment::read_record(&full, HEADER_LEN as usize).unwrap().1;
    let (_, len) = segment::read_record(&full, second).unwrap();
    for bit in 0..len * 8 {
        let mut bytes = full.clone();
        bytes[second + bit / 8] ^= 1 << (bit % 8);
        sim.corrupt(&last, bytes);
        match open_log(&disk, config(&dir()), Position::default()) {
            Err(LogError::Corrupt { file, offset, .. }) => {
                assert_eq!(file, last);
                assert_eq!(offset, second as u64, "bit {bit}");
            }
            Err(e) => panic!("bit {bit}: unexpected {e}"),
            Ok(_) => panic!("bit {bit}: the flip was skipped"),
        }
    }
}

#[test]
fn damage_in_an_earlier_segment_is_an_error_even_at_its_end() {
    let (sim, disk) = sim();
    write_all(&disk, config(&dir()), vec![entries(1..=200, 1, 40)]);
    let names = segments(&sim);
    assert!(names.len() > 2);
    let first = dir().join(&names[0]);
    let mut bytes = sim.contents(&first).unwrap();
    // The last record of the first segment: its end is followed only by zeros.
    let mut offset = HEADER_LEN as usize;
    let mut last_record = offset;
    while let Ok((_, len)) = segment::read_record(&bytes, offset) {
        last_record = offset;
        offset += len;
    }
    bytes[last_record + 20] ^= 0x10;
    sim.corrupt(&first, bytes);
    let err = open_log(&disk, config(&dir()), Position::default()).err();
    assert!(
        matches!(&err, Some(LogError::Corrupt { file, offset, .. }) if *file == first && *offset == last_record as u64),
        "{err:?}"
    );
}

/// A crash can persist a later sector of the last group commit but not an earlier one:
/// good records after an unwritten (zero) sector are the same unsynced batch, not
/// evidence of corruption.
#[test]
fn a_torn_write_with_good_records_after_it_is_truncated() {
    let (sim, disk) = sim();
    write_all(&disk, config(&dir()), vec![entries(1..=30, 1, 200)]);
    let last = dir().join(segments(&sim).last().unwrap());
    let full = sim.contents(&last).unwrap();
    let first_in_segment = u64::from_le_bytes(full[16..24].try_into().unwrap());
    let mut offsets = vec![HEADER_LEN as usize];
    while let Ok((_, len)) = segment::read_record(&full, *offsets.last().unwrap()) {
        offsets.push(offsets.last().unwrap() + len);
    }
    // Zero the second sector: records after it stay intact.
    let mut bytes = full.clone();
    bytes[SECTOR..2 * SECTOR].fill(0);
    sim.corrupt(&last, bytes);
    let (recovered, _, _) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    let intact = offsets.windows(2).filter(|w| w[1] <= SECTOR).count();
    assert_eq!(recovered.len(), (first_in_segment - 1) as usize + intact);
}

#[test]
fn group_commit_covers_many_batches_with_one_fsync() {
    let tmp = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Disk> = Arc::new(OsDisk);
    let mut config = LogConfig::new(tmp.path());
    config.max_batch_entries = 300;
    config.pre_alloc_size = 1024 * 1024;
    let (_, writer, rx) = open_log(&disk, config, Position::default()).unwrap();
    // One entry per batch, as raft's Readys arrive under load, faster than fsyncs.
    for i in 1..=5000u64 {
        writer.submit(AppendBatch {
            entries: vec![entry(i, 1, &[7; 100])],
            hard_state: None,
            ready_number: i,
        });
    }
    let mut last = 0;
    while last < 5000 {
        let d = rx.recv().unwrap();
        assert!(d.ready_number > last, "reports are in order");
        assert_eq!(d.last_index, d.ready_number);
        last = d.ready_number;
    }
    let stats = writer.stats().snapshot();
    assert_eq!(stats.entries_written, 5000);
    assert!(stats.max_batch_entries <= 300, "{stats:?}");
    assert!(stats.fsyncs >= 5000 / 300, "{stats:?}");
    assert!(
        stats.fsyncs < 500,
        "far fewer fsyncs than entries: {stats:?}"
    );
    assert_eq!(stats.durable_index, 5000);
}

#[test]
fn one_large_batch_is_split_at_the_batch_limit() {
    let (sim, disk) = sim();
    let mut config = config(&dir());
    config.max_batch_entries = 100;
    config.segment_size = 1 << 30;
    let (_, writer, rx) = open_log(&disk, config, Position::default()).unwrap();
    let before = sim.fsyncs();
    writer.submit(AppendBatch {
        entries: entries(1..=1000, 1, 8),
        hard_state: None,
        ready_number: 1,
    });
    assert_eq!(wait_for(&rx, 1).last_index, 1000);
    assert_eq!(sim.fsyncs() - before, 10);
    assert_eq!(writer.stats().snapshot().max_batch_entries, 100);
}

#[test]
fn without_force_sync_nothing_is_fsynced_but_batches_are_reported() {
    let (sim, disk) = sim();
    let mut config = config(&dir());
    config.force_sync = false;
    config.segment_size = 1 << 30;
    let (_, writer, rx) = open_log(&disk, config, Position::default()).unwrap();
    let before = sim.fsyncs();
    writer.submit(AppendBatch {
        entries: entries(1..=10, 1, 8),
        hard_state: None,
        ready_number: 1,
    });
    wait_for(&rx, 1);
    assert_eq!(sim.fsyncs(), before);
}

/// Raft §5.3: a new leader's entries replace a conflicting suffix of a follower's log.
#[test]
fn overwriting_a_suffix_truncates_the_log_across_segments() {
    let (sim, disk) = sim();
    let (_, writer, rx) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    writer.submit(AppendBatch {
        entries: entries(1..=100, 1, 40),
        hard_state: None,
        ready_number: 1,
    });
    wait_for(&rx, 1);
    let before = segments(&sim).len();
    // Within the active segment, then far back into an earlier one.
    writer.submit(AppendBatch {
        entries: entries(98..=99, 2, 40),
        hard_state: None,
        ready_number: 2,
    });
    writer.submit(AppendBatch {
        entries: entries(20..=25, 3, 40),
        hard_state: None,
        ready_number: 3,
    });
    wait_for(&rx, 3);
    drop(writer);
    assert!(segments(&sim).len() < before);
    let (recovered, _, _) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    let mut expected = entries(1..=19, 1, 40);
    expected.extend(entries(20..=25, 3, 40));
    assert_eq!(recovered, expected);
}

#[test]
fn a_reset_makes_the_log_continue_a_snapshot() {
    let (sim, disk) = sim();
    let (_, writer, rx) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    writer.submit(AppendBatch {
        entries: entries(1..=100, 1, 40),
        hard_state: None,
        ready_number: 1,
    });
    let snapshot = Position {
        index: 500,
        term: 4,
    };
    writer.reset(snapshot);
    writer.submit(AppendBatch {
        entries: entries(501..=505, 4, 40),
        hard_state: None,
        ready_number: 2,
    });
    wait_for(&rx, 2);
    drop(writer);
    assert_eq!(segments(&sim), vec![segment_name(501)]);
    let (recovered, writer, _) = open_log(&disk, config(&dir()), snapshot).unwrap();
    assert_eq!(recovered, entries(501..=505, 4, 40));
    drop(writer);
    // A log that does not continue the snapshot's term is replaced, as raft's snapshot
    // install replaces a follower's log.
    let other = Position {
        index: 500,
        term: 3,
    };
    let (recovered, _, _) = open_log(&disk, config(&dir()), other).unwrap();
    assert!(recovered.is_empty());
}

#[test]
fn purge_deletes_only_segments_wholly_behind_the_index() {
    let (sim, disk) = sim();
    write_all(&disk, config(&dir()), vec![entries(1..=200, 1, 40)]);
    let (_, writer, rx) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    let before: Vec<u64> = segments(&sim)
        .iter()
        .map(|n| segment::parse_segment_name(n).unwrap())
        .collect();
    writer.purge(120);
    // A batch after the purge: its report means the purge is done.
    writer.submit(AppendBatch {
        entries: vec![],
        hard_state: None,
        ready_number: 1,
    });
    wait_for(&rx, 1);
    drop(writer);
    let after: Vec<u64> = segments(&sim)
        .iter()
        .map(|n| segment::parse_segment_name(n).unwrap())
        .collect();
    // The segment holding 121 is the oldest kept; all before it are gone.
    let holding = *before.iter().filter(|&&f| f <= 121).max().unwrap();
    assert_eq!(
        after,
        before
            .into_iter()
            .filter(|&f| f >= holding)
            .collect::<Vec<_>>()
    );
    let anchor = Position {
        index: 120,
        term: 1,
    };
    let (recovered, _, _) = open_log(&disk, config(&dir()), anchor).unwrap();
    assert_eq!(recovered, entries(121..=200, 1, 40));
    // Entries behind the oldest segment are gone: a snapshot older than that can't be
    // continued, and that is an error, not a silent gap.
    let too_old = Position { index: 10, term: 1 };
    let err = open_log(&disk, config(&dir()), too_old).err();
    assert!(
        matches!(err, Some(LogError::Gap { needed: 11, .. })),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------
// Simulated crashes

/// The log as a model: `states[r]` is the log after batch `r` was processed.
struct Model {
    states: Vec<Vec<(u64, u64)>>,
}

impl Model {
    /// Whether `recovered` could be what a crash leaves after batch `acked` was reported
    /// durable: a prefix of the log after `acked` or a later batch, keeping at least what
    /// every batch from `acked` to some later `k` agreed on. A truncation that follows
    /// may legitimately take acknowledged entries away, completed or midway (a crash
    /// between cutting two segments leaves a shorter prefix of the old log): raft only
    /// overwrites entries that were never committed.
    fn admits(&self, acked: usize, recovered: &[(u64, u64)]) -> bool {
        let base = &self.states[acked];
        let mut common = base.len();
        let mut is_prefix = false;
        for state in &self.states[acked..] {
            common = common.min(base.iter().zip(state).take_while(|(a, b)| a == b).count());
            is_prefix |= state.starts_with(recovered);
            if is_prefix && recovered.len() >= common {
                return true;
            }
        }
        false
    }
}

fn crash_scenario(seed: u64, truncations: bool) {
    // Slow fsyncs make crashes land while written data waits for one: torn writes.
    let delay = std::time::Duration::from_micros(if seed % 2 == 0 { 100 } else { 0 });
    let sim = SimDisk::with_fsync_delay(delay);
    let disk: Arc<dyn Disk> = Arc::new(sim.clone());
    let mut config = config(&dir());
    config.max_batch_entries = 1 + seed % 50;
    config.pre_alloc_size = if seed % 3 == 0 { 0 } else { 4096 };
    let acked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let acked_writer = acked.clone();
    let on_durable: OnDurable = Box::new(move |d| {
        acked_writer.store(d.ready_number, std::sync::atomic::Ordering::SeqCst);
    });
    let (_, writer, _) = open(
        disk.clone(),
        config.clone(),
        Position::default(),
        on_durable,
    )
    .unwrap();
    let mut rng = Rng::new(seed);
    let mut model = Model {
        states: vec![vec![]],
    };
    let mut log: Vec<(u64, u64)> = Vec::new();
    let mut term = 1;
    let batches = 200 + rng.below(200);
    let crash_at = 1 + rng.below(batches);
    let mut image = None;
    for ready in 1..=batches {
        let mut first = log.len() as u64 + 1;
        let mut count = rng.below(8);
        if truncations && log.len() > 5 && rng.below(10) == 0 {
            // A new leader's entries replace ours from `first` on.
            first -= rng.below(5) + 1;
            term += 1;
            log.truncate(first as usize - 1);
            count = count.max(1);
        }
        let batch: Vec<Entry> = (first..first + count)
            .map(|i| entry(i, term, &data_for(i, 1 + rng.below(300) as usize)))
            .collect();
        log.extend(batch.iter().map(|e| (e.index, e.term)));
        model.states.push(log.clone());
        writer.submit(AppendBatch {
            entries: batch,
            hard_state: None,
            ready_number: ready,
        });
        if ready == crash_at {
            // Give the writer a moment to be somewhere in the middle of its work.
            std::thread::sleep(std::time::Duration::from_micros(rng.below(500)));
            // Read the acknowledgement before the image: everything acknowledged was
            // fsynced before the image is taken.
            let acked = acked.load(std::sync::atomic::Ordering::SeqCst);
            image = Some((acked, sim.crash(seed)));
        }
    }
    drop(writer);
    let (acked, crashed) = image.unwrap();
    let crashed_disk: Arc<dyn Disk> = Arc::new(crashed);
    let (recovered, writer, _) = open_log(&crashed_disk, config.clone(), Position::default())
        .unwrap_or_else(|e| panic!("seed {seed}: recovery failed: {e}"));
    let recovered: Vec<(u64, u64)> = recovered.iter().map(|e| (e.index, e.term)).collect();
    assert!(
        model.admits(acked as usize, &recovered),
        "seed {seed}: acknowledged batch {acked} ({} entries) but recovered {} entries",
        model.states[acked as usize].len(),
        recovered.len()
    );
    // The recovered log takes appends again, and they survive a clean reopen.
    let next = recovered.len() as u64 + 1;
    writer.submit(AppendBatch {
        entries: entries(next..=next + 2, term + 1, 10),
        hard_state: None,
        ready_number: 1,
    });
    drop(writer);
    let (again, _, _) = open_log(&crashed_disk, config, Position::default()).unwrap();
    assert_eq!(again.len() as u64, next + 2);
}

/// Acknowledged writes are never lost (openraft's named invariant): after a simulated
/// crash that keeps only what was fsynced, plus any random subset of the sectors written
/// since, recovery succeeds and holds every entry reported durable.
#[test]
fn crash_keeps_every_acknowledged_entry() {
    for seed in 1..=60 {
        crash_scenario(seed, false);
    }
}

#[test]
fn crash_with_truncations_keeps_every_acknowledged_entry() {
    for seed in 100..=160 {
        crash_scenario(seed, true);
    }
}

/// The reader finds any written entry again, across segments, by raft's size rule (at
/// least one entry, then as many as fit), while the writer goes on appending to the
/// segment it reads from; and a truncation after the entries it found moves none of
/// them.
#[test]
fn the_reader_reads_back_ranges_across_segments_while_the_log_grows() {
    let (sim, disk) = sim();
    let (_, writer, rx) = open_log(&disk, config(&dir()), Position::default()).unwrap();
    let written = entries(1..=300, 1, 100);
    writer.submit(AppendBatch {
        entries: written[..250].to_vec(),
        hard_state: None,
        ready_number: 1,
    });
    wait_for(&rx, 1);
    assert!(segments(&sim).len() > 3, "4 KiB segments roll");
    let mut reader = LogReader::new(disk.clone(), dir());
    let size = |es: &[Entry]| -> u64 {
        use protobuf::Message as _;
        es.iter().map(|e| u64::from(e.compute_size())).sum()
    };
    let (all, all_size) = reader.read(1, 251, u64::MAX).unwrap();
    assert_eq!(all, written[..250]);
    assert_eq!(all_size, size(&all));
    // Within a byte budget: as many as fit, and at least one.
    let budget = size(&written[9..29]);
    let (some, _) = reader.read(10, 251, budget).unwrap();
    assert_eq!(some, written[9..29]);
    let (one, _) = reader.read(10, 251, 1).unwrap();
    assert_eq!(one, written[9..10]);
    // The last segment grows while it is read from.
    let (tail, _) = reader.read(240, 251, u64::MAX).unwrap();
    assert_eq!(tail, written[239..250]);
    writer.submit(AppendBatch {
        entries: written[250..].to_vec(),
        hard_state: None,
        ready_number: 2,
    });
    wait_for(&rx, 2);
    let (grown, _) = reader.read(240, 301, u64::MAX).unwrap();
    assert_eq!(grown, written[239..]);
    // A new leader replaces entries from 290 on; those before stay where they were.
    writer.submit(AppendBatch {
        entries: entries(290..=295, 2, 30),
        hard_state: None,
        ready_number: 3,
    });
    wait_for(&rx, 3);
    let (kept, _) = reader.read(280, 290, u64::MAX).unwrap();
    assert_eq!(kept, written[279..289]);
    reader.forget();
    let (replaced, _) = reader.read(285, 296, u64::MAX).unwrap();
    assert_eq!(replaced[..5], written[284..289]);
    assert_eq!(replaced[5..], entries(290..=295, 2, 30)[..]);
    assert!(matches!(
        reader.read(296, 297, u64::MAX),
        Err(LogError::Missing { index: 296, .. })
    ));
}
