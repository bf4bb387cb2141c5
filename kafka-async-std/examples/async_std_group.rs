//! A consumer group on smol (async-io): produce 300 records to a fresh topic, read them
//! as a group member through the consumer's `Stream`, commit what was handed out, then
//! close (leave the group).
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-async-std --example async_std_group`

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_lite::StreamExt;
use kafka_async_std::{Admin, GroupConsumer, Offsets, Producer, Rebalance, Record};
use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;

const RECORDS: usize = 300;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    smol::block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("kafka-rs-example-group-async-std-{stamp}");
    let client = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    let spawn = |task| smol::spawn(task).detach();
    Admin::with_spawner(client.clone(), spawn)?
        .create_topics([NewTopic::new(topic.clone(), 3, 1)])
        .await?[&topic]
        .as_ref()
        .map_err(|e| e.to_string())?;
    let producer = Producer::with_spawner(client, spawn)?;
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
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("auto.offset.reset", "earliest"),
    ])?;
    let consumer = GroupConsumer::with_spawner(config, spawn)?;
    consumer.subscribe_with([topic.as_str()], |_: &GroupConsumer, e: &Rebalance| {
        println!("rebalance: {e:?}");
    })?;
    let mut records = consumer.clone();
    let read = async {
        let mut got = 0;
        while got < RECORDS {
            match records.next().await {
                Some(r) => {
                    r?;
                    got += 1;
                }
                None => break,
            }
        }
        Ok::<_, kafka_async_std::Error>(got)
    };
    let timeout = async {
        smol::Timer::after(Duration::from_secs(60)).await;
        Ok(0)
    };
    let got = smol::future::or(read, timeout).await?;
    println!(
        "consumed {got} records; owned: {:?}",
        consumer.assignment().await?
    );
    consumer
        .commit_sync(Offsets::Consumed, Duration::from_secs(10))
        .await?;
    println!("committed");
    // Auto-commit is on: close commits too, then leaves.
    consumer.close().await?;
    println!("left the group");
    if got < RECORDS {
        return Err(format!("only {got} of {RECORDS} records").into());
    }
    Ok(())
}
