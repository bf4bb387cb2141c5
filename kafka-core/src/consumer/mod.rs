//! The consumer's fetcher: a long-lived machine run by the
//! [`Client`](crate::client::Client) that keeps one fetch session per broker (KIP-227),
//! resets positions with ListOffsets, buffers fetched data under a byte budget and hands
//! records out as slices of the fetched buffers.
//!
//! Files: `session` (KIP-227 bookkeeping), `fetcher` (Fetch requests and answers),
//! `records` (chunks of fetched data, read_committed filtering, [`ConsumerRecord`]).
//!
//! Driving it, like the producer: `client.start_op(now, Consumer::new(&config)?)`, then
//! `client.command(now, id, |c, cx| c.assign(cx, ..))` and, on `Event::Notify` for it,
//! `client.command(now, id, |c, _| c.poll(&mut records))`.
//!
//! This is the assign-mode consumer: no group membership or committed offsets yet, no
//! leader-epoch validation (KIP-320) and no follower fetching (KIP-392) beyond sending
//! `client.rack`.

mod fetcher;
mod records;
mod session;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use records::ConsumerRecord;

use fetcher::InFlightFetch;
use records::Chunk;
use session::Session;

use crate::client::{Notice, OpContext, Operation, RequestId};
use crate::cluster::Route;
use crate::config::{ClientConfig, ConsumerConfig, OffsetReset};
use crate::protocol::messages::list_offsets::request::{ListOffsetsPartition, ListOffsetsTopic};
use crate::protocol::messages::list_offsets::ListOffsetsRequest;
use crate::protocol::{KafkaCode, Uuid};
use crate::record::RecordError;

/// Why the consumer could not go on with a partition (it keeps going with the others).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumeError {
    /// The position is outside the log and `auto.offset.reset` is `none`.
    #[error("{topic}-{partition}: offset {offset} out of range and auto.offset.reset=none")]
    OffsetOutOfRange {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The position that was out of range.
        offset: i64,
    },
    /// The partition has no position and `auto.offset.reset` is `none`.
    #[error("{topic}-{partition}: no position and auto.offset.reset=none")]
    NoOffset {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
    },
    /// The broker refused to serve the partition.
    #[error("{topic}-{partition}: {code}")]
    Partition {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The error code.
        code: KafkaCode,
    },
    /// Fetched data did not decode (corrupt batch, CRC mismatch); the partition stops
    /// at the record before it.
    #[error("{topic}-{partition}: corrupt data at offset {offset}: {error}")]
    Corrupt {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The first offset not handed out.
        offset: i64,
        /// What failed.
        error: RecordError,
    },
}

/// Where a reset moves a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reset {
    Earliest,
    Latest,
}

impl Reset {
    fn from_policy(p: OffsetReset) -> Self {
        match p {
            OffsetReset::Earliest => Reset::Earliest,
            _ => Reset::Latest,
        }
    }

    /// ListOffsets' timestamp for it.
    fn timestamp(self) -> i64 {
        match self {
            Reset::Earliest => -2,
            Reset::Latest => -1,
        }
    }
}

/// One partition's consuming state.
#[derive(Debug)]
struct Part {
    topic: Arc<str>,
    partition: i32,
    assigned: bool,
    paused: bool,
    /// The next offset to hand out (and to fetch from).
    position: Option<i64>,
    /// A reset to do (ListOffsets), and whether it is in flight.
    reset: Option<Reset>,
    resetting: bool,
    /// A chunk of this partition waits for the application: not fetched meanwhile.
    buffered: bool,
    retry_at: Option<Instant>,
    high_watermark: i64,
    last_stable_offset: i64,
}

/// Counters.
#[derive(Debug, Default, Clone)]
struct Metrics {
    fetches: u64,
    records: u64,
    bytes_fetched: u64,
    session_resets: u64,
    resets: u64,
    unexpected_partitions: u64,
    latency_sum: Duration,
    latency_count: u64,
}

impl Metrics {
    fn record_latency(&mut self, d: Duration) {
        self.latency_sum += d;
        self.latency_count += 1;
    }
}

/// A snapshot of the consumer's counters and gauges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ConsumerMetrics {
    /// Fetch requests sent.
    pub fetches: u64,
    /// Records handed out.
    pub records: u64,
    /// Record bytes fetched.
    pub bytes_fetched: u64,
    /// Bytes fetched and not yet handed out.
    pub buffered_bytes: usize,
    /// Fetch sessions that had to start over.
    pub session_resets: u64,
    /// Positions reset by `auto.offset.reset`.
    pub resets: u64,
    /// Answers naming partitions we did not ask for.
    pub unexpected_partitions: u64,
    /// Mean Fetch round trip (long polls included).
    pub fetch_latency_avg: Option<Duration>,
    /// Lag per partition: high watermark minus position, where both are known.
    pub lag: Vec<(String, i32, i64)>,
}

/// The consumer machine (assign mode). See the module docs.
pub struct Consumer {
    /// Inside a group consumer, which decides itself when to notify.
    pub(crate) owner_notifies: bool,
    cfg: ConsumerConfig,
    rack: String,
    request_timeout: Duration,
    budget: usize,
    parts: Vec<Part>,
    index: HashMap<(Arc<str>, i32), usize>,
    topic_by_id: HashMap<Uuid, Arc<str>>,
    metadata_generation: u64,
    sessions: HashMap<i32, Session>,
    fetches: Vec<InFlightFetch>,
    resets: Vec<(RequestId<ListOffsetsRequest>, Vec<usize>)>,
    chunks: VecDeque<Chunk>,
    buffered_bytes: usize,
    errors: VecDeque<ConsumeError>,
    rotation: usize,
    metrics: Metrics,
    closing: bool,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("partitions", &self.parts.len())
            .field("fetches_in_flight", &self.fetches.len())
            .field("buffered_bytes", &self.buffered_bytes)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// A consumer with the consumer settings of `config`.
    pub fn new(config: &ClientConfig) -> Self {
        let cfg = config.consumer().clone();
        Consumer {
            owner_notifies: false,
            budget: cfg.queued_max_kbytes * 1024,
            rack: config.common().client_rack.clone().unwrap_or_default(),
            request_timeout: config.common().request_timeout,
            cfg,
            parts: Vec::new(),
            index: HashMap::new(),
            topic_by_id: HashMap::new(),
            metadata_generation: u64::MAX,
            sessions: HashMap::new(),
            fetches: Vec::new(),
            resets: Vec::new(),
            chunks: VecDeque::new(),
            buffered_bytes: 0,
            errors: VecDeque::new(),
            rotation: 0,
            metrics: Metrics::default(),
            closing: false,
        }
    }

    /// Consumes exactly these partitions from now on. Partitions already assigned keep
    /// their positions; new ones start from `auto.offset.reset` unless sought.
    pub fn assign<'t>(
        &mut self,
        cx: &mut OpContext<'_>,
        partitions: impl IntoIterator<Item = (&'t str, i32)>,
    ) {
        for p in &mut self.parts {
            p.assigned = false;
        }
        let mut topics = Vec::new();
        for (topic, partition) in partitions {
            let i = self.part(topic, partition);
            let p = &mut self.parts[i];
            if !p.assigned {
                p.assigned = true;
                if p.position.is_none() && p.reset.is_none() {
                    p.reset = Some(Reset::from_policy(self.cfg.auto_offset_reset));
                    if self.cfg.auto_offset_reset == OffsetReset::None {
                        p.reset = None;
                        self.errors.push_back(ConsumeError::NoOffset {
                            topic: topic.to_string(),
                            partition,
                        });
                    }
                }
            }
            if !topics.iter().any(|t: &String| t == topic) {
                topics.push(topic.to_string());
            }
        }
        // Drop what was fetched for partitions no longer assigned.
        let parts = &mut self.parts;
        let mut freed = 0;
        self.chunks.retain(|c| {
            let keep = parts[c.part].assigned;
            if !keep {
                freed += c.bytes;
                parts[c.part].buffered = false;
            }
            keep
        });
        self.buffered_bytes -= freed;
        cx.request_metadata(topics);
    }

    /// The partitions assigned.
    pub fn assignment(&self) -> Vec<(Arc<str>, i32)> {
        self.parts
            .iter()
            .filter(|p| p.assigned)
            .map(|p| (p.topic.clone(), p.partition))
            .collect()
    }

    /// Moves a partition's position to `offset` (the next record handed out).
    pub fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        let i = self.part(topic, partition);
        self.drop_chunk(i);
        let p = &mut self.parts[i];
        p.position = Some(offset.max(0));
        p.reset = None;
    }

    /// Forgets partitions' positions and buffered records (a group member gave them
    /// up: if they come back, they start from the committed offset again).
    pub fn forget<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        for (topic, partition) in partitions {
            let Some(&i) = self.index.get(&(topic.into(), partition)) else {
                continue;
            };
            self.drop_chunk(i);
            let p = &mut self.parts[i];
            p.position = None;
            p.reset = None;
            p.paused = false;
            p.retry_at = None;
        }
    }

    /// Moves positions to the log start.
    pub fn seek_to_beginning<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.seek_reset(partitions, Reset::Earliest);
    }

    /// Moves positions to the log end (last stable offset under read_committed).
    pub fn seek_to_end<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.seek_reset(partitions, Reset::Latest);
    }

    fn seek_reset<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>, r: Reset) {
        for (topic, partition) in partitions {
            let i = self.part(topic, partition);
            self.drop_chunk(i);
            let p = &mut self.parts[i];
            p.position = None;
            p.reset = Some(r);
        }
    }

    /// The next offset to be handed out, once known.
    pub fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        let i = *self.index.get(&(topic.into(), partition))?;
        self.parts[i].position
    }

    /// The high watermark last seen.
    pub fn high_watermark(&self, topic: &str, partition: i32) -> Option<i64> {
        let i = *self.index.get(&(topic.into(), partition))?;
        Some(self.parts[i].high_watermark).filter(|&h| h >= 0)
    }

    /// Stops fetching these partitions (buffered records are kept).
    pub fn pause<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        for (t, p) in partitions {
            let i = self.part(t, p);
            self.parts[i].paused = true;
        }
    }

    /// Fetches these partitions again.
    pub fn resume<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        for (t, p) in partitions {
            let i = self.part(t, p);
            self.parts[i].paused = false;
        }
    }

    /// Hands out up to `max.poll.records` records (appended to `out`), oldest fetched
    /// first; returns how many. Positions move past every record handed out.
    pub fn poll(&mut self, out: &mut Vec<ConsumerRecord>) -> usize {
        let max = self.cfg.max_poll_records;
        let mut n = 0;
        while n < max {
            let Some(chunk) = self.chunks.front_mut() else {
                break;
            };
            let i = chunk.part;
            let p = &mut self.parts[i];
            if p.paused {
                // A paused partition's records wait; go on with the others.
                self.chunks.rotate_left(1);
                if self.chunks.iter().all(|c| self.parts[c.part].paused) {
                    break;
                }
                continue;
            }
            match chunk.next_record(&p.topic, p.partition) {
                Some(Ok(r)) => {
                    p.position = Some(r.offset + 1);
                    out.push(r);
                    n += 1;
                }
                Some(Err(error)) => {
                    let offset = p.position.unwrap_or(-1);
                    self.errors.push_back(ConsumeError::Corrupt {
                        topic: p.topic.to_string(),
                        partition: p.partition,
                        offset,
                        error,
                    });
                    p.paused = true;
                    self.finish_front();
                }
                None => self.finish_front(),
            }
        }
        self.metrics.records += n as u64;
        n
    }

    /// The next partition error, if any.
    pub fn take_error(&mut self) -> Option<ConsumeError> {
        self.errors.pop_front()
    }

    /// Whether records or errors wait to be taken (records of paused partitions do not
    /// count: `poll` would not hand them out, so they must not keep notifying).
    pub fn has_pending(&self) -> bool {
        !self.errors.is_empty() || self.chunks.iter().any(|c| !self.parts[c.part].paused)
    }

    /// Stops: fetches in flight are dropped, the machine finishes.
    pub fn close(&mut self, cx: &mut OpContext<'_>) {
        self.closing = true;
        for f in self.fetches.drain(..) {
            cx.discard(f.id);
        }
        for (id, _) in self.resets.drain(..) {
            cx.discard(id);
        }
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> ConsumerMetrics {
        let m = &self.metrics;
        ConsumerMetrics {
            fetches: m.fetches,
            records: m.records,
            bytes_fetched: m.bytes_fetched,
            buffered_bytes: self.buffered_bytes,
            session_resets: m.session_resets
                + self.sessions.values().map(|s| s.resets).sum::<u64>(),
            resets: m.resets,
            unexpected_partitions: m.unexpected_partitions,
            fetch_latency_avg: u32::try_from(m.latency_count)
                .ok()
                .filter(|&n| n > 0)
                .map(|n| m.latency_sum / n),
            lag: self
                .parts
                .iter()
                .filter(|p| p.assigned && p.high_watermark >= 0)
                .filter_map(|p| {
                    let pos = p.position?;
                    Some((p.topic.to_string(), p.partition, p.high_watermark - pos))
                })
                .collect(),
        }
    }

    fn part(&mut self, topic: &str, partition: i32) -> usize {
        if let Some(&i) = self.index.get(&(topic.into(), partition)) {
            return i;
        }
        let topic: Arc<str> = topic.into();
        let i = self.parts.len();
        self.parts.push(Part {
            topic: topic.clone(),
            partition,
            assigned: false,
            paused: false,
            position: None,
            reset: None,
            resetting: false,
            buffered: false,
            retry_at: None,
            high_watermark: -1,
            last_stable_offset: -1,
        });
        self.index.insert((topic, partition), i);
        i
    }

    /// Ends the front chunk: its partition may be fetched again from its position.
    fn finish_front(&mut self) {
        if let Some(c) = self.chunks.pop_front() {
            self.release(c);
        }
    }

    fn release(&mut self, c: Chunk) {
        let p = &mut self.parts[c.part];
        p.buffered = false;
        if let Some(pos) = p.position {
            // Skipped control and aborted batches at the end move the position too.
            p.position = Some(pos.max(c.next_offset));
        }
        self.buffered_bytes -= c.bytes;
    }

    /// Drops a partition's buffered chunk (seek, reset).
    fn drop_chunk(&mut self, i: usize) {
        if let Some(at) = self.chunks.iter().position(|c| c.part == i) {
            if let Some(c) = self.chunks.remove(at) {
                self.buffered_bytes -= c.bytes;
            }
        }
        self.parts[i].buffered = false;
    }

    /// Sends ListOffsets for partitions waiting for a reset, per leader.
    fn send_resets(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        let mut by_node: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        for (i, p) in self.parts.iter().enumerate() {
            if !p.assigned || p.resetting || p.reset.is_none() {
                continue;
            }
            if p.retry_at.is_some_and(|at| at > now) {
                continue;
            }
            match cx.metadata().leader(&p.topic, p.partition) {
                Some(node) => by_node.entry(node).or_default().push(i),
                None => {
                    let topic = p.topic.to_string();
                    cx.request_metadata([topic]);
                }
            }
        }
        for (node, parts) in by_node {
            let mut topics: Vec<ListOffsetsTopic> = Vec::new();
            for &i in &parts {
                let p = &mut self.parts[i];
                p.resetting = true;
                let lp = ListOffsetsPartition {
                    partition_index: p.partition,
                    current_leader_epoch: -1,
                    timestamp: p.reset.map_or(-1, Reset::timestamp),
                    ..Default::default()
                };
                match topics.iter_mut().find(|t| *t.name == *p.topic) {
                    Some(t) => t.partitions.push(lp),
                    None => topics.push(ListOffsetsTopic {
                        name: p.topic.to_string(),
                        partitions: vec![lp],
                        ..Default::default()
                    }),
                }
            }
            let request = ListOffsetsRequest {
                replica_id: -1,
                isolation_level: self.cfg.isolation_level.wire(),
                topics,
                timeout_ms: i32::try_from(self.request_timeout.as_millis()).unwrap_or(i32::MAX),
                ..Default::default()
            };
            let id = cx.send(Route::Broker(node), request);
            self.resets.push((id, parts));
        }
    }

    /// Takes ListOffsets answers: positions, or a retry after a leader error.
    fn collect_resets(&mut self, cx: &mut OpContext<'_>) {
        let mut i = 0;
        while i < self.resets.len() {
            if !cx.is_done(self.resets[i].0) {
                i += 1;
                continue;
            }
            let (id, parts) = self.resets.swap_remove(i);
            let answer = cx.take_response(id);
            for &pi in &parts {
                self.parts[pi].resetting = false;
            }
            let Some(Ok(resp)) = answer else {
                let at = cx.now() + cx.retry_backoff(1);
                for &pi in &parts {
                    self.parts[pi].retry_at = Some(at);
                }
                continue;
            };
            for t in resp.topics {
                for r in t.partitions {
                    let Some(&pi) = self.index.get(&(t.name.as_str().into(), r.partition_index))
                    else {
                        continue;
                    };
                    if !parts.contains(&pi) {
                        continue;
                    }
                    let p = &mut self.parts[pi];
                    let code = KafkaCode(r.error_code);
                    if code == KafkaCode::NONE && r.offset >= 0 {
                        if p.reset.is_some() {
                            p.position = Some(r.offset);
                            p.reset = None;
                            p.retry_at = None;
                        }
                    } else if code.is_retriable() || code == KafkaCode::NONE {
                        let (topic, partition) = (p.topic.clone(), p.partition);
                        p.retry_at = Some(cx.now() + cx.retry_backoff(1));
                        cx.invalidate_leader(&topic, partition);
                    } else {
                        p.reset = None;
                        self.errors.push_back(ConsumeError::Partition {
                            topic: p.topic.to_string(),
                            partition: p.partition,
                            code,
                        });
                    }
                }
            }
        }
    }

    fn refresh_topic_ids(&mut self, cx: &OpContext<'_>) {
        let generation = cx.metadata().generation();
        if generation == self.metadata_generation {
            return;
        }
        self.metadata_generation = generation;
        self.topic_by_id.clear();
        for p in &self.parts {
            if let Some(t) = cx.metadata().topic(&p.topic) {
                self.topic_by_id.insert(t.id, p.topic.clone());
            }
        }
    }
}

impl Operation for Consumer {
    type Output = ConsumerMetrics;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<ConsumerMetrics> {
        if self.closing {
            return Some(self.metrics());
        }
        self.refresh_topic_ids(cx);
        self.collect_fetches(cx);
        self.collect_resets(cx);
        self.send_resets(cx);
        if let Some(at) = self.send_fetches(cx) {
            cx.wake_at(at);
        }
        // Only deadlines still ahead: a partition whose retry time passed and that still
        // waits (its leader unknown, metadata asked for) is woken by the metadata
        // notice; waking at a past instant would poll it in a busy loop meanwhile.
        let now = cx.now();
        if let Some(at) = self
            .parts
            .iter()
            .filter(|p| p.reset.is_some() && !p.resetting)
            .filter_map(|p| p.retry_at)
            .filter(|&at| at > now)
            .min()
        {
            cx.wake_at(at);
        }
        if !self.owner_notifies && self.has_pending() {
            cx.notify();
        }
        None
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        match notice {
            Notice::ConnectionClosed { node, .. } => {
                if let Some(s) = self.sessions.get_mut(node) {
                    s.reset();
                }
                true
            }
            _ => true,
        }
    }
}
