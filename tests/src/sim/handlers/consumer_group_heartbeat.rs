//! ConsumerGroupHeartbeat (KIP-848) on the group's coordinator: topic ids in the owned
//! partitions are resolved to names, the group coordinator (`group_state`) applies the
//! heartbeat, and the assignment is answered by topic id. A request at the wrong broker
//! is NOT_COORDINATOR, one while the coordinator loads COORDINATOR_LOAD_IN_PROGRESS
//! (injected ones too, as for the transactional APIs). Regex subscriptions are not
//! served (INVALID_REQUEST).

use std::collections::BTreeSet;

use kafka_core::protocol::messages::consumer_group_heartbeat::response::{
    Assignment, TopicPartitions,
};
use kafka_core::protocol::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::group_state::{Beat, Tp};
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: ConsumerGroupHeartbeatRequest =
        frame.decode().expect("ConsumerGroupHeartbeat decodes");
    let body = match beat(cluster, node, &req) {
        Ok(body) => body,
        Err(code) => {
            cluster.count_error(code.0);
            ConsumerGroupHeartbeatResponse {
                error_code: code.0,
                error_message: Some(code.to_string()),
                ..Default::default()
            }
        }
    };
    answer(frame, &body)
}

fn beat(
    cluster: &mut SimCluster,
    node: i32,
    req: &ConsumerGroupHeartbeatRequest,
) -> Result<ConsumerGroupHeartbeatResponse, KafkaCode> {
    cluster
        .txn
        .gate(ApiKey::ConsumerGroupHeartbeat, &req.group_id, node)?;
    if req.member_id.is_empty()
        || req
            .subscribed_topic_regex
            .as_ref()
            .is_some_and(|r| !r.is_empty())
    {
        return Err(KafkaCode::INVALID_REQUEST);
    }
    let owned: Option<BTreeSet<Tp>> = req.topic_partitions.as_ref().map(|ts| {
        ts.iter()
            .filter_map(|t| {
                let topic = cluster.topic_by_id(t.topic_id)?;
                Some(t.partitions.iter().map(|p| (topic.name.clone(), *p)))
            })
            .flatten()
            .collect()
    });
    let beat = Beat {
        member_id: req.member_id.clone(),
        epoch: req.member_epoch,
        topics: req
            .subscribed_topic_names
            .as_ref()
            .map(|n| n.iter().cloned().collect()),
        owned,
    };
    let full = req.member_epoch == 0
        || (req.rebalance_timeout_ms != -1
            && req.subscribed_topic_names.is_some()
            && req.topic_partitions.is_some());
    let now_ms = cluster.txn.now_ms();
    let topics = &cluster.topics;
    let partitions = |t: &str| topics.get(t).map(|t| t.partitions.len() as i32);
    let out = cluster
        .groups
        .heartbeat(&req.group_id, &beat, now_ms, full, &partitions)?;
    let assignment = out.assignment.map(|tps| {
        let mut by_topic: Vec<TopicPartitions> = Vec::new();
        for (t, p) in tps {
            let id = cluster.topics[&t].id;
            match by_topic.last_mut() {
                Some(last) if last.topic_id == id => last.partitions.push(p),
                _ => by_topic.push(TopicPartitions {
                    topic_id: id,
                    partitions: vec![p],
                    ..Default::default()
                }),
            }
        }
        Assignment {
            topic_partitions: by_topic,
            ..Default::default()
        }
    });
    Ok(ConsumerGroupHeartbeatResponse {
        member_id: Some(req.member_id.clone()),
        member_epoch: out.epoch,
        // A leave is answered with no interval (as Kafka): there is no next heartbeat.
        heartbeat_interval_ms: if out.epoch < 0 {
            0
        } else {
            cluster.groups.heartbeat_interval_ms
        },
        assignment,
        ..Default::default()
    })
}
