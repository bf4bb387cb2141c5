//! Decoding one v2 record batch: header, CRC-32C check, lazy decompression, records.

use std::sync::OnceLock;

use bytes::Bytes;

use super::header::{BatchHeader, ATTRIBUTES_OFFSET, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_OFFSET};
use super::record::{decode_record, Record, RecordContext};
use super::{compression, Compression, RecordError, TimestampType};

/// Default cap on a batch's decompressed size: the consumer's default
/// `fetch.max.bytes` (50 MiB).
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 52_428_800;

/// Limits and checks applied while decoding batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Most bytes one batch may decompress to; larger output is
    /// [`RecordError::DecompressedTooLarge`]. Set it to the consumer's max fetch bytes.
    pub max_decompressed_bytes: usize,
    /// Verify the CRC (Java's `check.crcs`, on by default). Turning it off is meant for
    /// fuzzing and tools that inspect damaged data.
    pub verify_crc: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
            verify_crc: true,
        }
    }
}

/// A v2 record batch whose header and CRC have been checked. Records are decoded on
/// demand; a compressed records section is decompressed once, on the first call to
/// [`RecordBatch::records`].
#[derive(Debug, Clone)]
pub struct RecordBatch {
    header: BatchHeader,
    raw: Bytes,
    max_decompressed: usize,
    decompressed: OnceLock<Bytes>,
}

impl RecordBatch {
    /// Decodes the batch at the start of `buf`, returning it and the bytes it took.
    ///
    /// Checks the length fields against the buffer, the magic, the record count's sign
    /// and (unless disabled) the CRC-32C; nothing is decompressed yet. `buf` is not
    /// copied: the batch and its records are slices of it.
    pub fn decode(buf: &Bytes, opts: &DecodeOptions) -> Result<(Self, usize), RecordError> {
        if buf.len() < LOG_OVERHEAD {
            return Err(RecordError::truncated("batch", LOG_OVERHEAD, buf.len()));
        }
        let length = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
        if (length as i64) < (BATCH_HEADER_LEN - LOG_OVERHEAD) as i64 {
            return Err(RecordError::InvalidLength {
                what: "batch",
                length: i64::from(length),
            });
        }
        let size = LOG_OVERHEAD + length as usize;
        if buf.len() < size {
            return Err(RecordError::truncated("batch", size, buf.len()));
        }
        let magic = buf[MAGIC_OFFSET] as i8;
        if magic != 2 {
            return Err(RecordError::UnknownMagic(magic));
        }
        let header = BatchHeader::parse(&buf[..size])?;
        if opts.verify_crc {
            let computed = crc32c::crc32c(&buf[ATTRIBUTES_OFFSET..size]);
            if computed != header.crc {
                return Err(RecordError::CrcMismatch {
                    stored: header.crc,
                    computed,
                });
            }
        }
        if header.records_count < 0 {
            return Err(RecordError::InvalidRecordCount(header.records_count));
        }
        Ok((
            Self {
                header,
                raw: buf.slice(..size),
                max_decompressed: opts.max_decompressed_bytes,
                decompressed: OnceLock::new(),
            },
            size,
        ))
    }

    /// The header fields.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The batch's bytes on the wire.
    pub fn as_bytes(&self) -> &Bytes {
        &self.raw
    }

    /// Codec of the records section.
    pub fn compression(&self) -> Compression {
        self.header.attributes.compression
    }

    /// Whether this is a control batch (transaction markers).
    pub fn is_control(&self) -> bool {
        self.header.attributes.control
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.header.attributes.transactional
    }

    /// The records section, decompressed if needed (at most once per batch).
    pub fn records_section(&self) -> Result<Bytes, RecordError> {
        let body = self.raw.slice(BATCH_HEADER_LEN..);
        let codec = self.compression();
        if codec == Compression::None {
            return Ok(body);
        }
        if let Some(done) = self.decompressed.get() {
            return Ok(done.clone());
        }
        let mut out = Vec::new();
        compression::decompress(codec, 2, &body, self.max_decompressed, &mut out)?;
        let out = Bytes::from(out);
        // A concurrent caller may have won the race; both results are identical.
        let _ = self.decompressed.set(out.clone());
        Ok(out)
    }

    /// Iterates the records. Decompresses first if the batch is compressed; the
    /// iterator then yields exactly the header's record count or an error.
    pub fn records(&self) -> Result<Records, RecordError> {
        let data = self.records_section()?;
        let h = &self.header;
        Ok(Records {
            data,
            pos: 0,
            claimed: h.records_count,
            read: 0,
            failed: false,
            ctx: RecordContext {
                base_offset: h.base_offset,
                base_timestamp: h.base_timestamp,
                log_append_time: (h.attributes.timestamp_type == TimestampType::LogAppendTime)
                    .then_some(h.max_timestamp),
                base_sequence: h.base_sequence,
            },
        })
    }
}

/// Iterator over a batch's records; see [`RecordBatch::records`].
///
/// After the first error it yields nothing more.
#[derive(Debug, Clone)]
pub struct Records {
    data: Bytes,
    pos: usize,
    claimed: i32,
    read: i32,
    failed: bool,
    ctx: RecordContext,
}

impl Records {
    /// Records the header announced and not yet yielded.
    pub fn remaining(&self) -> usize {
        (self.claimed - self.read) as usize
    }

    fn fail(&mut self, e: RecordError) -> Option<Result<Record, RecordError>> {
        self.failed = true;
        Some(Err(e))
    }
}

impl Iterator for Records {
    type Item = Result<Record, RecordError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.read == self.claimed {
            if self.pos != self.data.len() {
                return self.fail(RecordError::TrailingBytes(self.data.len() - self.pos));
            }
            return None;
        }
        if self.pos == self.data.len() {
            return self.fail(RecordError::MissingRecords {
                claimed: self.claimed,
                found: self.read,
            });
        }
        match decode_record(&self.data, &mut self.pos, &self.ctx) {
            Ok(r) => {
                self.read += 1;
                Some(Ok(r))
            }
            Err(e) => self.fail(e),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.failed {
            (0, Some(0))
        } else {
            (0, Some(self.remaining().saturating_add(1)))
        }
    }
}
