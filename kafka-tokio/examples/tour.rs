//! A tour of the admin client on tokio (what `scripts/demo` runs): the cluster, a new
//! topic, its description and configs, offsets, consumer groups, and clean-up — each call
//! with per-item results.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-tokio --example tour`

use std::time::{SystemTime, UNIX_EPOCH};

use kafka_core::admin::{AlterConfigOp, ConfigResource, NewTopic, OffsetSpec, TopicPartition};
use kafka_core::config::ClientConfig;
use kafka_tokio::Admin;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let admin = Admin::new(ClientConfig::from_pairs([(
        "bootstrap.servers",
        bootstrap.as_str(),
    )])?)?;

    let cluster = admin.describe_cluster().await?;
    println!(
        "cluster {}: {} broker(s), controller {}",
        cluster.cluster_id,
        cluster.brokers.len(),
        cluster.controller_id
    );
    let features = admin.describe_features().await?;
    if let Some(mv) = features.finalized_features.get("metadata.version") {
        println!("metadata.version finalized at {}", mv.max_version_level);
    }

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("tour-{stamp}");
    let missing = format!("tour-missing-{stamp}");
    let created = admin
        .create_topics([NewTopic::new(&topic, 3, 1).config("retention.ms", "3600000")])
        .await?;
    let created = created[&topic].as_ref().map_err(Clone::clone)?;
    println!("created {topic} (id {})", created.topic_id);

    // One call, two topics: the unknown one fails alone.
    let described = admin
        .describe_topics([topic.clone(), missing.clone()])
        .await?;
    for (name, result) in &described {
        match result {
            Ok(d) => println!(
                "  {name}: {} partitions, leaders {:?}",
                d.partitions.len(),
                d.partitions.iter().map(|p| p.leader).collect::<Vec<_>>()
            ),
            Err(e) => println!("  {name}: {e}"),
        }
    }

    let resource = ConfigResource::topic(&topic);
    admin
        .incremental_alter_configs([(
            resource.clone(),
            vec![AlterConfigOp::set("cleanup.policy", "compact")],
        )])
        .await?[&resource]
        .clone()?;
    let configs = admin.describe_configs([resource.clone()]).await?;
    let config = configs[&resource].as_ref().map_err(Clone::clone)?;
    for key in ["cleanup.policy", "retention.ms", "segment.bytes"] {
        if let Some(entry) = config.get(key) {
            println!("  {key} = {:?} ({:?})", entry.value, entry.source);
        }
    }

    let offsets = admin
        .list_offsets((0..3).map(|p| (TopicPartition::new(&topic, p), OffsetSpec::Latest)))
        .await?;
    for (tp, result) in &offsets {
        println!(
            "  latest offset of {}-{}: {:?}",
            tp.topic,
            tp.partition,
            result.as_ref().map(|o| o.offset)
        );
    }

    let groups = admin.list_consumer_groups().await?;
    println!("{} consumer group(s)", groups.groups.len());

    let deleted = admin.delete_topics([topic.clone()]).await?;
    deleted[&topic].clone()?;
    println!("deleted {topic}");
    Ok(())
}
