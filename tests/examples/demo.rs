//! The README's main job until the producer and consumer exist: talk to a real broker
//! through our codecs — negotiate versions, create a topic, and read its metadata.
//!
//! Usage: `KAFKA_BOOTSTRAP_SERVERS=host:port cargo run -p kafka-tests --example demo`

use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::{ApiKey, KafkaCode};
use kafka_tests::{rig_var, RawClient};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap = rig_var("KAFKA_BOOTSTRAP_SERVERS").ok_or("set KAFKA_BOOTSTRAP_SERVERS")?;
    let addr = bootstrap.split(',').next().unwrap_or_default();
    let mut client = RawClient::connect(addr)?;
    println!(
        "connected to {addr}; the broker offers {} APIs",
        client.broker_versions.len()
    );
    for key in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::Metadata,
        ApiKey::CreateTopics,
        ApiKey::JoinGroup,
    ] {
        println!(
            "  {:<14} broker {:>7}  ours {:>7}  -> v{}",
            key.name(),
            client
                .broker_range(key)
                .map(|r| r.to_string())
                .unwrap_or_default(),
            key.versions().to_string(),
            client.negotiated(key).unwrap_or(-1)
        );
    }
    let topic = "kafka-rs-demo";
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.into(),
            num_partitions: 3,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let v = client
        .negotiated(ApiKey::CreateTopics)
        .ok_or("no CreateTopics")?;
    let created = client.call(v, &create)?;
    let code = KafkaCode(created.topics[0].error_code);
    println!("CreateTopics v{v} {topic}: {code}");
    if code != KafkaCode::NONE && code != KafkaCode::TOPIC_ALREADY_EXISTS {
        return Err(format!("could not create {topic}: {code}").into());
    }
    let v = client.negotiated(ApiKey::Metadata).ok_or("no Metadata")?;
    let metadata = client.call(
        v,
        &MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some(topic.into()),
                ..Default::default()
            }]),
            ..Default::default()
        },
    )?;
    println!(
        "Metadata v{v}: cluster {:?}, controller {}",
        metadata.cluster_id, metadata.controller_id
    );
    for t in &metadata.topics {
        println!("  topic {:?} id {}", t.name, t.topic_id);
        for p in &t.partitions {
            println!(
                "    partition {} leader {} epoch {} replicas {:?}",
                p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes
            );
        }
    }
    Ok(())
}
