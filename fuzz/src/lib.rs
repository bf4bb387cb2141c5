//! Shared driving code of the state-machine fuzz targets (`fuzz_targets/machine_*.rs`):
//! the input as a stream of decisions, the peer's side of the wire, broker answers
//! built from the input, and one driver per target (each a public `run(data)`, so a
//! finding replays in an ordinary test too). Only the core's public API is used.

pub mod answers;
pub mod answers_group;
pub mod answers_share;
pub mod client;
pub mod connection;
pub mod consumer;
pub mod group;
pub mod input;
pub mod net;
pub mod producer;
pub mod seeds;
pub mod share;
pub mod wire;
