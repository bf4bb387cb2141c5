//! Produces `N` (default 1,000,000) 100-byte records to a fresh 3-partition topic and
//! prints records/s and CPU time per record of this process (user + system, from
//! `/proc/self/stat`; Linux only).
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run --release -p kafka-tokio --example produce [N]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;
use kafka_tokio::{Admin, Producer, Record};

/// Process CPU time so far (user + system), if `/proc` has it.
fn cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10)) // USER_HZ = 100 on Linux
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(Ok(1_000_000), |a| a.parse())?;
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let topic = format!(
        "produce-example-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis()
    );
    let admin = Admin::new(ClientConfig::from_pairs([(
        "bootstrap.servers",
        bootstrap.as_str(),
    )])?)?;
    admin
        .create_topics([NewTopic::new(topic.clone(), 3, 1)])
        .await?[&topic]
        .as_ref()
        .map_err(|e| e.to_string())?;
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("linger.ms", "5"),
        ("batch.size", "1048576"),
    ])?;
    let producer = Producer::new(config)?;
    let topic: Arc<str> = topic.into();
    let value = bytes::Bytes::from(vec![b'x'; 100]);
    // Warm up: metadata, connection, producer id.
    producer
        .send(Record::new(topic.clone(), value.clone()))
        .await?
        .await?;
    let (t0, c0) = (Instant::now(), cpu());
    let mut pending = std::collections::VecDeque::new();
    for _ in 0..n {
        pending.push_back(
            producer
                .send(Record::new(topic.clone(), value.clone()))
                .await?,
        );
        // Keep the number of live handles bounded, as a real application would.
        if pending.len() >= 100_000 {
            if let Some(d) = pending.pop_front() {
                d.await?;
            }
        }
    }
    for d in pending {
        d.await?;
    }
    let (wall, c1) = (t0.elapsed(), cpu());
    let rate = n as f64 / wall.as_secs_f64();
    println!("{n} records in {wall:?}: {rate:.0} records/s");
    if let (Some(c0), Some(c1)) = (c0, c1) {
        let per = (c1 - c0).as_nanos() as f64 / n as f64;
        println!("CPU {:?}: {per:.0} ns per record", c1 - c0);
    }
    producer.close(Duration::from_secs(30)).await?;
    Ok(())
}
