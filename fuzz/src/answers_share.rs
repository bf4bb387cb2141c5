//! Share group answers built from fuzz input (`machine_share`): ShareGroupHeartbeat
//! (member ids, epochs, assignments by topic id, intervals, errors), ShareFetch
//! (acquired ranges over records built from the input, delivery counts, partition,
//! acknowledgement and session errors) and ShareAcknowledge (per-partition codes).

use kafka_core::protocol::messages::share_acknowledge::response as ack;
use kafka_core::protocol::messages::share_acknowledge::{
    ShareAcknowledgeRequest, ShareAcknowledgeResponse,
};
use kafka_core::protocol::messages::share_fetch::response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use kafka_core::protocol::messages::share_fetch::{ShareFetchRequest, ShareFetchResponse};
use kafka_core::protocol::messages::share_group_heartbeat::response as sgh;
use kafka_core::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kafka_core::protocol::Uuid;

use crate::answers::{records, throttle, topic_id, TOPICS};
use crate::answers_group::{code_of, heartbeat_interval, next_epoch, HEARTBEAT_CODES};
use crate::input::Input;

/// Top-level ShareFetch/ShareAcknowledge codes: SHARE_SESSION_NOT_FOUND,
/// INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED, UNKNOWN_MEMBER_ID,
/// GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, UNKNOWN_SERVER_ERROR.
const SESSION_CODES: [i16; 7] = [122, 123, 133, 25, 30, 42, -1];
/// Partition codes: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
/// FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_ID, INVALID_RECORD_STATE, REQUEST_TIMED_OUT,
/// TOPIC_AUTHORIZATION_FAILED, CORRUPT_MESSAGE.
const PARTITION_CODES: [i16; 8] = [6, 3, 74, 100, 121, 7, 29, 2];

/// Offsets a fetch answer's records start at: distinct per request on a connection
/// (the answers keep no state), so a seed's records are new ones.
fn base_of(correlation_id: i32) -> i64 {
    i64::from(correlation_id.max(0)) * 32
}

/// The partitions of the cluster (an answer to a request that names none: the
/// session's partitions, as far as the answers know).
fn every_partition(input: &mut Input) -> Vec<(Uuid, Vec<i32>)> {
    TOPICS
        .iter()
        .map(|(n, count)| {
            (
                topic_id(n),
                (0..*count).filter(|_| !input.one_in(3)).collect(),
            )
        })
        .collect()
}

/// A member id for a first heartbeat, the epoch, an assignment, the interval; or an
/// error.
pub fn share_group_heartbeat(
    req: Option<ShareGroupHeartbeatRequest>,
    input: &mut Input,
) -> ShareGroupHeartbeatResponse {
    let req = req.unwrap_or_default();
    let error_code = code_of(input, &HEARTBEAT_CODES);
    let member_id = if req.member_id.is_empty() || input.one_in(32) {
        Some("s-fuzz".to_string())
    } else {
        Some(req.member_id.clone())
    };
    if error_code != 0 || req.member_epoch < 0 {
        return ShareGroupHeartbeatResponse {
            throttle_time_ms: throttle(input),
            error_code,
            member_id,
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: heartbeat_interval(input),
            ..Default::default()
        };
    }
    let (member_epoch, assign) = next_epoch(req.member_epoch, input);
    let assignment = assign.then(|| {
        let mut parts = every_partition(input);
        if input.one_in(16) {
            parts.push((Uuid::from_bytes([input.u8() | 1; 16]), vec![input.epoch()]));
        }
        sgh::Assignment {
            topic_partitions: parts
                .into_iter()
                .filter(|(_, p)| !p.is_empty())
                .map(|(topic_id, partitions)| sgh::TopicPartitions {
                    topic_id,
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    });
    ShareGroupHeartbeatResponse {
        throttle_time_ms: throttle(input),
        error_code,
        member_id,
        member_epoch,
        heartbeat_interval_ms: heartbeat_interval(input),
        assignment,
        ..Default::default()
    }
}

/// Acquired ranges over `[base, base + 31]`: mostly one range over all, sometimes
/// split, overlapping or anywhere.
fn acquired(input: &mut Input, base: i64) -> Vec<AcquiredRecords> {
    match input.u8() % 8 {
        0..=4 => vec![AcquiredRecords {
            first_offset: base,
            last_offset: base + 31,
            delivery_count: 1 + input.below(2) as i16,
            ..Default::default()
        }],
        5 => vec![
            AcquiredRecords {
                first_offset: base,
                last_offset: base + input.below(8) as i64,
                delivery_count: 1,
                ..Default::default()
            },
            AcquiredRecords {
                first_offset: base + 8 + input.below(8) as i64,
                last_offset: base + 31,
                delivery_count: 2 + input.below(4) as i16,
                ..Default::default()
            },
        ],
        6 => vec![],
        _ => (0..input.below(3))
            .map(|_| AcquiredRecords {
                first_offset: input.offset(),
                last_offset: input.offset(),
                delivery_count: input.u16() as i16,
                ..Default::default()
            })
            .collect(),
    }
}

fn partition_data(input: &mut Input, partition: i32, base: i64) -> PartitionData {
    let error_code = if input.one_in(6) {
        code_of(input, &PARTITION_CODES)
    } else {
        0
    };
    let mut d = PartitionData {
        partition_index: partition,
        error_code,
        acknowledge_error_code: if input.one_in(8) {
            code_of(input, &PARTITION_CODES)
        } else {
            0
        },
        ..Default::default()
    };
    d.current_leader.leader_id = -1;
    d.current_leader.leader_epoch = -1;
    if input.one_in(12) {
        d.current_leader.leader_id = 1 + input.below(3) as i32;
        d.current_leader.leader_epoch = input.epoch();
    }
    if error_code == 0 {
        d.records = records(input, base).unwrap_or_default();
        d.acquired_records = acquired(input, base);
    }
    d
}

/// Records and acquired ranges for the partitions asked for (or, for a request naming
/// none, the session's as far as the answers know), with errors from the input.
pub fn share_fetch(
    req: Option<ShareFetchRequest>,
    correlation_id: i32,
    input: &mut Input,
) -> ShareFetchResponse {
    let req = req.unwrap_or_default();
    let base = base_of(correlation_id);
    let error_code = if input.one_in(12) {
        code_of(input, &SESSION_CODES)
    } else {
        0
    };
    let asked: Vec<(Uuid, Vec<i32>)> = if req.topics.is_empty() && req.share_session_epoch > 0 {
        every_partition(input)
    } else {
        req.topics
            .iter()
            .map(|t| {
                let parts = t.partitions.iter().map(|p| p.partition_index).collect();
                (t.topic_id, parts)
            })
            .collect()
    };
    let responses = if error_code != 0 || req.share_session_epoch < 0 {
        Vec::new()
    } else {
        asked
            .into_iter()
            .map(|(topic_id, parts)| ShareFetchableTopicResponse {
                topic_id,
                partitions: parts
                    .into_iter()
                    .filter_map(|p| {
                        if input.one_in(10) {
                            return None;
                        }
                        Some(partition_data(input, p, base))
                    })
                    .collect(),
                ..Default::default()
            })
            .filter(|t| !t.partitions.is_empty())
            .collect()
    };
    ShareFetchResponse {
        throttle_time_ms: throttle(input),
        error_code,
        acquisition_lock_timeout_ms: match input.u8() % 8 {
            7 => input.u32() as i32,
            _ => 30_000,
        },
        responses,
        ..Default::default()
    }
}

/// A code per partition acknowledged (some left out), or a session error.
pub fn share_acknowledge(
    req: Option<ShareAcknowledgeRequest>,
    input: &mut Input,
) -> ShareAcknowledgeResponse {
    let req = req.unwrap_or_default();
    let error_code = if input.one_in(12) {
        code_of(input, &SESSION_CODES)
    } else {
        0
    };
    ShareAcknowledgeResponse {
        throttle_time_ms: throttle(input),
        error_code,
        acquisition_lock_timeout_ms: 30_000,
        responses: if error_code != 0 {
            Vec::new()
        } else {
            req.topics
                .iter()
                .map(|t| ack::ShareAcknowledgeTopicResponse {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .filter_map(|p| {
                            if input.one_in(16) {
                                return None;
                            }
                            let mut d = ack::PartitionData {
                                partition_index: p.partition_index,
                                error_code: if input.one_in(6) {
                                    code_of(input, &PARTITION_CODES)
                                } else {
                                    0
                                },
                                ..Default::default()
                            };
                            d.current_leader.leader_id = -1;
                            d.current_leader.leader_epoch = -1;
                            Some(d)
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect()
        },
        ..Default::default()
    }
}
