//! The producer surface the task- and thread-based adapters share: owned [`Record`]s, the
//! per-record [`Delivery`] handle, the app-side staging queue ([`Outbox`]) and the
//! driver-side [`ProducerCore`] that feeds the core's
//! [`Producer`](kafka_core::producer::Producer) machine.
//!
//! ```text
//! app threads/tasks ── Outbox::send ──► staged Vec (one Mutex, one driver wake per drain)
//!                                              │
//! driver ── ProducerCore::pump ── many p.send per Client::command ──► core producer
//!        ◄── Event::Notify ── take_report (one per batch) ── completes every record's slot
//! ```
//!
//! Hot path: a send locks the staging queue once, moves the record in and wakes the
//! driver only when it must (below); the driver takes the whole queue at once and
//! appends it in one `command`. Delivery handles share one slot allocation per run of
//! [`SLOTS_PER_CHUNK`] sends (plus an index), so no per-record channel or oneshot exists.
//!
//! Wake rule: after each take the driver *plans* its next one when it can — at the
//! earliest linger deadline of the open batches, the time it must look anyway — and
//! says so in the queue. A send then only stages, without waking it, unless a wake is
//! already out, or a batch's worth (`batch.size`) is staged, or the queue is full. With
//! nothing planned (no batch open, a backlog the core refused, a flush or close under
//! way) the first record staged wakes the driver, as before. Flush, close and the
//! transactional calls take the queue themselves. Staged records keep the time the first
//! of them was staged, and a batch they open lingers from then
//! ([`Producer::send_at`](kafka_core::producer::Producer::send_at)), so the plan costs
//! no latency: at a low rate the driver wakes about twice per linger period instead of
//! once per record.
//!
//! Bounds: the staging queue holds at most [`Outbox::limit`] bytes (records the core has
//! not accepted yet, waiting in the queue or in the driver's backlog); `buffer.memory`
//! bounds the core. A sender waits while the queue is full (an async sender awaits a
//! notification, a blocking one parks) up to `max.block.ms`, then fails with
//! [`Refused::Timeout`]. A staged record whose topic's metadata stays unknown fails after
//! `max.block.ms` more with [`ProduceError::TimedOut`] (not delivered); one waiting for
//! room in `buffer.memory` waits for it (the core frees it as batches end, at the latest
//! at `delivery.timeout.ms`).

mod core;
mod delivery;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::config::ClientConfig;
use kafka_core::producer::ProduceError;

pub use self::core::{ProducerCore, TxnCall, TxnDone};
pub use delivery::{Delivery, RecordMetadata};
use delivery::{Sink, Slots};

/// Records sharing one slot allocation of their [`Delivery`] handles.
pub const SLOTS_PER_CHUNK: u32 = 256;

/// What a delivery callback gets: where the record was written, or why it was not.
pub type Outcome = Result<RecordMetadata, ProduceError>;

/// A delivery callback (`send_with`). It runs on the driver (task or thread): keep it
/// short and non-blocking.
pub type Callback = Box<dyn FnOnce(Outcome) + Send + 'static>;

/// A record to produce, owned (it crosses from the caller to the driver).
///
/// For hot loops keep the topic as an `Arc<str>` and clone it: `Record::new` with a
/// `&str` allocates the name each time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The topic.
    pub topic: Arc<str>,
    /// An explicit partition (wins over the partitioner).
    pub partition: Option<i32>,
    /// The key (`None`: null).
    pub key: Option<Bytes>,
    /// The value (`None`: null, a tombstone in compacted topics).
    pub value: Option<Bytes>,
    /// Headers, in order (values may be null).
    pub headers: Vec<(String, Option<Bytes>)>,
    /// Create time in ms since the Unix epoch; `None`: the driver's wall clock.
    pub timestamp: Option<i64>,
}

impl Record {
    /// A keyless record with this value.
    pub fn new(topic: impl Into<Arc<str>>, value: impl Into<Bytes>) -> Self {
        Record {
            topic: topic.into(),
            partition: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    /// A record with a null value (a tombstone in compacted topics).
    pub fn tombstone(topic: impl Into<Arc<str>>, key: impl Into<Bytes>) -> Self {
        Record {
            topic: topic.into(),
            partition: None,
            key: Some(key.into()),
            value: None,
            headers: Vec::new(),
            timestamp: None,
        }
    }

    /// With this key.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// To this partition.
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// With one more header.
    pub fn header(mut self, key: impl Into<String>, value: Option<Bytes>) -> Self {
        self.headers.push((key.into(), value));
        self
    }

    /// With this create time (ms since the Unix epoch).
    pub fn timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }

    /// The bytes the record holds, as the staging bound counts them.
    fn size(&self) -> usize {
        let field = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        let headers: usize = self
            .headers
            .iter()
            .map(|(k, v)| k.len() + field(v) + 8)
            .sum();
        64 + field(&self.key) + field(&self.value) + headers
    }
}

/// Why a send (or flush, close) was refused before the record reached the driver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// The staging queue stayed full for `max.block.ms` (the core's `buffer.memory` is
    /// used up and not draining, or the topic's metadata never came).
    #[error("no room for the record within max.block.ms ({0:?})")]
    Timeout(Duration),
    /// The producer is closing or closed.
    #[error("producer is closed")]
    Closed,
    /// The driver is gone.
    #[error("the producer's driver is gone")]
    DriverGone,
}

/// Names one producer inside a driver (its commands find its [`ProducerCore`] by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerKey(u64);

impl ProducerKey {
    /// A key no other producer of this process has.
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ProducerKey(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A record in the staging queue.
pub(crate) struct Staged {
    pub(crate) record: Record,
    pub(crate) sink: Sink,
    pub(crate) size: usize,
}

/// The staging queue and its flags, under one lock.
pub(crate) struct Inbox {
    pub(crate) staged: Vec<Staged>,
    /// Bytes of records the core has not taken yet (here and in the driver's backlog).
    pub(crate) bytes: usize,
    /// Records staged so far (flushes wait until the driver has taken this many).
    pub(crate) seq: u64,
    /// The slots the next sends use, and how many of them are given out.
    chunk: Option<(Arc<Slots>, u32)>,
    /// Bytes of the records in `staged` (since the driver last took the queue).
    pub(crate) staged_bytes: usize,
    /// When the first record now in `staged` was staged.
    pub(crate) first_at: Option<Instant>,
    /// A wake of the driver is out and it has not taken the queue since.
    pub(crate) wake_pending: bool,
    /// The driver will take the queue by a deadline of its own (see the wake rule in
    /// the module docs): sends below a batch's worth need not wake it.
    pub(crate) planned: bool,
    /// Async senders waiting for room.
    pub(crate) space_wakers: Vec<Waker>,
    /// Blocking senders parked on [`Shared::space`].
    pub(crate) parked: usize,
    /// No more sends (close was called, or the producer finished).
    pub(crate) closed: bool,
}

/// What the app-side handles and the driver-side core share.
pub(crate) struct Shared {
    pub(crate) inbox: Mutex<Inbox>,
    pub(crate) space: Condvar,
    pub(crate) max_block: Duration,
    pub(crate) limit: usize,
    /// Staged bytes that wake a driver that planned its next take (`batch.size`).
    wake_bytes: usize,
    wake: Box<dyn Fn() + Send + Sync>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives back room: `freed` bytes left the queue; waiting senders retry.
    pub(crate) fn release(&self, freed: usize) {
        self.settle(freed, false);
    }

    /// After a take: gives back `freed` bytes (waiting senders retry) and, with
    /// `planned`, tells senders the driver takes the queue by itself next.
    pub(crate) fn settle(&self, freed: usize, planned: bool) {
        if freed == 0 && !planned {
            return;
        }
        let (wakers, parked) = {
            let mut inbox = self.lock();
            inbox.planned |= planned;
            if freed == 0 {
                return;
            }
            inbox.bytes = inbox.bytes.saturating_sub(freed);
            (std::mem::take(&mut inbox.space_wakers), inbox.parked)
        };
        for w in wakers {
            w.wake();
        }
        if parked > 0 {
            self.space.notify_all();
        }
    }

    /// Stops taking sends and wakes every waiting sender (they then fail `Closed`).
    pub(crate) fn close(&self) {
        let wakers = {
            let mut inbox = self.lock();
            inbox.closed = true;
            std::mem::take(&mut inbox.space_wakers)
        };
        for w in wakers {
            w.wake();
        }
        self.space.notify_all();
    }
}

/// The app side of one producer: stages records for its driver (`Send + Sync`; clones
/// share the queue).
#[derive(Clone)]
pub struct Outbox {
    shared: Arc<Shared>,
    key: ProducerKey,
}

impl Outbox {
    /// An outbox for a producer with `config`'s producer settings; `wake` must make the
    /// driver call [`ProducerCore::pump`] (through [`Hub::pump_producer`](crate::Hub))
    /// for `key` soon (it is called at most once per drain of the queue, and not while
    /// the driver has planned its next take: see the module docs).
    pub fn new(config: &ClientConfig, key: ProducerKey, wake: Box<dyn Fn() + Send + Sync>) -> Self {
        let p = config.producer();
        let limit = staging_limit(p.buffer_memory, p.batch_size);
        Outbox {
            shared: Arc::new(Shared {
                inbox: Mutex::new(Inbox {
                    staged: Vec::new(),
                    bytes: 0,
                    seq: 0,
                    chunk: None,
                    staged_bytes: 0,
                    first_at: None,
                    wake_pending: false,
                    planned: false,
                    space_wakers: Vec::new(),
                    parked: 0,
                    closed: false,
                }),
                space: Condvar::new(),
                max_block: p.max_block,
                limit,
                wake_bytes: p.batch_size.clamp(1, limit),
                wake,
            }),
            key,
        }
    }

    /// The producer's key.
    pub fn key(&self) -> ProducerKey {
        self.key
    }

    /// `max.block.ms`.
    pub fn max_block(&self) -> Duration {
        self.shared.max_block
    }

    /// The most bytes the staging queue holds (`buffer.memory / 4`, at least 64 KiB and
    /// one batch, at most 8 MiB; a single record larger than it is let in alone).
    pub fn limit(&self) -> usize {
        self.shared.limit
    }

    /// Records staged so far (what a flush called now waits for).
    pub fn staged(&self) -> u64 {
        self.shared.lock().seq
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops taking sends (close): waiting senders fail [`Refused::Closed`].
    pub fn close(&self) {
        self.shared.close();
    }

    /// Stages `record` if there is room and returns its delivery handle; with `waker`,
    /// a full queue registers it to be woken when room frees. `record` is taken once
    /// staged.
    pub fn poll_send(
        &self,
        record: &mut Option<Record>,
        waker: Option<&Waker>,
    ) -> Poll<Result<Delivery, Refused>> {
        let mut none = None;
        self.poll_stage(record, &mut none, waker)
            .map(|r| r.map(|d| d.expect("staged without a callback")))
    }

    /// Like [`Outbox::poll_send`] with a callback instead of a handle (`callback` is
    /// taken once the record is staged).
    pub fn poll_send_with(
        &self,
        record: &mut Option<Record>,
        callback: &mut Option<Callback>,
        waker: Option<&Waker>,
    ) -> Poll<Result<(), Refused>> {
        self.poll_stage(record, callback, waker)
            .map(|r| r.map(|_| ()))
    }

    /// Stages `record` for a blocking sender (a handle, or `callback`): parks while the
    /// queue is full, up to `max.block.ms`.
    pub fn send_blocking(
        &self,
        record: Record,
        callback: Option<Callback>,
    ) -> Result<Option<Delivery>, Refused> {
        let mut record = Some(record);
        let mut callback = callback;
        let mut inbox = self.shared.lock();
        let mut deadline = None;
        loop {
            if let Poll::Ready(r) = self.stage_locked(&mut inbox, &mut record, &mut callback) {
                let wake = r.is_ok() && self.claim_wake(&mut inbox, false);
                drop(inbox);
                if wake {
                    (self.shared.wake)();
                }
                return r;
            }
            let now = Instant::now();
            let until = *deadline.get_or_insert(now + self.shared.max_block);
            if now >= until {
                return Err(Refused::Timeout(self.shared.max_block));
            }
            if self.claim_wake(&mut inbox, true) {
                drop(inbox);
                (self.shared.wake)();
                inbox = self.shared.lock();
                continue;
            }
            inbox.parked += 1;
            inbox = self
                .shared
                .space
                .wait_timeout(inbox, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            inbox.parked -= 1;
        }
    }

    fn poll_stage(
        &self,
        record: &mut Option<Record>,
        callback: &mut Option<Callback>,
        waker: Option<&Waker>,
    ) -> Poll<Result<Option<Delivery>, Refused>> {
        let mut inbox = self.shared.lock();
        match self.stage_locked(&mut inbox, record, callback) {
            Poll::Ready(r) => {
                let wake = r.is_ok() && self.claim_wake(&mut inbox, false);
                drop(inbox);
                if wake {
                    (self.shared.wake)();
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                if let Some(w) = waker {
                    if !inbox.space_wakers.iter().any(|x| x.will_wake(w)) {
                        inbox.space_wakers.push(w.clone());
                    }
                }
                let wake = self.claim_wake(&mut inbox, true);
                drop(inbox);
                if wake {
                    (self.shared.wake)();
                }
                Poll::Pending
            }
        }
    }

    /// Whether this send must wake the driver (then the wake is marked out): never while
    /// one is out; after staging a record (`full` false) unless the driver planned its
    /// next take and less than a batch's worth is staged; on a full queue (`full`) only
    /// if the driver planned, since it would otherwise come by itself.
    fn claim_wake(&self, inbox: &mut Inbox, full: bool) -> bool {
        let needed = if full {
            inbox.planned
        } else {
            !inbox.planned || inbox.staged_bytes >= self.shared.wake_bytes
        };
        if inbox.wake_pending || !needed {
            return false;
        }
        inbox.wake_pending = true;
        true
    }

    /// Moves the record into the queue if it fits (or the queue is empty); its outcome
    /// goes to `callback` if there is one, else to the returned handle.
    fn stage_locked(
        &self,
        inbox: &mut Inbox,
        record: &mut Option<Record>,
        callback: &mut Option<Callback>,
    ) -> Poll<Result<Option<Delivery>, Refused>> {
        if inbox.closed {
            return Poll::Ready(Err(Refused::Closed));
        }
        let Some(size) = record.as_ref().map(Record::size) else {
            return Poll::Ready(Err(Refused::Closed));
        };
        if inbox.bytes > 0 && inbox.bytes + size > self.shared.limit {
            return Poll::Pending;
        }
        let Some(record) = record.take() else {
            return Poll::Ready(Err(Refused::Closed));
        };
        let (sink, delivery) = match callback.take() {
            Some(cb) => (Sink::callback(cb), None),
            None => {
                let (slots, used) = match inbox.chunk.take() {
                    Some((s, used)) if used < SLOTS_PER_CHUNK => (s, used),
                    _ => (Arc::new(Slots::new()), 0),
                };
                let sink = Sink::slot(slots.clone(), used);
                let delivery = Delivery::new(slots.clone(), used);
                inbox.chunk = Some((slots, used + 1));
                (sink, Some(delivery))
            }
        };
        if inbox.staged.is_empty() {
            inbox.first_at = Some(Instant::now());
        }
        inbox.bytes += size;
        inbox.staged_bytes += size;
        inbox.seq += 1;
        inbox.staged.push(Staged { record, sink, size });
        Poll::Ready(Ok(delivery))
    }
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inbox = self.shared.lock();
        f.debug_struct("Outbox")
            .field("key", &self.key)
            .field("staged", &inbox.staged.len())
            .field("bytes", &inbox.bytes)
            .field("planned", &inbox.planned)
            .field("closed", &inbox.closed)
            .finish_non_exhaustive()
    }
}

/// The staging bound for these producer settings.
fn staging_limit(buffer_memory: usize, batch_size: usize) -> usize {
    (buffer_memory / 4).clamp(64 << 10, 8 << 20).max(batch_size)
}
