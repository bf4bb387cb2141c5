//! One module per API the simulated cluster serves, each a function from the cluster's
//! state and a decoded request to an encoded answer.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod consumer_group_heartbeat;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod sync_group;
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
        JoinGroup,
        SyncGroup,
        Heartbeat,
        LeaveGroup,
    ]
};

/// A framed answer and how long the broker holds it (a Fetch with nothing to return
/// waits its `max_wait_ms`), or the ticket of a request parked until the cluster answers
/// it (a classic JoinGroup or SyncGroup waiting for other members).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The framed response (empty when parked).
    pub bytes: Vec<u8>,
    /// Milliseconds the broker waits before writing it.
    pub hold_ms: u64,
    /// Parked under this ticket: answered later (`ClassicCoordinator::take_ready`).
    pub parked: Option<u64>,
}

impl Answer {
    /// Written at once.
    pub fn now(bytes: Vec<u8>) -> Answer {
        Answer {
            bytes,
            hold_ms: 0,
            parked: None,
        }
    }

    /// Written after `hold_ms`.
    pub fn after(bytes: Vec<u8>, hold_ms: u64) -> Answer {
        Answer {
            bytes,
            hold_ms,
            parked: None,
        }
    }

    /// From a classic handler: written now, or parked under a ticket.
    pub fn classic(reply: super::classic_state::Reply<Vec<u8>>) -> Answer {
        match reply {
            super::classic_state::Reply::Now(bytes) => Answer::now(bytes),
            super::classic_state::Reply::Parked(t) => Answer {
                bytes: Vec::new(),
                hold_ms: 0,
                parked: Some(t),
            },
        }
    }
}
