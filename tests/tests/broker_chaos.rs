//! Real 3-node cluster, chaos run (issue #17 item 3): while a seeded fault schedule
//! (`kafka_tests::chaos`) kills (`kill -9`) and restarts, pauses (SIGSTOP) and resumes
//! one node at a time and the fault proxy in front of every node resets connections
//! before/after requests, delays frames, black-holes a node or cuts everything, these run
//! at once, all through the proxy:
//!
//! - an idempotent producer (acks=all) writing unique values to a 6-partition RF 3
//!   topic (`min.insync.replicas` 2), every send's outcome kept (acked at an offset,
//!   failed, or possibly delivered);
//! - a transactional consume-transform-produce pipeline (`TxnPipeline`, read_committed,
//!   offsets in the transaction) copying that topic to an output topic; an instance that
//!   hits a non-abortable error is dropped and a new one takes the `transactional.id` over;
//! - two three-member consumer groups on the input, one classic, one KIP-848.
//!
//! Then everything is healed and drained directly (no proxy). The history checker
//! (`sim::history`) judges the producer's sends against complete read_uncommitted and
//! read_committed drains: no acked record lost, none written twice, per-partition send
//! order, no failed send written. The pipeline: every input record's output exactly once
//! under read_committed (nothing aborted visible, nothing else). The groups: every input
//! record consumed at least once per group, every record a member got is the log's
//! record at that offset, and at no 20 ms sample did two members of a group own a
//! partition — except while one of them had been fenced by the coordinator without
//! knowing it yet (cut off from it by the proxy; the overlap ends with its `Lost`): that
//! zombie window is the protocol's (its commits are refused), printed, not an anomaly.
//!
//! `CHAOS_SEED` replays a schedule (it is printed first), `CHAOS_SECS` sets the fault
//! phase (default 60 s; a long run: `CHAOS_SECS=1800`).

mod group_common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use group_common::{unique, Member, Seen};
use kafka_blocking::{Admin, Consumer, Error, Producer, Record, TxnPipeline};
use kafka_core::admin::{ListConsumerGroupOffsets, NewTopic};
use kafka_core::config::ClientConfig;
use kafka_core::group::GroupEvent;
use kafka_tests::chaos::{inject, wait_healthy, HealOnDrop, NodeState, Schedule};
use kafka_tests::fault_proxy::FaultProxy;
use kafka_tests::sim::history::{History, Isolation, Outcome};
use kafka_tests::{cluster_or_skip, rig_var};

const PARTITIONS: i32 = 6;
/// The longest any catch-up after the faults may take.
const PATIENCE: Duration = Duration::from_secs(180);

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied()).expect("config")
}

/// What the producer was told per record `i` (value and key `i`, partition `i % 6`):
/// `Ok((partition, offset))`, or `Err((possibly delivered, why))`.
type Sent = Result<(i32, i64), (bool, String)>;

fn produce(via: String, topic: String, stop: Arc<AtomicBool>) -> Vec<Option<Sent>> {
    let producer = Producer::new(config(&[
        ("bootstrap.servers", &via),
        ("acks", "all"),
        ("enable.idempotence", "true"),
        ("linger.ms", "5"),
        ("request.timeout.ms", "5000"),
        ("delivery.timeout.ms", "120000"),
        ("max.block.ms", "120000"),
        ("reconnect.backoff.max.ms", "500"),
    ]))
    .expect("producer");
    let outcomes: Arc<Mutex<Vec<Option<Sent>>>> = Arc::default();
    let mut i: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        for _ in 0..10 {
            let idx = {
                let mut o = outcomes.lock().unwrap();
                o.push(None);
                o.len() - 1
            };
            let p = (i % PARTITIONS as u64) as i32;
            let record = Record::new(topic.as_str(), i.to_string())
                .key(i.to_string())
                .partition(p);
            let o = outcomes.clone();
            let sent = producer.send_with(record, move |r| {
                o.lock().unwrap()[idx] = Some(match r {
                    Ok(m) => Ok((m.partition, m.offset)),
                    Err(e) => Err((e.possibly_delivered(), e.to_string())),
                });
            });
            if let Err(e) = sent {
                // Never staged: never written.
                outcomes.lock().unwrap()[idx] = Some(Err((false, format!("send: {e}"))));
            }
            i += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let metrics = producer.close(Duration::from_secs(150));
    println!("producer closed: {metrics:?}");
    let out = outcomes.lock().unwrap().clone();
    out
}

#[derive(Debug, Default)]
struct PipeStats {
    instances: u32,
    transactions: u64,
    records: u64,
    aborted: u64,
    errors: Vec<String>,
}

fn out_value(v: &[u8]) -> Vec<u8> {
    [b"out-".as_slice(), v].concat()
}

fn pipeline(
    via: String,
    input: String,
    output: String,
    group: String,
    stop: Arc<AtomicBool>,
) -> PipeStats {
    let mut stats = PipeStats::default();
    let txn_id = format!("{group}-tx");
    let note = |stats: &mut PipeStats, what: String| {
        println!("pipeline: {what}");
        if stats.errors.len() < 50 {
            stats.errors.push(what);
        }
    };
    while !stop.load(Ordering::SeqCst) {
        let consumer = config(&[
            ("bootstrap.servers", &via),
            ("group.id", &group),
            ("isolation.level", "read_committed"),
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "10000"),
            ("heartbeat.interval.ms", "1000"),
            ("max.poll.records", "500"),
            ("reconnect.backoff.max.ms", "500"),
        ]);
        let producer = config(&[
            ("bootstrap.servers", &via),
            ("transactional.id", &txn_id),
            ("linger.ms", "5"),
            ("transaction.timeout.ms", "30000"),
            ("request.timeout.ms", "5000"),
            ("reconnect.backoff.max.ms", "500"),
        ]);
        let p = match TxnPipeline::new(consumer, producer, [&input]) {
            Ok(p) => p,
            Err(e) => {
                note(&mut stats, format!("new instance failed: {e}"));
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        stats.instances += 1;
        while !stop.load(Ordering::SeqCst) {
            let r = p.run_once(Duration::from_millis(200), |r, out| {
                let v = r.value.as_deref().unwrap_or_default();
                let record = Record::new(output.as_str(), out_value(v));
                out.push(record.key(r.key.clone().unwrap_or_default()));
            });
            match r {
                Ok(0) => {}
                Ok(n) => {
                    stats.transactions += 1;
                    stats.records += n as u64;
                }
                Err(Error::Transaction(e)) if e.is_abortable() => {
                    stats.aborted += 1;
                    note(&mut stats, format!("aborted and rewound: {e}"));
                }
                Err(e) => {
                    note(&mut stats, format!("instance dropped: {e}"));
                    break;
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            if let Err(e) = p.close() {
                note(&mut stats, format!("close: {e}"));
            }
        }
    }
    stats
}

/// The group's committed offsets of `topic` (empty while unknown).
fn committed(admin: &Admin, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let Ok(mut all) = admin.run(ListConsumerGroupOffsets::new(group)) else {
        return BTreeMap::new();
    };
    let Some(Ok(offsets)) = all.remove(group) else {
        return BTreeMap::new();
    };
    offsets
        .into_iter()
        .filter(|(tp, _)| tp.topic == topic)
        .filter_map(|(tp, r)| Some((tp.partition, r.ok()??.offset)))
        .collect()
}

/// Every record of `topic` as a consumer with `isolation` reads it to the end offsets
/// (high watermark or last stable offset): `(partition, offset, value)`.
fn drain(bootstrap: &str, topic: &str, isolation: &str) -> Vec<(i32, i64, Vec<u8>)> {
    let c = Consumer::new(config(&[
        ("bootstrap.servers", bootstrap),
        ("isolation.level", isolation),
        ("auto.offset.reset", "earliest"),
    ]))
    .expect("reader");
    let parts: Vec<(&str, i32)> = (0..PARTITIONS).map(|p| (topic, p)).collect();
    c.assign(parts.iter().copied()).expect("assign");
    let ends = c
        .end_offsets(parts.iter().copied(), Duration::from_secs(60))
        .expect("end offsets");
    let start = Instant::now();
    let mut out = Vec::new();
    loop {
        for r in c.poll(Duration::from_millis(200)).expect("poll") {
            out.push((r.partition, r.offset, r.value.unwrap_or_default().to_vec()));
        }
        let done = ends.iter().all(|(tp, end)| {
            c.position(topic, tp.partition)
                .expect("position")
                .is_some_and(|p| p >= *end)
        });
        if done {
            break;
        }
        assert!(start.elapsed() < PATIENCE, "{isolation} drain of {topic}");
    }
    c.close().expect("close the reader");
    out
}

/// A member's record, also after its thread panicked holding the lock (the panic is
/// reported on its own).
fn seen(m: &Mutex<Seen>) -> MutexGuard<'_, Seen> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Two members of one group owning a partition at once, sampled every 20 ms: each
/// overlap once, with when it was first and last seen since `start`. An overlap that
/// ends with one of the two reporting the partition `Lost` is the protocol's zombie
/// window, not an anomaly: the coordinator had already dropped (fenced) that member
/// while it could not reach it (its commits are refused), and it learnt so late.
/// Returns `(anomalies, zombie windows)`.
fn watch_owners(
    groups: Vec<(String, Vec<Arc<Mutex<Seen>>>)>,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(Vec<String>, Vec<String>)> {
    std::thread::spawn(move || {
        // (group index, partition, member, member) -> (first seen, last seen, the two
        // members' event counts when it was first seen)
        type Key = (usize, i32, usize, usize);
        let mut open: BTreeMap<Key, (Duration, Duration, usize, usize)> = BTreeMap::new();
        let (mut anomalies, mut zombies) = (Vec::new(), Vec::new());
        let mut close = |k: Key, o: (Duration, Duration, usize, usize), end: bool| {
            let (g, p, j, i) = k;
            let (name, members) = &groups[g];
            let lost_since = |m: usize, from: usize| {
                seen(&members[m]).events[from..]
                    .iter()
                    .any(|e| matches!(e, GroupEvent::Lost(ps) if ps.iter().any(|(_, q)| *q == p)))
            };
            let what = format!(
                "{name}: partition {p} owned by members {j} and {i} at once, seen from {:.2}s to {:.2}s",
                o.0.as_secs_f64(),
                o.1.as_secs_f64()
            );
            if !end && (lost_since(j, o.2) || lost_since(i, o.3)) {
                zombies.push(format!("{what}, ended by a Lost"));
            } else {
                anomalies.push(what);
            }
        };
        let mut stopping = false;
        loop {
            stopping |= stop.load(Ordering::SeqCst);
            let now = start.elapsed();
            let mut current = BTreeSet::new();
            for (g, (_, members)) in groups.iter().enumerate() {
                let mut owner: BTreeMap<i32, usize> = BTreeMap::new();
                for (i, m) in members.iter().enumerate() {
                    let owned = seen(m).owned.clone();
                    for p in owned {
                        if let Some(j) = owner.insert(p, i) {
                            let k = (g, p, j, i);
                            current.insert(k);
                            let counts = (seen(&members[j]).events.len(), seen(m).events.len());
                            let o = open.entry(k).or_insert((now, now, counts.0, counts.1));
                            o.1 = now;
                        }
                    }
                }
            }
            let ended: Vec<Key> = open
                .keys()
                .filter(|k| !current.contains(k))
                .copied()
                .collect();
            for k in ended {
                let o = open.remove(&k).expect("open");
                close(k, o, false);
            }
            if stopping {
                for (k, o) in std::mem::take(&mut open) {
                    close(k, o, true);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (anomalies, zombies)
    })
}

#[test]
fn chaos_idempotent_producer_txn_pipeline_and_groups_zero_anomalies() {
    let Some(_) = cluster_or_skip("broker_chaos") else {
        return;
    };
    let bootstrap = rig_var("KAFKA_CLUSTER_BOOTSTRAP").expect("cluster bootstrap");
    let secs = env_u64("CHAOS_SECS").unwrap_or(60);
    let seed = env_u64("CHAOS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let schedule = Schedule::draw(seed, secs);
    schedule.print();
    let nodes = Arc::new(NodeState::default());
    let _heal = HealOnDrop(nodes.clone());

    let (input, output) = (unique("chaos-in"), unique("chaos-out"));
    let admin = Admin::new(config(&[("bootstrap.servers", &bootstrap)])).expect("admin");
    let created = admin
        .create_topics([
            NewTopic::new(&input, PARTITIONS, 3),
            NewTopic::new(&output, PARTITIONS, 3),
        ])
        .expect("create topics");
    for (t, r) in &created {
        assert!(r.is_ok(), "create {t}: {r:?}");
    }
    let watched = vec![input.clone(), output.clone()];
    wait_healthy(&bootstrap, &watched).expect("a healthy cluster at the start");

    let upstreams: Vec<(i32, String)> = (1..=3)
        .map(|n| {
            (
                n,
                rig_var(&format!("KAFKA_CLUSTER_NODE_{n}")).expect("node"),
            )
        })
        .collect();
    let proxy = FaultProxy::start(&upstreams).expect("proxy");
    let via = proxy.bootstrap();

    let stop_producing = Arc::new(AtomicBool::new(false));
    let producing = {
        let (v, t, s) = (via.clone(), input.clone(), stop_producing.clone());
        std::thread::spawn(move || produce(v, t, s))
    };
    let pipe_group = unique("chaos-pipe");
    let stop_pipeline = Arc::new(AtomicBool::new(false));
    let piping = {
        let (v, i, o, g, s) = (
            via.clone(),
            input.clone(),
            output.clone(),
            pipe_group.clone(),
            stop_pipeline.clone(),
        );
        std::thread::spawn(move || pipeline(v, i, o, g, s))
    };
    let protocols = [("classic", "classic"), ("kip848", "consumer")];
    let mut groups: Vec<(String, Vec<Member>)> = protocols
        .iter()
        .map(|(name, protocol)| {
            let group = unique(&format!("chaos-{name}"));
            let extra = [
                ("group.protocol", *protocol),
                ("reconnect.backoff.max.ms", "500"),
            ];
            let members = (0..3)
                .map(|_| Member::start(&via, &input, &extra, &group))
                .collect();
            (name.to_string(), members)
        })
        .collect();
    let stop_watch = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let watcher = watch_owners(
        groups
            .iter()
            .map(|(n, ms)| (n.clone(), ms.iter().map(|m| m.seen.clone()).collect()))
            .collect(),
        start,
        stop_watch.clone(),
    );

    // The faults, then heal (inject ends healed) and let the workload run on healthy.
    let injected = inject(
        &schedule,
        start,
        &AtomicBool::new(false),
        &proxy,
        &nodes,
        &bootstrap,
        &watched,
    );
    if let Err(e) = wait_healthy(&bootstrap, &watched) {
        println!("after healing: {e}");
    }
    std::thread::sleep(Duration::from_secs(3));
    stop_producing.store(true, Ordering::SeqCst);
    let sent = producing.join().expect("producer thread");
    println!(
        "faults done and healed at {:.1}s; {} records sent",
        start.elapsed().as_secs_f64(),
        sent.len()
    );

    // The producer's history, judged against complete drains at both isolation levels.
    let mut history = History::new();
    let (mut acked, mut failed, mut unknown) = (0, 0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in sent.iter().enumerate() {
        let p = (i as u64 % PARTITIONS as u64) as i32;
        let id = history.send("idempotent", &input, p, i.to_string().as_bytes(), None);
        match s {
            Some(Ok((_, offset))) => {
                acked += 1;
                history.outcome(id, Outcome::Acked { offset: *offset });
            }
            Some(Err((possibly, why))) => {
                *reasons.entry(why.clone()).or_default() += 1;
                if *possibly {
                    unknown += 1;
                    history.outcome(id, Outcome::Indeterminate);
                } else {
                    failed += 1;
                    history.outcome(id, Outcome::Failed);
                }
            }
            None => {} // the checker reports a missing outcome
        }
    }
    let mut log: BTreeMap<(i32, i64), Vec<u8>> = BTreeMap::new();
    for (isolation, level) in [
        ("read_uncommitted", Isolation::ReadUncommitted),
        ("read_committed", Isolation::ReadCommitted),
    ] {
        let session = history.begin_reads(&format!("drain-{isolation}"), level, true);
        for (p, o, v) in drain(&bootstrap, &input, isolation) {
            history.read(session, &input, p, o, &v);
            log.insert((p, o), v);
        }
    }
    let verdict = history.check();
    let mut anomalies: Vec<String> = verdict.anomalies.iter().map(|a| a.to_string()).collect();

    // The pipeline and the groups catch up with the whole input.
    let ends: BTreeMap<i32, i64> = (0..PARTITIONS)
        .map(|p| {
            let end = log
                .range((p, 0)..(p, i64::MAX))
                .last()
                .map_or(0, |((_, o), _)| o + 1);
            (p, end)
        })
        .collect();
    let values: BTreeSet<Vec<u8>> = log.values().cloned().collect();
    let caught_up = Instant::now();
    loop {
        let pipe = committed(&admin, &pipe_group, &input);
        let behind: Vec<String> = groups
            .iter()
            .filter_map(|(name, ms)| {
                let got: BTreeSet<Vec<u8>> = ms
                    .iter()
                    .flat_map(|m| {
                        let s = seen(&m.seen);
                        s.records
                            .iter()
                            .map(|r| r.2.to_string().into_bytes())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let missing = values.difference(&got).count();
                (missing > 0).then(|| format!("{name}: {missing} records not consumed"))
            })
            .collect();
        let pipe_done = ends
            .iter()
            .all(|(p, e)| pipe.get(p).copied().unwrap_or(0) >= *e);
        if pipe_done && behind.is_empty() {
            break;
        }
        let dead: Vec<String> = groups
            .iter()
            .flat_map(|(n, ms)| ms.iter().enumerate().map(move |(i, m)| (n, i, m)))
            .filter(|(_, _, m)| m.thread.as_ref().is_none_or(|t| t.is_finished()))
            .map(|(n, i, _)| format!("{n} member {i}"))
            .collect();
        if caught_up.elapsed() > PATIENCE || !dead.is_empty() || piping.is_finished() {
            anomalies.push(format!(
                "no catch-up in {:?}: pipeline committed {pipe:?} of {ends:?}; {behind:?}; \
                 member threads ended: {dead:?}",
                caught_up.elapsed()
            ));
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!("caught up in {:.1}s", caught_up.elapsed().as_secs_f64());
    stop_pipeline.store(true, Ordering::SeqCst);
    stop_watch.store(true, Ordering::SeqCst);
    let pipe = piping.join().expect("pipeline thread");
    let (overlaps, zombies) = watcher.join().expect("owner watcher");
    anomalies.extend(overlaps);

    // Groups: what every member got is the log's record at that offset.
    let mut group_reads = BTreeMap::new();
    for (name, members) in &mut groups {
        let mut n = 0;
        for (i, m) in members.iter_mut().enumerate() {
            if m.thread.as_ref().is_some_and(|t| t.is_finished()) {
                if let Some(Err(e)) = m.thread.take().map(JoinHandle::join) {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                    anomalies.push(format!("{name} member {i} ended: {why:?}"));
                }
            }
            m.stop(true);
            for &(p, o, v) in &seen(&m.seen).records {
                n += 1;
                if log.get(&(p, o)).map(Vec::as_slice) != Some(v.to_string().as_bytes()) {
                    anomalies.push(format!(
                        "{name} member {i}: value {v} at {p}/{o}, not in the log there"
                    ));
                }
            }
        }
        let events = |kind: fn(&GroupEvent) -> bool| -> usize {
            members
                .iter()
                .map(|m| seen(&m.seen).events.iter().filter(|e| kind(e)).count())
                .sum()
        };
        let (assigned, revoked, lost) = (
            events(|e| matches!(e, GroupEvent::Assigned(_))),
            events(|e| matches!(e, GroupEvent::Revoked(_))),
            events(|e| matches!(e, GroupEvent::Lost(_))),
        );
        group_reads.insert(
            name.clone(),
            format!("{n} records, events: {assigned} assigned, {revoked} revoked, {lost} lost"),
        );
    }

    // Pipeline: each input's output exactly once under read_committed, nothing else.
    let out_rc = drain(&bootstrap, &output, "read_committed");
    let out_ru = drain(&bootstrap, &output, "read_uncommitted");
    let mut count: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (_, _, v) in &out_rc {
        *count.entry(v.as_slice()).or_default() += 1;
    }
    let expected: BTreeSet<Vec<u8>> = values.iter().map(|v| out_value(v)).collect();
    for want in &expected {
        match count.get(want.as_slice()) {
            Some(1) => {}
            got => anomalies.push(format!(
                "pipeline: output {} {} times under read_committed",
                String::from_utf8_lossy(want),
                got.unwrap_or(&0)
            )),
        }
    }
    for v in count.keys().filter(|v| !expected.contains(**v)) {
        anomalies.push(format!(
            "pipeline: output {} of no input",
            String::from_utf8_lossy(v)
        ));
    }

    println!("chaos summary (CHAOS_SEED={seed}, CHAOS_SECS={secs}):");
    println!(
        "  faults injected: {:?}, skipped (cluster not healthy): {}",
        injected.by_kind, injected.skipped
    );
    println!("  proxy: {:?}", proxy.stats());
    println!(
        "  idempotent producer: {} sent, {acked} acked, {failed} failed, {unknown} possibly delivered",
        sent.len()
    );
    for (why, n) in &reasons {
        println!("    {n} x {why}");
    }
    println!(
        "  checker: {} sends, {} acked, {} reads; input log {} records",
        verdict.sends,
        verdict.acked,
        verdict.reads,
        log.len()
    );
    println!(
        "  pipeline: {} instances, {} transactions committed ({} input records, re-reads included), {} aborted; output {} read_committed, {} read_uncommitted ({} aborted in the log)",
        pipe.instances,
        pipe.transactions,
        pipe.records,
        pipe.aborted,
        out_rc.len(),
        out_ru.len(),
        out_ru.len().saturating_sub(out_rc.len())
    );
    for (name, what) in &group_reads {
        println!("  group {name}: {what}");
    }
    println!(
        "  zombie windows (a member fenced by the coordinator still owning until it learnt so): {}",
        zombies.len()
    );
    for z in &zombies {
        println!("    {z}");
    }
    println!("  anomalies={}", anomalies.len());
    for a in anomalies.iter().take(30) {
        println!("    {a}");
    }
    assert!(
        anomalies.is_empty(),
        "CHAOS_SEED={seed}: {} anomalies",
        anomalies.len()
    );
}
