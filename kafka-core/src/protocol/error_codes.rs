//! Kafka error codes (being filled in).

/// A Kafka error code as carried in responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KafkaCode(pub i16);
