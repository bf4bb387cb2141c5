//! Walking the batches of a fetched `records` field, v2 and legacy mixed.

use bytes::Bytes;

use super::header::{LOG_OVERHEAD, MAGIC_OFFSET};
use super::{DecodeOptions, LegacyBatch, RecordBatch, RecordError};

/// Smallest size field of any entry (a magic 0 message).
const MIN_ENTRY_SIZE: i32 = 14;

/// One batch of a record set.
#[derive(Debug, Clone)]
pub enum Batch {
    /// A magic 2 record batch.
    V2(RecordBatch),
    /// A magic 0 or 1 message (or compressed wrapper).
    Legacy(LegacyBatch),
}

impl Batch {
    /// Magic byte of the batch.
    pub fn magic(&self) -> i8 {
        match self {
            Self::V2(_) => 2,
            Self::Legacy(b) => b.magic(),
        }
    }
}

/// Iterator over the batches in a record set (the `records` bytes of a partition in a
/// Fetch response), like Java's `ByteBufferLogInputStream`.
///
/// A partial batch at the end is normal in a fetch (the broker cuts at the byte
/// limit): iteration then ends and [`Batches::has_partial_tail`] says so. Anything
/// else malformed is an error, after which the iterator yields nothing more.
#[derive(Debug, Clone)]
pub struct Batches {
    data: Bytes,
    pos: usize,
    opts: DecodeOptions,
    done: bool,
    partial_tail: bool,
}

impl Batches {
    /// Walks `data` with the given limits.
    pub fn new(data: Bytes, opts: DecodeOptions) -> Self {
        Self {
            data,
            pos: 0,
            opts,
            done: false,
            partial_tail: false,
        }
    }

    /// Whether iteration stopped at an incomplete batch at the end of the data.
    pub fn has_partial_tail(&self) -> bool {
        self.partial_tail
    }

    fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        let rest = &self.data[self.pos..];
        if rest.len() < LOG_OVERHEAD {
            self.partial_tail = !rest.is_empty();
            return Ok(None);
        }
        let size = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if size < MIN_ENTRY_SIZE {
            return Err(RecordError::InvalidLength {
                what: "batch",
                length: i64::from(size),
            });
        }
        let total = LOG_OVERHEAD + size as usize;
        if rest.len() < total {
            self.partial_tail = true;
            return Ok(None);
        }
        let slice = self.data.slice(self.pos..self.pos + total);
        let batch = match slice[MAGIC_OFFSET] as i8 {
            2 => Batch::V2(RecordBatch::decode(&slice, &self.opts)?.0),
            0 | 1 => Batch::Legacy(LegacyBatch::decode(&slice, &self.opts)?.0),
            other => return Err(RecordError::UnknownMagic(other)),
        };
        self.pos += total;
        Ok(Some(batch))
    }
}

impl Iterator for Batches {
    type Item = Result<Batch, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_batch() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
