//! Broker answers built from fuzz input: well-formed responses of the generated codecs
//! whose fields (error codes, offsets, leaders, partitions, records) come from the
//! input, so the fuzzer reaches deep into the machines; sometimes the empty default
//! response, raw bytes or a corrupted frame.

use bytes::Bytes;
use kafka_core::protocol::messages::add_offsets_to_txn::AddOffsetsToTxnResponse;
use kafka_core::protocol::messages::add_partitions_to_txn::response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_core::protocol::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
};
use kafka_core::protocol::messages::api_versions::response::{ApiVersion, FinalizedFeatureKey};
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;
use kafka_core::protocol::messages::end_txn::EndTxnResponse;
use kafka_core::protocol::messages::fetch::response::{FetchableTopicResponse, PartitionData};
use kafka_core::protocol::messages::fetch::{FetchRequest, FetchResponse};
use kafka_core::protocol::messages::find_coordinator::response::Coordinator;
use kafka_core::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use kafka_core::protocol::messages::init_producer_id::InitProducerIdResponse;
use kafka_core::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_core::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_core::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_core::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use kafka_core::protocol::messages::offset_for_leader_epoch::response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_core::protocol::messages::offset_for_leader_epoch::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use kafka_core::protocol::messages::produce::response::{
    NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_core::protocol::messages::produce::{ProduceRequest, ProduceResponse};
use kafka_core::protocol::messages::sasl_authenticate::SaslAuthenticateResponse;
use kafka_core::protocol::messages::sasl_handshake::SaslHandshakeResponse;
use kafka_core::protocol::messages::txn_offset_commit::response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_core::protocol::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_core::protocol::{ApiKey, Uuid};
use kafka_core::record::{BatchEncoder, BatchOptions, NewRecord};

use crate::answers_group as group;
use crate::answers_share as share;
use crate::input::Input;
use crate::wire::{default_body, frame, raw_frame, Seen};

/// The brokers every client-level target knows: node ids 1..=3 at `b<id>:9092`.
pub const NODES: [i32; 3] = [1, 2, 3];
/// The topics the cluster has, with their partition counts.
pub const TOPICS: [(&str, i32); 2] = [("t", 3), ("u", 1)];

/// The id of a topic (stable per name, so answers agree unless the fuzzer re-creates it).
pub fn topic_id(name: &str) -> Uuid {
    let mut b = [7u8; 16];
    for (i, c) in name.bytes().enumerate() {
        b[i % 16] ^= c;
    }
    Uuid::from_bytes(b)
}

fn name_of(id: Uuid) -> String {
    TOPICS
        .iter()
        .find(|(n, _)| topic_id(n) == id)
        .map_or_else(String::new, |(n, _)| n.to_string())
}

/// How an answer is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The API's builder with fields from the input (the default response for APIs
    /// without one).
    Built,
    /// The default response of the API: valid, but empty.
    Empty,
    /// Raw input bytes as the body.
    Raw,
    /// A built answer with one byte changed.
    Corrupt,
}

impl Style {
    /// Mostly built answers.
    pub fn pick(input: &mut Input) -> Style {
        match input.u8() {
            0..=223 => Style::Built,
            224..=235 => Style::Empty,
            236..=245 => Style::Raw,
            _ => Style::Corrupt,
        }
    }
}

/// The whole response frame to `to`.
pub fn answer(to: &Seen, input: &mut Input, style: Style) -> Vec<u8> {
    match style {
        Style::Built => built(to, input),
        Style::Empty => {
            let mut out = Vec::new();
            raw_frame(to, &default_body(to), &mut out);
            out
        }
        Style::Raw => {
            let mut out = Vec::new();
            raw_frame(to, input.bytes(64), &mut out);
            out
        }
        Style::Corrupt => {
            let mut out = built(to, input);
            let at = input.below(out.len());
            out[at] ^= input.u8() | 1;
            out
        }
    }
}

fn built(to: &Seen, input: &mut Input) -> Vec<u8> {
    match to.api {
        ApiKey::ApiVersions => frame(to, &api_versions(input)),
        ApiKey::Metadata => frame(to, &metadata(to.decode(), input)),
        ApiKey::Produce => frame(to, &produce(to.decode(), input)),
        ApiKey::Fetch => frame(to, &fetch(to.decode(), to.version, input)),
        ApiKey::ListOffsets => frame(to, &list_offsets(to.decode(), input)),
        ApiKey::OffsetForLeaderEpoch => frame(to, &epochs(to.decode(), input)),
        ApiKey::InitProducerId => frame(to, &init_producer_id(input)),
        ApiKey::FindCoordinator => frame(to, &find_coordinator(to.decode(), to.version, input)),
        ApiKey::SaslHandshake => frame(to, &sasl_handshake(input)),
        ApiKey::AddPartitionsToTxn => frame(to, &add_partitions(to.decode(), input)),
        ApiKey::EndTxn => frame(to, &end_txn(input)),
        ApiKey::AddOffsetsToTxn => frame(
            to,
            &AddOffsetsToTxnResponse {
                throttle_time_ms: throttle(input),
                error_code: coordinator_code(input),
                ..Default::default()
            },
        ),
        ApiKey::TxnOffsetCommit => frame(to, &txn_offset_commit(to.decode(), input)),
        ApiKey::SaslAuthenticate => frame(to, &sasl_authenticate(input)),
        ApiKey::JoinGroup => frame(to, &group::join_group(to.decode(), to.version, input)),
        ApiKey::SyncGroup => frame(to, &group::sync_group(to.decode(), input)),
        ApiKey::Heartbeat => frame(to, &group::heartbeat(input)),
        ApiKey::LeaveGroup => frame(to, &group::leave_group(to.decode(), input)),
        ApiKey::ConsumerGroupHeartbeat => {
            frame(to, &group::consumer_group_heartbeat(to.decode(), input))
        }
        ApiKey::OffsetFetch => frame(to, &group::offset_fetch(to.decode(), to.version, input)),
        ApiKey::OffsetCommit => frame(to, &group::offset_commit(to.decode(), input)),
        ApiKey::ShareGroupHeartbeat => frame(to, &share::share_group_heartbeat(to.decode(), input)),
        ApiKey::ShareFetch => frame(
            to,
            &share::share_fetch(to.decode(), to.correlation_id, input),
        ),
        ApiKey::ShareAcknowledge => frame(to, &share::share_acknowledge(to.decode(), input)),
        _ => {
            let mut out = Vec::new();
            raw_frame(to, &default_body(to), &mut out);
            out
        }
    }
}

/// Mostly no throttle, sometimes up to 2 s.
pub fn throttle(input: &mut Input) -> i32 {
    if input.one_in(16) {
        i32::from(input.u16() % 2000)
    } else {
        0
    }
}

/// Every API this crate sends at its full range, sometimes narrowed or refused.
pub fn api_versions(input: &mut Input) -> ApiVersionsResponse {
    let narrow = input.one_in(8);
    let api_keys = ApiKey::ALL
        .iter()
        .map(|k| {
            let v = k.supported_versions();
            let max = if narrow && input.one_in(3) {
                v.min + input.below((v.max - v.min + 1) as usize) as i16
            } else {
                v.max
            };
            ApiVersion {
                api_key: *k as i16,
                min_version: v.min,
                max_version: max,
                ..Default::default()
            }
        })
        .collect();
    let finalized_features = match input.u8() % 4 {
        0 => vec![],
        level => vec![FinalizedFeatureKey {
            name: "transaction.version".into(),
            max_version_level: i16::from(level - 1),
            min_version_level: 0,
            ..Default::default()
        }],
    };
    ApiVersionsResponse {
        error_code: if input.one_in(16) { 35 } else { 0 },
        api_keys,
        throttle_time_ms: throttle(input),
        finalized_features_epoch: i64::from(input.u8()),
        finalized_features,
        ..Default::default()
    }
}

fn node(input: &mut Input) -> i32 {
    match input.u8() % 8 {
        6 => -1,
        7 => 1 + input.below(5) as i32,
        b => NODES[usize::from(b) % 3],
    }
}

/// The cluster as the input decides: brokers, a controller, the topics asked for.
pub fn metadata(req: Option<MetadataRequest>, input: &mut Input) -> MetadataResponse {
    let brokers = NODES
        .iter()
        .filter(|_| !input.one_in(10))
        .map(|&id| MetadataResponseBroker {
            node_id: id,
            host: format!("b{id}"),
            port: 9092,
            ..Default::default()
        })
        .collect();
    let names: Vec<String> = match req.and_then(|r| r.topics) {
        None => TOPICS.iter().map(|(n, _)| n.to_string()).collect(),
        Some(ts) => ts
            .into_iter()
            .map(|t| t.name.unwrap_or_else(|| name_of(t.topic_id)))
            .collect(),
    };
    let names: Vec<String> = names.into_iter().filter(|_| !input.one_in(16)).collect();
    let topics = names
        .into_iter()
        .map(|name| {
            let known = TOPICS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
            let count = match (known, input.one_in(8)) {
                (Some(c), false) => c,
                _ => input.below(5) as i32,
            };
            let error_code = if known.is_none() && !input.one_in(4) {
                3
            } else if input.one_in(12) {
                input.error_code()
            } else {
                0
            };
            let id = if input.one_in(32) {
                Uuid::from_bytes([input.u8(); 16])
            } else {
                topic_id(&name)
            };
            MetadataResponseTopic {
                error_code,
                name: Some(name),
                topic_id: id,
                partitions: (0..count)
                    .map(|p| MetadataResponsePartition {
                        error_code: if input.one_in(16) {
                            input.error_code()
                        } else {
                            0
                        },
                        partition_index: p,
                        leader_id: node(input),
                        leader_epoch: input.epoch(),
                        replica_nodes: NODES.to_vec(),
                        isr_nodes: NODES.to_vec(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    MetadataResponse {
        throttle_time_ms: throttle(input),
        brokers,
        cluster_id: Some("fuzz".into()),
        controller_id: node(input),
        topics,
        ..Default::default()
    }
}

/// An answer per partition sent (some left out, strangers added), with codes, offsets
/// and leader hints from the input.
pub fn produce(req: Option<ProduceRequest>, input: &mut Input) -> ProduceResponse {
    let mut responses = Vec::new();
    for t in req.map(|r| r.topic_data).unwrap_or_default() {
        let mut partition_responses = Vec::new();
        for p in &t.partition_data {
            if input.one_in(16) {
                continue;
            }
            let mut r = PartitionProduceResponse {
                index: if input.one_in(32) {
                    input.epoch()
                } else {
                    p.index
                },
                error_code: input.error_code(),
                base_offset: input.offset(),
                log_append_time_ms: -1,
                log_start_offset: 0,
                ..Default::default()
            };
            if input.one_in(8) {
                r.current_leader.leader_id = node(input);
                r.current_leader.leader_epoch = input.epoch();
            }
            partition_responses.push(r);
        }
        if input.one_in(32) {
            partition_responses.push(PartitionProduceResponse {
                index: input.epoch(),
                base_offset: input.offset(),
                ..Default::default()
            });
        }
        responses.push(TopicProduceResponse {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partition_responses,
            ..Default::default()
        });
    }
    let node_endpoints = if input.one_in(8) {
        NODES
            .iter()
            .map(|&id| NodeEndpoint {
                node_id: id,
                host: format!("b{id}"),
                port: 9092,
                ..Default::default()
            })
            .collect()
    } else {
        Vec::new()
    };
    ProduceResponse {
        responses,
        throttle_time_ms: throttle(input),
        node_endpoints,
        ..Default::default()
    }
}

/// Record batches from `offset` on: v2 batches from the input (records, epochs,
/// transactional and control flags), or raw bytes.
pub fn records(input: &mut Input, offset: i64) -> Option<Bytes> {
    match input.u8() % 8 {
        6 => return None,
        7 => return Some(Bytes::copy_from_slice(input.bytes(96))),
        _ => {}
    }
    let mut out = Vec::new();
    let mut enc = BatchEncoder::new();
    let mut base = offset.max(0);
    for _ in 0..1 + input.below(3) {
        let count = 1 + input.below(4);
        let opts = BatchOptions {
            base_offset: base,
            partition_leader_epoch: input.epoch(),
            transactional: input.one_in(6),
            control: input.one_in(12),
            producer_id: 5,
            producer_epoch: 0,
            base_sequence: 0,
            ..Default::default()
        };
        let values: Vec<Vec<u8>> = (0..count).map(|_| input.bytes(8).to_vec()).collect();
        let recs = values.iter().map(|v| NewRecord {
            timestamp: 0,
            key: None,
            value: Some(v),
            headers: &[],
        });
        if enc.encode(&opts, recs, &mut out).is_err() {
            break;
        }
        base += count as i64 + if input.one_in(8) { input.offset() } else { 0 };
    }
    if input.one_in(8) {
        let cut = input.below(out.len() + 1);
        out.truncate(cut);
    }
    Some(Bytes::from(out))
}

/// An answer per partition fetched (or some other), with data from the input.
pub fn fetch(req: Option<FetchRequest>, version: i16, input: &mut Input) -> FetchResponse {
    let req = req.unwrap_or_default();
    let mut responses = Vec::new();
    for t in &req.topics {
        let name = if version >= 13 {
            String::new()
        } else {
            t.topic.clone()
        };
        let mut partitions = Vec::new();
        for p in &t.partitions {
            if input.one_in(8) {
                continue;
            }
            let error_code = if input.one_in(6) {
                input.error_code()
            } else {
                0
            };
            let hw = p.fetch_offset.max(0) + 16 - input.below(16) as i64;
            let mut d = PartitionData {
                partition_index: if input.one_in(32) {
                    input.epoch()
                } else {
                    p.partition
                },
                error_code,
                high_watermark: if input.one_in(16) { input.offset() } else { hw },
                last_stable_offset: if input.one_in(4) { input.offset() } else { hw },
                log_start_offset: 0,
                preferred_read_replica: if input.one_in(16) { node(input) } else { -1 },
                records: if error_code == 0 {
                    records(input, p.fetch_offset)
                } else {
                    None
                },
                ..Default::default()
            };
            d.diverging_epoch.epoch = -1;
            d.diverging_epoch.end_offset = -1;
            if input.one_in(16) {
                d.diverging_epoch.epoch = input.epoch();
                d.diverging_epoch.end_offset = input.offset();
            }
            if input.one_in(8) {
                d.current_leader.leader_id = node(input);
                d.current_leader.leader_epoch = input.epoch();
            }
            partitions.push(d);
        }
        responses.push(FetchableTopicResponse {
            topic: name,
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    FetchResponse {
        throttle_time_ms: throttle(input),
        error_code: if input.one_in(16) {
            input.error_code()
        } else {
            0
        },
        session_id: match input.u8() % 4 {
            0 => 0,
            1 => input.u32() as i32,
            _ => req.session_id.max(1),
        },
        responses,
        ..Default::default()
    }
}

/// An offset per partition asked for.
pub fn list_offsets(req: Option<ListOffsetsRequest>, input: &mut Input) -> ListOffsetsResponse {
    ListOffsetsResponse {
        throttle_time_ms: throttle(input),
        topics: req
            .map(|r| r.topics)
            .unwrap_or_default()
            .into_iter()
            .map(|t| ListOffsetsTopicResponse {
                name: t.name,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: if input.one_in(6) {
                            input.error_code()
                        } else {
                            0
                        },
                        timestamp: -1,
                        offset: input.offset(),
                        leader_epoch: input.epoch(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// An end offset per partition asked for.
pub fn epochs(
    req: Option<OffsetForLeaderEpochRequest>,
    input: &mut Input,
) -> OffsetForLeaderEpochResponse {
    OffsetForLeaderEpochResponse {
        throttle_time_ms: throttle(input),
        topics: req
            .map(|r| r.topics)
            .unwrap_or_default()
            .into_iter()
            .map(|t| OffsetForLeaderTopicResult {
                topic: t.topic,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| EpochEndOffset {
                        error_code: if input.one_in(6) {
                            input.error_code()
                        } else {
                            0
                        },
                        partition: p.partition,
                        leader_epoch: if input.one_in(4) {
                            input.epoch()
                        } else {
                            p.leader_epoch
                        },
                        end_offset: input.offset(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A producer id and epoch, or an error.
pub fn init_producer_id(input: &mut Input) -> InitProducerIdResponse {
    InitProducerIdResponse {
        throttle_time_ms: throttle(input),
        error_code: if input.one_in(4) {
            input.error_code()
        } else {
            0
        },
        producer_id: if input.one_in(16) {
            input.offset()
        } else {
            1000
        },
        producer_epoch: if input.one_in(16) {
            input.u16() as i16
        } else {
            i16::from(input.u8() % 4)
        },
        ..Default::default()
    }
}

/// A coordinator for every key asked for (both forms, v4+ batched).
pub fn find_coordinator(
    req: Option<FindCoordinatorRequest>,
    version: i16,
    input: &mut Input,
) -> FindCoordinatorResponse {
    let req = req.unwrap_or_default();
    let mut keys = req.coordinator_keys.clone();
    if keys.is_empty() {
        keys.push(req.key.clone());
    }
    let coordinators: Vec<Coordinator> = keys
        .into_iter()
        .map(|key| {
            let id = node(input);
            Coordinator {
                key,
                node_id: id,
                host: format!("b{id}"),
                port: 9092,
                error_code: if input.one_in(6) {
                    input.error_code()
                } else {
                    0
                },
                ..Default::default()
            }
        })
        .collect();
    let throttle_time_ms = throttle(input);
    if version >= 4 {
        return FindCoordinatorResponse {
            throttle_time_ms,
            coordinators,
            ..Default::default()
        };
    }
    let first = coordinators.first().cloned().unwrap_or_default();
    FindCoordinatorResponse {
        throttle_time_ms,
        error_code: first.error_code,
        error_message: first.error_message,
        node_id: first.node_id,
        host: first.host,
        port: first.port,
        ..Default::default()
    }
}

/// PLAIN offered (or, rarely, an error or nothing).
pub fn sasl_handshake(input: &mut Input) -> SaslHandshakeResponse {
    SaslHandshakeResponse {
        error_code: if input.one_in(8) {
            input.error_code()
        } else {
            0
        },
        mechanisms: if input.one_in(8) {
            vec![]
        } else {
            vec!["PLAIN".into()]
        },
        ..Default::default()
    }
}

/// Authenticated, with a session lifetime from the input (KIP-368 re-authentication).
pub fn sasl_authenticate(input: &mut Input) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse {
        error_code: if input.one_in(8) {
            input.error_code()
        } else {
            0
        },
        session_lifetime_ms: match input.u8() % 4 {
            0 => i64::from(input.u16()),
            1 => input.offset(),
            _ => 0,
        },
        ..Default::default()
    }
}

/// A coordinator's code: mostly none, else the ones transactions meet.
fn coordinator_code(input: &mut Input) -> i16 {
    const CODES: [i16; 8] = [15, 14, 16, 51, 47, 48, 53, 90];
    match input.u8() % 8 {
        6 => CODES[input.below(CODES.len())],
        7 => input.error_code(),
        _ => 0,
    }
}

/// A result per partition added (the v3-and-below form; brokers use v4+ among
/// themselves).
pub fn add_partitions(
    req: Option<AddPartitionsToTxnRequest>,
    input: &mut Input,
) -> AddPartitionsToTxnResponse {
    let topics = req.map(|r| r.v3_and_below_topics).unwrap_or_default();
    AddPartitionsToTxnResponse {
        throttle_time_ms: throttle(input),
        results_by_topic_v3_and_below: topics
            .into_iter()
            .map(|t| AddPartitionsToTxnTopicResult {
                name: t.name,
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|&p| AddPartitionsToTxnPartitionResult {
                        partition_index: p,
                        partition_error_code: coordinator_code(input),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The transaction ended, or a coordinator's error.
pub fn end_txn(input: &mut Input) -> EndTxnResponse {
    EndTxnResponse {
        throttle_time_ms: throttle(input),
        error_code: coordinator_code(input),
        producer_id: 1000,
        producer_epoch: i16::from(input.u8() % 4),
        ..Default::default()
    }
}

/// A result per partition committed.
pub fn txn_offset_commit(
    req: Option<TxnOffsetCommitRequest>,
    input: &mut Input,
) -> TxnOffsetCommitResponse {
    TxnOffsetCommitResponse {
        throttle_time_ms: throttle(input),
        topics: req
            .map(|r| r.topics)
            .unwrap_or_default()
            .into_iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: coordinator_code(input),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
