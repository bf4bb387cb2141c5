//! KIP-848 (`group.protocol=consumer`) scenarios on the scripted coordinator.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{World, TOPIC};
use crate::group::{CommitError, GroupEvent};
use crate::protocol::{ApiKey, KafkaCode};

const S: Duration = Duration::from_secs(1);
const KIP848: (&str, &str) = ("group.protocol", "consumer");

#[test]
fn kip848_members_reconcile_revoking_before_the_new_owner_gets_a_partition() {
    let mut w = World::new(4, 400);
    let a = w.add(&[KIP848]);
    w.run_until(10 * S, |w| w.owned(a).len() == 4 && w.log.len() > 20);
    let b = w.add(&[KIP848]);
    w.run_until(20 * S, |w| {
        w.assert_disjoint();
        w.owned(a).len() == 2 && w.owned(b).len() == 2
    });
    w.run_until(20 * S, |w| {
        w.assert_disjoint();
        w.committed_all()
    });
    // a gave up two partitions (after committing them), b read them from there on:
    // every record exactly once over the group.
    let mut per: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for &(_, p, o) in &w.log {
        per.entry(p).or_default().push(o);
    }
    for p in 0..4 {
        let mut v = per[&p].clone();
        v.sort_unstable();
        assert_eq!(v, (0..400).collect::<Vec<i64>>(), "partition {p}");
    }
    let revoked: Vec<usize> = w.nodes[a]
        .events
        .iter()
        .filter_map(|e| match e {
            GroupEvent::Revoked(ps) => Some(ps.len()),
            _ => None,
        })
        .collect();
    assert_eq!(revoked, [2]);
    // Members named themselves (KIP-1082) and differ.
    let ids: BTreeSet<String> = w.coordinator848.members.keys().cloned().collect();
    assert_eq!(ids.len(), 2);
}

#[test]
fn a_fenced_kip848_member_loses_its_partitions_and_rejoins_with_epoch_zero() {
    let mut w = World::new(2, 10);
    let a = w.add(&[KIP848]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    let id = w.coordinator848.members.keys().next().unwrap().clone();
    w.coordinator848.fence(&id);
    w.run_until(10 * S, |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Lost(_)))
    });
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    // The same member id came back with epoch 0.
    assert!(
        w.coordinator848
            .heartbeats
            .iter()
            .filter(|(m, e)| *m == id && *e == 0)
            .count()
            >= 2
    );
}

#[test]
fn a_closing_kip848_member_leaves_with_epoch_minus_one_and_the_other_takes_over() {
    let mut w = World::new(4, 30);
    let a = w.add(&[KIP848]);
    let b = w.add(&[KIP848]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    w.run_until(10 * S, |w| w.log.len() == 120);
    let id = w.nodes[b].id;
    w.nodes[b]
        .client
        .command(w.now, id, |g, cx| g.close(cx))
        .unwrap();
    w.nodes[b].polling = false;
    w.run_until(5 * S, |w| w.owned(a).len() == 4);
    assert!(w.nodes[b].done);
    assert!(w.coordinator848.heartbeats.iter().any(|(_, e)| *e == -1));
    assert!(w.committed_all());
}

#[test]
fn a_kip848_member_rides_out_a_coordinator_move_and_a_loading_coordinator() {
    let mut w = World::new(4, 10);
    let a = w.add(&[KIP848]);
    w.run_until(10 * S, |w| w.nodes[a].records.len() == 40);
    let epoch = w
        .coordinator848
        .members
        .values()
        .next()
        .expect("a member")
        .epoch;
    let lookups = w.coordinator_lookups;
    w.fail_next(
        ApiKey::ConsumerGroupHeartbeat,
        &[
            KafkaCode::NOT_COORDINATOR,
            KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
            KafkaCode::COORDINATOR_NOT_AVAILABLE,
        ],
    );
    w.run_until(20 * S, |w| w.faults.values().all(Vec::is_empty));
    w.run(5 * S);
    // Each answer sent it to look the coordinator up again; it stayed a member with its
    // epoch and partitions: nothing revoked or lost.
    assert_eq!(w.coordinator_lookups, lookups + 3);
    assert_eq!(w.owned(a).len(), 4);
    let member = w.coordinator848.members.values().next().expect("a member");
    assert_eq!(member.epoch, epoch);
    assert!(!w.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, GroupEvent::Revoked(_) | GroupEvent::Lost(_))));
}

#[test]
fn a_commit_still_retried_when_the_member_is_fenced_ends_and_is_never_sent_again() {
    // a's commit keeps meeting a loading coordinator; meanwhile a is fenced. The commit
    // belongs to the membership that ended: it must end (MembershipLost) rather than be
    // retried under the old epoch after a rejoined. A coordinator can give a rejoined
    // member its old epoch number back (the target assignment waits for its interval),
    // and the stale offsets would then be accepted over the next owner's.
    let mut w = World::new(2, 50);
    let a = w.add(&[KIP848, ("enable.auto.commit", "false")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2 && w.log.len() == 100);
    let member = w.coordinator848.members.keys().next().unwrap().clone();
    let epoch = w.coordinator848.members[&member].epoch;
    w.faults.insert(
        ApiKey::OffsetCommit,
        vec![KafkaCode::COORDINATOR_LOAD_IN_PROGRESS; 1000],
    );
    let id = w.nodes[a].id;
    let commit = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.commit(cx, [((TOPIC.into(), 0), 7)]))
        .unwrap();
    w.run(Duration::from_millis(500));
    let tries_before_fence = w.commit_requests.len();
    assert!(tries_before_fence >= 2, "the commit is being retried");
    assert!(w.commit_requests.iter().all(|&(n, e)| n == a && e == epoch));

    w.coordinator848.fence(&member);
    w.run_until(10 * S, |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Lost(_)))
    });
    let sent_until_lost = w.commit_requests.len();
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    w.run(3 * S);
    assert_eq!(
        w.commit_requests.len(),
        sent_until_lost,
        "an OffsetCommit was sent after the membership was lost: {:?}",
        w.commit_requests
    );
    let result = w.nodes[a].events.iter().find_map(|e| match e {
        GroupEvent::Committed { id, result } if *id == commit => Some(result.clone()),
        _ => None,
    });
    assert_eq!(result, Some(Err(CommitError::MembershipLost)));
    assert!(w.coordinator.offsets.is_empty(), "nothing was committed");
}
