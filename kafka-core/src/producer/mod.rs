//! The producer: a long-lived machine run by the [`Client`](crate::client::Client) that
//! batches records per partition, sends them with Kafka's idempotence guarantees, and
//! reports how every record ended.
//!
//! ```text
//! send ──► partitioner ──► accumulator (v2 bytes, per partition) ──seal──► queue
//!                                                                   │
//!   reports ◄── delivery ◄── sender (Produce per broker) ◄──────────┘
//!                              ▲
//!                        idempotence (producer id, epoch, sequences)
//! ```
//!
//! Files: `delivery` (records in, reports out), `partitioner`, `accumulator`, `sender`,
//! `idempotence`, `metrics`.
//!
//! Driving it: start it with [`Client::start_op`](crate::client::Client::start_op), then
//! give it records and take reports through
//! [`Client::command`](crate::client::Client::command):
//!
//! ```no_run
//! # use std::time::Instant;
//! # use kafka_core::client::{Client, Event};
//! # use kafka_core::config::ClientConfig;
//! # use kafka_core::producer::{Producer, ProducerRecord};
//! # let config = ClientConfig::builder().bootstrap_servers("localhost:9092").build().unwrap();
//! # let mut client = Client::new(config.clone(), [7; 32]).unwrap();
//! let now = Instant::now();
//! let producer = client.start_op(now, Producer::new(&config).unwrap());
//! let sent = client.command(now, producer, |p, cx| {
//!     p.send(cx, &ProducerRecord::new("events", b"hello").key(b"k1"))
//! });
//! // ... drive the client's I/O; on `Event::Notify(r)` with `producer == r`:
//! client.command(now, producer, |p, _| {
//!     while let Some(report) = p.take_report() {
//!         println!("{:?}", report.outcome);
//!     }
//! });
//! ```
//!
//! Guarantees, with idempotence (the default): every record ends in exactly one
//! [`Report`] (delivered, failed, or timed out saying whether it may have been written);
//! a partition's records are written in send order and never twice, under retries,
//! leader changes and lost answers.

mod accumulator;
mod delivery;
mod idempotence;
mod metrics;
mod partitioner;
mod sender;
mod txn;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Instant;

pub use delivery::{
    Appended, BatchId, Blocked, Delivered, ProduceError, ProducerRecord, Report, SendError,
};
pub use metrics::ProducerMetrics;
pub use partitioner::{murmur2, partition_for_key, Partitioner};
pub use txn::{allowed, mermaid, Transition, TxnError, TxnOffset, TxnOp, TxnState, TRANSITIONS};

use accumulator::{Accumulator, TopicEntry, BATCH_OVERHEAD};
use idempotence::{Idempotence, Step};
use metrics::Metrics;
use partitioner::{Routing, Sticky};
use sender::{restart_sequences, Sender, SenderConfig};
use txn::{Transactions, V1_PRODUCE_MAX};

use crate::client::{Notice, OpContext, Operation};
use crate::config::{ClientConfig, ConfigError};
use crate::group::GroupMetadata;
use crate::protocol::KafkaCode;
use crate::record::{BatchOptions, NewRecord};

/// Where [`flush`](Producer::flush) was called: done once every batch opened before it
/// is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushToken(u64);

/// The producer machine. See the module docs.
pub struct Producer {
    acc: Accumulator,
    sender: Sender,
    idem: Idempotence,
    metrics: Metrics,
    routing: Routing,
    max_request_size: usize,
    /// Metadata generation last applied to the topic entries.
    metadata_generation: u64,
    /// Topics a send waits for.
    waiting_topics: BTreeMap<String, u64>,
    /// A send was refused for lack of buffer space, with this much charged then: room
    /// may have come once less is.
    blocked_on_buffer: Option<usize>,
    closing: bool,
    fatal: Option<ProduceError>,
    /// Flushing until this batch id (exclusive) is reported.
    flush_until: Option<u64>,
    /// The transaction manager, with a `transactional.id`.
    txn: Option<Transactions>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .acc
            .parts
            .iter()
            .map(|p| {
                let head = p.queued.front().map(|b| (b.attempts, b.seq));
                format!(
                    "{}-{}: queued {} (head attempts/seq {:?}) in flight {} failed {} next_seq {} acked_next {} confirmed {} backoff {:?}",
                    p.topic,
                    p.partition,
                    p.queued.len(),
                    head,
                    p.inflight,
                    p.failed.len(),
                    p.next_seq,
                    p.acked_next,
                    p.confirmed,
                    p.backoff_until
                )
            })
            .collect();
        f.debug_struct("Producer")
            .field("parts", &parts)
            .field("ready", &self.acc.ready)
            .field("in_flight", &self.sender.in_flight())
            .field("buffer_used", &self.acc.used())
            .field("idempotence", &self.idem)
            .field("closing", &self.closing)
            .field("fatal", &self.fatal)
            .finish_non_exhaustive()
    }
}

impl Producer {
    /// A producer with the producer settings of `config` (those of the client it runs
    /// in). Fails if the codec is not built in.
    pub fn new(config: &ClientConfig) -> Result<Self, ConfigError> {
        let p = config.producer();
        let c = config.common();
        let opts = BatchOptions {
            compression: p.compression,
            compression_level: p.compression_level(),
            ..Default::default()
        };
        let cfg = SenderConfig {
            acks: p.acks,
            request_timeout: c.request_timeout,
            max_request_size: p.max_request_size,
            max_in_flight: c.max_in_flight_requests_per_connection,
            retries: c.retries,
            delivery_timeout: p.delivery_timeout,
        };
        // Validate the codec now rather than at the first record.
        crate::record::BatchBuilder::new(opts, p.batch_size).map_err(|e| {
            ConfigError::invalid(
                "compression.type",
                p.compression.name(),
                false,
                e.to_string(),
            )
        })?;
        let mut sender = Sender::new(cfg);
        let (idem, txn) = match &p.transactional_id {
            Some(id) => {
                sender.set_transactional(id.clone());
                let timeout = i32::try_from(p.transaction_timeout.as_millis()).unwrap_or(i32::MAX);
                (
                    Idempotence::transactional(id.clone(), timeout),
                    Some(Transactions::new(id.clone())),
                )
            }
            None => (Idempotence::new(p.idempotent(c)), None),
        };
        Ok(Producer {
            acc: Accumulator::new(opts, p.batch_size, p.linger, p.buffer_memory),
            sender,
            idem,
            metrics: Metrics::default(),
            routing: Routing::new(p.partitioner_ignore_keys),
            max_request_size: p.max_request_size,
            metadata_generation: u64::MAX,
            waiting_topics: BTreeMap::new(),
            blocked_on_buffer: None,
            closing: false,
            fatal: None,
            flush_until: None,
            txn,
        })
    }

    /// Uses `partitioner` before the built-in rules.
    pub fn with_partitioner(mut self, partitioner: impl Partitioner) -> Self {
        self.routing.custom = Some(Box::new(partitioner));
        self
    }

    /// Whether the producer is idempotent.
    pub fn is_idempotent(&self) -> bool {
        self.idem.enabled()
    }

    /// Appends a record to its partition's open batch. The bytes are copied at once.
    ///
    /// [`SendError::WouldBlock`] means "not now": the topic's metadata is unknown (it
    /// has been asked for) or `buffer.memory` is full; the producer notifies when that
    /// may have changed. Every other error is final for this record alone.
    ///
    /// In a transaction, a record refused for good makes the transaction abortable (as
    /// in Java): it cannot commit without the record.
    pub fn send(
        &mut self,
        cx: &mut OpContext<'_>,
        record: &ProducerRecord<'_>,
    ) -> Result<Appended, SendError> {
        let now = cx.now();
        self.send_at(cx, record, now)
    }

    /// [`send`](Self::send) for a record the application handed over at `sent` (no later
    /// than now), for an adapter that stages records and appends them later in bulk: a
    /// batch the record opens is due `linger.ms` after `sent`, not after now, so staging
    /// adds no latency. Its timestamp (if unset) and the delivery timeout still count
    /// from now.
    pub fn send_at(
        &mut self,
        cx: &mut OpContext<'_>,
        record: &ProducerRecord<'_>,
        sent: Instant,
    ) -> Result<Appended, SendError> {
        let r = self.append(cx, record, sent);
        if let (Err(e), Some(t)) = (&r, &mut self.txn) {
            if !matches!(
                e,
                SendError::WouldBlock(_)
                    | SendError::Transaction(_)
                    | SendError::Closed
                    | SendError::Fatal(_)
            ) {
                t.send_failed(cx, e);
            }
        }
        r
    }

    /// The caller gave up on a record this producer refused for now
    /// ([`SendError::WouldBlock`] past `max.block.ms`): an open transaction cannot commit
    /// without it and becomes abortable.
    pub fn gave_up(&mut self, cx: &mut OpContext<'_>, error: &SendError) {
        if let Some(t) = &mut self.txn {
            t.send_failed(cx, error);
        }
    }

    fn append(
        &mut self,
        cx: &mut OpContext<'_>,
        record: &ProducerRecord<'_>,
        sent: Instant,
    ) -> Result<Appended, SendError> {
        if let Some(e) = &self.fatal {
            return Err(SendError::Fatal(e.clone()));
        }
        if self.closing {
            return Err(SendError::Closed);
        }
        if let Some(t) = &self.txn {
            t.check_send().map_err(SendError::Transaction)?;
        }
        let size = upper_bound(record);
        let (budget, batch_size) = (self.acc.budget(), self.acc.batch_size());
        // The topic name is hashed once per record: this lookup gives the entry and the
        // way to its partitions' states.
        let mut topic = match self.acc.topic(record.topic) {
            Some(t) => t,
            None => {
                self.learn_topic(cx, record.topic)?;
                self.acc.topic(record.topic).expect("learnt just now")
            }
        };
        if size + BATCH_OVERHEAD > self.max_request_size {
            return Err(too_large(size, self.max_request_size, "max.request.size"));
        }
        if size + BATCH_OVERHEAD > budget {
            return Err(too_large(size, budget, "buffer.memory"));
        }
        let partition = self
            .routing
            .choose(cx, topic.entry, record, size, batch_size)?;
        let part = topic.part_index(partition)?;
        if !self.acc.fits(part, size) {
            self.blocked_on_buffer = Some(self.acc.used());
            return Err(SendError::WouldBlock(Blocked::BufferFull));
        }
        let timestamp = record.timestamp.unwrap_or_else(|| cx.wall_clock_ms());
        let new = NewRecord {
            timestamp,
            key: record.key,
            value: record.value,
            headers: record.headers,
        };
        let (batch, index) = self.acc.append((cx.now(), sent), part, &new, size)?;
        if let Some(t) = &mut self.txn {
            t.appended(part);
        }
        self.metrics.records_appended += 1;
        Ok(Appended {
            batch,
            index,
            partition,
            timestamp,
        })
    }

    /// When the next batch is due by `linger.ms` (the earliest linger deadline after
    /// `now` of the open batches); `None` if no batch is open, or a flush, close or
    /// fatal error has every open batch sealed at the next poll. An adapter that stages
    /// records uses it as the latest time to hand staged records over without
    /// changing which batch they join.
    pub fn next_linger_deadline(&self, now: Instant) -> Option<Instant> {
        if self.closing || self.flush_until.is_some() || self.fatal.is_some() {
            return None;
        }
        self.acc.next_linger_after(now)
    }

    /// Seals every open batch now (linger is cut short) and returns a token for
    /// [`is_flushed`](Self::is_flushed): flushed once every record sent before is
    /// reported.
    pub fn flush(&mut self) -> FlushToken {
        self.acc.seal_all();
        let token = FlushToken(self.acc.next_batch_id());
        self.flush_until = Some(self.flush_until.unwrap_or(0).max(token.0));
        token
    }

    /// Whether every record sent before `token` was taken is reported.
    pub fn is_flushed(&self, token: FlushToken) -> bool {
        self.acc
            .outstanding
            .first_key_value()
            .is_none_or(|(&id, _)| id >= token.0)
    }

    /// Stops taking records; the machine finishes once every record is reported. An
    /// open transaction is aborted first.
    pub fn close(&mut self) {
        self.closing = true;
        if let Some(t) = &mut self.txn {
            t.abort_on_close(&mut self.acc, &mut self.idem);
        }
        self.acc.seal_all();
    }

    /// Whether the producer has a `transactional.id`.
    pub fn is_transactional(&self) -> bool {
        self.txn.is_some()
    }

    /// The transaction state (`None` without a `transactional.id`).
    pub fn transaction_state(&self) -> Option<TxnState> {
        self.txn.as_ref().map(Transactions::state)
    }

    fn txn(&mut self) -> Result<&mut Transactions, TxnError> {
        self.txn.as_mut().ok_or(TxnError::NotTransactional)
    }

    /// Starts `init_transactions`: gets the producer id and epoch of the
    /// `transactional.id` from its coordinator, which fences every older instance and
    /// completes (or aborts) what they left open. The result arrives through
    /// [`take_transaction_result`](Self::take_transaction_result).
    pub fn init_transactions(&mut self) -> Result<(), TxnError> {
        let idem = &mut self.idem;
        self.txn
            .as_mut()
            .ok_or(TxnError::NotTransactional)?
            .init(idem)
    }

    /// Opens a transaction (local: no request). Records may be sent from now on.
    pub fn begin_transaction(&mut self, cx: &mut OpContext<'_>) -> Result<(), TxnError> {
        let t = self.txn.as_mut().ok_or(TxnError::NotTransactional)?;
        t.begin(cx)?;
        let max = (!t.v2()).then_some(V1_PRODUCE_MAX);
        self.sender.set_produce_max(max);
        Ok(())
    }

    /// Starts adding consumed offsets to the open transaction: they are committed for
    /// `group` if and only if the transaction commits. `offsets` are the next offsets
    /// to consume. The result arrives through
    /// [`take_transaction_result`](Self::take_transaction_result).
    pub fn send_offsets_to_transaction(
        &mut self,
        offsets: impl IntoIterator<Item = impl Into<TxnOffset>>,
        group: &GroupMetadata,
    ) -> Result<(), TxnError> {
        let offsets = offsets.into_iter().map(Into::into).collect();
        self.txn()?.send_offsets(offsets, group.clone())
    }

    /// Starts committing the open transaction: every record sent in it is flushed, then
    /// the coordinator commits. If a record failed, the result is an abortable error.
    pub fn commit_transaction(&mut self) -> Result<(), TxnError> {
        let acc = &mut self.acc;
        self.txn
            .as_mut()
            .ok_or(TxnError::NotTransactional)?
            .commit(acc)
    }

    /// Starts aborting the open transaction: records not yet sent are dropped (reported
    /// [`ProduceError::Aborted`]), then the coordinator aborts the rest.
    pub fn abort_transaction(&mut self) -> Result<(), TxnError> {
        let (acc, idem) = (&mut self.acc, &mut self.idem);
        self.txn
            .as_mut()
            .ok_or(TxnError::NotTransactional)?
            .abort(acc, idem)
    }

    /// The result of the last transactional call that ran on (init, send offsets,
    /// commit, abort), once it is known; the producer notifies then.
    pub fn take_transaction_result(&mut self) -> Option<(TxnOp, Result<(), TxnError>)> {
        self.txn.as_mut()?.take_result()
    }

    /// Gives up on everything unreported: unsent batches are reported
    /// [`ProduceError::Closed`] (not delivered), batches in flight `Closed` possibly
    /// delivered. The machine then finishes.
    pub fn abort(&mut self, cx: &mut OpContext<'_>) {
        self.closing = true;
        self.sender.abandon(cx, &mut self.acc);
        self.acc.fail_all(|_| ProduceError::Closed {
            possibly_delivered: false,
        });
    }

    /// The next report, oldest first.
    pub fn take_report(&mut self) -> Option<Report> {
        self.acc.reports.pop_front()
    }

    /// Batches not yet fully reported (a split batch counts once until every piece is).
    pub fn batches_outstanding(&self) -> usize {
        self.acc.outstanding.len()
    }

    /// The fatal error, once the producer has one.
    pub fn fatal_error(&self) -> Option<&ProduceError> {
        self.fatal.as_ref()
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> ProducerMetrics {
        let m = &self.metrics;
        ProducerMetrics {
            records_appended: m.records_appended,
            records_sent: m.records_sent,
            records_delivered: m.records_delivered,
            records_failed: m.records_failed,
            batches_sent: m.batches_sent,
            bytes_sent: m.bytes_sent,
            requests_sent: m.requests_sent,
            retries: m.retries,
            duplicates: m.duplicates,
            unexpected_responses: m.unexpected_responses,
            leader_hints: m.leader_hints,
            batch_splits: m.batch_splits,
            errors: m.errors.clone(),
            request_latency_avg: m.average_latency(),
            request_latency_max: m.max_latency(),
            requests_in_flight: self.sender.in_flight(),
            buffer_used: self.acc.used(),
            buffer_limit: self.acc.budget(),
            buffer_pooled: self.acc.pooled(),
            batches_outstanding: self.acc.outstanding.len(),
            epoch_bumps: self.idem.bumps,
            transactions_committed: self.txn.as_ref().map_or(0, |t| t.ended.0),
            transactions_aborted: self.txn.as_ref().map_or(0, |t| t.ended.1),
            transaction_version: self.txn.as_ref().map_or(0, Transactions::version),
        }
    }

    /// Makes the topic known from metadata, or asks for it.
    fn learn_topic(&mut self, cx: &mut OpContext<'_>, topic: &str) -> Result<(), SendError> {
        if let Some(entry) = topic_entry(cx, topic) {
            self.acc.topics.insert(topic, entry);
            self.waiting_topics.remove(topic);
            return Ok(());
        }
        if let Some(code) = cx.metadata().topic_error(topic).map(KafkaCode) {
            let waits = code == KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                || code == KafkaCode::LEADER_NOT_AVAILABLE
                || code.is_retriable();
            if !waits {
                return Err(SendError::Topic {
                    topic: topic.to_string(),
                    code,
                });
            }
        }
        // Asked as of this metadata generation: the next answer unblocks the send, so a
        // topic that stays unknown is retried once per answer, never in a loop.
        let generation = cx.metadata().generation();
        self.waiting_topics
            .entry(topic.to_string())
            .or_insert(generation);
        cx.allow_topic_auto_creation();
        cx.request_metadata([topic.to_string()]);
        Err(SendError::WouldBlock(Blocked::Metadata))
    }

    /// Applies new metadata to the topic entries (partition counts, leaders, ids).
    fn refresh_topics(&mut self, cx: &OpContext<'_>) {
        let generation = cx.metadata().generation();
        if generation == self.metadata_generation {
            return;
        }
        self.metadata_generation = generation;
        for entry in self.acc.topics.iter_mut() {
            if let Some(fresh) = topic_entry(cx, &entry.name) {
                entry.id = fresh.id;
                entry.partitions = entry.partitions.max(fresh.partitions);
                entry.available = fresh.available;
            }
        }
        for part in &mut self.acc.parts {
            if let Some(t) = cx.metadata().topic(&part.topic) {
                part.topic_id = t.id;
            }
        }
    }

    /// Whether a send refused with `WouldBlock` may now succeed.
    fn unblocked(&mut self, cx: &OpContext<'_>) -> bool {
        let mut any = false;
        if self
            .blocked_on_buffer
            .is_some_and(|at| self.acc.used() < at)
        {
            self.blocked_on_buffer = None;
            any = true;
        }
        if !self.waiting_topics.is_empty() {
            // Any answer since a topic was asked for: the sender retries and sees it
            // known, refused, or still unknown (then asks again).
            let generation = cx.metadata().generation();
            let before = self.waiting_topics.len();
            self.waiting_topics.retain(|_, asked| *asked == generation);
            any |= self.waiting_topics.len() != before;
        }
        any
    }

    fn become_fatal(&mut self, cx: &mut OpContext<'_>, code: KafkaCode) {
        if let Some(t) = &mut self.txn {
            t.fatal(
                cx,
                TxnError::Fatal {
                    code: Some(code),
                    reason: "the producer failed".into(),
                },
            );
        }
        let error = ProduceError::Fatal { code };
        crate::trace::error!(%code, "producer failed fatally");
        self.fatal = Some(error.clone());
        self.sender.abandon(cx, &mut self.acc);
        self.acc.fail_all(|b| b.failure(error.clone()));
    }
}

impl Operation for Producer {
    type Output = ProducerMetrics;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<ProducerMetrics> {
        let now = cx.now();
        self.refresh_topics(cx);
        if self.fatal.is_none() {
            if let Some(code) =
                self.sender
                    .collect(cx, &mut self.acc, &mut self.idem, &mut self.metrics)
            {
                self.become_fatal(cx, code);
            }
        }
        if let (Some(t), Some(e)) = (&mut self.txn, self.acc.first_failure.take()) {
            t.batch_failed(cx, &e);
        }
        let mut txn_wake = None;
        if self.fatal.is_none() {
            let step = self.idem.step(cx, self.sender.in_flight());
            if let Some(t) = &mut self.txn {
                t.on_id_step(cx, &step);
            }
            match step {
                Step::Idle => {}
                Step::NewEpoch => restart_sequences(&mut self.acc, &mut self.metrics),
                Step::Fatal(code) => self.become_fatal(cx, code),
            }
        }
        if let (None, Some(t)) = (&self.fatal, &mut self.txn) {
            t.drop_returned(&mut self.acc);
            txn_wake = t.step(cx, &self.acc, &mut self.idem, self.sender.in_flight());
            if t.take_epoch_changed() {
                restart_sequences(&mut self.acc, &mut self.metrics);
            }
            if let Some(code) = t.fatal_code() {
                self.become_fatal(cx, code);
            }
        }
        let flushing = self.closing || self.flush_until.is_some();
        let linger = if flushing {
            self.acc.seal_all();
            None
        } else {
            self.acc.seal_due(now)
        };
        if let Some(until) = self.flush_until {
            if self
                .acc
                .outstanding
                .first_key_value()
                .is_none_or(|(&id, _)| id >= until)
            {
                self.flush_until = None;
            }
        }
        let expiry = self
            .sender
            .expire(cx, now, &mut self.acc, &mut self.idem, &mut self.metrics);
        let mut backoff = None;
        if let (None, Some(pid)) = (&self.fatal, self.idem.current()) {
            let gate = self.txn.as_ref().map(Transactions::gate);
            backoff = self
                .sender
                .drain(cx, &mut self.acc, pid, gate, &mut self.metrics);
        }
        for at in [linger, expiry, backoff, self.idem.deadline(), txn_wake]
            .into_iter()
            .flatten()
        {
            cx.wake_at(at);
        }
        if !self.acc.reports.is_empty() || self.unblocked(cx) {
            cx.notify();
        }
        let drained = self.acc.outstanding.is_empty() && self.sender.in_flight() == 0;
        let txn_idle = self.txn.as_ref().is_none_or(Transactions::idle);
        if self.closing && drained && txn_idle && self.acc.reports.is_empty() {
            return Some(self.metrics());
        }
        None
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        matches!(notice, Notice::MetadataUpdated)
    }
}

/// The producer's view of a topic in metadata (`None` if it has no partitions there).
fn topic_entry(cx: &OpContext<'_>, topic: &str) -> Option<TopicEntry> {
    let info = cx.metadata().topic(topic)?;
    let partitions = info.partitions.keys().next_back().map(|&p| p + 1)?;
    let available = info
        .partitions
        .iter()
        .filter(|(_, p)| p.leader >= 0)
        .map(|(&i, _)| i)
        .collect();
    Some(TopicEntry {
        name: topic.into(),
        id: info.id,
        partitions,
        parts: Vec::new(),
        available,
        sticky: Sticky::default(),
    })
}

/// An upper bound of a record's encoded size inside a batch (Java's
/// `estimateSizeInBytesUpperBound`, without the batch header).
fn upper_bound(r: &ProducerRecord<'_>) -> usize {
    // length, attributes, timestamp delta, offset delta, key and value lengths,
    // header count: at most 5 + 1 + 10 + 5 + 5 + 5 + 5 bytes of varints.
    let mut size = 36 + r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len);
    for h in r.headers {
        size += 10 + h.key.len() + h.value.map_or(0, <[u8]>::len);
    }
    size
}

fn too_large(size: usize, limit: usize, key: &'static str) -> SendError {
    SendError::RecordTooLarge {
        size: size + BATCH_OVERHEAD,
        limit,
        key,
    }
}
