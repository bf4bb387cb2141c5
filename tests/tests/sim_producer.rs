//! The idempotent producer on the simulated cluster (`kafka_tests::sim`), each scenario
//! over many seeds: faults fire while records are sent, then the network heals, every
//! record must end with exactly one outcome, and both isolation levels read everything
//! back; the history checker must find no lost acknowledged record, no duplicate, no
//! reordering. Replay one seed with `SIM_SEED=<n>`; run more with `SIM_SEEDS=<count>`.

use std::time::Duration;

use kafka_core::protocol::ApiKey;
use kafka_tests::sim::draining::drain;
use kafka_tests::sim::history::{History, Isolation, Verdict};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::world::{ClusterEvent, NetFaults, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;

/// What one seed's run produced.
struct RunResult {
    verdict: Verdict,
    world: World,
}

/// The story every scenario shares: a 3-broker cluster, one idempotent producer sending
/// `records` records (half to explicit partitions, half partitioned by the producer)
/// while `faults` are on, then healing, then draining at both isolation levels.
fn produce_under(seed: u64, records: usize, setup: impl FnOnce(&mut World)) -> RunResult {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    setup(&mut world);
    world.faults_on = true;
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", SCENARIO_SETTINGS);
    p.send_all(
        &mut world,
        &mut history,
        TOPIC,
        records,
        &format!("s{seed}"),
        |_, _| {},
    );
    world.faults_on = false;
    let settled = p.settle(
        &mut world,
        &mut history,
        Duration::from_secs(300),
        |_, _| {},
    );
    assert!(
        settled,
        "seed {seed}: {} records never resolved after healing: {:?}",
        p.outstanding(),
        &p.unresolved()[..p.unresolved().len().min(10)]
    );
    let limit = Duration::from_secs(60);
    drain(
        &mut world,
        &mut history,
        "read-uncommitted",
        TOPIC,
        Isolation::ReadUncommitted,
        limit,
    );
    drain(
        &mut world,
        &mut history,
        "read-committed",
        TOPIC,
        Isolation::ReadCommitted,
        limit,
    );
    let verdict = history.check();
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: producer errors {:?}, metrics {:?}",
            p.errors,
            {
                let now = world.now();
                world.clients[p.client].command(now, p.producer, |p, _| p.metrics())
            }
        );
    }
    RunResult { verdict, world }
}

/// Sums over a sweep, so a test can show its faults really fired.
#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    answers_lost: u64,
    requests_dropped: u64,
    stalls: u64,
    duplicates_refused: u64,
    leader_moves: u64,
    kill_resets: u64,
}

impl Sweep {
    fn add(&mut self, r: &RunResult) {
        self.runs += 1;
        self.records += r.verdict.sends;
        self.acked += r.verdict.acked;
        self.answers_lost += r.world.net.answers_lost;
        self.requests_dropped += r.world.net.requests_dropped;
        self.stalls += r.world.net.stalls;
        self.duplicates_refused += r.world.cluster.counters.duplicates_refused;
        self.leader_moves += r.world.cluster.counters.leader_moves;
        self.kill_resets += r.world.net.kill_resets;
    }
}

fn sweep(name: &str, records: usize, setup: impl Fn(&mut World)) -> Sweep {
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        let t0 = std::time::Instant::now();
        let r = produce_under(seed, records, &setup);
        if std::env::var("SIM_VERBOSE").is_ok() {
            eprintln!(
                "seed {seed}: {:?} real, {:?} virtual, trace {:?}, {:?}, {:?}",
                t0.elapsed(),
                r.world.elapsed(),
                r.world.trace(),
                r.world.net,
                r.world.cluster.counters
            );
        }
        r.verdict.assert_clean(&format!("{name} seed {seed}"));
        assert_eq!(
            r.verdict.sends, records,
            "seed {seed}: every record was sent"
        );
        total.add(&r);
    });
    eprintln!("{name}: {total:?}");
    total
}

fn produce_faults(f: NetFaults) -> impl Fn(&mut World) {
    move |w: &mut World| {
        w.faults = NetFaults {
            apis: Some(vec![ApiKey::Produce]),
            ..f.clone()
        }
    }
}

/// F4: the broker appends a batch and the answer is lost; the retry is recognized as a
/// duplicate (answered as Kafka 4.x does: no error, the original offset) and counts as
/// delivered, never as a second copy.
#[test]
fn f4_lost_produce_answers_are_retried_without_duplicates() {
    let s = sweep(
        "f4_lost_produce_answers_are_retried_without_duplicates",
        200,
        produce_faults(NetFaults {
            lose_answer: 60,
            ..Default::default()
        }),
    );
    assert!(s.answers_lost > s.runs, "answers were lost: {s:?}");
    assert!(
        s.duplicates_refused > 0,
        "retries met the broker's duplicate check: {s:?}"
    );
    assert_eq!(
        s.acked, s.records,
        "with delivery.timeout.ms far away, all are acknowledged"
    );
}

/// F3: connections reset before the broker reads a Produce request (nothing applied)
/// and after it applied one (answer lost): same producer id, epoch and sequences on the
/// retry; nothing lost, nothing doubled, order kept.
#[test]
fn f3_connection_resets_before_and_after_the_write() {
    let s = sweep(
        "f3_connection_resets_before_and_after_the_write",
        200,
        produce_faults(NetFaults {
            reset_before: 40,
            lose_answer: 40,
            ..Default::default()
        }),
    );
    assert!(
        s.requests_dropped > s.runs && s.answers_lost > s.runs,
        "{s:?}"
    );
    assert_eq!(s.acked, s.records);
}

/// F5: a slow broker holds answers past `request.timeout.ms`; the client gives up on
/// the connection and retries, the late original (applied) is deduplicated.
#[test]
fn f5_request_timeouts_on_a_slow_broker_keep_order_and_no_duplicates() {
    let s = sweep(
        "f5_request_timeouts_on_a_slow_broker_keep_order_and_no_duplicates",
        200,
        produce_faults(NetFaults {
            stall: 40,
            stall_ms: 1_000,
            ..Default::default()
        }),
    );
    assert!(s.stalls > s.runs, "{s:?}");
    assert_eq!(s.acked, s.records);
}

/// F1: partition leaders move while requests are in flight (NOT_LEADER_OR_FOLLOWER with
/// the new leader named, KIP-951, and metadata refreshes).
#[test]
fn f1_leader_moves_mid_stream() {
    let s = sweep("f1_leader_moves_mid_stream", 200, |w: &mut World| {
        w.schedule_leader_moves(TOPIC, PARTITIONS, 12, 400);
    });
    assert!(s.leader_moves > s.runs, "{s:?}");
    assert_eq!(s.acked, s.records);
}

/// F2 (replicated): a broker stops with requests in flight (connections reset, new
/// leaders elected) and comes back; acknowledged records stay, nothing is doubled.
#[test]
fn f2_a_broker_stops_and_restarts_mid_stream() {
    let s = sweep(
        "f2_a_broker_stops_and_restarts_mid_stream",
        200,
        |w: &mut World| {
            let node = 1 + w.rng().below(3) as i32;
            let at = Duration::from_millis(20 + w.rng().below(200));
            let back = at + Duration::from_millis(50 + w.rng().below(500));
            w.schedule(at, ClusterEvent::Kill(node));
            w.schedule(back, ClusterEvent::Restart(node));
        },
    );
    assert!(s.kill_resets > 0 && s.leader_moves >= s.runs, "{s:?}");
    assert_eq!(s.acked, s.records);
}

/// Everything at once: lost answers, dropped requests, stalls on every API, leader
/// moves and a broker restart.
#[test]
fn all_faults_at_once() {
    let s = sweep("all_faults_at_once", 200, |w: &mut World| {
        w.faults = NetFaults {
            lose_answer: 20,
            reset_before: 20,
            stall: 10,
            stall_ms: 800,
            apis: None,
        };
        w.schedule_leader_moves(TOPIC, PARTITIONS, 4, 300);
        let node = 1 + w.rng().below(3) as i32;
        w.schedule(Duration::from_millis(100), ClusterEvent::Kill(node));
        w.schedule(Duration::from_millis(400), ClusterEvent::Restart(node));
    });
    assert!(
        s.answers_lost > 0 && s.requests_dropped > 0 && s.stalls > 0,
        "{s:?}"
    );
}

/// Determinism: one seed gives the identical event trace twice; other seeds differ.
#[test]
fn a_seed_replays_exactly_and_seeds_differ() {
    let run = |seed| {
        let r = produce_under(seed, 120, |w: &mut World| {
            w.log = Some(Vec::new());
            w.faults = NetFaults {
                lose_answer: 30,
                reset_before: 30,
                stall: 10,
                stall_ms: 800,
                apis: None,
            };
            w.schedule(Duration::from_millis(50), ClusterEvent::Kill(2));
            w.schedule(Duration::from_millis(300), ClusterEvent::Restart(2));
        });
        (
            r.world.trace(),
            r.world.elapsed(),
            r.world.net.clone(),
            r.world.log.clone(),
        )
    };
    let a = run(42);
    let b = run(42);
    let (la, lb) = (
        a.3.clone().unwrap_or_default(),
        b.3.clone().unwrap_or_default(),
    );
    if let Some(i) = la.iter().zip(&lb).position(|(x, y)| x != y) {
        let around =
            |l: &[(u64, u64, u64, u64)]| l[i.saturating_sub(3)..(i + 3).min(l.len())].to_vec();
        panic!(
            "same seed, traces diverge at event {i}: {:?} vs {:?}",
            around(&la),
            around(&lb)
        );
    }
    assert_eq!((a.0, a.1, &a.2), (b.0, b.1, &b.2), "same seed, same trace");
    let c = run(43);
    assert_ne!(a.0, c.0, "another seed, another trace");
    assert!(a.0 .1 > 300, "the trace covers the run: {} events", a.0 .1);
}
