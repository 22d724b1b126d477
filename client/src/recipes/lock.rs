//! Locks in kazoo's layout (`kazoo/recipe/lock.py`): each contender creates an
//! ephemeral sequential child `<path>/<32 hex digits><name><10-digit sequence>` where the
//! name is `__lock__` (exclusive and write locks) or `__rlock__` (read locks). A
//! contender holds the lock when no child with a smaller sequence carries one of the
//! names that exclude it; otherwise it watches only the nearest such child (its
//! predecessor), so a release wakes one waiter, never the herd.
//!
//! The random prefix lets a contender whose create lost its reply find its node again
//! (Curator's trick, which kazoo borrows), and lets an abandoned acquire clean up.

use std::time::Duration;

use paddock_wire::path::basename;
use tokio::time::{timeout_at, Instant};

use crate::client::validate;
use crate::recipes::{ensure_path, join, random_hex, spawn_cleanup, Abandon, Cleanup};
use crate::{Client, CreateMode, Error, ErrorCode, EventType};

/// Which contenders a lock node competes with (kazoo's `_NODE_NAME`, `_EXCLUDE_NAMES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockKind {
    /// `Lock`: `__lock__`, excluded by `__lock__`.
    Exclusive,
    /// `ReadLock`: `__rlock__`, excluded by writers only.
    Read,
    /// `WriteLock`: `__lock__`, excluded by readers and writers.
    Write,
}

impl LockKind {
    fn node_name(self) -> &'static str {
        match self {
            LockKind::Exclusive | LockKind::Write => "__lock__",
            LockKind::Read => "__rlock__",
        }
    }

    fn excluded_by(self) -> &'static [&'static str] {
        match self {
            LockKind::Exclusive | LockKind::Read => &["__lock__"],
            LockKind::Write => &["__lock__", "__rlock__"],
        }
    }
}

/// A distributed lock on a path, interoperable with kazoo's `Lock` (and, through
/// [`ReadWriteLock`](crate::recipes::ReadWriteLock), with `ReadLock`/`WriteLock`).
///
/// A `Lock` is a recipe, not a held lock: every [`acquire`](Lock::acquire) contends
/// anew and returns a [`LockGuard`]. It is not re-entrant.
///
/// ```no_run
/// # async fn demo(client: paddock_client::Client) -> Result<(), paddock_client::Error> {
/// use paddock_client::recipes::Lock;
/// let lock = Lock::new(&client, "/locks/report").identifier("worker-7");
/// let guard = lock.acquire().await?;
/// // Pass guard.fencing_token() to the resource, which refuses older tokens.
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    client: Client,
    path: String,
    kind: LockKind,
    /// Written to the node, so that [`contenders`](Lock::contenders) can say who waits.
    identifier: Vec<u8>,
    /// More names that exclude this contender (kazoo's `extra_lock_patterns`), to share
    /// a path with other implementations' node names.
    extra_patterns: Vec<String>,
}

impl Lock {
    /// An exclusive lock on `path` (kazoo `Lock`).
    pub fn new(client: &Client, path: &str) -> Self {
        Lock::with_kind(client, path, LockKind::Exclusive)
    }

    pub(crate) fn with_kind(client: &Client, path: &str, kind: LockKind) -> Self {
        Lock {
            client: client.clone(),
            path: path.to_owned(),
            kind,
            identifier: Vec::new(),
            extra_patterns: Vec::new(),
        }
    }

    /// Names this contender in its node's data.
    pub fn identifier(mut self, identifier: &str) -> Self {
        self.identifier = identifier.as_bytes().to_vec();
        self
    }

    /// Also treats children whose names carry `pattern` before their sequence number
    /// as contenders (kazoo's `extra_lock_patterns`).
    pub fn extra_pattern(mut self, pattern: &str) -> Self {
        self.extra_patterns.push(pattern.to_owned());
        self
    }

    /// The lock's path, under which contenders queue.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits until the lock is held.
    ///
    /// Cancellation-safe: dropping the future before it completes removes this
    /// contender's node (in a spawned task), so nobody waits behind a ghost.
    pub async fn acquire(&self) -> Result<LockGuard, Error> {
        match self.run(None, true).await? {
            Some(guard) => Ok(guard),
            None => Err(Error::Timeout),
        }
    }

    /// Like [`acquire`](Lock::acquire), but gives up with [`Error::Timeout`] after
    /// `timeout`, having removed its node.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard, Error> {
        match self.run(Some(Instant::now() + timeout), true).await? {
            Some(guard) => Ok(guard),
            None => Err(Error::Timeout),
        }
    }

    /// Takes the lock only if nobody holds or waits for it ahead of us.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>, Error> {
        self.run(None, false).await
    }

    /// The identifiers of every contender, holder first (kazoo's `contenders()`).
    pub async fn contenders(&self) -> Result<Vec<String>, Error> {
        ensure_path(&self.client, &self.path).await?;
        let mut patterns = self.patterns();
        patterns.push(self.kind.node_name().to_owned());
        let children = self.client.get_children(&self.path).await?;
        let mut ranked: Vec<(&str, &String)> = children
            .iter()
            .filter_map(|child| contender_sequence(child, &patterns).map(|seq| (seq, child)))
            .collect();
        ranked.sort();
        let mut contenders = Vec::new();
        for (_, child) in ranked {
            match self.client.get_data(&join(&self.path, child)).await {
                Ok((data, _)) => contenders.push(String::from_utf8_lossy(&data).into_owned()),
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(contenders)
    }

    fn patterns(&self) -> Vec<String> {
        self.kind
            .excluded_by()
            .iter()
            .map(|name| (*name).to_owned())
            .chain(self.extra_patterns.iter().cloned())
            .collect()
    }

    /// Contends once; `None` if not acquired (not blocking, or past the deadline).
    async fn run(
        &self,
        deadline: Option<Instant>,
        blocking: bool,
    ) -> Result<Option<LockGuard>, Error> {
        validate(&self.path, false)?;
        let prefix = format!("{}{}", random_hex(), self.kind.node_name());
        // Until disarmed, dropping this removes our node: that is what makes the
        // acquire future cancellation-safe.
        let mut abandon = Abandon::new(
            &self.client,
            Cleanup::Prefixed {
                parent: self.path.clone(),
                prefix: prefix.clone(),
            },
        );
        let contend = self.contend(&prefix, blocking, &mut abandon);
        let outcome = match deadline {
            Some(deadline) => timeout_at(deadline, contend)
                .await
                .unwrap_or(Ok(Contended::NotAcquired)),
            None => contend.await,
        };
        match outcome {
            Ok(Contended::Acquired(guard)) => {
                abandon.disarm();
                Ok(Some(guard))
            }
            Ok(Contended::NotAcquired) => {
                abandon.run_now().await;
                Ok(None)
            }
            Err(err) => {
                abandon.run_now().await;
                Err(err)
            }
        }
    }

    async fn contend(
        &self,
        prefix: &str,
        blocking: bool,
        abandon: &mut Abandon,
    ) -> Result<Contended, Error> {
        ensure_path(&self.client, &self.path).await?;
        let create_path = join(&self.path, prefix);
        let patterns = self.patterns();
        let mut node: Option<(String, i64)> = None;
        let mut wakeups = 0;
        loop {
            let (name, token) = match node.clone() {
                Some(known) => known,
                None => {
                    let Some(created) = self.create_node(&create_path, prefix).await? else {
                        continue;
                    };
                    abandon.set(Cleanup::Node(join(&self.path, &created.0)));
                    node = Some(created.clone());
                    created
                }
            };
            let children = match self.client.get_children(&self.path).await {
                Ok(children) => children,
                Err(err) if err.is_retryable() => continue,
                Err(err) => return Err(err),
            };
            if !children.contains(&name) {
                // Our node is gone (deleted by hand, or a session hiccup): start over,
                // as kazoo does.
                node = None;
                continue;
            }
            let our_sequence = &name[prefix.len()..];
            let Some(predecessor) = predecessor(&children, our_sequence, &patterns) else {
                return Ok(Contended::Acquired(LockGuard {
                    client: self.client.clone(),
                    node: join(&self.path, &name),
                    fencing_token: token,
                    wakeups,
                    released: false,
                }));
            };
            if !blocking {
                return Ok(Contended::NotAcquired);
            }
            match self.client.get_data_w(&join(&self.path, predecessor)).await {
                Ok((_, _, watch)) => {
                    let event = watch.await?;
                    if event.event_type == EventType::NodeDeleted {
                        wakeups += 1;
                    }
                }
                // Gone before we could watch it: look again.
                Err(Error::Keeper(ErrorCode::NoNode)) => {}
                Err(err) if err.is_retryable() => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Creates our node; after a lost reply, finds it by its prefix instead. Returns its
    /// name and czxid, or `None` to try again.
    async fn create_node(
        &self,
        create_path: &str,
        prefix: &str,
    ) -> Result<Option<(String, i64)>, Error> {
        match self
            .client
            .create2(
                create_path,
                &self.identifier,
                CreateMode::EphemeralSequential,
            )
            .await
        {
            Ok((path, stat)) => Ok(Some((basename(&path).to_owned(), stat.czxid))),
            Err(err) if err.is_retryable() => {
                let children = match self.client.get_children(&self.path).await {
                    Ok(children) => children,
                    Err(err) if err.is_retryable() => return Ok(None),
                    Err(err) => return Err(err),
                };
                let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) else {
                    return Ok(None);
                };
                match self.client.exists(&join(&self.path, &name)).await {
                    Ok(Some(stat)) => Ok(Some((name, stat.czxid))),
                    Ok(None) => Ok(None),
                    Err(err) if err.is_retryable() => Ok(None),
                    Err(err) => Err(err),
                }
            }
            Err(err) => Err(err),
        }
    }
}

enum Contended {
    Acquired(LockGuard),
    NotAcquired,
}

/// A held lock. Release it with [`release`](LockGuard::release); dropping it releases it
/// too, in a spawned task.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard {
    client: Client,
    node: String,
    fencing_token: i64,
    wakeups: u32,
    released: bool,
}

impl LockGuard {
    /// The czxid of the lock node: it grows with every grant of the lock, so a resource
    /// that remembers the largest token it has seen can refuse a holder that lost the
    /// lock (its session expired) without knowing it yet.
    pub fn fencing_token(&self) -> i64 {
        self.fencing_token
    }

    /// The lock node's path.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// How many times this acquisition was woken by its predecessor's node going away
    /// before it won: at most one per contender ahead of it, never a herd.
    pub fn wakeups(&self) -> u32 {
        self.wakeups
    }

    /// Waits until the lock is lost without being released: the session ended (the
    /// error says how) or the node was deleted (`NoNode`). A mere disconnect is not a
    /// loss, though until the reconnect the holder cannot be sure; watch
    /// [`Client::state_watcher`] for `Disconnected` to be cautious.
    pub async fn lost(&self) -> Error {
        until_gone(&self.client, &self.node).await
    }

    /// Releases the lock by deleting its node.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        crate::recipes::delete_if_exists(&self.client, &self.node).await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            spawn_cleanup(self.client.clone(), Cleanup::Node(self.node.clone()));
        }
    }
}

/// Waits until `node` is deleted or the session ends, and says which.
pub(crate) async fn until_gone(client: &Client, node: &str) -> Error {
    loop {
        let watch = match client.exists_w(node).await {
            Ok((None, _)) => return Error::Keeper(ErrorCode::NoNode),
            Ok((Some(_), watch)) => watch,
            // The request waits for the reconnect when sent again.
            Err(err) if err.is_retryable() => continue,
            Err(err) => return err,
        };
        match watch.await {
            Ok(event) if event.event_type == EventType::NodeDeleted => {
                return Error::Keeper(ErrorCode::NoNode)
            }
            Ok(_) => {}
            Err(err) => return err,
        }
    }
}

/// The sequence of a contender's node name, as kazoo's `(?:names)(-?\d{10})$` finds it:
/// one of `patterns`, then an optional minus and ten digits ending the name.
pub(crate) fn contender_sequence<'a>(name: &'a str, patterns: &[String]) -> Option<&'a str> {
    let digits = name.len().checked_sub(10)?;
    if !name.is_char_boundary(digits) || !name[digits..].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let head = &name[..digits];
    // The leftmost match wins, so a '-' belongs to the sequence when a pattern ends
    // right before it.
    if let Some(before_minus) = head.strip_suffix('-') {
        if patterns.iter().any(|p| before_minus.ends_with(p.as_str())) {
            return Some(&name[digits - 1..]);
        }
    }
    patterns
        .iter()
        .any(|p| head.ends_with(p.as_str()))
        .then_some(&name[digits..])
}

/// The contender just ahead of `our_sequence`: the largest sequence below it, compared
/// as strings as kazoo compares them.
pub(crate) fn predecessor<'a>(
    children: &'a [String],
    our_sequence: &str,
    patterns: &[String],
) -> Option<&'a str> {
    children
        .iter()
        .filter_map(|child| contender_sequence(child, patterns).map(|seq| (seq, child)))
        .filter(|(seq, _)| *seq < our_sequence)
        .max()
        .map(|(_, child)| child.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(patterns: &[&str]) -> Vec<String> {
        patterns.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn sequences_are_found_as_kazoo_finds_them() {
        let lock = names(&["__lock__"]);
        assert_eq!(
            contender_sequence("abc__lock__0000000012", &lock),
            Some("0000000012")
        );
        assert_eq!(
            contender_sequence("abc__lock__-0000000012", &lock),
            Some("-0000000012")
        );
        assert_eq!(contender_sequence("abc__rlock__0000000012", &lock), None);
        assert_eq!(contender_sequence("abc__lock__000000012", &lock), None);
        assert_eq!(contender_sequence("__lock__", &lock), None);
        let curator = names(&["-lock-"]);
        assert_eq!(
            contender_sequence("_c_0f-lock-0000000003", &curator),
            Some("0000000003")
        );
    }

    #[test]
    fn each_contender_waits_for_its_nearest_excluder() {
        let children: Vec<String> = [
            "a__lock__0000000001",
            "b__rlock__0000000002",
            "c__rlock__0000000003",
            "d__lock__0000000004",
            "e__rlock__0000000005",
            "unrelated",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let writer = names(LockKind::Write.excluded_by());
        let reader = names(LockKind::Read.excluded_by());
        assert_eq!(predecessor(&children, "0000000001", &writer), None);
        assert_eq!(
            predecessor(&children, "0000000004", &writer),
            Some("c__rlock__0000000003")
        );
        // Readers wait only for writers: both early readers wait for the first writer.
        assert_eq!(
            predecessor(&children, "0000000002", &reader),
            Some("a__lock__0000000001")
        );
        assert_eq!(
            predecessor(&children, "0000000003", &reader),
            Some("a__lock__0000000001")
        );
        assert_eq!(
            predecessor(&children, "0000000005", &reader),
            Some("d__lock__0000000004")
        );
    }
}
