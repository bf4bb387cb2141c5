//! The accumulator: one open batch per partition, written as v2 bytes while records
//! arrive, sealed on `batch.size`, `linger.ms` or flush, then queued for the sender;
//! and `buffer.memory`, charged per batch and never exceeded.
//!
//! A partition's queue holds its sealed batches in send order. Retries go back to the
//! front of it, in their original order, once nothing of the partition is in flight
//! (see `sender.rs`), so the queue order is the partition's order. A batch the broker
//! refused as too large is split into pieces that take its place (`split.rs`).

mod split;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use super::delivery::{BatchId, ProduceError, Report};
use super::partitioner::Sticky;
use crate::client::Cause;
use crate::protocol::types::Uuid;
use crate::record::{Append, BatchBuilder, BatchOptions, NewRecord, RecordError};

/// Header bytes of a v2 batch.
pub(super) const BATCH_OVERHEAD: usize = crate::record::BATCH_HEADER_LEN;

/// A sealed batch on its way to the broker, owned by its partition's queue or by the
/// request carrying it.
#[derive(Debug)]
pub(super) struct Batch {
    pub(super) id: BatchId,
    /// Index of its partition in [`Accumulator::parts`].
    pub(super) part: usize,
    /// The [`Appended::index`](super::Appended::index) of its first record in batch `id`
    /// (0 unless it is a piece of a split batch).
    pub(super) first: u32,
    pub(super) records: u32,
    /// The batch as on the wire; not shared until its first send freezes it.
    pub(super) bytes: BatchBytes,
    /// When its first record was appended (the delivery timeout counts from here).
    pub(super) created: Instant,
    /// Bytes charged to `buffer.memory`.
    pub(super) charged: usize,
    /// Base sequence and epoch written into it, once assigned (idempotence).
    pub(super) seq: Option<(i32, i16)>,
    /// Position in the partition's send order, once first sent.
    pub(super) order: u64,
    /// Times sent.
    pub(super) attempts: u32,
    /// A request carrying it was written and its outcome never learnt.
    pub(super) maybe_written: bool,
}

impl Batch {
    /// How to report this batch failed with `error`: as `error`, unless a request
    /// carrying it was written and its outcome never learnt — then the broker may have
    /// it, and the report must not say it was never written
    /// ([`ProduceError::Unresolved`]).
    pub(super) fn failure(&self, error: ProduceError) -> ProduceError {
        if self.maybe_written && !error.possibly_delivered() {
            ProduceError::Unresolved
        } else {
            error
        }
    }
}

/// The bytes of a sealed batch: mutable until sent (the producer fields are written
/// then), shared after.
#[derive(Debug)]
pub(super) enum BatchBytes {
    Unsent(BytesMut),
    Sent(Bytes),
}

impl BatchBytes {
    pub(super) fn len(&self) -> usize {
        match self {
            BatchBytes::Unsent(b) => b.len(),
            BatchBytes::Sent(b) => b.len(),
        }
    }

    /// Mutable access for rewriting the producer fields (copies only if a request
    /// still holds the bytes, which the sender never lets happen).
    pub(super) fn as_mut(&mut self) -> &mut BytesMut {
        if let BatchBytes::Sent(b) = self {
            let owned = std::mem::take(b);
            let m = owned
                .try_into_mut()
                .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
            *self = BatchBytes::Unsent(m);
        }
        match self {
            BatchBytes::Unsent(m) => m,
            BatchBytes::Sent(_) => unreachable!("converted above"),
        }
    }

    /// Shared bytes for a request.
    pub(super) fn share(&mut self) -> Bytes {
        if let BatchBytes::Unsent(m) = self {
            *self = BatchBytes::Sent(std::mem::take(m).freeze());
        }
        match self {
            BatchBytes::Sent(b) => b.clone(),
            BatchBytes::Unsent(_) => unreachable!("frozen above"),
        }
    }
}

/// The batch being filled.
#[derive(Debug)]
struct OpenBatch {
    id: BatchId,
    created: Instant,
    /// When `linger.ms` is up (its key in [`Accumulator::lingering`]).
    due: Instant,
    charged: usize,
}

/// One partition's producing state.
#[derive(Debug)]
pub(super) struct Part {
    pub(super) topic: Arc<str>,
    pub(super) topic_id: Uuid,
    pub(super) partition: i32,
    builder: BatchBuilder,
    open: Option<OpenBatch>,
    /// Sealed batches to send, in order (retries first).
    pub(super) queued: VecDeque<Batch>,
    /// Batches of this partition in unresolved requests.
    pub(super) inflight: u32,
    /// The broker those requests went to (one at a time per partition, see the sender).
    pub(super) inflight_node: Option<i32>,
    /// Batches that failed retriably and wait for `inflight` to reach 0.
    pub(super) failed: Vec<Batch>,
    /// The next base sequence to assign (idempotence).
    pub(super) next_seq: i32,
    /// The sequence the broker expects after the last acknowledged batch.
    pub(super) acked_next: i32,
    /// Whether the broker acknowledged a batch of this partition under the current
    /// producer epoch. Until it has, the broker keeps no sequence for us there and
    /// accepts any first sequence, so only one request of the partition may be in
    /// flight (else a retried first batch could land behind its successors).
    pub(super) confirmed: bool,
    /// The next send-order position.
    pub(super) next_order: u64,
    /// Not before this instant (retry backoff).
    pub(super) backoff_until: Option<Instant>,
    /// Why its last failed attempt failed, until a batch is delivered (a delivery
    /// timeout names it).
    pub(super) last_cause: Option<Box<Cause>>,
}

/// What the producer knows of one topic.
#[derive(Debug)]
pub(super) struct TopicEntry {
    pub(super) name: Arc<str>,
    pub(super) id: Uuid,
    /// Partition count.
    pub(super) partitions: i32,
    /// Index in `parts` by partition number.
    pub(super) parts: Vec<usize>,
    /// Partitions with a known leader.
    pub(super) available: Vec<i32>,
    pub(super) sticky: Sticky,
}

/// The topic entries by name. Records mostly name the topic of the record before, so
/// the last entry found is checked first: a string comparison instead of hashing the
/// name on every send.
#[derive(Debug, Default)]
pub(super) struct Topics {
    entries: Vec<TopicEntry>,
    index: HashMap<Box<str>, usize>,
    last: usize,
}

impl Topics {
    /// The entry of `name`.
    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut TopicEntry> {
        let hit = self
            .entries
            .get(self.last)
            .is_some_and(|e| &*e.name == name);
        if !hit {
            self.last = *self.index.get(name)?;
        }
        self.entries.get_mut(self.last)
    }

    /// Adds (or replaces) the entry of `name`.
    pub(super) fn insert(&mut self, name: &str, entry: TopicEntry) {
        match self.index.get(name) {
            Some(&i) => self.entries[i] = entry,
            None => {
                self.index.insert(name.into(), self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Every entry.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut TopicEntry> {
        self.entries.iter_mut()
    }
}

/// Per-partition batches and the memory budget.
pub(super) struct Accumulator {
    pub(super) parts: Vec<Part>,
    pub(super) topics: Topics,
    opts: BatchOptions,
    batch_size: usize,
    linger: Duration,
    budget: usize,
    used: usize,
    /// Memory of finished batches kept for the next ones (Java's `BufferPool`): a new
    /// batch reuses it instead of allocating and faulting in fresh pages. It counts
    /// against `buffer.memory` with `used` and gives way when a record needs the room.
    free: Vec<Vec<u8>>,
    /// What the buffers in `free` count against the budget: a batch's reservation each.
    pooled: usize,
    next_batch: u64,
    /// Open batches by linger deadline.
    lingering: BTreeSet<(Instant, usize)>,
    /// Partitions with queued batches.
    pub(super) ready: BTreeSet<usize>,
    /// Batches not yet fully reported, by id, with the number of their pieces not yet
    /// reported (1 unless split); the smallest id tells what a flush waits for.
    pub(super) outstanding: BTreeMap<u64, u32>,
    /// Reports not yet taken by the application.
    pub(super) reports: VecDeque<Report>,
    /// The first batch failure since the transaction manager last looked (a
    /// transaction with a failed record cannot commit).
    pub(super) first_failure: Option<ProduceError>,
}

impl Accumulator {
    pub(super) fn new(
        opts: BatchOptions,
        batch_size: usize,
        linger: Duration,
        budget: usize,
    ) -> Self {
        Accumulator {
            parts: Vec::new(),
            topics: Topics::default(),
            opts,
            batch_size,
            linger,
            budget,
            used: 0,
            free: Vec::new(),
            pooled: 0,
            next_batch: 0,
            lingering: BTreeSet::new(),
            ready: BTreeSet::new(),
            outstanding: BTreeMap::new(),
            reports: VecDeque::new(),
            first_failure: None,
        }
    }

    pub(super) fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Bytes charged to `buffer.memory` now.
    pub(super) fn used(&self) -> usize {
        self.used
    }

    pub(super) fn budget(&self) -> usize {
        self.budget
    }

    /// What the pooled buffers of finished batches count against the budget.
    pub(super) fn pooled(&self) -> usize {
        self.pooled
    }

    /// The id the next batch opened gets (every id below it was handed out).
    pub(super) fn next_batch_id(&self) -> u64 {
        self.next_batch
    }

    /// The topic's entry, found with one lookup by name, and what finding (or creating)
    /// one of its partitions' state needs; `None` if the topic is not known yet.
    pub(super) fn topic(&mut self, name: &str) -> Option<TopicSlot<'_>> {
        let entry = self.topics.get_mut(name)?;
        Some(TopicSlot {
            entry,
            parts: &mut self.parts,
            opts: self.opts,
            batch_size: self.batch_size,
        })
    }

    /// Whether a record of at most `size` bytes fits the budget: in the open batch, its
    /// growth past the batch's charge; if it may not fit the open batch (the builder
    /// would answer `Full`) or none is open, the reservation of the batch it opens.
    ///
    /// When it does not fit and would need a new batch, the open batch is sealed, so it
    /// is sent (and its memory comes back) without waiting for `linger.ms`, as Java
    /// sends a batch a record did not fit in.
    pub(super) fn fits(&mut self, part: usize, size: usize) -> bool {
        let p = &self.parts[part];
        let in_open = p.open.as_ref().and_then(|open| {
            let grown = p.builder.estimated_size() + size;
            (grown <= self.batch_size).then(|| grown.saturating_sub(open.charged))
        });
        let extra = in_open.unwrap_or_else(|| self.reservation().max(size + BATCH_OVERHEAD));
        let fits = self.used + extra <= self.budget;
        if fits {
            // A new batch takes a pooled buffer: that one is already counted.
            let reused = if in_open.is_none() && !self.free.is_empty() {
                self.reservation()
            } else {
                0
            };
            self.trim_pool(self.budget - extra + reused);
        }
        if !fits && in_open.is_none() && self.parts[part].open.is_some() {
            // A sealing failure is reported inside `seal`.
            let _ = self.seal(part);
        }
        fits
    }

    /// What a new batch is charged up front: the builder's buffer reservation.
    fn reservation(&self) -> usize {
        BATCH_OVERHEAD + self.batch_size.min(1 << 20)
    }

    /// Appends a record (already checked with [`fits`](Self::fits)); returns the
    /// batch and index it got. A batch it opens is created `now` (the delivery timeout
    /// counts from there) and lingers from `sent` (≤ `now`: when the application handed
    /// the record over).
    pub(super) fn append(
        &mut self,
        (now, sent): (Instant, Instant),
        part: usize,
        record: &NewRecord<'_>,
        size: usize,
    ) -> Result<(BatchId, u32), RecordError> {
        if self.parts[part].open.is_some() {
            match self.parts[part].builder.append_record(record)? {
                Append::Appended { offset_delta } => {
                    let id = self.grow(part);
                    return Ok((id, offset_delta as u32));
                }
                Append::Full => self.seal(part)?,
            }
        }
        self.open(now, sent, part, size);
        match self.parts[part].builder.append_record(record) {
            Ok(Append::Appended { offset_delta }) => {
                let id = self.grow(part);
                Ok((id, offset_delta as u32))
            }
            Ok(Append::Full) => unreachable!("the first record of a batch is always appended"),
            Err(e) => {
                self.discard_open(part);
                Err(e)
            }
        }
    }

    /// Charges growth of the open batch past its reservation; returns its id.
    fn grow(&mut self, part: usize) -> BatchId {
        let size = self.parts[part].builder.estimated_size();
        let open = self.parts[part].open.as_mut().expect("open batch");
        if size > open.charged {
            self.used += size - open.charged;
            open.charged = size;
        }
        open.id
    }

    fn open(&mut self, now: Instant, sent: Instant, part: usize, size: usize) {
        let charged = self.reservation().max(size + BATCH_OVERHEAD);
        self.used += charged;
        let reservation = self.reservation();
        let builder = &mut self.parts[part].builder;
        if !builder.spare_is_free() {
            if let Some(buf) = self.free.pop() {
                self.pooled -= reservation;
                builder.give_buffer(buf);
            }
        }
        self.trim_pool(self.budget);
        let id = BatchId(self.next_batch);
        self.next_batch += 1;
        self.outstanding.insert(id.0, 1);
        let due = sent.min(now) + self.linger;
        self.parts[part].open = Some(OpenBatch {
            id,
            created: now,
            due,
            charged,
        });
        self.lingering.insert((due, part));
    }

    /// Drops an open batch that got no record (its first append failed).
    fn discard_open(&mut self, part: usize) {
        if let Some(open) = self.parts[part].open.take() {
            self.used -= open.charged;
            self.outstanding.remove(&open.id.0);
            self.lingering.remove(&(open.due, part));
        }
        self.parts[part].builder.reset();
    }

    /// Seals the partition's open batch into its queue.
    pub(super) fn seal(&mut self, part: usize) -> Result<(), RecordError> {
        let Some(open) = self.parts[part].open.take() else {
            return Ok(());
        };
        self.lingering.remove(&(open.due, part));
        let p = &mut self.parts[part];
        let records = p.builder.len() as u32;
        let sealed = match p.builder.seal() {
            Ok(s) => s,
            Err(e) => {
                // A codec failure: report the batch failed rather than lose it silently.
                p.builder.reset();
                self.used -= open.charged;
                self.outstanding.remove(&open.id.0);
                let report = Report {
                    batch: open.id,
                    topic: p.topic.clone(),
                    partition: p.partition,
                    first: 0,
                    records,
                    outcome: Err(ProduceError::Request(format!("sealing the batch: {e}"))),
                };
                self.reports.push_back(report);
                return Err(e);
            }
        };
        let charged = open.charged.max(sealed.bytes.len());
        self.used += charged - open.charged;
        p.queued.push_back(Batch {
            id: open.id,
            part,
            first: 0,
            records,
            bytes: BatchBytes::Unsent(sealed.bytes),
            created: open.created,
            charged,
            seq: None,
            order: 0,
            attempts: 0,
            maybe_written: false,
        });
        self.ready.insert(part);
        Ok(())
    }

    /// Seals every open batch whose linger time is up at `now`; returns the next
    /// linger deadline.
    pub(super) fn seal_due(&mut self, now: Instant) -> Option<Instant> {
        while let Some(&(at, part)) = self.lingering.first() {
            if at > now {
                return Some(at);
            }
            self.lingering.pop_first();
            // A sealing failure is reported inside `seal`.
            let _ = self.seal(part);
        }
        None
    }

    /// The earliest linger deadline after `now` of the open batches (those due by `now`
    /// are sealed at the next [`seal_due`](Self::seal_due)).
    pub(super) fn next_linger_after(&self, now: Instant) -> Option<Instant> {
        self.lingering
            .iter()
            .map(|&(at, _)| at)
            .find(|&at| at > now)
    }

    /// Seals every open batch (flush, close).
    pub(super) fn seal_all(&mut self) {
        while let Some((_, part)) = self.lingering.pop_first() {
            let _ = self.seal(part);
        }
    }

    /// Ends a batch (or a piece of a split one): releases its charge and queues its
    /// report.
    pub(super) fn finish(
        &mut self,
        mut batch: Batch,
        outcome: Result<super::Delivered, ProduceError>,
    ) {
        self.used -= batch.charged;
        self.recycle(&mut batch.bytes);
        if let Some(pieces) = self.outstanding.get_mut(&batch.id.0) {
            *pieces -= 1;
            if *pieces == 0 {
                self.outstanding.remove(&batch.id.0);
            }
        }
        if let (Err(e), None) = (&outcome, &self.first_failure) {
            self.first_failure = Some(e.clone());
        }
        let p = &self.parts[batch.part];
        let outcome = outcome.map(|d| super::Delivered {
            first_index: batch.first,
            ..d
        });
        self.reports.push_back(Report {
            batch: batch.id,
            topic: p.topic.clone(),
            partition: p.partition,
            first: batch.first,
            records: batch.records,
            outcome,
        });
    }

    /// Keeps a finished batch's memory for a later batch if nobody else holds it, it is
    /// at least a batch's reservation and the budget has room for it.
    fn recycle(&mut self, bytes: &mut BatchBytes) {
        let buf = match std::mem::replace(bytes, BatchBytes::Sent(Bytes::new())) {
            BatchBytes::Unsent(m) => m,
            BatchBytes::Sent(b) => match b.try_into_mut() {
                Ok(m) => m,
                // The builder still holds the batch's memory for its next batch.
                Err(_) => return,
            },
        };
        let buf = Vec::from(buf);
        let size = self.reservation();
        if buf.capacity() >= size && self.used + self.pooled + size <= self.budget {
            self.pooled += size;
            self.free.push(buf);
        }
    }

    /// Frees pooled buffers until `used` and the pool take at most `limit` bytes.
    fn trim_pool(&mut self, limit: usize) {
        while self.used + self.pooled > limit && self.free.pop().is_some() {
            self.pooled -= self.reservation();
        }
    }

    /// Fails every batch that is not in a request: open, queued and waiting retries.
    pub(super) fn fail_all(&mut self, mut error: impl FnMut(&Batch) -> ProduceError) {
        self.seal_all();
        for part in 0..self.parts.len() {
            let mut batches: Vec<Batch> = self.parts[part].queued.drain(..).collect();
            batches.append(&mut self.parts[part].failed);
            for b in batches {
                let e = error(&b);
                self.finish(b, Err(e));
            }
        }
        self.ready.clear();
    }
}

/// A topic's entry borrowed for one send, with the partitions' states (see
/// [`Accumulator::topic`]).
pub(super) struct TopicSlot<'a> {
    pub(super) entry: &'a mut TopicEntry,
    parts: &'a mut Vec<Part>,
    opts: BatchOptions,
    batch_size: usize,
}

impl TopicSlot<'_> {
    /// The index in [`Accumulator::parts`] of the topic's `partition` (checked to be in
    /// range), creating its state on first use.
    pub(super) fn part_index(&mut self, partition: i32) -> Result<usize, RecordError> {
        let entry = &mut *self.entry;
        let p = partition as usize;
        if let Some(&i) = entry.parts.get(p).filter(|&&i| i != usize::MAX) {
            return Ok(i);
        }
        if entry.parts.len() <= p {
            entry.parts.resize(p + 1, usize::MAX);
        }
        let i = self.parts.len();
        self.parts.push(Part {
            topic: entry.name.clone(),
            topic_id: entry.id,
            partition,
            builder: BatchBuilder::new(self.opts, self.batch_size)?,
            open: None,
            queued: VecDeque::new(),
            inflight: 0,
            failed: Vec::new(),
            next_seq: 0,
            acked_next: 0,
            confirmed: false,
            next_order: 0,
            backoff_until: None,
            last_cause: None,
            inflight_node: None,
        });
        entry.parts[p] = i;
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, partitions: i32) -> TopicEntry {
        TopicEntry {
            name: name.into(),
            id: Uuid::default(),
            partitions,
            parts: Vec::new(),
            available: (0..partitions).collect(),
            sticky: Sticky::default(),
        }
    }

    #[test]
    fn topics_finds_each_entry_whichever_was_looked_up_last() {
        let mut topics = Topics::default();
        assert!(topics.get_mut("a").is_none(), "nothing known yet");
        topics.insert("a", entry("a", 1));
        topics.insert("b", entry("b", 2));
        topics.insert("c", entry("c", 3));
        // Alternating names, repeats (the cached last one) and a miss in between.
        for (name, partitions) in [("a", 1), ("a", 1), ("c", 3), ("b", 2), ("b", 2), ("a", 1)] {
            assert_eq!(topics.get_mut(name).map(|e| e.partitions), Some(partitions));
            assert!(topics.get_mut("zz").is_none());
            assert_eq!(topics.get_mut(name).map(|e| e.partitions), Some(partitions));
        }
        // A prefix of a known name is another topic.
        assert!(topics.get_mut("").is_none());
        assert!(topics.get_mut("bb").is_none());

        // Replacing keeps one entry per name, and the lookup sees the new one.
        topics.get_mut("b").unwrap().partitions = 7;
        topics.insert("b", entry("b", 4));
        assert_eq!(topics.get_mut("b").map(|e| e.partitions), Some(4));
        assert_eq!(topics.iter_mut().count(), 3);
        let mut names: Vec<String> = topics.iter_mut().map(|e| e.name.to_string()).collect();
        names.sort();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
