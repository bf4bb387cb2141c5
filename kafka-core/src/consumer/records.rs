//! Fetched data waiting for the application, and handing it out record by record as
//! slices of the fetched buffers: batches are decompressed lazily, one at a time;
//! control batches never surface; under read_committed, batches of aborted
//! transactions are dropped using the answer's aborted-transaction list.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;

use crate::record::{
    Batch, Batches, ControlRecord, DecodeOptions, Headers, Record, RecordError, TimestampType,
};

/// A record as the application gets it. Key, value and headers are slices of the
/// fetched (or decompressed) buffer: nothing is copied.
#[derive(Debug, Clone)]
pub struct ConsumerRecord {
    /// Topic.
    pub topic: Arc<str>,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// The partition leader epoch the batch was written under (-1 if unknown).
    pub leader_epoch: i32,
    /// Timestamp in ms since the Unix epoch.
    pub timestamp: i64,
    /// Whether the timestamp is the create time or the broker's append time.
    pub timestamp_type: TimestampType,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers.
    pub headers: Headers,
}

/// The batch whose records are being handed out.
struct Current {
    records: Box<dyn Iterator<Item = Result<Record, RecordError>> + Send>,
    leader_epoch: i32,
    timestamp_type: TimestampType,
    /// The offset after the batch.
    next: i64,
}

/// One partition's fetched records not yet handed out.
pub(crate) struct Chunk {
    pub(super) part: usize,
    batches: Batches,
    current: Option<Current>,
    /// Aborted transactions `(producer id, first offset)`, by first offset.
    aborted: Vec<(i64, i64)>,
    /// Producers whose open transaction is aborted (read_committed).
    aborting: HashSet<i64>,
    read_committed: bool,
    /// The offset after everything handed out or skipped so far (the fetch offset at
    /// first: a fetch returns whole batches); nothing below it is handed out.
    pub(crate) next_offset: i64,
    /// The leader epoch of the batch `next_offset` follows (-1 until one was read).
    pub(super) next_epoch: i32,
    /// Bytes charged to the fetch buffer budget.
    pub(super) bytes: usize,
    done: bool,
}

impl Chunk {
    pub(crate) fn new(
        part: usize,
        data: Bytes,
        from: i64,
        mut aborted: Vec<(i64, i64)>,
        read_committed: bool,
        opts: DecodeOptions,
    ) -> Self {
        aborted.sort_by_key(|&(_, first)| std::cmp::Reverse(first));
        Chunk {
            part,
            bytes: data.len(),
            batches: Batches::new(data, opts),
            current: None,
            aborted,
            aborting: HashSet::new(),
            read_committed,
            next_offset: from,
            next_epoch: -1,
            done: false,
        }
    }

    /// The next record past everything handed out or skipped, or `None` when the chunk
    /// is used up.
    pub(crate) fn next_record(
        &mut self,
        topic: &Arc<str>,
        partition: i32,
    ) -> Option<Result<ConsumerRecord, RecordError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(cur) = &mut self.current {
                match cur.records.next() {
                    Some(Ok(r)) => {
                        // Behind what was handed out or skipped (a batch starting
                        // before the fetch offset, or data out of offset order): never
                        // handed out again.
                        if r.offset < self.next_offset {
                            continue;
                        }
                        advance(
                            (&mut self.next_offset, &mut self.next_epoch),
                            r.offset + 1,
                            cur.leader_epoch,
                        );
                        return Some(Ok(ConsumerRecord {
                            topic: topic.clone(),
                            partition,
                            offset: r.offset,
                            leader_epoch: cur.leader_epoch,
                            timestamp: r.timestamp,
                            timestamp_type: cur.timestamp_type,
                            key: r.key,
                            value: r.value,
                            headers: r.headers,
                        }));
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => {
                        let to = (&mut self.next_offset, &mut self.next_epoch);
                        advance(to, cur.next, cur.leader_epoch);
                        self.current = None;
                    }
                }
            }
            match self.batches.next() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Err(e)) => {
                    self.done = true;
                    // A batch cut off at the end of the answer is normal, not an error.
                    if self.batches.has_partial_tail() {
                        return None;
                    }
                    return Some(Err(e));
                }
                Some(Ok(batch)) => {
                    if let Err(e) = self.open(batch) {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// Starts handing out a batch's records, or skips it (control, aborted, wholly
    /// behind `next_offset`).
    fn open(&mut self, batch: Batch) -> Result<(), RecordError> {
        match batch {
            Batch::V2(b) => {
                let h = *b.header();
                let next = h.last_offset() + 1;
                if next <= self.next_offset {
                    return Ok(());
                }
                if self.read_committed {
                    while let Some(&(pid, first)) = self.aborted.last() {
                        if first > h.last_offset() {
                            break;
                        }
                        self.aborting.insert(pid);
                        self.aborted.pop();
                    }
                }
                if b.is_control() {
                    if self.read_committed {
                        for r in b.records()? {
                            let r = r?;
                            if let ControlRecord::EndTransaction { commit: false, .. } =
                                ControlRecord::decode(&r)?
                            {
                                self.aborting.remove(&h.producer_id);
                            }
                        }
                    }
                    advance(
                        (&mut self.next_offset, &mut self.next_epoch),
                        next,
                        h.partition_leader_epoch,
                    );
                    return Ok(());
                }
                if self.read_committed
                    && b.is_transactional()
                    && self.aborting.contains(&h.producer_id)
                {
                    advance(
                        (&mut self.next_offset, &mut self.next_epoch),
                        next,
                        h.partition_leader_epoch,
                    );
                    return Ok(());
                }
                self.current = Some(Current {
                    records: Box::new(b.records()?),
                    leader_epoch: h.partition_leader_epoch,
                    timestamp_type: h.attributes.timestamp_type,
                    next,
                });
            }
            Batch::Legacy(b) => {
                let next = b.last_offset() + 1;
                if next <= self.next_offset {
                    return Ok(());
                }
                self.current = Some(Current {
                    records: Box::new(b.records()?),
                    leader_epoch: -1,
                    timestamp_type: TimestampType::CreateTime,
                    next,
                });
            }
        }
        Ok(())
    }
}

/// Everything before `next` is handed out or skipped; the last of it was written under
/// leader epoch `epoch` (`to`: a chunk's `next_offset` and `next_epoch`).
fn advance(to: (&mut i64, &mut i32), next: i64, epoch: i32) {
    if next > *to.0 {
        *to.0 = next;
        *to.1 = epoch;
    }
}
