//! Consumer groups through the real adapters against the simulated cluster on loopback
//! sockets (`kafka_tests::sim::serve`, which serves parked classic JoinGroup/SyncGroup
//! requests and long-poll fetches in real time): for each adapter (blocking, tokio,
//! async-std, mio) three members of one group — classic protocol (`range`, eager) and
//! KIP-848 (`group.protocol=consumer`) — consume a 3-broker cluster's topic, records
//! appended while they run, under a seeded fault schedule whose resets and kills aim at
//! the group's coordinator half the time (a kill or restart moves the coordinator), with
//! leader moves besides. Auto-commit is on (every 100 ms and on revocation).
//!
//! Checked, for every seed:
//! - every record is handed out at least once (the faults may repeat some);
//! - every record a member is handed is of a partition it owns (its listener's view);
//! - no two members own a partition at once, except when the earlier owner's ownership
//!   ends with `Lost` (a member fenced or expired keeps believing until it hears so:
//!   the protocols' documented window); ownership is stamped when the listener runs;
//! - the coordinator never accepted a commit lower than the one it replaced, nor one past
//!   the partition's log end (the simulated coordinator counts both);
//! - after the faults stop, the group settles: every partition owned by exactly one
//!   member, the committed offsets at the log end, the classic group Stable with its
//!   three members.
//!
//! `SIM_ADAPTER_SEED` replays a fault schedule (it is printed); `SIM_GROUP_FAULT_MS`
//! (default 1500) sets how long the faults run. More seeds:
//! `for i in $(seq 20); do cargo test -p kafka-tests --test sim_adapters_groups; done`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::config::ClientConfig;
use kafka_core::record::{BatchBuilder, BatchOptions};
use kafka_driver::group::Rebalance;
use kafka_tests::sim::classic_state::ClassicState;
use kafka_tests::sim::cluster::{SimCluster, StoredBatch};
use kafka_tests::sim::serve::{schedule_seed, FaultPlan, Faults, SimServer};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
/// Records in each partition before the members start.
const PREFILL: usize = 200;
/// Records per batch appended while the faults run (one batch every 20 ms).
const APPEND: usize = 20;
/// The longest the group may take to settle once the faults stop.
const SETTLE: Duration = Duration::from_secs(40);

fn fault_ms() -> u64 {
    std::env::var("SIM_GROUP_FAULT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000)
}

/// Events a listener saw, stamped when it ran.
type Stamped = Arc<Mutex<Vec<(Instant, Rebalance)>>>;

/// One member as the test drives it (round robin on the test's thread).
trait Member {
    /// One poll: the records handed out, `(partition, offset)`.
    fn poll(&mut self, timeout: Duration) -> Vec<(i32, i64)>;
    /// The listener's events since the last call.
    fn take_events(&mut self) -> Vec<(Instant, Rebalance)>;
    /// Closes (commits and leaves).
    fn close(&mut self);
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Classic,
    Consumer,
}

fn config(bootstrap: &str, group: &str, protocol: Protocol) -> ClientConfig {
    let mut pairs = vec![
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "true"),
        ("auto.commit.interval.ms", "100"),
        ("heartbeat.interval.ms", "300"),
        ("max.poll.records", "200"),
        ("max.poll.interval.ms", "10000"),
        ("fetch.max.wait.ms", "100"),
        ("request.timeout.ms", "2000"),
        ("retry.backoff.ms", "20"),
        ("retry.backoff.max.ms", "200"),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "200"),
        ("metadata.max.age.ms", "1000"),
    ];
    match protocol {
        Protocol::Classic => {
            pairs.push(("group.protocol", "classic"));
            pairs.push(("session.timeout.ms", "6000"));
            pairs.push(("partition.assignment.strategy", "range"));
        }
        Protocol::Consumer => pairs.push(("group.protocol", "consumer")),
    }
    ClientConfig::from_pairs(pairs).expect("member config")
}

/// Appends `n` records to `partition` (one batch).
fn append(server: &SimServer, partition: i32, n: usize) {
    server.with_cluster(|c| {
        let p = &mut c.topics.get_mut(TOPIC).expect("topic").partitions[partition as usize];
        let base = p.next_offset;
        let opts = BatchOptions {
            base_offset: base,
            ..Default::default()
        };
        let mut b = BatchBuilder::new(opts, usize::MAX).expect("builder");
        for i in 0..n {
            let value = format!("p{partition}-{}", base + i as i64);
            let _ = b
                .append(1, None, Some(value.as_bytes()), &[])
                .expect("append");
        }
        let bytes: Bytes = b.seal().expect("seal").bytes.freeze();
        let last = base + n as i64 - 1;
        p.log.push(StoredBatch { base, last, bytes });
        p.next_offset = last + 1;
    });
}

/// Ownership as the listeners report it, checked for overlaps as it changes.
#[derive(Default)]
struct Ownership {
    /// Each member's partitions now.
    views: Vec<BTreeSet<i32>>,
    /// Overlaps not yet excused: `(partition, earlier owner, later owner)`; excused when
    /// the earlier owner's ownership ends in `Lost`.
    overlaps: Vec<(i32, usize, usize)>,
    /// Overlaps whose earlier owner ended with `Revoked` (or never ended): violations.
    violations: Vec<String>,
    /// Every event, in stamp order, for the failure report.
    log: Vec<(Instant, usize, Rebalance)>,
}

impl Ownership {
    fn new(members: usize) -> Ownership {
        Ownership {
            views: vec![BTreeSet::new(); members],
            ..Default::default()
        }
    }

    /// Applies events in stamp order (all members' together).
    fn apply(&mut self, mut events: Vec<(Instant, usize, Rebalance)>) {
        events.sort_by_key(|(t, m, _)| (*t, *m));
        for (t, m, e) in events {
            match &e {
                Rebalance::Assigned(ps) => {
                    for (_, p) in ps {
                        for (other, view) in self.views.iter().enumerate() {
                            if other != m && view.contains(p) {
                                self.overlaps.push((*p, other, m));
                            }
                        }
                        self.views[m].insert(*p);
                    }
                }
                Rebalance::Revoked(ps) | Rebalance::Lost(ps) => {
                    let lost = matches!(e, Rebalance::Lost(_));
                    for (_, p) in ps {
                        self.views[m].remove(p);
                        let (ended, rest): (Vec<_>, Vec<_>) = self
                            .overlaps
                            .iter()
                            .partition(|(op, earlier, _)| op == p && *earlier == m);
                        if !lost {
                            for (p, earlier, later) in ended {
                                self.violations.push(format!(
                                    "partition {p}: member {later} was assigned it while member {earlier} owned it (revoked only later)"
                                ));
                            }
                        }
                        self.overlaps = rest;
                    }
                }
                _ => {}
            }
            self.log.push((t, m, e));
        }
    }

    /// Whether every partition is owned by exactly one member.
    fn settled(&self) -> bool {
        let mut owned = BTreeSet::new();
        for v in &self.views {
            for p in v {
                if !owned.insert(*p) {
                    return false;
                }
            }
        }
        owned.len() == PARTITIONS as usize
    }
}

/// One poll of every member: events applied (stamp order), then records checked
/// against the member's view (`strays`: records of partitions it does not own).
fn round(
    members: &mut [Box<dyn Member>],
    owner: &mut Ownership,
    consumed: &mut BTreeMap<i32, BTreeSet<i64>>,
    strays: &mut Vec<(usize, i32, i64)>,
) {
    for (m, member) in members.iter_mut().enumerate() {
        let records = member.poll(Duration::from_millis(10));
        let events = member.take_events();
        owner.apply(events.into_iter().map(|(t, e)| (t, m, e)).collect());
        for (p, o) in records {
            if !owner.views[m].contains(&p) {
                strays.push((m, p, o));
            }
            consumed.entry(p).or_default().insert(o);
        }
    }
}

/// Runs three members made by `member` under a seeded fault schedule and checks them.
fn run_group(
    adapter: &str,
    protocol: Protocol,
    mut member: impl FnMut(ClientConfig) -> Box<dyn Member>,
) {
    let label = format!("{adapter} {protocol:?}");
    let seed = schedule_seed(&label);
    println!("{label}: seed {seed} (SIM_ADAPTER_SEED={seed} replays the schedule)");
    if std::env::var_os("SIM_TRACE").is_some() {
        // Every client event to stderr, stamped (a stuck member's last requests show).
        kafka_tests::event_log::to_stderr();
    }
    let group = format!("g-{adapter}");
    let mut cluster = SimCluster::new(3);
    cluster.create_topic(TOPIC, PARTITIONS);
    cluster.classic.initial_delay_ms = 100;
    cluster.groups.assignment_interval_ms = 100;
    let server = Arc::new(SimServer::start(cluster));
    for p in 0..PARTITIONS {
        append(&server, p, PREFILL);
    }
    let plan = FaultPlan {
        topic: TOPIC.into(),
        coordinator_of: Some(group.clone()),
        every_ms: (20, 60),
    };
    let mut members: Vec<Box<dyn Member>> = (0..3)
        .map(|_| member(config(&server.bootstrap(), &group, protocol)))
        .collect();
    let faults = Faults::start_plan(&server, &label, seed, plan);
    let mut owner = Ownership::new(members.len());
    let mut consumed: BTreeMap<i32, BTreeSet<i64>> = BTreeMap::new();
    let mut strays = Vec::new();
    let began = Instant::now();
    let mut next_append = 0;
    while began.elapsed() < Duration::from_millis(fault_ms()) {
        round(&mut members, &mut owner, &mut consumed, &mut strays);
        let due = began.elapsed().as_millis() as usize / 20;
        while next_append < due {
            append(&server, next_append as i32 % PARTITIONS, APPEND);
            next_append += 1;
        }
    }
    let injected = faults.stop();
    let healed = Instant::now();
    let mut settled_since: Option<Instant> = None;
    let settled = loop {
        round(&mut members, &mut owner, &mut consumed, &mut strays);
        let ends = server.with_cluster(|c| {
            let ends: Vec<i64> = c.topics[TOPIC]
                .partitions
                .iter()
                .map(|p| p.next_offset)
                .collect();
            let committed: Vec<Option<i64>> = (0..PARTITIONS)
                .map(|p| c.txn.committed(&group, TOPIC, p))
                .collect();
            let stable = match protocol {
                Protocol::Classic => c
                    .classic
                    .groups
                    .get(&group)
                    .is_some_and(|g| g.state == ClassicState::Stable && g.members.len() == 3),
                Protocol::Consumer => true,
            };
            (ends, committed, stable)
        });
        let (ends, committed, stable) = ends;
        let all_consumed = ends
            .iter()
            .enumerate()
            .all(|(p, end)| consumed.get(&(p as i32)).map_or(0, |s| s.len() as i64) == *end);
        let all_committed = ends.iter().zip(&committed).all(|(end, c)| *c == Some(*end));
        if stable && all_consumed && all_committed && owner.settled() {
            let since = *settled_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_millis(300) {
                break true;
            }
        } else {
            settled_since = None;
        }
        if healed.elapsed() > SETTLE {
            println!(
                "{label}: not settled: views {:?}, stable {stable}, consumed {:?} of {ends:?}, committed {committed:?}",
                owner.views,
                consumed.values().map(BTreeSet::len).collect::<Vec<_>>()
            );
            server.with_cluster(|c| {
                let now = c.txn.now_ms();
                if let Some(g) = c.groups.groups.get(&group) {
                    println!("{label}: coordinator at {now} ms: {g:#?}");
                }
                println!("{label}: {:?}", c.groups.counters);
            });
            break false;
        }
    };
    let settle_time = healed.elapsed();
    for m in &mut members {
        m.close();
    }
    let (backwards, past_end, which) = server.with_cluster(|c| {
        let counters = &c.groups.counters;
        (
            counters.commits_backwards,
            counters.commits_past_end,
            counters.backwards.clone(),
        )
    });
    if !settled || !owner.violations.is_empty() {
        for (t, m, e) in &owner.log {
            println!("{label}: @{:?} member {m}: {e:?}", t.duration_since(began));
        }
    }
    assert!(
        settled,
        "{label} (seed {seed}): the group did not settle within {SETTLE:?} of healing"
    );
    assert!(
        owner.violations.is_empty(),
        "{label} (seed {seed}): {:?}",
        owner.violations
    );
    assert!(
        strays.is_empty(),
        "{label} (seed {seed}): records of partitions not owned: {strays:?}"
    );
    assert_eq!(
        backwards, 0,
        "{label} (seed {seed}): a committed offset went backwards: {which:?}"
    );
    assert_eq!(
        past_end, 0,
        "{label} (seed {seed}): an offset committed past the log end"
    );
    assert!(injected.total() > 0, "{label}: no fault was injected");
    println!(
        "{label}: settled {settle_time:?} after healing; {} records; {injected:?}; unexcused overlaps at the end: {:?}",
        consumed.values().map(BTreeSet::len).sum::<usize>(),
        owner.overlaps
    );
}

mod blocking {
    use super::*;
    use kafka_blocking::GroupConsumer;

    struct M {
        c: GroupConsumer,
        events: Stamped,
    }

    impl Member for M {
        fn poll(&mut self, timeout: Duration) -> Vec<(i32, i64)> {
            match self.c.poll(timeout) {
                Ok(rs) => rs.iter().map(|r| (r.partition, r.offset)).collect(),
                Err(e) => {
                    println!("blocking poll: {e}");
                    Vec::new()
                }
            }
        }
        fn take_events(&mut self) -> Vec<(Instant, Rebalance)> {
            std::mem::take(&mut *self.events.lock().unwrap())
        }
        fn close(&mut self) {
            let _ = self.c.close();
        }
    }

    pub(super) fn member(config: ClientConfig) -> Box<dyn Member> {
        let c = GroupConsumer::new(config).expect("consumer");
        let events = Stamped::default();
        let seen = events.clone();
        c.subscribe_with([TOPIC], move |_: &GroupConsumer, e: &Rebalance| {
            seen.lock().unwrap().push((Instant::now(), e.clone()));
        })
        .expect("subscribe");
        Box::new(M { c, events })
    }
}

mod tokio_adapter {
    use super::*;
    use kafka_tokio::GroupConsumer;
    use tokio::runtime::Runtime;

    struct M {
        rt: Arc<Runtime>,
        c: GroupConsumer,
        events: Stamped,
    }

    impl Member for M {
        fn poll(&mut self, timeout: Duration) -> Vec<(i32, i64)> {
            match self.rt.block_on(self.c.poll(timeout)) {
                Ok(rs) => rs.iter().map(|r| (r.partition, r.offset)).collect(),
                Err(e) => {
                    println!("tokio poll: {e}");
                    Vec::new()
                }
            }
        }
        fn take_events(&mut self) -> Vec<(Instant, Rebalance)> {
            std::mem::take(&mut *self.events.lock().unwrap())
        }
        fn close(&mut self) {
            let _ = self.rt.block_on(self.c.close());
        }
    }

    pub(super) fn member(rt: &Arc<Runtime>, config: ClientConfig) -> Box<dyn Member> {
        let c = rt
            .block_on(async { GroupConsumer::new(config) })
            .expect("consumer");
        let events = Stamped::default();
        let seen = events.clone();
        c.subscribe_with([TOPIC], move |_: &GroupConsumer, e: &Rebalance| {
            seen.lock().unwrap().push((Instant::now(), e.clone()));
        })
        .expect("subscribe");
        Box::new(M {
            rt: rt.clone(),
            c,
            events,
        })
    }
}

mod async_std_adapter {
    use super::*;
    use kafka_async_std::GroupConsumer;

    struct M {
        c: GroupConsumer,
        events: Stamped,
    }

    impl Member for M {
        fn poll(&mut self, timeout: Duration) -> Vec<(i32, i64)> {
            match async_std::task::block_on(self.c.poll(timeout)) {
                Ok(rs) => rs.iter().map(|r| (r.partition, r.offset)).collect(),
                Err(e) => {
                    println!("async-std poll: {e}");
                    Vec::new()
                }
            }
        }
        fn take_events(&mut self) -> Vec<(Instant, Rebalance)> {
            std::mem::take(&mut *self.events.lock().unwrap())
        }
        fn close(&mut self) {
            let _ = async_std::task::block_on(self.c.close());
        }
    }

    pub(super) fn member(config: ClientConfig) -> Box<dyn Member> {
        let c = GroupConsumer::new(config).expect("consumer");
        let events = Stamped::default();
        let seen = events.clone();
        c.subscribe_with([TOPIC], move |_: &GroupConsumer, e: &Rebalance| {
            seen.lock().unwrap().push((Instant::now(), e.clone()));
        })
        .expect("subscribe");
        Box::new(M { c, events })
    }
}

mod mio_adapter {
    use super::*;
    use kafka_core::client::OpId;
    use kafka_core::group::{GroupConsumer, GroupEvent};
    use kafka_mio::mio::{Events, Poll};
    use kafka_mio::Driver;

    struct M {
        poll: Poll,
        events: Events,
        driver: Driver,
        id: OpId<GroupConsumer>,
        seen: Vec<(Instant, Rebalance)>,
    }

    impl M {
        fn turn(&mut self, max: Duration) {
            let wait = self.driver.timeout().map_or(max, |t| t.min(max));
            self.poll.poll(&mut self.events, Some(wait)).expect("poll");
            for event in self.events.iter() {
                if self.driver.owns(event.token()) {
                    self.driver.handle_event(self.poll.registry(), event);
                }
            }
            self.driver.handle_timeout(self.poll.registry());
            self.driver.poll(self.poll.registry());
            while self.driver.poll_event().is_some() {}
        }

        fn take(&mut self) {
            while let Some(e) = self.driver.group_consumer(self.id).take_event() {
                let now = Instant::now();
                match e {
                    GroupEvent::Assigned(p) => self.seen.push((now, Rebalance::Assigned(p))),
                    GroupEvent::Revoked(p) => self.seen.push((now, Rebalance::Revoked(p))),
                    GroupEvent::Lost(p) => self.seen.push((now, Rebalance::Lost(p))),
                    GroupEvent::Failed(e) => panic!("member failed: {e}"),
                    _ => {}
                }
            }
        }
    }

    impl Member for M {
        fn poll(&mut self, timeout: Duration) -> Vec<(i32, i64)> {
            let until = Instant::now() + timeout;
            let mut out = Vec::new();
            loop {
                self.take();
                let mut view = self.driver.group_consumer(self.id);
                if let Some(e) = view.take_error() {
                    println!("mio poll: {e}");
                }
                if view.poll(&mut out) > 0 {
                    self.driver.poll(self.poll.registry());
                    self.take();
                    return out.iter().map(|r| (r.partition, r.offset)).collect();
                }
                let now = Instant::now();
                if now >= until {
                    return Vec::new();
                }
                self.turn(until - now);
            }
        }
        fn take_events(&mut self) -> Vec<(Instant, Rebalance)> {
            std::mem::take(&mut self.seen)
        }
        fn close(&mut self) {
            self.driver.group_consumer(self.id).close();
            let start = Instant::now();
            while self.driver.take_output(self.id).is_none()
                && start.elapsed() < Duration::from_secs(10)
            {
                self.turn(Duration::from_millis(20));
            }
            self.driver.shutdown(self.poll.registry());
        }
    }

    pub(super) fn member(config: ClientConfig) -> Box<dyn Member> {
        let poll = Poll::new().expect("poll");
        let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
        let id = driver.start_group_consumer([TOPIC]).expect("start");
        Box::new(M {
            poll,
            events: Events::with_capacity(256),
            driver,
            id,
            seen: Vec::new(),
        })
    }
}

fn tokio_runtime() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime"),
    )
}

/// Auto-commit covers the records of the last poll that found any once the application
/// polls again, even if nothing more comes (Java commits what earlier polls handed out at
/// every poll): one blocking member, no faults, the committed offsets must reach the log
/// end while the member keeps polling. Before the fix in `kafka-driver` (`GroupQueue::
/// polled`) the last non-empty take stayed uncommitted until a later take or close.
#[test]
fn blocking_auto_commit_covers_the_last_poll_before_empty_polls() {
    let mut cluster = SimCluster::new(1);
    cluster.create_topic(TOPIC, PARTITIONS);
    cluster.classic.initial_delay_ms = 0;
    let server = SimServer::start(cluster);
    for p in 0..PARTITIONS {
        append(&server, p, 50);
    }
    let group = "g-auto-commit";
    let mut m = blocking::member(config(&server.bootstrap(), group, Protocol::Classic));
    let began = Instant::now();
    let mut consumed = 0;
    let mut committed = Vec::new();
    while began.elapsed() < Duration::from_secs(20) {
        consumed += m.poll(Duration::from_millis(20)).len();
        committed = server.with_cluster(|c| {
            (0..PARTITIONS)
                .map(|p| c.txn.committed(group, TOPIC, p))
                .collect::<Vec<_>>()
        });
        if consumed >= 300 && committed.iter().all(|c| *c == Some(50)) {
            break;
        }
    }
    assert_eq!(consumed, 300, "every record handed out once");
    assert!(
        committed.iter().all(|c| *c == Some(50)),
        "auto-commit never covered the last poll's records: {committed:?}"
    );
    m.close();
}

#[test]
fn blocking_classic_group_settles_after_coordinator_faults() {
    run_group("blocking", Protocol::Classic, blocking::member);
}

#[test]
fn blocking_consumer_protocol_group_settles_after_coordinator_faults() {
    run_group("blocking", Protocol::Consumer, blocking::member);
}

#[test]
fn tokio_classic_group_settles_after_coordinator_faults() {
    let rt = tokio_runtime();
    run_group("tokio", Protocol::Classic, |c| {
        tokio_adapter::member(&rt, c)
    });
}

#[test]
fn tokio_consumer_protocol_group_settles_after_coordinator_faults() {
    let rt = tokio_runtime();
    run_group("tokio", Protocol::Consumer, |c| {
        tokio_adapter::member(&rt, c)
    });
}

#[test]
fn async_std_classic_group_settles_after_coordinator_faults() {
    run_group("async-std", Protocol::Classic, async_std_adapter::member);
}

#[test]
fn async_std_consumer_protocol_group_settles_after_coordinator_faults() {
    run_group("async-std", Protocol::Consumer, async_std_adapter::member);
}

#[test]
fn mio_classic_group_settles_after_coordinator_faults() {
    run_group("mio", Protocol::Classic, mio_adapter::member);
}

#[test]
fn mio_consumer_protocol_group_settles_after_coordinator_faults() {
    run_group("mio", Protocol::Consumer, mio_adapter::member);
}
