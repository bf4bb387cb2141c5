//! Share consumer stories: join, fetch, implicit and explicit acknowledgement, session
//! and membership errors, close.

use std::collections::BTreeSet;
use std::time::Duration;

use super::broker::State;
use super::{ack, commit, World};
use crate::protocol::{ApiKey, KafkaCode};
use crate::share::{AcknowledgeType, ShareError, ShareEvent};

const S: Duration = Duration::from_secs(1);

fn assigned(w: &World, i: usize) -> bool {
    w.nodes[i]
        .events
        .iter()
        .any(|e| matches!(e, ShareEvent::Assigned(ps) if !ps.is_empty()))
}

#[test]
fn joins_with_its_own_member_id_and_gets_every_partition() {
    let mut w = World::new(2, 0);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| assigned(w, i));
    let first = w.broker.heartbeats[0].clone();
    assert_eq!(first.member_epoch, 0);
    assert_eq!(first.group_id, "g");
    assert_eq!(
        first.member_id.len(),
        22,
        "a base64 UUID made by the client"
    );
    assert_eq!(
        first.subscribed_topic_names.as_deref(),
        Some(&["t".to_string()][..])
    );
    let parts = w.command(i, |s, _| s.assignment());
    assert_eq!(parts.len(), 2);
    // Heartbeats go on at the coordinator's interval with the epoch it gave.
    w.run(3 * S);
    let later = w.broker.heartbeats.last().unwrap();
    assert_eq!(later.member_epoch, 1);
    assert_eq!(later.member_id, first.member_id);
    assert!(
        w.broker.heartbeats.len() <= 5,
        "{}",
        w.broker.heartbeats.len()
    );
}

#[test]
fn records_come_with_delivery_counts_and_are_accepted_implicitly_by_the_next_poll() {
    let mut w = World::new(2, 10);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 20);
    let got: BTreeSet<(i32, i64)> = w.nodes[i]
        .records
        .iter()
        .map(|r| (r.partition, r.offset))
        .collect();
    assert_eq!(got.len(), 20, "no duplicates");
    assert!(w.nodes[i].records.iter().all(|r| r.delivery_count == 1));
    let first = &w.nodes[i].records[0];
    assert_eq!(
        first.value.as_deref(),
        Some(format!("p{}-{}", first.partition, first.offset).as_bytes())
    );
    // The first ShareFetch opens the session (epoch 0) with both partitions, no acks.
    let f0 = &w.broker.fetches[0];
    assert_eq!(f0.share_session_epoch, 0);
    assert_eq!(f0.topics[0].partitions.len(), 2);
    assert!(f0.topics[0]
        .partitions
        .iter()
        .all(|p| p.acknowledgement_batches.is_empty()));
    // Later polls accept what earlier ones handed out; the acks ride on ShareFetch.
    w.run_until(5 * S, |w| {
        (0..2).all(|p| w.broker.offsets_in(p, State::Acknowledged).len() == 10)
    });
    let acks = w.broker.fetch_acks(0);
    assert!(!acks.is_empty(), "acknowledgements rode on ShareFetch");
    for (_, first, last, types) in &acks {
        assert_eq!(types, &vec![1], "accept, one type per merged run");
        assert!(last >= first);
    }
    // Contiguous runs are merged: the 10 offsets of p0 take few batches, not 10.
    assert!(acks.len() < 10, "{acks:?}");
    let epochs: Vec<i32> = w
        .broker
        .fetches
        .iter()
        .map(|f| f.share_session_epoch)
        .collect();
    assert!(epochs.windows(2).all(|e| e[1] == e[0] + 1), "{epochs:?}");
}

#[test]
fn explicit_accept_release_reject_then_commit_sync() {
    let mut w = World::new(1, 5);
    let i = w.add(&[("share.acknowledgement.mode", "explicit")]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 5);
    w.nodes[i].polling = false;
    let implicit = w.command(i, |s, _| s.acknowledge("t", 0, 9, AcknowledgeType::Accept));
    assert!(matches!(implicit, Err(ShareError::NotAcquired { .. })));
    // Acknowledged and committed in one go: the acks go in a ShareAcknowledge.
    let id = w.command(i, |s, cx| {
        s.acknowledge("t", 0, 0, AcknowledgeType::Accept).unwrap();
        s.acknowledge("t", 0, 1, AcknowledgeType::Release).unwrap();
        s.acknowledge("t", 0, 2, AcknowledgeType::Reject).unwrap();
        s.acknowledge("t", 0, 3, AcknowledgeType::Accept).unwrap();
        s.acknowledge("t", 0, 4, AcknowledgeType::Accept).unwrap();
        assert!(
            s.acknowledge("t", 0, 4, AcknowledgeType::Accept).is_err(),
            "twice"
        );
        s.commit(cx)
    });
    w.run_until(5 * S, |w| {
        w.nodes[i]
            .events
            .iter()
            .any(|e| matches!(e, ShareEvent::Committed { id: c, .. } if *c == id))
    });
    let Some(ShareEvent::Committed { results, .. }) = w.nodes[i]
        .events
        .iter()
        .find(|e| matches!(e, ShareEvent::Committed { .. }))
    else {
        unreachable!()
    };
    assert_eq!(results.len(), 1);
    assert!(results.values().all(Result::is_ok));
    let a = w.broker.acknowledges.last().unwrap();
    let batches: Vec<(i64, i64, Vec<i8>)> = a.topics[0].partitions[0]
        .acknowledgement_batches
        .iter()
        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
        .collect();
    assert_eq!(
        batches,
        vec![
            (0, 0, vec![1]),
            (1, 1, vec![2]),
            (2, 2, vec![3]),
            (3, 4, vec![1])
        ]
    );
    assert!(a.share_session_epoch > 0);
    assert_eq!(w.broker.offsets_in(0, State::Archived), vec![2]);
    // The released record comes back with delivery count 2; the rejected one never.
    w.nodes[i].polling = true;
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 6);
    let again = &w.nodes[i].records[5];
    assert_eq!((again.offset, again.delivery_count), (1, 2));
    w.run(S);
    assert_eq!(w.nodes[i].records.len(), 6);
}

#[test]
fn a_lost_share_session_is_reopened_with_epoch_zero() {
    let mut w = World::new(1, 3);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    w.broker
        .fail_next(ApiKey::ShareFetch, &[KafkaCode::SHARE_SESSION_NOT_FOUND]);
    let before = w.broker.fetches.len();
    w.run(2 * S);
    let epochs: Vec<i32> = w.broker.fetches[before..]
        .iter()
        .map(|f| f.share_session_epoch)
        .collect();
    assert!(epochs[0] > 0);
    assert_eq!(epochs[1], 0, "reopened: {epochs:?}");
    assert_eq!(epochs[2], 1, "{epochs:?}");
    // The acceptances the failed request carried were sent again, after the reopen.
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged).len() == 3
    });
    assert!(w.broker.fetches[before + 1]
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .all(|p| p.acknowledgement_batches.is_empty()));
}

#[test]
fn a_fenced_member_rejoins_at_epoch_zero() {
    let mut w = World::new(1, 0);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| assigned(w, i));
    let n = w.broker.heartbeats.len();
    w.broker.fail_next(
        ApiKey::ShareGroupHeartbeat,
        &[KafkaCode::FENCED_MEMBER_EPOCH],
    );
    w.run_until(5 * S, |w| {
        w.nodes[i]
            .events
            .iter()
            .any(|e| matches!(e, ShareEvent::Fenced(ShareError::Fenced(_))))
    });
    w.run_until(5 * S, |w| w.broker.heartbeats.len() > n + 1);
    assert_eq!(w.broker.heartbeats[n].member_epoch, 1, "the fenced one");
    let rejoin = &w.broker.heartbeats[n + 1];
    assert_eq!(rejoin.member_epoch, 0);
    assert_eq!(rejoin.member_id, w.broker.heartbeats[0].member_id);
    w.run(S);
    assert_eq!(w.command(i, |s, _| s.assignment()).len(), 1);
    assert_eq!(w.command(i, |s, _| s.member().1), 1);
}

#[test]
fn close_releases_what_was_not_acknowledged_and_leaves() {
    let mut w = World::new(1, 4);
    let i = w.add(&[("share.acknowledgement.mode", "explicit")]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 4);
    w.nodes[i].polling = false;
    w.command(i, |s, _| {
        s.acknowledge("t", 0, 0, AcknowledgeType::Accept).unwrap()
    });
    w.command(i, |s, cx| s.close(cx));
    w.run_until(5 * S, |w| w.nodes[i].done);
    let last = w.broker.acknowledges.last().unwrap();
    assert_eq!(
        last.share_session_epoch, -1,
        "the final acknowledgement closes the session"
    );
    let batches: Vec<(i64, i64, Vec<i8>)> = last.topics[0].partitions[0]
        .acknowledgement_batches
        .iter()
        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
        .collect();
    assert_eq!(batches, vec![(0, 0, vec![1]), (1, 3, vec![2])]);
    assert_eq!(w.broker.offsets_in(0, State::Available), vec![1, 2, 3]);
    assert_eq!(w.broker.heartbeats.last().unwrap().member_epoch, -1);
    assert!(w.broker.members.is_empty());
}

#[test]
fn an_expired_lock_surfaces_as_a_per_partition_acknowledgement_error() {
    let mut w = World::new(1, 2);
    let i = w.add(&[("share.acknowledgement.mode", "explicit")]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 2);
    w.nodes[i].polling = false;
    w.broker.expire_locks();
    ack(&mut w, i, &[0, 1], AcknowledgeType::Accept);
    let results = commit(&mut w, i);
    let r = results.values().next().unwrap();
    assert!(
        matches!(r, Err(ShareError::InvalidRecordState { partition: 0, .. })),
        "{r:?}"
    );
}

#[test]
fn implicit_mode_refuses_explicit_acknowledgements_and_commit_accepts_what_was_handed_out() {
    let mut w = World::new(1, 3);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    w.nodes[i].polling = false;
    let r = w.command(i, |s, _| s.acknowledge("t", 0, 0, AcknowledgeType::Accept));
    assert_eq!(r, Err(ShareError::ImplicitMode));
    w.command(i, |s, cx| s.commit(cx));
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged).len() == 3
    });
}

#[test]
fn a_shrunk_assignment_forgets_the_partition_in_the_share_session() {
    let mut w = World::new(2, 0);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| !w.broker.fetches.is_empty());
    w.broker.assign_only = Some(vec![1]);
    w.run_until(5 * S, |w| {
        w.broker
            .fetches
            .iter()
            .any(|f| !f.forgotten_topics_data.is_empty())
    });
    let f = w
        .broker
        .fetches
        .iter()
        .find(|f| !f.forgotten_topics_data.is_empty())
        .unwrap();
    assert!(f.share_session_epoch > 0);
    assert_eq!(f.forgotten_topics_data[0].partitions, vec![0]);
    assert_eq!(w.command(i, |s, _| s.assignment()).len(), 1);
    assert_eq!(
        w.broker.sessions.values().next().unwrap().1,
        BTreeSet::from([1])
    );
}

#[test]
fn hostile_acquired_ranges_and_garbage_records_do_not_panic_or_blow_up() {
    let mut w = World::new(1, 3);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| !w.broker.fetches.is_empty());
    w.broker.hostile = true;
    w.run(2 * S);
    // Only the real records came out, whatever the ranges claimed.
    let offsets: Vec<i64> = w.nodes[i].records.iter().map(|r| r.offset).collect();
    let unique: BTreeSet<i64> = offsets.iter().copied().collect();
    assert!(!offsets.is_empty());
    assert!(unique.iter().all(|o| (0..3).contains(o)), "{offsets:?}");
    // What was owed went back as a few ranges per request, not one per claimed offset.
    let most = w
        .broker
        .fetches
        .iter()
        .flat_map(|f| &f.topics)
        .flat_map(|t| &t.partitions)
        .map(|p| p.acknowledgement_batches.len())
        .max()
        .unwrap_or(0);
    assert!((1..20).contains(&most), "{most}");
}

#[test]
fn an_expired_lock_redelivers_with_a_rising_delivery_count_until_the_limit_archives_it() {
    let mut w = World::new(1, 1);
    w.broker.expiring_locks = true;
    w.broker.lock_ms = 2_000;
    w.broker.delivery_limit = 3;
    let explicit = [("share.acknowledgement.mode", "explicit")];
    let a = w.add(&explicit);
    w.run_until(5 * S, |w| w.nodes[a].records.len() == 1);
    let acquired = w.now;
    assert_eq!(w.nodes[a].records[0].delivery_count, 1);
    // A stalls holding the record; B joins and gets nothing while A's lock holds.
    w.nodes[a].frozen = true;
    let b = w.add(&explicit);
    w.run_until(5 * S, |w| assigned(w, b));
    w.run_until(5 * S, |w| w.now >= acquired + Duration::from_millis(1_900));
    assert!(w.nodes[b].records.is_empty(), "delivered under A's lock");
    // Expired: B gets it with the count risen; released, it comes back once more.
    for (n, count) in [(1, 2), (2, 3)] {
        w.run_until(5 * S, |w| w.nodes[b].records.len() == n);
        let r = w.nodes[b].records.last().unwrap();
        assert_eq!((r.offset, r.delivery_count), (0, count));
        w.command(b, |s, _| s.acknowledge("t", 0, 0, AcknowledgeType::Release))
            .unwrap();
    }
    // The third delivery was the limit: released, the record is archived, not redelivered.
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Archived) == vec![0]
    });
    w.run(3 * S);
    assert_eq!(w.nodes[b].records.len(), 2);
    // A wakes up and accepts its first delivery: the broker refuses, the commit says so.
    w.nodes[a].frozen = false;
    w.command(a, |s, _| s.acknowledge("t", 0, 0, AcknowledgeType::Accept))
        .unwrap();
    let results = commit(&mut w, a);
    let r = results.values().next().unwrap();
    assert!(
        matches!(r, Err(ShareError::InvalidRecordState { partition: 0, .. })),
        "{r:?}"
    );
    assert_eq!(w.broker.offsets_in(0, State::Archived), vec![0]);
}
