//! The consumer surface the task- and thread-based adapters share: the app-side
//! [`Mailbox`] (records fetched for the application, under one mutex) and the
//! driver-side [`ConsumerCore`] that feeds it from the core's
//! [`Consumer`](kafka_core::consumer::Consumer) machine.
//!
//! ```text
//! driver ◄── Event::Notify ── core consumer (fetch sessions, chunks as Bytes)
//!    │  ConsumerCore::pump: one Consumer::poll per Client::command (≤ max.poll.records)
//!    ▼
//! Mailbox queue (one Mutex) ──► poll(timeout) / recv() of the application
//!    ▲                                   │ below max.poll.records queued: wake the driver
//!    └───────────────────────────────────┘
//! ```
//!
//! Records are the core's [`ConsumerRecord`]s, moved, never copied: key, value and
//! headers stay slices of the fetched (or decompressed) buffer. The queue holds at most
//! about two polls' worth (`2 × max.poll.records`); the driver pulls from the core only
//! while fewer than `max.poll.records` wait, so the core's `queued.max.messages.kbytes`
//! budget keeps bounding what is fetched ahead.
//!
//! Control calls (`assign`, `seek*`, `pause`, `resume`) return at once and take effect
//! for the next take, as in Java: under the queue's lock they drop the queued records they
//! make stale (a paused partition's queued records are dropped and its core position
//! rewound to the first of them, so nothing is lost), then the driver applies them to the
//! core in order. While any is on its way the driver publishes nothing new, so no record
//! fetched before a seek is handed out after it.

mod core;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumeError;
pub use kafka_core::consumer::{ConsumerMetrics, ConsumerRecord};

pub(crate) use self::core::ConsumerSide;
pub use self::core::{CloseAnswer, ConsumerCore, FetchMachine};
use crate::{Hub, PipeOutlet};

/// Work for a driver, run on its hub (the command type of the blocking and async
/// drivers).
pub type HubCommand = Box<dyn FnOnce(&mut Hub<PipeOutlet>, Instant) + Send>;

/// Hands a command to the driver; `false` when the driver is gone.
pub type Submit = Box<dyn Fn(HubCommand) -> bool + Send + Sync>;

/// Why a consumer call returned no records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// A partition could not be consumed (the others go on); typed by the core.
    #[error(transparent)]
    Consume(#[from] ConsumeError),
    /// The consumer is closing or closed.
    #[error("consumer is closed")]
    Closed,
    /// The driver is gone.
    #[error("the consumer's driver is gone")]
    DriverGone,
    /// The group member cannot go on (a group consumer; sticky: every later take).
    #[error(transparent)]
    Group(#[from] kafka_core::group::GroupError),
}

/// Names one consumer inside a driver (its commands find its [`ConsumerCore`] by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConsumerKey(u64);

impl ConsumerKey {
    /// A key no other consumer of this process has.
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ConsumerKey(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A partition, as control calls name it.
pub type TopicPartition = (String, i32);

/// Partitions as control calls take them, from any `(topic, partition)` pairs.
pub fn partitions<T: AsRef<str>>(
    partitions: impl IntoIterator<Item = (T, i32)>,
) -> Vec<TopicPartition> {
    partitions
        .into_iter()
        .map(|(t, p)| (t.as_ref().to_string(), p))
        .collect()
}

/// Partitions as the offset lookups take them.
pub fn lookup_partitions<T: AsRef<str>>(
    partitions: impl IntoIterator<Item = (T, i32)>,
) -> Vec<kafka_core::admin::TopicPartition> {
    partitions
        .into_iter()
        .map(|(t, p)| kafka_core::admin::TopicPartition::new(t.as_ref(), p))
        .collect()
}

/// `((topic, partition), time)` pairs as `offsets_for_times` takes them.
pub fn lookup_times<T: AsRef<str>>(
    times: impl IntoIterator<Item = ((T, i32), i64)>,
) -> Vec<(kafka_core::admin::TopicPartition, i64)> {
    times
        .into_iter()
        .map(|((t, p), at)| (kafka_core::admin::TopicPartition::new(t.as_ref(), p), at))
        .collect()
}

/// What `offsets_for_times` ends with: per partition, the first record at or after the
/// time, `None` when no record is that recent.
pub type OffsetsForTimesResult = Result<
    std::collections::BTreeMap<
        kafka_core::admin::TopicPartition,
        Option<kafka_core::consumer::OffsetAndTimestamp>,
    >,
    kafka_core::admin::AdminError,
>;

/// A control call on its way to the driver.
#[derive(Debug)]
pub(crate) enum Control {
    Assign(Vec<TopicPartition>),
    /// The partition, the offset and the leader epoch of the record before it.
    Seek(TopicPartition, i64, Option<i32>),
    SeekToBeginning(Vec<TopicPartition>),
    SeekToEnd(Vec<TopicPartition>),
    /// Partitions to pause, and the first offset dropped from the queue per partition.
    Pause(Vec<TopicPartition>, Vec<(TopicPartition, i64)>),
    Resume(Vec<TopicPartition>),
}

/// The queue and its flags, under one lock.
pub(crate) struct Queue {
    pub(crate) records: VecDeque<ConsumerRecord>,
    pub(crate) errors: VecDeque<ConsumeError>,
    /// Control calls submitted and not yet applied by the driver.
    pub(crate) controls_pending: usize,
    /// A pump of the driver is out and it has not run since.
    pub(crate) wake_pending: bool,
    /// Async takers waiting for records.
    pub(crate) wakers: Vec<Waker>,
    /// Blocking takers parked on [`Shared::ready`].
    pub(crate) parked: usize,
    /// Closed by the application, or the machine finished.
    pub(crate) closed: bool,
    /// A group consumer's events and consumed positions (`None` in assign mode).
    pub(crate) group: Option<crate::group::GroupQueue>,
}

/// What the app-side handles and the driver-side core share.
pub(crate) struct Shared {
    pub(crate) queue: Mutex<Queue>,
    pub(crate) ready: Condvar,
    /// `max.poll.records`: the most one take returns, and the queue's low-water mark.
    pub(crate) max_poll: usize,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every waiting taker (records, errors or the close arrived).
    pub(crate) fn wake_takers(&self, mut queue: MutexGuard<'_, Queue>) {
        let wakers = std::mem::take(&mut queue.wakers);
        let parked = queue.parked;
        drop(queue);
        for w in wakers {
            w.wake();
        }
        if parked > 0 {
            self.ready.notify_all();
        }
    }
}

/// The app side of one consumer (`Send + Sync`; clones share the queue).
#[derive(Clone)]
pub struct Mailbox {
    shared: Arc<Shared>,
    key: ConsumerKey,
    submit: Arc<Submit>,
}

impl Mailbox {
    /// A mailbox for a consumer with `config`'s consumer settings; `submit` hands a
    /// command to the driver that hosts the consumer (see [`Hub::start_consumer`]).
    pub fn new(config: &ClientConfig, key: ConsumerKey, submit: Submit) -> Self {
        Self::with_group(config, key, submit, None)
    }

    pub(crate) fn with_group(
        config: &ClientConfig,
        key: ConsumerKey,
        submit: Submit,
        group: Option<crate::group::GroupQueue>,
    ) -> Self {
        Mailbox {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    records: VecDeque::new(),
                    errors: VecDeque::new(),
                    controls_pending: 0,
                    wake_pending: false,
                    wakers: Vec::new(),
                    parked: 0,
                    closed: false,
                    group,
                }),
                ready: Condvar::new(),
                max_poll: config.consumer().max_poll_records.max(1),
            }),
            key,
            submit: Arc::new(submit),
        }
    }

    /// The consumer's key.
    pub fn key(&self) -> ConsumerKey {
        self.key
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Consumes exactly `partitions` from now on (Java's `assign`). Partitions already
    /// assigned keep their positions; new ones start from `auto.offset.reset` unless
    /// sought. Records queued for partitions no longer assigned are dropped.
    pub fn assign(&self, partitions: Vec<TopicPartition>) -> Result<(), ConsumerError> {
        let keep = partitions.clone();
        self.control(Control::Assign(partitions), move |r| {
            !keep
                .iter()
                .any(|(t, p)| r.partition == *p && *r.topic == **t)
        })
    }

    /// Moves a partition's position: the next record it hands out is at `offset`.
    pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), ConsumerError> {
        self.seek_with_epoch(topic, partition, offset, None)
    }

    /// [`Mailbox::seek`] to an offset known to follow a record of leader epoch
    /// `leader_epoch` (a committed offset's): the core validates the position with
    /// OffsetForLeaderEpoch before fetching from it (KIP-320, Java's
    /// `seek(partition, OffsetAndMetadata)`).
    pub fn seek_with_epoch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) -> Result<(), ConsumerError> {
        if let Some(g) = &mut self.shared.lock().group {
            g.sought(topic, partition, offset);
        }
        let tp = (topic.to_string(), partition);
        let control = Control::Seek(tp, offset, leader_epoch);
        self.control(control, move |r| is(r, topic, partition))
    }

    /// Moves positions to the log start (resolved with ListOffsets).
    pub fn seek_to_beginning(&self, partitions: Vec<TopicPartition>) -> Result<(), ConsumerError> {
        let drop = partitions.clone();
        self.control(Control::SeekToBeginning(partitions), move |r| {
            in_list(r, &drop)
        })
    }

    /// Moves positions to the log end (the last stable offset under read_committed).
    pub fn seek_to_end(&self, partitions: Vec<TopicPartition>) -> Result<(), ConsumerError> {
        let drop = partitions.clone();
        self.control(Control::SeekToEnd(partitions), move |r| in_list(r, &drop))
    }

    /// Hands out nothing more from these partitions until resumed; their positions stay
    /// at the first record not handed out.
    pub fn pause(&self, partitions: Vec<TopicPartition>) -> Result<(), ConsumerError> {
        let mut queue = self.lock_open()?;
        let mut rewinds: Vec<(TopicPartition, i64)> = Vec::new();
        queue.records.retain(|r| {
            if !in_list(r, &partitions) {
                return true;
            }
            if !rewinds
                .iter()
                .any(|((t, p), _)| *p == r.partition && **t == *r.topic)
            {
                rewinds.push(((r.topic.to_string(), r.partition), r.offset));
            }
            false
        });
        self.submit_control(queue, Control::Pause(partitions, rewinds))
    }

    /// Fetches and hands out these partitions again.
    pub fn resume(&self, partitions: Vec<TopicPartition>) -> Result<(), ConsumerError> {
        self.control(Control::Resume(partitions), |_| false)
    }

    /// The command that answers with a partition's position (the next offset to hand
    /// out; `None` while unknown); `answer` gets it on the driver.
    pub fn position_command(
        &self,
        topic: &str,
        partition: i32,
        answer: impl FnOnce(Option<i64>) + Send + 'static,
    ) -> HubCommand {
        let (key, topic) = (self.key, topic.to_string());
        Box::new(move |hub, now| {
            let pos = hub
                .consumer(key, |c, core| c.position(core, now, &topic, partition))
                .flatten();
            answer(pos);
        })
    }

    /// The command that answers with the core consumer's counters (the final ones once
    /// it finished).
    pub fn metrics_command(
        &self,
        answer: impl FnOnce(ConsumerMetrics) + Send + 'static,
    ) -> HubCommand {
        let key = self.key;
        Box::new(move |hub, now| {
            let m = hub
                .consumer(key, |c, core| c.metrics(core, now))
                .or_else(|| hub.finished_consumer(key).cloned())
                .unwrap_or_default();
            answer(m);
        })
    }

    /// Stops handing out records at once and returns the command that closes the core
    /// consumer; `answer` gets its final counters on the driver.
    pub fn close_command(
        &self,
        answer: impl FnOnce(ConsumerMetrics) + Send + 'static,
    ) -> HubCommand {
        let queue = self.shared.lock();
        let mut queue = queue;
        queue.closed = true;
        queue.records.clear();
        self.shared.wake_takers(queue);
        let key = self.key;
        Box::new(move |hub, now| {
            let mut answer = Some(answer);
            hub.consumer(key, |c, core| {
                if let Some(a) = answer.take() {
                    c.close(core, now, Box::new(a));
                }
            });
            if let Some(a) = answer {
                a(hub.finished_consumer(key).cloned().unwrap_or_default());
            }
        })
    }

    /// Hands `command` to the driver; `false` if it is gone.
    pub fn submit(&self, command: HubCommand) -> bool {
        (self.submit)(command)
    }

    /// Takes up to `max.poll.records` records, or the next error; `Pending` (with
    /// `waker` registered) while there is neither.
    pub fn poll_take(
        &self,
        waker: Option<&Waker>,
    ) -> Poll<Result<Vec<ConsumerRecord>, ConsumerError>> {
        let max = self.shared.max_poll;
        self.poll_with(waker, |m, queue| m.take_locked(queue, max))
    }

    /// Takes one record, or the next error; `Pending` (with `waker` registered) while
    /// there is neither.
    pub fn poll_take_one(
        &self,
        waker: Option<&Waker>,
    ) -> Poll<Result<ConsumerRecord, ConsumerError>> {
        self.poll_with(waker, |m, queue| m.take_locked(queue, 1))
            .map(|r| r.map(|mut v| v.remove(0)))
    }

    /// Takes up to `max.poll.records` records, or the next error, waiting up to
    /// `timeout` for either; an empty `Vec` if none came.
    pub fn take_blocking(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        let max = self.shared.max_poll;
        self.wait_until(Instant::now() + timeout, |m, queue| {
            m.take_locked(queue, max)
        })
        .unwrap_or(Ok(Vec::new()))
    }

    /// Runs `step` under the queue's lock until it answers, waiting for the driver's
    /// wakes in between; `None` once `deadline` passed.
    pub(crate) fn wait_until<T>(
        &self,
        deadline: Instant,
        mut step: impl FnMut(&Self, &mut Queue) -> Option<T>,
    ) -> Option<T> {
        let mut queue = self.shared.lock();
        loop {
            if let Some(r) = step(self, &mut queue) {
                return Some(r);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            queue.parked += 1;
            queue = self
                .shared
                .ready
                .wait_timeout(queue, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            queue.parked -= 1;
        }
    }

    /// Runs `step` under the queue's lock; `Pending` (with `waker` registered) while it
    /// has no answer.
    pub(crate) fn poll_with<T>(
        &self,
        waker: Option<&Waker>,
        step: impl FnOnce(&Self, &mut Queue) -> Option<T>,
    ) -> Poll<T> {
        let mut queue = self.shared.lock();
        if let Some(r) = step(self, &mut queue) {
            return Poll::Ready(r);
        }
        if let Some(w) = waker {
            register(&mut queue, w);
        }
        Poll::Pending
    }

    /// The next error, else up to `max` records (at least one), else `None`. Wakes the
    /// driver when the queue falls below its low-water mark.
    pub(crate) fn take_locked(
        &self,
        queue: &mut Queue,
        max: usize,
    ) -> Option<Result<Vec<ConsumerRecord>, ConsumerError>> {
        if queue.closed {
            return Some(Err(ConsumerError::Closed));
        }
        if let Some(e) = queue.errors.pop_front() {
            return Some(Err(ConsumerError::Consume(e)));
        }
        if queue.records.is_empty() {
            return None;
        }
        let n = max.min(queue.records.len());
        let out: Vec<ConsumerRecord> = queue.records.drain(..n).collect();
        if let Some(g) = &mut queue.group {
            g.took(&out);
        }
        if queue.records.len() < self.shared.max_poll && !queue.wake_pending {
            queue.wake_pending = true;
            let key = self.key;
            // Pushing a command never blocks (the driver's command queue ignores its
            // capacity for commands), so it is fine under the lock.
            if !(self.submit)(Box::new(move |hub, now| hub.pump_consumer(key, now))) {
                queue.wake_pending = false;
            }
        }
        Some(Ok(out))
    }

    /// Drops the queued records `stale` says are stale, then submits `control`.
    fn control(
        &self,
        control: Control,
        stale: impl Fn(&ConsumerRecord) -> bool,
    ) -> Result<(), ConsumerError> {
        let mut queue = self.lock_open()?;
        queue.records.retain(|r| !stale(r));
        self.submit_control(queue, control)
    }

    fn submit_control(
        &self,
        mut queue: MutexGuard<'_, Queue>,
        control: Control,
    ) -> Result<(), ConsumerError> {
        queue.controls_pending += 1;
        let key = self.key;
        let sent = (self.submit)(Box::new(move |hub, now| {
            hub.consumer(key, |c, core| c.control(core, now, control));
        }));
        if !sent {
            queue.controls_pending -= 1;
            return Err(ConsumerError::DriverGone);
        }
        Ok(())
    }

    fn lock_open(&self) -> Result<MutexGuard<'_, Queue>, ConsumerError> {
        let queue = self.shared.lock();
        if queue.closed {
            return Err(ConsumerError::Closed);
        }
        Ok(queue)
    }
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.shared.lock();
        f.debug_struct("Mailbox")
            .field("key", &self.key)
            .field("records", &queue.records.len())
            .field("errors", &queue.errors.len())
            .field("controls_pending", &queue.controls_pending)
            .field("closed", &queue.closed)
            .finish_non_exhaustive()
    }
}

fn register(queue: &mut Queue, waker: &Waker) {
    if !queue.wakers.iter().any(|x| x.will_wake(waker)) {
        queue.wakers.push(waker.clone());
    }
}

fn is(r: &ConsumerRecord, topic: &str, partition: i32) -> bool {
    r.partition == partition && *r.topic == *topic
}

fn in_list(r: &ConsumerRecord, partitions: &[TopicPartition]) -> bool {
    partitions.iter().any(|(t, p)| is(r, t, *p))
}
