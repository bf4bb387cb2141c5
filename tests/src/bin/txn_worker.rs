//! A consume-transform-produce worker for the real-broker exactly-once test
//! (`tests/tests/broker_txn_pipeline.rs`), which kills it with SIGKILL at random points
//! and restarts it: each poll's records are copied to the output topic inside one
//! transaction that also carries the consumed offsets.
//!
//! Usage: `txn_worker BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID`. Runs until killed;
//! exits 2 on an error it does not recover from (the test restarts it like a crash).

use std::time::Duration;

use kafka_blocking::{Error, GroupConsumer, Producer, Record};
use kafka_core::config::ClientConfig;

const T: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, input, output, group, txn_id] = &args[..] else {
        eprintln!("usage: txn_worker BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID");
        std::process::exit(64);
    };
    if let Err(e) = run(bootstrap, input, output, group, txn_id) {
        eprintln!("txn_worker: {e}");
        std::process::exit(2);
    }
}

fn run(bootstrap: &str, input: &str, output: &str, group: &str, txn_id: &str) -> Result<(), Error> {
    let consumer = GroupConsumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("isolation.level", "read_committed"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "6000"),
        ("heartbeat.interval.ms", "500"),
        ("max.poll.records", "2000"),
    ])?)?;
    let producer = Producer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", txn_id),
        ("linger.ms", "5"),
    ])?)?;
    producer.init_transactions(T)?;
    consumer.subscribe([input])?;
    loop {
        let records = consumer.poll(Duration::from_millis(200))?;
        if records.is_empty() {
            continue;
        }
        producer.begin_transaction()?;
        for r in &records {
            let mut out = Record::new(output, r.value.clone().unwrap_or_default());
            if let Some(k) = &r.key {
                out = out.key(k.clone());
            }
            // Not waited for: the commit flushes them.
            drop(producer.send(out)?);
        }
        let (meta, offsets) = consumer.transaction_offsets()?;
        producer.send_offsets_to_transaction(offsets, &meta, T)?;
        producer.commit_transaction(T)?;
    }
}
