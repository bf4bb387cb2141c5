//! Group coordinator answers built from fuzz input (`machine_group`): classic
//! membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) with the error codes a
//! member meets and assignments from the input (sometimes garbage bytes), KIP-848
//! ConsumerGroupHeartbeat (epochs, assignments by topic id, heartbeat intervals,
//! errors), OffsetFetch and OffsetCommit (group and per-partition errors).

use bytes::Bytes;
use kafka_core::group::{Assignment, TopicPartitions};
use kafka_core::protocol::messages::consumer_group_heartbeat::response as cgh;
use kafka_core::protocol::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use kafka_core::protocol::messages::heartbeat::HeartbeatResponse;
use kafka_core::protocol::messages::join_group::response::JoinGroupResponseMember;
use kafka_core::protocol::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use kafka_core::protocol::messages::leave_group::response::MemberResponse;
use kafka_core::protocol::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_core::protocol::messages::offset_commit::response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_core::protocol::messages::offset_commit::{OffsetCommitRequest, OffsetCommitResponse};
use kafka_core::protocol::messages::offset_fetch::response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_core::protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
use kafka_core::protocol::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};
use kafka_core::protocol::Uuid;

use crate::answers::{throttle, topic_id, TOPICS};
use crate::input::Input;

/// Codes the classic membership calls meet: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
/// REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, NOT_COORDINATOR,
/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_AUTHORIZATION_FAILED,
/// INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, UNKNOWN_SERVER_ERROR,
/// REQUEST_TIMED_OUT.
const CLASSIC_CODES: [i16; 12] = [25, 22, 27, 82, 16, 14, 15, 30, 23, 81, -1, 7];
/// Codes of ConsumerGroupHeartbeat and ShareGroupHeartbeat: UNKNOWN_MEMBER_ID,
/// FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
/// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
/// GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST,
/// UNSUPPORTED_VERSION, FENCED_INSTANCE_ID.
pub const HEARTBEAT_CODES: [i16; 13] = [25, 110, 113, 111, 112, 16, 14, 15, 81, 30, 42, 35, 82];
/// Codes of OffsetCommit partitions: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
/// REBALANCE_IN_PROGRESS, OFFSET_METADATA_TOO_LARGE, NOT_COORDINATOR,
/// COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION, STALE_MEMBER_EPOCH,
/// FENCED_INSTANCE_ID, REQUEST_TIMED_OUT, GROUP_AUTHORIZATION_FAILED.
const COMMIT_CODES: [i16; 11] = [22, 25, 27, 12, 16, 14, 3, 113, 82, 7, 30];
/// Codes of OffsetFetch (group or partition): NOT_COORDINATOR,
/// COORDINATOR_LOAD_IN_PROGRESS, UNSTABLE_OFFSET_COMMIT, UNKNOWN_TOPIC_OR_PARTITION,
/// GROUP_AUTHORIZATION_FAILED, UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH.
const FETCH_CODES: [i16; 7] = [16, 14, 88, 3, 30, 25, 113];

/// Mostly none (zeros), else one of `codes`, rarely any code.
pub fn code_of(input: &mut Input, codes: &[i16]) -> i16 {
    match input.u8() % 8 {
        5 | 6 => codes[input.below(codes.len())],
        7 => input.error_code(),
        _ => 0,
    }
}

/// The member id the coordinator hands out.
const MEMBER: &str = "m-fuzz";

/// Joined (the leader with the member list, or a follower), MEMBER_ID_REQUIRED for a
/// first join, or an error.
pub fn join_group(
    req: Option<JoinGroupRequest>,
    version: i16,
    input: &mut Input,
) -> JoinGroupResponse {
    let req = req.unwrap_or_default();
    let member_id = if req.member_id.is_empty() {
        MEMBER.to_string()
    } else {
        req.member_id.clone()
    };
    let mut out = JoinGroupResponse {
        throttle_time_ms: throttle(input),
        member_id: member_id.clone(),
        generation_id: -1,
        ..Default::default()
    };
    if req.member_id.is_empty()
        && version >= 4
        && req.group_instance_id.is_none()
        && input.one_in(3)
    {
        out.error_code = 79;
        return out;
    }
    out.error_code = code_of(input, &CLASSIC_CODES);
    if out.error_code != 0 {
        if input.one_in(2) {
            out.member_id = String::new();
        }
        return out;
    }
    out.generation_id = match input.u8() % 8 {
        7 => input.epoch(),
        g => 1 + i32::from(g),
    };
    let protocol = if req.protocols.is_empty() || input.one_in(32) {
        None
    } else {
        Some(req.protocols[input.below(req.protocols.len())].clone())
    };
    out.protocol_type = Some("consumer".into());
    out.protocol_name = Some(
        protocol
            .as_ref()
            .map_or_else(|| "bogus".into(), |p| p.name.clone()),
    );
    let leader = !input.one_in(3);
    out.leader = if leader {
        member_id.clone()
    } else {
        "m-other".into()
    };
    if leader {
        let own = protocol.map(|p| p.metadata).unwrap_or_default();
        let mut members = vec![JoinGroupResponseMember {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id.clone(),
            metadata: own.clone(),
            ..Default::default()
        }];
        for i in 0..input.below(3) {
            let metadata = if input.one_in(6) {
                Bytes::copy_from_slice(input.bytes(24))
            } else {
                own.clone()
            };
            members.push(JoinGroupResponseMember {
                member_id: format!("m-{i}"),
                metadata,
                ..Default::default()
            });
        }
        out.members = members;
    }
    out
}

/// Partitions of the cluster's topics as the input picks them (some beyond the
/// partition count, an unknown topic now and then).
fn picked(input: &mut Input) -> Vec<(String, Vec<i32>)> {
    let mut out = Vec::new();
    for (name, count) in TOPICS {
        let parts: Vec<i32> = (0..count).filter(|_| !input.one_in(3)).collect();
        if !parts.is_empty() {
            out.push((name.to_string(), parts));
        }
    }
    if input.one_in(16) {
        out.push(("t".into(), vec![input.epoch()]));
    }
    if input.one_in(32) {
        out.push(("gone".into(), vec![0]));
    }
    out
}

/// The member's assignment: the one its leader sent for it, one built from the input,
/// or garbage bytes.
pub fn sync_group(req: Option<SyncGroupRequest>, input: &mut Input) -> SyncGroupResponse {
    let req = req.unwrap_or_default();
    let error_code = code_of(input, &CLASSIC_CODES);
    let sent = req
        .assignments
        .iter()
        .find(|a| a.member_id == req.member_id)
        .map(|a| a.assignment.clone());
    let assignment = if error_code != 0 {
        Bytes::new()
    } else {
        match (input.u8() % 8, sent) {
            (0..=4, Some(a)) => a,
            (7, _) => Bytes::copy_from_slice(input.bytes(32)),
            _ => {
                let a = Assignment {
                    partitions: picked(input)
                        .into_iter()
                        .map(|(topic, partitions)| TopicPartitions { topic, partitions })
                        .collect(),
                    user_data: None,
                };
                Bytes::from(a.encode(input.below(4) as i16))
            }
        }
    };
    SyncGroupResponse {
        throttle_time_ms: throttle(input),
        error_code,
        protocol_type: req.protocol_type,
        protocol_name: req.protocol_name,
        assignment,
        ..Default::default()
    }
}

/// A heartbeat's code.
pub fn heartbeat(input: &mut Input) -> HeartbeatResponse {
    HeartbeatResponse {
        throttle_time_ms: throttle(input),
        error_code: code_of(input, &CLASSIC_CODES),
        ..Default::default()
    }
}

/// Left (per member for v3+), or an error.
pub fn leave_group(req: Option<LeaveGroupRequest>, input: &mut Input) -> LeaveGroupResponse {
    let req = req.unwrap_or_default();
    LeaveGroupResponse {
        throttle_time_ms: throttle(input),
        error_code: code_of(input, &CLASSIC_CODES),
        members: req
            .members
            .iter()
            .map(|m| MemberResponse {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                error_code: code_of(input, &CLASSIC_CODES),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A KIP-848 assignment by topic id (an unknown id now and then).
fn assignment_by_id(input: &mut Input) -> Vec<(Uuid, Vec<i32>)> {
    picked(input)
        .into_iter()
        .map(|(name, parts)| {
            let id = if name == "gone" {
                Uuid::from_bytes([input.u8() | 1; 16])
            } else {
                topic_id(&name)
            };
            (id, parts)
        })
        .collect()
}

/// A member epoch for a heartbeat that sent `epoch`: bumped with a new assignment,
/// kept, or anything.
pub fn next_epoch(epoch: i32, input: &mut Input) -> (i32, bool) {
    match input.u8() % 8 {
        0..=3 => (epoch.max(0).saturating_add(1), true),
        4 | 5 => (epoch, false),
        6 => (input.epoch(), true),
        _ => (epoch, true),
    }
}

/// A heartbeat interval: mostly 100..1100 ms, sometimes 0 or negative.
pub fn heartbeat_interval(input: &mut Input) -> i32 {
    match input.u8() % 16 {
        14 => 0,
        15 => -(i32::from(input.u8())),
        _ => 500 + i32::from(input.u16() % 1000) - 400,
    }
}

/// A KIP-848 heartbeat answer: a member id for a first heartbeat, the epoch, an
/// assignment, the interval; -1 for a leave; or an error.
pub fn consumer_group_heartbeat(
    req: Option<ConsumerGroupHeartbeatRequest>,
    input: &mut Input,
) -> ConsumerGroupHeartbeatResponse {
    let req = req.unwrap_or_default();
    let error_code = code_of(input, &HEARTBEAT_CODES);
    let member_id = if req.member_id.is_empty() || input.one_in(32) {
        Some(MEMBER.to_string())
    } else {
        Some(req.member_id.clone())
    };
    if error_code != 0 || req.member_epoch < 0 {
        return ConsumerGroupHeartbeatResponse {
            throttle_time_ms: throttle(input),
            error_code,
            member_id,
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: heartbeat_interval(input),
            ..Default::default()
        };
    }
    let (member_epoch, assign) = next_epoch(req.member_epoch, input);
    let assignment = assign.then(|| cgh::Assignment {
        topic_partitions: assignment_by_id(input)
            .into_iter()
            .map(|(topic_id, partitions)| cgh::TopicPartitions {
                topic_id,
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    ConsumerGroupHeartbeatResponse {
        throttle_time_ms: throttle(input),
        error_code,
        member_id,
        member_epoch,
        heartbeat_interval_ms: heartbeat_interval(input),
        assignment,
        ..Default::default()
    }
}

fn committed(input: &mut Input) -> (i64, i32, i16) {
    let offset = match input.u8() % 8 {
        6 => -1,
        7 => input.offset(),
        _ => i64::from(input.u8() % 16),
    };
    (offset, input.epoch(), code_of(input, &FETCH_CODES))
}

/// A committed offset (or none, -1) per partition asked for, with codes; the v8+
/// grouped form or the old one.
pub fn offset_fetch(
    req: Option<OffsetFetchRequest>,
    version: i16,
    input: &mut Input,
) -> OffsetFetchResponse {
    let req = req.unwrap_or_default();
    let throttle_time_ms = throttle(input);
    if version >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| OffsetFetchResponseGroup {
                group_id: g.group_id.clone(),
                error_code: code_of(input, &FETCH_CODES),
                topics: g
                    .topics
                    .iter()
                    .flatten()
                    .map(|t| OffsetFetchResponseTopics {
                        name: t.name.clone(),
                        topic_id: t.topic_id,
                        partitions: t
                            .partition_indexes
                            .iter()
                            .filter_map(|&p| {
                                if input.one_in(16) {
                                    return None;
                                }
                                let (committed_offset, committed_leader_epoch, error_code) =
                                    committed(input);
                                Some(OffsetFetchResponsePartitions {
                                    partition_index: p,
                                    committed_offset,
                                    committed_leader_epoch,
                                    error_code,
                                    ..Default::default()
                                })
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        return OffsetFetchResponse {
            throttle_time_ms,
            groups,
            ..Default::default()
        };
    }
    OffsetFetchResponse {
        throttle_time_ms,
        error_code: code_of(input, &FETCH_CODES),
        topics: req
            .topics
            .iter()
            .flatten()
            .map(|t| OffsetFetchResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|&p| {
                        let (committed_offset, committed_leader_epoch, error_code) =
                            committed(input);
                        OffsetFetchResponsePartition {
                            partition_index: p,
                            committed_offset,
                            committed_leader_epoch,
                            error_code,
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A code per partition committed (some left out).
pub fn offset_commit(req: Option<OffsetCommitRequest>, input: &mut Input) -> OffsetCommitResponse {
    let req = req.unwrap_or_default();
    OffsetCommitResponse {
        throttle_time_ms: throttle(input),
        topics: req
            .topics
            .iter()
            .map(|t| OffsetCommitResponseTopic {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .filter_map(|p| {
                        if input.one_in(16) {
                            return None;
                        }
                        Some(OffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: code_of(input, &COMMIT_CODES),
                            ..Default::default()
                        })
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
