//! Building one v2 batch a record at a time, for the producer's accumulator.
//!
//! [`BatchBuilder`] writes each appended record's bytes straight into the open batch
//! (the batch's own buffer when uncompressed, a reused buffer for the records section
//! when compressed) and keeps only counters; [`BatchBuilder::seal`] compresses, fills
//! the header, computes the CRC in one pass and hands the batch out as a [`BytesMut`]
//! without copying it. See `producer_state.rs` for rewriting the producer fields of a
//! sealed batch.

use bytes::{Bytes, BytesMut};

use super::encode::seal_header;
use super::header::{BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD};
use super::record::{record_body_len, record_size, write_record, WRITE_SLACK};
use super::RecordError;
use super::{compression, BatchOptions, Compression, NewHeader, NewRecord, ProducerState};

/// Most bytes a builder reserves when it opens a batch; with a larger `batch.size` the
/// buffer grows as records come.
const MAX_RESERVE: usize = 1 << 20;

/// Most bytes a batch may take before compression: the wire's `int32` batch length.
const MAX_BATCH_BYTES: usize = LOG_OVERHEAD + i32::MAX as usize;

/// What [`BatchBuilder::append`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum Append {
    /// The record is in the open batch.
    Appended {
        /// Its offset delta: the broker gives it offset `base offset + offset_delta`.
        offset_delta: i32,
    },
    /// The record was **not** appended: it would take the batch past `batch.size` (or
    /// past `i32::MAX` records or bytes). Seal the batch and append the record to the
    /// next one. Never returned for the first record of a batch.
    Full,
}

/// The bytes and header of a batch [`BatchBuilder::seal`] finished.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct SealedBatch {
    /// The whole batch, exactly as on the wire. [`BytesMut::freeze`] turns it into the
    /// `Bytes` of a Produce request without copying;
    /// [`rewrite_producer_state`](super::rewrite_producer_state) can change its
    /// producer fields in place first (or later, after `Bytes::try_into_mut`).
    pub bytes: BytesMut,
    /// The header as written, CRC included.
    pub header: BatchHeader,
}

/// Builds v2 batches for one partition incrementally: [`append`](Self::append)
/// records until it answers [`Append::Full`] (or the linger time is up), then
/// [`seal`](Self::seal), which also empties the builder for the next batch.
///
/// Order of calls: `append`* → `seal` → `append`* → `seal` …; [`reset`](Self::reset)
/// drops the open batch instead, [`reconfigure`](Self::reconfigure) also changes the
/// options. The queries ([`len`](Self::len), [`estimated_size`](Self::estimated_size),
/// [`first_timestamp`](Self::first_timestamp), …) describe the open batch.
///
/// The `batch.size` limit is Java's: a record is appended if the batch, header
/// included, stays at or under `batch_size` bytes; the first record of a batch is
/// always appended, whatever its size. For a compressed batch the check uses the
/// *uncompressed* size of the records (conservative: compressible data makes batches
/// smaller than `batch.size` on the wire; incompressible data can come out a few bytes
/// larger, from the codec's framing).
///
/// Nothing is allocated per record: no record objects are kept, and the buffers and
/// codec contexts live as long as the builder. A sealed batch is split off the
/// builder's buffer, so its memory is reused for a later batch once every handle to
/// the sealed bytes has been dropped; while it is still held (an in-flight request)
/// the next batch gets a fresh buffer.
///
/// The produced bytes are identical to [`BatchEncoder`](super::BatchEncoder)'s for the
/// same options and records.
pub struct BatchBuilder {
    opts: BatchOptions,
    batch_size: usize,
    /// `batch_size`, capped at what the wire's batch length can say.
    limit: usize,
    /// `opts.compression` is not `None`.
    compressed: bool,
    /// The open batch: uncompressed, a zeroed 61-byte header then the records;
    /// compressed, the records section before compression. Records go into a plain
    /// `Vec`, exactly as in the one-shot encoder.
    open: Vec<u8>,
    /// The memory of the last sealed batch (an empty handle sharing its allocation):
    /// taken back for the next batch once nobody else holds the sealed bytes.
    spare: BytesMut,
    contexts: compression::Contexts,
    count: i32,
    first_timestamp: i64,
    max_timestamp: i64,
    /// Bytes of the open batch's records section, uncompressed.
    records_len: usize,
}

impl BatchBuilder {
    /// A builder for batches with header values `opts` (producers keep the defaults
    /// but for the codec, its level, and later the producer state) and Java's
    /// `batch.size` limit in bytes.
    ///
    /// Fails with [`RecordError::UnsupportedCompression`] when the codec's cargo feature
    /// is off. Allocates nothing until the first record.
    pub fn new(opts: BatchOptions, batch_size: usize) -> Result<Self, RecordError> {
        check_options(&opts)?;
        Ok(Self {
            opts,
            batch_size,
            limit: batch_size.min(MAX_BATCH_BYTES),
            compressed: opts.compression != Compression::None,
            open: Vec::new(),
            spare: BytesMut::new(),
            contexts: compression::Contexts::default(),
            count: 0,
            first_timestamp: -1,
            max_timestamp: -1,
            records_len: 0,
        })
    }

    /// The header values batches are sealed with.
    pub fn options(&self) -> &BatchOptions {
        &self.opts
    }

    /// The `batch.size` limit in bytes.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Records in the open batch.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the open batch has no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Timestamp of the open batch's first record (its base timestamp).
    pub fn first_timestamp(&self) -> Option<i64> {
        (self.count > 0).then_some(self.first_timestamp)
    }

    /// Largest record timestamp in the open batch.
    pub fn max_timestamp(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max_timestamp)
    }

    /// Bytes of the open batch's records section before compression.
    pub fn records_size(&self) -> usize {
        self.records_len
    }

    /// Size of the open batch if sealed uncompressed, header included (0 when empty):
    /// exact without compression, and what the `batch.size` check compares with. A
    /// compressed batch is usually smaller once sealed.
    pub fn estimated_size(&self) -> usize {
        if self.count == 0 {
            0
        } else {
            BATCH_HEADER_LEN + self.records_len
        }
    }

    /// Sets the producer id, epoch, base sequence and transactional flag written by the
    /// next [`seal`](Self::seal) and every one after it, until set again. A producer
    /// that assigns them when it drains a batch calls this just before sealing; to
    /// change them in a batch already sealed use
    /// [`rewrite_producer_state`](super::rewrite_producer_state).
    pub fn set_producer_state(&mut self, state: &ProducerState) {
        self.opts.producer_id = state.producer_id;
        self.opts.producer_epoch = state.producer_epoch;
        self.opts.base_sequence = state.base_sequence;
        self.opts.transactional = state.transactional;
    }

    /// Appends a record with this timestamp (create time, in milliseconds; earlier
    /// than the first record's is fine), key, value and headers, unless the batch is
    /// full; see [`Append`]. On error (a field longer than `i32::MAX` bytes, or a
    /// first record too large for any batch) nothing is appended.
    #[inline]
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[NewHeader<'_>],
    ) -> Result<Append, RecordError> {
        self.append_record(&NewRecord {
            timestamp,
            key,
            value,
            headers,
        })
    }

    /// [`append`](Self::append) taking the record as a [`NewRecord`].
    #[inline]
    pub fn append_record(&mut self, record: &NewRecord<'_>) -> Result<Append, RecordError> {
        let offset_delta = self.count;
        if offset_delta == 0 {
            return self.append_first(record);
        }
        if offset_delta == i32::MAX {
            return Ok(Append::Full);
        }
        let timestamp_delta = record.timestamp.wrapping_sub(self.first_timestamp);
        let body = record_body_len(record, timestamp_delta, offset_delta)?;
        let size = record_size(body);
        // records_len + header stays under `limit`; the sum saturates on 32-bit targets.
        if (BATCH_HEADER_LEN + self.records_len).saturating_add(size) > self.limit {
            return Ok(Append::Full);
        }
        self.max_timestamp = self.max_timestamp.max(record.timestamp);
        write_record(&mut self.open, record, body, timestamp_delta, offset_delta);
        self.records_len += size;
        self.count = offset_delta + 1;
        Ok(Append::Appended { offset_delta })
    }

    /// The first record opens the batch and is accepted whatever its size.
    #[inline(never)]
    fn append_first(&mut self, record: &NewRecord<'_>) -> Result<Append, RecordError> {
        let body = record_body_len(record, 0, 0)?;
        let size = record_size(body);
        if BATCH_HEADER_LEN + size > MAX_BATCH_BYTES {
            return Err(RecordError::Unencodable("batch over i32::MAX bytes"));
        }
        self.open();
        self.first_timestamp = record.timestamp;
        self.max_timestamp = record.timestamp;
        write_record(&mut self.open, record, body, 0, 0);
        self.records_len = size;
        self.count = 1;
        Ok(Append::Appended { offset_delta: 0 })
    }

    /// Finishes the open batch: compresses its records (if a codec is set), writes the
    /// 61-byte header (base offset, attributes with the codec bits, last offset delta,
    /// first and max timestamps, producer state from the options) and the CRC-32C in one
    /// pass, and returns it. The builder is then empty and ready for the next batch.
    ///
    /// Fails on an empty batch ([`RecordError::Unencodable`]) and if the codec fails;
    /// the open batch is then kept as it was.
    pub fn seal(&mut self) -> Result<SealedBatch, RecordError> {
        if self.count == 0 {
            return Err(RecordError::Unencodable(
                "a batch needs at least one record",
            ));
        }
        let mut batch = if self.compressed {
            self.compress()?
        } else {
            std::mem::take(&mut self.open)
        };
        let header = seal_header(
            &mut batch,
            &self.opts,
            self.count,
            self.first_timestamp,
            self.max_timestamp,
        );
        let header = match header {
            Ok(h) => h,
            Err(e) => {
                if !self.compressed {
                    self.open = batch;
                }
                return Err(e);
            }
        };
        // No copy: the `Vec` becomes the buffer behind `spare`, and the batch is split
        // off it.
        self.spare = BytesMut::from(Bytes::from(batch));
        let bytes = self.spare.split();
        self.clear();
        Ok(SealedBatch { bytes, header })
    }

    /// Drops the open batch's records; buffers and codec contexts are kept.
    pub fn reset(&mut self) {
        self.open.clear();
        self.clear();
    }

    /// Drops the open batch and switches to new options and `batch.size`, keeping the
    /// buffers and codec contexts. Fails, changing nothing, like [`new`](Self::new).
    pub fn reconfigure(
        &mut self,
        opts: BatchOptions,
        batch_size: usize,
    ) -> Result<(), RecordError> {
        check_options(&opts)?;
        self.reset();
        self.opts = opts;
        self.batch_size = batch_size;
        self.limit = batch_size.min(MAX_BATCH_BYTES);
        self.compressed = opts.compression != Compression::None;
        Ok(())
    }

    fn clear(&mut self) {
        self.count = 0;
        self.first_timestamp = -1;
        self.max_timestamp = -1;
        self.records_len = 0;
    }

    /// Whether the next batch can reuse the memory of the last sealed batch: nobody
    /// holds that batch any more. When not, a producer hands the builder a freed
    /// buffer of another batch ([`give_buffer`](Self::give_buffer)) rather than let it
    /// allocate (and fault in) fresh memory.
    pub fn spare_is_free(&mut self) -> bool {
        self.spare.try_reclaim(self.batch_size.min(MAX_RESERVE))
    }

    /// Gives the builder `buf`'s memory (emptied) for its next batch; what it held for
    /// that is released.
    pub fn give_buffer(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.spare = BytesMut::from(Bytes::from(buf));
    }

    /// A `Vec` for a batch's bytes: the last sealed batch's memory if nobody holds
    /// that batch any more (no copy, no allocation), else a new one.
    fn take_spare(&mut self) -> Vec<u8> {
        let mut v = Vec::from(std::mem::take(&mut self.spare));
        v.clear();
        v
    }

    /// Makes room for a batch of `batch.size` (at most [`MAX_RESERVE`]) and, without
    /// compression, writes the header placeholder.
    fn open(&mut self) {
        let room = self.batch_size.min(MAX_RESERVE) + WRITE_SLACK;
        self.open.clear();
        if self.compressed {
            self.open.reserve(room);
        } else {
            if self.open.capacity() == 0 {
                self.open = self.take_spare();
            }
            self.open.reserve(BATCH_HEADER_LEN + room);
            self.open.resize(BATCH_HEADER_LEN, 0);
        }
    }

    /// Compresses the open records into a new batch buffer after a header placeholder.
    fn compress(&mut self) -> Result<Vec<u8>, RecordError> {
        let mut out = self.take_spare();
        let n = self.open.len();
        // Room for every codec's worst case on incompressible input, so the output
        // does not reallocate.
        out.reserve(BATCH_HEADER_LEN + n + n / 8 + 128);
        out.resize(BATCH_HEADER_LEN, 0);
        let result = self.contexts.compress(
            self.opts.compression,
            self.opts.compression_level,
            &self.open,
            &mut out,
        );
        if let Err(e) = result {
            out.clear();
            self.spare = BytesMut::from(Bytes::from(out));
            return Err(e);
        }
        Ok(out)
    }
}

impl std::fmt::Debug for BatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBuilder")
            .field("opts", &self.opts)
            .field("batch_size", &self.batch_size)
            .field("records", &self.count)
            .field("records_size", &self.records_len)
            .field("first_timestamp", &self.first_timestamp())
            .field("max_timestamp", &self.max_timestamp())
            .finish_non_exhaustive()
    }
}

fn check_options(opts: &BatchOptions) -> Result<(), RecordError> {
    if !opts.compression.is_enabled() {
        return Err(RecordError::UnsupportedCompression(opts.compression));
    }
    // Every other field is valid as is. LogAppendTime is accepted (as the one-shot
    // encoder does), though producers always write CreateTime.
    Ok(())
}

#[cfg(test)]
mod tests;
