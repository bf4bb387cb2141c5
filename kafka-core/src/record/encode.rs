//! Encoding v2 record batches into a caller-owned buffer.

use super::header::{
    BatchAttributes, BatchHeader, ATTRIBUTES_OFFSET, BATCH_HEADER_LEN, CRC_OFFSET, LOG_OVERHEAD,
    RECORDS_COUNT_OFFSET,
};
use super::record::{encode_record, NewRecord};
use super::{compression, Compression, RecordError, TimestampType};

/// Header values of a batch to encode. The rest (length, CRC, record count, last
/// offset delta, base and max timestamps) is computed from the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Base offset; producers send 0.
    pub base_offset: i64,
    /// Partition leader epoch; clients send -1.
    pub partition_leader_epoch: i32,
    /// Codec for the records section.
    pub compression: Compression,
    /// Codec level (gzip 1-9, zstd levels); `None` is Kafka's default.
    pub compression_level: Option<i32>,
    /// Timestamp type.
    pub timestamp_type: TimestampType,
    /// The max timestamp written under [`TimestampType::LogAppendTime`] (the broker's
    /// append time); ignored under CreateTime.
    pub log_append_time: i64,
    /// Transactional flag.
    pub transactional: bool,
    /// Control flag; see [`ControlRecord`](super::ControlRecord).
    pub control: bool,
    /// Producer id, -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 if none.
    pub base_sequence: i32,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            base_offset: 0,
            partition_leader_epoch: -1,
            compression: Compression::None,
            compression_level: None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: -1,
            transactional: false,
            control: false,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        }
    }
}

/// What [`BatchEncoder::encode`] appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct EncodedBatch {
    /// Where the batch starts in the output buffer.
    pub start: usize,
    /// Its size in bytes.
    pub len: usize,
    /// The header as written.
    pub header: BatchHeader,
}

/// Encodes v2 batches. Keeps a scratch buffer for compressed batches and the codec
/// contexts (gzip, zstd) so repeated use does not allocate.
#[derive(Debug, Default, Clone)]
pub struct BatchEncoder {
    scratch: Vec<u8>,
    contexts: compression::Contexts,
}

impl BatchEncoder {
    /// A new encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one batch holding `records` (offset deltas 0, 1, 2, ...) to `out`.
    ///
    /// Uncompressed records are written straight into `out`; compressed ones go
    /// through the scratch buffer. The CRC-32C is computed in one pass over the
    /// finished bytes. On error `out` is left as it was.
    pub fn encode<'r, I>(
        &mut self,
        opts: &BatchOptions,
        records: I,
        out: &mut Vec<u8>,
    ) -> Result<EncodedBatch, RecordError>
    where
        I: IntoIterator<Item = NewRecord<'r>>,
    {
        let start = out.len();
        let result = self.encode_inner(opts, records, start, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode_inner<'r, I>(
        &mut self,
        opts: &BatchOptions,
        records: I,
        start: usize,
        out: &mut Vec<u8>,
    ) -> Result<EncodedBatch, RecordError>
    where
        I: IntoIterator<Item = NewRecord<'r>>,
    {
        if !opts.compression.is_enabled() {
            return Err(RecordError::UnsupportedCompression(opts.compression));
        }
        out.reserve(BATCH_HEADER_LEN);
        out.resize(start + BATCH_HEADER_LEN, 0);
        let compressed = opts.compression != Compression::None;
        let body = if compressed {
            self.scratch.clear();
            &mut self.scratch
        } else {
            &mut *out
        };
        let mut count: i32 = 0;
        let mut base_timestamp = -1i64;
        let mut max_timestamp = -1i64;
        for rec in records {
            if count == 0 {
                base_timestamp = rec.timestamp;
                max_timestamp = rec.timestamp;
            } else {
                max_timestamp = max_timestamp.max(rec.timestamp);
            }
            encode_record(
                body,
                &rec,
                rec.timestamp.wrapping_sub(base_timestamp),
                count,
            )?;
            count = count
                .checked_add(1)
                .ok_or(RecordError::Unencodable("more than i32::MAX records"))?;
        }
        if count == 0 {
            return Err(RecordError::Unencodable(
                "a batch needs at least one record",
            ));
        }
        if compressed {
            self.contexts
                .compress(opts.compression, opts.compression_level, &self.scratch, out)?;
        }
        let len = out.len() - start;
        let header = seal_header(
            &mut out[start..],
            opts,
            count,
            base_timestamp,
            max_timestamp,
        )?;
        Ok(EncodedBatch { start, len, header })
    }
}

/// Fills in the header of a finished batch: `batch` is the whole batch, a 61-byte
/// placeholder followed by the (compressed) records section holding `count` records.
/// Writes every header field from `opts` and the record facts, then the CRC-32C in one
/// pass over the bytes it covers; returns the header as written (CRC included).
pub(crate) fn seal_header(
    batch: &mut [u8],
    opts: &BatchOptions,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
) -> Result<BatchHeader, RecordError> {
    debug_assert!(batch.len() >= BATCH_HEADER_LEN && count > 0);
    let batch_length = i32::try_from(batch.len() - LOG_OVERHEAD)
        .map_err(|_| RecordError::Unencodable("batch over i32::MAX bytes"))?;
    let mut header = BatchHeader {
        base_offset: opts.base_offset,
        batch_length,
        partition_leader_epoch: opts.partition_leader_epoch,
        magic: 2,
        crc: 0,
        attributes: BatchAttributes {
            compression: opts.compression,
            timestamp_type: opts.timestamp_type,
            transactional: opts.transactional,
            control: opts.control,
            delete_horizon: false,
        },
        last_offset_delta: count - 1,
        base_timestamp,
        max_timestamp: match opts.timestamp_type {
            TimestampType::CreateTime => max_timestamp,
            TimestampType::LogAppendTime => opts.log_append_time,
        },
        producer_id: opts.producer_id,
        producer_epoch: opts.producer_epoch,
        base_sequence: opts.base_sequence,
        records_count: count,
    };
    batch[..BATCH_HEADER_LEN].copy_from_slice(&header.to_bytes());
    header.crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&header.crc.to_be_bytes());
    debug_assert_eq!(
        &batch[RECORDS_COUNT_OFFSET..BATCH_HEADER_LEN],
        &count.to_be_bytes()
    );
    Ok(header)
}
