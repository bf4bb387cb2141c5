//! One module per API the simulated cluster serves, each a function from the cluster's
//! state and a decoded request to an encoded answer.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod consumer_group_heartbeat;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod init_producer_id;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod txn_offset_commit;

/// The APIs served, offered in ApiVersions answers.
pub const SERVED: &[kafka_core::protocol::ApiKey] = {
    use kafka_core::protocol::ApiKey::*;
    &[
        ApiVersions,
        Metadata,
        InitProducerId,
        Produce,
        Fetch,
        ListOffsets,
        OffsetForLeaderEpoch,
        FindCoordinator,
        AddPartitionsToTxn,
        AddOffsetsToTxn,
        TxnOffsetCommit,
        EndTxn,
        OffsetFetch,
        OffsetCommit,
        ConsumerGroupHeartbeat,
    ]
};

/// A framed answer and how long the broker holds it (a Fetch with nothing to return
/// waits its `max_wait_ms`).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The framed response.
    pub bytes: Vec<u8>,
    /// Milliseconds the broker waits before writing it.
    pub hold_ms: u64,
}

impl Answer {
    /// Written at once.
    pub fn now(bytes: Vec<u8>) -> Answer {
        Answer { bytes, hold_ms: 0 }
    }

    /// Written after `hold_ms`.
    pub fn after(bytes: Vec<u8>, hold_ms: u64) -> Answer {
        Answer { bytes, hold_ms }
    }
}
