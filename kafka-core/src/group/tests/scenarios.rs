//! The group consumer's life cycle and guarantees, on the scripted coordinator.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{World, TOPIC};
use crate::group::{CommitError, GroupEvent};
use crate::protocol::{ApiKey, KafkaCode};

const S: Duration = Duration::from_secs(1);

/// Every partition's offsets handed out, over all nodes, in order.
fn per_partition(w: &World) -> BTreeMap<i32, Vec<i64>> {
    let mut out: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for &(_, p, o) in &w.log {
        out.entry(p).or_default().push(o);
    }
    out
}

/// Asserts every record was handed out exactly once over the whole group.
fn assert_exactly_once(w: &World) {
    let got = per_partition(w);
    for p in 0..w.partitions() {
        let mut offsets = got.get(&p).cloned().unwrap_or_default();
        offsets.sort_unstable();
        let want: Vec<i64> = (0..w.log_end(p)).collect();
        assert_eq!(offsets, want, "partition {p}");
    }
}

/// Asserts no record was lost: every offset handed out at least once.
fn assert_at_least_once(w: &World) {
    let got = per_partition(w);
    for p in 0..w.partitions() {
        let seen: BTreeSet<i64> = got.get(&p).into_iter().flatten().copied().collect();
        let want: BTreeSet<i64> = (0..w.log_end(p)).collect();
        assert_eq!(seen, want, "partition {p}");
    }
}

#[test]
fn a_single_member_joins_reads_from_the_committed_offsets_and_commits_what_it_consumed() {
    let mut w = World::new(4, 50);
    w.coordinator.offsets.insert((TOPIC.into(), 0), 20);
    let a = w.add(&[]);
    w.run_until(10 * S, |w| w.owned(a).len() == 4);
    // The join needed a member id first (KIP-394), then one generation.
    assert_eq!(w.coordinator.generation, 1);
    w.run_until(10 * S, World::committed_all);
    let got = per_partition(&w);
    assert_eq!(got[&0], (20..50).collect::<Vec<i64>>());
    for p in 1..4 {
        assert_eq!(got[&p], (0..50).collect::<Vec<i64>>());
    }
    assert!(matches!(w.nodes[a].events[0], GroupEvent::Assigned(ref ps) if ps.len() == 4));
}

#[test]
fn eager_members_split_the_partitions_and_a_revocation_commits_before_handing_over() {
    let mut w = World::new(4, 400);
    let a = w.add(&[("partition.assignment.strategy", "range")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 4 && w.log.len() > 20);
    let b = w.add(&[("partition.assignment.strategy", "range")]);
    w.run_until(20 * S, |w| {
        w.assert_disjoint();
        w.owned(a).len() == 2 && w.owned(b).len() == 2
    });
    assert_eq!(w.owned(a), [0, 1]);
    assert_eq!(w.owned(b), [2, 3]);
    w.run_until(20 * S, |w| {
        w.assert_disjoint();
        w.committed_all()
    });
    // The revoked partitions were committed at the revocation, so the new owner went
    // on exactly where the old one stopped: no duplicate, nothing lost.
    assert_exactly_once(&w);
    assert!(w.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, GroupEvent::Revoked(ps) if ps.len() == 4)));
}

#[test]
fn cooperative_members_hand_partitions_over_in_two_rebalances_without_overlap() {
    let strategy = [("partition.assignment.strategy", "cooperative-sticky")];
    let mut w = World::new(6, 300);
    let a = w.add(&strategy);
    w.run_until(10 * S, |w| w.owned(a).len() == 6 && w.log.len() > 30);
    let before = w.coordinator.rebalances;
    let b = w.add(&strategy);
    w.run_until(30 * S, |w| {
        w.assert_disjoint();
        w.owned(a).len() == 3 && w.owned(b).len() == 3
    });
    // Join of b (a keeps everything it may), then a's revocation's follow-up round.
    assert!(
        w.coordinator.rebalances >= before + 2,
        "{}",
        w.coordinator.rebalances
    );
    // a never gave up a partition it kept: only Revoked of the three that moved.
    let revoked: Vec<usize> = w.nodes[a]
        .events
        .iter()
        .filter_map(|e| match e {
            GroupEvent::Revoked(ps) => Some(ps.len()),
            _ => None,
        })
        .collect();
    assert_eq!(revoked, [3]);
    w.run_until(30 * S, |w| {
        w.assert_disjoint();
        w.committed_all()
    });
    assert_exactly_once(&w);
}

#[test]
fn a_killed_member_is_expired_and_its_partitions_resume_from_the_last_commit() {
    let mut w = World::new(4, 2000);
    let a = w.add(&[]);
    let b = w.add(&[]);
    w.run_until(20 * S, |w| {
        w.owned(a).len() == 2 && w.owned(b).len() == 2 && w.log.len() > 100
    });
    w.run(3 * S);
    w.kill(b);
    // After the session timeout (10 s) the coordinator rebalances; a takes over.
    w.run_until(30 * S, |w| w.owned(a).len() == 4);
    w.run_until(30 * S, World::committed_all);
    // At-least-once: nothing lost; duplicates only of b's uncommitted tail.
    assert_at_least_once(&w);
    let got = per_partition(&w);
    for p in w.owned(a) {
        let v = &got[&p];
        let dups = v.len() as i64 - w.log_end(p);
        assert!(dups <= 2000, "partition {p}: {dups} duplicates");
    }
}

#[test]
fn an_application_that_stops_polling_leaves_and_its_partitions_move() {
    let mut w = World::new(4, 100);
    let a = w.add(&[]);
    let b = w.add(&[]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    w.nodes[b].polling = false;
    // max.poll.interval.ms is 20 s: b leaves (heartbeats alone do not keep it in).
    w.run_until(40 * S, |w| w.owned(a).len() == 4);
    let mut b_events = Vec::new();
    let id = w.nodes[b].id;
    let _ = w.nodes[b].client.command(w.now, id, |g, _| {
        while let Some(e) = g.take_event() {
            b_events.push(e);
        }
    });
    assert!(
        b_events
            .iter()
            .any(|e| matches!(e, GroupEvent::Lost(ps) if ps.len() == 2)),
        "{b_events:?}"
    );
}

#[test]
fn a_commit_for_a_stale_generation_is_reported_not_dropped() {
    let mut w = World::new(2, 10);
    let a = w.add(&[("enable.auto.commit", "false")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    // The coordinator moves on without a (as if a's session had ended).
    w.coordinator.generation += 1;
    let id = w.nodes[a].id;
    let commit = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.commit(cx, [((TOPIC.into(), 0), 3)]))
        .unwrap();
    w.run_until(5 * S, |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Committed { id, .. } if *id == commit))
    });
    let result = w.nodes[a].events.iter().find_map(|e| match e {
        GroupEvent::Committed { id, result } if *id == commit => Some(result.clone()),
        _ => None,
    });
    assert_eq!(
        result,
        Some(Err(CommitError::Rebalanced(KafkaCode::ILLEGAL_GENERATION)))
    );
    assert!(w.coordinator.offsets.is_empty());
}

#[test]
fn retriable_commit_errors_are_retried_and_fatal_ones_reported() {
    let mut w = World::new(2, 10);
    let a = w.add(&[("enable.auto.commit", "false")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    let id = w.nodes[a].id;
    w.coordinator.fail_next_commit = Some(KafkaCode::COORDINATOR_LOAD_IN_PROGRESS);
    let first = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.commit(cx, [((TOPIC.into(), 0), 4)]))
        .unwrap();
    w.run(2 * S);
    w.coordinator.fail_next_commit = Some(KafkaCode::OFFSET_METADATA_TOO_LARGE);
    let second = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.commit(cx, [((TOPIC.into(), 1), 5)]))
        .unwrap();
    w.run(2 * S);
    let result = |c| {
        w.nodes[a].events.iter().find_map(|e| match e {
            GroupEvent::Committed { id, result } if *id == c => Some(result.clone()),
            _ => None,
        })
    };
    assert_eq!(result(first), Some(Ok(())));
    assert!(matches!(
        result(second),
        Some(Err(CommitError::Partition { partition: 1, .. }))
    ));
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 0)), Some(&4));
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 1)), None);
}

#[test]
fn closing_commits_consumed_positions_and_leaves_so_the_others_take_over_at_once() {
    let mut w = World::new(4, 30);
    let a = w.add(&[]);
    let b = w.add(&[]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    w.run_until(10 * S, |w| w.log.len() == 120);
    let id = w.nodes[b].id;
    // What b's application gives up at close: its two partitions, revoked (it holds a
    // generation), asked before the close and not after it.
    let released = w.nodes[b]
        .client
        .command(w.now, id, |g, cx| {
            let released = g.release_on_close();
            g.close(cx);
            (released, g.release_on_close())
        })
        .unwrap();
    let owned_b: Vec<_> = w.owned(b).into_iter().map(|p| (TOPIC.into(), p)).collect();
    assert_eq!(released, (Some(GroupEvent::Revoked(owned_b)), None));
    w.nodes[b].polling = false;
    // Well before b's session would expire (10 s), a owns everything.
    w.run_until(3 * S, |w| w.owned(a).len() == 4);
    assert!(w.nodes[b].done);
    assert!(w.committed_all());
    assert_exactly_once(&w);
}

#[test]
fn a_static_member_restarted_within_the_session_timeout_keeps_its_partitions_without_a_rebalance() {
    let mut w = World::new(4, 20);
    let a = w.add(&[("group.instance.id", "a")]);
    let b = w.add(&[("group.instance.id", "b")]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    let (rebalances, kept) = (w.coordinator.rebalances, w.owned(b));
    w.kill(b);
    w.run(2 * S);
    let b2 = w.add(&[("group.instance.id", "b")]);
    w.run_until(10 * S, |w| w.owned(b2).len() == 2);
    assert_eq!(w.owned(b2), kept);
    assert_eq!(
        w.coordinator.rebalances, rebalances,
        "no rebalance for a static restart"
    );
    assert_eq!(w.owned(a).len(), 2);
}

/// One step of an adapter-like driver for node `i`: records are taken ahead of the
/// application (`take_records`, no sign of life) into the node's `records`.
fn take_ahead(w: &mut World, i: usize) {
    let (now, id) = (w.now, w.nodes[i].id);
    let n = &mut w.nodes[i];
    let (mut got, mut evs) = (Vec::new(), Vec::new());
    let _ = n.client.command(now, id, |g, _| {
        while let Some(e) = g.take_event() {
            evs.push(e);
        }
        g.take_records(&mut got);
    });
    for r in &got {
        w.log.push((i, r.partition, r.offset));
    }
    let n = &mut w.nodes[i];
    n.records.extend(got);
    n.events.extend(evs);
}

/// Runs `d` of virtual time with node `i` driven by `take_ahead` (and `app` after each
/// step, the application's side).
fn run_ahead(w: &mut World, i: usize, d: Duration, mut app: impl FnMut(&mut World)) {
    let end = w.now + d;
    while w.now < end {
        w.run(Duration::from_millis(1));
        take_ahead(w, i);
        app(w);
    }
}

#[test]
fn with_reported_positions_commits_are_what_the_application_consumed_not_what_was_fetched() {
    let mut w = World::new(2, 50);
    let a = w.add(&[("auto.commit.interval.ms", "500")]);
    w.nodes[a].polling = false;
    let id = w.nodes[a].id;
    w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.use_reported_positions())
        .unwrap();
    // The driver takes everything ahead; the application consumed 10 of partition 0
    // and signs of life keep coming.
    run_ahead(&mut w, a, 10 * S, |w| {
        let id = w.nodes[a].id;
        let _ = w.nodes[a].client.command(w.now, id, |g, cx| {
            g.set_consumed([((TOPIC.into(), 0), 10)]);
            g.touch(cx);
        });
    });
    assert_eq!(w.nodes[a].records.len(), 100, "fetched ahead");
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 0)), Some(&10));
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 1)), None);
    // close commits the reported positions too.
    let _ = w.nodes[a].client.command(w.now, id, |g, cx| {
        g.set_consumed([((TOPIC.into(), 0), 30), ((TOPIC.into(), 1), 5)]);
        g.close(cx);
    });
    run_ahead(&mut w, a, 2 * S, |_| {});
    assert!(w.nodes[a].done);
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 0)), Some(&30));
    assert_eq!(w.coordinator.offsets.get(&(TOPIC.into(), 1)), Some(&5));
}

#[test]
fn taking_records_is_no_sign_of_life_and_touch_does_not_end_a_revocation() {
    let range = [("partition.assignment.strategy", "range")];
    let mut w = World::new(4, 20);
    let a = w.add(&range);
    w.nodes[a].polling = false;
    // Records taken ahead without touch: max.poll.interval.ms (20 s) passes, a leaves.
    run_ahead(&mut w, a, 25 * S, |_| {});
    assert!(
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Lost(ps) if ps.len() == 4)),
        "{:?}",
        w.nodes[a].events
    );
    // With touch it rejoins and stays; b joining makes a revoke (eager).
    let touch = |w: &mut World| {
        let id = w.nodes[a].id;
        let _ = w.nodes[a].client.command(w.now, id, |g, cx| g.touch(cx));
    };
    run_ahead(&mut w, a, 5 * S, touch);
    assert_eq!(w.owned(a).len(), 4);
    let b = w.add(&range);
    let revoked = |w: &World| {
        w.nodes[a]
            .events
            .iter()
            .filter(|e| matches!(e, GroupEvent::Revoked(_)))
            .count()
    };
    let before = revoked(&w);
    let end = w.now + 10 * S;
    while revoked(&w) == before {
        assert!(w.now < end, "no revocation");
        w.run(Duration::from_millis(1));
        take_ahead(&mut w, a);
        touch(&mut w);
    }
    // Touches alone never hand the revoked partitions over: b gets nothing...
    run_ahead(&mut w, a, 3 * S, touch);
    assert!(w.owned(b).is_empty(), "b owns {:?}", w.owned(b));
    // ... until the application's poll that saw the event.
    let id = w.nodes[a].id;
    let _ = w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.handle_poll(cx));
    let end = w.now + 10 * S;
    while w.owned(b).len() != 2 {
        assert!(w.now < end, "b never got its share");
        w.run(Duration::from_millis(1));
        take_ahead(&mut w, a);
        let _ = w.nodes[a]
            .client
            .command(w.now, id, |g, cx| g.handle_poll(cx));
    }
}

#[test]
fn pending_records_notify_once_until_the_next_take_so_a_full_driver_does_not_spin() {
    let mut w = World::new(2, 50);
    let a = w.add(&[("max.poll.records", "10")]);
    w.nodes[a].polling = false;
    let id = w.nodes[a].id;
    // A driver whose queue is full: it takes events at every step, never records.
    let events_only = |w: &mut World| {
        let mut evs = Vec::new();
        let _ = w.nodes[a].client.command(w.now, id, |g, _| {
            while let Some(e) = g.take_event() {
                evs.push(e);
            }
        });
        w.nodes[a].events.extend(evs);
    };
    let end = w.now + 10 * S;
    while w.owned(a).len() != 2 {
        assert!(w.now < end, "no assignment");
        w.run(Duration::from_millis(1));
        events_only(&mut w);
    }
    // Let the first fetch answer arrive, then count.
    for _ in 0..500 {
        w.run(Duration::from_millis(1));
        events_only(&mut w);
    }
    let before = w.nodes[a].notifies;
    for _ in 0..2000 {
        w.run(Duration::from_millis(1));
        events_only(&mut w);
    }
    let idle = w.nodes[a].notifies - before;
    assert!(idle <= 1, "{idle} notifies while records waited untaken");
    // A take re-arms it: more records are pending after it, and they are announced.
    let mut got = Vec::new();
    let _ = w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.take_records(&mut got));
    assert!(!got.is_empty());
    let before = w.nodes[a].notifies;
    w.run(200 * Duration::from_millis(1));
    assert!(
        w.nodes[a].notifies > before,
        "records after a take are announced"
    );
}

#[test]
fn unsubscribing_revokes_every_partition_and_leaves_so_the_other_member_takes_over() {
    let mut w = World::new(4, 10);
    let a = w.add(&[]);
    let b = w.add(&[]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    let id = w.nodes[a].id;
    w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.unsubscribe(cx))
        .unwrap();
    // a left at once (LeaveGroup): b gets everything well inside the session timeout.
    w.run_until(5 * S, |w| w.owned(b).len() == 4);
    assert!(w.owned(a).is_empty());
    assert_eq!(w.coordinator.members.len(), 1);
    let events = &w.nodes[a].events;
    assert!(events
        .iter()
        .any(|e| matches!(e, GroupEvent::Revoked(ps) if ps.len() == 2)));
    assert!(!events.iter().any(|e| matches!(e, GroupEvent::Lost(_))));
}

#[test]
fn a_revocation_the_application_never_handles_is_given_up_after_max_poll_interval() {
    let range = [("partition.assignment.strategy", "range")];
    let mut w = World::new(4, 20);
    let a = w.add(&range);
    // a's application stays alive (its polls touch) but never handles the revocation:
    // it never polls having seen the Revoked event.
    w.nodes[a].polling = false;
    let touch = |w: &mut World| {
        let id = w.nodes[a].id;
        let _ = w.nodes[a].client.command(w.now, id, |g, cx| g.touch(cx));
    };
    run_ahead(&mut w, a, 5 * S, touch);
    assert_eq!(w.owned(a).len(), 4);
    let b = w.add(&range);
    let end = w.now + 10 * S;
    while !w.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, GroupEvent::Revoked(_)))
    {
        assert!(w.now < end, "no revocation");
        run_ahead(&mut w, a, Duration::from_millis(1), touch);
    }
    let raised = w.now;
    // Held while max.poll.interval.ms (20 s, also the rebalance timeout) runs...
    run_ahead(&mut w, a, 15 * S, touch);
    assert!(w.owned(b).is_empty(), "b owns {:?}", w.owned(b));
    // ... then the group moves on without a's application: the coordinator ends the
    // round without a (its rebalance timeout) or a gives the partitions up (its bound),
    // whichever comes first.
    let end = raised + 25 * S;
    while w.owned(b).len() != 4 {
        assert!(w.now < end, "the revocation is held forever");
        run_ahead(&mut w, a, Duration::from_millis(10), touch);
    }
    assert!(w.owned(a).is_empty());
}

#[test]
fn a_member_whose_heartbeats_go_unanswered_gives_its_partitions_up_after_the_session() {
    // The coordinator stops answering a's heartbeats (a paused broker keeps the
    // connection open; the request would time out only after request.timeout.ms, 30 s):
    // it drops a after the 10 s session and hands everything to b. a must count its
    // partitions lost by then, not when the heartbeat finally times out.
    let mut w = World::new(4, 50);
    let a = w.add(&[]);
    let b = w.add(&[]);
    w.run_until(20 * S, |w| w.owned(a).len() == 2 && w.owned(b).len() == 2);
    w.unanswered_heartbeats.insert(a);
    w.run_until(25 * S, |w| {
        w.assert_disjoint();
        w.owned(b).len() == 4
    });
    assert!(
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Lost(ps) if ps.len() == 2)),
        "{:?}",
        w.nodes[a].events
    );
    // a owns nothing now: closing gives nothing up.
    let id = w.nodes[a].id;
    let released = w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.release_on_close());
    assert_eq!(released, Some(None));
    w.run(2 * S);
    w.assert_disjoint();
}

/// Walks a member's events: a partition is assigned at most once until it is revoked
/// or lost, and only an assigned one is revoked (or lost, also once being revoked).
/// Returns what it still holds.
fn announced_held(events: &[GroupEvent]) -> BTreeSet<(std::sync::Arc<str>, i32)> {
    let mut held = BTreeSet::new();
    let mut revoking = BTreeSet::new();
    for e in events {
        match e {
            GroupEvent::Assigned(ps) => {
                for tp in ps {
                    assert!(held.insert(tp.clone()), "{tp:?} assigned twice: {events:?}");
                    revoking.remove(tp);
                }
            }
            GroupEvent::Revoked(ps) => {
                for tp in ps {
                    assert!(held.remove(tp), "{tp:?} revoked, not assigned: {events:?}");
                    revoking.insert(tp.clone());
                }
            }
            GroupEvent::Lost(ps) => {
                // A revocation may become a loss.
                for tp in ps {
                    assert!(
                        held.remove(tp) || revoking.remove(tp),
                        "{tp:?} lost, not assigned: {events:?}"
                    );
                }
            }
            _ => {}
        }
    }
    held
}

/// One member of a 2-partition group, its partitions announced `Assigned` while their
/// committed offsets stay unknown (OffsetFetch answers "loading" 200 times).
fn assigned_while_offsets_are_looked_up() -> (World, usize) {
    let mut w = World::new(2, 5);
    w.fail_next(
        ApiKey::OffsetFetch,
        &[KafkaCode::COORDINATOR_LOAD_IN_PROGRESS; 200],
    );
    let a = w.add(&[]);
    w.run_until(10 * S, |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Assigned(_)))
    });
    (w, a)
}

#[test]
fn unsubscribing_while_committed_offsets_are_looked_up_revokes_the_announced_partitions() {
    // The committed offsets stay unknown for a while: the partitions are announced
    // `Assigned` but still being taken over.
    let (mut w, a) = assigned_while_offsets_are_looked_up();
    assert!(
        w.nodes[a].records.is_empty(),
        "nothing fetched: the offsets are still being looked up"
    );
    let id = w.nodes[a].id;
    w.nodes[a]
        .client
        .command(w.now, id, |g, cx| g.unsubscribe(cx))
        .unwrap();
    w.run(100 * Duration::from_millis(1));
    let held = announced_held(&w.nodes[a].events);
    assert!(
        held.is_empty(),
        "still announced after unsubscribing: {held:?}"
    );
}

#[test]
fn a_poll_interval_passed_while_committed_offsets_are_looked_up_loses_the_announced_partitions() {
    let mut w = World::new(2, 5);
    w.fail_next(
        ApiKey::OffsetFetch,
        &[KafkaCode::COORDINATOR_LOAD_IN_PROGRESS; 2000],
    );
    let a = w.add(&[("max.poll.interval.ms", "3000")]);
    w.run_until(10 * S, |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Assigned(_)))
    });
    w.nodes[a].polling = false;
    w.run(4 * S);
    let id = w.nodes[a].id;
    let mut events = w.nodes[a].events.clone();
    let _ = w.nodes[a].client.command(w.now, id, |g, _| {
        while let Some(e) = g.take_event() {
            events.push(e);
        }
    });
    assert!(
        events.iter().any(|e| matches!(e, GroupEvent::Lost(_))),
        "{events:?}"
    );
    let held = announced_held(&events);
    assert!(
        held.is_empty(),
        "still announced after the poll interval: {held:?}"
    );
}

#[test]
fn unsubscribing_during_a_pending_revocation_reports_each_partition_revoked_once() {
    let range = [("partition.assignment.strategy", "range")];
    let mut w = World::new(4, 20);
    let a = w.add(&range);
    w.run_until(10 * S, |w| w.owned(a).len() == 4);
    // a's application stops polling: the revocation the next rebalance raises stays
    // pending (its events wait in the machine).
    w.nodes[a].polling = false;
    let _b = w.add(&range);
    let id = w.nodes[a].id;
    let mut events = w.nodes[a].events.clone();
    let end = w.now + 10 * S;
    while !events.iter().any(|e| matches!(e, GroupEvent::Revoked(_))) {
        assert!(w.now < end, "no revocation");
        w.run(Duration::from_millis(1));
        let _ = w.nodes[a].client.command(w.now, id, |g, _| {
            while let Some(e) = g.take_event() {
                events.push(e);
            }
        });
    }
    w.nodes[a]
        .client
        .command(w.now, id, |g, cx| {
            g.unsubscribe(cx);
            while let Some(e) = g.take_event() {
                events.push(e);
            }
        })
        .unwrap();
    let held = announced_held(&events);
    assert!(
        held.is_empty(),
        "still announced after unsubscribing: {held:?}"
    );
}

#[test]
fn closing_while_committed_offsets_are_looked_up_releases_the_announced_partitions() {
    // The application was told it has the partitions still being taken over, so its
    // listener hears of them at close.
    let (mut w, a) = assigned_while_offsets_are_looked_up();
    let held = announced_held(&w.nodes[a].events);
    assert_eq!(held.len(), 2);
    let id = w.nodes[a].id;
    let released = w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.release_on_close())
        .unwrap();
    assert_eq!(
        released,
        Some(GroupEvent::Revoked(held.into_iter().collect()))
    );
}

/// Runs until node `i`, whose application does not poll, reports `Revoked`; its
/// events are taken (without a poll, so the revocation stays pending).
fn run_until_revoked_unpolled(w: &mut World, i: usize) {
    let id = w.nodes[i].id;
    let end = w.now + 10 * S;
    while !w.nodes[i]
        .events
        .iter()
        .any(|e| matches!(e, GroupEvent::Revoked(_)))
    {
        assert!(w.now < end, "no revocation");
        w.run(Duration::from_millis(1));
        let node = &mut w.nodes[i];
        let _ = node.client.command(w.now, id, |g, _| {
            while let Some(e) = g.take_event() {
                node.events.push(e);
            }
        });
    }
}

#[test]
fn an_eager_member_rejoins_only_after_its_revocation_so_the_new_assignment_is_kept() {
    // a is assigned both partitions, their committed offsets still looked up; b joins
    // and a's application hangs with the eager revocation pending. a must not join
    // (and be assigned again) before its application handled the revocation: the
    // finished revocation would then drop partitions the application was just given.
    let range = [("partition.assignment.strategy", "range")];
    let mut w = World::new(2, 5);
    w.fail_next(
        ApiKey::OffsetFetch,
        &[KafkaCode::COORDINATOR_LOAD_IN_PROGRESS; 100_000],
    );
    let a = w.add(&range);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    w.nodes[a].polling = false;
    let b = w.add(&range);
    run_until_revoked_unpolled(&mut w, a);
    // The committed offsets are found from now on; a's application still hangs.
    w.faults.remove(&ApiKey::OffsetFetch);
    w.run(5 * S);
    w.nodes[a].polling = true;
    w.run_until(60 * S, |w| w.owned(a).len() == 1 && w.owned(b).len() == 1);
    w.run(5 * S);
    w.assert_disjoint();
    for i in [a, b] {
        let id = w.nodes[i].id;
        let told = announced_held(&w.nodes[i].events);
        let held = w.nodes[i]
            .client
            .command(w.now, id, |g, _| g.held())
            .unwrap();
        assert_eq!(told, held, "node {i}: told (left), held (right)");
        assert_eq!(held.len(), 1, "node {i} holds one partition");
    }
}

#[test]
fn a_partition_assigned_back_during_its_cooperative_revocation_starts_afresh() {
    // a (cooperative) gives p1 up to b, but its application hangs with that revocation
    // pending; b leaves, and the next assignment gives p1 back to a. a hears p1
    // `Assigned` again, holds it, and p1 resumes from its committed offset.
    let strategy = [("partition.assignment.strategy", "cooperative-sticky")];
    let mut w = World::new(2, 300);
    let a = w.add(&strategy);
    w.run_until(10 * S, |w| w.owned(a).len() == 2 && w.log.len() > 30);
    w.nodes[a].polling = false;
    let b = w.add(&strategy);
    let id = w.nodes[a].id;
    run_until_revoked_unpolled(&mut w, a);
    let b_id = w.nodes[b].id;
    w.nodes[b].client.command(w.now, b_id, |g, cx| g.close(cx));
    w.nodes[b].polling = false;
    // The rebalance b's leaving starts gives a both partitions while p1's revocation
    // is still pending (a's application polls again only afterwards).
    w.run(5 * S);
    w.nodes[a].polling = true;
    w.run_until(30 * S, |w| w.owned(a).len() == 2);
    let revoked_then_assigned = w.nodes[a]
        .events
        .iter()
        .skip_while(|e| !matches!(e, GroupEvent::Revoked(_)))
        .any(|e| matches!(e, GroupEvent::Assigned(_)));
    assert!(revoked_then_assigned, "{:?}", w.nodes[a].events);
    let told = announced_held(&w.nodes[a].events);
    let held = w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.held())
        .unwrap();
    assert_eq!(told, held, "told (left), held (right)");
    w.run_until(30 * S, |w| w.committed_all());
    assert_at_least_once(&w);
}
