//! Record batches: v2 encode and decode, legacy (magic 0/1) decode, control records and
//! the compression codecs, interoperable with Apache Kafka's `MemoryRecords`.
//!
//! Layout: [`header`](BatchHeader) (the 61-byte v2 header and attributes), `record`
//! (one record, zero-copy decode and encode), `batch` ([`RecordBatch`]: CRC check,
//! lazy decompression, [`Records`] iterator), `encode` ([`BatchEncoder`]), `builder`
//! ([`BatchBuilder`]: one record at a time, for the producer), `producer_state`
//! ([`ProducerState`], [`rewrite_producer_state`] on sealed bytes), `control`
//! ([`ControlRecord`]), `legacy` ([`LegacyBatch`], [`LegacyRecords`]), `set` ([`Batches`] over a fetched
//! record set), [`compression`] (one file per codec), [`fuzz`] (entry points for the
//! fuzz targets and their corpus replay).
//!
//! Invariants:
//! - Decoding never panics and never allocates from a wire count or a claimed size:
//!   lengths and varints are checked against the remaining bytes, records are
//!   iterated, not collected (legacy wrappers' inner messages too), and decompression
//!   stops at [`DecodeOptions::max_decompressed_bytes`] with the output buffer's
//!   capacity never grown past that cap.
//! - The CRC is verified in [`RecordBatch::decode`], before anything is decompressed.
//! - An uncompressed batch's keys, values and headers are slices of the input
//!   [`Bytes`](bytes::Bytes); a compressed batch is decompressed once, on demand.
//! - Encoding appends to a caller `Vec<u8>`; on error the buffer is left as it was.
//! - [`BatchBuilder`] writes each record's bytes as it is appended (no per-record
//!   allocation, no record objects kept) and seals byte-identical to [`BatchEncoder`];
//!   a record that fails or does not fit leaves the open batch as it was.

mod batch;
mod builder;
pub mod compression;
mod control;
mod encode;
mod error;
pub mod fuzz;
mod header;
mod legacy;
mod producer_state;
#[allow(clippy::module_inception)]
mod record;
mod set;
mod wire;

pub use batch::{DecodeOptions, RecordBatch, Records, DEFAULT_MAX_DECOMPRESSED_BYTES};
pub use builder::{Append, BatchBuilder, SealedBatch};
pub use compression::Compression;
pub use control::{ControlRecord, ControlRecordType};
pub use encode::{BatchEncoder, BatchOptions, EncodedBatch};
pub use error::RecordError;
pub use header::{BatchAttributes, BatchHeader, TimestampType, BATCH_HEADER_LEN, LOG_OVERHEAD};
pub use legacy::{LegacyBatch, LegacyRecords};
pub use producer_state::{rewrite_producer_state, ProducerState};
pub use record::{Header, HeaderIter, Headers, NewHeader, NewRecord, Record};
pub use set::{Batch, Batches};

#[cfg(test)]
mod tests;
