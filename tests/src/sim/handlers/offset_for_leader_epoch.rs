//! OffsetForLeaderEpoch on the leader (KIP-320, a consumer validating its position): the
//! end offset of the asked epoch from the partition's leader epoch cache, after the
//! checks Kafka makes (not the leader, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).

use kafka_core::protocol::messages::offset_for_leader_epoch::response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_core::protocol::messages::offset_for_leader_epoch::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use kafka_core::protocol::KafkaCode;

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: OffsetForLeaderEpochRequest = frame.decode().expect("OffsetForLeaderEpoch decodes");
    let mut topics = Vec::new();
    for t in &req.topics {
        let topic = cluster.topics.get(&t.topic);
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let mut r = EpochEndOffset {
                    partition: p.partition,
                    leader_epoch: -1,
                    end_offset: -1,
                    ..Default::default()
                };
                let Some(part) = topic.and_then(|t| t.partitions.get(p.partition as usize)) else {
                    r.error_code = KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                    return r;
                };
                let code = if part.leader != node {
                    KafkaCode::NOT_LEADER_OR_FOLLOWER
                } else if p.current_leader_epoch >= 0 && p.current_leader_epoch < part.leader_epoch
                {
                    KafkaCode::FENCED_LEADER_EPOCH
                } else if p.current_leader_epoch > part.leader_epoch {
                    KafkaCode::UNKNOWN_LEADER_EPOCH
                } else {
                    KafkaCode::NONE
                };
                if code != KafkaCode::NONE {
                    r.error_code = code.0;
                    return r;
                }
                (r.leader_epoch, r.end_offset) = part.end_of(p.leader_epoch);
                r
            })
            .collect();
        topics.push(OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions,
            ..Default::default()
        });
    }
    for t in &topics {
        for p in &t.partitions {
            cluster.count_error(p.error_code);
        }
    }
    answer(
        frame,
        &OffsetForLeaderEpochResponse {
            topics,
            ..Default::default()
        },
    )
}
