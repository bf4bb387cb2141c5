//! Metadata: the running brokers and the topics asked for (all when the request names
//! none), with leaders and leader epochs; unknown topics answered
//! UNKNOWN_TOPIC_OR_PARTITION.

use kafka_core::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_core::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use kafka_core::protocol::{KafkaCode, Uuid};

use super::super::cluster::{SimCluster, Topic};
use super::super::wire::{answer, Frame};

/// The answer to `frame`.
pub fn handle(cluster: &mut SimCluster, frame: &Frame) -> Vec<u8> {
    let req: MetadataRequest = frame.decode().expect("Metadata decodes");
    let topics: Vec<MetadataResponseTopic> = match &req.topics {
        None => cluster.topics.values().map(describe).collect(),
        Some(asked) => asked
            .iter()
            .map(|t| {
                let found = match &t.name {
                    Some(name) => cluster.topics.get(name),
                    None => cluster.topic_by_id(t.topic_id),
                };
                match found {
                    Some(topic) => describe(topic),
                    None => MetadataResponseTopic {
                        error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                        name: t.name.clone(),
                        topic_id: Uuid::default(),
                        ..Default::default()
                    },
                }
            })
            .collect(),
    };
    for t in &topics {
        cluster.count_error(t.error_code);
    }
    let body = MetadataResponse {
        brokers: cluster
            .brokers
            .iter()
            .filter(|b| b.up)
            .map(|b| MetadataResponseBroker {
                node_id: b.id,
                host: b.host.clone(),
                port: b.port,
                ..Default::default()
            })
            .collect(),
        cluster_id: Some("sim".into()),
        controller_id: 1,
        topics,
        ..Default::default()
    };
    answer(frame, &body)
}

fn describe(topic: &Topic) -> MetadataResponseTopic {
    MetadataResponseTopic {
        name: Some(topic.name.clone()),
        topic_id: topic.id,
        partitions: topic
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| MetadataResponsePartition {
                partition_index: i as i32,
                leader_id: p.leader,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.replicas.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
