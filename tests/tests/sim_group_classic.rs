//! Consumer groups on the simulated cluster through rebalances racing commits (F13) and
//! a member killed with `kill -9` and restarted (F14), for the classic protocol (the
//! core's `GroupConsumer` with JoinGroup, the leader's assignment, SyncGroup, Heartbeat,
//! LeaveGroup against `sim/classic_state.rs`) and for KIP-848 (`sim/group_state.rs`).
//! Each seed: a 4-partition topic written while members consume it with automatic
//! commits (every 40 ms and on revoke) and commits of their own (every 60–200 ms, and of
//! the revoked partitions when a revocation is announced); classic seeds alternate the
//! eager `range` and the cooperative `cooperative-sticky` assignors. Replay one seed
//! with `SIM_SEED=<n>`; `SIM_SEEDS=<count>` for more (`SIM_SEEDS=100000` is the 100x
//! run).
//!
//! Judged at every step: no partition owned by two live members, no committed offset
//! moving back, a commit reported OK is in the coordinator (the committed offset at
//! least the one it carried), a partition revoked cleanly (its commit not refused)
//! arrives at its next owner with the revoking member's position committed. At the end:
//! every record read, the committed offsets at the log ends. F14 also: a record read
//! twice only if the killed member read it at or past its last committed offset (the
//! uncommitted tail), unless some commit was refused.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_core::group::GroupEvent;
use kafka_core::protocol::ApiKey;
use kafka_tests::sim::grouping::GroupRun;
use kafka_tests::sim::history::History;
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::txn_state::CoordFaults;
use kafka_tests::sim::world::{ClusterEvent, NetFaults, World};

const TOPIC: &str = "t";
const GROUP: &str = "g";
const PARTITIONS: i32 = 4;
const SEEDS: u64 = 1000;
const RECORDS: usize = 48;

/// Settings of every member (both protocols): automatic commits every 40 ms, small
/// fetches so reading lasts while membership changes, fast retries.
const MEMBER: &[(&str, &str)] = &[
    ("enable.auto.commit", "true"),
    ("auto.commit.interval.ms", "40"),
    ("max.poll.records", "3"),
    ("max.partition.fetch.bytes", "200"),
    ("fetch.max.wait.ms", "50"),
    ("request.timeout.ms", "1000"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "1000"),
];

/// Classic members: a 1.2 s session, 150 ms heartbeats, a 2 s rebalance timeout.
const CLASSIC: &[(&str, &str)] = &[
    ("group.protocol", "classic"),
    ("session.timeout.ms", "1200"),
    ("heartbeat.interval.ms", "150"),
    ("max.poll.interval.ms", "2000"),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Protocol {
    Classic,
    Consumer,
}

#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    generations: u64,
    member_ids_required: u64,
    expired: u64,
    dropped_at_join: u64,
    heartbeat_rebalancing: u64,
    commits_ok: u64,
    commits_checked: u64,
    commits_failed: u64,
    refused: BTreeMap<i16, u64>,
    injected: BTreeMap<i16, u64>,
    revocations_checked: u64,
    reread: usize,
    tail_rereads: usize,
    answers_lost: u64,
    coordinator_moves: u64,
    reloads: u64,
    virtual_ms: u128,
}

/// `SIM_VERBOSE` set: print every event and every change of the classic group.
fn verbose() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SIM_VERBOSE").is_ok())
}

/// Offsets of a commit: `((topic, partition), offset)`.
type Offsets = Vec<((String, i32), i64)>;

/// Who read each record: `(partition, offset)` → (its value, the readers).
type Readers<'a> = BTreeMap<(i32, i64), (&'a [u8], Vec<&'a str>)>;

/// A member with the scenario's own bookkeeping.
struct Member {
    run: GroupRun,
    seen: usize,
    next_commit_ms: u128,
    /// Explicit commits in flight: id's debug form → offsets.
    commits: BTreeMap<String, Offsets>,
    failed_commits: u64,
    /// Records it had handed out when the application closed it (it hands out no more).
    read_at_close: Option<usize>,
}

struct Judge {
    seed: u64,
    committed: BTreeMap<(String, String, i32), i64>,
    /// A clean revocation waiting for the partition's next owner: (member, position).
    revoked: BTreeMap<i32, (String, i64)>,
    checked_commits: u64,
    checked_revocations: u64,
    commit_failures: u64,
}

fn committed(w: &World, p: i32) -> Option<i64> {
    w.cluster.txn.committed(GROUP, TOPIC, p)
}

impl Judge {
    fn check(&mut self, w: &mut World, members: &[Member]) {
        let seed = self.seed;
        let mut owners: BTreeMap<(String, i32), &str> = BTreeMap::new();
        for m in members {
            if let Some(n) = m.read_at_close {
                // Closed by the application: it processes nothing more (its
                // `assignment()` still lists the partitions until the LeaveGroup answer;
                // the coordinator may have handed them on already).
                assert_eq!(
                    m.run.read.len(),
                    n,
                    "seed {seed}: {} handed out records after close",
                    m.run.name
                );
                continue;
            }
            for tp in m.run.owned(w) {
                if let Some(other) = owners.insert(tp.clone(), &m.run.name) {
                    panic!(
                        "seed {seed} at {:?}: {tp:?} owned by {other} and {} at once",
                        w.elapsed(),
                        m.run.name
                    );
                }
            }
        }
        for (k, &(o, _)) in &w.cluster.txn.group_offsets {
            let old = self.committed.insert(k.clone(), o);
            assert!(
                old.is_none_or(|old| old <= o),
                "seed {seed} at {:?}: the committed offset of {k:?} went back from {old:?} to {o}",
                w.elapsed()
            );
        }
    }

    /// Reads a member's new events: commit results checked against the coordinator,
    /// revocations remembered and checked at the next assignment.
    fn events(&mut self, w: &mut World, m: &mut Member) {
        let seed = self.seed;
        let new: Vec<GroupEvent> = m.run.events[m.seen..].to_vec();
        m.seen = m.run.events.len();
        if verbose() {
            for e in &new {
                let g = w.cluster.classic.groups.get(GROUP);
                eprintln!(
                    "{:?} {}: {e:?} (coordinator: {:?} gen {:?}, moves {})",
                    w.elapsed(),
                    m.run.name,
                    g.map(|g| g.state),
                    g.map(|g| g.generation),
                    w.cluster.txn.counters.moves
                );
            }
        }
        for e in new {
            match e {
                GroupEvent::Committed { id, result } => {
                    let offsets = m.commits.remove(&format!("{id:?}"));
                    match result {
                        Ok(()) => {
                            for ((_, p), o) in offsets.into_iter().flatten() {
                                self.checked_commits += 1;
                                let c = committed(w, p);
                                assert!(
                                    c.is_some_and(|c| c >= o),
                                    "seed {seed}: {} was told its commit of p{p} at {o} \
                                     succeeded; the coordinator has {c:?}",
                                    m.run.name
                                );
                            }
                        }
                        Err(_) => {
                            m.failed_commits += 1;
                            self.commit_failures += 1;
                            self.revoked.retain(|_, (who, _)| *who != m.run.name);
                        }
                    }
                }
                GroupEvent::Revoked(tps) => {
                    // The application commits what it read of them (commit on revoke).
                    let now = w.now();
                    let offsets: Vec<((String, i32), i64)> = w.clients[m.run.client]
                        .command(now, m.run.op, |g, _| {
                            tps.iter()
                                .filter_map(|(t, p)| {
                                    Some(((t.to_string(), *p), g.position(t, *p)?))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    for ((_, p), o) in &offsets {
                        self.revoked.insert(*p, (m.run.name.clone(), *o));
                    }
                    commit(w, m, offsets);
                }
                GroupEvent::Lost(_) => {
                    self.revoked.retain(|_, (who, _)| *who != m.run.name);
                }
                GroupEvent::Assigned(tps) => {
                    for (_, p) in tps {
                        if let Some((who, at)) = self.revoked.remove(&p) {
                            self.checked_revocations += 1;
                            let c = committed(w, p);
                            assert!(
                                c.is_some_and(|c| c >= at),
                                "seed {seed}: p{p} revoked by {who} at position {at} reached \
                                 {} with {c:?} committed",
                                m.run.name
                            );
                        }
                    }
                }
                GroupEvent::Failed(f) => panic!("seed {seed}: {} failed: {f}", m.run.name),
                _ => {}
            }
        }
    }
}

/// An explicit commit of `offsets`, remembered for the judge.
fn commit(w: &mut World, m: &mut Member, offsets: Vec<((String, i32), i64)>) {
    if offsets.is_empty() {
        return;
    }
    let now = w.now();
    let list: Vec<_> = offsets
        .iter()
        .map(|((t, p), o)| ((std::sync::Arc::<str>::from(t.as_str()), *p), *o))
        .collect();
    let id = w.clients[m.run.client].command(now, m.run.op, |g, cx| g.commit(cx, list));
    if let Some(id) = id {
        m.commits.insert(format!("{id:?}"), offsets);
    }
}

/// Polls every member, reads their events, commits on their schedules, judges.
fn tick(w: &mut World, members: &mut [Member], judge: &mut Judge) {
    let now_ms = w.elapsed().as_millis();
    if verbose() {
        let view = w.cluster.classic.groups.get(GROUP).map(|g| {
            let ms: Vec<(String, bool, bool, u64)> = g
                .members
                .iter()
                .map(|(id, m)| {
                    (
                        id.clone(),
                        m.join_ticket.is_some(),
                        m.sync_ticket.is_some(),
                        m.last_seen_ms,
                    )
                })
                .collect();
            format!(
                "{:?} gen {} leader {:?} members {ms:?} pending {:?} counters {:?}",
                g.state, g.generation, g.leader, g.pending, w.cluster.classic.counters
            )
        });
        thread_local!(static LAST: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) });
        LAST.with(|l| {
            if *l.borrow() != view {
                eprintln!("{:?} coordinator: {view:?}", w.elapsed());
                *l.borrow_mut() = view;
            }
        });
    }
    for m in members.iter_mut() {
        m.run.poll(w);
        if m.run.done || m.run.killed {
            continue;
        }
        judge.events(w, m);
        if now_ms >= m.next_commit_ms {
            m.next_commit_ms = now_ms + 60 + u128::from(w.rng().below(140));
            let now = w.now();
            let offsets: Vec<((String, i32), i64)> = w.clients[m.run.client]
                .command(now, m.run.op, |g, _| {
                    g.assignment()
                        .into_iter()
                        .filter_map(|(t, p)| Some(((t.to_string(), p), g.position(&t, p)?)))
                        .collect()
                })
                .unwrap_or_default();
            commit(w, m, offsets);
        }
    }
    judge.check(w, members);
}

fn start(w: &mut World, name: &str, protocol: Protocol, assignor: &str, long: bool) -> Member {
    let mut pairs: Vec<(&str, &str)> = MEMBER.to_vec();
    match protocol {
        Protocol::Classic => {
            pairs.extend_from_slice(CLASSIC);
            pairs.push(("partition.assignment.strategy", assignor));
            if long {
                // A session longer than the rebalance timeout: a silent member is
                // dropped at the end of the join phase, before its session expires.
                pairs.push(("session.timeout.ms", "2500"));
            }
        }
        Protocol::Consumer => pairs.push(("group.protocol", "consumer")),
    }
    Member {
        run: GroupRun::start(w, name, GROUP, &[TOPIC], &pairs),
        seen: 0,
        next_commit_ms: 0,
        commits: BTreeMap::new(),
        failed_commits: 0,
        read_at_close: None,
    }
}

/// The membership story of a seed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Story {
    /// F13: members join and close while commits run; commit answers lost and refused.
    RebalanceDuringCommit,
    /// F14: a member is killed and a new one started in its place.
    KillAndRestart,
}

/// One seed; the world's trace digest at the end.
fn run(seed: u64, protocol: Protocol, story: Story, sweep: &mut Sweep) -> (u64, u64) {
    let mut w = World::new(seed, 3);
    w.cluster.create_topic(TOPIC, PARTITIONS);
    w.cluster.classic.initial_delay_ms = w.rng().below(100);
    w.cluster.groups.heartbeat_interval_ms = 150;
    w.cluster.groups.session_timeout_ms = 1_200;
    // KIP-848 targets at most every 100 ms (Kafka's `group.consumer.assignment.interval.ms`,
    // 1 s by default): the stories' joins, closes and kills come 0.1-0.6 s apart, and the
    // commits must race the rebalances they cause, not wait a second for them.
    w.cluster.groups.assignment_interval_ms = 100;
    let assignor = if seed.is_multiple_of(2) {
        "range"
    } else {
        "cooperative-sticky"
    };
    let long = story == Story::KillAndRestart && seed % 4 >= 2;
    if story == Story::RebalanceDuringCommit && seed.is_multiple_of(3) {
        // The group's coordinator broker dies and comes back: parked joins and syncs
        // are answered NOT_COORDINATOR, the group reloads as last persisted; and
        // injected coordinator errors.
        let coordinator = w.cluster.coordinator_of(GROUP).expect("a coordinator");
        let at = 100 + w.rng().below(1_500);
        let down = 100 + w.rng().below(1_000);
        w.schedule(Duration::from_millis(at), ClusterEvent::Kill(coordinator));
        w.schedule(
            Duration::from_millis(at + down),
            ClusterEvent::Restart(coordinator),
        );
        w.cluster.txn.faults = CoordFaults {
            not_coordinator: 30,
            loading: 30,
            lookup_unavailable: 30,
            load_ms: 100,
            ..Default::default()
        };
        w.cluster.txn.faults_on = true;
    }
    if story == Story::RebalanceDuringCommit {
        // Commit, join, sync and heartbeat answers lost or their requests dropped;
        // valid commits refused now and then as if a rebalance had just happened.
        w.cluster.classic.commit_faults = 60;
        w.cluster.classic.commit_faults_on = true;
        w.faults = NetFaults {
            lose_answer: 40,
            reset_before: 20,
            apis: Some(vec![
                ApiKey::OffsetCommit,
                ApiKey::JoinGroup,
                ApiKey::SyncGroup,
                ApiKey::Heartbeat,
                ApiKey::ConsumerGroupHeartbeat,
            ]),
            ..Default::default()
        };
        w.faults_on = true;
    }
    let mut history = History::new();
    let mut judge = Judge {
        seed,
        committed: BTreeMap::new(),
        revoked: BTreeMap::new(),
        checked_commits: 0,
        checked_revocations: 0,
        commit_failures: 0,
    };
    let initial = if story == Story::KillAndRestart { 2 } else { 3 };
    let mut members: Vec<Member> = (1..=initial)
        .map(|i| start(&mut w, &format!("m{i}"), protocol, assignor, long))
        .collect();
    let mut p = ProduceRun::start(&mut w, "p1", SCENARIO_SETTINGS);
    let victim = w.rng().below(initial as u64) as usize;
    let mut tail_from: BTreeMap<i32, i64> = BTreeMap::new();
    let phases = 3;
    for phase in 0..phases {
        let prefix = format!("s{seed}-q{phase}");
        p.send_all(
            &mut w,
            &mut history,
            TOPIC,
            RECORDS / phases,
            &prefix,
            |w, _| tick(w, &mut members, &mut judge),
        );
        let pause = Duration::from_millis(100 + w.rng().below(500));
        let t0 = w.elapsed();
        w.run_until(pause, |w| {
            tick(w, &mut members, &mut judge);
            w.elapsed() >= t0 + pause
        });
        match (story, phase) {
            (Story::RebalanceDuringCommit, 0) => {
                members.push(start(&mut w, "m4", protocol, assignor, long));
            }
            (Story::RebalanceDuringCommit, 1) => {
                let closer = w.rng().below(3) as usize;
                members[closer].read_at_close = Some(members[closer].run.read.len());
                members[closer].run.close(&mut w);
            }
            (Story::RebalanceDuringCommit, _) => {
                members.push(start(&mut w, "m5", protocol, assignor, long));
            }
            (Story::KillAndRestart, 0) => {
                // kill -9: no commit, no LeaveGroup; the records it read past the
                // committed offsets of what it owned are the only ones read twice.
                let owned = members[victim].run.owned(&mut w);
                for (_, p) in owned {
                    tail_from.insert(p, committed(&w, p).unwrap_or(0));
                }
                members[victim].run.kill(&mut w);
                let name = format!("m{}-restarted", victim + 1);
                members.push(start(&mut w, &name, protocol, assignor, long));
            }
            (Story::KillAndRestart, _) => {}
        }
    }
    // Heal.
    w.faults_on = false;
    w.cluster.classic.commit_faults_on = false;
    w.cluster.txn.faults_on = false;
    let settled = p.settle(&mut w, &mut history, Duration::from_secs(60), |w, _| {
        tick(w, &mut members, &mut judge)
    });
    assert!(
        settled,
        "seed {seed}: {} records unresolved",
        p.outstanding()
    );
    assert_eq!(
        p.acked,
        RECORDS / phases * phases,
        "seed {seed}: acknowledged"
    );
    let ends: Vec<i64> = w.cluster.topics[TOPIC]
        .partitions
        .iter()
        .map(|p| p.next_offset)
        .collect();
    let done = w.run_until(Duration::from_secs(60), |w| {
        tick(w, &mut members, &mut judge);
        (0..PARTITIONS).all(|p| committed(w, p) == Some(ends[p as usize]))
    });
    let now: Vec<Option<i64>> = (0..PARTITIONS).map(|p| committed(&w, p)).collect();
    assert!(
        done,
        "seed {seed}: committed offsets {now:?} never reached the log ends {ends:?}"
    );
    // Every record read at least once, with the value written at its offset.
    let mut read: Readers = BTreeMap::new();
    let mut reads = 0;
    for m in &members {
        for (_, partition, offset, value) in &m.run.read {
            reads += 1;
            let e = read
                .entry((*partition, *offset))
                .or_insert((value, Vec::new()));
            assert_eq!(
                e.0, value,
                "seed {seed}: two values at p{partition} {offset}"
            );
            e.1.push(&m.run.name);
        }
    }
    for (p, &end) in ends.iter().enumerate() {
        let missing: BTreeSet<i64> = (0..end)
            .filter(|o| !read.contains_key(&(p as i32, *o)))
            .collect();
        assert!(
            missing.is_empty(),
            "seed {seed}: p{p} never consumed: {missing:?}"
        );
    }
    if story == Story::KillAndRestart {
        let victim_name = members[victim].run.name.clone();
        for ((p, o), (_, readers)) in &read {
            if readers.len() < 2 {
                continue;
            }
            let tail = tail_from.get(p).is_some_and(|from| o >= from)
                && readers.contains(&victim_name.as_str());
            if tail {
                sweep.tail_rereads += 1;
            }
            assert!(
                tail || judge.commit_failures > 0,
                "seed {seed}: p{p} {o} read by {readers:?}, not in the killed member's \
                 uncommitted tail (from {:?}), no commit refused",
                tail_from.get(p)
            );
        }
    }
    let c = &w.cluster.classic.counters;
    sweep.runs += 1;
    sweep.generations += c.generations;
    sweep.member_ids_required += c.member_id_required;
    sweep.expired += c.expired + w.cluster.groups.counters.expired;
    sweep.dropped_at_join += c.dropped_at_join;
    sweep.heartbeat_rebalancing += c.rebalancing;
    for (k, v) in &c.commits_refused {
        *sweep.refused.entry(*k).or_default() += v;
    }
    for (k, v) in &c.commits_injected {
        *sweep.injected.entry(*k).or_default() += v;
    }
    sweep.commits_ok += c.commits + w.cluster.groups.counters.commits;
    sweep.commits_checked += judge.checked_commits;
    sweep.commits_failed += judge.commit_failures;
    sweep.revocations_checked += judge.checked_revocations;
    sweep.reread += reads - read.len();
    sweep.answers_lost += w.net.answers_lost + w.net.requests_dropped;
    sweep.coordinator_moves += w.cluster.txn.counters.moves;
    sweep.reloads += c.reloads;
    sweep.virtual_ms += w.elapsed().as_millis();
    w.trace()
}

fn sweep(name: &str, protocol: Protocol, story: Story) -> Sweep {
    let mut total = Sweep::default();
    for_each_seed(name, SEEDS, |seed| {
        run(seed, protocol, story, &mut total);
    });
    eprintln!("{name}: {total:?}");
    total
}

/// F13, classic: three members, a fourth joins, one closes, a fifth joins, while every
/// member commits (automatically, on its own schedule and on revoke); commit, join,
/// sync and heartbeat answers lost; valid commits refused REBALANCE_IN_PROGRESS,
/// ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID now and then.
#[test]
fn f13_classic_rebalances_race_commits_without_losing_or_rewinding_offsets() {
    let t = sweep(
        "f13_classic_rebalances_race_commits_without_losing_or_rewinding_offsets",
        Protocol::Classic,
        Story::RebalanceDuringCommit,
    );
    let refused = |code: i16| t.refused.get(&code).copied().unwrap_or(0);
    assert!(
        t.runs < 50
            || (t.generations > 3 * t.runs
                && t.member_ids_required >= 4 * t.runs
                && t.revocations_checked > t.runs
                && t.commits_checked > 10 * t.runs
                && t.injected.len() == 3
                && refused(27) + refused(22) + refused(25) > 0
                && t.answers_lost > t.runs
                && t.reloads > t.runs / 3),
        "{t:?}"
    );
}

/// F13, KIP-848: the same story (no injected refusals: they are classic codes).
#[test]
fn f13_kip848_rebalances_race_commits_without_losing_or_rewinding_offsets() {
    let t = sweep(
        "f13_kip848_rebalances_race_commits_without_losing_or_rewinding_offsets",
        Protocol::Consumer,
        Story::RebalanceDuringCommit,
    );
    assert!(
        t.runs < 50 || (2 * t.revocations_checked > t.runs && t.commits_checked > 10 * t.runs),
        "{t:?}"
    );
}

/// F14, classic: two members; one is killed (no LeaveGroup, no last commit) and a new
/// one started in the group; the killed member's session expires.
#[test]
fn f14_classic_a_killed_member_rereads_only_its_uncommitted_tail() {
    let t = sweep(
        "f14_classic_a_killed_member_rereads_only_its_uncommitted_tail",
        Protocol::Classic,
        Story::KillAndRestart,
    );
    assert!(
        t.runs < 50
            || (t.expired + t.dropped_at_join >= t.runs
                && t.expired > 0
                && t.dropped_at_join > 0
                && t.tail_rereads > 0),
        "{t:?}"
    );
}

/// F14, KIP-848: the same story.
#[test]
fn f14_kip848_a_killed_member_rereads_only_its_uncommitted_tail() {
    let t = sweep(
        "f14_kip848_a_killed_member_rereads_only_its_uncommitted_tail",
        Protocol::Consumer,
        Story::KillAndRestart,
    );
    assert!(
        t.runs < 50 || (t.expired >= t.runs && t.tail_rereads > 0),
        "{t:?}"
    );
}

/// One seed gives one trace (every connect, request, parked join, answer, timer and
/// kill), faults and all; another seed another.
#[test]
fn a_classic_group_seed_replays_exactly_and_seeds_differ() {
    let mut sweep = Sweep::default();
    for story in [Story::RebalanceDuringCommit, Story::KillAndRestart] {
        let a = run(7, Protocol::Classic, story, &mut sweep);
        let b = run(7, Protocol::Classic, story, &mut sweep);
        let c = run(8, Protocol::Classic, story, &mut sweep);
        assert_eq!(a, b, "seed 7 ran twice differently");
        assert_ne!(a, c, "seeds 7 and 8 ran alike");
    }
}
