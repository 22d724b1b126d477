//! Votes and append acks may not leave before the fsync that covers them. The log
//! writer's thread sends them itself, right after it has made their `Ready` durable:
//! a follower's ack then leaves at once instead of after another trip through the
//! raft loop, which sits on every write's commit path.

use std::collections::VecDeque;

use parking_lot::Mutex;
use raft::prelude::Message;

use super::transport::Transport;

#[derive(Default)]
pub struct AfterFsync {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each `Ready`'s persisted messages, by `Ready` number, oldest first.
    waiting: VecDeque<(u64, Vec<Message>)>,
    /// None until the raft loop starts, and for a server with no peers.
    transport: Option<Transport>,
}

impl AfterFsync {
    /// Where released messages go.
    pub fn connect(&self, transport: Option<Transport>) {
        self.inner.lock().transport = transport;
    }

    /// Holds `Ready` `number`'s persisted messages; called before the `Ready` goes to
    /// the log writer, so its release cannot come first.
    pub fn hold(&self, number: u64, messages: Vec<Message>) {
        if !messages.is_empty() {
            self.inner.lock().waiting.push_back((number, messages));
        }
    }

    /// Every `Ready` up to `number` is durable: sends what they held.
    pub fn release(&self, number: u64) {
        let (released, transport) = {
            let mut inner = self.inner.lock();
            let mut released = Vec::new();
            while inner.waiting.front().is_some_and(|(n, _)| *n <= number) {
                if let Some((_, messages)) = inner.waiting.pop_front() {
                    released.extend(messages);
                }
            }
            (released, inner.transport.clone())
        };
        if let Some(transport) = transport {
            transport.send(released);
        }
    }

    #[cfg(test)]
    fn held(&self) -> Vec<u64> {
        self.inner.lock().waiting.iter().map(|(n, _)| *n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(to: u64) -> Vec<Message> {
        vec![Message {
            to,
            ..Default::default()
        }]
    }

    #[test]
    fn messages_wait_for_the_fsync_of_their_ready() {
        let after = AfterFsync::default();
        after.hold(3, ack(2));
        after.hold(4, Vec::new());
        after.hold(5, ack(3));
        after.release(2);
        assert_eq!(after.held(), [3, 5]);
        after.release(4);
        assert_eq!(after.held(), [5]);
        after.release(9);
        assert!(after.held().is_empty());
    }
}
