//! The sender: drains queued batches into one Produce request per broker (one batch per
//! partition per request, up to `max.request.size`, at most
//! `max.in.flight.requests.per.connection` requests per broker), and turns each answer
//! into an outcome per batch: delivered, retried, failed, or fatal.
//!
//! Ordering rules (with the queue order kept by the accumulator):
//! - a partition whose batches failed retriably sends nothing until every request
//!   carrying one of its batches is resolved; the failed batches then go back to the
//!   front of its queue in their original order;
//! - a retried batch is sent only when nothing else of its partition is in flight, so a
//!   batch is never sent to a new leader while a request carrying it (or an earlier
//!   batch) to the old one is unresolved.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::accumulator::{Accumulator, Batch};
use super::delivery::{Delivered, ProduceError};
use super::idempotence::{add_sequence, Idempotence};
use super::metrics::Metrics;
use crate::client::{Cause, OpContext, RequestId, RequestOptions};
use crate::cluster::{BrokerInfo, Route};
use crate::config::Acks;
use crate::conn::RequestError;
use crate::protocol::messages::produce::request::{PartitionProduceData, TopicProduceData};
use crate::protocol::messages::produce::response::PartitionProduceResponse;
use crate::protocol::messages::produce::{ProduceRequest, ProduceResponse};
use crate::protocol::KafkaCode;
use crate::record::{rewrite_producer_state, ProducerState};

/// A Produce request in flight and the batches it carries (their bytes stay owned here
/// until it resolves).
#[derive(Debug)]
struct InFlight {
    id: RequestId<ProduceRequest>,
    node: i32,
    batches: Vec<Batch>,
    sent_at: Instant,
}

/// What one answer means for one batch.
#[derive(Debug)]
enum Outcome {
    Delivered(Delivered),
    /// Retriable; `maybe_written`: the broker may have appended it anyway; `refresh`:
    /// the leader is stale.
    Retry {
        code: Option<KafkaCode>,
        maybe_written: bool,
        refresh: bool,
    },
    /// NOT_LEADER-like, with the new leader named in the answer (KIP-951).
    RetryAt {
        code: KafkaCode,
        leader: i32,
        epoch: i32,
        endpoint: Option<BrokerInfo>,
    },
    /// Retried after an epoch bump (the broker proved it did not append it).
    BumpThenRetry,
    /// MESSAGE_TOO_LARGE: split into smaller batches, or failed if it holds one record.
    Split,
    Fail(ProduceError),
    Fatal(KafkaCode),
}

/// Sender settings, from the producer config.
#[derive(Debug, Clone)]
pub(super) struct SenderConfig {
    pub(super) acks: Acks,
    pub(super) request_timeout: Duration,
    pub(super) max_request_size: usize,
    pub(super) max_in_flight: u32,
    pub(super) retries: u32,
    pub(super) delivery_timeout: Duration,
}

/// Requests in flight and per-broker counts.
#[derive(Debug)]
pub(super) struct Sender {
    cfg: SenderConfig,
    inflight: Vec<InFlight>,
    per_node: HashMap<i32, u32>,
    /// Scratch: partition indexes to look at in one drain round.
    scratch: Vec<usize>,
    /// Scratch: batches per broker being assembled.
    building: Vec<(i32, usize, Vec<Batch>)>,
    /// A transactional producer's `transactional.id` (its batches carry the
    /// transactional bit and its requests the id).
    txn_id: Option<String>,
    /// The highest Produce version allowed (transactions v1 stop at v11).
    produce_max: Option<i16>,
}

impl Sender {
    pub(super) fn new(cfg: SenderConfig) -> Self {
        Sender {
            cfg,
            inflight: Vec::new(),
            per_node: HashMap::new(),
            scratch: Vec::new(),
            building: Vec::new(),
            txn_id: None,
            produce_max: None,
        }
    }

    /// Makes the batches transactional, for `id`.
    pub(super) fn set_transactional(&mut self, id: String) {
        self.txn_id = Some(id);
    }

    /// Caps the Produce version (`None`: the highest both sides support).
    pub(super) fn set_produce_max(&mut self, max: Option<i16>) {
        self.produce_max = max;
    }

    /// Requests in flight.
    pub(super) fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Sends what can be sent now under producer id/epoch `pid`; returns the earliest
    /// retry-backoff deadline that held a partition back. With a `gate` (transactions),
    /// only the partitions it marks `true` (by part index) are sent.
    pub(super) fn drain(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &mut Accumulator,
        pid: (i64, i16),
        gate: Option<&[bool]>,
        metrics: &mut Metrics,
    ) -> Option<Instant> {
        let now = cx.now();
        let mut backoff: Option<Instant> = None;
        loop {
            self.scratch.clear();
            self.scratch.extend(acc.ready.iter().copied());
            let mut scratch = std::mem::take(&mut self.scratch);
            for &part in &scratch {
                let p = &acc.parts[part];
                let Some(head) = p.queued.front() else {
                    acc.ready.remove(&part);
                    continue;
                };
                if gate.is_some_and(|g| !g.get(part).copied().unwrap_or(false)) {
                    continue;
                }
                let unconfirmed = pid.0 >= 0 && !p.confirmed;
                if !p.failed.is_empty() || ((head.attempts > 0 || unconfirmed) && p.inflight > 0) {
                    continue;
                }
                if let Some(at) = p.backoff_until.filter(|&at| at > now) {
                    backoff = Some(backoff.map_or(at, |b| b.min(at)));
                    continue;
                }
                let Some(node) = cx.metadata().leader(&p.topic, p.partition) else {
                    let topic = p.topic.to_string();
                    cx.request_metadata([topic]);
                    continue;
                };
                // One broker at a time per partition: batches sent to a new leader while
                // earlier ones are still in flight to the old one (or parked on its
                // reconnect backoff) could reach it first and be refused
                // OUT_OF_ORDER_SEQUENCE_NUMBER. Wait for those to resolve.
                if p.inflight > 0 && p.inflight_node.is_some_and(|n| n != node) {
                    continue;
                }
                let len = head.bytes.len();
                let slot = match self.building.iter().position(|(n, _, _)| *n == node) {
                    Some(i) => i,
                    None => {
                        if self.per_node.get(&node).copied().unwrap_or(0) >= self.cfg.max_in_flight
                        {
                            continue;
                        }
                        self.building.push((node, 0, Vec::new()));
                        self.building.len() - 1
                    }
                };
                let (_, size, batches) = &mut self.building[slot];
                if !batches.is_empty() && *size + len > self.cfg.max_request_size {
                    continue;
                }
                let p = &mut acc.parts[part];
                let Some(mut batch) = p.queued.pop_front() else {
                    continue;
                };
                if p.queued.is_empty() {
                    acc.ready.remove(&part);
                }
                if batch.attempts == 0 {
                    batch.order = p.next_order;
                    p.next_order += 1;
                }
                if pid.0 >= 0 && batch.seq.is_none_or(|(_, epoch)| epoch != pid.1) {
                    let seq = p.next_seq;
                    p.next_seq = add_sequence(seq, batch.records);
                    batch.seq = Some((seq, pid.1));
                    let state = ProducerState {
                        producer_id: pid.0,
                        producer_epoch: pid.1,
                        base_sequence: seq,
                        transactional: self.txn_id.is_some(),
                    };
                    // The batch was sealed by us: it is one whole v2 batch.
                    let _ = rewrite_producer_state(batch.bytes.as_mut(), &state);
                }
                if batch.attempts > 0 {
                    metrics.retries += 1;
                }
                batch.attempts += 1;
                p.inflight += 1;
                p.inflight_node = Some(node);
                *size += len;
                batches.push(batch);
            }
            scratch.clear();
            self.scratch = scratch;
            if self.building.is_empty() {
                return backoff;
            }
            let building = std::mem::take(&mut self.building);
            for (node, size, batches) in building {
                self.send(cx, acc, node, size, batches, metrics);
            }
        }
    }

    fn send(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &mut Accumulator,
        node: i32,
        size: usize,
        mut batches: Vec<Batch>,
        metrics: &mut Metrics,
    ) {
        let mut topic_data: Vec<TopicProduceData> = Vec::new();
        for batch in &mut batches {
            let p = &acc.parts[batch.part];
            let data = PartitionProduceData {
                index: p.partition,
                records: Some(batch.bytes.share()),
                ..Default::default()
            };
            match topic_data.iter_mut().find(|t| *t.name == *p.topic) {
                Some(t) => t.partition_data.push(data),
                None => {
                    cx.keep_topic(&p.topic);
                    topic_data.push(TopicProduceData {
                        name: p.topic.to_string(),
                        topic_id: p.topic_id,
                        partition_data: vec![data],
                        ..Default::default()
                    });
                }
            }
            metrics.records_sent += u64::from(batch.records);
        }
        metrics.batches_sent += batches.len() as u64;
        metrics.bytes_sent += size as u64;
        metrics.requests_sent += 1;
        let request = ProduceRequest {
            transactional_id: self.txn_id.clone(),
            acks: self.cfg.acks.wire(),
            timeout_ms: i32::try_from(self.cfg.request_timeout.as_millis()).unwrap_or(i32::MAX),
            topic_data,
            ..Default::default()
        };
        let mut opts = RequestOptions::default().no_router_retry();
        if self.cfg.acks == Acks::None {
            opts = opts.no_response();
        }
        if let Some(max) = self.produce_max {
            opts = opts.max_version(max);
        }
        let id = cx.send_with(Route::Broker(node), request, opts);
        *self.per_node.entry(node).or_insert(0) += 1;
        self.inflight.push(InFlight {
            id,
            node,
            batches,
            sent_at: cx.now(),
        });
    }

    /// Takes every answered request and applies its outcomes. Returns a fatal code if
    /// the broker refused the producer for good.
    pub(super) fn collect(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &mut Accumulator,
        idem: &mut Idempotence,
        metrics: &mut Metrics,
    ) -> Option<KafkaCode> {
        let mut fatal = None;
        let mut i = 0;
        let mut touched = false;
        while i < self.inflight.len() {
            if !cx.is_done(self.inflight[i].id) {
                i += 1;
                continue;
            }
            // In send order, so acknowledgements of one partition apply in order.
            let f = self.inflight.remove(i);
            touched = true;
            if let Some(n) = self.per_node.get_mut(&f.node) {
                *n = n.saturating_sub(1);
            }
            let answer = cx.take_response(f.id);
            metrics.record_latency(cx.now().saturating_duration_since(f.sent_at));
            for batch in f.batches {
                if let Some(Err(e)) = &answer {
                    acc.parts[batch.part].last_cause = Some(Box::new(Cause::from(e)));
                }
                let outcome = match &answer {
                    Some(Ok(resp)) => self.outcome(acc, idem, resp, &batch, metrics),
                    Some(Err(e)) => request_outcome(e),
                    None => Outcome::Retry {
                        code: None,
                        maybe_written: true,
                        refresh: false,
                    },
                };
                if let Some(code) = self.apply(cx, acc, idem, batch, outcome, metrics) {
                    fatal = Some(code);
                }
            }
        }
        if touched {
            requeue_failed(acc);
        }
        fatal
    }

    /// The outcome of `batch` in a Produce response.
    fn outcome(
        &self,
        acc: &Accumulator,
        idem: &Idempotence,
        resp: &ProduceResponse,
        batch: &Batch,
        metrics: &mut Metrics,
    ) -> Outcome {
        if self.cfg.acks == Acks::None {
            return Outcome::Delivered(Delivered {
                base_offset: -1,
                first_index: 0,
                log_append_time: None,
                log_start_offset: -1,
            });
        }
        let p = &acc.parts[batch.part];
        let found = resp.responses.iter().find_map(|t| {
            let same = if t.name.is_empty() {
                t.topic_id == p.topic_id
            } else {
                *t.name == *p.topic
            };
            if !same {
                return None;
            }
            t.partition_responses
                .iter()
                .find(|r| r.index == p.partition)
        });
        let Some(r) = found else {
            // A broker that leaves our partition out: retry, it may have it.
            metrics.unexpected_responses += 1;
            return Outcome::Retry {
                code: None,
                maybe_written: true,
                refresh: true,
            };
        };
        let txn = self.txn_id.is_some();
        let outcome = classify(r, batch, p.acked_next, idem.enabled(), txn, metrics);
        let leader = &r.current_leader;
        match outcome {
            Outcome::Retry {
                code: Some(code),
                refresh: true,
                ..
            } if leader.leader_id >= 0 && leader.leader_epoch >= 0 => {
                let endpoint = resp
                    .node_endpoints
                    .iter()
                    .find(|n| n.node_id == leader.leader_id)
                    .map(|n| BrokerInfo {
                        node_id: n.node_id,
                        host: n.host.clone(),
                        port: u16::try_from(n.port).unwrap_or(0),
                        rack: n.rack.clone(),
                    });
                Outcome::RetryAt {
                    code,
                    leader: leader.leader_id,
                    epoch: leader.leader_epoch,
                    endpoint,
                }
            }
            other => other,
        }
    }

    /// Applies an outcome; returns the code if it is fatal.
    fn apply(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &mut Accumulator,
        idem: &mut Idempotence,
        mut batch: Batch,
        outcome: Outcome,
        metrics: &mut Metrics,
    ) -> Option<KafkaCode> {
        let now = cx.now();
        let part = batch.part;
        acc.parts[part].inflight -= 1;
        let outcome = match outcome {
            Outcome::RetryAt {
                code,
                leader,
                epoch,
                endpoint,
            } => {
                let p = &acc.parts[part];
                let (topic, partition) = (p.topic.clone(), p.partition);
                if cx.leader_hint(&topic, partition, leader, epoch, endpoint) {
                    metrics.leader_hints += 1;
                }
                Outcome::Retry {
                    code: Some(code),
                    maybe_written: false,
                    refresh: false,
                }
            }
            other => other,
        };
        match outcome {
            Outcome::Delivered(d) => {
                acc.parts[part].last_cause = None;
                if let Some((seq, _)) = batch.seq {
                    acc.parts[part].acked_next = add_sequence(seq, batch.records);
                    acc.parts[part].confirmed = true;
                }
                metrics.records_delivered += u64::from(batch.records);
                acc.finish(batch, Ok(d));
                None
            }
            Outcome::Retry {
                code,
                maybe_written,
                refresh,
            } => {
                batch.maybe_written |= maybe_written;
                if let Some(code) = code {
                    acc.parts[part].last_cause = Some(Box::new(Cause::code(code.0, None)));
                }
                if refresh {
                    let p = &acc.parts[part];
                    let (topic, partition) = (p.topic.clone(), p.partition);
                    cx.invalidate_leader(&topic, partition);
                }
                let expired = now >= batch.created + self.cfg.delivery_timeout;
                if expired || batch.attempts > self.cfg.retries {
                    let error = if expired {
                        ProduceError::TimedOut {
                            possibly_delivered: batch.maybe_written,
                            last_cause: acc.parts[part].last_cause.clone(),
                        }
                    } else {
                        broker_error(code.unwrap_or(KafkaCode::REQUEST_TIMED_OUT), None)
                    };
                    crate::trace::warn!(topic = %acc.parts[part].topic, partition = acc.parts[part].partition, %error, "batch failed after retries");
                    self.drop_batch(acc, idem, batch, error, metrics);
                } else {
                    let delay = cx.retry_backoff(batch.attempts);
                    crate::trace::debug!(topic = %acc.parts[part].topic, partition = acc.parts[part].partition, attempt = batch.attempts, ?code, "retrying batch");
                    acc.parts[part].backoff_until = Some(now + delay);
                    acc.parts[part].failed.push(batch);
                }
                None
            }
            // Turned into a plain retry above.
            Outcome::RetryAt { .. } => None,
            Outcome::Split => {
                let (records, bytes) = (batch.records, batch.bytes.len());
                match acc.split(batch) {
                    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] // only logged
                    Ok(pieces) => {
                        metrics.batch_splits += 1;
                        crate::trace::warn!(topic = %acc.parts[part].topic, partition = acc.parts[part].partition, records, bytes, pieces, "batch too large for the broker: split");
                    }
                    Err(batch) => {
                        let error = if records == 1 {
                            ProduceError::RecordTooLarge { bytes }
                        } else {
                            broker_error(KafkaCode::MESSAGE_TOO_LARGE, None)
                        };
                        self.drop_batch(acc, idem, batch, error, metrics);
                    }
                }
                None
            }
            Outcome::BumpThenRetry => {
                idem.want_bump();
                acc.parts[part].failed.push(batch);
                None
            }
            Outcome::Fail(error) => {
                self.drop_batch(acc, idem, batch, error, metrics);
                None
            }
            Outcome::Fatal(code) => {
                metrics.count_error(code);
                let error = batch.failure(ProduceError::Fatal { code });
                acc.finish(batch, Err(error));
                Some(code)
            }
        }
    }

    /// Reports a batch failed; a hole in its partition's sequence needs an epoch bump.
    fn drop_batch(
        &self,
        acc: &mut Accumulator,
        idem: &mut Idempotence,
        batch: Batch,
        error: ProduceError,
        metrics: &mut Metrics,
    ) {
        if batch.seq.is_some() {
            idem.want_bump();
        }
        metrics.records_failed += u64::from(batch.records);
        let error = batch.failure(error);
        acc.finish(batch, Err(error));
    }

    /// Fails queued batches whose delivery timeout passed (a hole in a sequence needs a
    /// bump), each naming its last failure, else the client's last connection failure
    /// since the batch was made; returns the next expiry among the partitions looked at.
    pub(super) fn expire(
        &self,
        cx: &OpContext<'_>,
        now: Instant,
        acc: &mut Accumulator,
        idem: &mut Idempotence,
        metrics: &mut Metrics,
    ) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let ready: Vec<usize> = acc.ready.iter().copied().collect();
        for part in ready {
            while let Some(head) = acc.parts[part].queued.front() {
                let deadline = head.created + self.cfg.delivery_timeout;
                if deadline > now {
                    next = Some(next.map_or(deadline, |n| n.min(deadline)));
                    break;
                }
                let Some(batch) = acc.parts[part].queued.pop_front() else {
                    break;
                };
                let error = ProduceError::TimedOut {
                    possibly_delivered: batch.maybe_written,
                    last_cause: acc.parts[part]
                        .last_cause
                        .clone()
                        .or_else(|| cx.last_failure_since(batch.created).map(Box::new)),
                };
                self.drop_batch(acc, idem, batch, error, metrics);
            }
            if acc.parts[part].queued.is_empty() {
                acc.ready.remove(&part);
            }
        }
        next
    }

    /// Gives up on every request in flight (abort): their batches are reported closed,
    /// possibly delivered.
    pub(super) fn abandon(&mut self, cx: &mut OpContext<'_>, acc: &mut Accumulator) {
        for f in self.inflight.drain(..) {
            cx.discard(f.id);
            for batch in f.batches {
                acc.parts[batch.part].inflight -= 1;
                acc.finish(
                    batch,
                    Err(ProduceError::Closed {
                        possibly_delivered: true,
                    }),
                );
            }
        }
        self.per_node.clear();
    }
}

/// Puts failed batches back at the front of their queues, in order, once nothing of
/// their partition is in flight.
fn requeue_failed(acc: &mut Accumulator) {
    for part in 0..acc.parts.len() {
        let p = &mut acc.parts[part];
        if p.inflight > 0 || p.failed.is_empty() {
            continue;
        }
        p.failed.sort_by_key(|b| b.order);
        for b in p.failed.drain(..).rev() {
            p.queued.push_front(b);
        }
        acc.ready.insert(part);
    }
}

/// Starts every partition's sequence over under a new epoch. Retries that may have been
/// appended under the old epoch cannot be resent without risking a duplicate: they are
/// reported [`ProduceError::Unresolved`]; the others get new sequences when sent.
pub(super) fn restart_sequences(acc: &mut Accumulator, metrics: &mut Metrics) {
    for part in 0..acc.parts.len() {
        let p = &mut acc.parts[part];
        p.next_seq = 0;
        p.acked_next = 0;
        p.confirmed = false;
        let mut unresolved = Vec::new();
        let mut kept = std::collections::VecDeque::with_capacity(p.queued.len());
        for mut b in p.queued.drain(..) {
            if b.seq.is_some() && b.maybe_written {
                unresolved.push(b);
            } else {
                b.seq = None;
                kept.push_back(b);
            }
        }
        p.queued = kept;
        for b in unresolved {
            metrics.records_failed += u64::from(b.records);
            acc.finish(b, Err(ProduceError::Unresolved));
        }
    }
}

fn broker_error(code: KafkaCode, r: Option<&PartitionProduceResponse>) -> ProduceError {
    ProduceError::Broker {
        code,
        message: r.and_then(|r| r.error_message.clone()),
        record_errors: r
            .map(|r| {
                r.record_errors
                    .iter()
                    .map(|e| (e.batch_index, e.batch_index_error_message.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The outcome of a partition's answer.
fn classify(
    r: &PartitionProduceResponse,
    batch: &Batch,
    acked_next: i32,
    idempotent: bool,
    transactional: bool,
    metrics: &mut Metrics,
) -> Outcome {
    let code = KafkaCode(r.error_code);
    if code == KafkaCode::NONE || code == KafkaCode::DUPLICATE_SEQUENCE_NUMBER {
        if code == KafkaCode::DUPLICATE_SEQUENCE_NUMBER {
            metrics.duplicates += 1;
        }
        return Outcome::Delivered(Delivered {
            base_offset: r.base_offset.max(-1),
            first_index: 0,
            log_append_time: (r.log_append_time_ms >= 0).then_some(r.log_append_time_ms),
            log_start_offset: r.log_start_offset.max(-1),
        });
    }
    metrics.count_error(code);
    match code {
        KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER if idempotent => {
            let seq = batch.seq.map(|(seq, _)| seq);
            let head = seq == Some(acked_next);
            // Acknowledged past this batch: the broker appended later batches without
            // it and will never take it (a retry would loop until delivery.timeout.ms).
            let overtaken = seq.is_some_and(|seq| {
                let behind = (i64::from(acked_next) - i64::from(seq)).rem_euclid(1 << 31);
                behind > 0 && behind < 1 << 30
            });
            if head || overtaken {
                // The broker lost our sequence at the head of the line: this batch fails,
                // the epoch is bumped for the rest (KIP-360).
                crate::trace::warn!(%code, "out-of-order sequence at the head of a partition");
                if batch.maybe_written {
                    // An earlier attempt may have been appended and has since left the
                    // broker's five-batch duplicate window (later batches were appended
                    // after it): the refusal does not prove it was not written.
                    Outcome::Fail(ProduceError::Unresolved)
                } else {
                    Outcome::Fail(broker_error(code, Some(r)))
                }
            } else {
                // An earlier batch is being retried; this one was not appended.
                Outcome::Retry {
                    code: Some(code),
                    maybe_written: false,
                    refresh: false,
                }
            }
        }
        // In a transaction these fail the batch: the transaction must abort, and the
        // epoch is bumped after the abort (KIP-360, KIP-588).
        KafkaCode::UNKNOWN_PRODUCER_ID | KafkaCode::INVALID_PRODUCER_EPOCH if transactional => {
            Outcome::Fail(broker_error(code, Some(r)))
        }
        KafkaCode::UNKNOWN_PRODUCER_ID | KafkaCode::INVALID_PRODUCER_EPOCH if idempotent => {
            Outcome::BumpThenRetry
        }
        KafkaCode::MESSAGE_TOO_LARGE => Outcome::Split,
        KafkaCode::PRODUCER_FENCED
        | KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        | KafkaCode::CLUSTER_AUTHORIZATION_FAILED => Outcome::Fatal(code),
        KafkaCode::NOT_LEADER_OR_FOLLOWER
        | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
        | KafkaCode::UNKNOWN_TOPIC_ID
        | KafkaCode::KAFKA_STORAGE_ERROR
        | KafkaCode::LEADER_NOT_AVAILABLE
        | KafkaCode::FENCED_LEADER_EPOCH => Outcome::Retry {
            code: Some(code),
            maybe_written: false,
            refresh: true,
        },
        KafkaCode::REQUEST_TIMED_OUT | KafkaCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND => {
            Outcome::Retry {
                code: Some(code),
                maybe_written: true,
                refresh: false,
            }
        }
        c if c.is_retriable() => Outcome::Retry {
            code: Some(code),
            maybe_written: false,
            refresh: false,
        },
        _ => Outcome::Fail(broker_error(code, Some(r))),
    }
}

/// The outcome of a request that got no answer.
fn request_outcome(e: &RequestError) -> Outcome {
    match e {
        RequestError::Connection(_) => Outcome::Retry {
            code: None,
            maybe_written: true,
            refresh: true,
        },
        RequestError::NoRoute(_) => Outcome::Retry {
            code: None,
            maybe_written: false,
            refresh: true,
        },
        RequestError::Cancelled => Outcome::Fail(ProduceError::Closed {
            possibly_delivered: true,
        }),
        other => Outcome::Fail(ProduceError::Request(other.to_string())),
    }
}
