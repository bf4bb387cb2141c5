//! The group consumer surface the task- and thread-based adapters share: the app-side
//! [`GroupMailbox`] (the consumer [`Mailbox`] plus rebalance events and the positions the
//! application has taken) and the driver-side [`GroupCore`] that feeds it from the core's
//! [`GroupConsumer`](kafka_core::group::GroupConsumer).
//!
//! ```text
//! driver ◄── Event::Notify ── core GroupConsumer (membership, commits, fetcher)
//!    │  GroupCore::pump: events first (Revoked: drop the partitions' queued records),
//!    │  then take_records into the queue (no sign of life, no commit)
//!    ▼
//! Mailbox queue + GroupQueue ──► poll of the application: events → listener → Ack,
//!    ▲                              then records (their positions are recorded)
//!    └── Touch (one per poll call), Ack (after the listener), Commit, Subscribe, Close
//! ```
//!
//! Rules kept here (the core's side is `GroupConsumer::use_reported_positions`):
//! - **Committed positions are what the application took**, never what the driver
//!   queued: each take records, per partition, the next offset after the last record
//!   taken. Automatic commits (sent at a `Touch`) use the positions of every take of
//!   the polls before the current one (Java: what the previous polls handed out, even
//!   when the current poll finds nothing); the revocation's commit, explicit
//!   `Offsets::Consumed` commits and close use every take.
//! - **A revocation is acknowledged only after the application saw it**: the driver
//!   drops the revoked partitions' queued and held records when it publishes the event;
//!   a poll hands the event to the listener first (on the application's thread) and
//!   then sends `Ack` with the number of events seen; only an `Ack` that covers the
//!   latest `Revoked` ends the revocation in the core (`handle_poll`), so a commit the
//!   listener sent is on its way before the partitions are given up. Other polls are
//!   only signs of life (`touch`).
//! - **No commit result is dropped**: each [`CommitHandle`] gets its commit's result, or
//!   [`CommitError::Closed`] when the consumer finished first.

mod core;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use kafka_core::config::{ClientConfig, GroupProtocol};
use kafka_core::group::TopicPattern;
pub use kafka_core::group::{CommitError, GroupError, GroupMetadata, TopicPartition};

/// A group member's identity and the positions its application has taken (the next
/// offset to read and the leader epoch of the record before it), for
/// `send_offsets_to_transaction`.
pub type TransactionOffsets = (GroupMetadata, Vec<TxnOffset>);

pub use kafka_core::producer::TxnOffset;

pub use self::core::GroupCore;
use crate::chan::{self, Receiver, RecvError};
use crate::consumer::{
    ConsumerError, ConsumerKey, ConsumerMetrics, ConsumerRecord, HubCommand, Mailbox, Queue, Submit,
};

/// A change of the partitions the application owns, as its listener sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rebalance {
    /// These partitions are the application's now (added to what it had); their records
    /// start from the committed offsets (else `auto.offset.reset`).
    Assigned(Vec<TopicPartition>),
    /// These partitions are being taken away; no record of them is handed out any more.
    /// They are given up after the listener returns and every commit sent until then
    /// finished (with auto-commit on, the positions taken are committed first), so the
    /// listener may commit (Java's `onPartitionsRevoked`).
    Revoked(Vec<TopicPartition>),
    /// The membership was lost (session expired, fenced, `max.poll.interval.ms` passed):
    /// the partitions may already be another member's; commits for them would fail.
    Lost(Vec<TopicPartition>),
}

impl Rebalance {
    /// The partitions the event is about.
    pub fn partitions(&self) -> &[TopicPartition] {
        match self {
            Rebalance::Assigned(p) | Rebalance::Revoked(p) | Rebalance::Lost(p) => p,
        }
    }
}

/// The application's rebalance hook (Java's `ConsumerRebalanceListener`): called on the
/// application's thread or task, inside its poll, before any record taken after the
/// event. `consumer` is the adapter's group consumer, so the listener can commit (take
/// it as the argument; a listener holding a clone of the consumer keeps it alive).
/// Closures `FnMut(&C, &Rebalance) + Send` are listeners.
pub trait RebalanceListener<C: ?Sized>: Send {
    /// One event.
    fn on_rebalance(&mut self, consumer: &C, event: &Rebalance);
}

impl<C: ?Sized, F: FnMut(&C, &Rebalance) + Send> RebalanceListener<C> for F {
    fn on_rebalance(&mut self, consumer: &C, event: &Rebalance) {
        self(consumer, event);
    }
}

/// Where an adapter keeps its consumer's listener (`Send + Sync`).
pub struct Listener<C: ?Sized> {
    slot: Mutex<Option<Box<dyn RebalanceListener<C>>>>,
}

impl<C: ?Sized> Default for Listener<C> {
    fn default() -> Self {
        Listener {
            slot: Mutex::new(None),
        }
    }
}

impl<C: ?Sized> Listener<C> {
    /// Replaces the listener (`None`: events are only acknowledged).
    pub fn set(&self, listener: Option<Box<dyn RebalanceListener<C>>>) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = listener;
    }

    /// Whether a listener is set.
    pub fn is_set(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Hands `events` to the listener, if any. It is taken out while it runs, so a
    /// listener that polls (it should not) finds none instead of a deadlock.
    pub fn deliver(&self, consumer: &C, events: &[Rebalance]) {
        let taken = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut listener) = taken else { return };
        for e in events {
            listener.on_rebalance(consumer, e);
        }
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(listener);
        }
    }
}

impl<C: ?Sized> std::fmt::Debug for Listener<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        f.debug_struct("Listener").field("set", &set).finish()
    }
}

/// What a commit commits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offsets {
    /// The positions the application has taken, per owned partition (the next offset
    /// after the last record handed out; Java's `commitSync()`).
    Consumed,
    /// These offsets (the next offset to consume, per partition).
    These(Vec<(TopicPartition, i64)>),
}

impl Offsets {
    /// These `(topic, partition, next offset)` triples.
    pub fn these<T: AsRef<str>>(offsets: impl IntoIterator<Item = (T, i32, i64)>) -> Self {
        Offsets::These(
            offsets
                .into_iter()
                .map(|(t, p, o)| ((t.as_ref().into(), p), o))
                .collect(),
        )
    }
}

/// One commit's result, once it is known: a future (async) and [`CommitHandle::wait`]
/// (blocking). Dropping it does not cancel the commit.
#[derive(Debug)]
pub struct CommitHandle {
    rx: Receiver<Result<(), CommitError>>,
}

impl CommitHandle {
    /// Waits up to `timeout` (`None`: as long as it takes) for the result; `None` if it
    /// did not come in time (the commit goes on; wait again).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Option<Result<(), CommitError>> {
        match self.rx.recv_deadline(timeout.map(|t| Instant::now() + t)) {
            Ok(r) => Some(r),
            Err(RecvError::Disconnected) => Some(Err(CommitError::Closed)),
            Err(RecvError::Timeout) => None,
        }
    }

    /// The result if it is known.
    pub fn try_result(&mut self) -> Option<Result<(), CommitError>> {
        self.wait(Some(Duration::ZERO))
    }

    fn failed(e: CommitError) -> Self {
        let (tx, rx) = chan::channel(1);
        let _ = tx.push(Err(e));
        CommitHandle { rx }
    }
}

impl Future for CommitHandle {
    type Output = Result<(), CommitError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.rx
            .poll_recv(cx)
            .map(|r| r.unwrap_or(Err(CommitError::Closed)))
    }
}

/// The group part of a mailbox's queue (under the queue's lock).
#[derive(Debug, Default)]
pub(crate) struct GroupQueue {
    /// Published by the driver, not yet taken by the application.
    events: VecDeque<Rebalance>,
    /// Events the application has taken.
    events_taken: u64,
    failed: Option<GroupError>,
    /// Per partition, the next offset after the records of every take of an earlier
    /// poll (and of every take of this poll but the latest).
    acked: HashMap<TopicPartition, i64>,
    /// The latest take's next offsets.
    last: Vec<(TopicPartition, i64)>,
    /// A `Touch` is on its way to the driver.
    touch_pending: bool,
}

impl GroupQueue {
    /// The application took `records`.
    pub(crate) fn took(&mut self, records: &[ConsumerRecord]) {
        for (tp, o) in self.last.drain(..) {
            self.acked.insert(tp, o);
        }
        for r in records {
            let next = r.offset + 1;
            match self
                .last
                .iter_mut()
                .find(|((t, p), _)| *p == r.partition && *t == r.topic)
            {
                Some((_, o)) => *o = next,
                None => self.last.push(((r.topic.clone(), r.partition), next)),
            }
        }
    }

    /// The application starts a poll: what earlier polls took has been handed to it,
    /// so a due automatic commit covers it (without this, the records of the last poll
    /// that found any stayed uncommitted through every empty poll after it).
    pub(crate) fn polled(&mut self) {
        for (tp, o) in self.last.drain(..) {
            self.acked.insert(tp, o);
        }
    }

    /// The application moved a partition's position.
    pub(crate) fn sought(&mut self, topic: &str, partition: i32, offset: i64) {
        self.last
            .retain(|((t, p), _)| !(*p == partition && **t == *topic));
        self.acked.insert((topic.into(), partition), offset);
    }

    /// Positions of every take but the latest.
    fn acked(&self) -> Vec<(TopicPartition, i64)> {
        self.acked.iter().map(|(tp, o)| (tp.clone(), *o)).collect()
    }

    /// Positions of every take.
    fn taken(&self) -> Vec<(TopicPartition, i64)> {
        let mut all = self.acked.clone();
        all.extend(self.last.iter().cloned());
        all.into_iter().collect()
    }

    /// Forgets positions of partitions that start afresh (assigned again, lost).
    fn forget(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            self.acked.remove(tp);
        }
        self.last.retain(|(tp, _)| !partitions.contains(tp));
    }
}

/// Topic names as `subscribe` takes them.
pub fn topic_names<T: AsRef<str>>(topics: impl IntoIterator<Item = T>) -> Vec<String> {
    topics.into_iter().map(|t| t.as_ref().to_string()).collect()
}

/// What one step of a group take found.
enum Step {
    Events(Vec<Rebalance>, u64),
    Records(Vec<ConsumerRecord>),
}

/// The app side of one group consumer (`Send + Sync`; clones share the queue). Seek,
/// pause, resume, position, metrics and close are the consumer [`Mailbox`]'s.
#[derive(Clone, Debug)]
pub struct GroupMailbox {
    mailbox: Mailbox,
    /// `group.protocol`, for checking patterns at subscribe time.
    protocol: GroupProtocol,
}

impl GroupMailbox {
    /// A mailbox for a group consumer with `config`'s consumer settings; `submit` hands
    /// a command to the driver that hosts it (see [`Hub::start_group`](crate::Hub::start_group)).
    pub fn new(config: &ClientConfig, key: ConsumerKey, submit: Submit) -> Self {
        GroupMailbox {
            mailbox: Mailbox::with_group(config, key, submit, Some(GroupQueue::default())),
            protocol: config.group().group_protocol,
        }
    }

    /// The consumer mailbox under it (seek, pause, resume, position, metrics, close).
    pub fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }

    /// Subscribes to exactly these topics (an empty list leaves the group: every
    /// partition is revoked).
    pub fn subscribe(&self, topics: Vec<String>) -> Result<(), ConsumerError> {
        self.open()?;
        let key = self.mailbox.key();
        self.send(Box::new(move |hub, now| {
            hub.group(key, |g, core| g.subscribe(core, now, &topics));
        }))
    }

    /// Subscribes to every topic whose whole name matches `pattern` (see the core's
    /// `GroupConsumer::subscribe_pattern`); a pattern invalid for `group.protocol` is
    /// refused here (KIP-848: the coordinator judges it, and a refusal ends the
    /// consumer with [`GroupError::InvalidPattern`]).
    pub fn subscribe_pattern(&self, pattern: &str) -> Result<(), ConsumerError> {
        self.open()?;
        let pattern = TopicPattern::new(pattern, self.protocol)?;
        let key = self.mailbox.key();
        self.send(Box::new(move |hub, now| {
            hub.group(key, |g, core| g.subscribe_pattern(core, now, pattern));
        }))
    }

    /// Commits `offsets`; the handle gets the result.
    pub fn commit(&self, offsets: Offsets) -> CommitHandle {
        if let Err(e) = self.open() {
            let _ = e;
            return CommitHandle::failed(CommitError::Closed);
        }
        let (tx, rx) = chan::channel(1);
        let key = self.mailbox.key();
        let command: HubCommand = Box::new(move |hub, now| {
            let mut tx = Some(tx);
            hub.group(key, |g, core| {
                if let Some(tx) = tx.take() {
                    g.commit(core, now, offsets, tx);
                }
            });
            if let Some(tx) = tx {
                let _ = tx.push(Err(CommitError::Closed));
            }
        });
        if !self.mailbox.submit(command) {
            return CommitHandle::failed(CommitError::Closed);
        }
        CommitHandle { rx }
    }

    /// The command that answers with the partitions owned now.
    pub fn assignment_command(
        &self,
        answer: impl FnOnce(Vec<TopicPartition>) + Send + 'static,
    ) -> HubCommand {
        let key = self.mailbox.key();
        Box::new(move |hub, now| {
            let got = hub.group(key, |g, core| g.assignment(core, now));
            answer(got.unwrap_or_default());
        })
    }

    /// Asks the driver what the application gives up at close (`Revoked` or `Lost` of
    /// every owned partition, for its listener before the close); the receiver gets the
    /// answer, `None` without a driver.
    pub fn ask_release(&self) -> Option<Receiver<Option<Rebalance>>> {
        let (tx, rx) = chan::channel(1);
        let key = self.mailbox.key();
        let command: HubCommand = Box::new(move |hub, now| {
            let got = hub.group(key, |g, core| g.release_on_close(core, now));
            let _ = tx.push(got.flatten());
        });
        self.mailbox.submit(command).then_some(rx)
    }

    /// The command that answers with the member's group identity and the positions the
    /// application has taken (`None` once the consumer is closed).
    pub fn transaction_offsets_command(
        &self,
        answer: impl FnOnce(Option<TransactionOffsets>) + Send + 'static,
    ) -> HubCommand {
        let key = self.mailbox.key();
        Box::new(move |hub, now| {
            let got = hub.group(key, |g, core| g.transaction_offsets(core, now));
            answer(got.flatten());
        })
    }

    /// Stops handing out records at once and returns the command that closes the core
    /// group consumer (commit with auto-commit on, leave); `answer` gets its final
    /// counters on the driver.
    pub fn close_command(
        &self,
        answer: impl FnOnce(ConsumerMetrics) + Send + 'static,
    ) -> HubCommand {
        self.mailbox.close_command(answer)
    }

    /// One poll's take: the sign of life, then events (handed to `on_events`, then
    /// acknowledged), then up to `max.poll.records` records or the next error; `Pending`
    /// (with `waker` registered) while there are none. `touch` is whether this call
    /// starts a poll (later calls of the same poll pass `false`).
    pub fn poll_take(
        &self,
        waker: Option<&Waker>,
        touch: bool,
        on_events: &mut dyn FnMut(&[Rebalance]),
    ) -> Poll<Result<Vec<ConsumerRecord>, ConsumerError>> {
        self.poll_take_max(waker, touch, self.max_poll(), on_events)
    }

    /// Like [`GroupMailbox::poll_take`], one record at a time.
    pub fn poll_take_one(
        &self,
        waker: Option<&Waker>,
        touch: bool,
        on_events: &mut dyn FnMut(&[Rebalance]),
    ) -> Poll<Result<ConsumerRecord, ConsumerError>> {
        self.poll_take_max(waker, touch, 1, on_events)
            .map(|r| r.map(|mut v| v.remove(0)))
    }

    /// One poll, waiting up to `timeout` for records: the sign of life, events to
    /// `on_events` (then acknowledged), then up to `max.poll.records` records (an empty
    /// `Vec` if none came) or the next error.
    pub fn take_blocking(
        &self,
        timeout: Duration,
        on_events: &mut dyn FnMut(&[Rebalance]),
    ) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        let deadline = Instant::now() + timeout;
        self.touch();
        let max = self.max_poll();
        loop {
            match self.mailbox.wait_until(deadline, |m, q| step(m, q, max)) {
                None => return Ok(Vec::new()),
                Some(Err(e)) => return Err(e),
                Some(Ok(Step::Records(r))) => return Ok(r),
                Some(Ok(Step::Events(events, seen))) => self.handled(&events, seen, on_events),
            }
        }
    }

    fn poll_take_max(
        &self,
        waker: Option<&Waker>,
        touch: bool,
        max: usize,
        on_events: &mut dyn FnMut(&[Rebalance]),
    ) -> Poll<Result<Vec<ConsumerRecord>, ConsumerError>> {
        if touch {
            self.touch();
        }
        loop {
            match self.mailbox.poll_with(waker, |m, q| step(m, q, max)) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(Step::Records(r))) => return Poll::Ready(Ok(r)),
                Poll::Ready(Ok(Step::Events(events, seen))) => {
                    self.handled(&events, seen, on_events);
                }
            }
        }
    }

    /// The events went to the listener: acknowledge them (after anything it submitted).
    fn handled(&self, events: &[Rebalance], seen: u64, on_events: &mut dyn FnMut(&[Rebalance])) {
        on_events(events);
        let key = self.mailbox.key();
        self.mailbox.submit(Box::new(move |hub, now| {
            hub.group(key, |g, core| g.ack(core, now, seen));
        }));
    }

    /// The application polls: one `Touch` on its way at a time.
    fn touch(&self) {
        let mut queue = self.mailbox.shared().lock();
        let Some(g) = &mut queue.group else { return };
        g.polled();
        if g.touch_pending {
            return;
        }
        g.touch_pending = true;
        let key = self.mailbox.key();
        let sent = self.mailbox.submit(Box::new(move |hub, now| {
            hub.group(key, |g, core| g.touch(core, now));
        }));
        if !sent {
            if let Some(g) = &mut queue.group {
                g.touch_pending = false;
            }
        }
    }

    fn max_poll(&self) -> usize {
        self.mailbox.shared().max_poll
    }

    fn open(&self) -> Result<(), ConsumerError> {
        if self.mailbox.shared().lock().closed {
            return Err(ConsumerError::Closed);
        }
        Ok(())
    }

    fn send(&self, command: HubCommand) -> Result<(), ConsumerError> {
        if self.mailbox.submit(command) {
            Ok(())
        } else {
            Err(ConsumerError::DriverGone)
        }
    }
}

/// Under the queue's lock: the close, else events, else a failure, else records. Events
/// go before a failure: a fatal error's `Lost` reaches the listener first (Java calls
/// `onPartitionsLost`, then throws).
fn step(m: &Mailbox, queue: &mut Queue, max: usize) -> Option<Result<Step, ConsumerError>> {
    if queue.closed {
        return Some(Err(ConsumerError::Closed));
    }
    if let Some(g) = &mut queue.group {
        if !g.events.is_empty() {
            let events: Vec<Rebalance> = g.events.drain(..).collect();
            g.events_taken += events.len() as u64;
            return Some(Ok(Step::Events(events, g.events_taken)));
        }
        if let Some(e) = &g.failed {
            return Some(Err(ConsumerError::Group(e.clone())));
        }
    }
    m.take_locked(queue, max).map(|r| r.map(Step::Records))
}
