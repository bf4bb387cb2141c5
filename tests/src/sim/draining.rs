//! Reading everything back after the faults healed: a consumer on a fresh client
//! assigned every partition of a topic from the earliest offset, run until its position
//! reaches the end of every partition, each record read logged in the history as one
//! complete read session.

use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::consumer::{Consumer, ConsumerRecord};

use super::history::{History, Isolation};
use super::world::World;

/// Drains `topic` (all its partitions) at `isolation` as reader `reader`; the records
/// read. Panics (naming the seed) when it does not reach the end within `limit` of
/// virtual time.
pub fn drain(
    world: &mut World,
    history: &mut History,
    reader: &str,
    topic: &str,
    isolation: Isolation,
    limit: Duration,
) -> usize {
    let level = match isolation {
        Isolation::ReadUncommitted => "read_uncommitted",
        Isolation::ReadCommitted => "read_committed",
    };
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "b1:9092"),
        ("client.id", reader),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", level),
    ])
    .expect("consumer config");
    let consumer = Consumer::new(&config);
    let client = world.add_client_with(config);
    let now = world.now();
    let op = world.clients[client].start_op(now, consumer);
    let partitions = world.cluster.topics[topic].partitions.len() as i32;
    world.clients[client].command(now, op, |c, cx| {
        c.assign(cx, (0..partitions).map(|p| (topic, p)))
    });
    let session = history.begin_reads(reader, isolation, true);
    let mut read = 0;
    let mut batch: Vec<ConsumerRecord> = Vec::new();
    let done = world.run_until(limit, |w| {
        let now = w.now();
        batch.clear();
        let ends: Vec<i64> = w.cluster.topics[topic]
            .partitions
            .iter()
            .map(|p| p.next_offset)
            .collect();
        let caught_up = w.clients[client]
            .command(now, op, |c, _| {
                c.poll(&mut batch);
                if let Some(e) = c.take_error() {
                    panic!("consumer error: {e}");
                }
                ends.iter()
                    .enumerate()
                    .all(|(p, end)| c.position(topic, p as i32).is_some_and(|pos| pos >= *end))
                    && !c.has_pending()
            })
            .expect("the consumer runs");
        for r in &batch {
            let value = r.value.as_deref().unwrap_or_default();
            history.read(session, &r.topic, r.partition, r.offset, value);
            read += 1;
        }
        caught_up && batch.is_empty()
    });
    assert!(
        done,
        "seed {}: the {level} drain of {topic} did not reach the end in {limit:?} (read {read})",
        world.seed
    );
    let now = world.now();
    world.clients[client].command(now, op, |c, cx| c.close(cx));
    read
}
