//! Pattern subscriptions: classic (matched here over all-topics metadata) and KIP-848
//! (`SubscribedTopicRegex`, matched by the coordinator).

use std::collections::BTreeSet;
use std::time::Duration;

use super::World;
use crate::config::GroupProtocol;
use crate::group::{GroupError, GroupEvent, TopicPattern};
use crate::protocol::Uuid;

const S: Duration = Duration::from_secs(1);
const FAST_METADATA: (&str, &str) = ("metadata.max.age.ms", "1000");
const KIP848: (&str, &str) = ("group.protocol", "consumer");

fn topic(name: &str, id: u8, partitions: i32, internal: bool) -> (String, Uuid, i32, bool) {
    (
        name.into(),
        Uuid::from_bytes([id; 16]),
        partitions,
        internal,
    )
}

/// (topic, partition) a node owns, as its events tell.
fn owned(w: &World, i: usize) -> BTreeSet<(String, i32)> {
    let mut out = BTreeSet::new();
    for e in &w.nodes[i].events {
        match e {
            GroupEvent::Assigned(ps) => out.extend(ps.iter().map(|(t, p)| (t.to_string(), *p))),
            GroupEvent::Revoked(ps) | GroupEvent::Lost(ps) => {
                for (t, p) in ps {
                    out.remove(&(t.to_string(), *p));
                }
            }
            _ => {}
        }
    }
    out
}

fn tps(list: &[(&str, i32)]) -> BTreeSet<(String, i32)> {
    list.iter().map(|(t, p)| (t.to_string(), *p)).collect()
}

fn add_pattern(w: &mut World, extra: &[(&str, &str)], pattern: &str) -> usize {
    let protocol = if extra.contains(&KIP848) {
        GroupProtocol::Consumer
    } else {
        GroupProtocol::Classic
    };
    let pattern = TopicPattern::new(pattern, protocol).unwrap();
    w.add_with(extra, |g, cx| g.subscribe_pattern(cx, pattern).unwrap())
}

#[test]
fn a_classic_pattern_member_joins_with_the_matching_topics_only() {
    let mut w = World::new(2, 10);
    w.extra.push(topic("pat-a", 5, 2, false));
    w.extra.push(topic("other", 6, 1, false));
    let a = add_pattern(&mut w, &[], "pat-.*");
    w.run_until(10 * S, |w| !owned(w, a).is_empty());
    w.run(2 * S);
    assert_eq!(owned(&w, a), tps(&[("pat-a", 0), ("pat-a", 1)]));
    // Every topic was asked for (topics = null), and the join waited for that answer:
    // one generation, with the matching topic in it.
    assert!(w.metadata_requests.iter().any(Option::is_none));
    assert_eq!(w.coordinator.generation, 1);
    let id = w.nodes[a].id;
    let sub = w.nodes[a]
        .client
        .command(w.now, id, |g, _| {
            (
                g.subscription().map(str::to_string).collect::<Vec<_>>(),
                g.pattern().map(str::to_string),
            )
        })
        .unwrap();
    assert_eq!(sub, (vec!["pat-a".to_string()], Some("pat-.*".to_string())));
}

#[test]
fn a_new_matching_topic_rejoins_and_is_assigned_a_non_matching_one_is_ignored() {
    let mut w = World::new(1, 10);
    w.extra.push(topic("pat-a", 5, 1, false));
    let a = add_pattern(&mut w, &[FAST_METADATA], "pat-.*");
    w.run_until(10 * S, |w| owned(w, a) == tps(&[("pat-a", 0)]));
    assert_eq!(w.coordinator.generation, 1);
    // A non-matching topic appears: no rejoin.
    w.extra.push(topic("zzz", 7, 2, false));
    w.run(3 * S);
    assert_eq!(w.coordinator.generation, 1);
    // A matching one appears: the next all-topics refresh rejoins and it is assigned.
    w.extra.push(topic("pat-b", 8, 1, false));
    w.run_until(10 * S, |w| {
        owned(w, a) == tps(&[("pat-a", 0), ("pat-b", 0)])
    });
    assert_eq!(w.coordinator.generation, 2);
    // A matched topic is deleted: rejoin without it.
    w.extra.retain(|t| t.0 != "pat-a");
    w.run_until(10 * S, |w| owned(w, a) == tps(&[("pat-b", 0)]));
    assert_eq!(w.coordinator.generation, 3);
}

#[test]
fn internal_topics_are_left_out_unless_exclude_internal_topics_is_false() {
    for (exclude, want) in [("true", false), ("false", true)] {
        let mut w = World::new(1, 10);
        w.extra.push(topic("__consumer_offsets", 9, 2, true));
        let a = add_pattern(&mut w, &[("exclude.internal.topics", exclude)], ".*");
        w.run_until(10 * S, |w| !owned(w, a).is_empty());
        w.run(2 * S);
        let got = owned(&w, a);
        assert!(got.contains(&("t".to_string(), 0)));
        assert_eq!(
            got.iter().any(|(t, _)| t == "__consumer_offsets"),
            want,
            "{exclude}"
        );
    }
}

#[test]
fn an_invalid_pattern_is_a_typed_error_at_subscribe_time() {
    let e = TopicPattern::new("pat-(", GroupProtocol::Classic).unwrap_err();
    assert!(matches!(e, GroupError::InvalidPattern { .. }), "{e}");
    let mut w = World::new(1, 10);
    let a = w.add_with(&[], |_, _| {});
    let id = w.nodes[a].id;
    // A pattern left for the broker to judge cannot drive a classic member.
    let unchecked = TopicPattern::new("pat-(", GroupProtocol::Consumer).unwrap();
    let r = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.subscribe_pattern(cx, unchecked))
        .unwrap();
    assert!(matches!(r, Err(GroupError::InvalidPattern { .. })));
    // A valid one wants every topic until the subscription changes back to names.
    let ok = TopicPattern::new("pat-.*", GroupProtocol::Classic).unwrap();
    w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.subscribe_pattern(cx, ok))
        .unwrap()
        .unwrap();
    assert!(w.nodes[a].client.wants_all_topics());
    w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.subscribe(cx, ["t"]))
        .unwrap();
    assert!(!w.nodes[a].client.wants_all_topics());
}

#[test]
fn a_kip848_heartbeat_carries_the_regex_not_names_and_unknown_topics_wait_for_metadata() {
    let mut w = World::new(1, 10);
    // The coordinator assigns a topic the client has no metadata for yet.
    w.coordinator848.topic_id = Uuid::from_bytes([5; 16]);
    w.coordinator848.partitions = 2;
    let a = add_pattern(&mut w, &[KIP848, FAST_METADATA], "pat-.*");
    w.run(3 * S);
    assert!(owned(&w, a).is_empty(), "pat-a is not in the metadata yet");
    w.extra.push(topic("pat-a", 5, 2, false));
    w.run_until(10 * S, |w| {
        owned(w, a) == tps(&[("pat-a", 0), ("pat-a", 1)])
    });
    // Asked for by topic id (UNKNOWN_TOPIC_ID at first, again after a backoff), never
    // as every topic.
    let pat_a = Uuid::from_bytes([5; 16]);
    assert!(w.metadata_id_requests.len() >= 2);
    assert!(w.metadata_id_requests.iter().all(|ids| ids == &[pat_a]));
    assert!(w.metadata_requests.iter().all(Option::is_some));
    let subs = &w.coordinator848.subscriptions;
    // The joining heartbeat: the regex, and an empty name list (no names).
    assert_eq!(subs[0], (0, Some(Vec::new()), Some("pat-.*".to_string())));
    // Later ones: neither field (unchanged since the coordinator took them).
    assert!(subs.len() > 2);
    assert!(subs[1..]
        .iter()
        .all(|(_, names, regex)| names.is_none() && regex.is_none()));
}

#[test]
fn invalid_regular_expression_from_the_coordinator_reaches_the_application() {
    let mut w = World::new(1, 10);
    w.coordinator848.reject_regex = true;
    let a = add_pattern(&mut w, &[KIP848], "pat-(");
    w.run_until(5 * S, |w| {
        w.nodes[a].events.iter().any(|e| {
            matches!(e, GroupEvent::Failed(GroupError::InvalidPattern { pattern, reason })
                if pattern == "pat-(" && reason.contains("closing"))
        })
    });
}

#[test]
fn a_kip848_pattern_member_asks_for_its_assigned_topic_ids_not_for_every_topic() {
    let mut w = World::new(1, 10);
    let pat_a = Uuid::from_bytes([5; 16]);
    w.coordinator848.topic_id = pat_a;
    w.coordinator848.partitions = 2;
    // The topic exists, but nothing the client asked for by name holds it.
    w.extra.push(topic("pat-a", 5, 2, false));
    w.extra.push(topic("other", 6, 3, false));
    let a = add_pattern(&mut w, &[KIP848, FAST_METADATA], "pat-.*");
    w.run_until(10 * S, |w| {
        owned(w, a) == tps(&[("pat-a", 0), ("pat-a", 1)])
    });
    w.run(5 * S);
    // One Metadata request by the assigned topic id (Java's `ConsumerMetadata` for a
    // broker-side regex); never every topic: no all-topics want at all.
    assert_eq!(w.metadata_id_requests, vec![vec![pat_a]]);
    assert!(w.metadata_requests.iter().all(Option::is_some));
    assert!(!w.nodes[a].client.wants_all_topics());
    // From then on the topic is an ordinary named want, refreshed by name.
    let named_pat_a =
        |r: &Option<Vec<String>>| r.as_ref().is_some_and(|n| n.iter().any(|t| t == "pat-a"));
    assert!(w.metadata_requests.iter().rev().take(2).all(named_pat_a));
    assert!(w
        .metadata_requests
        .iter()
        .all(|r| !r.as_ref().is_some_and(|n| n.iter().any(|t| t == "other"))));
    // The heartbeats report what it owns by that topic id.
    let member = w.coordinator848.members.values().next().expect("a member");
    assert_eq!(member.owned, BTreeSet::from([0, 1]));
}
