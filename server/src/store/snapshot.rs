//! State-machine snapshots in `dataDir`, one file each.
//!
//! # Naming
//! `snapshot.<index>`: the raft index of the last entry the snapshot includes, 16
//! lower-case hex digits (`snapshot.00000000000186a0`), so names sort by index. A file is
//! written as `snapshot.<index>.tmp`, fsynced, renamed into place and the directory
//! fsynced: a named snapshot is complete unless the disk corrupts it later. Leftover
//! `.tmp` files are deleted when the directory is opened.
//!
//! # Layout (integers little-endian)
//! ```text
//! header:
//!   magic        8   b"PDKSNAPS"
//!   version      u32 1
//!   conf_len     u32 length of conf_state
//!   index        u64 raft index of the snapshot
//!   term         u64 raft term of the entry at that index
//!   conf_state   conf_len bytes: raft's ConfState (voters, learners) as of the index,
//!                protobuf-encoded
//! payload        whatever the state machine wrote (tree and sessions), to the trailer
//! trailer, 12 bytes:
//!   payload_len  u64 bytes of payload, so a truncated file is recognised as such
//!   crc          u32 CRC-32C of every byte before it
//! ```
//!
//! # Retention
//! [`SnapshotDir::purge`] keeps the newest `autopurge.snapRetainCount` files, never fewer
//! than 3, so that a corrupt newest snapshot still leaves older ones to fall back to
//! ([`SnapshotDir::load_newest_valid`]); the txn log is kept from the oldest of them on.

use crate::store::{u32_at, u64_at};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use protobuf::Message as _;
use raft::prelude::{ConfState, SnapshotMetadata};

use crate::store::{crc32c, crc32c_append, fatal};

pub const MAGIC: [u8; 8] = *b"PDKSNAPS";
pub const VERSION: u32 = 1;
/// Magic, version, conf_len, index and term.
const FIXED_HEADER_LEN: usize = 32;
const TRAILER_LEN: usize = 12;
/// ZooKeeper's floor for `autopurge.snapRetainCount`.
pub const MIN_RETAIN: usize = 3;

/// A snapshot file found in the directory; not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    pub index: u64,
    pub path: PathBuf,
}

/// A snapshot read and verified.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSnapshot {
    /// Index, term and conf state.
    pub metadata: SnapshotMetadata,
    /// What the state machine wrote.
    pub payload: Bytes,
    pub path: PathBuf,
}

/// What [`SnapshotDir::load_newest_valid`] found.
#[derive(Debug, Default)]
pub struct NewestValid {
    /// The newest snapshot that verified; `None` when there is none.
    pub snapshot: Option<LoadedSnapshot>,
    /// The newer snapshots that did not verify, newest first.
    pub rejected: Vec<SnapshotError>,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {len} bytes is too short for a snapshot")]
    TooShort { path: PathBuf, len: usize },
    #[error("{path}: checksum mismatch")]
    Crc { path: PathBuf },
    #[error("{path}: not a snapshot (bad magic)")]
    Magic { path: PathBuf },
    #[error(
        "{path}: snapshot format version {version} is not supported (this build reads {VERSION})"
    )]
    Version { path: PathBuf, version: u32 },
    #[error("{path}: the header and trailer disagree on the file's length")]
    Length { path: PathBuf },
    #[error("{path}: the conf state does not decode: {error}")]
    ConfState {
        path: PathBuf,
        error: protobuf::ProtobufError,
    },
    #[error("{path}: the header says index {index}, the name disagrees")]
    Misnamed { path: PathBuf, index: u64 },
    #[error("encoding the conf state of snapshot {index}: {error}")]
    Encode {
        index: u64,
        error: protobuf::ProtobufError,
    },
    #[error("the conf state of snapshot {index} is too large")]
    ConfTooLarge { index: u64 },
    /// The state machine's payload writer failed on its own, not on the disk.
    #[error("writing the payload of snapshot {index}: {source}")]
    Payload {
        index: u64,
        #[source]
        source: io::Error,
    },
}

/// The snapshot files of `dataDir`.
#[derive(Debug, Clone)]
pub struct SnapshotDir {
    dir: PathBuf,
}

pub fn snapshot_name(index: u64) -> String {
    format!("snapshot.{index:016x}")
}

fn parse_snapshot_name(name: &str) -> Option<u64> {
    crate::store::parse_hex_name(name, "snapshot.")
}

impl SnapshotDir {
    /// Opens `dir`, creating it if need be, and deletes unfinished `.tmp` snapshots.
    pub fn open(dir: impl Into<PathBuf>) -> Result<SnapshotDir, SnapshotError> {
        let dir = dir.into();
        let io = |source| SnapshotError::Io {
            path: dir.clone(),
            source,
        };
        fs::create_dir_all(&dir).map_err(io)?;
        for entry in fs::read_dir(&dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if name.starts_with("snapshot.") && name.ends_with(".tmp") {
                tracing::info!("removing the unfinished snapshot {name}");
                fs::remove_file(dir.join(name)).map_err(io)?;
            }
        }
        Ok(SnapshotDir { dir })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes a snapshot: the header from `metadata`, then what `write_payload` writes.
    /// Returns once the file is durable under its final name.
    ///
    /// An error of the disk is fatal; an error `write_payload` makes on its own is
    /// returned, and the unfinished file removed.
    pub fn create(
        &self,
        metadata: &SnapshotMetadata,
        write_payload: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<SnapshotFile, SnapshotError> {
        let index = metadata.index;
        let path = self.dir.join(snapshot_name(index));
        let tmp = self.dir.join(format!("{}.tmp", snapshot_name(index)));
        let conf = metadata
            .get_conf_state()
            .write_to_bytes()
            .map_err(|error| SnapshotError::Encode { index, error })?;
        let conf_len =
            u32::try_from(conf.len()).map_err(|_| SnapshotError::ConfTooLarge { index })?;
        let file = match File::create(&tmp) {
            Ok(file) => file,
            Err(e) => fatal(format_args!("creating {}", tmp.display()), &e),
        };
        let mut out = ChecksumWriter::new(BufWriter::new(file));
        let mut header = Vec::with_capacity(FIXED_HEADER_LEN + conf.len());
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&conf_len.to_le_bytes());
        header.extend_from_slice(&index.to_le_bytes());
        header.extend_from_slice(&metadata.term.to_le_bytes());
        header.extend_from_slice(&conf);
        if let Err(e) = out.write_all(&header) {
            fatal(format_args!("writing {}", tmp.display()), &e);
        }
        let payload_start = out.written;
        if let Err(source) = write_payload(&mut out) {
            if let Some(e) = out.disk_error.take() {
                fatal(format_args!("writing {}", tmp.display()), &e);
            }
            drop(out);
            if let Err(e) = fs::remove_file(&tmp) {
                tracing::warn!("removing the unfinished {}: {e}", tmp.display());
            }
            return Err(SnapshotError::Payload { index, source });
        }
        let payload_len = out.written - payload_start;
        let written = out
            .write_all(&payload_len.to_le_bytes())
            .and_then(|()| {
                let crc = out.crc;
                out.inner.write_all(&crc.to_le_bytes())
            })
            .and_then(|()| out.inner.into_inner().map_err(|e| e.into_error()));
        let file = match written {
            Ok(file) => file,
            Err(e) => fatal(format_args!("writing {}", tmp.display()), &e),
        };
        if let Err(e) = file.sync_all() {
            fatal(format_args!("fsync of {}", tmp.display()), &e);
        }
        drop(file);
        if let Err(e) = fs::rename(&tmp, &path) {
            fatal(format_args!("renaming {} into place", tmp.display()), &e);
        }
        if let Err(e) = File::open(&self.dir).and_then(|dir| dir.sync_all()) {
            fatal(format_args!("fsync of {}", self.dir.display()), &e);
        }
        tracing::info!(
            "wrote snapshot {} ({payload_len} payload bytes)",
            path.display()
        );
        Ok(SnapshotFile { index, path })
    }

    /// Where a snapshot streamed from the leader is written while it arrives (cleaned
    /// up on open like any unfinished snapshot).
    pub fn incoming_path(&self, index: u64) -> PathBuf {
        self.dir.join(format!("{}.recv.tmp", snapshot_name(index)))
    }

    /// Takes a snapshot file that arrived whole at `incoming` (already fsynced):
    /// verifies it as [`SnapshotDir::load`] does, then renames it into place and
    /// fsyncs the directory. A file that does not verify is deleted and reported.
    pub fn adopt(&self, incoming: &Path, index: u64) -> Result<LoadedSnapshot, SnapshotError> {
        let bytes = fs::read(incoming).map_err(|source| SnapshotError::Io {
            path: incoming.to_owned(),
            source,
        })?;
        let loaded = match decode(incoming, bytes) {
            Ok(loaded) if loaded.metadata.index == index => loaded,
            Ok(loaded) => {
                let _ = fs::remove_file(incoming);
                return Err(SnapshotError::Misnamed {
                    path: incoming.to_owned(),
                    index: loaded.metadata.index,
                });
            }
            Err(e) => {
                let _ = fs::remove_file(incoming);
                return Err(e);
            }
        };
        let path = self.dir.join(snapshot_name(index));
        if let Err(e) = fs::rename(incoming, &path) {
            fatal(
                format_args!("renaming {} into place", incoming.display()),
                &e,
            );
        }
        if let Err(e) = File::open(&self.dir).and_then(|dir| dir.sync_all()) {
            fatal(format_args!("fsync of {}", self.dir.display()), &e);
        }
        Ok(LoadedSnapshot { path, ..loaded })
    }

    /// The snapshot at `index`, if its file is there (verified).
    pub fn load_index(&self, index: u64) -> Result<Option<LoadedSnapshot>, SnapshotError> {
        let file = SnapshotFile {
            index,
            path: self.dir.join(snapshot_name(index)),
        };
        if !file.path.exists() {
            return Ok(None);
        }
        self.load(&file).map(Some)
    }

    /// The snapshot files, oldest first.
    pub fn list(&self) -> Result<Vec<SnapshotFile>, SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut files = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            if let Some(index) = name.to_str().and_then(parse_snapshot_name) {
                files.push(SnapshotFile {
                    index,
                    path: self.dir.join(name),
                });
            }
        }
        files.sort_by_key(|f| f.index);
        Ok(files)
    }

    /// Reads and verifies one snapshot.
    pub fn load(&self, file: &SnapshotFile) -> Result<LoadedSnapshot, SnapshotError> {
        let path = &file.path;
        let bytes = fs::read(path).map_err(|source| SnapshotError::Io {
            path: path.clone(),
            source,
        })?;
        let loaded = decode(path, bytes)?;
        if loaded.metadata.index != file.index {
            return Err(SnapshotError::Misnamed {
                path: path.clone(),
                index: loaded.metadata.index,
            });
        }
        Ok(loaded)
    }

    /// The newest snapshot that verifies. Each newer one that doesn't is logged as an
    /// error and listed in [`NewestValid::rejected`]: falling back is safe only because
    /// the log is kept from the oldest retained snapshot on, and an operator should know.
    pub fn load_newest_valid(&self) -> Result<NewestValid, SnapshotError> {
        let mut found = NewestValid::default();
        for file in self.list()?.into_iter().rev() {
            match self.load(&file) {
                Ok(snapshot) => {
                    found.snapshot = Some(snapshot);
                    break;
                }
                Err(e) => {
                    tracing::error!("snapshot rejected, falling back to an older one: {e}");
                    found.rejected.push(e);
                }
            }
        }
        Ok(found)
    }

    /// Deletes all but the newest `retain` snapshots (at least [`MIN_RETAIN`]); returns
    /// the ones kept, oldest first.
    pub fn purge(&self, retain: usize) -> Result<Vec<SnapshotFile>, SnapshotError> {
        let mut files = self.list()?;
        let remove = files.len().saturating_sub(retain.max(MIN_RETAIN));
        for file in files.drain(..remove) {
            tracing::info!("purging {}", file.path.display());
            match fs::remove_file(&file.path) {
                // A purge after a snapshot and the periodic one may overlap.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                result => result.map_err(|source| SnapshotError::Io {
                    path: file.path.clone(),
                    source,
                })?,
            }
        }
        Ok(files)
    }
}

fn decode(path: &Path, bytes: Vec<u8>) -> Result<LoadedSnapshot, SnapshotError> {
    let path = path.to_owned();
    let len = bytes.len();
    if len < FIXED_HEADER_LEN + TRAILER_LEN {
        return Err(SnapshotError::TooShort { path, len });
    }
    let crc_at = len - 4;
    if u32_at(&bytes, crc_at) != crc32c(&bytes[..crc_at]) {
        return Err(SnapshotError::Crc { path });
    }
    if bytes[0..8] != MAGIC {
        return Err(SnapshotError::Magic { path });
    }
    let version = u32_at(&bytes, 8);
    if version != VERSION {
        return Err(SnapshotError::Version { path, version });
    }
    let conf_len = u32_at(&bytes, 12) as usize;
    let payload_start = FIXED_HEADER_LEN + conf_len;
    let payload_len = u64_at(&bytes, len - TRAILER_LEN);
    if payload_start + TRAILER_LEN > len
        || (len - TRAILER_LEN - payload_start) as u64 != payload_len
    {
        return Err(SnapshotError::Length { path });
    }
    let conf_state =
        ConfState::parse_from_bytes(&bytes[FIXED_HEADER_LEN..payload_start]).map_err(|error| {
            SnapshotError::ConfState {
                path: path.clone(),
                error,
            }
        })?;
    let metadata = SnapshotMetadata {
        index: u64_at(&bytes, 16),
        term: u64_at(&bytes, 24),
        conf_state: Some(conf_state).into(),
        ..Default::default()
    };
    let payload = Bytes::from(bytes).slice(payload_start..len - TRAILER_LEN);
    Ok(LoadedSnapshot {
        metadata,
        payload,
        path,
    })
}

/// Passes writes through while keeping their CRC and count, and remembers a failure of
/// the writer underneath, to tell it from a failure of the payload's producer.
struct ChecksumWriter<W: Write> {
    inner: W,
    crc: u32,
    written: u64,
    disk_error: Option<io::Error>,
}

impl<W: Write> ChecksumWriter<W> {
    fn new(inner: W) -> Self {
        ChecksumWriter {
            inner,
            crc: 0,
            written: 0,
            disk_error: None,
        }
    }

    fn failed(&mut self, e: io::Error) -> io::Error {
        let returned = io::Error::new(e.kind(), e.to_string());
        self.disk_error = Some(e);
        returned
    }
}

impl<W: Write> Write for ChecksumWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.inner.write(buf) {
            Ok(n) => {
                self.crc = crc32c_append(self.crc, &buf[..n]);
                self.written += n as u64;
                Ok(n)
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.failed(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(index: u64, term: u64) -> SnapshotMetadata {
        SnapshotMetadata {
            index,
            term,
            conf_state: Some(ConfState::from((vec![1, 2, 3], vec![4]))).into(),
            ..Default::default()
        }
    }

    fn write(dir: &SnapshotDir, index: u64, payload: &[u8]) -> SnapshotFile {
        dir.create(&metadata(index, 2), |w| w.write_all(payload))
            .unwrap()
    }

    #[test]
    fn round_trip_and_naming() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        let file = write(&dir, 0x186a0, b"the tree and the sessions");
        assert_eq!(file.path, tmp.path().join("snapshot.00000000000186a0"));
        let loaded = dir.load(&file).unwrap();
        assert_eq!(loaded.metadata, metadata(0x186a0, 2));
        assert_eq!(&loaded.payload[..], b"the tree and the sessions");
        // Names sort by index.
        write(&dir, 0xff, b"older");
        write(&dir, 0x100, b"newer");
        let indexes: Vec<u64> = dir.list().unwrap().iter().map(|f| f.index).collect();
        assert_eq!(indexes, vec![0xff, 0x100, 0x186a0]);
    }

    #[test]
    fn a_payload_error_leaves_no_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        let err = dir
            .create(&metadata(5, 1), |w| {
                w.write_all(b"partial")?;
                Err(io::Error::other("the tree could not be serialized"))
            })
            .unwrap_err();
        assert!(
            matches!(err, SnapshotError::Payload { index: 5, .. }),
            "{err}"
        );
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        let file = write(&dir, 9, b"payload");
        let good = fs::read(&file.path).unwrap();
        for bit in 0..good.len() * 8 {
            let mut bad = good.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&file.path, bad).is_err(), "bit {bit}");
        }
        for len in 0..good.len() {
            assert!(
                decode(&file.path, good[..len].to_vec()).is_err(),
                "length {len}"
            );
        }
    }

    #[test]
    fn a_corrupt_newest_snapshot_falls_back_to_the_older_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        write(&dir, 10, b"older state");
        let newest = write(&dir, 20, b"newer state");
        let mut bytes = fs::read(&newest.path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        fs::write(&newest.path, bytes).unwrap();
        let found = dir.load_newest_valid().unwrap();
        let snapshot = found.snapshot.unwrap();
        assert_eq!(snapshot.metadata.index, 10);
        assert_eq!(&snapshot.payload[..], b"older state");
        assert_eq!(found.rejected.len(), 1);
        assert!(
            matches!(&found.rejected[0], SnapshotError::Crc { path } if *path == newest.path),
            "{:?}",
            found.rejected
        );
        // A snapshot whose contents claim another index than its name is rejected too.
        fs::copy(
            tmp.path().join(snapshot_name(10)),
            tmp.path().join(snapshot_name(30)),
        )
        .unwrap();
        let found = dir.load_newest_valid().unwrap();
        assert_eq!(found.snapshot.unwrap().metadata.index, 10);
        assert!(matches!(
            found.rejected[0],
            SnapshotError::Misnamed { index: 10, .. }
        ));
    }

    #[test]
    fn purge_keeps_the_newest_and_never_fewer_than_three() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        for index in 1..=6 {
            write(&dir, index * 100, b"x");
        }
        fs::write(tmp.path().join("myid"), b"1").unwrap();
        let kept = dir.purge(1).unwrap();
        let indexes: Vec<u64> = kept.iter().map(|f| f.index).collect();
        assert_eq!(indexes, vec![400, 500, 600]);
        assert_eq!(dir.list().unwrap(), kept);
        assert!(
            tmp.path().join("myid").exists(),
            "other files are left alone"
        );
        let kept = dir.purge(5).unwrap();
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn unfinished_snapshots_are_removed_on_open() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("snapshot.0000000000000007.tmp"), b"half").unwrap();
        let dir = SnapshotDir::open(tmp.path()).unwrap();
        assert!(dir.list().unwrap().is_empty());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
