//! OffsetCommit on the group's coordinator. From v9 a consumer group's member commits
//! with its member id and member epoch: an unknown member is UNKNOWN_MEMBER_ID, another
//! epoch STALE_MEMBER_EPOCH (`group_state::GroupCoordinator::check_member`); an epoch
//! below 0 is accepted while the group has no members (an assign-mode consumer or an
//! admin). Offsets go to the committed offsets `txn_state` keeps; v10+ names topics by
//! id. A classic group's member commits with its generation
//! (`classic_state::ClassicCoordinator::check_commit`: UNKNOWN_MEMBER_ID,
//! ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS while the generation awaits its
//! assignment). A commit that moves an offset backwards is counted (the scenarios assert
//! none).

use kafka_core::protocol::messages::offset_commit::response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_core::protocol::messages::offset_commit::{OffsetCommitRequest, OffsetCommitResponse};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: OffsetCommitRequest = frame.decode().expect("OffsetCommit decodes");
    let group = req.group_id.as_str();
    let generation = req.generation_id_or_member_epoch;
    let gate = cluster.txn.gate(ApiKey::OffsetCommit, group, node);
    let outcome = if gate.is_ok() && cluster.classic.has(group) {
        // A classic group: generation and member checks (`classic_state`).
        cluster
            .classic
            .check_commit(group, &req.member_id, generation)
    } else {
        let outcome = gate.and_then(|()| {
            cluster
                .groups
                .check_member(group, &req.member_id, generation)
        });
        match outcome {
            Ok(()) => cluster.groups.counters.commits += 1,
            Err(KafkaCode::UNKNOWN_MEMBER_ID | KafkaCode::STALE_MEMBER_EPOCH) => {
                cluster.groups.counters.commits_refused += 1
            }
            Err(_) => {}
        }
        outcome
    };
    let code = outcome.err().map_or(0, |c| c.0);
    let mut topics = Vec::new();
    for t in &req.topics {
        let name = if frame.version >= 10 {
            cluster.topic_by_id(t.topic_id).map(|t| t.name.clone())
        } else {
            Some(t.name.clone())
        };
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let code = match (&name, code) {
                (None, 0) => KafkaCode::UNKNOWN_TOPIC_ID.0,
                (Some(name), 0) => {
                    let key = (group.to_string(), name.clone(), p.partition_index);
                    let committed = (p.committed_offset, p.committed_leader_epoch);
                    let old = cluster.txn.group_offsets.insert(key, committed);
                    if old.is_some_and(|(o, _)| o > p.committed_offset) {
                        cluster.groups.counters.commits_backwards += 1;
                        cluster.groups.counters.backwards.push(format!(
                            "{group} {name}-{}: {} -> {} by {} at generation/epoch {generation}, {} ms",
                            p.partition_index,
                            old.map_or(-1, |(o, _)| o),
                            p.committed_offset,
                            req.member_id,
                            cluster.txn.now_ms()
                        ));
                    }
                    let end = cluster
                        .topics
                        .get(name)
                        .and_then(|t| t.partitions.get(usize::try_from(p.partition_index).ok()?))
                        .map(|part| part.next_offset);
                    if end.is_some_and(|end| p.committed_offset > end) {
                        cluster.groups.counters.commits_past_end += 1;
                    }
                    0
                }
                (_, code) => code,
            };
            cluster.count_error(code);
            partitions.push(OffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: code,
                ..Default::default()
            });
        }
        topics.push(OffsetCommitResponseTopic {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partitions,
            ..Default::default()
        });
    }
    answer(
        frame,
        &OffsetCommitResponse {
            topics,
            ..Default::default()
        },
    )
}
