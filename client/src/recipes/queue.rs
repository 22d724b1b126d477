//! A distributed priority queue in kazoo's `Queue` layout: entries are persistent
//! sequential children `<path>/entry-<priority:03>-<sequence>`; consumers take the
//! smallest name, so lower priorities first and FIFO within a priority. Deleting the
//! entry is what claims it: of two consumers that read the same entry, only the one
//! whose delete succeeds returns it.

use bytes::Bytes;

use crate::recipes::{ensure_path, join};
use crate::{Client, CreateMode, Error, ErrorCode};

const PREFIX: &str = "entry-";

/// A queue of byte strings on a path.
#[derive(Debug, Clone)]
pub struct Queue {
    client: Client,
    path: String,
}

impl Queue {
    /// A queue whose entries live under `path`.
    pub fn new(client: &Client, path: &str) -> Self {
        Queue {
            client: client.clone(),
            path: path.to_owned(),
        }
    }

    /// Appends `value` with priority 100 (kazoo's default).
    pub async fn put(&self, value: &[u8]) -> Result<(), Error> {
        self.put_with_priority(value, 100).await
    }

    /// Appends `value`; lower priorities (0–999) are taken first.
    pub async fn put_with_priority(&self, value: &[u8], priority: u16) -> Result<(), Error> {
        if priority > 999 {
            return Err(Error::BadArguments(format!(
                "priority {priority} is not between 0 and 999"
            )));
        }
        ensure_path(&self.client, &self.path).await?;
        let prefix = join(&self.path, &format!("{PREFIX}{priority:03}-"));
        self.client
            .create(&prefix, value, CreateMode::PersistentSequential)
            .await
            .map(drop)
    }

    /// Removes and returns the first entry, or `None` if the queue is empty.
    pub async fn get(&self) -> Result<Option<Bytes>, Error> {
        ensure_path(&self.client, &self.path).await?;
        let mut children = self.client.get_children(&self.path).await?;
        children.sort();
        self.claim_first(children).await
    }

    /// Removes and returns the first entry, waiting for one if the queue is empty.
    pub async fn take(&self) -> Result<Bytes, Error> {
        ensure_path(&self.client, &self.path).await?;
        loop {
            let (mut children, changed) = self.client.get_children_w(&self.path).await?;
            children.sort();
            if let Some(value) = self.claim_first(children).await? {
                return Ok(value);
            }
            changed.await?;
        }
    }

    /// The number of entries.
    pub async fn len(&self) -> Result<usize, Error> {
        match self.client.exists(&self.path).await? {
            Some(stat) => Ok(usize::try_from(stat.num_children).unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Whether there are no entries.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len().await? == 0)
    }

    /// Tries the entries in order until one is ours.
    async fn claim_first(&self, sorted: Vec<String>) -> Result<Option<Bytes>, Error> {
        for name in sorted.iter().filter(|name| name.starts_with(PREFIX)) {
            let node = join(&self.path, name);
            let data = match self.client.get_data(&node).await {
                Ok((data, _)) => data,
                Err(Error::Keeper(ErrorCode::NoNode)) => continue,
                Err(err) => return Err(err),
            };
            match self.client.delete(&node, None).await {
                Ok(()) => return Ok(Some(data)),
                Err(Error::Keeper(ErrorCode::NoNode)) => continue,
                Err(err) => return Err(err),
            }
        }
        Ok(None)
    }
}
