//! [`ProducerCore`]: the driver side of one producer. It owns the core machine's id,
//! appends staged records in one `Client::command` per pump, keeps those the core
//! refuses for now (`WouldBlock`) in order until `max.block.ms`, and completes every
//! record's [`Sink`] from the one report per batch.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Instant;

use kafka_core::client::{Client, OpContext, OpId, OpRef};
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{
    Blocked, FlushToken, ProduceError, Producer, ProducerMetrics, ProducerRecord, Report,
    SendError, TxnError, TxnOffset, TxnOp,
};
use kafka_core::protocol::KafkaCode;
use kafka_core::record::NewHeader;

use super::delivery::Sink;
use super::{Outbox, ProducerKey, RecordMetadata, Shared, Staged};
use crate::chan::Sender;

/// How many emptied waiter lists a producer keeps for its next batches.
const SPARE_WAITER_LISTS: usize = 8;

/// A record the core has appended, waiting for its batch's report.
struct Waiter {
    sink: Sink,
    index: u32,
    timestamp: i64,
}

/// Records taken from the staging queue at once: the first `end` records taken (in all)
/// fail at `deadline` if the core still lacks their topic's metadata; `sent` is when the
/// first of them was staged (batches they open linger from then).
struct Take {
    end: u64,
    deadline: Instant,
    sent: Instant,
}

/// A hasher for batch ids (sequential `u64`s from the core, not attacker-chosen):
/// Fibonacci hashing, much cheaper than SipHash on the per-record path.
#[derive(Default)]
struct BatchIdHasher(u64);

impl Hasher for BatchIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type BatchMap<V> = HashMap<u64, V, BuildHasherDefault<BatchIdHasher>>;

/// A `flush` call: done once the records staged before it are in the core and every
/// batch opened before that is reported.
struct FlushWaiter {
    until: u64,
    token: Option<FlushToken>,
    done: Sender<()>,
}

/// A transactional call of the application's, run on the driver in order with the
/// records staged before it.
#[derive(Debug)]
pub enum TxnCall {
    /// `init_transactions`.
    Init,
    /// `begin_transaction`.
    Begin,
    /// `send_offsets_to_transaction`.
    SendOffsets(Vec<TxnOffset>, GroupMetadata),
    /// `commit_transaction`: after every record staged before it is in the core.
    Commit,
    /// `abort_transaction`: records staged but not yet in the core are dropped
    /// ([`ProduceError::Aborted`]).
    Abort,
}

impl TxnCall {
    fn op(&self) -> Option<TxnOp> {
        match self {
            TxnCall::Init => Some(TxnOp::Init),
            TxnCall::Begin => None,
            TxnCall::SendOffsets(..) => Some(TxnOp::SendOffsets),
            TxnCall::Commit => Some(TxnOp::Commit),
            TxnCall::Abort => Some(TxnOp::Abort),
        }
    }

    fn run(self, p: &mut Producer, cx: &mut OpContext<'_>) -> Result<(), TxnError> {
        match self {
            TxnCall::Init => p.init_transactions(),
            TxnCall::Begin => p.begin_transaction(cx),
            TxnCall::SendOffsets(offsets, group) => p.send_offsets_to_transaction(offsets, &group),
            TxnCall::Commit => p.commit_transaction(),
            TxnCall::Abort => p.abort_transaction(),
        }
    }
}

/// Where a transactional call's result goes.
pub type TxnDone = Sender<Result<(), TxnError>>;

/// The driver side of one producer (kept by the [`Hub`](crate::Hub)).
pub struct ProducerCore {
    key: ProducerKey,
    id: OpId<Producer>,
    shared: Arc<Shared>,
    backlog: VecDeque<Staged>,
    /// The deadlines of the backlog, per take from the staging queue.
    takes: VecDeque<Take>,
    /// Records taken into the backlog so far.
    received: u64,
    /// Waiters by batch id, in index order (a batch's records are appended in order).
    waiters: BatchMap<Vec<Waiter>>,
    /// Emptied waiter lists of reported batches, kept (at most [`SPARE_WAITER_LISTS`])
    /// for the next batches: a batch of small records has thousands of waiters, and a
    /// fresh list would regrow (copy) and fault in its memory each time.
    spare_waiters: Vec<Vec<Waiter>>,
    /// Records that left the backlog so far (appended or failed).
    taken: u64,
    flushes: Vec<FlushWaiter>,
    /// Close was asked; the core's close is sent once the backlog is empty.
    closing: bool,
    close_sent: bool,
    closes: Vec<Sender<ProducerMetrics>>,
    /// The machine finished, with these final counters.
    finished: Option<ProducerMetrics>,
    /// Why the backlog's head waits (for logs and tests).
    blocked: Option<Blocked>,
    /// When the driver takes the staging queue next without a wake (the earliest linger
    /// deadline of the open batches, as planned at the last take).
    planned: Option<Instant>,
    reports: Vec<Report>,
    /// Transactional calls not started yet, in order.
    txn_calls: VecDeque<(TxnCall, TxnDone)>,
    /// The call the core runs, and who waits for its result (a call repeated after a
    /// caller's timeout joins the same wait).
    txn_waiting: Option<(TxnOp, Vec<TxnDone>)>,
    /// The result of the last call when every caller had given up on it (timed out):
    /// the next call answers with it if it repeats that call (Java's retried
    /// `commitTransaction` after a timeout), any other call drops it.
    txn_unclaimed: Option<(TxnOp, Result<(), TxnError>)>,
}

impl ProducerCore {
    /// Starts `producer` in `core` for the records of `outbox`.
    pub fn start(core: &mut Client, now: Instant, producer: Producer, outbox: &Outbox) -> Self {
        let id = core.start_op(now, producer);
        ProducerCore {
            key: outbox.key(),
            id,
            shared: outbox.shared().clone(),
            backlog: VecDeque::new(),
            takes: VecDeque::new(),
            received: 0,
            waiters: BatchMap::default(),
            spare_waiters: Vec::new(),
            taken: 0,
            flushes: Vec::new(),
            closing: false,
            close_sent: false,
            closes: Vec::new(),
            finished: None,
            blocked: None,
            planned: None,
            reports: Vec::new(),
            txn_calls: VecDeque::new(),
            txn_waiting: None,
            txn_unclaimed: None,
        }
    }

    /// Runs a transactional call once the records staged before it are in the core;
    /// `done` gets its result.
    pub fn transaction(&mut self, core: &mut Client, now: Instant, call: TxnCall, done: TxnDone) {
        if self.finished.is_some() {
            let _ = done.push(Err(TxnError::Closed));
            return;
        }
        self.txn_calls.push_back((call, done));
        self.pump(core, now);
    }

    /// Starts the calls that may start and hands out results (inside the core command).
    fn run_transactions(&mut self, p: &mut Producer, cx: &mut OpContext<'_>) {
        loop {
            if let Some((op, r)) = p.take_transaction_result() {
                if let Some((_, waiters)) = self.txn_waiting.take_if(|(w, _)| *w == op) {
                    let mut claimed = false;
                    for w in waiters {
                        claimed |= w.push(r.clone()).is_ok();
                    }
                    if !claimed {
                        self.txn_unclaimed = Some((op, r));
                    }
                }
                continue;
            }
            let Some((call, _)) = self.txn_calls.front() else {
                return;
            };
            let op = call.op();
            if let (Some((waiting, waiters)), Some(op)) = (&mut self.txn_waiting, op) {
                if *waiting == op {
                    let (_, done) = self.txn_calls.pop_front().expect("front");
                    waiters.push(done);
                    continue;
                }
            }
            if self.txn_waiting.is_some() {
                return;
            }
            if matches!(call, TxnCall::Abort) {
                self.fail_backlog_with(ProduceError::Aborted);
            } else if !self.backlog.is_empty() {
                // Records staged before the call go in first.
                return;
            }
            let (call, done) = self.txn_calls.pop_front().expect("front");
            if let Some((_, r)) = self.txn_unclaimed.take().filter(|(u, _)| Some(*u) == op) {
                // Repeated after the caller's timeout, once the first one had ended.
                let _ = done.push(r);
                continue;
            }
            match (call.run(p, cx), op) {
                (Ok(()), Some(op)) => self.txn_waiting = Some((op, vec![done])),
                (r, _) => {
                    let _ = done.push(r);
                }
            }
        }
    }

    /// The producer's key.
    pub fn key(&self) -> ProducerKey {
        self.key
    }

    /// The core machine's id.
    pub fn id(&self) -> OpId<Producer> {
        self.id
    }

    /// Whether `op` is this producer's machine.
    pub fn is(&self, op: OpRef) -> bool {
        self.id == op
    }

    /// Whether the machine finished (every record reported).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// The final counters, once finished.
    pub fn finished_metrics(&self) -> Option<ProducerMetrics> {
        self.finished.clone()
    }

    /// What the head of the backlog waits for, if the core refused it for now.
    pub fn blocked(&self) -> Option<Blocked> {
        self.blocked
    }

    /// When the driver must [`pump`](Self::pump) this producer without being asked: the
    /// head of the backlog fails if the core still lacks its topic's metadata, or the
    /// planned take of the staging queue (senders do not wake the driver meanwhile).
    pub fn deadline(&self) -> Option<Instant> {
        let metadata = if self.blocked == Some(Blocked::Metadata) && !self.backlog.is_empty() {
            self.head_take().map(|t| t.deadline)
        } else {
            None
        };
        metadata.into_iter().chain(self.planned).min()
    }

    /// The take the backlog's head came in.
    fn head_take(&self) -> Option<&Take> {
        let i = self.takes.partition_point(|t| t.end <= self.taken);
        self.takes.get(i)
    }

    /// Takes what is staged, appends as much as the core takes, completes reported
    /// batches and finished flushes (on a wake, a `Notify` of the machine, a deadline).
    pub fn pump(&mut self, core: &mut Client, now: Instant) {
        self.take_staged(now);
        if self.finished.is_some() {
            self.fail_backlog();
            return;
        }
        let mut freed = 0;
        let mut done_flushes = Vec::new();
        let mut reports = std::mem::take(&mut self.reports);
        let ran = core.command(now, self.id, |p, cx| {
            self.blocked = None;
            while let Some(head) = self.backlog.front() {
                let (sent_at, expired) = self
                    .head_take()
                    .map_or((now, false), |t| (t.sent, now >= t.deadline));
                let r = &head.record;
                let headers: Vec<NewHeader<'_>> = r
                    .headers
                    .iter()
                    .map(|(k, v)| NewHeader {
                        key: k,
                        value: v.as_deref(),
                    })
                    .collect();
                let record = ProducerRecord {
                    topic: &r.topic,
                    partition: r.partition,
                    key: r.key.as_deref(),
                    value: r.value.as_deref(),
                    headers: &headers,
                    timestamp: r.timestamp,
                };
                let sent = p.send_at(cx, &record, sent_at);
                // Waiting for room in `buffer.memory` never expires here: the buffer
                // drains as batches end (delivered, failed, or `delivery.timeout.ms`),
                // and senders time out on the full staging queue meanwhile.
                match sent {
                    Err(SendError::WouldBlock(why)) if !expired || why == Blocked::BufferFull => {
                        self.blocked = Some(why);
                        break;
                    }
                    _ => {}
                }
                let Some(staged) = self.backlog.pop_front() else {
                    break;
                };
                self.taken += 1;
                freed += staged.size;
                match sent {
                    Ok(a) => {
                        let spare = &mut self.spare_waiters;
                        self.waiters
                            .entry(a.batch.0)
                            .or_insert_with(|| spare.pop().unwrap_or_default())
                            .push(Waiter {
                                sink: staged.sink,
                                index: a.index,
                                timestamp: a.timestamp,
                            })
                    }
                    Err(e) => {
                        if matches!(e, SendError::WouldBlock(_)) {
                            p.gave_up(cx, &e);
                        }
                        staged.sink.complete(Err(refusal(e)));
                    }
                }
            }
            while self.takes.front().is_some_and(|t| t.end <= self.taken) {
                self.takes.pop_front();
            }
            if self.flushes.iter().any(|f| f.token.is_none()) {
                // Seal what is open, so the backlog behind a full buffer moves too.
                let token = p.flush();
                for f in &mut self.flushes {
                    if f.token.is_none() && self.taken >= f.until {
                        f.token = Some(token);
                    }
                }
            }
            if !self.txn_calls.is_empty() || self.txn_waiting.is_some() {
                self.run_transactions(p, cx);
            }
            if self.closing && !self.close_sent && self.backlog.is_empty() {
                self.close_sent = true;
                p.close();
            }
            while let Some(report) = p.take_report() {
                reports.push(report);
            }
            let mut i = 0;
            while i < self.flushes.len() {
                if self.flushes[i].token.is_some_and(|t| p.is_flushed(t)) {
                    done_flushes.push(self.flushes.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            // The next take is due when the first open batch is (records staged until
            // then join the batches they would have joined at once); nothing is
            // planned while the core refuses the backlog or a close is under way.
            if self.backlog.is_empty() && !self.closing {
                p.next_linger_deadline(now)
            } else {
                None
            }
        });
        for report in reports.drain(..) {
            self.complete(report);
        }
        self.reports = reports;
        for f in done_flushes {
            let _ = f.done.push(());
        }
        self.planned = ran.flatten();
        self.shared.settle(freed, self.planned.is_some());
        if ran.is_none() {
            self.finish(core);
        }
    }

    /// Registers a flush of everything staged before the caller's `until` (see
    /// [`Outbox::staged`]); `done` gets `()` when it is done.
    pub fn flush(&mut self, core: &mut Client, now: Instant, until: u64, done: Sender<()>) {
        if self.finished.is_some() {
            let _ = done.push(());
            return;
        }
        self.flushes.push(FlushWaiter {
            until,
            token: None,
            done,
        });
        self.pump(core, now);
    }

    /// Closes: no more sends; what is staged is still appended, then the machine
    /// finishes once every record is reported and `done` gets the final counters.
    pub fn close(&mut self, core: &mut Client, now: Instant, done: Sender<ProducerMetrics>) {
        self.shared.close();
        if let Some(m) = &self.finished {
            let _ = done.push(m.clone());
            return;
        }
        self.closing = true;
        self.closes.push(done);
        self.pump(core, now);
    }

    /// Gives up on everything unreported: the backlog fails
    /// [`ProduceError::Closed`] (not delivered), the core reports the rest `Closed`.
    pub fn abort(&mut self, core: &mut Client, now: Instant) {
        self.shared.close();
        self.take_staged(now);
        self.fail_backlog();
        self.closing = true;
        self.close_sent = true;
        let ran = core.command(now, self.id, |p, cx| p.abort(cx));
        if ran.is_none() {
            self.finish(core);
        } else {
            self.pump(core, now);
        }
    }

    /// The core's counters now (the final ones once finished).
    pub fn metrics(&mut self, core: &mut Client, now: Instant) -> ProducerMetrics {
        if let Some(m) = &self.finished {
            return m.clone();
        }
        core.command(now, self.id, |p, _| p.metrics())
            .unwrap_or_default()
    }

    /// The machine finished (`Event::OperationDone`): its counters go to the closers;
    /// anything still waiting fails.
    pub fn finish(&mut self, core: &mut Client) {
        if self.finished.is_some() {
            return;
        }
        self.shared.close();
        let metrics = core.take_op_output(self.id).unwrap_or_default();
        self.fail_backlog();
        for (_, waiters) in self.waiters.drain() {
            for w in waiters {
                w.sink.complete(Err(ProduceError::Closed {
                    possibly_delivered: true,
                }));
            }
        }
        for f in self.flushes.drain(..) {
            let _ = f.done.push(());
        }
        for c in self.closes.drain(..) {
            let _ = c.push(metrics.clone());
        }
        let waiting = self.txn_waiting.take().into_iter().flat_map(|(_, w)| w);
        for done in waiting.chain(self.txn_calls.drain(..).map(|(_, d)| d)) {
            let _ = done.push(Err(TxnError::Closed));
        }
        self.finished = Some(metrics);
    }

    fn take_staged(&mut self, now: Instant) {
        self.planned = None;
        let mut inbox = self.shared.lock();
        inbox.wake_pending = false;
        // Until the driver plans again, the next send wakes it.
        inbox.planned = false;
        let n = inbox.staged.len() as u64;
        if n == 0 {
            return;
        }
        let sent = inbox.first_at.take().map_or(now, |t| t.min(now));
        inbox.staged_bytes = 0;
        if self.backlog.is_empty() {
            // Swap buffers: no record is moved, and both allocations are reused.
            let spare = Vec::from(std::mem::take(&mut self.backlog));
            self.backlog = VecDeque::from(std::mem::replace(&mut inbox.staged, spare));
        } else {
            self.backlog.extend(inbox.staged.drain(..));
        }
        drop(inbox);
        self.received += n;
        self.takes.push_back(Take {
            end: self.received,
            deadline: now + self.shared.max_block,
            sent,
        });
    }

    fn fail_backlog(&mut self) {
        self.fail_backlog_with(ProduceError::Closed {
            possibly_delivered: false,
        });
    }

    fn fail_backlog_with(&mut self, error: ProduceError) {
        let mut freed = 0;
        for staged in self.backlog.drain(..) {
            self.taken += 1;
            freed += staged.size;
            staged.sink.complete(Err(error.clone()));
        }
        self.takes.clear();
        self.shared.release(freed);
    }

    /// Completes the records a report covers: the whole batch, or the records of one
    /// piece of a batch the core split ([`Report::indexes`]).
    fn complete(&mut self, report: Report) {
        let Some(waiting) = self.waiters.get_mut(&report.batch.0) else {
            return;
        };
        let covered = report.indexes();
        let start = waiting.partition_point(|w| w.index < covered.start);
        let end = waiting.partition_point(|w| w.index < covered.end);
        let mut waiters: Vec<Waiter> = if start == 0 && end == waiting.len() {
            // The whole batch (the usual case): no copy.
            self.waiters.remove(&report.batch.0).unwrap_or_default()
        } else {
            waiting.drain(start..end).collect()
        };
        for w in waiters.drain(..) {
            let outcome = match &report.outcome {
                Ok(d) => Ok(RecordMetadata {
                    topic: report.topic.clone(),
                    partition: report.partition,
                    offset: d.offset(w.index),
                    timestamp: d.log_append_time.unwrap_or(w.timestamp),
                }),
                Err(e) => Err(e.clone()),
            };
            w.sink.complete(outcome);
        }
        if self.spare_waiters.len() < SPARE_WAITER_LISTS {
            self.spare_waiters.push(waiters);
        }
    }
}

impl std::fmt::Debug for ProducerCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerCore")
            .field("key", &self.key)
            .field("backlog", &self.backlog.len())
            .field("batches_waiting", &self.waiters.len())
            .field("blocked", &self.blocked)
            .field("finished", &self.finished.is_some())
            .finish_non_exhaustive()
    }
}

/// A send the core refused for good, as the record's delivery outcome (Java fails the
/// send's future the same way).
fn refusal(e: SendError) -> ProduceError {
    match e {
        SendError::Fatal(e) => e,
        SendError::Closed => ProduceError::Closed {
            possibly_delivered: false,
        },
        SendError::WouldBlock(_) => ProduceError::TimedOut {
            possibly_delivered: false,
            last_cause: None,
        },
        SendError::Topic { topic, code } => ProduceError::Broker {
            code,
            message: Some(format!("metadata of topic {topic}")),
            record_errors: Vec::new(),
        },
        SendError::UnknownPartition { .. } => ProduceError::Broker {
            code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
            message: Some(e.to_string()),
            record_errors: Vec::new(),
        },
        SendError::RecordTooLarge { .. } => ProduceError::Broker {
            code: KafkaCode::MESSAGE_TOO_LARGE,
            message: Some(e.to_string()),
            record_errors: Vec::new(),
        },
        other => ProduceError::Request(other.to_string()),
    }
}
