//! Consumer groups: the consumer protocol's embedded encodings and the partition
//! assignors a group leader runs.

pub mod assignor;
pub mod protocol;

pub use protocol::{Assignment, Subscription, TopicPartitions};
