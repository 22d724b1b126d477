//! Reading entries back from the segments once the storage has dropped its in-memory
//! copies of them (`DurableStorage` keeps only the newest entries in memory): for a
//! follower that is further behind than that.
//!
//! Only entries that are durable and applied are read back. Raft never overwrites a
//! committed entry, so no truncation rewrites them, and the offsets found in a segment
//! stay right for as long as it exists; the storage never asks for an entry at or
//! before its compacted index, and never purges the log past that index. A snapshot
//! from the leader replaces the whole log: [`LogReader::forget`] then, since a new
//! segment may take an old one's name.

use std::path::PathBuf;
use std::sync::Arc;

use protobuf::Message as _;
use raft::prelude::Entry;

use super::disk::Disk;
use super::segment::{decode_header, parse_segment_name, read_record, record_offsets, Damage};
use super::LogError;

pub struct LogReader {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    /// The segment read last: a follower catching up reads one segment many times over.
    located: Option<Located>,
}

/// Where a segment's records are.
struct Located {
    first_index: u64,
    path: PathBuf,
    /// Each record's offset, in index order from `first_index`.
    offsets: Vec<u64>,
    /// Where the last record found ends.
    end: u64,
}

impl Located {
    fn covers(&self, index: u64) -> bool {
        index >= self.first_index && index - self.first_index < self.offsets.len() as u64
    }

    /// The bytes of records `[from, to)` (positions in this segment).
    fn span(&self, from: usize, to: usize) -> (u64, u64) {
        let start = self.offsets[from];
        let end = self.offsets.get(to).copied().unwrap_or(self.end);
        (start, end)
    }
}

impl LogReader {
    pub fn new(disk: Arc<dyn Disk>, dir: PathBuf) -> LogReader {
        LogReader {
            disk,
            dir,
            located: None,
        }
    }

    /// The log was replaced: what was found in it no longer holds.
    pub fn forget(&mut self) {
        self.located = None;
    }

    /// Entries from `low` up to, not including, `high`: at least one, then as many as
    /// keep the sum of their sizes (raft's measure, the encoded protobuf size) within
    /// `max_size`. Returns them with that sum.
    pub fn read(
        &mut self,
        low: u64,
        high: u64,
        max_size: u64,
    ) -> Result<(Vec<Entry>, u64), LogError> {
        let mut out: Vec<Entry> = Vec::new();
        let mut size = 0u64;
        let mut next = low;
        while next < high {
            let located = self.locate(next)?;
            let from = (next - located.first_index) as usize;
            let last = located
                .offsets
                .len()
                .min((high - located.first_index) as usize);
            // Records are a little larger than their entries' encoded size, so a span
            // within the budget never holds more than the budget admits, but one record
            // is read in any case.
            let budget = max_size.saturating_sub(size);
            let mut to = from + 1;
            while to < last && {
                let (start, end) = located.span(from, to + 1);
                end - start <= budget
            } {
                to += 1;
            }
            let (start, end) = located.span(from, to);
            let path = located.path.clone();
            let mut bytes = vec![0u8; (end - start) as usize];
            self.disk
                .open(&path)
                .and_then(|mut file| file.read_at(start, &mut bytes))
                .map_err(|source| LogError::Io {
                    path: path.clone(),
                    source,
                })?;
            let mut at = 0;
            while at < bytes.len() {
                let corrupt = |damage| LogError::Corrupt {
                    file: path.clone(),
                    offset: start + at as u64,
                    damage,
                };
                let (entry, len) = read_record(&bytes, at).map_err(corrupt)?;
                if entry.index != next {
                    return Err(corrupt(Damage::WrongIndex {
                        expected: next,
                        found: entry.index,
                    }));
                }
                size += u64::from(entry.compute_size());
                if !out.is_empty() && size > max_size {
                    return Ok((out, size));
                }
                out.push(entry);
                next += 1;
                at += len;
            }
        }
        Ok((out, size))
    }

    /// The segment that holds `index`, its records found.
    fn locate(&mut self, index: u64) -> Result<&Located, LogError> {
        if !self.located.as_ref().is_some_and(|l| l.covers(index)) {
            self.located = Some(self.scan_segment_of(index)?);
        }
        match &self.located {
            Some(located) if located.covers(index) => Ok(located),
            _ => Err(LogError::Missing {
                index,
                dir: self.dir.clone(),
            }),
        }
    }

    fn scan_segment_of(&self, index: u64) -> Result<Located, LogError> {
        let io = |path: &PathBuf| {
            let path = path.clone();
            move |source| LogError::Io { path, source }
        };
        let (first_index, name) = self
            .disk
            .list(&self.dir)
            .map_err(io(&self.dir))?
            .into_iter()
            .filter(|(name, _)| !name.ends_with(".tmp"))
            .filter_map(|(name, _)| Some((parse_segment_name(&name)?, name)))
            .filter(|(first, _)| *first <= index)
            .max_by_key(|(first, _)| *first)
            .ok_or_else(|| LogError::Missing {
                index,
                dir: self.dir.clone(),
            })?;
        let path = self.dir.join(name);
        let file = self
            .disk
            .open(&path)
            .and_then(|mut f| f.read_all())
            .map_err(io(&path))?;
        let header = decode_header(&file).map_err(|error| LogError::Header {
            file: path.clone(),
            error,
        })?;
        if header.first_index != first_index {
            return Err(LogError::Misnamed {
                file: path,
                first: header.first_index,
            });
        }
        let (offsets, end) = record_offsets(&file);
        Ok(Located {
            first_index,
            path,
            offsets,
            end,
        })
    }
}
