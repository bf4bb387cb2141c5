//! ListOffsets on the leader: earliest (-2) is the log start, latest (-1) the high
//! watermark (read_uncommitted) or the last stable offset (read_committed), a
//! timestamp the first batch at or after it.

use kafka_core::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_core::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_core::protocol::KafkaCode;
use kafka_core::record::{DecodeOptions, RecordBatch};

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: ListOffsetsRequest = frame.decode().expect("ListOffsets decodes");
    let mut topics = Vec::new();
    let lsos = &cluster.txn;
    for t in &req.topics {
        let topic = cluster.topics.get(&t.name);
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let mut r = ListOffsetsPartitionResponse {
                    partition_index: p.partition_index,
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                    ..Default::default()
                };
                let Some(part) = topic.and_then(|t| t.partitions.get(p.partition_index as usize))
                else {
                    r.error_code = KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                    return r;
                };
                if part.leader != node {
                    r.error_code = KafkaCode::NOT_LEADER_OR_FOLLOWER.0;
                    return r;
                }
                if p.current_leader_epoch >= 0 && p.current_leader_epoch < part.leader_epoch {
                    r.error_code = KafkaCode::FENCED_LEADER_EPOCH.0;
                    return r;
                }
                r.leader_epoch = part.leader_epoch;
                r.offset = match p.timestamp {
                    -2 => part.log_start,
                    -1 if req.isolation_level == 1 => {
                        lsos.lso(&t.name, p.partition_index, part.next_offset)
                    }
                    -1 => part.next_offset,
                    ts => part
                        .log
                        .iter()
                        .find(|b| {
                            RecordBatch::decode(&b.bytes, &DecodeOptions::default())
                                .is_ok_and(|(batch, _)| batch.header().max_timestamp >= ts)
                        })
                        .map_or(part.next_offset, |b| b.base),
                };
                r
            })
            .collect();
        topics.push(ListOffsetsTopicResponse {
            name: t.name.clone(),
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
        &ListOffsetsResponse {
            topics,
            ..Default::default()
        },
    )
}
