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

    /// Iterates the records: the message itself, or the wrapper's inner messages with
    /// absolute offsets and (under LogAppendTime) the wrapper's timestamp. Headers are
    /// empty, sequence is -1 and the timestamp is -1 in magic 0.
    ///
    /// A wrapper is decompressed here, into one buffer of at most
    /// [`DecodeOptions::max_decompressed_bytes`]; its inner messages are then parsed one
    /// at a time as the iterator advances, and each record's key and value are slices
    /// of that buffer. Nothing is collected, so memory stays near the cap however many
    /// messages the wrapper holds. Fails here if decompression fails or the inner
    /// message set cannot be walked (a magic 1 wrapper needs its last inner offset
    /// first); a malformed inner message is an error from the iterator, after which it
    /// yields nothing more.
    pub fn records(&self) -> Result<LegacyRecords, RecordError> {
        let codec = self.compression();
        let w = &self.msg;
        if codec == Compression::None {
            return Ok(LegacyRecords {
                inner: Inner::Plain(Some(to_record(w, w.offset, w.timestamp))),
            });
        }
        let compressed = w.value.as_deref().ok_or(RecordError::InvalidLength {
            what: "legacy wrapper value",
            length: -1,
        })?;
        let mut out = Vec::new();
        compression::decompress(codec, w.magic, compressed, self.max_decompressed, &mut out)?;
        let data = Bytes::from(out);
        // Magic 1 inner offsets are relative: the wrapper's offset is the last inner
        // message's absolute offset (Java's `AbstractLegacyRecordBatch`).
        let base = match (w.magic, last_inner_offset(&data)?) {
            (1, Some(last)) => w.offset.wrapping_sub(last),
            _ => -1,
        };
        let log_append = w.timestamp_type() == Some(TimestampType::LogAppendTime);
        Ok(LegacyRecords {
            inner: Inner::Wrapped {
                data,
                pos: 0,
                base,
                wrapper_timestamp: log_append.then_some(w.timestamp),
                failed: false,
            },
        })
    }
}

/// The relative offset of the last message of an inner message set, walking only the
/// offset and size fields (`None` for an empty set). A size that does not fit is
/// corruption: a partial trailing message inside a wrapper is not a fetch cut.
fn last_inner_offset(data: &[u8]) -> Result<Option<i64>, RecordError> {
    let mut r = Reader::new(data);
    let mut last = None;
    while r.remaining() > 0 {
        let offset = r.i64("legacy offset")?;
        let size = r.i32("legacy message size")?;
        if size < MESSAGE_OVERHEAD_V0 as i32 {
            return Err(RecordError::InvalidLength {
                what: "legacy message",
                length: i64::from(size),
            });
        }
        r.take(size as usize, "legacy message")?;
        last = Some(offset);
    }
    Ok(last)
}

/// Iterator over a [`LegacyBatch`]'s records; see [`LegacyBatch::records`].
///
/// After the first error it yields nothing more.
#[derive(Debug, Clone)]
pub struct LegacyRecords {
    inner: Inner,
}

#[derive(Debug, Clone)]
enum Inner {
    /// A plain message: its one record, until taken.
    Plain(Option<Record>),
    /// A compressed wrapper's decompressed inner message set.
    Wrapped {
        data: Bytes,
        pos: usize,
        /// Added to each inner offset (magic 1); -1 when offsets are absolute.
        base: i64,
        /// The wrapper's timestamp when it uses LogAppendTime.
        wrapper_timestamp: Option<i64>,
        failed: bool,
    },
}

impl Iterator for LegacyRecords {
    type Item = Result<Record, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Plain(record) => record.take().map(Ok),
            Inner::Wrapped {
                data,
                pos,
                base,
                wrapper_timestamp,
                failed,
            } => {
                if *failed || *pos == data.len() {
                    return None;
                }
                let parsed = parse_entry(&data.slice(*pos..), false).and_then(|(m, size)| {
                    if m.compression()? != Compression::None {
                        return Err(RecordError::NestedCompression);
                    }
                    Ok((m, size))
                });
                match parsed {
                    Ok((m, size)) => {
                        *pos += size;
                        let offset = if *base >= 0 {
                            base.wrapping_add(m.offset)
                        } else {
                            m.offset
                        };
                        let ts = wrapper_timestamp.unwrap_or(m.timestamp);
                        Some(Ok(to_record(&m, offset, ts)))
                    }
                    Err(e) => {
                        *failed = true;
                        Some(Err(e))
                    }
                }
            }
        }
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
