//! Real broker: consumer groups (classic protocol). Each member is the core's
//! `GroupConsumer` on its own blocking client, driven from its own thread through
//! `with_core` (the adapters' group surfaces are not written yet).
//!
//! - three members share a 12-partition topic through joins, a member closing and a
//!   member killed (its client dropped without leaving): every record is consumed
//!   (at-least-once, duplicates only of a killed member's uncommitted tail), and at no
//!   moment two live members own the same partition — for each classic assignor and for
//!   the KIP-848 protocol (the rig sets its broker-side session timeout to 6 s);
//! - a member killed and restarted resumes from the committed offset;
//! - a static member restarted inside the session timeout gets its partitions back
//!   without a rebalance;
//! - a pattern subscription (`kafka-blocking`'s `subscribe_pattern`), classic and KIP-848:
//!   records of two matching topics, none of a non-matching one, and those of a third
//!   matching topic created mid-run;
//! - an assignor of the application's own, registered in the config
//!   (`ClientConfig::with_assignor`), decides the assignment of two `kafka-blocking`
//!   members;
//! - closing with a listener, classic and KIP-848: the listener sees every owned
//!   partition revoked before LeaveGroup and its commit there is what the broker keeps.

mod group_common;

use std::collections::BTreeSet;
use std::time::Duration;

use group_common::{member_config, topic_with_records, unique, values, wait_for, Member};
use kafka_tests::broker_or_skip;

fn three_members_share_the_topic(strategy: &str) {
    let Some(addr) = broker_or_skip(&format!("broker_group {strategy}")) else {
        return;
    };
    let n = 30_000;
    let topic = topic_with_records(&addr, n);
    let group = unique(&format!("g-{strategy}"));
    // "consumer" is the KIP-848 protocol (server-side assignment); the others are the
    // classic protocol's assignors.
    let extra = if strategy == "consumer" {
        [("group.protocol", "consumer")]
    } else {
        [("partition.assignment.strategy", strategy)]
    };
    let mut a = Member::start(&addr, &topic, &extra, &group);
    wait_for(&[&a], Duration::from_secs(30), "a owns all", || {
        a.owned().len() == 12
    });
    let mut b = Member::start(&addr, &topic, &extra, &group);
    let mut c = Member::start(&addr, &topic, &extra, &group);
    wait_for(
        &[&a, &b, &c],
        Duration::from_secs(60),
        "three-way split",
        || a.owned().len() == 4 && b.owned().len() == 4 && c.owned().len() == 4,
    );
    // b leaves properly (commit and LeaveGroup), c is killed (no commit of its tail).
    b.stop(true);
    c.stop(false);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "a takes everything back",
        || a.owned().len() == 12,
    );
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "every record consumed",
        || {
            values(&[&a, &b, &c])
                .into_iter()
                .collect::<BTreeSet<u64>>()
                .len() as u64
                == n
        },
    );
    let all = values(&[&a, &b, &c]);
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len() as u64, n, "{strategy}: no record lost");
    let dups = all.len() as u64 - n;
    let c_count = c.seen.lock().unwrap().records.len() as u64;
    assert!(
        dups <= c_count,
        "{strategy}: {dups} duplicates, more than the killed member's {c_count} records"
    );
    a.stop(true);
}

#[test]
fn three_members_share_a_topic_with_range() {
    three_members_share_the_topic("range");
}

#[test]
fn three_members_share_a_topic_with_roundrobin() {
    three_members_share_the_topic("roundrobin");
}

#[test]
fn three_members_share_a_topic_with_sticky() {
    three_members_share_the_topic("sticky");
}

#[test]
fn three_members_share_a_topic_with_cooperative_sticky() {
    three_members_share_the_topic("cooperative-sticky");
}

#[test]
fn three_members_share_a_topic_with_kip848() {
    three_members_share_the_topic("consumer");
}

#[test]
fn a_restarted_member_resumes_from_the_committed_offset() {
    let Some(addr) = broker_or_skip("broker_group restart") else {
        return;
    };
    let n = 5_000;
    let topic = topic_with_records(&addr, n);
    let group = unique("g-restart");
    let mut a = Member::start(&addr, &topic, &[], &group);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "first run reads all",
        || a.seen.lock().unwrap().records.len() as u64 >= n,
    );
    // Let an auto-commit of the final positions happen, then kill it.
    std::thread::sleep(Duration::from_secs(2));
    a.stop(false);
    let mut b = Member::start(&addr, &topic, &[], &group);
    // The killed member's session (6 s) has to expire before b's join completes.
    wait_for(&[&b], Duration::from_secs(60), "b joins", || {
        b.owned().len() == 12
    });
    std::thread::sleep(Duration::from_secs(3));
    let again = b.seen.lock().unwrap().records.len();
    assert_eq!(
        again, 0,
        "a restarted member re-read {again} committed records"
    );
    b.stop(true);
}

#[test]
fn a_static_member_restarted_within_the_session_timeout_causes_no_rebalance() {
    let Some(addr) = broker_or_skip("broker_group static") else {
        return;
    };
    let topic = topic_with_records(&addr, 1_000);
    let group = unique("g-static");
    let extra_a = [("group.instance.id", "a"), ("session.timeout.ms", "20000")];
    let extra_b = [("group.instance.id", "b"), ("session.timeout.ms", "20000")];
    let mut a = Member::start(&addr, &topic, &extra_a, &group);
    let mut b = Member::start(&addr, &topic, &extra_b, &group);
    wait_for(&[&a, &b], Duration::from_secs(60), "split", || {
        a.owned().len() == 6 && b.owned().len() == 6
    });
    let generation = a.seen.lock().unwrap().generation;
    let kept = b.owned();
    // Static members do not leave on close: the coordinator keeps b's place.
    b.stop(true);
    let mut b2 = Member::start(&addr, &topic, &extra_b, &group);
    wait_for(&[&a, &b2], Duration::from_secs(30), "b back", || {
        b2.owned().len() == 6
    });
    assert_eq!(b2.owned(), kept, "the same partitions");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        a.seen.lock().unwrap().generation,
        generation,
        "no new generation"
    );
    a.stop(true);
    b2.stop(true);
}

/// Creates `topic` (2 partitions) holding `n` records with values "`topic`:i".
fn pattern_topic(addr: &str, topic: &str, n: usize) {
    kafka_tests::producer_suite::create_topic_with(addr, topic, 2);
    let config = kafka_core::config::ClientConfig::from_pairs([("bootstrap.servers", addr)])
        .expect("config");
    let producer = kafka_blocking::Producer::new(config).expect("producer");
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            let r = kafka_blocking::Record::new(topic, format!("{topic}:{i}"));
            producer.send(r).expect("send")
        })
        .collect();
    for d in deliveries {
        d.wait().expect("delivered");
    }
}

fn pattern_subscription(protocol: &str) {
    let Some(addr) = broker_or_skip(&format!("broker_group pattern {protocol}")) else {
        return;
    };
    let n = 50;
    // pat-<pid>-...: distinct per protocol and run, as both tests share the broker.
    let stamp = unique(protocol);
    let prefix = format!("pat-{}-{stamp}", std::process::id());
    let (t1, t2, t3) = (
        format!("{prefix}-a"),
        format!("{prefix}-b"),
        format!("{prefix}-c"),
    );
    let other = format!("nopat-{stamp}");
    for t in [&t1, &t2, &other] {
        pattern_topic(&addr, t, n);
    }
    let group = unique(&format!("g-pattern-{protocol}"));
    let config = kafka_core::config::ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("group.id", group.as_str()),
        ("group.protocol", protocol),
        ("auto.offset.reset", "earliest"),
        ("metadata.max.age.ms", "1000"),
    ])
    .expect("config");
    let consumer = kafka_blocking::GroupConsumer::new(config).expect("consumer");
    consumer
        .subscribe_pattern(&format!("{prefix}-.*"))
        .expect("subscribe_pattern");
    let mut got: BTreeSet<String> = BTreeSet::new();
    let mut poll_until = |want: usize, what: &str| {
        let end = std::time::Instant::now() + Duration::from_secs(90);
        while got.len() < want {
            assert!(
                std::time::Instant::now() < end,
                "{protocol}: {what}: {} of {want} records",
                got.len()
            );
            for r in consumer.poll(Duration::from_millis(200)).expect("poll") {
                let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
                assert!(
                    !r.topic.starts_with("nopat"),
                    "{protocol}: record of {}",
                    r.topic
                );
                got.insert(v.into_owned());
            }
        }
    };
    poll_until(2 * n, "the two matching topics");
    pattern_topic(&addr, &t3, n);
    poll_until(3 * n, "the third matching topic, created mid-run");
    for t in [&t1, &t2, &t3] {
        assert_eq!(
            got.iter()
                .filter(|v| v.starts_with(&format!("{t}:")))
                .count(),
            n,
            "{protocol}: {t}"
        );
    }
    assert_eq!(got.len(), 3 * n, "{protocol}: nothing of {other}");
    consumer.close().expect("close");
}

#[test]
fn a_classic_pattern_subscription_follows_matching_topics() {
    pattern_subscription("classic");
}

#[test]
fn a_kip848_pattern_subscription_follows_matching_topics() {
    pattern_subscription("consumer");
}

/// Everything to the member with the greatest member id: an application's own assignor.
#[derive(Debug)]
struct AllToTheLast;

impl kafka_core::group::assignor::Assignor for AllToTheLast {
    fn name(&self) -> &str {
        "all-to-the-last"
    }

    fn protocols(&self) -> &[kafka_core::group::assignor::RebalanceProtocol] {
        &[kafka_core::group::assignor::RebalanceProtocol::Eager]
    }

    fn assign(
        &self,
        layout: &kafka_core::group::assignor::TopicLayout,
        members: &[kafka_core::group::assignor::MemberSubscription],
    ) -> Result<
        std::collections::BTreeMap<String, kafka_core::group::Assignment>,
        kafka_core::group::assignor::AssignError,
    > {
        let last = members.iter().map(|m| &m.member_id).max();
        Ok(members
            .iter()
            .map(|m| {
                let partitions = layout
                    .topics
                    .iter()
                    .filter(|(t, _)| {
                        Some(&m.member_id) == last && m.subscription.topics.contains(t)
                    })
                    .map(|(t, ps)| kafka_core::group::TopicPartitions {
                        topic: t.clone(),
                        partitions: ps.iter().map(|p| p.partition).collect(),
                    })
                    .collect();
                let a = kafka_core::group::Assignment {
                    partitions,
                    user_data: None,
                };
                (m.member_id.clone(), a)
            })
            .collect())
    }
}

#[test]
fn an_assignor_registered_in_the_config_decides_the_assignment() {
    let Some(addr) = broker_or_skip("broker_group custom assignor") else {
        return;
    };
    let topic = unique("custom");
    pattern_topic(&addr, &topic, 10);
    let group = unique("g-custom");
    let config = || {
        kafka_core::config::ClientConfig::from_pairs([
            ("bootstrap.servers", addr.as_str()),
            ("group.id", group.as_str()),
            ("auto.offset.reset", "earliest"),
        ])
        .expect("config")
        .with_assignor(AllToTheLast)
    };
    let a = kafka_blocking::GroupConsumer::new(config()).expect("a");
    let b = kafka_blocking::GroupConsumer::new(config()).expect("b");
    a.subscribe([&topic]).expect("subscribe a");
    b.subscribe([&topic]).expect("subscribe b");
    // Both in one generation: one member owns both partitions, the other none (range,
    // the default strategy's first, would give each one).
    let end = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = None;
    loop {
        assert!(
            std::time::Instant::now() < end,
            "no generation where one member owns everything: last seen (generations, partitions) {last:?}"
        );
        a.poll(Duration::from_millis(100)).expect("poll a");
        b.poll(Duration::from_millis(100)).expect("poll b");
        let (ga, gb) = (
            a.group_metadata().expect("a").generation_id,
            b.group_metadata().expect("b").generation_id,
        );
        let (na, nb) = (
            a.assignment().expect("a").len(),
            b.assignment().expect("b").len(),
        );
        last = Some(((ga, gb), (na, nb)));
        let mut counts = [na, nb];
        counts.sort_unstable();
        if ga == gb && ga > 0 && counts == [0, 2] {
            break;
        }
    }
    a.close().expect("close a");
    b.close().expect("close b");
}

/// Closing with a listener (`kafka-blocking`): before LeaveGroup the listener sees every
/// owned partition `Revoked` and its `commit_sync` of the consumed positions lands (Java
/// calls `onPartitionsRevoked` in `close`); auto-commit is off, so the broker's
/// committed offsets are the listener's.
fn close_revokes_through_the_listener(protocol: &str) {
    use kafka_blocking::{GroupConsumer, Offsets, Rebalance};
    use std::sync::{Arc, Mutex};
    let Some(addr) = broker_or_skip(&format!("broker_group close listener {protocol}")) else {
        return;
    };
    let n = 40;
    let topic = unique(&format!("close-{protocol}"));
    pattern_topic(&addr, &topic, n);
    let group = unique(&format!("g-close-{protocol}"));
    let config = member_config(
        &addr,
        &[
            ("group.protocol", protocol),
            ("enable.auto.commit", "false"),
        ],
        &group,
    );
    let consumer = GroupConsumer::new(config).expect("consumer");
    let seen: Arc<Mutex<Vec<Rebalance>>> = Arc::default();
    let events = seen.clone();
    consumer
        .subscribe_with([&topic], move |c: &GroupConsumer, e: &Rebalance| {
            events.lock().unwrap().push(e.clone());
            if let Rebalance::Revoked(_) = e {
                c.commit_sync(Offsets::Consumed, Duration::from_secs(30))
                    .expect("commit in the revocation listener");
            }
        })
        .expect("subscribe");
    let mut taken: std::collections::BTreeMap<i32, i64> = Default::default();
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while taken.values().map(|o| o + 1).sum::<i64>() < n as i64 {
        assert!(
            std::time::Instant::now() < end,
            "{protocol}: took {taken:?}"
        );
        for r in consumer.poll(Duration::from_millis(200)).expect("poll") {
            taken.insert(r.partition, r.offset);
        }
    }
    seen.lock().unwrap().clear();
    consumer.close().expect("close");
    let at_close = std::mem::take(&mut *seen.lock().unwrap());
    let revoked: BTreeSet<i32> = match at_close.as_slice() {
        [Rebalance::Revoked(ps)] => ps.iter().map(|(_, p)| *p).collect(),
        other => panic!("{protocol}: the listener at close saw {other:?}"),
    };
    assert_eq!(revoked, BTreeSet::from([0, 1]), "{protocol}");
    let committed = kafka_tests::group_suite::committed(&addr, &group, &topic);
    let want: std::collections::BTreeMap<i32, i64> =
        taken.iter().map(|(p, o)| (*p, o + 1)).collect();
    assert_eq!(
        committed, want,
        "{protocol}: the listener's commit at close"
    );
}

#[test]
fn a_classic_close_revokes_through_the_listener_which_commits() {
    close_revokes_through_the_listener("classic");
}

#[test]
fn a_kip848_close_revokes_through_the_listener_which_commits() {
    close_revokes_through_the_listener("consumer");
}

/// A fatal group error (`kafka-blocking`, classic): a static member fenced by a newer
/// one with its `group.instance.id` (FENCED_INSTANCE_ID on its heartbeat) hears its
/// partitions `Lost` through the listener before its poll fails (Java calls
/// `onPartitionsLost`, then throws), and its close gives nothing more up.
#[test]
fn a_fenced_static_member_hears_its_partitions_lost_before_the_error() {
    use kafka_blocking::{Error, GroupConsumer, Rebalance};
    use std::sync::{Arc, Mutex};
    let Some(addr) = broker_or_skip("broker_group fenced static member") else {
        return;
    };
    let topic = unique("fenced");
    pattern_topic(&addr, &topic, 10);
    let group = unique("g-fenced");
    let config = || {
        member_config(
            &addr,
            &[
                ("group.instance.id", "the-one"),
                ("heartbeat.interval.ms", "200"),
            ],
            &group,
        )
    };
    let listen = |c: &GroupConsumer| {
        let seen: Arc<Mutex<Vec<Rebalance>>> = Arc::default();
        let events = seen.clone();
        c.subscribe_with([&topic], move |_: &GroupConsumer, e: &Rebalance| {
            events.lock().unwrap().push(e.clone());
        })
        .expect("subscribe");
        seen
    };
    let a = GroupConsumer::new(config()).expect("a");
    let seen_a = listen(&a);
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while a.assignment().expect("a").len() < 2 {
        assert!(std::time::Instant::now() < end, "a never owned both");
        a.poll(Duration::from_millis(100)).expect("poll a");
    }
    let b = GroupConsumer::new(config()).expect("b");
    let _seen_b = listen(&b);
    let end = std::time::Instant::now() + Duration::from_secs(60);
    let failed = loop {
        assert!(std::time::Instant::now() < end, "a was never fenced");
        let _ = b.poll(Duration::from_millis(50));
        match a.poll(Duration::from_millis(50)) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert!(
        matches!(&failed, Error::Group(e) if e.to_string().contains("FENCED_INSTANCE_ID")),
        "{failed}"
    );
    let events = std::mem::take(&mut *seen_a.lock().unwrap());
    let lost: BTreeSet<i32> = match events.last() {
        Some(Rebalance::Lost(ps)) => ps.iter().map(|(_, p)| *p).collect(),
        other => panic!("a's listener last saw {other:?} ({events:?})"),
    };
    assert_eq!(lost, BTreeSet::from([0, 1]));
    let _ = a.close();
    assert!(seen_a.lock().unwrap().is_empty(), "nothing more at close");
    b.close().expect("close b");
}
