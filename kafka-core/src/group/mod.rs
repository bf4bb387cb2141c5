//! Consumer groups: the consumer protocol's embedded encodings, the partition assignors
//! a group leader runs, classic membership, committed offsets and the group consumer.
//!
//! Files: `protocol` (ConsumerProtocol subscription/assignment, versions 0–3),
//! `assignor/` (range, roundrobin, sticky, cooperative-sticky), `member` (the classic
//! membership sub-machine), `kip848` (the KIP-848 member), `membership` (either), `topic_names` (KIP-848 topic ids to names), `offsets` (OffsetCommit and OffsetFetch),
//! `pattern` (pattern subscriptions), `consumer/`
//! ([`GroupConsumer`]: the fetcher driven by membership), `error`.

pub mod assignor;
mod consumer;
mod error;
mod kip848;
mod member;
mod membership;
mod offsets;
mod pattern;
pub mod protocol;
pub(crate) mod topic_names;

#[cfg(test)]
mod tests;

pub use consumer::{GroupConsumer, GroupEvent, GroupMetadata};
pub use error::{CommitError, GroupError};
pub use member::TopicPartition;
pub use offsets::CommitId;
pub use pattern::TopicPattern;
pub use protocol::{Assignment, Subscription, TopicPartitions};
