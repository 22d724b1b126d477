//! kazoo's `LockingQueue`: entries are persistent sequential children
//! `<path>/entries/entry-<priority:03>-<sequence>`; a consumer takes an entry by
//! creating the ephemeral `<path>/taken/<entry name>` holding its id, works on it, then
//! consumes it (entry and lock deleted in one multi) or releases it (lock deleted, the
//! entry is back in the queue). A consumer whose session ends releases its entry with
//! it, so no entry is lost to a crashed consumer.

use std::time::Duration;

use bytes::Bytes;

use crate::recipes::{join, random_hex, spawn_cleanup, Cleanup};
use crate::{Client, CreateMode, Error, ErrorCode};

const ENTRIES: &str = "entries";
const TAKEN: &str = "taken";

/// A queue whose entries are locked while a consumer works on them (kazoo
/// `LockingQueue`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::LockingQueue;
/// let queue = LockingQueue::new(&client, "/jobs");
/// queue.put(b"resize image 7").await?;
/// let job = queue.get().await?;
/// println!("working on {:?}", job.value());
/// job.consume().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LockingQueue {
    client: Client,
    entries: String,
    taken: String,
    /// Written to the lock nodes this consumer creates (kazoo's `uuid4().hex`).
    id: String,
}

impl LockingQueue {
    /// The queue at `path`.
    pub fn new(client: &Client, path: &str) -> Self {
        LockingQueue {
            client: client.clone(),
            entries: join(path, ENTRIES),
            taken: join(path, TAKEN),
            id: random_hex(),
        }
    }

    /// Appends `value` with priority 100 (kazoo's default).
    pub async fn put(&self, value: &[u8]) -> Result<(), Error> {
        self.put_all(&[value], 100).await
    }

    /// Appends the values, all or none, in one multi; lower priorities (0–999) are
    /// taken first.
    pub async fn put_all(&self, values: &[&[u8]], priority: u16) -> Result<(), Error> {
        if priority > 999 {
            return Err(Error::BadArguments(format!(
                "priority {priority} is not between 0 and 999"
            )));
        }
        self.ensure_paths().await?;
        let prefix = join(&self.entries, &format!("entry-{priority:03}-"));
        let mut multi = self.client.transaction();
        for value in values {
            multi = multi.create(&prefix, value, CreateMode::PersistentSequential);
        }
        multi.commit().await.map(drop)
    }

    /// The number of entries, locked ones included.
    pub async fn len(&self) -> Result<usize, Error> {
        match self.client.exists(&self.entries).await? {
            Some(stat) => Ok(usize::try_from(stat.num_children).unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Whether there is no entry.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len().await? == 0)
    }

    /// Locks the first entry nobody holds, waiting for one.
    pub async fn get(&self) -> Result<LockedEntry, Error> {
        self.ensure_paths().await?;
        loop {
            let (entries, entries_changed) = self.client.get_children_w(&self.entries).await?;
            let (taken, taken_changed) = self.client.get_children_w(&self.taken).await?;
            let mut available: Vec<String> = entries
                .into_iter()
                .filter(|entry| !taken.contains(entry))
                .collect();
            available.sort();
            for name in available {
                if let Some(entry) = self.take(&name).await? {
                    return Ok(entry);
                }
            }
            tokio::select! {
                fired = entries_changed => { fired?; }
                fired = taken_changed => { fired?; }
            }
        }
    }

    /// Like [`get`](LockingQueue::get), giving up with `None` after `timeout`.
    pub async fn get_timeout(&self, timeout: Duration) -> Result<Option<LockedEntry>, Error> {
        match tokio::time::timeout(timeout, self.get()).await {
            Ok(entry) => entry.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Locks entry `name`; `None` if somebody else holds it or it was consumed.
    async fn take(&self, name: &str) -> Result<Option<LockedEntry>, Error> {
        let lock = join(&self.taken, name);
        match self
            .client
            .create(&lock, self.id.as_bytes(), CreateMode::Ephemeral)
            .await
        {
            Ok(_) => {}
            Err(Error::Keeper(ErrorCode::NodeExists)) => {
                // Ours, if an earlier create's reply was lost.
                match self.client.get_data(&lock).await {
                    Ok((holder, _)) if holder[..] == *self.id.as_bytes() => {}
                    Ok(_) | Err(Error::Keeper(ErrorCode::NoNode)) => return Ok(None),
                    Err(err) => return Err(err),
                }
            }
            Err(err) => return Err(err),
        }
        let mut entry = LockedEntry {
            client: self.client.clone(),
            entry: join(&self.entries, name),
            lock,
            id: self.id.clone(),
            value: Bytes::new(),
            done: false,
        };
        match self.client.get_data(&entry.entry).await {
            Ok((value, _)) => {
                entry.value = value;
                Ok(Some(entry))
            }
            // Consumed before we locked it: let the lock go (the drop deletes it).
            Err(Error::Keeper(ErrorCode::NoNode)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn ensure_paths(&self) -> Result<(), Error> {
        self.client.ensure_path(&self.entries).await?;
        self.client.ensure_path(&self.taken).await
    }
}

/// An entry locked by this consumer. [`consume`](LockedEntry::consume) removes it from
/// the queue; [`release`](LockedEntry::release), or dropping it, puts it back.
#[derive(Debug)]
#[must_use = "the entry goes back to the queue when dropped"]
pub struct LockedEntry {
    client: Client,
    entry: String,
    lock: String,
    id: String,
    value: Bytes,
    done: bool,
}

impl LockedEntry {
    /// The entry's value.
    pub fn value(&self) -> &Bytes {
        &self.value
    }

    /// Whether this consumer still holds the entry (its session may have ended, or the
    /// lock been deleted, since it was taken).
    pub async fn holds_lock(&self) -> Result<bool, Error> {
        self.client.sync(&self.lock).await?;
        match self.client.get_data(&self.lock).await {
            Ok((holder, _)) => Ok(holder[..] == *self.id.as_bytes()),
            Err(Error::Keeper(ErrorCode::NoNode)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Removes the entry from the queue, with its lock, in one multi; false if this
    /// consumer no longer held it (somebody else may have taken it since).
    pub async fn consume(mut self) -> Result<bool, Error> {
        if !self.holds_lock().await? {
            self.done = true;
            return Ok(false);
        }
        let removed = self
            .client
            .transaction()
            .delete(&self.entry, None)
            .delete(&self.lock, None)
            .commit()
            .await;
        match removed {
            Ok(_) => {
                self.done = true;
                Ok(true)
            }
            Err(Error::MultiFailed {
                code: ErrorCode::NoNode,
                ..
            }) => {
                self.done = true;
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// Puts the entry back in the queue; false if this consumer no longer held it.
    pub async fn release(mut self) -> Result<bool, Error> {
        self.done = true;
        if !self.holds_lock().await? {
            return Ok(false);
        }
        match self.client.delete(&self.lock, None).await {
            Ok(()) => Ok(true),
            Err(Error::Keeper(ErrorCode::NoNode)) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

impl Drop for LockedEntry {
    fn drop(&mut self) {
        if !self.done {
            spawn_cleanup(self.client.clone(), Cleanup::Node(self.lock.clone()));
        }
    }
}
