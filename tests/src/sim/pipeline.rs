//! Helpers for consume-transform-produce scenarios: a consumer polled without logging
//! its reads (a pipeline re-reads its input after an abort), the group's committed
//! offsets asked with OffsetFetch through the core's admin machine, and a seek of every
//! partition.

use std::time::Duration;

use kafka_core::admin::{ListConsumerGroupOffsets, TopicPartition};
use kafka_core::consumer::ConsumerRecord;

use super::draining::ConsumeRun;
use super::world::World;

/// What the consumer hands out now, not logged in any history. Panics (naming the
/// seed) on a consumer error.
pub fn poll_unlogged(world: &mut World, c: &ConsumeRun) -> Vec<ConsumerRecord> {
    let mut got = Vec::new();
    let now = world.now();
    let seed = world.seed;
    world.clients[c.client].command(now, c.consumer, |c, _| {
        c.poll(&mut got);
        if let Some(e) = c.take_error() {
            panic!("seed {seed}: consumer error: {e}");
        }
    });
    got
}

/// `group`'s committed offsets of `topic` partitions `0..partitions` (0 where none),
/// asked with OffsetFetch (`require_stable`: offsets staged in an open transaction are
/// waited for) by the admin machine on client `admin`.
pub fn committed_offsets(
    world: &mut World,
    admin: usize,
    group: &str,
    topic: &str,
    partitions: i32,
) -> Vec<i64> {
    let now = world.now();
    let list = ListConsumerGroupOffsets::new(group).require_stable(true);
    let op = world.clients[admin].start_op(now, list);
    let mut out = None;
    let done = world.run_until(Duration::from_secs(120), |w| {
        out = w.clients[admin].take_op_output(op);
        out.is_some()
    });
    assert!(done, "seed {}: OffsetFetch had no answer", world.seed);
    let groups = out.expect("done").expect("the group's offsets");
    let offsets = groups[group].as_ref().expect("the group's offsets");
    (0..partitions)
        .map(|p| {
            let tp = TopicPartition::new(topic, p);
            match offsets.get(&tp) {
                Some(Ok(Some(o))) => o.offset,
                Some(Err(e)) => panic!("seed {}: offset of {tp:?}: {e}", world.seed),
                _ => 0,
            }
        })
        .collect()
}

/// Moves the consumer to `offsets[p]` on every partition `p` of `topic`.
pub fn seek_all(world: &mut World, c: &ConsumeRun, topic: &str, offsets: &[i64]) {
    let now = world.now();
    world.clients[c.client].command(now, c.consumer, |c, _| {
        for (p, &o) in offsets.iter().enumerate() {
            c.seek(topic, p as i32, o);
        }
    });
}
