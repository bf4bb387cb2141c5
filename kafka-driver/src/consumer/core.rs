//! [`ConsumerCore`]: the driver side of one consumer. It owns the core machine's id,
//! moves records from the core into the [`Mailbox`](super::Mailbox) queue (one
//! `take_records` per `Client::command`, only while the queue is below
//! `max.poll.records`), applies control calls in order and answers position queries.
//! Generic over the machine ([`FetchMachine`]): the assign-mode [`Consumer`] or the
//! [`GroupConsumer`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use kafka_core::client::{Client, OpContext, OpId, OpRef, Operation};
use kafka_core::consumer::{ConsumeError, Consumer, ConsumerMetrics, ConsumerRecord};
use kafka_core::group::GroupConsumer;

use super::{in_list, is, ConsumerKey, Control, Mailbox, Shared, TopicPartition};

/// What a close waits for: the final counters.
pub type CloseAnswer = Box<dyn FnOnce(ConsumerMetrics) + Send>;

/// A core machine a [`ConsumerCore`] feeds a mailbox from.
pub trait FetchMachine: Operation<Output = ConsumerMetrics> {
    /// Records for the application (no other effect; see `GroupConsumer::take_records`).
    fn take_records(&mut self, out: &mut Vec<ConsumerRecord>);
    /// The next partition error.
    fn take_error(&mut self) -> Option<ConsumeError>;
    /// Consumes exactly these partitions (assign mode only; a group ignores it).
    fn assign(&mut self, cx: &mut OpContext<'_>, partitions: &[TopicPartition]);
    /// Moves a position.
    fn seek(&mut self, topic: &str, partition: i32, offset: i64, leader_epoch: Option<i32>);
    /// Moves a position back to records handed out but not consumed (keeps its epoch).
    fn rewind(&mut self, topic: &str, partition: i32, offset: i64);
    /// Moves positions to the log start.
    fn seek_to_beginning(&mut self, partitions: &[TopicPartition]);
    /// Moves positions to the log end.
    fn seek_to_end(&mut self, partitions: &[TopicPartition]);
    /// Stops handing out these partitions.
    fn pause(&mut self, partitions: &[TopicPartition]);
    /// Hands them out again.
    fn resume(&mut self, partitions: &[TopicPartition]);
    /// The machine's position of a partition.
    fn position(&self, topic: &str, partition: i32) -> Option<i64>;
    /// Its counters.
    fn metrics(&self) -> ConsumerMetrics;
    /// Starts closing.
    fn close(&mut self, cx: &mut OpContext<'_>);
}

fn names(partitions: &[TopicPartition]) -> impl Iterator<Item = (&str, i32)> {
    partitions.iter().map(|(t, p)| (t.as_str(), *p))
}

/// The [`FetchMachine`] methods both machines have under the same names.
macro_rules! fetch_machine_common {
    ($m:ident) => {
        fn take_error(&mut self) -> Option<ConsumeError> {
            $m::take_error(self)
        }
        fn seek(&mut self, topic: &str, partition: i32, offset: i64, leader_epoch: Option<i32>) {
            $m::seek_with_epoch(self, topic, partition, offset, leader_epoch);
        }
        fn rewind(&mut self, topic: &str, partition: i32, offset: i64) {
            $m::rewind(self, topic, partition, offset);
        }
        fn seek_to_beginning(&mut self, partitions: &[TopicPartition]) {
            $m::seek_to_beginning(self, names(partitions));
        }
        fn seek_to_end(&mut self, partitions: &[TopicPartition]) {
            $m::seek_to_end(self, names(partitions));
        }
        fn pause(&mut self, partitions: &[TopicPartition]) {
            $m::pause(self, names(partitions));
        }
        fn resume(&mut self, partitions: &[TopicPartition]) {
            $m::resume(self, names(partitions));
        }
        fn position(&self, topic: &str, partition: i32) -> Option<i64> {
            $m::position(self, topic, partition)
        }
        fn metrics(&self) -> ConsumerMetrics {
            $m::metrics(self)
        }
        fn close(&mut self, cx: &mut OpContext<'_>) {
            $m::close(self, cx);
        }
    };
}

impl FetchMachine for Consumer {
    fn take_records(&mut self, out: &mut Vec<ConsumerRecord>) {
        self.poll(out);
    }
    fn assign(&mut self, cx: &mut OpContext<'_>, partitions: &[TopicPartition]) {
        Consumer::assign(self, cx, names(partitions));
    }
    fetch_machine_common!(Consumer);
}

impl FetchMachine for GroupConsumer {
    fn take_records(&mut self, out: &mut Vec<ConsumerRecord>) {
        GroupConsumer::take_records(self, out);
    }
    fn assign(&mut self, _: &mut OpContext<'_>, _: &[TopicPartition]) {}
    fetch_machine_common!(GroupConsumer);
}

/// The driver side of one consumer (kept by the [`Hub`](crate::Hub)).
pub struct ConsumerCore<M = Consumer> {
    key: ConsumerKey,
    id: OpId<M>,
    shared: Arc<Shared>,
    /// Records taken from the core and not yet published (a control call is on its way).
    held: VecDeque<ConsumerRecord>,
    held_errors: Vec<ConsumeError>,
    closes: Vec<CloseAnswer>,
    finished: Option<ConsumerMetrics>,
}

impl<M: FetchMachine> ConsumerCore<M> {
    /// Starts `consumer` in `core` for the application side `mailbox`.
    pub fn start(core: &mut Client, now: Instant, consumer: M, mailbox: &Mailbox) -> Self {
        let id = core.start_op(now, consumer);
        ConsumerCore {
            key: mailbox.key(),
            id,
            shared: mailbox.shared().clone(),
            held: VecDeque::new(),
            held_errors: Vec::new(),
            closes: Vec::new(),
            finished: None,
        }
    }

    /// The consumer's key.
    pub fn key(&self) -> ConsumerKey {
        self.key
    }

    /// The core machine's id.
    pub fn id(&self) -> OpId<M> {
        self.id
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Whether `op` is this consumer's machine.
    pub fn is(&self, op: OpRef) -> bool {
        self.id == op
    }

    /// The final counters, once the machine finished.
    pub fn finished_metrics(&self) -> Option<ConsumerMetrics> {
        self.finished.clone()
    }

    /// Moves what the core has for the application into the queue, if it has room (on
    /// the machine's `Notify`, and when a taker drained the queue below its low-water
    /// mark).
    pub fn pump(&mut self, core: &mut Client, now: Instant) {
        let room = {
            let mut queue = self.shared.lock();
            queue.wake_pending = false;
            queue.controls_pending == 0
                && !queue.closed
                && queue.records.len() < self.shared.max_poll
        };
        if room && self.finished.is_none() && self.held.is_empty() {
            let mut out = Vec::new();
            let errors = &mut self.held_errors;
            core.command(now, self.id, |c, _| {
                c.take_records(&mut out);
                while let Some(e) = c.take_error() {
                    errors.push(e);
                }
            });
            self.held.extend(out);
        }
        self.publish();
    }

    /// Applies a control call (in submission order), then publishes what it held back.
    pub(crate) fn control(&mut self, core: &mut Client, now: Instant, control: Control) {
        let held = &mut self.held;
        core.command(now, self.id, |c, cx| match control {
            Control::Assign(parts) => {
                held.retain(|r| in_list(r, &parts));
                c.assign(cx, &parts);
            }
            Control::Seek((t, p), offset, epoch) => {
                held.retain(|r| !is(r, &t, p));
                c.seek(&t, p, offset, epoch);
            }
            Control::SeekToBeginning(parts) => {
                held.retain(|r| !in_list(r, &parts));
                c.seek_to_beginning(&parts);
            }
            Control::SeekToEnd(parts) => {
                held.retain(|r| !in_list(r, &parts));
                c.seek_to_end(&parts);
            }
            Control::Pause(parts, mut rewinds) => {
                // Held records come after the queued ones: the queue's first offset wins.
                held.retain(|r| {
                    if !in_list(r, &parts) {
                        return true;
                    }
                    if !rewinds.iter().any(|((t, p), _)| is(r, t, *p)) {
                        rewinds.push(((r.topic.to_string(), r.partition), r.offset));
                    }
                    false
                });
                for ((t, p), offset) in &rewinds {
                    c.rewind(t, *p, *offset);
                }
                c.pause(&parts);
            }
            Control::Resume(parts) => c.resume(&parts),
        });
        {
            let mut queue = self.shared.lock();
            queue.controls_pending = queue.controls_pending.saturating_sub(1);
        }
        self.pump(core, now);
    }

    /// The next offset the application gets from a partition: the first record of it
    /// still queued or held, else the core's position.
    pub fn position(
        &mut self,
        core: &mut Client,
        now: Instant,
        topic: &str,
        partition: i32,
    ) -> Option<i64> {
        let queued = {
            let queue = self.shared.lock();
            queue
                .records
                .iter()
                .find(|r| is(r, topic, partition))
                .map(|r| r.offset)
        };
        queued
            .or_else(|| {
                self.held
                    .iter()
                    .find(|r| is(r, topic, partition))
                    .map(|r| r.offset)
            })
            .or_else(|| {
                core.command(now, self.id, |c, _| c.position(topic, partition))
                    .flatten()
            })
    }

    /// The core's counters now (the final ones once finished).
    pub fn metrics(&mut self, core: &mut Client, now: Instant) -> ConsumerMetrics {
        if let Some(m) = &self.finished {
            return m.clone();
        }
        core.command(now, self.id, |c, _| c.metrics())
            .unwrap_or_default()
    }

    /// Closes the core consumer; `done` gets the final counters once it finished.
    pub fn close(&mut self, core: &mut Client, now: Instant, done: CloseAnswer) {
        if let Some(m) = &self.finished {
            done(m.clone());
            return;
        }
        self.closes.push(done);
        let ran = core.command(now, self.id, |c, cx| c.close(cx));
        if ran.is_none() {
            self.finish(core);
        }
    }

    /// The machine finished (`Event::OperationDone`): the queue closes, closers get the
    /// final counters.
    pub fn finish(&mut self, core: &mut Client) {
        if self.finished.is_some() {
            return;
        }
        let metrics = core.take_op_output(self.id).unwrap_or_default();
        self.held.clear();
        let mut queue = self.shared.lock();
        queue.closed = true;
        queue.records.clear();
        self.shared.wake_takers(queue);
        for c in self.closes.drain(..) {
            c(metrics.clone());
        }
        self.finished = Some(metrics);
    }

    /// Drops the queued and held records of these partitions (revoked or lost).
    pub(crate) fn drop_partitions(&mut self, partitions: &[kafka_core::group::TopicPartition]) {
        let gone = |r: &ConsumerRecord| {
            partitions
                .iter()
                .any(|(t, p)| r.partition == *p && r.topic == *t)
        };
        self.held.retain(|r| !gone(r));
        self.shared.lock().records.retain(|r| !gone(r));
    }

    /// Moves held records and errors into the queue unless a control call is on its way.
    fn publish(&mut self) {
        if self.held.is_empty() && self.held_errors.is_empty() {
            return;
        }
        let mut queue = self.shared.lock();
        if queue.controls_pending > 0 || queue.closed {
            return;
        }
        queue.errors.extend(self.held_errors.drain(..));
        if queue.records.is_empty() {
            // Swap buffers: no record is moved.
            std::mem::swap(&mut queue.records, &mut self.held);
        } else {
            queue.records.extend(self.held.drain(..));
        }
        self.shared.wake_takers(queue);
    }
}

/// What the [`Hub`](crate::Hub) asks of any consumer's driver side (an assign-mode
/// [`ConsumerCore`] or a [`GroupCore`](crate::group::GroupCore)).
pub(crate) trait ConsumerSide: Send {
    fn key(&self) -> ConsumerKey;
    fn is(&self, op: OpRef) -> bool;
    fn finished_metrics(&self) -> Option<ConsumerMetrics>;
    fn pump(&mut self, core: &mut Client, now: Instant);
    fn finish(&mut self, core: &mut Client);
    fn control(&mut self, core: &mut Client, now: Instant, control: Control);
    fn position(&mut self, core: &mut Client, now: Instant, topic: &str, p: i32) -> Option<i64>;
    fn metrics(&mut self, core: &mut Client, now: Instant) -> ConsumerMetrics;
    fn close(&mut self, core: &mut Client, now: Instant, done: CloseAnswer);
    /// The group side, for group commands.
    fn group(&mut self) -> Option<&mut crate::group::GroupCore> {
        None
    }
}

impl ConsumerSide for ConsumerCore<Consumer> {
    fn key(&self) -> ConsumerKey {
        self.key
    }
    fn is(&self, op: OpRef) -> bool {
        ConsumerCore::is(self, op)
    }
    fn finished_metrics(&self) -> Option<ConsumerMetrics> {
        ConsumerCore::finished_metrics(self)
    }
    fn pump(&mut self, core: &mut Client, now: Instant) {
        ConsumerCore::pump(self, core, now);
    }
    fn finish(&mut self, core: &mut Client) {
        ConsumerCore::finish(self, core);
    }
    fn control(&mut self, core: &mut Client, now: Instant, control: Control) {
        ConsumerCore::control(self, core, now, control);
    }
    fn position(&mut self, core: &mut Client, now: Instant, topic: &str, p: i32) -> Option<i64> {
        ConsumerCore::position(self, core, now, topic, p)
    }
    fn metrics(&mut self, core: &mut Client, now: Instant) -> ConsumerMetrics {
        ConsumerCore::metrics(self, core, now)
    }
    fn close(&mut self, core: &mut Client, now: Instant, done: CloseAnswer) {
        ConsumerCore::close(self, core, now, done);
    }
}

impl<M> std::fmt::Debug for ConsumerCore<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerCore")
            .field("key", &self.key)
            .field("held", &self.held.len())
            .field("finished", &self.finished.is_some())
            .finish_non_exhaustive()
    }
}
