//! Raft's small durable state, in a sled database at `dataDir/meta`.
//!
//! # Keys and values
//! ```text
//! version      u32 big-endian: 1, the layout of this table
//! node_id      u64 big-endian: the server id (myid) this data dir belongs to
//! hard_state   raft HardState, protobuf: term, vote, commit
//! conf_state   raft ConfState, protobuf: voters and learners after the last applied
//!              conf change
//! snapshot     raft SnapshotMetadata, protobuf: index, term and conf state of the last
//!              snapshot written
//! rejoining    present while this server rejoins after losing its raft state and may
//!              not vote yet (`consensus::recovery`); removed once it caught up
//! ```
//! sled checksums and recovers its own files; their format is sled's.
//!
//! # Durability
//! Every setter returns only once sled has flushed (written and fsynced its log), and a
//! failed flush is fatal. The one exception is a hard state whose term and vote are
//! unchanged ([`Durability::Background`]): only its commit index moved, which raft
//! relearns from the leader, so sled's background flush (every [`FLUSH_EVERY_MS`]) is
//! enough and the group commit doesn't pay a second fsync.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use protobuf::Message;
use raft::prelude::{ConfState, HardState, SnapshotMetadata};

use crate::store::fatal;

/// The layout in the module documentation.
pub const VERSION: u32 = 1;
/// How often sled flushes on its own.
pub const FLUSH_EVERY_MS: u64 = 500;
/// How long [`Meta::open`] waits for sled's lock on the database.
const LOCK_WAIT: Duration = Duration::from_secs(5);

const KEY_VERSION: &str = "version";
const KEY_NODE_ID: &str = "node_id";
const KEY_HARD_STATE: &str = "hard_state";
const KEY_CONF_STATE: &str = "conf_state";
const KEY_SNAPSHOT: &str = "snapshot";
const KEY_REJOINING: &str = "rejoining";

/// When a hard state must be on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the call returns: a new term or vote. A vote forgotten in a crash would let
    /// this server vote twice in one term.
    Flushed,
    /// Within [`FLUSH_EVERY_MS`]: only the commit index changed.
    Background,
}

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("opening {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sled::Error,
    },
    #[error("reading {key} from the meta database: {source}")]
    Read {
        key: &'static str,
        #[source]
        source: sled::Error,
    },
    #[error("{key} in the meta database does not decode: {error}")]
    Decode {
        key: &'static str,
        error: protobuf::ProtobufError,
    },
    #[error("{key} in the meta database is {len} bytes, not {expected}")]
    Length {
        key: &'static str,
        len: usize,
        expected: usize,
    },
    #[error("the meta database has layout version {found}; this build reads {VERSION}")]
    Version { found: u32 },
    #[error("this data dir belongs to server {recorded}, not to server {configured}")]
    WrongNode { recorded: u64, configured: u64 },
}

/// The open database; clones share it.
#[derive(Clone)]
pub struct Meta {
    db: sled::Db,
}

impl Meta {
    pub fn open(path: &Path) -> Result<Meta, MetaError> {
        let config = sled::Config::new()
            .path(path)
            // A few small values: sled's 1 GiB default cache is for real databases.
            .cache_capacity(4 * 1024 * 1024)
            .flush_every_ms(Some(FLUSH_EVERY_MS));
        let started = Instant::now();
        let db = loop {
            match config.open() {
                Ok(db) => break db,
                // sled's background threads let go of its file lock a moment after the
                // last handle is dropped, so an in-process reopen (a restarted node in a
                // test) waits for it. Another process holding it fails after LOCK_WAIT.
                Err(sled::Error::Io(e))
                    if is_lock_conflict(&e) && started.elapsed() < LOCK_WAIT =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(source) => {
                    return Err(MetaError::Open {
                        path: path.to_owned(),
                        source,
                    })
                }
            }
        };
        let meta = Meta { db };
        match meta.get(KEY_VERSION)? {
            None => meta.put(KEY_VERSION, &VERSION.to_be_bytes()),
            Some(bytes) => {
                let found = u32::from_be_bytes(fixed(KEY_VERSION, &bytes)?);
                if found != VERSION {
                    return Err(MetaError::Version { found });
                }
            }
        }
        Ok(meta)
    }

    /// Records `configured` as this data dir's server id, or checks it against the one
    /// recorded: a data dir copied to another server must not vote as that server.
    pub fn check_node_id(&self, configured: u64) -> Result<(), MetaError> {
        match self.get_u64(KEY_NODE_ID)? {
            Some(recorded) if recorded != configured => Err(MetaError::WrongNode {
                recorded,
                configured,
            }),
            Some(_) => Ok(()),
            None => {
                self.put(KEY_NODE_ID, &configured.to_be_bytes());
                Ok(())
            }
        }
    }

    #[cfg(test)]
    pub fn node_id(&self) -> Result<Option<u64>, MetaError> {
        self.get_u64(KEY_NODE_ID)
    }

    pub fn hard_state(&self) -> Result<Option<HardState>, MetaError> {
        self.get_message(KEY_HARD_STATE)
    }

    pub fn set_hard_state(&self, hard_state: &HardState, durability: Durability) {
        let bytes = encode(KEY_HARD_STATE, hard_state);
        match durability {
            Durability::Flushed => self.put(KEY_HARD_STATE, &bytes),
            Durability::Background => self.insert(KEY_HARD_STATE, &bytes),
        }
    }

    pub fn conf_state(&self) -> Result<Option<ConfState>, MetaError> {
        self.get_message(KEY_CONF_STATE)
    }

    pub fn set_conf_state(&self, conf_state: &ConfState) {
        self.put(KEY_CONF_STATE, &encode(KEY_CONF_STATE, conf_state));
    }

    /// The metadata of the last snapshot written or installed.
    pub fn snapshot(&self) -> Result<Option<SnapshotMetadata>, MetaError> {
        self.get_message(KEY_SNAPSHOT)
    }

    pub fn set_snapshot(&self, metadata: &SnapshotMetadata) {
        self.put(KEY_SNAPSHOT, &encode(KEY_SNAPSHOT, metadata));
    }

    /// Whether this server is rejoining after a loss of raft state (it must not vote).
    pub fn rejoining(&self) -> Result<bool, MetaError> {
        Ok(self.get(KEY_REJOINING)?.is_some())
    }

    /// Records (flushed) whether this server is rejoining: it must survive a crash, or a
    /// server that crashed again before it caught up would vote as if it never lost
    /// anything.
    pub fn set_rejoining(&self, rejoining: bool) {
        if rejoining {
            self.put(KEY_REJOINING, &[1]);
        } else {
            if let Err(e) = self.db.remove(KEY_REJOINING) {
                fatal(
                    format_args!("removing {KEY_REJOINING} from the meta database"),
                    &e,
                );
            }
            if let Err(e) = self.db.flush() {
                fatal(format_args!("flushing the meta database"), &e);
            }
        }
    }

    fn get(&self, key: &'static str) -> Result<Option<sled::IVec>, MetaError> {
        self.db
            .get(key)
            .map_err(|source| MetaError::Read { key, source })
    }

    fn get_u64(&self, key: &'static str) -> Result<Option<u64>, MetaError> {
        match self.get(key)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(u64::from_be_bytes(fixed(key, &bytes)?))),
        }
    }

    fn get_message<M: Message>(&self, key: &'static str) -> Result<Option<M>, MetaError> {
        match self.get(key)? {
            None => Ok(None),
            Some(bytes) => M::parse_from_bytes(&bytes)
                .map(Some)
                .map_err(|error| MetaError::Decode { key, error }),
        }
    }

    fn insert(&self, key: &'static str, value: &[u8]) {
        if let Err(e) = self.db.insert(key, value) {
            fatal(format_args!("writing {key} to the meta database"), &e);
        }
    }

    /// Inserts and flushes.
    fn put(&self, key: &'static str, value: &[u8]) {
        self.insert(key, value);
        if let Err(e) = self.db.flush() {
            fatal(format_args!("flushing {key} to the meta database"), &e);
        }
    }
}

/// sled reports a held lock as an `Other` I/O error with this text (sled 0.34).
fn is_lock_conflict(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Other && e.to_string().contains("could not acquire lock")
}

fn encode(key: &'static str, message: &impl Message) -> Vec<u8> {
    match message.write_to_bytes() {
        Ok(bytes) => bytes,
        // Raft's messages have no required fields, so this can't fail.
        Err(e) => fatal(format_args!("encoding {key}"), &e),
    }
}

fn fixed<const N: usize>(key: &'static str, bytes: &[u8]) -> Result<[u8; N], MetaError> {
    bytes.try_into().map_err(|_| MetaError::Length {
        key,
        len: bytes.len(),
        expected: N,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_a_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("meta");
        let hs = HardState {
            term: 7,
            vote: 2,
            commit: 40,
            ..Default::default()
        };
        let cs = ConfState::from((vec![1, 2, 3], vec![]));
        let snap = SnapshotMetadata {
            index: 30,
            term: 6,
            conf_state: Some(cs.clone()).into(),
            ..Default::default()
        };
        {
            let meta = Meta::open(&path).unwrap();
            assert_eq!(meta.hard_state().unwrap(), None);
            meta.check_node_id(2).unwrap();
            meta.set_hard_state(&hs, Durability::Flushed);
            meta.set_conf_state(&cs);
            meta.set_snapshot(&snap);
        }
        let meta = Meta::open(&path).unwrap();
        assert_eq!(meta.hard_state().unwrap(), Some(hs));
        assert_eq!(meta.conf_state().unwrap(), Some(cs));
        assert_eq!(meta.snapshot().unwrap(), Some(snap));
        assert_eq!(meta.node_id().unwrap(), Some(2));
    }

    #[test]
    fn a_data_dir_refuses_another_server_id() {
        let tmp = tempfile::tempdir().unwrap();
        let meta = Meta::open(&tmp.path().join("meta")).unwrap();
        meta.check_node_id(1).unwrap();
        meta.check_node_id(1).unwrap();
        assert!(matches!(
            meta.check_node_id(3),
            Err(MetaError::WrongNode {
                recorded: 1,
                configured: 3
            })
        ));
    }
}
