//! A consumer group from a plain blocking program: produce 300 records to a fresh topic,
//! consume them as a group member (rebalance events printed by the listener, which
//! commits on revocation), commit what was handed out, then close (leave the group).
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-blocking --example blocking_group`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_blocking::{Admin, GroupConsumer, Offsets, Producer, Rebalance, Record};
use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;

const RECORDS: usize = 300;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("kafka-rs-example-group-blocking-{stamp}");
    let client = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    Admin::new(client.clone())?.create_topics([NewTopic::new(topic.clone(), 3, 1)])?[&topic]
        .as_ref()
        .map_err(|e| e.to_string())?;
    let producer = Producer::new(client)?;
    let sent: Vec<_> = (0..RECORDS)
        .map(|i| producer.send(Record::new(topic.as_str(), format!("record {i}"))))
        .collect::<Result<_, _>>()?;
    for d in sent {
        d.wait()?;
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
            if let Err(e) = c.commit_sync(Offsets::Consumed, Duration::from_secs(10)) {
                println!("commit on revocation failed: {e}");
            }
        }
    })?;
    let (mut got, start) = (0, Instant::now());
    while got < RECORDS && start.elapsed() < Duration::from_secs(60) {
        got += consumer.poll(Duration::from_millis(500))?.len();
    }
    println!(
        "consumed {got} records; owned: {:?}",
        consumer.assignment()?
    );
    consumer.commit_sync(Offsets::Consumed, Duration::from_secs(10))?;
    println!("committed");
    consumer.close()?;
    println!("left the group");
    if got < RECORDS {
        return Err(format!("only {got} of {RECORDS} records").into());
    }
    Ok(())
}
