//! Reading the log back at startup: which segments are still needed, which records are
//! good, and whether damage at the end of the log is a torn write (truncated, with a
//! warning) or corruption (an error naming the file and offset, never skipped).
//!
//! # Torn writes and corruption
//! Only the last segment can hold writes no fsync covered (see `segment`). A crash can
//! persist any subset of those writes, sector by sector, and a sector never written reads
//! as the zeros of preallocated space. So, at the first unreadable record of the last
//! segment, at offset X:
//! - only zeros from X on: the clean end of the log;
//! - no record with a good checksum and a later index anywhere after X: a torn tail;
//! - good records do follow, but a sector between X and the next of them is all zeros
//!   (a sector the crash never wrote): a torn write in the last group commit, whose
//!   later records were never fsynced either; truncated;
//! - otherwise, or in any other segment, or when the record's checksum matches but it
//!   is the wrong entry: corruption in the middle of the log, an error.
//!
//! The residual ambiguity: a bit flip in a record holding a whole sector of zero bytes,
//! followed by good records, reads as a torn write.

use std::path::{Path, PathBuf};

use raft::prelude::Entry;

use super::disk::Disk;
use super::segment::{
    decode_header, is_zero, parse_segment_name, read_record, scan, Damage, Header,
    PAYLOAD_MIN_RECORD_LEN, RECORD_PREFIX_LEN, SECTOR,
};
use super::{LogError, Position};

/// A segment the writer will not append to again: kept until purged.
#[derive(Debug, Clone)]
pub(super) struct ClosedSegment {
    pub first_index: u64,
    pub path: PathBuf,
    /// Its length on disk, for the size statistic.
    pub size: u64,
}

/// The last segment, which appends continue in.
#[derive(Debug)]
pub(super) struct OpenSegment {
    pub path: PathBuf,
    pub header: Header,
    /// Offset and term of each record.
    pub records: Vec<(u64, u64)>,
    /// Where the next record goes.
    pub end: u64,
    pub file_len: u64,
    /// Whether bytes after `end` must be cut off before appending.
    pub torn: bool,
}

/// Where appends go after recovery.
#[derive(Debug)]
pub(super) enum Tail {
    /// Continue in the last segment.
    Append(OpenSegment),
    /// Start a new segment after the snapshot; the old ones all precede it.
    Fresh,
    /// The log does not continue the snapshot: delete every segment, then start anew.
    Replace,
}

#[derive(Debug)]
pub(super) struct Recovered {
    /// The entries after the snapshot, in order.
    pub entries: Vec<Entry>,
    pub closed: Vec<ClosedSegment>,
    pub tail: Tail,
}

struct Listed {
    first_index: u64,
    path: PathBuf,
    size: u64,
}

/// Reads the log in `dir` that continues the snapshot at `after`.
pub(super) fn recover(disk: &dyn Disk, dir: &Path, after: Position) -> Result<Recovered, LogError> {
    let io = |source| LogError::Io {
        path: dir.to_owned(),
        source,
    };
    disk.create_dir_all(dir).map_err(io)?;
    let mut listed = Vec::new();
    for (name, size) in disk.list(dir).map_err(io)? {
        if name.starts_with("log.") && name.ends_with(".tmp") {
            // A segment whose creation a crash interrupted: it was never named, so it
            // holds no record.
            tracing::info!("removing the unfinished segment {name}");
            disk.remove(&dir.join(&name)).map_err(io)?;
        } else if let Some(first_index) = parse_segment_name(&name) {
            listed.push(Listed {
                first_index,
                path: dir.join(name),
                size,
            });
        }
    }
    listed.sort_by_key(|s| s.first_index);
    let from = after.index + 1;
    if listed.is_empty() {
        return Ok(Recovered {
            entries: Vec::new(),
            closed: Vec::new(),
            tail: Tail::Fresh,
        });
    }
    // Segments that end before `from` hold only what the snapshot covers: not read, kept
    // until purged (a deletion lost in a crash can leave them behind).
    let start = listed
        .iter()
        .rposition(|s| s.first_index <= from)
        .unwrap_or(0);
    if listed[start].first_index > from {
        return Err(LogError::Gap {
            file: listed[start].path.clone(),
            first: listed[start].first_index,
            needed: from,
        });
    }
    let mut closed: Vec<ClosedSegment> = listed[..start].iter().map(closed_segment).collect();
    let mut entries = Vec::new();
    // The last entry read so far: (index, term).
    let mut last: Option<(u64, u64)> = None;
    // Whether the log agrees with the snapshot's term at the snapshot's index.
    let mut continues_snapshot = None;
    let mut open = None;
    for (i, seg) in listed.iter().enumerate().skip(start) {
        let is_last = i + 1 == listed.len();
        let file = disk
            .open(&seg.path)
            .and_then(|mut f| f.read_all())
            .map_err(|source| LogError::Io {
                path: seg.path.clone(),
                source,
            })?;
        let header = decode_header(&file).map_err(|error| LogError::Header {
            file: seg.path.clone(),
            error,
        })?;
        if header.first_index != seg.first_index {
            return Err(LogError::Misnamed {
                file: seg.path.clone(),
                first: header.first_index,
            });
        }
        match last {
            Some((index, term)) if header.first_index != index + 1 || header.prev_term != term => {
                return Err(LogError::Discontinuous {
                    file: seg.path.clone(),
                    first: header.first_index,
                    prev_term: header.prev_term,
                    last: index,
                    last_term: term,
                });
            }
            Some(_) => {}
            None if header.first_index == from => {
                continues_snapshot = Some(header.prev_term == after.term);
            }
            None => {}
        }
        let mut scanned = scan(&file, header);
        let mut torn = false;
        if let Some((offset, damage)) = scanned.damage.take() {
            let expected = header.first_index + scanned.entries.len() as u64;
            if is_last && is_torn(&file, offset, &damage, expected) {
                tracing::warn!(
                    "{}: torn write at offset {offset} ({damage}); the log ends at entry {}",
                    seg.path.display(),
                    expected - 1
                );
                torn = true;
            } else {
                return Err(LogError::Corrupt {
                    file: seg.path.clone(),
                    offset,
                    damage,
                });
            }
        }
        if let Some(e) = scanned.entries.iter().find(|e| e.index == after.index) {
            continues_snapshot = Some(e.term == after.term);
        }
        last = Some(
            scanned
                .entries
                .last()
                .map_or((header.first_index - 1, header.prev_term), |e| {
                    (e.index, e.term)
                }),
        );
        if is_last {
            open = Some(OpenSegment {
                path: seg.path.clone(),
                header,
                records: scanned.record_terms(),
                end: scanned.end,
                file_len: file.len() as u64,
                torn,
            });
        } else {
            closed.push(closed_segment(seg));
        }
        entries.extend(scanned.entries.into_iter().filter(|e| e.index >= from));
    }
    let last_index = last.map_or(0, |(index, _)| index);
    let tail = if continues_snapshot == Some(false) {
        tracing::warn!(
            "the txn log in {} disagrees with the snapshot at index {} term {}: \
             discarding it, the snapshot replaces it",
            dir.display(),
            after.index,
            after.term
        );
        entries.clear();
        Tail::Replace
    } else if last_index < after.index {
        // The snapshot is newer than the whole log: it came from the leader.
        Tail::Fresh
    } else {
        match open {
            Some(open) => Tail::Append(open),
            None => Tail::Fresh,
        }
    };
    if !matches!(tail, Tail::Append(_)) {
        // The old last segment only waits for a purge (or the replacement) now.
        if let Some(seg) = listed.last() {
            closed.push(closed_segment(seg));
        }
    }
    Ok(Recovered {
        entries,
        closed,
        tail,
    })
}

fn closed_segment(seg: &Listed) -> ClosedSegment {
    ClosedSegment {
        first_index: seg.first_index,
        path: seg.path.clone(),
        size: seg.size,
    }
}

/// Whether the unreadable record at `offset` of the last segment is a torn write (see
/// the module's rules) rather than corruption.
fn is_torn(file: &[u8], offset: u64, damage: &Damage, expected: u64) -> bool {
    if damage.crc_matched() {
        return false;
    }
    let Ok(offset) = usize::try_from(offset) else {
        return false;
    };
    match next_good_record(file, offset + 1, expected) {
        None => true,
        Some(next) => has_unwritten_sector(file, offset, next),
    }
}

/// The offset of the first record after `from` whose checksum matches and whose index is
/// `min_index` or later: evidence that the log goes on past a damaged record.
fn next_good_record(file: &[u8], from: usize, min_index: u64) -> Option<usize> {
    // Records are at least this long, so no more of them fit after `from`.
    let max_index = min_index + (file.len() / PAYLOAD_MIN_RECORD_LEN) as u64;
    let last_start = file.len().checked_sub(PAYLOAD_MIN_RECORD_LEN)?;
    (from..=last_start).find(|&at| {
        // Cheap filters first, so scanning megabytes of payload stays linear: the length
        // must fit and the index field must be plausible before a CRC is computed.
        let length = u32::from_le_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]);
        let index_at = at + RECORD_PREFIX_LEN;
        let mut index = [0u8; 8];
        index.copy_from_slice(&file[index_at..index_at + 8]);
        let index = u64::from_le_bytes(index);
        length as usize + RECORD_PREFIX_LEN >= PAYLOAD_MIN_RECORD_LEN
            && (length as usize) <= file.len() - at - RECORD_PREFIX_LEN
            && (min_index..=max_index).contains(&index)
            && read_record(file, at).is_ok()
    })
}

/// Whether some sector's part in `[from, to)` is all zeros: a sector the crash never
/// wrote. The part of a sector before `from` belongs to earlier, intact records.
fn has_unwritten_sector(file: &[u8], from: usize, to: usize) -> bool {
    let mut start = from;
    while start < to.min(file.len()) {
        let sector_end = (start / SECTOR + 1) * SECTOR;
        let part = &file[start..sector_end.min(file.len())];
        if is_zero(part) {
            return true;
        }
        start = sector_end;
    }
    false
}
