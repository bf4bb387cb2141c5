//! Turns the client's `tracing` events on (feature `tracing`, on by default) with
//! `tracing-subscriber`'s fmt subscriber, then describes the cluster. The log shows the
//! connection's life cycle (connecting, connected, versions negotiated, authenticated,
//! failed with its cause), retries with their cause, metadata changes and timeouts, each
//! call in a `kafka_op` span. Point it at a port nothing listens on to see a failure named.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-tokio --example tracing`

use std::time::Duration;

use kafka_core::admin::DescribeCluster;
use kafka_core::config::ClientConfig;
use kafka_tokio::Admin;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::DEBUG)
        .init();
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let admin = Admin::new(ClientConfig::from_pairs([(
        "bootstrap.servers",
        bootstrap.as_str(),
    )])?)?;
    let described = admin
        .run(DescribeCluster::new().timeout(Duration::from_secs(10)))
        .await;
    match described {
        Ok(cluster) => println!(
            "cluster {} with {} brokers",
            cluster.cluster_id,
            cluster.brokers.len()
        ),
        Err(e) => println!("describe cluster failed: {e}"),
    }
    Ok(())
}
