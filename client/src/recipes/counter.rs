//! A shared counter: read, add, and write back only if the node's version is still the
//! one read (compare-and-set), retrying when another writer came first.
//!
//! The value is stored as kazoo's `Counter` stores it (decimal text), or as Curator's
//! `SharedCount` does (a 4-byte big-endian integer) with [`Counter::curator`].

use crate::recipes::ensure_path;
use crate::{Client, Error, ErrorCode};

/// How the value is laid out in the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// kazoo: `repr(int)` as ASCII.
    Decimal,
    /// Curator `SharedCount` (kazoo's `support_curator`): a big-endian `i32`.
    BigEndianI32,
}

/// A counter on a path; an empty or missing node counts as 0.
#[derive(Debug, Clone)]
pub struct Counter {
    client: Client,
    path: String,
    encoding: Encoding,
}

impl Counter {
    /// A counter in kazoo's layout.
    pub fn new(client: &Client, path: &str) -> Self {
        Counter {
            client: client.clone(),
            path: path.to_owned(),
            encoding: Encoding::Decimal,
        }
    }

    /// A counter in Curator's `SharedCount` layout.
    pub fn curator(client: &Client, path: &str) -> Self {
        Counter {
            encoding: Encoding::BigEndianI32,
            ..Counter::new(client, path)
        }
    }

    /// The current value.
    pub async fn get(&self) -> Result<i64, Error> {
        ensure_path(&self.client, &self.path).await?;
        let (data, _) = self.client.get_data(&self.path).await?;
        self.decode(&data)
    }

    /// Adds `delta` atomically; returns the values before and after. A
    /// [`Error::ConnectionLoss`] leaves it unknown whether the add happened.
    pub async fn add(&self, delta: i64) -> Result<(i64, i64), Error> {
        ensure_path(&self.client, &self.path).await?;
        loop {
            let (data, stat) = self.client.get_data(&self.path).await?;
            let before = self.decode(&data)?;
            let after = before
                .checked_add(delta)
                .ok_or_else(|| Error::BadArguments("counter overflow".to_owned()))?;
            let encoded = self.encode(after)?;
            match self
                .client
                .set_data(&self.path, &encoded, Some(stat.version))
                .await
            {
                Ok(_) => return Ok((before, after)),
                // Someone else changed it since we read it: read again.
                Err(Error::Keeper(ErrorCode::BadVersion)) => {}
                // Including a connection loss: the write may have gone through, and
                // adding again could count twice.
                Err(err) => return Err(err),
            }
        }
    }

    fn decode(&self, data: &[u8]) -> Result<i64, Error> {
        if data.is_empty() {
            return Ok(0);
        }
        let bad = || Error::BadArguments(format!("counter {} holds no number", self.path));
        match self.encoding {
            Encoding::Decimal => std::str::from_utf8(data)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(bad),
            Encoding::BigEndianI32 => <[u8; 4]>::try_from(data)
                .map(|bytes| i64::from(i32::from_be_bytes(bytes)))
                .map_err(|_| bad()),
        }
    }

    fn encode(&self, value: i64) -> Result<Vec<u8>, Error> {
        match self.encoding {
            Encoding::Decimal => Ok(value.to_string().into_bytes()),
            Encoding::BigEndianI32 => i32::try_from(value)
                .map(|v| v.to_be_bytes().to_vec())
                .map_err(|_| Error::BadArguments(format!("{value} does not fit Curator's i32"))),
        }
    }
}
