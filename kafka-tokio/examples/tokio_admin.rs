//! Describes the cluster and creates a topic with the tokio admin client.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-tokio --example tokio_admin`

use std::time::{SystemTime, UNIX_EPOCH};

use kafka_core::admin::NewTopic;
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
        "cluster {} (controller {})",
        cluster.cluster_id, cluster.controller_id
    );
    for broker in cluster.brokers.values() {
        println!(
            "  broker {} at {}:{}",
            broker.node_id, broker.host, broker.port
        );
    }

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let name = format!("example-tokio-{stamp}");
    let created = admin.create_topics([NewTopic::new(&name, 3, 1)]).await?;
    for (topic, result) in &created {
        match result {
            Ok(t) => println!(
                "created {topic}: id {:?}, {} partitions, replication factor {}",
                t.topic_id, t.partitions, t.replication_factor
            ),
            Err(e) => println!("could not create {topic}: {e}"),
        }
    }
    created[&name].as_ref().map_err(|e| e.clone())?;
    Ok(())
}
