//! Real 3-node cluster, chaos run (issue #17 item 3), every adapter in it: while a
//! seeded fault schedule (`kafka_tests::chaos`) kills (`kill -9`) and restarts, pauses
//! (SIGSTOP) and resumes one node at a time and the fault proxy in front of every node
//! resets connections before/after requests, delays frames, caps bandwidth, black-holes
//! a node, leaves a node half-open (requests applied, answers dropped) or cuts
//! everything, these run at once, all through the proxy (`chaos_common/`):
//!
//! - four idempotent producers (acks=all), one per adapter (`kafka-blocking`,
//!   `kafka-tokio`, `kafka-async-std`, `kafka-mio`), each writing its own values (its own
//!   billion: `Adapter::value`) to one 6-partition RF 3 topic (`min.insync.replicas` 2),
//!   every send's outcome kept (acked at an offset, failed, or possibly delivered);
//! - two transactional consume-transform-produce pipelines (`TxnPipeline`,
//!   read_committed, offsets in the transaction), `kafka-blocking`'s and `kafka-tokio`'s,
//!   each copying that topic to its own output topic on its own group and
//!   `transactional.id`; an instance that hits a non-abortable error is dropped and a new
//!   one takes the `transactional.id` over;
//! - two three-member consumer groups on the input of mixed adapters: a classic one
//!   (`kafka-blocking`, `kafka-tokio`, `kafka-async-std`) and a KIP-848 one
//!   (`kafka-blocking`, `kafka-tokio`, `kafka-mio`).
//!
//! Then everything is healed and drained directly (no proxy). The history checker
//! (`sim::history`) judges every producer's sends against complete read_uncommitted and
//! read_committed drains: no acked record lost, none written twice, per-partition send
//! order per producer, no failed send written. Each pipeline: every input record's
//! output exactly once under read_committed (nothing aborted visible, nothing else). The
//! groups: every input record consumed at least once per group, every record a member
//! got is the log's record at that offset, and at no 20 ms sample did two members of a
//! group own a partition — except while one of them had been fenced by the coordinator
//! without knowing it yet (cut off from it by the proxy; the overlap ends with its
//! `Lost`): that zombie window is the protocol's (its commits are refused), printed, not
//! an anomaly.
//!
//! `CHAOS_SEED` replays a schedule (it is printed first), `CHAOS_SECS` sets the fault
//! phase (default 60 s; a long run: `CHAOS_SECS=1800`).

mod chaos_common;
mod group_common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chaos_common::pipelines::{self, Pipe, PipeStats};
use chaos_common::producers::{self, Produced};
use chaos_common::{
    committed, config, drain, env_u64, members, out_value, owners, seen, Adapter, Log, PARTITIONS,
    PATIENCE,
};
use group_common::{unique, Member};
use kafka_blocking::Admin;
use kafka_core::admin::NewTopic;
use kafka_core::group::GroupEvent;
use kafka_tests::chaos::{inject, wait_healthy, HealOnDrop, NodeState, Schedule};
use kafka_tests::fault_proxy::FaultProxy;
use kafka_tests::sim::history::{History, Isolation, Outcome, Verdict};
use kafka_tests::{cluster_or_skip, rig_var};

/// The groups: name, `group.protocol`, and the adapter of each member.
const GROUPS: [(&str, &str, [Adapter; 3]); 2] = [
    (
        "classic",
        "classic",
        [Adapter::Blocking, Adapter::Tokio, Adapter::AsyncStd],
    ),
    (
        "kip848",
        "consumer",
        [Adapter::Blocking, Adapter::Tokio, Adapter::Mio],
    ),
];
/// The adapters with a `TxnPipeline` in the run (`kafka-async-std`'s is the same code
/// as `kafka-tokio`'s, `kafka_driver::async_txn_pipeline!`; `kafka-mio` has none).
const PIPELINES: [Adapter; 2] = [Adapter::Blocking, Adapter::Tokio];

/// One group of the run: its name and its members with their adapters.
struct Group {
    name: String,
    members: Vec<(Adapter, Member)>,
}

/// Per producer: `(sent, acked, failed, possibly delivered, failure reasons)`.
type ProducerFigures = (usize, usize, usize, usize, BTreeMap<String, usize>);

/// Every producer's sends into one history, judged against complete drains of `input`
/// at both isolation levels; also returns the drained log and each producer's figures.
fn judge_producers(
    produced: &[Produced],
    bootstrap: &str,
    input: &str,
) -> (Verdict, Log, Vec<ProducerFigures>) {
    let mut history = History::new();
    let mut figures = Vec::new();
    for p in produced {
        let (mut acked, mut failed, mut unknown) = (0, 0, 0);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for (i, s) in p.sent.iter().enumerate() {
            let partition = (i as u64 % PARTITIONS as u64) as i32;
            let value = p.adapter.value(i as u64).to_string();
            let id = history.send(p.adapter.name(), input, partition, value.as_bytes(), None);
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
        figures.push((p.sent.len(), acked, failed, unknown, reasons));
    }
    let mut log = BTreeMap::new();
    for (isolation, level) in [
        ("read_uncommitted", Isolation::ReadUncommitted),
        ("read_committed", Isolation::ReadCommitted),
    ] {
        let session = history.begin_reads(&format!("drain-{isolation}"), level, true);
        for (p, o, v) in drain(bootstrap, input, isolation) {
            history.read(session, input, p, o, &v);
            log.insert((p, o), v);
        }
    }
    (history.check(), log, figures)
}

/// The pipeline's anomalies: each input value's output exactly once in `out_rc` (its
/// output topic read read_committed), nothing else.
fn judge_pipeline(
    adapter: Adapter,
    values: &BTreeSet<Vec<u8>>,
    out_rc: &[(i32, i64, Vec<u8>)],
) -> Vec<String> {
    let mut anomalies = Vec::new();
    let mut count: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (_, _, v) in out_rc {
        *count.entry(v.as_slice()).or_default() += 1;
    }
    let expected: BTreeSet<Vec<u8>> = values.iter().map(|v| out_value(v)).collect();
    for want in &expected {
        match count.get(want.as_slice()) {
            Some(1) => {}
            got => anomalies.push(format!(
                "{} pipeline: output {} {} times under read_committed",
                adapter.name(),
                String::from_utf8_lossy(want),
                got.unwrap_or(&0)
            )),
        }
    }
    for v in count.keys().filter(|v| !expected.contains(**v)) {
        anomalies.push(format!(
            "{} pipeline: output {} of no input",
            adapter.name(),
            String::from_utf8_lossy(v)
        ));
    }
    anomalies
}

/// Waits until every pipeline committed the input's end offsets and every group
/// consumed every value; an anomaly when not within [`PATIENCE`], or when a member or
/// pipeline thread ended first.
fn catch_up(
    admin: &Admin,
    pipes: &[(Pipe, JoinHandle<PipeStats>)],
    groups: &[Group],
    input: &str,
    log: &Log,
) -> Option<String> {
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
    let started = Instant::now();
    loop {
        let behind_pipes: Vec<String> = pipes
            .iter()
            .filter_map(|(pipe, _)| {
                let at = committed(admin, &pipe.group, input);
                let done = ends
                    .iter()
                    .all(|(p, e)| at.get(p).copied().unwrap_or(0) >= *e);
                (!done).then(|| format!("{} pipeline committed {at:?}", pipe.adapter.name()))
            })
            .collect();
        let behind: Vec<String> = groups
            .iter()
            .filter_map(|g| {
                let got: BTreeSet<Vec<u8>> = g
                    .members
                    .iter()
                    .flat_map(|(_, m)| {
                        let s = seen(&m.seen);
                        s.records
                            .iter()
                            .map(|r| r.2.to_string().into_bytes())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let missing = values.difference(&got).count();
                (missing > 0).then(|| format!("{}: {missing} records not consumed", g.name))
            })
            .collect();
        if behind_pipes.is_empty() && behind.is_empty() {
            println!("caught up in {:.1}s", started.elapsed().as_secs_f64());
            return None;
        }
        let dead: Vec<String> = groups
            .iter()
            .flat_map(|g| {
                g.members.iter().enumerate().map(move |(i, (a, m))| {
                    let gone = m.thread.as_ref().is_none_or(|t| t.is_finished());
                    gone.then(|| format!("{} member {i} ({})", g.name, a.name()))
                })
            })
            .flatten()
            .chain(
                pipes
                    .iter()
                    .filter(|(_, t)| t.is_finished())
                    .map(|(p, _)| format!("{} pipeline", p.adapter.name())),
            )
            .collect();
        if started.elapsed() > PATIENCE || !dead.is_empty() {
            return Some(format!(
                "no catch-up in {:?} (ends {ends:?}): {behind_pipes:?}; {behind:?}; \
                 threads ended: {dead:?}",
                started.elapsed()
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Stops every member and checks what each got against the log; returns per group a
/// line of figures.
fn judge_groups(groups: &mut [Group], log: &Log, anomalies: &mut Vec<String>) -> Vec<String> {
    let mut lines = Vec::new();
    for g in groups {
        let mut per_member = Vec::new();
        for (i, (adapter, m)) in g.members.iter_mut().enumerate() {
            if m.thread.as_ref().is_some_and(|t| t.is_finished()) {
                if let Some(Err(e)) = m.thread.take().map(JoinHandle::join) {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                    anomalies.push(format!(
                        "{} member {i} ({}) ended: {why:?}",
                        g.name,
                        adapter.name()
                    ));
                }
            }
            m.stop(true);
            let s = seen(&m.seen);
            for &(p, o, v) in &s.records {
                if log.get(&(p, o)).map(Vec::as_slice) != Some(v.to_string().as_bytes()) {
                    anomalies.push(format!(
                        "{} member {i} ({}): value {v} at {p}/{o}, not in the log there",
                        g.name,
                        adapter.name()
                    ));
                }
            }
            let count = |kind: fn(&GroupEvent) -> bool| s.events.iter().filter(|e| kind(e)).count();
            per_member.push(format!(
                "{} {} records, {} assigned, {} revoked, {} lost",
                adapter.name(),
                s.records.len(),
                count(|e| matches!(e, GroupEvent::Assigned(_))),
                count(|e| matches!(e, GroupEvent::Revoked(_))),
                count(|e| matches!(e, GroupEvent::Lost(_))),
            ));
        }
        lines.push(format!("group {}: {}", g.name, per_member.join("; ")));
    }
    lines
}

#[test]
fn chaos_every_adapter_producers_txn_pipelines_and_mixed_groups_zero_anomalies() {
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
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime"),
    );

    let input = unique("chaos-in");
    let outputs: Vec<String> = PIPELINES
        .iter()
        .map(|a| unique(&format!("chaos-out-{}", a.name())))
        .collect();
    let admin = Admin::new(config(&[("bootstrap.servers", &bootstrap)])).expect("admin");
    let mut watched = vec![input.clone()];
    watched.extend(outputs.iter().cloned());
    let created = admin
        .create_topics(watched.iter().map(|t| NewTopic::new(t, PARTITIONS, 3)))
        .expect("create topics");
    for (t, r) in &created {
        assert!(r.is_ok(), "create {t}: {r:?}");
    }
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
    let producing: Vec<JoinHandle<Produced>> = Adapter::ALL
        .iter()
        .map(|&adapter| {
            let (v, t, s, rt) = (
                via.clone(),
                input.clone(),
                stop_producing.clone(),
                rt.clone(),
            );
            std::thread::spawn(move || producers::produce(adapter, &v, &t, &s, &rt))
        })
        .collect();
    let stop_pipelines = Arc::new(AtomicBool::new(false));
    let pipes: Vec<(Pipe, JoinHandle<PipeStats>)> = PIPELINES
        .iter()
        .zip(&outputs)
        .map(|(&adapter, output)| {
            let pipe = Pipe {
                adapter,
                input: input.clone(),
                output: output.clone(),
                group: unique(&format!("chaos-pipe-{}", adapter.name())),
            };
            let (p, v, s, rt) = (
                pipe.clone(),
                via.clone(),
                stop_pipelines.clone(),
                rt.clone(),
            );
            let thread = std::thread::spawn(move || pipelines::run(&p, &v, &s, &rt));
            (pipe, thread)
        })
        .collect();
    let mut groups: Vec<Group> = GROUPS
        .iter()
        .map(|(name, protocol, adapters)| {
            let group = unique(&format!("chaos-{name}"));
            let extra = [
                ("group.protocol", *protocol),
                ("reconnect.backoff.max.ms", "500"),
            ];
            let members = adapters
                .iter()
                .map(|&a| (a, members::start(a, &via, &input, &extra, &group, &rt)))
                .collect();
            Group {
                name: name.to_string(),
                members,
            }
        })
        .collect();
    let stop_watch = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let watcher = owners::watch_owners(
        groups
            .iter()
            .map(|g| {
                let ms = g.members.iter();
                let named = ms.map(|(a, m)| (a.name().to_string(), m.seen.clone()));
                (g.name.clone(), named.collect())
            })
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
    let produced: Vec<Produced> = producing
        .into_iter()
        .map(|t| t.join().expect("producer thread"))
        .collect();
    let healed = start.elapsed();
    println!(
        "faults done and healed at {:.1}s; {} records sent",
        start.elapsed().as_secs_f64(),
        produced.iter().map(|p| p.sent.len()).sum::<usize>()
    );

    let (verdict, log, figures) = judge_producers(&produced, &bootstrap, &input);
    let mut anomalies: Vec<String> = verdict.anomalies.iter().map(|a| a.to_string()).collect();
    anomalies.extend(catch_up(&admin, &pipes, &groups, &input, &log));
    stop_pipelines.store(true, Ordering::SeqCst);
    stop_watch.store(true, Ordering::SeqCst);
    let (overlaps, zombies) = watcher.join().expect("owner watcher");
    anomalies.extend(overlaps);
    let group_lines = judge_groups(&mut groups, &log, &mut anomalies);

    let values: BTreeSet<Vec<u8>> = log.values().cloned().collect();
    let mut pipe_lines = Vec::new();
    for ((pipe, thread), output) in pipes.into_iter().zip(&outputs) {
        let stats = thread.join().expect("pipeline thread");
        let out_rc = drain(&bootstrap, output, "read_committed");
        let out_ru = drain(&bootstrap, output, "read_uncommitted");
        anomalies.extend(judge_pipeline(pipe.adapter, &values, &out_rc));
        pipe_lines.push(format!(
            "{} pipeline: {} instances, {} transactions committed ({} input records, re-reads included), {} aborted; output {} read_committed, {} read_uncommitted ({} aborted in the log)",
            pipe.adapter.name(),
            stats.instances,
            stats.transactions,
            stats.records,
            stats.aborted,
            out_rc.len(),
            out_ru.len(),
            out_ru.len().saturating_sub(out_rc.len())
        ));
    }

    println!("chaos summary (CHAOS_SEED={seed}, CHAOS_SECS={secs}):");
    println!(
        "  faults injected: {:?}, skipped (cluster not healthy): {}",
        injected.by_kind, injected.skipped
    );
    println!("  proxy: {:?}", proxy.stats());
    println!(
        "  run: {:.1}s from the first fault's clock start, {:.1}s of it after the producers stopped",
        start.elapsed().as_secs_f64(),
        (start.elapsed() - healed).as_secs_f64()
    );
    for (p, (sent, acked, failed, unknown, reasons)) in produced.iter().zip(&figures) {
        println!(
            "  {} idempotent producer: {sent} sent, {acked} acked, {failed} failed, {unknown} possibly delivered",
            p.adapter.name()
        );
        for (why, n) in reasons {
            println!("    {n} x {why}");
        }
    }
    let mut in_log: BTreeMap<&str, usize> = BTreeMap::new();
    for v in log.values() {
        let adapter = std::str::from_utf8(v)
            .ok()
            .and_then(|v| v.parse().ok())
            .and_then(Adapter::of_value);
        *in_log
            .entry(adapter.map_or("none", Adapter::name))
            .or_default() += 1;
    }
    println!(
        "  checker: {} sends, {} acked, {} reads; input log {} records ({in_log:?})",
        verdict.sends,
        verdict.acked,
        verdict.reads,
        log.len()
    );
    for line in pipe_lines.iter().chain(&group_lines) {
        println!("  {line}");
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
