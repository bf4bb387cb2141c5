//! Admin calls from a plain blocking program: describe the cluster, create a topic, list
//! its partitions' latest offsets... whatever a script needs, no async runtime.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-blocking --example blocking_admin`

use kafka_blocking::Admin;
use kafka_core::admin::{CreateTopics, NewTopic};
use kafka_core::config::ClientConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let admin = Admin::new(ClientConfig::from_pairs([(
        "bootstrap.servers",
        bootstrap.as_str(),
    )])?)?;

    let cluster = admin.describe_cluster()?;
    println!(
        "cluster {} (controller {}): {} broker(s)",
        cluster.cluster_id,
        cluster.controller_id,
        cluster.brokers.len()
    );
    for b in cluster.brokers.values() {
        println!("  broker {} at {}:{}", b.node_id, b.host, b.port);
    }

    let topic = "kafka-rs-example-blocking";
    // Named methods use default options; `run` takes an operation with any options.
    let created = admin.run(CreateTopics::new([NewTopic::new(topic, 3, 1)]))?;
    match &created[topic] {
        Ok(t) => println!(
            "created {topic}: id {}, {} partitions",
            t.topic_id, t.partitions
        ),
        Err(e) => println!("{topic}: {e}"),
    }
    Ok(())
}
