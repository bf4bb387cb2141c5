//! Legacy message sets (magic 0 and 1), read-only: plain messages and compressed
//! wrapper messages, CRC-32 checked.

use bytes::Bytes;

use super::header::{TimestampType, LOG_OVERHEAD};
use super::record::{Headers, Record};
use super::wire::Reader;
use super::{compression, Compression, DecodeOptions, RecordError};

/// Smallest message in magic 0: crc, magic, attributes, key and value lengths.
const MESSAGE_OVERHEAD_V0: usize = 14;
/// Smallest message in magic 1 (adds the timestamp).
const MESSAGE_OVERHEAD_V1: usize = 22;

/// One top-level legacy entry: a plain message, or a compressed wrapper holding an
/// inner message set. It plays the part of a batch.
#[derive(Debug, Clone)]
pub struct LegacyBatch {
    msg: Message,
    max_decompressed: usize,
}

/// A parsed legacy message.
#[derive(Debug, Clone)]
struct Message {
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

impl Message {
    fn compression(&self) -> Result<Compression, RecordError> {
        let id = (self.attributes & 0x07) as u8;
        match Compression::from_id(id)? {
            Compression::Zstd => Err(RecordError::UnknownCompression(id)),
            c => Ok(c),
        }
    }

    fn timestamp_type(&self) -> Option<TimestampType> {
        match self.magic {
            0 => None,
            _ if self.attributes & 0x08 != 0 => Some(TimestampType::LogAppendTime),
            _ => Some(TimestampType::CreateTime),
        }
    }
}

/// Parses the entry (offset, size, message) at the start of `buf`.
fn parse_entry(buf: &Bytes, verify_crc: bool) -> Result<(Message, usize), RecordError> {
    let mut r = Reader::new(buf);
    let offset = r.i64("legacy offset")?;
    let size = r.i32("legacy message size")?;
    if size < MESSAGE_OVERHEAD_V0 as i32 {
        return Err(RecordError::InvalidLength {
            what: "legacy message",
            length: i64::from(size),
        });
    }
    let size = size as usize;
    let body = r.take(size, "legacy message")?;
    let total = LOG_OVERHEAD + size;
    let mut m = Reader::new(body);
    let stored = m.u32("legacy crc")?;
    let magic = m.i8("legacy magic")?;
    if !(0..=1).contains(&magic) {
        return Err(RecordError::UnknownMagic(magic));
    }
    if magic == 1 && size < MESSAGE_OVERHEAD_V1 {
        return Err(RecordError::InvalidLength {
            what: "legacy v1 message",
            length: size as i64,
        });
    }
    if verify_crc {
        let computed = crc32fast::hash(&body[4..]);
        if computed != stored {
            return Err(RecordError::CrcMismatch { stored, computed });
        }
    }
    let attributes = m.i8("legacy attributes")?;
    let timestamp = if magic == 1 {
        m.i64("legacy timestamp")?
    } else {
        -1
    };
    let base = LOG_OVERHEAD;
    let mut field = |what: &'static str| -> Result<Option<Bytes>, RecordError> {
        let len = m.i32(what)?;
        if len < 0 {
            return Ok(None);
        }
        let at = base + m.pos();
        m.take(len as usize, what)?;
        Ok(Some(buf.slice(at..at + len as usize)))
    };
    let key = field("legacy key")?;
    let value = field("legacy value")?;
    Ok((
        Message {
            offset,
            magic,
            attributes,
            timestamp,
            key,
            value,
        },
        total,
    ))
}

impl LegacyBatch {
    /// Decodes the top-level entry at the start of `buf` (CRC-32 checked unless
    /// disabled), returning it and the bytes it took. Nothing is decompressed yet.
    pub fn decode(buf: &Bytes, opts: &DecodeOptions) -> Result<(Self, usize), RecordError> {
        let (msg, size) = parse_entry(buf, opts.verify_crc)?;
        msg.compression()?;
        Ok((
            Self {
                msg,
                max_decompressed: opts.max_decompressed_bytes,
            },
            size,
        ))
    }

    /// Magic byte (0 or 1).
    pub fn magic(&self) -> i8 {
        self.msg.magic
    }

    /// Codec of the wrapper (`None` for a plain message).
    pub fn compression(&self) -> Compression {
        // Checked in `decode`.
        self.msg.compression().unwrap_or(Compression::None)
    }

    /// Timestamp type (magic 1), `None` for magic 0.
    pub fn timestamp_type(&self) -> Option<TimestampType> {
        self.msg.timestamp_type()
    }

    /// The entry's timestamp (the wrapper's for a compressed set; -1 in magic 0), which
    /// Kafka reports as the batch's max timestamp.
    pub fn timestamp(&self) -> i64 {
        self.msg.timestamp
    }

    /// Offset of the entry: for a wrapper, the offset of its last inner message.
    pub fn last_offset(&self) -> i64 {
        self.msg.offset
    }

    /// The records: the message itself, or the wrapper's inner messages with absolute
    /// offsets and (under LogAppendTime) the wrapper's timestamp. Headers are empty,
    /// sequence is -1 and the timestamp is -1 in magic 0.
    pub fn records(&self) -> Result<Vec<Record>, RecordError> {
        let codec = self.compression();
        let w = &self.msg;
        if codec == Compression::None {
            return Ok(vec![to_record(w, w.offset, w.timestamp)]);
        }
        let compressed = w.value.as_deref().ok_or(RecordError::InvalidLength {
            what: "legacy wrapper value",
            length: -1,
        })?;
        let mut out = Vec::new();
        compression::decompress(codec, w.magic, compressed, self.max_decompressed, &mut out)?;
        let inner = Bytes::from(out);
        let mut msgs = Vec::new();
        let mut pos = 0;
        while pos < inner.len() {
            // A partial trailing message inside a wrapper is corruption.
            let (m, size) = parse_entry(&inner.slice(pos..), false)?;
            if m.compression()? != Compression::None {
                return Err(RecordError::NestedCompression);
            }
            msgs.push(m);
            pos += size;
        }
        let base = match (w.magic, msgs.last()) {
            (1, Some(last)) => w.offset.wrapping_sub(last.offset),
            _ => -1,
        };
        let log_append = w.timestamp_type() == Some(TimestampType::LogAppendTime);
        Ok(msgs
            .iter()
            .map(|m| {
                let offset = if base >= 0 {
                    base.wrapping_add(m.offset)
                } else {
                    m.offset
                };
                let ts = if log_append { w.timestamp } else { m.timestamp };
                to_record(m, offset, ts)
            })
            .collect())
    }
}

fn to_record(m: &Message, offset: i64, timestamp: i64) -> Record {
    Record {
        offset,
        offset_delta: 0,
        timestamp,
        sequence: -1,
        key: m.key.clone(),
        value: m.value.clone(),
        headers: Headers::default(),
    }
}
