//! The Kafka wire protocol: generated messages for every API key and version, the
//! request/response headers, wire primitives and the Kafka error-code table.
//!
//! Every message type implements [`Message`]: it covers all versions of its schema, and
//! the version is chosen when encoding or decoding. Request types also implement
//! [`Request`], which names their response type and API key.
//!
//! ```
//! use bytes::Bytes;
//! use kafka_core::protocol::{messages::metadata::MetadataRequest, Message};
//!
//! let mut request = MetadataRequest::default();
//! request.allow_auto_topic_creation = false;
//! let mut buf = Vec::new();
//! request.encode_to(&mut buf, 12).unwrap();
//! let back = MetadataRequest::decode_from(Bytes::from(buf), 12).unwrap();
//! assert_eq!(back, request);
//! ```

pub mod error;
pub mod error_codes;
pub mod fuzz;
pub mod header;
pub mod messages;
#[cfg(feature = "oracle")]
pub mod oracle;
pub mod types;
pub mod wire;

use bytes::Bytes;

pub use error::{DecodeError, EncodeError};
pub use error_codes::KafkaCode;
pub use header::{peek_correlation_id, read_response, write_request};
pub use messages::{visit_message, ApiKey, Direction, MessageVisitor};
pub use types::{RawTaggedField, Uuid, VersionRange};
use wire::{ByteCounter, Sink};

/// A value that can be written in a given protocol version.
pub trait Encodable {
    /// Appends the encoding of `self` at `version` to `sink`.
    fn encode<S: Sink>(&self, sink: &mut S, version: i16) -> Result<(), EncodeError>;

    /// The number of bytes [`Encodable::encode`] would write.
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {
        let mut counter = ByteCounter::default();
        self.encode(&mut counter, version)?;
        Ok(counter.0)
    }
}

/// A value that can be read in a given protocol version.
pub trait Decodable: Sized {
    /// Reads a value from the front of `buf`, advancing it.
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
}

#[cfg(feature = "oracle")]
use oracle::OracleExt;

/// Without the `oracle` feature this trait is empty and implemented by every type.
#[cfg(not(feature = "oracle"))]
pub trait OracleExt {}
#[cfg(not(feature = "oracle"))]
impl<T> OracleExt for T {}

/// A top-level protocol message (request, response, header or data schema).
pub trait Message:
    Encodable + Decodable + Default + Clone + PartialEq + std::fmt::Debug + OracleExt
{
    /// The schema name, e.g. `ProduceRequest`.
    const NAME: &'static str;
    /// Every version of the schema.
    const VERSIONS: VersionRange;
    /// The first flexible version (compact encodings and tagged fields), if any.
    const FLEXIBLE_MIN: Option<i16>;

    /// Top-level tagged fields this crate does not know, as received.
    fn unknown_tagged_fields(&self) -> &[RawTaggedField];

    /// The top-level `ThrottleTimeMs` of a response that has one in `version`.
    fn throttle_time_ms(&self, version: i16) -> Option<i32> {
        let _ = version;
        None
    }

    /// The top-level `ErrorCode` of a response that has one in `version`.
    fn top_level_error_code(&self, version: i16) -> Option<i16> {
        let _ = version;
        None
    }

    /// Encodes at `version` and appends to `buf`; refuses versions the schema lacks.
    fn encode_to(&self, buf: &mut Vec<u8>, version: i16) -> Result<(), EncodeError> {
        if !Self::VERSIONS.contains(version) {
            return Err(EncodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        let start = buf.len();
        self.encode(buf, version)
            .inspect_err(|_| buf.truncate(start))
    }

    /// Decodes a whole message at `version`; trailing bytes are an error.
    fn decode_from(mut bytes: Bytes, version: i16) -> Result<Self, DecodeError> {
        if !Self::VERSIONS.contains(version) {
            return Err(DecodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        let value = Self::decode(&mut bytes, version)?;
        if !bytes.is_empty() {
            return Err(DecodeError::TrailingBytes(bytes.len()));
        }
        Ok(value)
    }

    /// Whether `version` uses the flexible encoding.
    fn is_flexible(version: i16) -> bool {
        Self::FLEXIBLE_MIN.is_some_and(|min| version >= min)
    }
}

/// A request message: knows its API key and its response type.
pub trait Request: Message {
    /// The API key sent in the request header.
    const API_KEY: ApiKey;
    /// The matching response message.
    type Response: Message;
}
