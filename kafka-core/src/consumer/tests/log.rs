//! One partition's log on the scripted broker: batches written under leader epochs, the
//! leader epoch cache Kafka keeps (epoch → start offset) and truncation.

use bytes::Bytes;

use crate::record::{BatchBuilder, BatchOptions};

/// One partition's log: encoded batches with their base offsets.
pub(super) struct Log {
    pub(super) batches: Vec<(i64, Bytes)>,
    pub(super) next: i64,
    /// Aborted transactions (producer id, first offset).
    pub(super) aborted: Vec<(i64, i64)>,
    /// The leader epoch new batches are written under.
    pub(super) epoch: i32,
    /// Kafka's leader epoch cache: `(epoch, start offset)`, ascending.
    pub(super) epochs: Vec<(i32, i64)>,
}

impl Default for Log {
    fn default() -> Self {
        Log {
            batches: Vec::new(),
            next: 0,
            aborted: Vec::new(),
            epoch: 1,
            epochs: vec![(1, 0)],
        }
    }
}

impl Log {
    pub(super) fn append(&mut self, values: &[&str], producer: Option<(i64, bool)>) {
        let mut opts = BatchOptions {
            base_offset: self.next,
            partition_leader_epoch: self.epoch,
            ..Default::default()
        };
        if let Some((pid, _)) = producer {
            opts.producer_id = pid;
            opts.producer_epoch = 0;
            opts.base_sequence = 0;
            opts.transactional = true;
        }
        let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
        for v in values {
            let _ = b.append(1, None, Some(v.as_bytes()), &[]).unwrap();
        }
        let sealed = b.seal().unwrap();
        self.batches.push((self.next, sealed.bytes.freeze()));
        self.next += values.len() as i64;
    }

    /// Appends `values` one batch of five at a time.
    pub(super) fn append_values(&mut self, values: &[String]) {
        for chunk in values.chunks(5) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            self.append(&refs, None);
        }
    }

    /// A transaction marker for `pid` (commit or abort).
    pub(super) fn marker(&mut self, pid: i64, commit: bool, first: i64) {
        let opts = BatchOptions {
            base_offset: self.next,
            partition_leader_epoch: self.epoch,
            producer_id: pid,
            producer_epoch: 0,
            transactional: true,
            control: true,
            ..Default::default()
        };
        let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
        let key = [0u8, 0, 0, if commit { 1 } else { 0 }];
        let value = [0u8, 0, 0, 0, 0, 5];
        let _ = b.append(1, Some(&key), Some(&value), &[]).unwrap();
        self.batches
            .push((self.next, b.seal().unwrap().bytes.freeze()));
        if !commit {
            self.aborted.push((pid, first));
        }
        self.next += 1;
    }

    /// A new leader with `epoch` takes over at the log end (Kafka's epoch cache entry).
    pub(super) fn new_epoch(&mut self, epoch: i32) {
        self.epoch = epoch;
        self.epochs.push((epoch, self.next));
    }

    /// Drops every batch from `offset` on (an unclean leader did not have them), and the
    /// epochs that started after it.
    pub(super) fn truncate(&mut self, offset: i64) {
        self.batches.retain(|(base, _)| *base < offset);
        assert!(
            self.batches
                .last()
                .is_none_or(|(base, b)| base + count(b) <= offset),
            "truncate at a batch boundary"
        );
        self.next = offset;
        self.epochs.retain(|&(_, start)| start <= offset);
    }

    /// OffsetForLeaderEpoch as Kafka's leader epoch cache answers it: the latest epoch
    /// ends at the log end; an older one at the start of the next epoch, named as the
    /// largest epoch at most the one asked; one newer than every epoch is unknown (-1, -1).
    pub(super) fn end_of(&self, epoch: i32) -> (i32, i64) {
        let latest = self.epochs.last().map_or(-1, |&(e, _)| e);
        if epoch == latest {
            return (latest, self.next);
        }
        let Some(&(_, higher_start)) = self.epochs.iter().find(|&&(e, _)| e > epoch) else {
            return (-1, -1);
        };
        match self.epochs.iter().rev().find(|&&(e, _)| e <= epoch) {
            Some(&(floor, _)) => (floor, higher_start),
            None => (epoch, higher_start),
        }
    }

    /// The batch holding `offset` whole, then the first half of the next one (as a
    /// broker cuts an answer at its size limit).
    pub(super) fn read_with_partial_tail(&self, offset: i64) -> Bytes {
        let mut batches = self
            .batches
            .iter()
            .skip_while(|(base, bytes)| base + count(bytes) <= offset);
        let mut out = Vec::new();
        if let Some((_, whole)) = batches.next() {
            out.extend_from_slice(whole);
        }
        if let Some((_, next)) = batches.next() {
            out.extend_from_slice(&next[..next.len() / 2]);
        }
        Bytes::from(out)
    }

    /// Whole batches from the one holding `offset`, up to `max` bytes (at least one).
    pub(super) fn read(&self, offset: i64, max: usize) -> Bytes {
        let mut out = Vec::new();
        for (base, bytes) in &self.batches {
            if base + count(bytes) <= offset {
                continue;
            }
            if !out.is_empty() && out.len() + bytes.len() > max {
                break;
            }
            out.extend_from_slice(bytes);
        }
        Bytes::from(out)
    }
}

/// Records in an encoded v2 batch.
fn count(batch: &Bytes) -> i64 {
    i64::from(i32::from_be_bytes([
        batch[57], batch[58], batch[59], batch[60],
    ]))
}
