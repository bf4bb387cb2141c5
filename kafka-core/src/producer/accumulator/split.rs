//! Splitting a batch the broker refused as too large (MESSAGE_TOO_LARGE), as Java's
//! `ProducerBatch.split` and `RecordAccumulator.splitAndReenqueue` do.
//!
//! The records are decoded from the batch's own bytes and written again, in order, into
//! pieces of at most half the batch (and at most `batch.size`), so every split makes
//! progress: Java splits by `batch.size`, which cannot shrink an uncompressed batch that
//! was built within `batch.size`. Each piece keeps the batch's id, creation time, send
//! order and attempts, and says which of the batch's records it holds (`first`).
//!
//! Sequences (idempotence): as in Java, a batch that had a sequence hands its range on —
//! piece *k* gets the batch's base sequence plus the records before it, under the same
//! producer id and epoch — so nothing after it needs renumbering and no epoch bump is
//! needed: the broker appended nothing of the refused batch, so it still expects the
//! batch's base sequence.

use bytes::Bytes;

use super::{Accumulator, Batch, BatchBytes, BATCH_OVERHEAD};
use crate::producer::idempotence::add_sequence;
use crate::record::{
    Append, BatchBuilder, DecodeOptions, Header, NewHeader, NewRecord, ProducerState, RecordBatch,
    RecordError,
};

impl Accumulator {
    /// Splits `batch` into pieces that take its place among its partition's failed
    /// batches: like retries, they go back to the front of the queue, in order, once
    /// nothing of the partition is in flight. Returns the number of pieces, or the batch
    /// back if it cannot be split (a single record, or bytes that do not decode).
    pub(in crate::producer) fn split(&mut self, mut batch: Batch) -> Result<usize, Batch> {
        if batch.records < 2 {
            return Err(batch);
        }
        let bytes = batch.bytes.share();
        let pieces = match self.pieces(&batch, &bytes) {
            Ok(p) if p.len() >= 2 => p,
            Ok(_) => return Err(batch),
            #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] // only logged
            Err(e) => {
                crate::trace::warn!(error = %e, "cannot split a batch refused as too large");
                return Err(batch);
            }
        };
        let total: usize = pieces.iter().map(|p| p.charged).sum();
        // The pieces hold what the batch held: the first also takes the rest of its
        // charge (its reservation), so `used` grows only by the pieces' extra headers.
        let spare = batch.charged.saturating_sub(total);
        self.used = self.used - batch.charged + total + spare;
        if let Some(n) = self.outstanding.get_mut(&batch.id.0) {
            *n += pieces.len() as u32 - 1;
        }
        let n = pieces.len();
        let failed = &mut self.parts[batch.part].failed;
        for (i, mut piece) in pieces.into_iter().enumerate() {
            if i == 0 {
                piece.charged += spare;
            }
            failed.push(piece);
        }
        Ok(n)
    }

    /// Writes the records of `batch` (whose bytes are `bytes`) into pieces.
    fn pieces(&self, batch: &Batch, bytes: &Bytes) -> Result<Vec<Batch>, RecordError> {
        let (decoded, _) = RecordBatch::decode(bytes, &DecodeOptions::default())?;
        let header = *decoded.header();
        let section = decoded.records_section()?.len();
        let target = (BATCH_OVERHEAD + section / 2).min(self.batch_size);
        let mut builder = BatchBuilder::new(self.opts, target)?;
        let mut pieces: Vec<Batch> = Vec::new();
        let mut piece_first = 0u32;
        let mut headers: Vec<Header> = Vec::new();
        for (index, record) in (0u32..).zip(decoded.records()?) {
            let record = record?;
            headers.clear();
            headers.extend(record.headers.iter());
            // Allocates per record, on this rare path only.
            let mut new_headers: Vec<NewHeader<'_>> = Vec::with_capacity(headers.len());
            for h in &headers {
                new_headers.push(NewHeader {
                    key: h
                        .key_str()
                        .ok_or(RecordError::Unencodable("header key is not UTF-8"))?,
                    value: h.value.as_deref(),
                });
            }
            let new = NewRecord {
                timestamp: record.timestamp,
                key: record.key.as_deref(),
                value: record.value.as_deref(),
                headers: &new_headers,
            };
            if builder.append_record(&new)? == Append::Full {
                pieces.push(self.piece(batch, &header, &mut builder, piece_first)?);
                piece_first = index;
                if builder.append_record(&new)? == Append::Full {
                    return Err(RecordError::Unencodable("a piece refused its first record"));
                }
            }
        }
        if !builder.is_empty() {
            pieces.push(self.piece(batch, &header, &mut builder, piece_first)?);
        }
        Ok(pieces)
    }

    /// Seals the open piece, whose first record is record `first` of `batch`.
    fn piece(
        &self,
        batch: &Batch,
        header: &crate::record::BatchHeader,
        builder: &mut BatchBuilder,
        first: u32,
    ) -> Result<Batch, RecordError> {
        let records = builder.len() as u32;
        let seq = batch.seq.map(|(s, epoch)| (add_sequence(s, first), epoch));
        builder.set_producer_state(&ProducerState {
            producer_id: header.producer_id,
            producer_epoch: header.producer_epoch,
            base_sequence: seq.map_or(-1, |(s, _)| s),
            transactional: header.attributes.transactional,
        });
        let sealed = builder.seal()?;
        Ok(Batch {
            id: batch.id,
            part: batch.part,
            first: batch.first + first,
            records,
            charged: sealed.bytes.len(),
            bytes: BatchBytes::Unsent(sealed.bytes),
            created: batch.created,
            seq,
            order: batch.order,
            attempts: batch.attempts,
            maybe_written: batch.maybe_written,
        })
    }
}
