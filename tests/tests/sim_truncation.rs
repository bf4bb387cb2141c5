//! Log truncation on the simulated cluster (`kafka_tests::sim`): unclean leader
//! elections cut the last batches off partitions while a consumer reads them (KIP-320).
//! A producer writes a topic; a consumer (from offset 0, `auto.offset.reset=latest`) reads it while
//! a second producer writes more and two unclean elections each hand a partition to a
//! replica that lacks its last one to three batches: the later records go into the
//! offsets that were cut. The consumer must notice every truncation that cut records it had read
//! (OffsetForLeaderEpoch after the leader change, or a Fetch's diverging epoch), go back
//! to where the logs diverge and read on from there: in the end, the last value it read
//! at each offset is the one the log holds (a fresh consumer's drain), and it read every
//! offset of the final log — nothing skipped, nothing stale left standing. The history
//! checker does not apply here (acknowledged records are lost by design). Replay one
//! seed with `SIM_SEED=<n>`; `SIM_SEEDS=<count>` for more.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_tests::sim::draining::ConsumeRun;
use kafka_tests::sim::history::{History, Isolation};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::world::{ClusterEvent, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;
const SEEDS: u64 = 1000;
const RECORDS: usize = 150;

/// Consumer settings: short timeouts, small fetches (records arrive over many Fetches,
/// so a truncation often lands mid-read).
const CONSUMER: &[(&str, &str)] = &[
    ("request.timeout.ms", "300"),
    ("fetch.max.wait.ms", "20"),
    ("max.partition.fetch.bytes", "300"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
    // An out-of-range position jumps to the end: a truncation the consumer failed to
    // notice (and so met only as OFFSET_OUT_OF_RANGE) would skip records, not hide
    // behind a read from the start. The consumer starts by seeking to 0.
    ("auto.offset.reset", "latest"),
];

/// Per partition, the last value read at each offset.
type Reads = Vec<BTreeMap<i64, Vec<u8>>>;

#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    elections: u64,
    records_cut: u64,
    /// Truncations the consumer detected.
    truncations: u64,
    /// Records the consumer read again at an offset it had read before.
    reread: u64,
    validations: u64,
}

fn record(run: &ConsumeRun, reads: &mut Reads, reread: &mut u64) {
    for r in run.last_batch() {
        let value = r.value.as_deref().unwrap_or_default().to_vec();
        if reads[r.partition as usize]
            .insert(r.offset, value)
            .is_some()
        {
            *reread += 1;
        }
    }
}

fn read_to_end(
    world: &mut World,
    history: &mut History,
    run: &mut ConsumeRun,
    reads: &mut Reads,
) -> u64 {
    let mut reread = 0;
    let done = world.run_until(Duration::from_secs(120), |w| {
        run.poll(w, history);
        record(run, reads, &mut reread);
        run.caught_up(w)
    });
    assert!(
        done,
        "seed {}: the consumer did not reach the end",
        world.seed
    );
    reread
}

fn truncate_under(seed: u64, sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    let mut history = History::new();
    let mut p1 = ProduceRun::start(&mut world, "p1", SCENARIO_SETTINGS);
    p1.send_all(
        &mut world,
        &mut history,
        TOPIC,
        RECORDS,
        &format!("a{seed}"),
        |_, _| {},
    );
    assert!(
        p1.settle(&mut world, &mut history, Duration::from_secs(60), |_, _| {}),
        "seed {seed}: the first records never resolved"
    );

    // Two unclean elections while the consumer reads.
    for _ in 0..2 {
        let partition = world.rng().below(PARTITIONS as u64) as i32;
        let leader = world.cluster.topics[TOPIC].partitions[partition as usize].leader;
        let to = 1 + ((leader as u64 - 1 + 1 + world.rng().below(2)) % 3) as i32;
        let drop_batches = 1 + world.rng().below(3) as usize;
        let at = world.rng().millis(5, 120);
        world.schedule(
            at,
            ClusterEvent::UncleanElection {
                topic: TOPIC.to_string(),
                partition,
                to,
                drop_batches,
            },
        );
    }
    let mut c = ConsumeRun::start(
        &mut world,
        &mut history,
        "c",
        TOPIC,
        Isolation::ReadUncommitted,
        false,
        CONSUMER,
    );
    let now = world.now();
    world.clients[c.client].command(now, c.consumer, |c, _| {
        for p in 0..PARTITIONS {
            c.seek(TOPIC, p, 0);
        }
    });
    let mut reads: Reads = vec![BTreeMap::new(); PARTITIONS as usize];
    let mut reread = 0;
    // More records while the consumer reads and the elections cut: some land in the
    // offsets that were cut, so a consumer that missed a truncation misses them.
    let mut p2 = ProduceRun::start(&mut world, "p2", SCENARIO_SETTINGS);
    let (c_ref, reads_ref, reread_ref) = (&mut c, &mut reads, &mut reread);
    p2.send_all(
        &mut world,
        &mut history,
        TOPIC,
        RECORDS,
        &format!("b{seed}"),
        |w, h| {
            c_ref.poll(w, h);
            record(c_ref, reads_ref, reread_ref);
        },
    );
    assert!(
        p2.settle(&mut world, &mut history, Duration::from_secs(60), |_, _| {}),
        "seed {seed}: the later records never resolved"
    );
    reread += read_to_end(&mut world, &mut history, &mut c, &mut reads);

    // What the logs hold now, read by a fresh consumer.
    let mut fresh = ConsumeRun::start(
        &mut world,
        &mut history,
        "fresh",
        TOPIC,
        Isolation::ReadUncommitted,
        false,
        &[],
    );
    let mut logs: Reads = vec![BTreeMap::new(); PARTITIONS as usize];
    let fresh_reread = read_to_end(&mut world, &mut history, &mut fresh, &mut logs);
    assert_eq!(
        fresh_reread, 0,
        "seed {seed}: a fresh read of a quiet log repeats nothing"
    );
    for p in 0..PARTITIONS as usize {
        let end = world.cluster.topics[TOPIC].partitions[p].next_offset;
        assert_eq!(
            logs[p].len() as i64,
            end,
            "seed {seed}: partition {p} drained whole"
        );
        // Offsets past the final end were cut after the consumer read them and not
        // written again: nothing can be read there now.
        let read: BTreeMap<i64, Vec<u8>> = reads[p]
            .range(..end)
            .map(|(o, v)| (*o, v.clone()))
            .collect();
        assert_eq!(
            read, logs[p],
            "seed {seed}: partition {p}: what the consumer last read at each offset is not the log"
        );
    }

    let now = world.now();
    let m = world.clients[c.client]
        .command(now, c.consumer, |c, _| c.metrics())
        .expect("the consumer runs");
    sweep.runs += 1;
    sweep.elections += world.cluster.counters.unclean_elections;
    sweep.records_cut += world.cluster.counters.truncated_records;
    sweep.truncations += m.truncations;
    sweep.validations += m.validations;
    sweep.reread += reread;
}

/// Unclean leader elections cut records the consumer read: it detects each, goes back
/// to the divergence and reads the new records written there; nothing skipped.
#[test]
fn unclean_elections_are_detected_and_read_past_without_a_gap() {
    let mut s = Sweep::default();
    let name = "unclean_elections_are_detected_and_read_past_without_a_gap";
    for_each_seed(name, SEEDS, |seed| truncate_under(seed, &mut s));
    eprintln!("{name}: {s:?}");
    assert!(s.elections >= s.runs, "{s:?}");
    assert!(s.records_cut > s.runs, "{s:?}");
    assert!(s.truncations > s.runs / 8, "truncations detected: {s:?}");
    assert!(s.reread > 0, "{s:?}");
}
