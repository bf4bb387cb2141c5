//! Typed errors of the record layer.

use super::Compression;

/// Why a record batch, message set or compressed payload could not be decoded or
/// encoded.
///
/// Every decoding failure on hostile input is one of these; the decoders never panic.
/// All variants except [`RecordError::UnsupportedCompression`] with a disabled feature
/// are remote misbehaviour (a corrupt or hostile batch) when they come out of a decoder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The input ended before a field or section that it announced.
    #[error("truncated {what}: need {needed} bytes, {available} available")]
    Truncated {
        /// Which field or section was being read.
        what: &'static str,
        /// Bytes that were needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// The batch's magic byte is not 0, 1 or 2.
    #[error("unknown magic {0}")]
    UnknownMagic(i8),
    /// A batch or message length field is negative, too small for its header or larger
    /// than the configured maximum.
    #[error("invalid {what} length {length}")]
    InvalidLength {
        /// Which length field.
        what: &'static str,
        /// The value read off the wire.
        length: i64,
    },
    /// The stored checksum does not match the bytes (CRC-32C for v2, CRC-32 for v0/v1).
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The checksum in the batch.
        stored: u32,
        /// The checksum computed over the bytes.
        computed: u32,
    },
    /// The record count in a v2 batch header is negative.
    #[error("invalid record count {0}")]
    InvalidRecordCount(i32),
    /// The batch holds fewer records than its header claims.
    #[error("batch claims {claimed} records but holds only {found}")]
    MissingRecords {
        /// The count in the header.
        claimed: i32,
        /// Records actually decoded before the data ran out.
        found: i32,
    },
    /// Bytes remain after the last record the header announced (or inside a record
    /// after its last header).
    #[error("{0} trailing bytes after the last record")]
    TrailingBytes(usize),
    /// A varint is longer than its type allows.
    #[error("malformed varint in {0}")]
    BadVarint(&'static str),
    /// A record's length field disagrees with the fields inside it.
    #[error("record length {declared} does not match its contents ({actual} bytes)")]
    RecordLengthMismatch {
        /// The length prefix of the record.
        declared: usize,
        /// The bytes its fields used.
        actual: usize,
    },
    /// A header key is absent (negative length); Kafka requires one.
    #[error("record header key is null")]
    NullHeaderKey,
    /// The compression codec bits name no codec Kafka knows (5, 6 or 7), or zstd in a
    /// legacy message.
    #[error("unknown compression codec {0}")]
    UnknownCompression(u8),
    /// The codec is known but this build was compiled without its cargo feature.
    #[error("compression {0:?} is not enabled in this build")]
    UnsupportedCompression(Compression),
    /// Decompressing would produce more than the configured cap.
    #[error("decompressed output exceeds the cap of {cap} bytes")]
    DecompressedTooLarge {
        /// The cap in force.
        cap: usize,
    },
    /// The compressed payload is malformed.
    #[error("corrupt {codec:?} payload: {reason}")]
    Decompress {
        /// The codec that failed.
        codec: Compression,
        /// What the decompressor reported.
        reason: String,
    },
    /// Compressing failed (only an internal codec error can cause this).
    #[error("{codec:?} compression failed: {reason}")]
    Compress {
        /// The codec that failed.
        codec: Compression,
        /// What the compressor reported.
        reason: String,
    },
    /// A control batch holds a record that is not a valid control record.
    #[error("invalid control record: {0}")]
    InvalidControlRecord(&'static str),
    /// A legacy wrapper message contains another compressed message.
    #[error("nested compression in a legacy message set")]
    NestedCompression,
    /// An encoder input does not fit the wire format (too many records, a field longer
    /// than `i32::MAX`, an offset or timestamp delta out of range).
    #[error("cannot encode: {0}")]
    Unencodable(&'static str),
}

impl RecordError {
    #[cold]
    #[inline(never)]
    pub(crate) fn truncated(what: &'static str, needed: usize, available: usize) -> Self {
        Self::Truncated {
            what,
            needed,
            available,
        }
    }
}
