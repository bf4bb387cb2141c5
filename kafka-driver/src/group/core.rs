//! [`GroupCore`]: the driver side of one group consumer: a [`ConsumerCore`] over the
//! core's [`GroupConsumer`] (records, controls, positions, close) plus the group's
//! events, the application's polls and commits.

use std::collections::HashMap;
use std::time::Instant;

use kafka_core::client::{Client, OpRef};
use kafka_core::consumer::ConsumerMetrics;
use kafka_core::group::{
    CommitError, CommitId, GroupConsumer, GroupEvent, GroupMetadata, TopicPartition, TopicPattern,
};

use super::{GroupMailbox, Offsets, Rebalance};
use crate::chan::Sender;
use crate::consumer::{CloseAnswer, ConsumerCore, ConsumerKey, ConsumerSide, Control};

/// The driver side of one group consumer (kept by the [`Hub`](crate::Hub)).
pub struct GroupCore {
    inner: ConsumerCore<GroupConsumer>,
    /// Who waits for which commit.
    waiters: HashMap<CommitId, Sender<Result<(), CommitError>>>,
    /// Events published to the mailbox so far.
    published: u64,
    /// `published` right after the latest `Revoked`: an `Ack` must cover it to end the
    /// revocation.
    revoked_at: u64,
}

impl GroupCore {
    /// Starts `group` in `core` (with positions reported by the application) for the
    /// application side `mailbox`.
    pub fn start(
        core: &mut Client,
        now: Instant,
        mut group: GroupConsumer,
        mailbox: &GroupMailbox,
    ) -> Self {
        group.use_reported_positions();
        GroupCore {
            inner: ConsumerCore::start(core, now, group, mailbox.mailbox()),
            waiters: HashMap::new(),
            published: 0,
            revoked_at: 0,
        }
    }

    /// The partitions owned now.
    pub fn assignment(&mut self, core: &mut Client, now: Instant) -> Vec<TopicPartition> {
        core.command(now, self.inner.id(), |g, _| g.assignment())
            .unwrap_or_default()
    }

    /// What the application gives up at close, for its listener (see
    /// `GroupConsumer::release_on_close`); `None` when it owns nothing or is closed.
    pub fn release_on_close(&mut self, core: &mut Client, now: Instant) -> Option<Rebalance> {
        let event = core.command(now, self.inner.id(), |g, _| g.release_on_close());
        match event.flatten()? {
            GroupEvent::Revoked(p) => Some(Rebalance::Revoked(p)),
            GroupEvent::Lost(p) => Some(Rebalance::Lost(p)),
            _ => None,
        }
    }

    /// The member's group identity and the positions the application has taken: what a
    /// consume-transform-produce loop sends into its transaction. `None` once closed.
    pub fn transaction_offsets(
        &mut self,
        core: &mut Client,
        now: Instant,
    ) -> Option<(GroupMetadata, Vec<kafka_core::producer::TxnOffset>)> {
        let taken = self.with_queue(|g| g.taken());
        core.command(now, self.inner.id(), |g, _| {
            g.set_consumed(taken);
            (g.group_metadata(), g.transaction_offsets())
        })
    }

    /// Subscribes to exactly `topics`.
    pub(crate) fn subscribe(&mut self, core: &mut Client, now: Instant, topics: &[String]) {
        core.command(now, self.inner.id(), |g, cx| {
            g.subscribe(cx, topics.iter().map(String::as_str));
        });
        self.pump(core, now);
    }

    /// Subscribes to `pattern` (checked by the application side for this protocol; a
    /// refusal all the same fails the consumer, as a member failure would).
    pub(crate) fn subscribe_pattern(
        &mut self,
        core: &mut Client,
        now: Instant,
        pattern: TopicPattern,
    ) {
        let refused = core
            .command(now, self.inner.id(), |g, cx| {
                g.subscribe_pattern(cx, pattern)
            })
            .and_then(Result::err);
        if let Some(e) = refused {
            self.with_queue(|g| g.failed = Some(e));
            let shared = self.inner.shared();
            shared.wake_takers(shared.lock());
        }
        self.pump(core, now);
    }

    /// A commit of the application; `tx` gets its result.
    pub(crate) fn commit(
        &mut self,
        core: &mut Client,
        now: Instant,
        offsets: Offsets,
        tx: Sender<Result<(), CommitError>>,
    ) {
        let taken = self.with_queue(|g| g.taken());
        let id = core.command(now, self.inner.id(), |g, cx| match offsets {
            Offsets::Consumed => {
                g.set_consumed(taken);
                g.commit_consumed(cx)
            }
            Offsets::These(offsets) => g.commit(cx, offsets),
        });
        match id {
            Some(id) => {
                self.waiters.insert(id, tx);
            }
            None => {
                let _ = tx.push(Err(CommitError::Closed));
            }
        }
        self.pump(core, now);
    }

    /// The application polled (a sign of life; a due auto-commit of what it had taken
    /// before its latest take).
    pub(crate) fn touch(&mut self, core: &mut Client, now: Instant) {
        let acked = self.with_queue(|g| {
            g.touch_pending = false;
            g.acked()
        });
        core.command(now, self.inner.id(), |g, cx| {
            g.set_consumed(acked);
            g.touch(cx);
        });
        self.pump(core, now);
    }

    /// The application's listener handled the first `seen` events: a pending revocation
    /// they cover ends (its commit uses every take).
    pub(crate) fn ack(&mut self, core: &mut Client, now: Instant, seen: u64) {
        let taken = self.with_queue(|g| g.taken());
        let ends = seen >= self.revoked_at;
        core.command(now, self.inner.id(), |g, cx| {
            g.set_consumed(taken);
            if ends {
                g.handle_poll(cx);
            } else {
                g.touch(cx);
            }
        });
        self.pump(core, now);
    }

    /// Moves the core's events into the mailbox (and commit results to their waiters).
    fn take_events(&mut self, core: &mut Client, now: Instant) {
        let mut events = Vec::new();
        core.command(now, self.inner.id(), |g, _| {
            while let Some(e) = g.take_event() {
                events.push(e);
            }
        });
        let mut wake = false;
        for e in events {
            let (event, drop) = match e {
                GroupEvent::Committed { id, result } => {
                    match self.waiters.remove(&id) {
                        Some(tx) => {
                            let _ = tx.push(result);
                        }
                        None => log_auto_commit(&result),
                    }
                    continue;
                }
                GroupEvent::Failed(e) => {
                    self.with_queue(|g| g.failed = Some(e));
                    wake = true;
                    continue;
                }
                GroupEvent::Assigned(p) => {
                    self.with_queue(|g| g.forget(&p));
                    (Rebalance::Assigned(p), false)
                }
                GroupEvent::Revoked(p) => (Rebalance::Revoked(p), true),
                GroupEvent::Lost(p) => {
                    self.with_queue(|g| g.forget(&p));
                    (Rebalance::Lost(p), true)
                }
                _ => continue,
            };
            if drop {
                self.inner.drop_partitions(event.partitions());
            }
            self.published += 1;
            if matches!(event, Rebalance::Revoked(_)) {
                self.revoked_at = self.published;
            }
            self.with_queue(|g| g.events.push_back(event));
            wake = true;
        }
        if wake {
            let shared = self.inner.shared();
            shared.wake_takers(shared.lock());
        }
    }

    fn with_queue<T>(&self, f: impl FnOnce(&mut super::GroupQueue) -> T) -> T {
        let mut queue = self.inner.shared().lock();
        let g = queue.group.get_or_insert_with(Default::default);
        f(g)
    }
}

impl ConsumerSide for GroupCore {
    fn key(&self) -> ConsumerKey {
        self.inner.key()
    }
    fn is(&self, op: OpRef) -> bool {
        self.inner.is(op)
    }
    fn finished_metrics(&self) -> Option<ConsumerMetrics> {
        self.inner.finished_metrics()
    }
    fn pump(&mut self, core: &mut Client, now: Instant) {
        self.take_events(core, now);
        self.inner.pump(core, now);
    }
    fn finish(&mut self, core: &mut Client) {
        self.inner.finish(core);
        for (_, tx) in self.waiters.drain() {
            let _ = tx.push(Err(CommitError::Closed));
        }
    }
    fn control(&mut self, core: &mut Client, now: Instant, control: Control) {
        self.inner.control(core, now, control);
    }
    fn position(&mut self, core: &mut Client, now: Instant, topic: &str, p: i32) -> Option<i64> {
        self.inner.position(core, now, topic, p)
    }
    fn metrics(&mut self, core: &mut Client, now: Instant) -> ConsumerMetrics {
        self.inner.metrics(core, now)
    }
    fn close(&mut self, core: &mut Client, now: Instant, done: CloseAnswer) {
        let taken = self.with_queue(|g| g.taken());
        core.command(now, self.inner.id(), |g, _| g.set_consumed(taken));
        self.inner.close(core, now, done);
    }
    fn group(&mut self) -> Option<&mut GroupCore> {
        Some(self)
    }
}

impl std::fmt::Debug for GroupCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCore")
            .field("inner", &self.inner)
            .field("waiters", &self.waiters.len())
            .field("published", &self.published)
            .finish_non_exhaustive()
    }
}

fn log_auto_commit(result: &Result<(), CommitError>) {
    #[cfg(feature = "tracing")]
    if let Err(e) = result {
        tracing::warn!(error = %e, "kafka automatic commit failed");
    }
    #[cfg(not(feature = "tracing"))]
    let _ = result;
}
