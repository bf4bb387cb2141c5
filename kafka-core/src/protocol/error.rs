//! Errors of the message codecs: what can go wrong reading or writing a message.

/// A message could not be decoded. The input is left unusable; no partial value escapes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the value being read was complete.
    #[error("truncated input: needed {needed} more bytes, {remaining} remain")]
    Truncated {
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// An unsigned varint ran past five bytes or overflowed 32 bits.
    #[error("malformed varint")]
    BadVarint,
    /// A string, bytes or array length is negative (other than the null marker) or too large.
    #[error("invalid length {length} for field {field}")]
    BadLength {
        /// The field being read.
        field: &'static str,
        /// The length found on the wire.
        length: i64,
    },
    /// An array count or tagged-field count exceeds what the remaining bytes could hold.
    #[error("count {count} for field {field} exceeds the {remaining} remaining bytes")]
    CountTooLarge {
        /// The field being read.
        field: &'static str,
        /// The count found on the wire.
        count: u64,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A string field does not hold valid UTF-8.
    #[error("field {field} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field being read.
        field: &'static str,
    },
    /// A field that may not be null in this version was null on the wire.
    #[error("field {field} is null but not nullable in this version")]
    UnexpectedNull {
        /// The field being read.
        field: &'static str,
    },
    /// The version is outside the range this message supports.
    #[error("{message} has no version {version}")]
    UnsupportedVersion {
        /// The message type.
        message: &'static str,
        /// The requested version.
        version: i16,
    },
    /// The API key is not one this crate knows.
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    /// A known tagged field's declared size did not match the bytes its value used.
    #[error("tagged field {field} declared {declared} bytes but its value used {used}")]
    TaggedSizeMismatch {
        /// The field being read.
        field: &'static str,
        /// The size written before the value.
        declared: usize,
        /// The bytes the value actually took.
        used: usize,
    },
    /// Bytes remained after a complete message was read.
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
}

/// A message could not be encoded for the chosen version. Nothing useful was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A field holds a non-default value but the chosen version lacks it and it is not ignorable.
    #[error("field {field} is not in version {version} and has a non-default value")]
    FieldNotInVersion {
        /// The field.
        field: &'static str,
        /// The version being written.
        version: i16,
    },
    /// A field is null but not nullable in the chosen version.
    #[error("field {field} is null but not nullable in version {version}")]
    NullNotAllowed {
        /// The field.
        field: &'static str,
        /// The version being written.
        version: i16,
    },
    /// A string, bytes or array value is longer than the wire format can express.
    #[error("value of length {length} is too long for its wire encoding")]
    TooLong {
        /// The length of the value.
        length: usize,
    },
    /// The version is outside the range this message supports.
    #[error("{message} has no version {version}")]
    UnsupportedVersion {
        /// The message type.
        message: &'static str,
        /// The requested version.
        version: i16,
    },
}
