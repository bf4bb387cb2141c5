//! The consumer on the simulated cluster (`kafka_tests::sim`), each scenario over many
//! seeds: two consumers (read_uncommitted and read_committed) read a topic from the
//! earliest offset while an idempotent producer writes it and faults fire on Fetch and
//! ListOffsets too — lost and stalled answers, dropped requests, fetch sessions evicted
//! or refused by a full cache, leader moves (positions validated with
//! OffsetForLeaderEpoch, KIP-320; those answers lost and stalled too), a broker restart.
//! After healing, each consumer must reach the end having read every acknowledged record
//! exactly once, in offset order, with no gap: its whole life is one complete read
//! session for the history checker. Replay one seed with `SIM_SEED=<n>`;
//! `SIM_SEEDS=<count>` for more.

use std::time::Duration;

use kafka_core::protocol::ApiKey;
use kafka_tests::sim::draining::ConsumeRun;
use kafka_tests::sim::history::{History, Isolation};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::world::{ClusterEvent, NetFaults, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;
const RECORDS: usize = 200;

/// Consumer settings: short timeouts so faults resolve within a scenario; a small fetch
/// size so records arrive over many Fetches.
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
    read: usize,
    answers_lost: u64,
    stalls: u64,
    requests_dropped: u64,
    sessions_opened: u64,
    sessions_refused_full: u64,
    session_errors: u64,
    leader_errors: u64,
    /// OffsetForLeaderEpoch requests: positions validated after a leader change (KIP-320).
    validations: u64,
}

/// One seed: the producer and both consumers under `setup`'s faults, then healing.
fn consume_under(seed: u64, setup: &dyn Fn(&mut World), sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    setup(&mut world);
    world.faults_on = true;
    let mut history = History::new();
    let mut p = ProduceRun::start(&mut world, "p1", SCENARIO_SETTINGS);
    let mut consumers = [
        ConsumeRun::start(
            &mut world,
            &mut history,
            "ru",
            TOPIC,
            Isolation::ReadUncommitted,
            true,
            CONSUMER,
        ),
        ConsumeRun::start(
            &mut world,
            &mut history,
            "rc",
            TOPIC,
            Isolation::ReadCommitted,
            true,
            CONSUMER,
        ),
    ];
    let mut poll_all = |w: &mut World, h: &mut History| {
        for c in consumers.iter_mut() {
            c.poll(w, h);
        }
    };
    p.send_all(
        &mut world,
        &mut history,
        TOPIC,
        RECORDS,
        &format!("s{seed}"),
        &mut poll_all,
    );
    world.faults_on = false;
    let settled = p.settle(
        &mut world,
        &mut history,
        Duration::from_secs(300),
        &mut poll_all,
    );
    assert!(
        settled,
        "seed {seed}: {} records never resolved",
        p.outstanding()
    );
    for c in consumers.iter_mut() {
        let done = c.run_to_end(&mut world, &mut history, Duration::from_secs(120));
        assert!(
            done,
            "seed {seed}: a consumer did not reach the end after healing (read {})",
            c.read
        );
    }
    let verdict = history.check();
    verdict.assert_clean(&format!("seed {seed}"));
    assert_eq!(
        verdict.acked, RECORDS,
        "seed {seed}: every record acknowledged"
    );
    sweep.runs += 1;
    sweep.read += consumers.iter().map(|c| c.read).sum::<usize>();
    sweep.answers_lost += world.net.answers_lost;
    sweep.stalls += world.net.stalls;
    sweep.requests_dropped += world.net.requests_dropped;
    for b in &world.cluster.brokers {
        sweep.sessions_opened += b.sessions.opened;
        sweep.sessions_refused_full += b.sessions.refused_full;
        sweep.session_errors += b.sessions.session_errors;
    }
    let errors = &world.cluster.counters.errors;
    let count = |codes: &[i16]| {
        codes
            .iter()
            .map(|c| errors.get(c).copied().unwrap_or(0))
            .sum::<u64>()
    };
    // NOT_LEADER_OR_FOLLOWER (6), FENCED_LEADER_EPOCH (74).
    sweep.leader_errors += count(&[6, 74]);
    let requests = &world.cluster.counters.requests;
    sweep.validations += requests.get("OffsetForLeaderEpoch").copied().unwrap_or(0);
}

fn sweep(name: &str, setup: impl Fn(&mut World)) -> Sweep {
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| consume_under(seed, &setup, &mut total));
    eprintln!("{name}: {total:?}");
    assert_eq!(
        total.read,
        total.runs as usize * RECORDS * 2,
        "each consumer read each record once"
    );
    total
}

/// Fetch answers lost, stalled past the request timeout, and requests dropped: the
/// consumer refetches from its position, never skipping or repeating a record.
#[test]
fn lost_and_slow_fetch_answers_neither_skip_nor_repeat() {
    let s = sweep(
        "lost_and_slow_fetch_answers_neither_skip_nor_repeat",
        |w: &mut World| {
            w.faults = NetFaults {
                lose_answer: 30,
                reset_before: 30,
                stall: 20,
                stall_ms: 800,
                apis: Some(vec![ApiKey::Fetch, ApiKey::ListOffsets, ApiKey::Metadata]),
            };
        },
    );
    assert!(
        s.answers_lost > s.runs && s.stalls > s.runs / 2 && s.requests_dropped > s.runs,
        "{s:?}"
    );
}

/// KIP-227 sessions lost on the broker side (evicted: FETCH_SESSION_ID_NOT_FOUND) and a
/// cache with room for one session per broker, so the second consumer is answered
/// sessionless: both recover with full fetches.
#[test]
fn evicted_and_refused_fetch_sessions_are_recovered_by_full_fetches() {
    let s = sweep(
        "evicted_and_refused_fetch_sessions_are_recovered_by_full_fetches",
        |w: &mut World| {
            for b in &mut w.cluster.brokers {
                b.sessions.set_capacity(1);
            }
            for _ in 0..6 {
                let at = Duration::from_millis(10 + w.rng().below(400));
                let node = 1 + w.rng().below(3) as i32;
                w.schedule(at, ClusterEvent::EvictSession(node));
            }
        },
    );
    assert!(
        s.session_errors > s.runs && s.sessions_refused_full > s.runs,
        "{s:?}"
    );
}

/// Leaders move and a broker stops and restarts while both consumers fetch: the
/// consumer follows the new leader (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH),
/// validates its positions there with OffsetForLeaderEpoch (KIP-320; nothing is
/// truncated here, so every validation must let it go on at the same offset) and its
/// sessions are reopened on the restarted broker.
#[test]
fn leader_moves_and_a_broker_restart_while_consuming() {
    let s = sweep(
        "leader_moves_and_a_broker_restart_while_consuming",
        |w: &mut World| {
            w.schedule_leader_moves(TOPIC, PARTITIONS, 8, 400);
            let node = 1 + w.rng().below(3) as i32;
            let at = Duration::from_millis(50 + w.rng().below(200));
            w.schedule(at, ClusterEvent::Kill(node));
            w.schedule(at + Duration::from_millis(300), ClusterEvent::Restart(node));
        },
    );
    assert!(s.leader_errors > s.runs, "{s:?}");
    assert!(s.validations > s.runs, "{s:?}");
}

/// Leaders move while answers to the consumers' Fetch, ListOffsets, Metadata and
/// OffsetForLeaderEpoch requests are lost, stalled past the request timeout or never
/// applied: a validation without an answer is asked again, one answered for a position
/// that has moved on since is ignored, and no position moves without one.
#[test]
fn leader_moves_while_validations_are_lost_and_stalled() {
    let s = sweep(
        "leader_moves_while_validations_are_lost_and_stalled",
        |w: &mut World| {
            w.schedule_leader_moves(TOPIC, PARTITIONS, 8, 400);
            w.faults = NetFaults {
                lose_answer: 60,
                reset_before: 30,
                stall: 40,
                stall_ms: 800,
                apis: Some(vec![
                    ApiKey::Fetch,
                    ApiKey::ListOffsets,
                    ApiKey::Metadata,
                    ApiKey::OffsetForLeaderEpoch,
                ]),
            };
        },
    );
    assert!(
        s.validations > s.runs && s.answers_lost > s.runs && s.stalls > s.runs / 2,
        "{s:?}"
    );
}
