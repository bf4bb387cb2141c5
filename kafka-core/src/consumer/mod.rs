//! The consumer's fetcher: a long-lived machine run by the
//! [`Client`](crate::client::Client) that keeps one fetch session per broker (KIP-227),
//! resets positions with ListOffsets, buffers fetched data under a byte budget and hands
//! records out as slices of the fetched buffers.
//!
//! Files: `session` (KIP-227 bookkeeping), `fetcher` (Fetch requests and answers,
//! preferred read replicas of KIP-392), `reset` (ListOffsets), `validate` (leader epochs
//! of KIP-320: OffsetForLeaderEpoch after a leader change, log truncation), `records`
//! (chunks of fetched data, read_committed filtering, [`ConsumerRecord`]), `lookup`
//! (the one-shot `beginning_offsets`, `end_offsets` and `offsets_for_times`).
//!
//! Driving it, like the producer: `client.start_op(now, Consumer::new(&config)?)`, then
//! `client.command(now, id, |c, cx| c.assign(cx, ..))` and, on `Event::Notify` for it,
//! `client.command(now, id, |c, _| c.poll(&mut records))`.
//!
//! This is the assign-mode consumer; the group consumer (`crate::group`) drives it too.

mod fetcher;
mod lookup;
pub(crate) mod records;
mod reset;
mod session;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use lookup::{EdgeOffsets, OffsetAndTimestamp, OffsetsForTimes};
pub use records::ConsumerRecord;

use fetcher::InFlightFetch;
use records::Chunk;
use session::Session;

use validate::InFlightValidation;

use crate::client::{Notice, OpContext, Operation, RequestId};
use crate::config::{ClientConfig, ConsumerConfig, OffsetReset};
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
    /// The leader's log no longer holds what was consumed (KIP-320: the end offset of
    /// the position's leader epoch is below it) and `auto.offset.reset` is `none`. The
    /// partition stops until sought.
    #[error("{topic}-{partition}: log truncated below offset {offset} (diverging from {divergent_offset:?}) and auto.offset.reset=none")]
    LogTruncation {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The position that was truncated.
        offset: i64,
        /// The first offset known to diverge (the end offset of the position's epoch on
        /// the leader), if the leader knew the epoch.
        divergent_offset: Option<i64>,
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
    /// The first record at most this long old (`by_duration`, KIP-1106).
    Since(Duration),
}

impl Reset {
    fn from_policy(p: OffsetReset) -> Self {
        match p {
            OffsetReset::Earliest => Reset::Earliest,
            OffsetReset::ByDuration(d) => Reset::Since(d),
            _ => Reset::Latest,
        }
    }

    /// ListOffsets' timestamp for it, `now_ms` being the wall clock.
    fn timestamp(self, now_ms: i64) -> i64 {
        match self {
            Reset::Earliest => -2,
            Reset::Latest => -1,
            Reset::Since(d) => {
                let back = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
                now_ms.saturating_sub(back).max(0)
            }
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
    /// The leader epoch of the record before the position (KIP-320's offset epoch), -1
    /// if unknown (a seek or reset without one).
    offset_epoch: i32,
    /// The leader `(node, epoch)` the position is known good under; `None` until
    /// compared with metadata (a new position).
    leader: Option<(i32, i32)>,
    /// The position waits for OffsetForLeaderEpoch before fetching on (`validating`:
    /// sent).
    validate: bool,
    validating: bool,
    /// The broker's preferred read replica (KIP-392) and until when it holds.
    preferred: Option<(i32, Instant)>,
    /// Where the leader epochs of handed-out records start, `(first offset, epoch)`,
    /// the newest last, at most [`MARKS`]: the epoch of a position behind this one.
    marks: VecDeque<(i64, i32)>,
    /// A reset to do (ListOffsets), and whether it is in flight.
    reset: Option<Reset>,
    resetting: bool,
    /// A chunk of this partition waits for the application: not fetched meanwhile.
    buffered: bool,
    retry_at: Option<Instant>,
    high_watermark: i64,
    last_stable_offset: i64,
}

/// Epoch starts kept per partition (see `Part::marks`).
const MARKS: usize = 4;

impl Part {
    /// The position moved by a seek, a reset or a truncation: `epoch` is the leader epoch
    /// of the record before it (-1: unknown), and it is compared with the leader again.
    fn moved(&mut self, position: Option<i64>, epoch: i32) {
        self.position = position;
        self.offset_epoch = epoch;
        self.leader = None;
        self.validate = false;
        self.validating = false;
        self.marks.clear();
    }

    /// A record at `offset` with leader epoch `epoch` was handed out.
    fn handed_out(&mut self, offset: i64, epoch: i32) {
        self.position = Some(offset + 1);
        self.offset_epoch = epoch;
        if epoch >= 0 && self.marks.back().is_none_or(|&(_, e)| e != epoch) {
            if self.marks.len() == MARKS {
                self.marks.pop_front();
            }
            self.marks.push_back((offset, epoch));
        }
    }

    /// Batches up to `next` were skipped (control records, aborted transactions); the
    /// last of them has leader epoch `epoch`.
    fn skipped_to(&mut self, next: i64, epoch: i32) {
        self.handed_out(next - 1, epoch);
    }

    /// The leader epoch of the record before `offset` (at most the position), if known.
    fn epoch_before(&self, offset: i64) -> Option<i32> {
        let position = self.position?;
        if offset == position {
            return (self.offset_epoch >= 0).then_some(self.offset_epoch);
        }
        if offset > position {
            return None;
        }
        let last = offset - 1;
        let &(first, _) = self.marks.front()?;
        if last < first {
            return None;
        }
        self.marks
            .iter()
            .rev()
            .find(|&&(start, _)| start <= last)
            .map(|&(_, e)| e)
    }
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
    validations: u64,
    truncations: u64,
    preferred_replica_fetches: u64,
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
    /// Positions checked with OffsetForLeaderEpoch after a leader change (KIP-320).
    pub validations: u64,
    /// Log truncations detected (validation or a Fetch answer's diverging epoch).
    pub truncations: u64,
    /// Fetches sent to a preferred read replica rather than the leader (KIP-392).
    pub preferred_replica_fetches: u64,
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
    /// How long a preferred read replica holds (`metadata.max.age.ms`, as in Java).
    metadata_max_age: Duration,
    budget: usize,
    parts: Vec<Part>,
    index: HashMap<(Arc<str>, i32), usize>,
    topic_by_id: HashMap<Uuid, Arc<str>>,
    metadata_generation: u64,
    sessions: HashMap<i32, Session>,
    fetches: Vec<InFlightFetch>,
    resets: Vec<(RequestId<ListOffsetsRequest>, Vec<usize>)>,
    validations: Vec<InFlightValidation>,
    /// A position was set since leaders were last compared (`sync_leaders`).
    leaders_stale: bool,
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
            metadata_max_age: config.common().metadata_max_age,
            cfg,
            parts: Vec::new(),
            index: HashMap::new(),
            topic_by_id: HashMap::new(),
            metadata_generation: u64::MAX,
            sessions: HashMap::new(),
            fetches: Vec::new(),
            resets: Vec::new(),
            validations: Vec::new(),
            leaders_stale: false,
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
        self.seek_with_epoch(topic, partition, offset, None);
    }

    /// Moves a partition's position to `offset`, known to follow a record of leader
    /// epoch `leader_epoch` (a committed offset's, say): as Java's
    /// `seek(tp, OffsetAndMetadata)`, the position is validated with
    /// OffsetForLeaderEpoch before fetching from it (KIP-320).
    pub fn seek_with_epoch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) {
        let i = self.part(topic, partition);
        self.drop_chunk(i);
        let p = &mut self.parts[i];
        p.moved(
            Some(offset.max(0)),
            leader_epoch.filter(|&e| e >= 0).unwrap_or(-1),
        );
        p.reset = None;
        self.leaders_stale = true;
    }

    /// Moves a partition's position back to `offset`, records from which were handed
    /// out but not consumed (an adapter's pause drops its queued records and rewinds
    /// here). Unlike a seek the position keeps what the consumer knows: the leader epoch
    /// of the record before `offset` (if among the last epoch changes handed out) and
    /// the leader it was validated under.
    pub fn rewind(&mut self, topic: &str, partition: i32, offset: i64) {
        let i = self.part(topic, partition);
        let Some(epoch) = self.parts[i].epoch_before(offset) else {
            self.seek(topic, partition, offset);
            return;
        };
        self.drop_chunk(i);
        let p = &mut self.parts[i];
        p.position = Some(offset.max(0));
        p.offset_epoch = epoch;
        p.reset = None;
        // An answer to a validation in flight was for the old position: ask again.
        p.validating = false;
        p.marks.retain(|&(start, _)| start < offset);
    }

    /// The leader epoch of the record before `offset` of a partition, if the consumer
    /// knows it: `offset` is the position, or an earlier one within the last few epoch
    /// changes handed out. For commits (OffsetCommit's `committed_leader_epoch`).
    pub fn epoch_before(&self, topic: &str, partition: i32, offset: i64) -> Option<i32> {
        let i = *self.index.get(&(topic.into(), partition))?;
        self.parts[i].epoch_before(offset)
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
            p.moved(None, -1);
            p.reset = None;
            p.paused = false;
            p.retry_at = None;
            p.preferred = None;
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
            p.moved(None, -1);
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
                    p.handed_out(r.offset, r.leader_epoch);
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
        for v in self.validations.drain(..) {
            cx.discard(v.id);
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
            validations: m.validations,
            truncations: m.truncations,
            preferred_replica_fetches: m.preferred_replica_fetches,
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
            offset_epoch: -1,
            leader: None,
            validate: false,
            validating: false,
            preferred: None,
            marks: VecDeque::new(),
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
            if c.next_offset > pos {
                p.skipped_to(c.next_offset, c.next_epoch);
            }
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

    /// After a metadata change: topic ids, and positions whose leader moved.
    fn refresh_metadata(&mut self, cx: &mut OpContext<'_>) {
        let generation = cx.metadata().generation();
        if generation == self.metadata_generation {
            if std::mem::take(&mut self.leaders_stale) {
                self.sync_leaders(cx);
            }
            return;
        }
        self.leaders_stale = false;
        self.sync_leaders(cx);
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
        self.refresh_metadata(cx);
        self.collect_fetches(cx);
        self.collect_resets(cx);
        self.collect_validations(cx);
        // Answers may have set positions (resets) or asked for validations.
        if std::mem::take(&mut self.leaders_stale) {
            self.sync_leaders(cx);
        }
        self.send_resets(cx);
        self.send_validations(cx);
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
            .filter(|p| (p.reset.is_some() && !p.resetting) || (p.validate && !p.validating))
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
