//! `kafka-core`: a sans-IO Apache Kafka client core.
//!
//! Every decision and no I/O: the core is fed bytes, connection facts and the current
//! `Instant`, and hands back bytes to write, sockets to open or close, deadlines and
//! events. Runtime adapters (tokio, blocking, mio, async-std) own the sockets and timers.
//!
//! Modules:
//! - [`config`]: client configuration, as a typed builder and from Java-named string keys.
//! - [`client`]: the router that owns every connection and routes typed requests
//!   (`Client::send` / `take_response`); the entry point for adapters.
//! - [`cluster`]: metadata (brokers, leaders, epochs), routes, lanes and backoff.
//! - [`conn`]: one broker connection as a state machine: framing, correlation ids,
//!   version negotiation, SASL, TLS, request timeouts and throttling.
//! - [`consumer`]: the consumer's fetcher machine: fetch sessions (KIP-227), position
//!   resets, the fetch buffer budget, records as slices of fetched buffers.
//! - [`group`]: consumer groups: the consumer protocol's subscription and assignment
//!   encodings, the range, round-robin, sticky and cooperative-sticky assignors, classic
//!   membership, committed offsets and the [`group::GroupConsumer`] machine.
//! - [`producer`]: the producer machine: partitioner, per-partition batches, Produce
//!   requests, idempotence (producer id, epochs, sequences) and delivery reports.
//! - [`protocol`]: generated codecs for every Kafka API key and version, the request and
//!   response headers, the Kafka error-code table and the wire primitives.
//! - [`record`]: record batches v2 (encode and decode), legacy message sets (decode),
//!   control records and the gzip/snappy/lz4/zstd codecs with Kafka's framing.
//! - [`secret`]: the redacting [`secret::Secret`] type for passwords, tokens and keys.
#![warn(missing_docs)]

pub mod admin;
pub mod client;
pub mod cluster;
pub mod config;
pub mod conn;
pub mod consumer;
pub mod group;
pub mod producer;
pub mod protocol;
pub mod record;
pub mod secret;
pub mod share;
#[cfg(test)]
mod test_support;
mod trace;
