//! Producer sequence faults of `PERF-AND-FAULTS.md` B3 on the simulated cluster
//! (`kafka_tests::sim`), each over many seeds and judged by the history checker. F8: a
//! partition's first batch expires (`delivery.timeout.ms`) while later batches are in
//! flight to a slow broker — no duplicate, no reordering, the expired and the
//! unresolved records reported failed or possibly delivered honestly, the epoch bumped
//! and the producer writing on. F7: DeleteRecords removes a partition's records and
//! with them the producer's state there; the broker answers its next batch
//! UNKNOWN_PRODUCER_ID (as before KIP-360) — the
//! epoch is bumped once nothing is in flight, nothing acknowledged is lost, nothing is
//! written twice that the log still shows. F6: a new leader lacks the last batches
//! of the producer (unclean election) and answers its next batch
//! OUT_OF_ORDER_SEQUENCE_NUMBER — never a silent gap: the refused records are reported
//! failed or possibly delivered, the epoch is bumped and writing goes on. Replay one seed with `SIM_SEED=<n>`; run more with
//! `SIM_SEEDS=<count>`.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::protocol::ApiKey;
use kafka_tests::sim::draining::drain;
use kafka_tests::sim::history::{History, Isolation, Verdict};
use kafka_tests::sim::producing::ProduceRun;
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::world::{ClusterEvent, NetFaults, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;
const SEEDS: u64 = 1000;

/// What one run left behind, summed over a sweep.
#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    /// Records reported with an error, by error.
    failed: BTreeMap<String, usize>,
    /// Records of the second wave (after healing), all of which must be acknowledged.
    after: usize,
    epoch_bumps: u64,
    /// Reports of expired records taken while requests of the producer were in flight.
    expired_while_in_flight: u64,
    stalls: u64,
    answers_lost: u64,
    duplicates_refused: u64,
    out_of_order: u64,
    unknown_producer: u64,
    producers_forgotten: u64,
    records_deleted: u64,
    batches_lost: u64,
    records_lost_by_broker: usize,
}

/// The producer and what the scenario watches of it.
struct Watched {
    p: ProduceRun,
    expired_while_in_flight: u64,
}

impl Watched {
    fn failures(&self) -> usize {
        self.p.errors.values().sum()
    }

    /// Takes the reports; counts expiries reported while requests are in flight.
    fn take(&mut self, w: &mut World, h: &mut History) {
        let before = self
            .p
            .errors
            .iter()
            .filter(|(e, _)| e.starts_with("delivery timed out"))
            .map(|(_, n)| n)
            .sum::<usize>();
        self.p.take_reports(w, h);
        let after = self
            .p
            .errors
            .iter()
            .filter(|(e, _)| e.starts_with("delivery timed out"))
            .map(|(_, n)| n)
            .sum::<usize>();
        if after > before {
            let now = w.now();
            let in_flight = w.clients[self.p.client]
                .command(now, self.p.producer, |p, _| p.metrics().requests_in_flight)
                .unwrap_or(0);
            if in_flight > 0 {
                self.expired_while_in_flight += 1;
            }
        }
    }

    /// Sends `n` records (`<prefix>-r<i>`, round-robin over explicit partitions) 0 to
    /// `pause_max` ms apart.
    fn send(&mut self, w: &mut World, h: &mut History, n: usize, prefix: &str, pause_max: u64) {
        for i in 0..n {
            let value = format!("{prefix}-r{i:04}");
            let partition = Some(i as i32 % PARTITIONS);
            let mut tries = 0;
            while !self.p.send(w, h, TOPIC, partition, value.as_bytes()) {
                tries += 1;
                assert!(tries < 100_000, "seed {}: send blocked for good", w.seed);
                w.run_for(Duration::from_millis(1));
                self.take(w, h);
            }
            let pause = w.rng().below(pause_max + 1);
            w.run_for(Duration::from_millis(pause));
            self.take(w, h);
        }
    }

    fn settle(&mut self, w: &mut World, h: &mut History, limit: Duration) -> bool {
        w.run_until(limit, |w| {
            self.take(w, h);
            self.p.outstanding() == 0
        })
    }
}

/// The story: an idempotent producer writes while `setup`'s faults are on; then the
/// world heals, the same producer writes one probe record per partition (which may
/// still meet the damage) and a second wave, all of which must be acknowledged;
/// everything is read back and judged.
fn run(
    seed: u64,
    settings: &[(&str, &str)],
    records: usize,
    pause_max: u64,
    setup: &dyn Fn(&mut World),
    sweep: &mut Sweep,
) -> (Verdict, World) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    setup(&mut world);
    world.faults_on = true;
    let mut history = History::new();
    let mut w = Watched {
        p: ProduceRun::start(&mut world, "p1", settings),
        expired_while_in_flight: 0,
    };
    w.send(
        &mut world,
        &mut history,
        records,
        &format!("s{seed}"),
        pause_max,
    );
    assert!(
        w.settle(&mut world, &mut history, Duration::from_secs(60)),
        "seed {seed}: {} records unresolved under faults",
        w.p.outstanding()
    );
    world.faults_on = false;
    // Every scheduled fault has happened (the last at 250 ms) before the second wave.
    if world.elapsed() < Duration::from_millis(300) {
        let rest = Duration::from_millis(300) - world.elapsed();
        world.run_until(rest, |w2| {
            w.take(w2, &mut history);
            false
        });
    }
    // One record per partition first: the first batch to meet a partition's damage
    // (F6: a leader that lost batches) may fail; that is the fault's visible trace.
    w.send(
        &mut world,
        &mut history,
        PARTITIONS as usize,
        &format!("s{seed}-probe"),
        0,
    );
    assert!(
        w.settle(&mut world, &mut history, Duration::from_secs(60)),
        "seed {seed}: the probes did not resolve"
    );
    let failed_before = w.failures();
    const AFTER: usize = 12;
    w.send(
        &mut world,
        &mut history,
        AFTER,
        &format!("s{seed}-after"),
        3,
    );
    assert!(
        w.settle(&mut world, &mut history, Duration::from_secs(60)),
        "seed {seed}: the second wave did not resolve"
    );
    assert_eq!(
        w.failures(),
        failed_before,
        "seed {seed}: the producer did not recover: {:?}",
        w.p.errors
    );
    drain(
        &mut world,
        &mut history,
        "drain",
        TOPIC,
        Isolation::ReadUncommitted,
        Duration::from_secs(60),
    );
    for (topic, partition, start) in world.take_deletions() {
        history.records_deleted(&topic, partition, start);
    }
    let lost = world.take_lost_values();
    sweep.records_lost_by_broker += lost.len();
    history.records_lost_by_broker(lost);
    let verdict = history.check();
    let now = world.now();
    let metrics = world.clients[w.p.client]
        .command(now, w.p.producer, |p, _| p.metrics())
        .expect("the producer runs");
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: errors {:?}, bumps {}, broker errors {:?}, net {:?}",
            w.p.errors, metrics.epoch_bumps, world.cluster.counters.errors, world.net
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    let errors = &world.cluster.counters.errors;
    let code = |c: i16| errors.get(&c).copied().unwrap_or(0);
    sweep.runs += 1;
    sweep.records += verdict.sends;
    sweep.acked += verdict.acked;
    sweep.after += AFTER;
    for (e, n) in &w.p.errors {
        *sweep.failed.entry(e.clone()).or_default() += n;
    }
    sweep.epoch_bumps += metrics.epoch_bumps;
    sweep.expired_while_in_flight += w.expired_while_in_flight;
    sweep.stalls += world.net.stalls;
    sweep.answers_lost += world.net.answers_lost;
    sweep.duplicates_refused += world.cluster.counters.duplicates_refused;
    // OUT_OF_ORDER_SEQUENCE_NUMBER (45), UNKNOWN_PRODUCER_ID (59).
    sweep.out_of_order += code(45);
    sweep.unknown_producer += code(59);
    sweep.producers_forgotten += world.cluster.counters.producers_forgotten;
    sweep.records_deleted += world.cluster.counters.records_deleted;
    sweep.batches_lost += world.cluster.counters.batches_lost;
    (verdict, world)
}

/// Producer settings: a delivery timeout just above `linger.ms` + `request.timeout.ms`,
/// so a batch whose first request stalls expires at its first retry.
const SHORT_DELIVERY: &[(&str, &str)] = &[
    ("linger.ms", "2"),
    ("batch.size", "400"),
    ("request.timeout.ms", "300"),
    ("delivery.timeout.ms", "450"),
    ("retry.backoff.ms", "20"),
    ("retry.backoff.max.ms", "100"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
    ("max.in.flight.requests.per.connection", "5"),
];

/// F8: a slow broker (15% of Produce answers held 1 s, past the 300 ms request
/// timeout; 2% lost) makes batches expire at their 450 ms delivery timeout while later
/// batches of their partitions are in flight or already written. No duplicate, no
/// reordering, no acknowledged record lost; expired records are reported failed (not
/// written) or possibly delivered, and the checker holds every report to the log; the
/// producer bumps its epoch (the expired batch left a hole in the sequence) and the
/// second wave after healing is acknowledged in full.
#[test]
fn f8_the_first_batch_expires_while_later_ones_are_in_flight() {
    let name = "f8_the_first_batch_expires_while_later_ones_are_in_flight";
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        run(
            seed,
            SHORT_DELIVERY,
            60,
            3,
            &|w: &mut World| {
                w.faults = NetFaults {
                    stall: 150,
                    stall_ms: 1_000,
                    lose_answer: 20,
                    apis: Some(vec![ApiKey::Produce]),
                    ..Default::default()
                };
            },
            &mut s,
        );
    });
    eprintln!("{name}: {s:?}");
    let expired: usize = s
        .failed
        .iter()
        .filter(|(e, _)| e.starts_with("delivery timed out"))
        .map(|(_, n)| n)
        .sum();
    assert!(expired > 0, "batches expired: {s:?}");
    assert!(s.expired_while_in_flight > 0, "{s:?}");
    assert!(s.epoch_bumps > 0, "the producer bumped its epoch: {s:?}");
}

/// F7: DeleteRecords empties a partition six times while the producer writes, taking
/// the producer's state there with the records, and the broker (as before KIP-360)
/// answers the producer's next batch there UNKNOWN_PRODUCER_ID; 3% of Produce answers
/// are lost after the append and 1% of requests dropped, so batches in flight may or
/// may not be written when the state goes. The producer bumps its epoch (KIP-360) once
/// nothing is in flight and starts its sequences over; a batch that may have been
/// written is reported possibly delivered rather than resent, the rest are delivered;
/// no acknowledged record the log still holds is lost or doubled, and the second wave
/// is acknowledged in full. (A retry of a batch whose first copy was deleted is
/// accepted as new by any broker; the deleted copy cannot be seen twice.)
#[test]
fn f7_delete_records_drops_the_producer_state_and_the_epoch_is_bumped() {
    let name = "f7_delete_records_drops_the_producer_state_and_the_epoch_is_bumped";
    let settings: Vec<(&str, &str)> = SHORT_DELIVERY
        .iter()
        .map(|&(k, v)| match k {
            "delivery.timeout.ms" => (k, "120000"),
            "retry.backoff.ms" => (k, "5"),
            "retry.backoff.max.ms" => (k, "50"),
            _ => (k, v),
        })
        .collect();
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        run(
            seed,
            &settings,
            60,
            3,
            &|w: &mut World| {
                w.cluster.strict_unknown_producers = true;
                w.faults = NetFaults {
                    lose_answer: 30,
                    reset_before: 10,
                    apis: Some(vec![ApiKey::Produce]),
                    ..Default::default()
                };
                for _ in 0..6 {
                    let at = Duration::from_millis(5 + w.rng().below(150));
                    let partition = w.rng().below(PARTITIONS as u64) as i32;
                    w.schedule(
                        at,
                        ClusterEvent::DeleteRecords {
                            topic: TOPIC.into(),
                            partition,
                        },
                    );
                }
            },
            &mut s,
        );
    });
    eprintln!("{name}: {s:?}");
    assert!(s.producers_forgotten > s.runs, "{s:?}");
    assert!(
        s.unknown_producer > s.runs,
        "UNKNOWN_PRODUCER_ID answered: {s:?}"
    );
    assert!(s.epoch_bumps >= s.unknown_producer / 10, "{s:?}");
    for e in s.failed.keys() {
        assert!(
            e.contains("possibly delivered") || e.contains("unresolved"),
            "only records that may have been written fail: {s:?}"
        );
    }
}

/// F6: twice per run, 40–250 ms in, a partition's new leader lacks its last 1–3
/// batches (acknowledged records destroyed by the broker, an unclean election) and has
/// the producer's state as of its own log, so the producer's next batch there is
/// answered OUT_OF_ORDER_SEQUENCE_NUMBER; 2% of Produce answers are lost after the
/// append besides. Never a silent gap: the refused records are
/// reported failed (or possibly delivered when an earlier attempt may have been
/// written), the epoch is bumped (KIP-360) and the second wave is acknowledged; every
/// acknowledged record the broker did not destroy is read back, in order, once.
#[test]
fn f6_a_leader_that_lost_the_last_batches_answers_out_of_order_sequence() {
    let name = "f6_a_leader_that_lost_the_last_batches_answers_out_of_order_sequence";
    let settings: Vec<(&str, &str)> = SHORT_DELIVERY
        .iter()
        .map(|&(k, v)| match k {
            "delivery.timeout.ms" => (k, "120000"),
            "retry.backoff.ms" => (k, "5"),
            "retry.backoff.max.ms" => (k, "50"),
            _ => (k, v),
        })
        .collect();
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        run(
            seed,
            &settings,
            60,
            10,
            &|w: &mut World| {
                w.faults = NetFaults {
                    lose_answer: 20,
                    apis: Some(vec![ApiKey::Produce]),
                    ..Default::default()
                };
                for _ in 0..2 {
                    let at = Duration::from_millis(40 + w.rng().below(210));
                    let partition = w.rng().below(PARTITIONS as u64) as i32;
                    let to = 1 + w.rng().below(3) as i32;
                    let drop_batches = 1 + w.rng().below(3) as usize;
                    w.schedule(
                        at,
                        ClusterEvent::LeaderLosesBatches {
                            topic: TOPIC.into(),
                            partition,
                            to,
                            drop_batches,
                        },
                    );
                }
            },
            &mut s,
        );
    });
    eprintln!("{name}: {s:?}");
    assert!(s.batches_lost > s.runs / 2, "{s:?}");
    assert!(
        s.out_of_order > s.runs / 4,
        "OUT_OF_ORDER_SEQUENCE_NUMBER answered: {s:?}"
    );
    assert!(s.epoch_bumps > s.runs / 4, "{s:?}");
    assert!(
        s.failed.values().sum::<usize>() > 0,
        "records refused were reported: {s:?}"
    );
}
