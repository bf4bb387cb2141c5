//! Transactions on the simulated cluster (`kafka_tests::sim`), each scenario over many
//! seeds: a transactional producer runs many small transactions over a 3-broker
//! cluster, some aborted on purpose, while faults fire at the transaction coordinator
//! (moves, deaths, injected NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS), on the
//! network (EndTxn answers lost), from a second instance with the same
//! `transactional.id`, or from the coordinator's transaction timeout. Then the network
//! heals and both isolation levels read everything back; the history checker must find
//! no aborted read (G1a), no torn or uncommitted transaction, nothing lost or doubled.
//! Worlds alternate between transactions v1 and v2 (KIP-890) by seed parity.
//! Replay one seed with `SIM_SEED=<n>`; run more with `SIM_SEEDS=<count>`.

use std::time::Duration;

use kafka_core::producer::TxnState;
use kafka_core::protocol::ApiKey;
use kafka_tests::sim::draining::{drain, ConsumeRun};
use kafka_tests::sim::history::{History, Isolation, Verdict};
use kafka_tests::sim::pipeline::{committed_offsets, poll_unlogged, seek_all};
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::transacting::{TxnRun, TXN_SETTINGS};
use kafka_tests::sim::txn_state::CoordFaults;
use kafka_tests::sim::world::{ClusterEvent, NetFaults, World};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 4;
const SEEDS: u64 = 1000;
const TXN_ID: &str = "tx";
/// Transactions per run and records per transaction.
const TXNS: usize = 6;
const RECORDS: (u64, u64) = (2, 5);

/// One seed's story: how the transactions are driven and what else happens.
#[derive(Clone, Copy, Default)]
struct Story {
    /// Per mille of transactions aborted on purpose.
    abort_per_mille: u32,
    /// Before committing, wait this long (ms range) — past a short transaction timeout.
    hold_ms: Option<(u64, u64)>,
    /// `transaction.timeout.ms`.
    timeout_ms: Option<u64>,
    /// A second instance with the same transactional id starts during this transaction
    /// (counted from 0), after this many of its records.
    fence_at: Option<(usize, usize)>,
    /// Read_committed and read_uncommitted consumers poll throughout.
    consumers: bool,
    /// A fatal error may come only from a fence (else it fails the run).
    fatal_expected: bool,
}

/// What one run did, for the sweep's sums.
#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    v2_runs: u64,
    records: usize,
    acked: usize,
    txns_committed: u64,
    txns_aborted: u64,
    fatal: u64,
    reads: usize,
    lso_violations: u64,
    /// v2 aborts fenced because the last commit's markers were pending.
    prepare_races: u64,
    coord: kafka_tests::sim::txn_state::TxnCounters,
    answers_lost: u64,
    stalls: u64,
    kill_resets: u64,
}

impl Sweep {
    fn add(&mut self, w: &World, v: &Verdict) {
        self.runs += 1;
        self.v2_runs += u64::from(w.cluster.txn.v2);
        self.records += v.sends;
        self.acked += v.acked;
        self.reads += v.reads;
        let c = &w.cluster.txn.counters;
        let s = &mut self.coord;
        s.committed += c.committed;
        s.aborted += c.aborted;
        s.timed_out += c.timed_out;
        s.fenced_by_init += c.fenced_by_init;
        s.fenced_refusals += c.fenced_refusals;
        s.concurrent += c.concurrent;
        s.injected_not_coordinator += c.injected_not_coordinator;
        s.injected_loading += c.injected_loading;
        s.wrong_coordinator += c.wrong_coordinator;
        s.moves += c.moves;
        s.markers += c.markers;
        s.end_retries += c.end_retries;
        s.implicit_starts += c.implicit_starts;
        s.prepare_fences += c.prepare_fences;
        s.unstable_offsets += c.unstable_offsets;
        s.rc_held_at_lso += c.rc_held_at_lso;
        s.rc_aborted_listed += c.rc_aborted_listed;
        self.answers_lost += w.net.answers_lost;
        self.stalls += w.net.stalls;
        self.kill_resets += w.net.kill_resets;
    }
}

fn consumer_settings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("request.timeout.ms", "300"),
        ("fetch.max.wait.ms", "20"),
        ("max.partition.fetch.bytes", "300"),
        ("retry.backoff.ms", "5"),
        ("reconnect.backoff.ms", "5"),
        ("reconnect.backoff.max.ms", "50"),
        ("metadata.max.age.ms", "500"),
    ]
}

/// The story every scenario shares: a 3-broker cluster (transactions v2 on even
/// seeds), `setup`'s faults on, [`TXNS`] transactions of 2–5 records each by one
/// producer (a new instance after a fatal error), then healing, then draining at both
/// isolation levels; the checker judges the history.
fn run(seed: u64, story: Story, setup: &dyn Fn(&mut World), sweep: &mut Sweep) -> (u64, u64) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    world.cluster.txn.v2 = seed.is_multiple_of(2);
    setup(&mut world);
    world.faults_on = true;
    world.cluster.txn.faults_on = true;
    let mut history = History::new();
    let timeout = story.timeout_ms.unwrap_or(3000).to_string();
    let mut settings: Vec<(&str, &str)> = TXN_SETTINGS.to_vec();
    settings.retain(|(k, _)| *k != "transaction.timeout.ms");
    settings.push(("transaction.timeout.ms", &timeout));

    let mut consumers: Vec<ConsumeRun> = Vec::new();
    if story.consumers {
        for (name, iso) in [
            ("rc", Isolation::ReadCommitted),
            ("ru", Isolation::ReadUncommitted),
        ] {
            let c = ConsumeRun::start(
                &mut world,
                &mut history,
                name,
                TOPIC,
                iso,
                true,
                &consumer_settings(),
            );
            consumers.push(c);
        }
    }
    let mut lso_violations = 0u64;
    let mut between = |w: &mut World, h: &mut History| {
        for (i, c) in consumers.iter_mut().enumerate() {
            c.poll(w, h);
            if i == 0 {
                // read_committed: nothing at or past the partition's last stable offset.
                for r in c.last_batch() {
                    let part = &w.cluster.topics[TOPIC].partitions[r.partition as usize];
                    let lso = w.cluster.txn.lso(TOPIC, r.partition, part.next_offset);
                    if r.offset >= lso {
                        lso_violations += 1;
                    }
                }
            }
        }
    };

    let mut instance = 0;
    let mut start = |world: &mut World,
                     history: &mut History,
                     between: &mut dyn FnMut(&mut World, &mut History)| {
        instance += 1;
        let label = format!("p{instance}");
        let mut p = TxnRun::start(world, &label, TXN_ID, instance * 1000, &settings);
        let r = p.init(world, history, between);
        assert!(
            r.is_ok(),
            "seed {seed}: init_transactions of {label} failed: {r:?}"
        );
        p
    };
    let mut p = start(&mut world, &mut history, &mut between);
    let mut retired: Vec<TxnRun> = Vec::new();
    let mut fatal = 0u64;
    let mut races = 0u64;
    for t in 0..TXNS {
        p.begin(&mut world).expect("begin");
        let n = RECORDS.0 + world.rng().below(RECORDS.1 - RECORDS.0 + 1);
        for i in 0..n as usize {
            if story.fence_at == Some((t, i)) {
                // A second instance takes the transactional id over mid-transaction.
                let mut newer = start(&mut world, &mut history, &mut between);
                std::mem::swap(&mut p, &mut newer);
                let mut zombie = newer;
                // The old one goes on: one more record, then a commit; it must be fenced.
                let value = format!("s{seed}-zombie-t{t}");
                let _ = zombie.send(&mut world, &mut history, TOPIC, None, value.as_bytes());
                let r = zombie.end(&mut world, &mut history, true, &mut between);
                assert!(
                    r.as_ref().is_err_and(|e| e.is_fatal()) && zombie.fenced_by_code(),
                    "seed {seed}: the fenced instance's commit: {r:?}"
                );
                fatal += 1;
                retired.push(zombie);
                p.begin(&mut world).expect("begin");
            }
            let value = format!("s{seed}-{}-t{t}-r{i}", retired.len());
            let partition = (i % 2 == 0).then_some((t as i32 + i as i32) % PARTITIONS);
            let mut tries = 0;
            loop {
                match p.send(&mut world, &mut history, TOPIC, partition, value.as_bytes()) {
                    Ok(true) => break,
                    Ok(false) => {
                        tries += 1;
                        assert!(tries < 100_000, "seed {seed}: send blocked for good");
                        world.run_for(Duration::from_millis(1));
                        p.take_reports(&mut world, &mut history);
                        between(&mut world, &mut history);
                    }
                    // The transaction already failed (abortable or fenced): stop sending.
                    Err(_) => break,
                }
            }
            let pause = world.rng().below(3);
            if pause > 0 {
                world.run_for(Duration::from_millis(pause));
            }
            p.take_reports(&mut world, &mut history);
            between(&mut world, &mut history);
        }
        if let Some((lo, hi)) = story.hold_ms {
            let hold = lo + world.rng().below(hi - lo + 1);
            let end = world.now() + Duration::from_millis(hold);
            world.run_until(Duration::from_millis(hold), |w| {
                p.take_reports(w, &mut history);
                between(w, &mut history);
                w.now() >= end
            });
        }
        let commit = !world.rng().chance(story.abort_per_mille);
        let prepare_fences = world.cluster.txn.counters.prepare_fences;
        let r = p.end(&mut world, &mut history, commit, &mut between);
        if let Err(e) = r {
            if e.is_fatal() {
                // Kafka 4.x fences an EndTxn(abort) at the new v2 epoch while the last
                // commit's markers are pending (see docs/SIMULATION.md).
                let raced = world.cluster.txn.counters.prepare_fences > prepare_fences;
                if raced {
                    races += 1;
                }
                assert!(
                    (story.fatal_expected || raced) && p.fenced_by_code(),
                    "seed {seed}: transaction {t} ended fatally: {e} ({:?}), v2 {}",
                    e.code(),
                    world.cluster.txn.v2
                );
                fatal += u64::from(!raced);
                let next = start(&mut world, &mut history, &mut between);
                retired.push(std::mem::replace(&mut p, next));
            }
        }
    }
    world.faults_on = false;
    world.cluster.txn.faults_on = false;
    for q in retired.iter_mut().chain(std::iter::once(&mut p)) {
        let settled = q.settle(
            &mut world,
            &mut history,
            Duration::from_secs(300),
            &mut between,
        );
        assert!(
            settled,
            "seed {seed}: {} records never resolved",
            q.outstanding()
        );
        q.abandon(&mut history);
    }
    assert!(
        matches!(p.state(&mut world), TxnState::Ready),
        "seed {seed}: the last producer ends ready"
    );
    for c in consumers.iter_mut() {
        let done = c.run_to_end(&mut world, &mut history, Duration::from_secs(120));
        assert!(
            done,
            "seed {seed}: a consumer did not reach the end (read {})",
            c.read
        );
    }
    let limit = Duration::from_secs(60);
    drain(
        &mut world,
        &mut history,
        "drain-ru",
        TOPIC,
        Isolation::ReadUncommitted,
        limit,
    );
    drain(
        &mut world,
        &mut history,
        "drain-rc",
        TOPIC,
        Isolation::ReadCommitted,
        limit,
    );
    let verdict = history.check();
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: v2 {}, producers {:?}, coordinator {:?}",
            world.cluster.txn.v2,
            std::iter::once(&p)
                .chain(&retired)
                .map(|q| (q.committed, q.aborted, &q.fatal, &q.abortable, &q.errors))
                .collect::<Vec<_>>(),
            world.cluster.txn.counters
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    assert_eq!(
        lso_violations, 0,
        "seed {seed}: read_committed read past the LSO"
    );
    sweep.add(&world, &verdict);
    sweep.txns_committed += std::iter::once(&p)
        .chain(&retired)
        .map(|q| q.committed)
        .sum::<u64>();
    sweep.txns_aborted += std::iter::once(&p)
        .chain(&retired)
        .map(|q| q.aborted)
        .sum::<u64>();
    sweep.fatal += fatal;
    sweep.prepare_races += races;
    sweep.lso_violations += lso_violations;
    world.trace()
}

fn sweep(name: &str, story: Story, setup: impl Fn(&mut World)) -> Sweep {
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        run(seed, story, &setup, &mut total);
    });
    eprintln!("{name}: {total:?}");
    assert!(
        total.v2_runs > 0 && total.v2_runs < total.runs,
        "v1 and v2 worlds: {total:?}"
    );
    assert!(
        total.txns_committed > 0 && total.txns_aborted > 0,
        "{total:?}"
    );
    total
}

const COORDINATOR_APIS: &[ApiKey] = &[
    ApiKey::FindCoordinator,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::EndTxn,
];

/// F9: the transaction coordinator moves and dies: requests answered NOT_COORDINATOR
/// and COORDINATOR_LOAD_IN_PROGRESS during AddPartitionsToTxn and EndTxn, lookups
/// refused, and the coordinator's broker killed (its connections reset, an EndTxn in
/// flight unanswered) and restarted. The producer finds the new coordinator and goes
/// on; every commit it was told of is visible, every abort is not.
#[test]
fn f9_the_transaction_coordinator_moves_and_dies() {
    let s = sweep(
        "f9_the_transaction_coordinator_moves_and_dies",
        Story {
            abort_per_mille: 250,
            ..Default::default()
        },
        |w: &mut World| {
            w.cluster.txn.faults = CoordFaults {
                not_coordinator: 80,
                loading: 80,
                lookup_unavailable: 50,
                apis: Some(COORDINATOR_APIS.to_vec()),
                ..Default::default()
            };
            let node = w.cluster.coordinator_of(TXN_ID).expect("a running broker");
            let at = Duration::from_millis(20 + w.rng().below(150));
            let back = at + Duration::from_millis(50 + w.rng().below(200));
            w.schedule(at, ClusterEvent::Kill(node));
            w.schedule(back, ClusterEvent::Restart(node));
        },
    );
    let c = &s.coord;
    assert!(
        c.injected_not_coordinator > s.runs / 2
            && c.injected_loading > s.runs / 2
            && c.moves >= s.runs,
        "{s:?}"
    );
    assert!(c.wrong_coordinator > 0 && s.kill_resets > 0, "{s:?}");
    assert_eq!(s.fatal, 0, "no fence without a second instance: {s:?}");
}

/// F10: a second instance with the same `transactional.id` starts while the first has
/// a transaction open: its InitProducerId aborts that transaction (bumping the epoch),
/// the first one's next request is refused and it ends with a fatal fence error; none
/// of its open transaction's records is ever visible to read_committed.
#[test]
fn f10_a_second_instance_fences_the_first_mid_transaction() {
    let s = sweep_fence();
    assert!(
        s.coord.fenced_by_init > 0 && s.coord.fenced_refusals >= s.runs,
        "{s:?}"
    );
    assert_eq!(s.fatal, s.runs, "one fenced instance per run: {s:?}");
}

fn sweep_fence() -> Sweep {
    let name = "f10_a_second_instance_fences_the_first_mid_transaction";
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        let t = (seed % TXNS as u64) as usize;
        let story = Story {
            abort_per_mille: 200,
            fence_at: Some((t, 1)),
            fatal_expected: true,
            ..Default::default()
        };
        let setup = |w: &mut World| {
            w.faults = NetFaults {
                lose_answer: 30,
                reset_before: 30,
                apis: Some(vec![ApiKey::Produce]),
                ..Default::default()
            };
        };
        run(seed, story, &setup, &mut total);
    });
    eprintln!("{name}: {total:?}");
    total
}

/// F11: EndTxn(commit) answers lost (the coordinator applied it) or stalled past the
/// request timeout: the producer asks again with the same decision until it is
/// answered — the retry is recognized (CONCURRENT_TRANSACTIONS while markers are
/// pending, then success; under v2 with the epoch from before the bump) — and never
/// turns it into an abort. Under v1 and v2.
#[test]
fn f11_lost_end_txn_answers_are_retried_with_the_same_decision() {
    let s = sweep(
        "f11_lost_end_txn_answers_are_retried_with_the_same_decision",
        Story {
            abort_per_mille: 250,
            ..Default::default()
        },
        |w: &mut World| {
            w.faults = NetFaults {
                lose_answer: 300,
                stall: 100,
                stall_ms: 800,
                apis: Some(vec![ApiKey::EndTxn]),
                ..Default::default()
            };
            w.cluster.txn.faults.marker_delay_ms = (0, 40);
        },
    );
    assert!(s.answers_lost > s.runs && s.stalls > 0, "{s:?}");
    assert!(s.coord.end_retries > s.runs, "{s:?}");
    assert_eq!(s.fatal, 0, "{s:?}");
    assert_eq!(
        s.txns_committed + s.txns_aborted + s.prepare_races,
        s.runs * TXNS as u64,
        "every transaction ended as decided: {s:?}"
    );
}

/// F12: the coordinator aborts a transaction open longer than `transaction.timeout.ms`
/// (bumping the epoch) while the producer holds it and then commits: the commit is
/// refused (fenced), never reported committed, and the records stay invisible to
/// read_committed; a new instance goes on.
#[test]
fn f12_the_coordinator_times_the_transaction_out_during_the_commit() {
    let s = sweep(
        "f12_the_coordinator_times_the_transaction_out_during_the_commit",
        Story {
            abort_per_mille: 150,
            hold_ms: Some((0, 160)),
            timeout_ms: Some(100),
            fatal_expected: true,
            ..Default::default()
        },
        |w: &mut World| {
            w.faults = NetFaults {
                lose_answer: 20,
                apis: Some(vec![ApiKey::Produce, ApiKey::AddPartitionsToTxn]),
                ..Default::default()
            };
        },
    );
    assert!(s.coord.timed_out > s.runs && s.fatal > s.runs / 2, "{s:?}");
}

/// F16: read_committed and read_uncommitted consumers read while transactions commit
/// and abort, with fetch answers lost and markers slow: read_committed never returns an
/// aborted record nor one at or past the last stable offset, control batches never
/// surface, and every committed transaction is read whole.
#[test]
fn f16_read_committed_consumers_while_commits_and_aborts_interleave() {
    let s = sweep(
        "f16_read_committed_consumers_while_commits_and_aborts_interleave",
        Story {
            abort_per_mille: 400,
            consumers: true,
            ..Default::default()
        },
        |w: &mut World| {
            w.faults = NetFaults {
                lose_answer: 20,
                reset_before: 20,
                stall: 10,
                stall_ms: 800,
                apis: Some(vec![ApiKey::Fetch, ApiKey::Produce]),
            };
            w.cluster.txn.faults.marker_delay_ms = (0, 30);
        },
    );
    assert!(s.answers_lost > s.runs && s.coord.markers > s.runs, "{s:?}");
    // The consumers met open transactions (answers held at the LSO) and aborted ones.
    assert!(
        s.coord.rc_held_at_lso > s.runs && s.coord.rc_aborted_listed > s.runs,
        "{s:?}"
    );
    assert_eq!(s.lso_violations, 0);
}

/// Determinism with transactions: one seed gives the identical event trace twice
/// (markers, timeouts and injected coordinator errors included); other seeds differ.
#[test]
fn a_transactional_seed_replays_exactly() {
    let story = Story {
        abort_per_mille: 300,
        consumers: true,
        ..Default::default()
    };
    let setup = |w: &mut World| {
        w.cluster.txn.faults = CoordFaults {
            not_coordinator: 50,
            loading: 50,
            ..Default::default()
        };
        w.faults = NetFaults {
            lose_answer: 50,
            apis: Some(vec![ApiKey::EndTxn, ApiKey::Fetch]),
            ..Default::default()
        };
    };
    let mut sweep = Sweep::default();
    let a = run(7, story, &setup, &mut sweep);
    let b = run(7, story, &setup, &mut sweep);
    let c = run(9, story, &setup, &mut sweep);
    assert_eq!(a, b, "same seed, same trace");
    assert_ne!(a, c, "another seed, another trace");
    assert!(a.1 > 300, "the trace covers the run: {} events", a.1);
}

const INPUT: &str = "in";
const GROUP: &str = "pipeline";
const INPUTS: usize = 12;

/// Moves the pipeline's consumer back to the group's committed offsets (where the
/// next attempt starts after an abort or a new instance), fetched with OffsetFetch.
fn rewind_to_committed(world: &mut World, c: &ConsumeRun, admin: usize) {
    let committed = committed_offsets(world, admin, GROUP, INPUT, PARTITIONS);
    seek_all(world, c, INPUT, &committed);
}

/// Consume-transform-produce: a read_committed consumer reads `in` (written by an
/// idempotent producer), and for each input a transactional producer writes one output
/// to `t` and commits the consumer's positions for the group with the transaction
/// (`send_offsets_to_transaction`: AddOffsetsToTxn + TxnOffsetCommit under v1,
/// TxnOffsetCommit v5 under v2). A quarter of the transactions abort; then the consumer
/// goes back to the group's committed offsets and the inputs are transformed again.
/// Faults: coordinator errors, lost EndTxn and Produce answers. After healing: each
/// input's output is in read_committed exactly once, the group's offsets are at the
/// end of `in`, and the checker finds nothing.
#[test]
fn consume_transform_produce_outputs_each_input_exactly_once() {
    let name = "consume_transform_produce_outputs_each_input_exactly_once";
    let mut total = Sweep::default();
    let mut attempts = 0u64;
    for_each_seed(name, SEEDS, |seed| {
        let mut world = World::new(seed, 3);
        world.cluster.create_topic(TOPIC, PARTITIONS);
        world.cluster.create_topic(INPUT, PARTITIONS);
        world.cluster.txn.v2 = seed.is_multiple_of(2);
        // The input is written (and judged) apart: the history below is the output's.
        let mut inputs = History::new();
        let mut input = ProduceRun::start(&mut world, "in", SCENARIO_SETTINGS);
        input.send_all(
            &mut world,
            &mut inputs,
            INPUT,
            INPUTS,
            &format!("s{seed}"),
            |_, _| {},
        );
        assert!(input.settle(&mut world, &mut inputs, Duration::from_secs(60), |_, _| {}));
        inputs
            .check()
            .assert_clean(&format!("seed {seed}: the input"));
        let mut history = History::new();

        world.cluster.txn.faults = CoordFaults {
            not_coordinator: 30,
            loading: 30,
            apis: Some(COORDINATOR_APIS.to_vec()),
            ..Default::default()
        };
        world.faults = NetFaults {
            lose_answer: 40,
            apis: Some(vec![
                ApiKey::EndTxn,
                ApiKey::Produce,
                ApiKey::TxnOffsetCommit,
            ]),
            ..Default::default()
        };
        world.faults_on = true;
        world.cluster.txn.faults_on = true;
        let consumer = ConsumeRun::start(
            &mut world,
            &mut history,
            "pipeline",
            INPUT,
            Isolation::ReadCommitted,
            false,
            &consumer_settings(),
        );
        let admin = world.add_client(&[
            ("client.id", "admin"),
            ("request.timeout.ms", "300"),
            ("retry.backoff.ms", "5"),
            ("retry.backoff.max.ms", "50"),
            ("reconnect.backoff.ms", "5"),
            ("reconnect.backoff.max.ms", "50"),
        ]);
        let mut none = |_: &mut World, _: &mut History| {};
        let mut instance = 0u64;
        let mut new_producer = |world: &mut World, history: &mut History| {
            instance += 1;
            let mut p = TxnRun::start(
                world,
                &format!("p{instance}"),
                TXN_ID,
                instance * 1000,
                TXN_SETTINGS,
            );
            p.init(world, history, &mut |_, _| {})
                .expect("init_transactions");
            p
        };
        let mut p = new_producer(&mut world, &mut history);
        let mut retired = Vec::new();
        let mut rounds = 0;
        while (0..PARTITIONS).any(|q| {
            world.cluster.txn.committed(GROUP, INPUT, q).unwrap_or(0)
                < world.cluster.topics[INPUT].partitions[q as usize].next_offset
        }) {
            rounds += 1;
            assert!(rounds < 500, "seed {seed}: the pipeline makes no progress");
            let mut batch = Vec::new();
            world.run_until(Duration::from_millis(200), |w| {
                batch = poll_unlogged(w, &consumer);
                !batch.is_empty()
            });
            if batch.is_empty() {
                continue;
            }
            p.begin(&mut world).expect("begin");
            attempts += 1;
            let mut next: std::collections::BTreeMap<i32, i64> = Default::default();
            for r in &batch {
                let v = r.value.as_deref().unwrap_or_default();
                let out = format!("{}|out|a{attempts}", String::from_utf8_lossy(v));
                loop {
                    match p.send(
                        &mut world,
                        &mut history,
                        TOPIC,
                        Some(r.partition),
                        out.as_bytes(),
                    ) {
                        Ok(true) | Err(_) => break,
                        Ok(false) => world.run_for(Duration::from_millis(1)),
                    }
                }
                next.insert(r.partition, r.offset + 1);
            }
            let offsets = next
                .iter()
                .map(|(&q, &o)| ((INPUT.to_string(), q), o))
                .collect();
            let sent = p.send_offsets(&mut world, &mut history, GROUP, offsets, &mut none);
            let commit = sent.is_ok() && !world.rng().chance(250);
            let ended = if sent.as_ref().is_err_and(|e| e.is_fatal()) {
                p.abandon(&mut history);
                Err(sent.unwrap_err())
            } else {
                p.end(&mut world, &mut history, commit, &mut none)
            };
            match ended {
                Ok(()) if commit => {}
                Err(e) if e.is_fatal() => {
                    assert!(p.fenced_by_code(), "seed {seed}: fatal {e}");
                    let next = new_producer(&mut world, &mut history);
                    retired.push(std::mem::replace(&mut p, next));
                    rewind_to_committed(&mut world, &consumer, admin);
                }
                _ => rewind_to_committed(&mut world, &consumer, admin),
            }
        }
        world.faults_on = false;
        world.cluster.txn.faults_on = false;
        for q in retired.iter_mut().chain(std::iter::once(&mut p)) {
            assert!(q.settle(
                &mut world,
                &mut history,
                Duration::from_secs(300),
                &mut none
            ));
            q.abandon(&mut history);
        }
        // Read the output back: each input's output exactly once in read_committed.
        let mut reader = ConsumeRun::start(
            &mut world,
            &mut history,
            "out-rc",
            TOPIC,
            Isolation::ReadCommitted,
            true,
            &[],
        );
        let mut outputs: Vec<String> = Vec::new();
        let done = world.run_until(Duration::from_secs(60), |w| {
            reader.poll(w, &mut history);
            outputs.extend(reader.last_batch().iter().map(|r| {
                let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string();
                v.split("|out|").next().unwrap_or_default().to_string()
            }));
            reader.caught_up(w)
        });
        assert!(done, "seed {seed}: the output was not read to its end");
        let limit = Duration::from_secs(60);
        drain(
            &mut world,
            &mut history,
            "out-ru",
            TOPIC,
            Isolation::ReadUncommitted,
            limit,
        );
        let verdict = history.check();
        verdict.assert_clean(&format!("seed {seed}"));
        outputs.sort();
        let mut expected: Vec<String> = (0..INPUTS).map(|i| format!("s{seed}-r{i:05}")).collect();
        expected.sort();
        assert_eq!(
            outputs, expected,
            "seed {seed}: each input's output exactly once"
        );
        let ends: Vec<i64> = world.cluster.topics[INPUT]
            .partitions
            .iter()
            .map(|p| p.next_offset)
            .collect();
        let committed = committed_offsets(&mut world, admin, GROUP, INPUT, PARTITIONS);
        assert_eq!(committed, ends, "seed {seed}: the group's offsets");
        total.add(&world, &verdict);
        total.txns_committed += std::iter::once(&p)
            .chain(&retired)
            .map(|q| q.committed)
            .sum::<u64>();
        total.txns_aborted += std::iter::once(&p)
            .chain(&retired)
            .map(|q| q.aborted)
            .sum::<u64>();
    });
    eprintln!("{name}: {total:?}, {attempts} attempts");
    assert!(
        total.txns_aborted > 0 && total.coord.injected_not_coordinator > 0,
        "{total:?}"
    );
}
