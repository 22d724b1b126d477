//! kazoo's `SetPartitioner`: members of a party divide a set of items among
//! themselves, each holding a lock per item it owns, and divide it again whenever the
//! party changes. Layout as kazoo's: the party is a shallow party at `<path>/party`,
//! the item locks are kazoo locks at `<path>/locks/<item>`, and the share is kazoo's
//! default: items and member identifiers sorted, member `i` of `n` takes items `i`,
//! `i + n`, `i + 2n`, ...
//!
//! Where kazoo has a state machine (allocating, acquired, release, failure), this has
//! a future and a guard: [`SetPartitioner::acquire`] waits for the party to settle and
//! takes this member's share; the [`Partition`] it returns says when the party changed
//! ([`Partition::changed`]), and is released before acquiring again.

use std::time::Duration;

use tokio::time::timeout;

use crate::recipes::join;
use crate::recipes::lock::{Lock, LockGuard};
use crate::recipes::party::ShallowParty;
use crate::watch::WatchFuture;
use crate::{Client, Error};

/// A member of a set partition (kazoo `SetPartitioner`).
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::SetPartitioner;
/// let shards: Vec<String> = (0..16).map(|i| format!("shard-{i}")).collect();
/// let partitioner = SetPartitioner::new(&client, "/partition/shards", shards, "worker-1");
/// loop {
///     let partition = partitioner.acquire().await?;
///     println!("mine: {:?}", partition.items());
///     partition.changed().await?; // a member joined or left
///     partition.release().await?;
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SetPartitioner {
    client: Client,
    path: String,
    items: Vec<String>,
    identifier: String,
    party: ShallowParty,
    /// How long the party must stay unchanged before it counts as settled (kazoo's
    /// `time_boundary`).
    settle: Duration,
    /// How long one lock is waited for before the party is looked at again (kazoo's
    /// `max_reaction_time`).
    reaction: Duration,
}

impl SetPartitioner {
    /// Member `identifier` (unique in the party, valid in a node name) of the partition
    /// of `items` at `path`. Every member must give the same items.
    pub fn new(client: &Client, path: &str, items: Vec<String>, identifier: &str) -> Self {
        SetPartitioner {
            client: client.clone(),
            path: path.to_owned(),
            items,
            identifier: identifier.to_owned(),
            party: ShallowParty::new(client, &join(path, "party"), identifier),
            settle: Duration::from_secs(30),
            reaction: Duration::from_secs(1),
        }
    }

    /// How long the party must stay unchanged before the set is divided (30 s by
    /// default, as kazoo's `time_boundary`).
    pub fn settle_time(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// Joins the party (if not yet a member), waits until it has been unchanged for the
    /// settle time, and takes the lock of every item of this member's share. If the
    /// party changes while the locks are taken, gives them back and starts over.
    pub async fn acquire(&self) -> Result<Partition, Error> {
        self.party.join().await?;
        let party_path = join(&self.path, "party");
        loop {
            let (members, mut changed) = self.settled(&party_path).await?;
            let share = share(&self.identifier, &members, &self.items);
            let mut guards = Vec::with_capacity(share.len());
            let mut moved = false;
            for item in &share {
                let lock = Lock::new(&self.client, &join(&join(&self.path, "locks"), item))
                    .identifier(&self.identifier);
                // A lock still held by a member that has not seen the change yet:
                // keep waiting, unless the party changed (then the share did too).
                let guard = loop {
                    match lock.acquire_timeout(self.reaction).await {
                        Ok(guard) => break Some(guard),
                        Err(Error::Timeout) => {
                            if fired(&mut changed).await? {
                                break None;
                            }
                        }
                        Err(err) => return Err(err),
                    }
                };
                match guard {
                    Some(guard) => guards.push(guard),
                    None => {
                        moved = true;
                        break;
                    }
                }
            }
            if moved || fired(&mut changed).await? {
                for guard in guards {
                    guard.release().await?;
                }
                continue;
            }
            return Ok(Partition {
                items: share,
                guards,
                changed: tokio::sync::Mutex::new(Some(changed)),
            });
        }
    }

    /// Joins the party without dividing yet (kazoo joins when the partitioner is made);
    /// [`acquire`](SetPartitioner::acquire) joins too.
    pub async fn join(&self) -> Result<(), Error> {
        self.party.join().await
    }

    /// Leaves the party (a held [`Partition`] should be released first).
    pub async fn leave(&self) -> Result<(), Error> {
        self.party.leave().await
    }

    /// The party's member identifiers once they stayed the same for the settle time,
    /// with a watch on the next change.
    async fn settled(&self, party_path: &str) -> Result<(Vec<String>, WatchFuture), Error> {
        loop {
            let (_, changed) = self.client.get_children_w(party_path).await?;
            let members = self.party.members().await?;
            match timeout(self.settle, changed).await {
                // Changed within the window: wait for it to settle again.
                Ok(fired) => {
                    fired?;
                }
                Err(_) => {
                    let (_, changed) = self.client.get_children_w(party_path).await?;
                    let now = self.party.members().await?;
                    if sorted(now.clone()) == sorted(members) {
                        return Ok((now, changed));
                    }
                }
            }
        }
    }
}

/// This member's share of the partition, held.
#[derive(Debug)]
#[must_use = "the item locks are released when dropped"]
pub struct Partition {
    items: Vec<String>,
    guards: Vec<LockGuard>,
    /// Fires when the party changes.
    changed: tokio::sync::Mutex<Option<WatchFuture>>,
}

impl Partition {
    /// The items this member holds, sorted.
    pub fn items(&self) -> &[String] {
        &self.items
    }

    /// Resolves when a member joined or left since the party settled (kazoo's
    /// `RELEASE` state): release this partition and acquire again. Fails when the
    /// session ends.
    pub async fn changed(&self) -> Result<(), Error> {
        let mut changed = self.changed.lock().await;
        match changed.as_mut() {
            Some(watch) => {
                let fired = watch.await;
                *changed = None;
                fired.map(drop)
            }
            // Fired before.
            None => Ok(()),
        }
    }

    /// Gives back every item's lock.
    pub async fn release(self) -> Result<(), Error> {
        let mut result = Ok(());
        for guard in self.guards {
            let released = guard.release().await;
            if result.is_ok() {
                result = released;
            }
        }
        result
    }
}

/// Whether the watch has fired, without waiting; a session error ends the attempt.
async fn fired(watch: &mut WatchFuture) -> Result<bool, Error> {
    match futures::FutureExt::now_or_never(&mut *watch) {
        Some(Ok(_)) => Ok(true),
        Some(Err(err)) => Err(err),
        None => Ok(false),
    }
}

/// kazoo's default partition function.
fn share(identifier: &str, members: &[String], items: &[String]) -> Vec<String> {
    let members = sorted(members.to_vec());
    let items = sorted(items.to_vec());
    let Some(i) = members.iter().position(|m| m == identifier) else {
        return Vec::new();
    };
    items.into_iter().skip(i).step_by(members.len()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_share_is_kazoos_every_nth_item() {
        let items = strings(&["e", "a", "d", "b", "c"]);
        let members = strings(&["w2", "w1"]);
        assert_eq!(share("w1", &members, &items), ["a", "c", "e"]);
        assert_eq!(share("w2", &members, &items), ["b", "d"]);
        assert!(share("w3", &members, &items).is_empty());
    }
}
