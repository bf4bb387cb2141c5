//! KIP-219 throttling on the simulated brokers: a broker over its quota answers with a
//! non-zero `throttle_time_ms` (set here in the encoded answer of any API the cluster
//! serves, by decoding it, setting the field and encoding it again) and then mutes the
//! connection until the throttle ends. The client must not write to a connection while
//! it is throttled; [`World`](super::world::World) checks that for every connection
//! (`NetCounters::throttle_violations`).

use bytes::Bytes;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::messages::{
    add_offsets_to_txn::AddOffsetsToTxnResponse, add_partitions_to_txn::AddPartitionsToTxnResponse,
    consumer_group_heartbeat::ConsumerGroupHeartbeatResponse, end_txn::EndTxnResponse,
    fetch::FetchResponse, find_coordinator::FindCoordinatorResponse,
    init_producer_id::InitProducerIdResponse, list_offsets::ListOffsetsResponse,
    metadata::MetadataResponse, offset_commit::OffsetCommitResponse,
    offset_fetch::OffsetFetchResponse, offset_for_leader_epoch::OffsetForLeaderEpochResponse,
    produce::ProduceResponse, txn_offset_commit::TxnOffsetCommitResponse,
};
use kafka_core::protocol::{ApiKey, Decodable, Encodable, Message};

/// Which answers a broker throttles, active while the world's faults are on.
#[derive(Debug, Clone, Default)]
pub struct Throttling {
    /// Per mille of answers (of the APIs below) that carry a throttle.
    pub chance: u32,
    /// The throttle time range in ms.
    pub ms: (u64, u64),
    /// The APIs throttled (`None`: every API the cluster serves but ApiVersions).
    pub apis: Option<Vec<ApiKey>>,
}

impl Throttling {
    /// Whether answers to `api` may be throttled.
    pub fn applies(&self, api: ApiKey) -> bool {
        self.chance > 0
            && api != ApiKey::ApiVersions
            && self.apis.as_ref().is_none_or(|a| a.contains(&api))
    }
}

/// Sets `throttle_time_ms` to `ms` in `answer` (a framed answer to `api` at `version`).
/// False when that version of the answer has no throttle field (nothing changed).
pub fn set_throttle(answer: &mut Vec<u8>, api: ApiKey, version: i16, ms: i32) -> bool {
    macro_rules! by_api {
        ($($key:ident => $ty:ty),* $(,)?) => {
            match api {
                $(ApiKey::$key => rewrite::<$ty>(answer, api, version, ms),)*
                _ => false,
            }
        };
    }
    by_api!(
        Produce => ProduceResponse,
        Fetch => FetchResponse,
        Metadata => MetadataResponse,
        InitProducerId => InitProducerIdResponse,
        ListOffsets => ListOffsetsResponse,
        OffsetForLeaderEpoch => OffsetForLeaderEpochResponse,
        FindCoordinator => FindCoordinatorResponse,
        AddPartitionsToTxn => AddPartitionsToTxnResponse,
        AddOffsetsToTxn => AddOffsetsToTxnResponse,
        TxnOffsetCommit => TxnOffsetCommitResponse,
        EndTxn => EndTxnResponse,
        OffsetFetch => OffsetFetchResponse,
        OffsetCommit => OffsetCommitResponse,
        ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse,
    )
}

/// The response types' throttle field, by name.
trait Throttled {
    fn set(&mut self, ms: i32);
}

macro_rules! throttled {
    ($($ty:ty),*) => {
        $(impl Throttled for $ty {
            fn set(&mut self, ms: i32) {
                self.throttle_time_ms = ms;
            }
        })*
    };
}

throttled!(
    ProduceResponse,
    FetchResponse,
    MetadataResponse,
    InitProducerIdResponse,
    ListOffsetsResponse,
    OffsetForLeaderEpochResponse,
    FindCoordinatorResponse,
    AddPartitionsToTxnResponse,
    AddOffsetsToTxnResponse,
    TxnOffsetCommitResponse,
    EndTxnResponse,
    OffsetFetchResponse,
    OffsetCommitResponse,
    ConsumerGroupHeartbeatResponse
);

fn rewrite<M: Message + Throttled>(
    answer: &mut Vec<u8>,
    api: ApiKey,
    version: i16,
    ms: i32,
) -> bool {
    let mut rest = Bytes::copy_from_slice(&answer[4..]);
    let header = ResponseHeader::decode(&mut rest, api.response_header_version(version))
        .expect("our own answer header decodes");
    let mut body = M::decode_from(rest, version).expect("our own answer decodes");
    body.set(ms);
    if body.throttle_time_ms(version) != Some(ms) {
        return false;
    }
    let mut frame = vec![0; 4];
    header
        .encode(&mut frame, api.response_header_version(version))
        .expect("header encodes");
    body.encode(&mut frame, version).expect("answer encodes");
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    *answer = frame;
    true
}
