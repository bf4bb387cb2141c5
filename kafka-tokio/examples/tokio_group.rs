//! A consumer group on tokio: produce 300 records to a fresh topic, consume them as a
//! group member (rebalance events printed by the listener, which commits
//! asynchronously on revocation), commit what was handed out, then close.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-tokio --example tokio_group`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;
use kafka_tokio::{Admin, GroupConsumer, Offsets, Producer, Rebalance, Record};

const RECORDS: usize = 300;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("kafka-rs-example-group-tokio-{stamp}");
    let client = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    Admin::new(client.clone())?
        .create_topics([NewTopic::new(topic.clone(), 3, 1)])
        .await?[&topic]
        .as_ref()
        .map_err(|e| e.to_string())?;
    let producer = Producer::new(client)?;
    let mut sent = Vec::new();
    for i in 0..RECORDS {
        sent.push(
            producer
                .send(Record::new(topic.as_str(), format!("record {i}")))
                .await?,
        );
    }
    for d in sent {
        d.await?;
    }

    let group = format!("kafka-rs-example-{stamp}");
    let consumer = GroupConsumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ])?)?;
    consumer.subscribe_with([topic.as_str()], |c: &GroupConsumer, e: &Rebalance| {
        println!("rebalance: {e:?}");
        if let Rebalance::Revoked(_) = e {
            // Sent before the partitions are given up; its result is the handle's.
            drop(c.commit_async(Offsets::Consumed));
        }
    })?;
    let (mut got, start) = (0, Instant::now());
    while got < RECORDS && start.elapsed() < Duration::from_secs(60) {
        got += consumer.poll(Duration::from_millis(500)).await?.len();
    }
    println!(
        "consumed {got} records; owned: {:?}",
        consumer.assignment().await?
    );
    consumer
        .commit_sync(Offsets::Consumed, Duration::from_secs(10))
        .await?;
    println!("committed");
    consumer.close().await?;
    println!("left the group");
    if got < RECORDS {
        return Err(format!("only {got} of {RECORDS} records").into());
    }
    Ok(())
}
