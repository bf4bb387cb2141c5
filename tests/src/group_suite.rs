//! The group consumer suite every adapter runs (`tests/tests/group_<adapter>.rs`)
//! through its [`Adapter`] impl: two members of one adapter in one group over a fresh
//! topic of [`PARTITIONS`] partitions holding records from our producer.
//!
//! 1. `a` joins alone and consumes part of the records (auto-commit off);
//! 2. `a` pauses everything (its polls go on: they carry the rebalance), `b` joins:
//!    `a`'s partitions are revoked and its listener commits what it took (`commit_sync`
//!    of the consumed positions) before the handover, so `b` starts exactly there;
//! 3. both consume the rest; every record exactly once over the two (no loss, no
//!    duplicate);
//! 4. `commit_sync` on both, checked against the broker's committed offsets (the admin
//!    client's list group offsets): the log end of every partition;
//! 5. `b` closes: its listener sees every partition it owns `Revoked` (Java's close
//!    calls `onPartitionsRevoked`) and commits, then it leaves: `a` owns every partition
//!    again well before `b`'s session (30 s) could have expired.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_core::admin::{ListConsumerGroupOffsets, OffsetAndMetadata};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_driver::group::{Offsets, Rebalance, TopicPartition};

use crate::consumer_suite::{self, Fixture};

/// Partitions of the suite's topic.
pub const PARTITIONS: i32 = consumer_suite::PARTITIONS;
/// Records the suite produces and consumes.
pub const RECORDS: usize = 6_000;
/// The longest the suite waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(60);

/// One member, as the suite drives it (blocking calls; async adapters block on their
/// runtime). Errors are test failures (panics).
pub trait Member {
    /// Subscribes to `topic` with a listener that records every event and, on
    /// `Revoked`, commits the consumed positions synchronously (or, where the adapter's
    /// listener cannot wait, asynchronously: the core sends it before the handover).
    fn subscribe(&mut self, topic: &str);
    /// One poll (a batch, possibly empty).
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord>;
    /// The events the listener saw since the last call.
    fn events(&mut self) -> Vec<Rebalance>;
    /// `commit_sync(offsets, timeout)`.
    fn commit_sync(&mut self, offsets: Offsets) -> Result<(), String>;
    /// `pause`.
    fn pause(&mut self, partitions: &[(String, i32)]);
    /// `resume`.
    fn resume(&mut self, partitions: &[(String, i32)]);
    /// `close` (commits with auto-commit on and leaves).
    fn close(&mut self);
}

/// Makes members of one adapter.
pub trait Adapter {
    /// The adapter's member.
    type Member: Member;
    /// A member with `config`.
    fn member(&mut self, config: ClientConfig) -> Self::Member;
}

/// A group member config for the rig at `bootstrap`.
pub fn config(bootstrap: &str, group: &str) -> ClientConfig {
    ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("session.timeout.ms", "30000"),
        ("heartbeat.interval.ms", "1000"),
        ("max.poll.records", "100"),
        ("partition.assignment.strategy", "range"),
    ])
    .expect("group test config")
}

/// What one member was handed, and owns.
#[derive(Default)]
struct Seen {
    records: Vec<(i32, i64)>,
    owned: BTreeSet<i32>,
    revoked: usize,
}

impl Seen {
    fn poll(&mut self, m: &mut impl Member, fixture: &Fixture, timeout: Duration) {
        let batch = m.poll(timeout);
        for e in m.events() {
            match e {
                Rebalance::Assigned(ps) => self.owned.extend(ps.iter().map(|(_, p)| *p)),
                Rebalance::Revoked(ps) | Rebalance::Lost(ps) => {
                    self.revoked += 1;
                    for (_, p) in ps {
                        self.owned.remove(&p);
                    }
                }
                _ => {}
            }
        }
        for r in batch {
            assert_eq!(&*r.topic, fixture.topic);
            assert!(
                self.owned.contains(&r.partition),
                "record of {} not owned ({:?})",
                r.partition,
                self.owned
            );
            self.records.push((r.partition, r.offset));
        }
    }
}

fn every_record_once(fixture: &Fixture, seen: &[&Seen]) {
    let mut got: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for s in seen {
        for &(p, o) in &s.records {
            got.entry(p).or_default().push(o);
        }
    }
    for p in 0..PARTITIONS {
        let mut offsets = got.remove(&p).unwrap_or_default();
        offsets.sort_unstable();
        let want: Vec<i64> = (0..fixture.len(p) as i64).collect();
        assert_eq!(offsets, want, "partition {p}: every record exactly once");
    }
}

/// The group's committed offsets of `topic`, by partition.
pub fn committed(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    committed_with_metadata(bootstrap, group, topic)
        .into_iter()
        .map(|(p, o)| (p, o.offset))
        .collect()
}

/// The group's committed offsets of `topic` with their metadata and leader epochs, per
/// partition (admin list group offsets).
pub(crate) fn committed_with_metadata(
    bootstrap: &str,
    group: &str,
    topic: &str,
) -> BTreeMap<i32, OffsetAndMetadata> {
    let admin = kafka_blocking::Admin::new(
        ClientConfig::from_pairs([("bootstrap.servers", bootstrap)]).expect("admin config"),
    )
    .expect("admin");
    let mut all = admin
        .run(ListConsumerGroupOffsets::new(group))
        .expect("list group offsets");
    let offsets = all.remove(group).expect("the group").expect("its offsets");
    offsets
        .into_iter()
        .filter(|(tp, _)| tp.topic == topic)
        .filter_map(|(tp, r)| Some((tp.partition, r.expect("partition")?)))
        .collect()
}

/// The whole suite on `adapter` (`name` names its topic and group).
pub fn run(adapter: &mut impl Adapter, bootstrap: &str, name: &str) {
    let fixture = consumer_suite::prepare(bootstrap, &format!("group-{name}"), RECORDS);
    let group = format!("{}-g", fixture.topic);
    let topic = fixture.topic.as_str();
    let total: usize = (0..PARTITIONS).map(|p| fixture.len(p)).sum();
    let short = Duration::from_millis(100);

    eprintln!("group suite: a alone");
    let mut a = adapter.member(config(bootstrap, &group));
    a.subscribe(topic);
    let mut sa = Seen::default();
    let start = Instant::now();
    while sa.records.len() < total / 3 {
        assert!(
            start.elapsed() < PATIENCE,
            "a got {} records",
            sa.records.len()
        );
        sa.poll(&mut a, &fixture, short);
    }
    assert_eq!(sa.owned.len(), PARTITIONS as usize);

    eprintln!("group suite: b joins, a's revocation commits");
    let mut b = adapter.member(config(bootstrap, &group));
    b.subscribe(topic);
    let mut sb = Seen::default();
    // a keeps polling (the rebalance needs its polls) but takes nothing meanwhile, so b
    // has records left to read.
    a.pause(&fixture.partitions());
    let start = Instant::now();
    while sa.revoked == 0 || sb.owned.is_empty() || sa.owned.len() + sb.owned.len() < 6 {
        assert!(
            start.elapsed() < PATIENCE,
            "no rebalance: a owns {:?}, b owns {:?}",
            sa.owned,
            sb.owned
        );
        sa.poll(&mut a, &fixture, short);
        sb.poll(&mut b, &fixture, short);
    }
    a.resume(&fixture.partitions());
    let start = Instant::now();
    while sa.records.len() + sb.records.len() < total {
        assert!(
            start.elapsed() < PATIENCE,
            "{} of {total} records; a owns {:?}, b owns {:?}",
            sa.records.len() + sb.records.len(),
            sa.owned,
            sb.owned
        );
        sa.poll(&mut a, &fixture, short);
        sb.poll(&mut b, &fixture, short);
        let overlap: Vec<_> = sa.owned.intersection(&sb.owned).collect();
        assert!(overlap.is_empty(), "owned by both: {overlap:?}");
    }
    assert!(sa.revoked > 0, "a saw no revocation");
    assert!(!sb.owned.is_empty(), "b got no partition");
    assert_eq!(sa.owned.len() + sb.owned.len(), PARTITIONS as usize);
    every_record_once(&fixture, &[&sa, &sb]);

    eprintln!("group suite: commit_sync against the broker's offsets");
    a.commit_sync(Offsets::Consumed).expect("a commit_sync");
    b.commit_sync(Offsets::Consumed).expect("b commit_sync");
    let got = committed(bootstrap, &group, topic);
    for p in 0..PARTITIONS {
        assert_eq!(
            got.get(&p).copied(),
            Some(fixture.len(p) as i64),
            "partition {p} committed at its end"
        );
    }
    // An explicit offset, checked the same way.
    let mine = *sa.owned.iter().next().expect("a owns a partition");
    let tp: TopicPartition = (topic.into(), mine);
    a.commit_sync(Offsets::These(vec![(tp, 1)]))
        .expect("explicit commit");
    assert_eq!(committed(bootstrap, &group, topic).get(&mine), Some(&1));
    a.commit_sync(Offsets::these([(topic, mine, fixture.len(mine) as i64)]))
        .expect("explicit commit back");

    eprintln!("group suite: b closes (its listener sees its partitions revoked), leaves, a takes over at once");
    sb.poll(&mut b, &fixture, Duration::ZERO);
    let owned: Vec<TopicPartition> = sb.owned.iter().map(|p| (topic.into(), *p)).collect();
    b.close();
    let mut at_close = b.events();
    for e in &mut at_close {
        if let Rebalance::Revoked(ps) = e {
            ps.sort();
        }
    }
    assert_eq!(
        at_close,
        vec![Rebalance::Revoked(owned)],
        "b's listener at close: every partition it owned, revoked"
    );
    let start = Instant::now();
    while sa.owned.len() < PARTITIONS as usize {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "a owns {:?} after b left",
            sa.owned
        );
        sa.poll(&mut a, &fixture, short);
    }
    // Nothing more to read: the handover started where b committed.
    for _ in 0..5 {
        sa.poll(&mut a, &fixture, short);
    }
    every_record_once(&fixture, &[&sa, &sb]);
    a.close();
}
