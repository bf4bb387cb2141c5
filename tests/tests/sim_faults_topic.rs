//! F18 of `PERF-AND-FAULTS.md` B3 on the simulated cluster (`kafka_tests::sim`): a topic
//! goes missing from the cluster for a while — absent from Metadata answers, Produce and
//! Fetch refused UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID — while an idempotent
//! producer writes it and a consumer reads it, then comes back with its log: no
//! acknowledged record lost or doubled, every record sent meanwhile delivered or failed
//! with a typed error by `delivery.timeout.ms`, the consumer reading on. A topic deleted
//! for good fails its records with a typed error and takes no new ones. Every run is
//! judged by the history checker. Replay one seed with `SIM_SEED=<n>`; run more with
//! `SIM_SEEDS=<count>`.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::producer::SendError;
use kafka_tests::sim::draining::{drain, ConsumeRun};
use kafka_tests::sim::history::{History, Isolation};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::world::{ClusterEvent, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;
const RECORDS: usize = 40;
/// The producer's delivery timeout: a topic missing longer fails the records waiting.
const DELIVERY_TIMEOUT_MS: u64 = 1_000;

const CONSUMER: &[(&str, &str)] = &[
    ("request.timeout.ms", "300"),
    ("fetch.max.wait.ms", "20"),
    ("max.partition.fetch.bytes", "400"),
    ("retry.backoff.ms", "20"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
];

fn producer_settings() -> Vec<(&'static str, &'static str)> {
    let mut s = SCENARIO_SETTINGS.to_vec();
    s.retain(|(k, _)| *k != "delivery.timeout.ms");
    s.push(("delivery.timeout.ms", "1000"));
    s
}

#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    /// Records reported failed or possibly delivered, by error.
    failed: BTreeMap<String, usize>,
    /// Sends refused for good (deleted topic).
    refused: BTreeMap<String, usize>,
    hidden: u64,
    deleted: u64,
    /// UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID answers.
    unknown_topic_answers: u64,
    read: usize,
    /// The most requests one connection carried in one virtual second.
    peak_rate: (u64, &'static str),
}

/// The most requests one connection may carry in one virtual second (a client
/// retrying a missing topic without backoff goes far past it).
const RATE_BOUND: u64 = 250;

fn judge_rate(w: &World, sweep: &mut Sweep) {
    let seed = w.seed;
    assert!(
        w.net.peak_rate.0 <= RATE_BOUND,
        "seed {seed}: {:?} requests on one connection in one virtual second",
        w.net.peak_rate
    );
    sweep.peak_rate = sweep.peak_rate.max(w.net.peak_rate);
}

/// Sends `RECORDS` records (even ones to explicit partitions, odd ones partitioned by
/// the producer) 0–30 ms apart, running `between` meanwhile; a record the producer
/// cannot take yet is offered again every ms for up to `patience`, then given up (not
/// in the history); a refusal for good is counted. Returns how many were sent.
fn send_spread(
    world: &mut World,
    history: &mut History,
    p: &mut ProduceRun,
    patience: Duration,
    refused: &mut BTreeMap<String, usize>,
    between: &mut dyn FnMut(&mut World, &mut History),
) {
    let seed = world.seed;
    for i in 0..RECORDS {
        let value = format!("s{seed}-r{i:05}");
        let partition = (i % 2 == 0).then_some((i / 2) as i32 % PARTITIONS);
        let until = world.now() + patience;
        loop {
            match p.offer(world, history, TOPIC, partition, value.as_bytes()) {
                Ok(true) => break,
                Ok(false) if world.now() < until => {
                    world.run_for(Duration::from_millis(1));
                    p.take_reports(world, history);
                    between(world, history);
                }
                Ok(false) => {
                    *refused.entry("still blocked".into()).or_default() += 1;
                    break;
                }
                Err(e) => {
                    let kind = match e {
                        SendError::Topic { code, .. } => format!("topic error {code:?}"),
                        other => other.to_string(),
                    };
                    *refused.entry(kind).or_default() += 1;
                    break;
                }
            }
        }
        let pause = world.rng().below(31);
        world.run_for(Duration::from_millis(pause));
        p.take_reports(world, history);
        between(world, history);
    }
}

fn unknown_topic_answers(w: &World) -> u64 {
    // UNKNOWN_TOPIC_OR_PARTITION (3), UNKNOWN_TOPIC_ID (100).
    [3i16, 100]
        .iter()
        .map(|c| w.cluster.counters.errors.get(c).copied().unwrap_or(0))
        .sum()
}

/// F18: the topic is missing for 0.1–1.1 s, starting 50–450 ms into the run.
fn missing_for_a_while(seed: u64, sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    let gone = Duration::from_millis(50 + world.rng().below(400));
    let back = gone + Duration::from_millis(100 + world.rng().below(1_000));
    world.schedule(gone, ClusterEvent::HideTopic(TOPIC.into()));
    world.schedule(back, ClusterEvent::ShowTopic(TOPIC.into()));
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", &producer_settings());
    let mut c = ConsumeRun::start(
        &mut world,
        &mut history,
        "ru",
        TOPIC,
        Isolation::ReadUncommitted,
        true,
        CONSUMER,
    );
    let mut refused = BTreeMap::new();
    send_spread(
        &mut world,
        &mut history,
        &mut p,
        Duration::from_secs(30),
        &mut refused,
        &mut |w, h| c.poll(w, h),
    );
    assert!(
        refused.is_empty(),
        "seed {seed}: a send to a topic missing for a while was refused: {refused:?}"
    );
    let settled = p.settle(&mut world, &mut history, Duration::from_secs(60), |w, h| {
        c.poll(w, h);
    });
    assert!(
        settled,
        "seed {seed}: {} records unresolved",
        p.outstanding()
    );
    // The consumer polls on until the topic is back.
    let returned = world.run_until(Duration::from_secs(5), |w| {
        c.poll(w, &mut history);
        w.cluster.topics.contains_key(TOPIC)
    });
    assert!(returned, "seed {seed}: the topic is back");
    assert!(
        c.run_to_end(&mut world, &mut history, Duration::from_secs(60)),
        "seed {seed}: the consumer did not read on to the end (read {})",
        c.read
    );
    drain(
        &mut world,
        &mut history,
        "drain",
        TOPIC,
        Isolation::ReadUncommitted,
        Duration::from_secs(60),
    );
    let verdict = history.check();
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: hidden {gone:?}..{back:?}, errors {:?}, longest wait {:?}, counters {:?}",
            p.errors, p.longest_wait, world.cluster.counters
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    for e in p.errors.keys() {
        assert!(
            e.starts_with("delivery timed out"),
            "seed {seed}: a record failed otherwise than by its delivery timeout: {e}"
        );
    }
    assert!(
        p.longest_wait <= Duration::from_millis(DELIVERY_TIMEOUT_MS + 300 + 10),
        "seed {seed}: a record waited {:?}",
        p.longest_wait
    );
    sweep.runs += 1;
    sweep.records += verdict.sends;
    sweep.acked += verdict.acked;
    sweep.read += c.read;
    for (e, n) in &p.errors {
        *sweep.failed.entry(e.clone()).or_default() += n;
    }
    sweep.hidden += world.cluster.counters.topics_hidden;
    sweep.unknown_topic_answers += unknown_topic_answers(&world);
    judge_rate(&world, sweep);
}

/// F18: the topic is deleted for good 100–400 ms into the run.
fn deleted_for_good(seed: u64, sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    let gone = Duration::from_millis(100 + world.rng().below(300));
    world.schedule(gone, ClusterEvent::DeleteTopic(TOPIC.into()));
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", &producer_settings());
    let mut refused = BTreeMap::new();
    send_spread(
        &mut world,
        &mut history,
        &mut p,
        Duration::from_millis(200),
        &mut refused,
        &mut |_, _| {},
    );
    let settled = p.settle(&mut world, &mut history, Duration::from_secs(60), |_, _| {});
    assert!(
        settled,
        "seed {seed}: {} records unresolved",
        p.outstanding()
    );
    let verdict = history.check();
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: deleted at {gone:?}, errors {:?}, refused {refused:?}, longest wait {:?}",
            p.errors, p.longest_wait
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    for e in p.errors.keys() {
        assert!(
            e.starts_with("delivery timed out") || e.contains("UNKNOWN_TOPIC"),
            "seed {seed}: a record of the deleted topic failed with {e}"
        );
    }
    assert!(
        p.longest_wait <= Duration::from_millis(DELIVERY_TIMEOUT_MS + 300 + 10),
        "seed {seed}: a record waited {:?}",
        p.longest_wait
    );
    sweep.runs += 1;
    sweep.records += verdict.sends;
    sweep.acked += verdict.acked;
    for (e, n) in &p.errors {
        *sweep.failed.entry(e.clone()).or_default() += n;
    }
    for (e, n) in &refused {
        *sweep.refused.entry(e.clone()).or_default() += n;
    }
    sweep.deleted += world.cluster.counters.topics_deleted;
    sweep.unknown_topic_answers += unknown_topic_answers(&world);
    judge_rate(&world, sweep);
}

/// F18: a topic missing from the cluster for a while (0.1–1.1 s) while it is written
/// and read comes back: nothing acknowledged is lost, nothing doubled, records that
/// waited past the 1 s delivery timeout fail with `TimedOut`, the rest are delivered
/// when it is back, and the consumer reads on from where it was.
#[test]
fn f18_a_topic_missing_for_a_while_comes_back_without_loss() {
    let name = "f18_a_topic_missing_for_a_while_comes_back_without_loss";
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| missing_for_a_while(seed, &mut s));
    eprintln!("{name}: {s:?}");
    assert_eq!(s.hidden, s.runs, "{s:?}");
    assert!(s.unknown_topic_answers > s.runs, "{s:?}");
    assert!(
        s.failed.values().sum::<usize>() > 0,
        "some records timed out: {s:?}"
    );
    assert!(s.acked > s.records / 2, "{s:?}");
}

/// F18, deletion: the topic is deleted for good while it is written. Every record not
/// acknowledged before fails with a typed error (`TimedOut` by the 1 s delivery
/// timeout, possibly delivered or not), within the delivery timeout and one request
/// timeout. (The core keeps taking records for a topic it knew once metadata stops
/// naming it — they fail this way — where Java's `send` blocks for metadata until
/// `max.block.ms`.)
#[test]
fn f18_a_deleted_topic_fails_its_records_with_typed_errors() {
    let name = "f18_a_deleted_topic_fails_its_records_with_typed_errors";
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| deleted_for_good(seed, &mut s));
    eprintln!("{name}: {s:?}");
    assert_eq!(s.deleted, s.runs, "{s:?}");
    assert!(s.unknown_topic_answers > s.runs, "{s:?}");
    assert!(s.failed.values().sum::<usize>() > 0, "{s:?}");
}
