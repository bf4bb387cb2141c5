//! F17 of `PERF-AND-FAULTS.md` B3 on the simulated cluster (`kafka_tests::sim`), each
//! scenario over many seeds and judged by the history checker (F18 is in
//! `sim_faults_topic.rs`, F6–F8 in `sim_faults_seq.rs`, F20 in `sim_faults_links.rs`). F17: brokers throttle answers of every API (KIP-219: the client
//! must write nothing on a throttled connection until the throttle ends) and answers
//! of every API stall past the request timeout (bounded retries with backoff, the
//! producer's `delivery.timeout.ms` honoured, no request storm on any connection).
//! Replay one seed with `SIM_SEED=<n>`; run more with `SIM_SEEDS=<count>`.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_tests::sim::draining::{drain, ConsumeRun};
use kafka_tests::sim::grouping::GroupRun;
use kafka_tests::sim::history::{History, Isolation, Verdict};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::throttle::Throttling;
use kafka_tests::sim::transacting::{TxnRun, TXN_SETTINGS};
use kafka_tests::sim::world::{NetFaults, World};

const TOPIC: &str = "t";
const TXN_TOPIC: &str = "x";
const GROUP: &str = "g";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;

/// Consumer settings: short timeouts so faults resolve within a scenario; idle long
/// polls of 100 ms.
const CONSUMER: &[(&str, &str)] = &[
    ("request.timeout.ms", "300"),
    ("fetch.max.wait.ms", "100"),
    ("max.partition.fetch.bytes", "400"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
];

/// A KIP-848 member committing every 100 ms.
const MEMBER: &[(&str, &str)] = &[
    ("group.protocol", "consumer"),
    ("enable.auto.commit", "true"),
    ("auto.commit.interval.ms", "100"),
    ("max.partition.fetch.bytes", "400"),
    ("fetch.max.wait.ms", "100"),
    ("request.timeout.ms", "300"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
];

/// The F17 story's shape.
struct Every {
    /// Idempotent records to `t`.
    records: usize,
    /// Transactions of three records each to `x`.
    txns: usize,
    /// The idempotent producer's settings.
    producer: Vec<(&'static str, &'static str)>,
}

/// What one F17 run left behind.
struct EveryRun {
    world: World,
    verdict: Verdict,
    longest_wait: Duration,
    producer_errors: BTreeMap<String, usize>,
}

/// Every kind of client at once, so every API the cluster serves is asked: an
/// idempotent producer writes `t` while a read_committed consumer reads it and a
/// KIP-848 group member consumes it; a transactional producer runs transactions on `x`.
/// Then the world heals, everything settles, both topics are drained at both isolation
/// levels and the history is judged; the member must have consumed every record of `t`
/// and committed the log ends.
fn every_api(seed: u64, story: &Every, setup: &dyn Fn(&mut World)) -> EveryRun {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    world.cluster.create_topic(TXN_TOPIC, 3);
    world.cluster.txn.v2 = seed.is_multiple_of(2);
    setup(&mut world);
    world.faults_on = true;
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", &story.producer);
    let mut rc = ConsumeRun::start(
        &mut world,
        &mut history,
        "rc",
        TOPIC,
        Isolation::ReadCommitted,
        true,
        CONSUMER,
    );
    let mut member = GroupRun::start(&mut world, "m1", GROUP, &[TOPIC], MEMBER);
    let mut between = |w: &mut World, h: &mut History| {
        rc.poll(w, h);
        member.poll(w);
    };
    p.send_all(
        &mut world,
        &mut history,
        TOPIC,
        story.records,
        &format!("s{seed}"),
        &mut between,
    );
    let mut tx = TxnRun::start(&mut world, "tx", "tx", 0, TXN_SETTINGS);
    let mut between = |w: &mut World, h: &mut History| {
        rc.poll(w, h);
        member.poll(w);
        p.take_reports(w, h);
    };
    tx.init(&mut world, &mut history, &mut between)
        .unwrap_or_else(|e| panic!("seed {seed}: init_transactions: {e}"));
    for t in 0..story.txns {
        tx.begin(&mut world).expect("begin");
        for i in 0..3 {
            let value = format!("s{seed}-t{t}-r{i}");
            let mut tries = 0;
            while !tx
                .send(&mut world, &mut history, TXN_TOPIC, None, value.as_bytes())
                .unwrap_or_else(|e| panic!("seed {seed}: transactional send: {e}"))
            {
                tries += 1;
                assert!(tries < 100_000, "seed {seed}: send blocked for good");
                world.run_for(Duration::from_millis(1));
                between(&mut world, &mut history);
            }
        }
        let r = tx.end(&mut world, &mut history, true, &mut between);
        assert!(
            r.is_ok(),
            "seed {seed}: transaction {t} did not commit: {r:?}"
        );
    }
    world.faults_on = false;
    let settled = p.settle(
        &mut world,
        &mut history,
        Duration::from_secs(300),
        |w: &mut World, h: &mut History| {
            rc.poll(w, h);
            member.poll(w);
        },
    );
    assert!(
        settled,
        "seed {seed}: {} records unresolved",
        p.outstanding()
    );
    assert!(
        rc.run_to_end(&mut world, &mut history, Duration::from_secs(120)),
        "seed {seed}: the consumer did not reach the end"
    );
    let ends: Vec<i64> = world.cluster.topics[TOPIC]
        .partitions
        .iter()
        .map(|p| p.next_offset)
        .collect();
    let committed = world.run_until(Duration::from_secs(120), |w| {
        member.poll(w);
        (0..PARTITIONS).all(|q| w.cluster.txn.committed(GROUP, TOPIC, q) == Some(ends[q as usize]))
    });
    assert!(
        committed,
        "seed {seed}: the member's commits never reached the log ends"
    );
    let mut seen = std::collections::BTreeSet::new();
    for (_, partition, offset, _) in &member.read {
        seen.insert((*partition, *offset));
    }
    let expected: usize = ends.iter().sum::<i64>() as usize;
    assert_eq!(
        seen.len(),
        expected,
        "seed {seed}: the member consumed every record"
    );
    for (topic, iso, name) in [
        (TOPIC, Isolation::ReadUncommitted, "drain-t-ru"),
        (TXN_TOPIC, Isolation::ReadUncommitted, "drain-x-ru"),
        (TXN_TOPIC, Isolation::ReadCommitted, "drain-x-rc"),
    ] {
        drain(
            &mut world,
            &mut history,
            name,
            topic,
            iso,
            Duration::from_secs(60),
        );
    }
    let verdict = history.check();
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: producer errors {:?}, net {:?}, requests {:?}",
            p.errors, world.net, world.cluster.counters.requests
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    EveryRun {
        world,
        verdict,
        longest_wait: p.longest_wait,
        producer_errors: p.errors,
    }
}

/// Sums over a sweep.
#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    throttled: u64,
    throttled_apis: BTreeMap<&'static str, u64>,
    stalls: u64,
    stalled_apis: BTreeMap<&'static str, u64>,
    answers_lost: u64,
    peak_rate: (u64, &'static str),
    longest_wait: Duration,
    failed: BTreeMap<String, usize>,
}

impl Sweep {
    fn add(&mut self, r: &EveryRun) {
        self.runs += 1;
        self.records += r.verdict.sends;
        self.acked += r.verdict.acked;
        self.throttled += r.world.net.throttled;
        for (api, n) in &r.world.net.throttled_apis {
            *self.throttled_apis.entry(api).or_default() += n;
        }
        self.stalls += r.world.net.stalls;
        for (api, n) in &r.world.net.stalled_apis {
            *self.stalled_apis.entry(api).or_default() += n;
        }
        self.answers_lost += r.world.net.answers_lost;
        self.peak_rate = self.peak_rate.max(r.world.net.peak_rate);
        self.longest_wait = self.longest_wait.max(r.longest_wait);
        for (e, n) in &r.producer_errors {
            *self.failed.entry(e.clone()).or_default() += n;
        }
    }
}

/// The most requests one connection may carry in one virtual second: a busy loop (a
/// retry without backoff, a throttle ignored) goes far past it.
const RATE_BOUND: u64 = 250;

/// The APIs every F17 run asks (`Every`), each of which must have met the fault.
const APIS: &[&str] = &[
    "Produce",
    "Fetch",
    "Metadata",
    "InitProducerId",
    "ListOffsets",
    "FindCoordinator",
    "AddPartitionsToTxn",
    "EndTxn",
    "ConsumerGroupHeartbeat",
    "OffsetCommit",
    "OffsetFetch",
];

fn sweep_every(name: &str, story: &Every, setup: impl Fn(&mut World)) -> Sweep {
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        let r = every_api(seed, story, &setup);
        assert_eq!(
            r.world.net.throttle_violations, 0,
            "seed {seed}: the client wrote on a throttled connection"
        );
        assert!(
            r.world.net.peak_rate.0 <= RATE_BOUND,
            "seed {seed}: {} {} requests on one connection in one virtual second",
            r.world.net.peak_rate.0,
            r.world.net.peak_rate.1
        );
        total.add(&r);
    });
    eprintln!("{name}: {total:?}");
    total
}

/// F17, throttling: a quarter of the answers of every API carry a throttle of 20–200
/// ms (KIP-219), after which the broker mutes the connection. The client writes nothing
/// on a throttled connection before the throttle ends, yet every record is delivered,
/// every transaction commits and the group member commits the log ends.
#[test]
fn f17_throttled_answers_on_every_api_hold_the_client_back() {
    let story = Every {
        records: 40,
        txns: 2,
        producer: SCENARIO_SETTINGS.to_vec(),
    };
    let s = sweep_every(
        "f17_throttled_answers_on_every_api_hold_the_client_back",
        &story,
        |w: &mut World| {
            w.throttling = Throttling {
                chance: 250,
                ms: (20, 200),
                apis: None,
            };
        },
    );
    assert_eq!(s.acked, s.records, "{s:?}");
    for api in APIS {
        assert!(
            s.throttled_apis.get(api).copied().unwrap_or(0) > 0,
            "{api} answers were throttled: {s:?}"
        );
    }
}

/// The producer's delivery timeout in the timeout scenario.
const DELIVERY_TIMEOUT_MS: u64 = 700;
/// `request.timeout.ms` of `SCENARIO_SETTINGS`.
const REQUEST_TIMEOUT_MS: u64 = 300;

/// F17, timeouts: 6% of the answers of every API stall 1 s, past the clients' 300 ms
/// request timeout, and 1% are lost. Each request is retried with backoff (no
/// connection ever carries a storm of requests), the idempotent producer reports every
/// record within its `delivery.timeout.ms` (700 ms: some records time out, reported
/// failed or possibly delivered, never lost once acknowledged) plus at most one
/// `request.timeout.ms` for a batch in flight, transactions commit and the member's
/// commits reach the log ends.
#[test]
fn f17_answers_of_every_api_time_out_and_are_retried_with_backoff() {
    let timeout = DELIVERY_TIMEOUT_MS.to_string();
    let mut producer = SCENARIO_SETTINGS.to_vec();
    producer.retain(|(k, _)| *k != "delivery.timeout.ms");
    let timeout: &'static str = Box::leak(timeout.into_boxed_str());
    producer.push(("delivery.timeout.ms", timeout));
    let story = Every {
        records: 40,
        txns: 2,
        producer,
    };
    let s = sweep_every(
        "f17_answers_of_every_api_time_out_and_are_retried_with_backoff",
        &story,
        |w: &mut World| {
            w.faults = NetFaults {
                stall: 60,
                stall_ms: 1_000,
                lose_answer: 10,
                ..Default::default()
            };
        },
    );
    // The core's documented bound (DESIGN.md, producer outcomes): queued batches expire
    // at `delivery.timeout.ms`; a batch in a request takes that request's outcome first,
    // at most `request.timeout.ms` later (its bytes stay owned by the request). The
    // report is taken a few ms after the producer made it.
    assert!(
        s.longest_wait <= Duration::from_millis(DELIVERY_TIMEOUT_MS + REQUEST_TIMEOUT_MS + 10),
        "a record waited past delivery.timeout.ms + request.timeout.ms: {s:?}"
    );
    assert!(s.acked < s.records, "some records timed out: {s:?}");
    for api in APIS {
        assert!(
            s.stalled_apis.get(api).copied().unwrap_or(0) > 0,
            "{api} answers stalled: {s:?}"
        );
    }
}

/// Determinism: one seed of the F17 story with throttles, stalls, lost answers and a
/// slow narrow link to one broker gives the identical event trace twice; another seed
/// differs.
#[test]
fn a_fault_seed_replays_exactly_and_seeds_differ() {
    let story = Every {
        records: 40,
        txns: 1,
        producer: SCENARIO_SETTINGS.to_vec(),
    };
    let run = |seed| {
        let r = every_api(seed, &story, &|w: &mut World| {
            w.throttling = Throttling {
                chance: 200,
                ms: (20, 200),
                apis: None,
            };
            w.faults = NetFaults {
                stall: 30,
                stall_ms: 800,
                lose_answer: 10,
                ..Default::default()
            };
            w.links.insert(
                2,
                kafka_tests::sim::links::LinkFaults {
                    latency_ms: Some((10, 80)),
                    bytes_per_ms: Some(20),
                    half_open: false,
                },
            );
        });
        (r.world.trace(), r.world.elapsed(), r.world.net.clone())
    };
    let a = run(42);
    let b = run(42);
    assert_eq!(a, b, "same seed, same trace");
    let c = run(43);
    assert_ne!(a.0, c.0, "another seed, another trace");
    assert!(
        a.2.throttled > 0 && a.0 .1 > 300,
        "the trace covers faults: {a:?}"
    );
}
