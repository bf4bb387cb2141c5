//! A consume-transform-produce worker for the real-broker exactly-once test
//! (`tests/tests/broker_txn_pipeline.rs`), which kills it with SIGKILL at random points
//! and restarts it: a `TxnPipeline` copying each poll's records to the output topic
//! inside one transaction that also carries the consumed offsets.
//!
//! Usage: `txn_worker BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID`. Runs until killed;
//! exits 2 on an error it does not recover from (the test restarts it like a crash).

use std::time::Duration;

use kafka_blocking::{Error, Record, TxnPipeline};
use kafka_core::config::ClientConfig;

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
    let consumer = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("isolation.level", "read_committed"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "6000"),
        ("heartbeat.interval.ms", "500"),
        ("max.poll.records", "2000"),
    ])?;
    let producer = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", txn_id),
        ("linger.ms", "5"),
    ])?;
    let pipeline = TxnPipeline::new(consumer, producer, [input])?;
    loop {
        pipeline.run_once(Duration::from_millis(200), |r, out| {
            let mut record = Record::new(output, r.value.clone().unwrap_or_default());
            if let Some(k) = &r.key {
                record = record.key(k.clone());
            }
            out.push(record);
        })?;
    }
}
