//! F19 of `PERF-AND-FAULTS.md` B3 on the simulated cluster (`kafka_tests::sim`): for a
//! while, a seeded fraction (2–6 %) of every broker's answers is corrupted on its way
//! (`sim::corrupt`: cut short, a byte flipped inside a fetched record batch so its CRC
//! fails, a huge array count, another correlation id, text instead of a frame) while an
//! idempotent producer writes every partition and a consumer reads them.
//!
//! The clients must not panic; a damaged answer ends its connection (the request is
//! retried on a new one) and corrupt record data is a typed
//! `ConsumeError::Corrupt` for its partition, which the reader resumes (fetching again
//! from the record before it). The history checker then judges the run: no acknowledged
//! record lost, none duplicated, order kept, every record read once; the heap's peak
//! stays bounded (no huge count is believed). Replay one seed with `SIM_SEED=<n>`; run
//! more with `SIM_SEEDS=<count>` (100x: `SIM_SEEDS=100000`).
//!
//! One test function, so the peak-allocation figure is this scenario's alone.

use std::time::Duration;

use kafka_tests::sim::corrupt::{CorruptCounters, Corruption};
use kafka_tests::sim::draining::ConsumeRun;
use kafka_tests::sim::history::{History, Isolation};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::story::write_heal_and_read;
use kafka_tests::sim::world::World;
use peak_alloc::PeakAlloc;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;
const RECORDS: usize = 60;
/// Most the heap may reach over the whole sweep.
const HEAP_BOUND: usize = 64 << 20;

const CONSUMER: &[(&str, &str)] = &[
    ("request.timeout.ms", "300"),
    ("fetch.max.wait.ms", "20"),
    ("max.partition.fetch.bytes", "400"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
];

#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    corrupted: CorruptCounters,
    /// Corrupt-data errors the reader resumed.
    corrupt_resumed: u64,
    /// Connections the clients closed (each damaged answer closes one).
    client_closes: u64,
    /// Records that failed or ended indeterminate, by cause.
    errors: std::collections::BTreeMap<String, usize>,
}

fn corrupted_answers(seed: u64, sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    world.corruption = Corruption {
        per_mille: 20 + world.rng().below(41) as u32,
    };
    let start = Duration::from_millis(30 + world.rng().below(50));
    let end = start + Duration::from_millis(300 + world.rng().below(300));
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", SCENARIO_SETTINGS);
    let mut c = ConsumeRun::start(
        &mut world,
        &mut history,
        "ru",
        TOPIC,
        Isolation::ReadUncommitted,
        true,
        CONSUMER,
    );
    c.resume_corrupt = true;
    let tick = |w: &mut World, h: &mut History, c: &mut ConsumeRun| {
        w.faults_on = w.elapsed() >= start && w.elapsed() < end;
        c.poll(w, h);
    };
    let verdict = write_heal_and_read(
        &mut world,
        &mut history,
        &mut p,
        &mut c,
        TOPIC,
        PARTITIONS,
        RECORDS,
        seed,
        end,
        tick,
    );
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: {start:?}..{end:?} at {}‰, errors {:?}, corrupted {:?}, net {:?}",
            world.corruption.per_mille, p.errors, world.corrupted, world.net
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    sweep.runs += 1;
    sweep.records += verdict.sends;
    sweep.acked += verdict.acked;
    sweep.corrupt_resumed += c.corrupt_resumed;
    sweep.client_closes += world.net.client_closes;
    for (e, n) in &p.errors {
        *sweep.errors.entry(e.clone()).or_default() += n;
    }
    let (s, w) = (&mut sweep.corrupted, &world.corrupted);
    s.truncated += w.truncated;
    s.flipped_records += w.flipped_records;
    s.huge_counts += w.huge_counts;
    s.wrong_ids += w.wrong_ids;
    s.garbage += w.garbage;
}

/// F19: 2–6 % of the answers of all three brokers corrupted for 0.3–0.6 s while the
/// producer writes all six partitions and a consumer reads them: no panic, every
/// damaged answer costs its connection (or, inside record data, one typed error that
/// is resumed), and the history checker finds nothing lost, duplicated or out of order.
#[test]
fn f19_corrupted_answers_lose_duplicate_and_reorder_nothing() {
    let name = "f19_corrupted_answers_lose_duplicate_and_reorder_nothing";
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| corrupted_answers(seed, &mut s));
    let peak = PEAK.peak_usage();
    eprintln!("{name}: {s:?}; heap peak {} KiB", peak / 1024);
    assert!(peak < HEAP_BOUND, "heap peak {peak} bytes");
    let k = &s.corrupted;
    let many = s.runs / 20;
    assert!(
        k.truncated > many
            && k.flipped_records > many
            && k.huge_counts > many
            && k.wrong_ids > many
            && k.garbage > many,
        "every kind of damage happened: {s:?}"
    );
    assert!(
        s.corrupt_resumed > 0,
        "a flipped batch reached the reader: {s:?}"
    );
    // A damaged answer closes its connection (unless the connection was already gone).
    assert!(
        s.client_closes >= (k.total() - k.flipped_records) / 2,
        "{s:?}"
    );
}
