//! `kafka-core`: a sans-IO Apache Kafka client core.
//!
//! Every decision and no I/O: the core is fed bytes, connection facts and the current
//! `Instant`, and hands back bytes to write, sockets to open or close, deadlines and
//! events. Runtime adapters (tokio, blocking, mio, async-std) own the sockets and timers.
//!
//! Modules:
//! - [`protocol`]: generated codecs for every Kafka API key and version, the request and
//!   response headers, the Kafka error-code table and the wire primitives.
//! - [`record`]: record batches v2 (encode and decode), legacy message sets (decode),
//!   control records and the gzip/snappy/lz4/zstd codecs with Kafka's framing.
#![warn(missing_docs)]

pub mod protocol;
pub mod record;
