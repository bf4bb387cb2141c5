//! Shared test helpers and the property tests every assignor must pass, over inputs from a
//! small seeded generator.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

pub(crate) fn layout(topics: &[(&str, i32)]) -> TopicLayout {
    racked_layout(topics, |_| Vec::new())
}

pub(crate) fn racked_layout(
    topics: &[(&str, i32)],
    racks: impl Fn(i32) -> Vec<String>,
) -> TopicLayout {
    TopicLayout {
        topics: topics
            .iter()
            .map(|&(t, n)| {
                let parts = (0..n)
                    .map(|partition| PartitionRacks {
                        partition,
                        racks: racks(partition),
                    })
                    .collect();
                (t.to_string(), parts)
            })
            .collect(),
    }
}

pub(crate) fn member(id: &str, topics: &[&str]) -> MemberSubscription {
    MemberSubscription {
        member_id: id.into(),
        instance_id: None,
        subscription: Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            generation_id: -1,
            ..Default::default()
        },
    }
}

/// Per member, its `(topic, partition)`s in order (topic names leaked: tests only).
pub(crate) fn result(
    a: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Vec<(&'static str, i32)>> {
    a.iter()
        .map(|(m, asg)| {
            let tps = flatten(&asg.partitions)
                .map(|(t, p)| (&*Box::leak(t.to_string().into_boxed_str()), p))
                .collect();
            (m.clone(), tps)
        })
        .collect()
}

/// SplitMix64: small, seeded, good enough to vary inputs.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A random group: 1..=8 topics of 1..=12 partitions, 1..=9 members subscribing to all
/// topics (`same`) or random subsets, sometimes racks on both sides.
pub(crate) fn random_group(rng: &mut Rng, same: bool) -> (TopicLayout, Vec<MemberSubscription>) {
    let topics = 1 + rng.below(8);
    let racked = rng.chance(30);
    let mut l = TopicLayout::default();
    for t in 0..topics {
        let parts = (0..1 + rng.below(12) as i32)
            .map(|partition| PartitionRacks {
                partition,
                racks: if racked {
                    (0..1 + rng.below(2))
                        .map(|_| format!("r{}", rng.below(3)))
                        .collect()
                } else {
                    Vec::new()
                },
            })
            .collect();
        l.topics.insert(format!("t{t}"), parts);
    }
    let names: Vec<String> = l.topics.keys().cloned().collect();
    let n = 1 + rng.below(9);
    let mut members = Vec::new();
    for m in 0..n {
        let mut s = member(&format!("m{}", rng.below(1000) * 10 + m), &[]);
        s.subscription.topics = if same {
            names.clone()
        } else {
            names.iter().filter(|_| rng.chance(60)).cloned().collect()
        };
        if s.subscription.topics.is_empty() && !same {
            s.subscription
                .topics
                .push(names[rng.below(names.len())].clone());
        }
        if rng.chance(10) {
            s.subscription.topics.push("absent".into());
        }
        if racked && rng.chance(80) {
            s.subscription.rack_id = Some(format!("r{}", rng.below(3)));
        }
        if rng.chance(20) {
            s.instance_id = Some(format!("i{}", rng.below(100) * 10 + m));
        }
        members.push(s);
    }
    (l, members)
}

/// Subscribed partitions per topic that exist in the layout.
fn subscribed_partitions(
    l: &TopicLayout,
    members: &[MemberSubscription],
) -> BTreeSet<(String, i32)> {
    let topics: BTreeSet<&String> = members
        .iter()
        .flat_map(|m| &m.subscription.topics)
        .collect();
    l.topics
        .iter()
        .filter(|(t, _)| topics.contains(t))
        .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), p.partition)))
        .collect()
}

/// Every member has an entry; partitions go only to subscribers, each at most once (or
/// exactly once with `complete`). Returns the owner of each assigned partition.
pub(crate) fn check_valid(
    l: &TopicLayout,
    members: &[MemberSubscription],
    out: &BTreeMap<String, Assignment>,
    complete: bool,
) -> BTreeMap<(String, i32), String> {
    assert_eq!(out.len(), members.len(), "one entry per member");
    let mut owner = BTreeMap::new();
    for m in members {
        let a = &out[&m.member_id];
        assert!(a.user_data.is_none());
        for (t, p) in flatten(&a.partitions) {
            assert!(
                m.subscription.topics.iter().any(|s| s == t),
                "{} not subscribed to {t}",
                m.member_id
            );
            let prev = owner.insert((t.to_string(), p), m.member_id.clone());
            assert!(prev.is_none(), "{t}-{p} assigned twice");
        }
    }
    let all = subscribed_partitions(l, members);
    for tp in owner.keys() {
        assert!(all.contains(tp), "{tp:?} does not exist");
    }
    if complete {
        assert_eq!(
            owner.len(),
            all.len(),
            "every subscribed partition assigned"
        );
    }
    owner
}

pub(crate) fn counts(out: &BTreeMap<String, Assignment>) -> Vec<usize> {
    out.values()
        .map(|a| a.partitions.iter().map(|t| t.partitions.len()).sum())
        .collect()
}

pub(crate) fn within_one(out: &BTreeMap<String, Assignment>) -> bool {
    let c = counts(out);
    c.iter().max().unwrap_or(&0) - c.iter().min().unwrap_or(&0) <= 1
}

#[test]
fn builtin_names_and_java_class_names() {
    for (name, expect) in [
        ("range", "range"),
        ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
        ("roundrobin", "roundrobin"),
        (
            "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "roundrobin",
        ),
        ("sticky", "sticky"),
        ("org.apache.kafka.clients.consumer.StickyAssignor", "sticky"),
        ("cooperative-sticky", "cooperative-sticky"),
        (
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "cooperative-sticky",
        ),
    ] {
        assert_eq!(builtin(name).unwrap().name(), expect);
    }
    assert!(builtin("uniform").is_none());
    assert_eq!(
        builtin("cooperative-sticky").unwrap().protocols(),
        &[RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
    );
    assert_eq!(
        builtin("range").unwrap().protocols(),
        &[RebalanceProtocol::Eager]
    );
}

#[test]
fn duplicate_member_ids_are_refused() {
    let l = layout(&[("t", 2)]);
    let m = [member("a", &["t"]), member("a", &["t"])];
    for name in ["range", "roundrobin", "sticky", "cooperative-sticky"] {
        let err = builtin(name).unwrap().assign(&l, &m).unwrap_err();
        assert_eq!(err.reason, AssignFailure::DuplicateMember("a".into()));
    }
}

#[test]
fn empty_group_and_empty_layout() {
    for name in ["range", "roundrobin", "sticky", "cooperative-sticky"] {
        let a = builtin(name).unwrap();
        assert!(a.assign(&layout(&[("t", 3)]), &[]).unwrap().is_empty());
        let out = a
            .assign(&TopicLayout::default(), &[member("x", &["t"])])
            .unwrap();
        assert!(out["x"].partitions.is_empty());
    }
}

#[test]
fn property_every_partition_once_to_subscribers_only() {
    let mut rng = Rng::new(0x5eed_0001);
    for case in 0..400 {
        let (l, members) = random_group(&mut rng, case % 3 == 0);
        for name in ["range", "roundrobin", "sticky", "cooperative-sticky"] {
            let out = builtin(name).unwrap().assign(&l, &members).unwrap();
            // Nothing is owned yet, so even cooperative-sticky assigns everything.
            check_valid(&l, &members, &out, true);
        }
    }
}

#[test]
fn property_range_balances_each_topic() {
    let mut rng = Rng::new(0x5eed_0002);
    for _ in 0..300 {
        let (l, members) = random_group(&mut rng, false);
        let out = RangeAssignor.assign(&l, &members).unwrap();
        for topic in l.topics.keys() {
            let per: Vec<usize> = members
                .iter()
                .filter(|m| m.subscription.topics.contains(topic))
                .map(|m| {
                    out[&m.member_id]
                        .partitions
                        .iter()
                        .filter(|t| &t.topic == topic)
                        .map(|t| t.partitions.len())
                        .sum()
                })
                .collect();
            if let (Some(max), Some(min)) = (per.iter().max(), per.iter().min()) {
                assert!(max - min <= 1, "{topic}: {per:?}");
            }
        }
    }
}

#[test]
fn property_balance_within_one_with_identical_subscriptions() {
    let mut rng = Rng::new(0x5eed_0003);
    for _ in 0..300 {
        let (l, members) = random_group(&mut rng, true);
        for name in ["roundrobin", "sticky", "cooperative-sticky"] {
            let out = builtin(name).unwrap().assign(&l, &members).unwrap();
            assert!(within_one(&out), "{name}: {:?}", counts(&out));
        }
    }
}
