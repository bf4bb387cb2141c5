//! The middle of the fault stories where a producer writes while a consumer reads: the
//! writes paced through the fault window, healing, and the read-back the checker judges.

use std::time::Duration;

use super::draining::{drain, ConsumeRun};
use super::history::{History, Isolation, Verdict};
use super::producing::ProduceRun;
use super::world::World;

/// Sends `records` values `s{seed}-r{i}` to `topic` (every other one to an explicit
/// partition of `partitions`, the rest keyless), 0–14 ms apart, calling `tick` (which
/// switches the faults and polls the consumer) between steps; runs on to `end`, heals
/// (faults off), settles every send, reads `c` to the end and drains `topic`
/// read_uncommitted. Returns the history's verdict, for the caller to report and assert.
#[allow(clippy::too_many_arguments)]
pub fn write_heal_and_read(
    world: &mut World,
    history: &mut History,
    p: &mut ProduceRun,
    c: &mut ConsumeRun,
    topic: &str,
    partitions: i32,
    records: usize,
    seed: u64,
    end: Duration,
    mut tick: impl FnMut(&mut World, &mut History, &mut ConsumeRun),
) -> Verdict {
    for i in 0..records {
        let value = format!("s{seed}-r{i:05}");
        let partition = (i % 2 == 0).then_some((i / 2) as i32 % partitions);
        let mut tries = 0;
        while !p.send(world, history, topic, partition, value.as_bytes()) {
            tries += 1;
            assert!(tries < 100_000, "seed {seed}: send blocked for good");
            world.run_for(Duration::from_millis(1));
            p.take_reports(world, history);
            tick(world, history, c);
        }
        let pause = world.rng().below(15);
        world.run_for(Duration::from_millis(pause));
        p.take_reports(world, history);
        tick(world, history, c);
    }
    // The rest of the fault window, then healing.
    world.run_until(Duration::from_secs(2), |w| {
        p.take_reports(w, history);
        tick(w, history, c);
        w.elapsed() >= end
    });
    world.faults_on = false;
    let settled = p.settle(world, history, Duration::from_secs(120), |w, h| {
        c.poll(w, h)
    });
    assert!(
        settled,
        "seed {seed}: {} records unresolved",
        p.outstanding()
    );
    assert!(
        c.run_to_end(world, history, Duration::from_secs(60)),
        "seed {seed}: the consumer did not reach the end"
    );
    drain(
        world,
        history,
        "drain",
        topic,
        Isolation::ReadUncommitted,
        Duration::from_secs(60),
    );
    history.check()
}
