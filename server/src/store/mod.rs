//! Durable storage: everything a server needs to come back after a crash or restart.
//!
//! # Layout, named like the directories they own
//! - [`dirs`]: `dataDir` and `dataLogDir` checked and created, and `dataDir` locked to
//!   one process (`paddock.lock`).
//! - [`txnlog`]: the raft log in `dataLogDir`: `log.<first index>` segments written by one
//!   group-commit thread, so one fsync covers many raft `Ready`s.
//! - [`snapshot`]: state-machine snapshots in `dataDir`: `snapshot.<applied index>`.
//! - [`meta`]: raft's small durable state (hard state, conf state, the last snapshot's
//!   metadata, node and cluster ids) in a sled database at `dataDir/meta`.
//! - [`storage`]: [`DurableStorage`], the `raft::Storage` the raft loop reads, composed of
//!   the three above with an in-memory cache of the un-compacted log.
//!
//! # Failure policy
//! A failed write or fsync is fatal: `fatal` logs it and exits, and nothing retries it.
//! After a failed fsync the kernel may already have dropped the dirty pages and marked them
//! clean, so a retry that succeeds can report data durable that never reached the disk
//! (PostgreSQL's "fsyncgate", 2018). A restart recovers from what is really on disk.
//! Corrupt input found while reading is an error value naming the file and offset.

pub mod dirs;
pub mod meta;
pub mod snapshot;
pub mod storage;
pub mod txnlog;

pub use storage::{DurableStorage, Opened, RaftStateOnDisk, StoreConfig, StoreError};

/// Ends the process after a failed write, fsync, rename or delete that may have left the
/// disk in a state this process no longer knows.
pub(crate) use crate::fatal::fatal;

/// The common CRC of every store file: CRC-32C (Castagnoli), which has hardware support
/// on x86-64 (SSE 4.2) and aarch64.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Continues a CRC-32C over more bytes.
pub(crate) fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, bytes)
}

/// The index in a file name `<prefix><16 lower-case hex digits>` (how the log segments
/// and snapshots are named, so that names sort by index); `None` for any other name.
pub(crate) fn parse_hex_name(name: &str, prefix: &str) -> Option<u64> {
    let hex = name.strip_prefix(prefix)?;
    if hex.len() != 16
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The little-endian u32 at `at`; callers have checked the length.
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// The little-endian u64 at `at`; callers have checked the length.
pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}
