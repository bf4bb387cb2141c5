//! Cluster state: metadata (brokers, leaders, epochs), routes and backoff.

pub mod backoff;
pub mod metadata;

pub use backoff::Backoff;
pub use metadata::{BrokerInfo, Metadata, PartitionInfo, TopicInfo};

/// Where a request should go.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// Any broker (the least loaded ready connection, else a bootstrap server).
    Any,
    /// A specific broker by node id.
    Broker(i32),
    /// The leader of a partition (waits for metadata when unknown).
    Leader {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
    },
    /// The coordinator of a consumer group (looked up with FindCoordinator).
    GroupCoordinator(String),
    /// The coordinator of a transactional id (looked up with FindCoordinator).
    TxnCoordinator(String),
    /// The controller (in KRaft, the broker metadata names; it forwards).
    Controller,
}

/// Separate connections per broker so that slow requests never delay others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    /// Metadata, admin and everything else.
    Default,
    /// Produce only: the producer's pipelined requests never queue behind admin calls,
    /// and `max.in.flight.requests.per.connection` counts Produce requests alone.
    Produce,
    /// Fetch and ShareFetch (long polls).
    Fetch,
    /// Group membership calls that can block for a rebalance (JoinGroup, SyncGroup...).
    Group,
}

impl Lane {
    /// The lane an API travels on.
    pub fn of(api: crate::protocol::ApiKey) -> Lane {
        use crate::protocol::ApiKey as K;
        match api {
            K::Produce => Lane::Produce,
            K::Fetch | K::ShareFetch => Lane::Fetch,
            K::JoinGroup
            | K::SyncGroup
            | K::Heartbeat
            | K::LeaveGroup
            | K::ConsumerGroupHeartbeat
            | K::ShareGroupHeartbeat
            | K::StreamsGroupHeartbeat => Lane::Group,
            _ => Lane::Default,
        }
    }
}
