//! The fixed 61-byte header of a v2 record batch.

use super::wire::Reader;
use super::{Compression, RecordError};

/// Bytes of batch header before the records (`RECORD_BATCH_OVERHEAD`).
pub const BATCH_HEADER_LEN: usize = 61;
/// Bytes before and including the length field (`LOG_OVERHEAD`: offset + length).
pub const LOG_OVERHEAD: usize = 12;
/// Offset of the magic byte in any batch or legacy entry.
pub(crate) const MAGIC_OFFSET: usize = 16;
/// Offset of the CRC-32C field in a v2 batch.
pub(crate) const CRC_OFFSET: usize = 17;
/// Offset of the attributes field: the CRC covers from here to the end of the batch.
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
/// Offset of the record count.
pub(crate) const RECORDS_COUNT_OFFSET: usize = 57;

/// How a batch's timestamps were assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// The producer set each record's timestamp.
    #[default]
    CreateTime,
    /// The broker stamped the batch when appending it; every record's timestamp is the
    /// batch's max timestamp.
    LogAppendTime,
}

/// The attributes word of a v2 batch, split into its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BatchAttributes {
    /// Codec of the records section.
    pub compression: Compression,
    /// Timestamp type.
    pub timestamp_type: TimestampType,
    /// The batch belongs to a transaction.
    pub transactional: bool,
    /// The batch holds control records (transaction markers), not application data.
    pub control: bool,
    /// The base timestamp holds the compactor's delete horizon (KIP-534).
    pub delete_horizon: bool,
}

impl BatchAttributes {
    /// Splits an attributes word; unused bits are ignored, as Kafka does.
    pub fn from_bits(bits: i16) -> Result<Self, RecordError> {
        Ok(Self {
            compression: Compression::from_id((bits & 0x07) as u8)?,
            timestamp_type: if bits & 0x08 != 0 {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            transactional: bits & 0x10 != 0,
            control: bits & 0x20 != 0,
            delete_horizon: bits & 0x40 != 0,
        })
    }

    /// The attributes word.
    pub fn to_bits(self) -> i16 {
        let mut bits = i16::from(self.compression.id());
        if self.timestamp_type == TimestampType::LogAppendTime {
            bits |= 0x08;
        }
        if self.transactional {
            bits |= 0x10;
        }
        if self.control {
            bits |= 0x20;
        }
        if self.delete_horizon {
            bits |= 0x40;
        }
        bits
    }
}

/// Every field of a v2 batch header, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchHeader {
    /// Offset of the first record (the broker assigns it; producers send 0).
    pub base_offset: i64,
    /// Bytes after the length field: the batch's total size minus [`LOG_OVERHEAD`].
    pub batch_length: i32,
    /// Leader epoch of the appending leader; not covered by the CRC. Clients send -1.
    pub partition_leader_epoch: i32,
    /// Always 2 for this header.
    pub magic: i8,
    /// CRC-32C over the bytes from the attributes to the end of the batch.
    pub crc: u32,
    /// The attributes word, split.
    pub attributes: BatchAttributes,
    /// Offset delta of the last record (kept even if compaction removed it).
    pub last_offset_delta: i32,
    /// Timestamp of the first record (-1 if empty), or the delete horizon.
    pub base_timestamp: i64,
    /// Largest record timestamp, or the broker's append time under LogAppendTime.
    pub max_timestamp: i64,
    /// Idempotent producer id, -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 if none.
    pub base_sequence: i32,
    /// Number of records; not compressed.
    pub records_count: i32,
}

impl BatchHeader {
    /// Parses the 61 header bytes at the start of `buf` (no CRC check, no length
    /// check against the buffer: [`RecordBatch::decode`](super::RecordBatch::decode)
    /// does those).
    pub fn parse(buf: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(buf);
        if r.remaining() < BATCH_HEADER_LEN {
            return Err(RecordError::truncated(
                "batch header",
                BATCH_HEADER_LEN,
                r.remaining(),
            ));
        }
        Ok(Self {
            base_offset: r.i64("base offset")?,
            batch_length: r.i32("batch length")?,
            partition_leader_epoch: r.i32("partition leader epoch")?,
            magic: r.i8("magic")?,
            crc: r.u32("crc")?,
            attributes: BatchAttributes::from_bits(r.i16("attributes")?)?,
            last_offset_delta: r.i32("last offset delta")?,
            base_timestamp: r.i64("base timestamp")?,
            max_timestamp: r.i64("max timestamp")?,
            producer_id: r.i64("producer id")?,
            producer_epoch: r.i16("producer epoch")?,
            base_sequence: r.i32("base sequence")?,
            records_count: r.i32("records count")?,
        })
    }

    /// Appends the 61 header bytes as they are in `self` (the CRC field included
    /// verbatim).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The 61 header bytes as they are in `self` (the CRC field included verbatim).
    pub fn to_bytes(&self) -> [u8; BATCH_HEADER_LEN] {
        let mut b = [0u8; BATCH_HEADER_LEN];
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.batch_length.to_be_bytes());
        b[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b[16] = self.magic as u8;
        b[17..21].copy_from_slice(&self.crc.to_be_bytes());
        b[21..23].copy_from_slice(&self.attributes.to_bits().to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        b[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.records_count.to_be_bytes());
        b
    }

    /// Total bytes of the batch on the wire.
    pub fn size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length.max(0) as usize
    }

    /// Offset of the last record the batch covered when written.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// Offset the next batch should start at.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Whether the batch belongs to an idempotent or transactional producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip() {
        for bits in 0..0x80i16 {
            if bits & 7 > 4 {
                assert!(BatchAttributes::from_bits(bits).is_err());
                continue;
            }
            assert_eq!(BatchAttributes::from_bits(bits).unwrap().to_bits(), bits);
        }
    }
}
