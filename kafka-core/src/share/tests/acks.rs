//! Explicit mode refusing a poll while records await acknowledgement, and completed
//! acknowledgements reported with their offsets (`ShareEvent::Acknowledged`).

use std::time::Duration;

use super::broker::State;
use super::{ack, commit, completions, explicit, World};
use crate::group::TopicPartition;
use crate::share::{AcknowledgeType, ShareError, ShareEvent};

const S: Duration = Duration::from_secs(1);

/// The offsets reported for partition 0 of `t` with a result `keep` accepts.
fn reported(w: &World, i: usize, keep: impl Fn(&Result<(), ShareError>) -> bool) -> Vec<i64> {
    let tp: TopicPartition = ("t".into(), 0);
    let mut out: Vec<i64> = completions(w, i)
        .iter()
        .filter(|c| c.partition == tp && keep(&c.result))
        .flat_map(|c| c.iter_offsets().collect::<Vec<_>>())
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn explicit_mode_refuses_a_poll_until_every_record_is_acknowledged_and_loses_nothing() {
    let mut w = World::new(1, 8);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 5);
    w.run(S);
    assert_eq!(
        w.nodes[i].records.len(),
        5,
        "nothing handed out while refused"
    );
    assert!(!w.nodes[i].refused.is_empty());
    assert!(w.nodes[i]
        .refused
        .iter()
        .all(|e| *e == ShareError::Unacknowledged { count: 5 }));
    assert_eq!(w.command(i, |s, _| s.unacknowledged()), 5);
    // Nothing was released or lost: the five stay acquired by this member.
    assert_eq!(w.broker.offsets_in(0, State::Acquired), vec![0, 1, 2, 3, 4]);
    // Still refused with one left.
    ack(&mut w, i, &[0, 1, 2, 3], AcknowledgeType::Accept);
    w.nodes[i].refused.clear();
    w.run(100 * Duration::from_millis(1));
    assert_eq!(w.nodes[i].records.len(), 5);
    assert_eq!(
        w.nodes[i].refused.last(),
        Some(&ShareError::Unacknowledged { count: 1 })
    );
    // The last one acknowledged: polls work again and hand out the records after them.
    ack(&mut w, i, &[4], AcknowledgeType::Release);
    w.nodes[i].refused.clear();
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 9);
    let rest: Vec<(i64, i16)> = w.nodes[i].records[5..]
        .iter()
        .map(|r| (r.offset, r.delivery_count))
        .collect();
    assert_eq!(rest, vec![(4, 2), (5, 1), (6, 1), (7, 1)], "none lost");
    // Then refused again until those four are acknowledged.
    w.run(100 * Duration::from_millis(1));
    assert_eq!(w.nodes[i].records.len(), 9);
    assert_eq!(
        w.nodes[i].refused.last(),
        Some(&ShareError::Unacknowledged { count: 4 })
    );
    ack(&mut w, i, &[4, 5, 6, 7], AcknowledgeType::Accept);
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged) == (0..8).collect::<Vec<_>>()
    });
}

#[test]
fn implicit_mode_never_refuses_a_poll() {
    let mut w = World::new(1, 12);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 12);
    assert!(w.nodes[i].refused.is_empty());
}

#[test]
fn a_commit_reports_the_acknowledged_offsets_with_ok() {
    let mut w = World::new(1, 5);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 5);
    w.nodes[i].polling = false;
    ack(&mut w, i, &[0, 3, 4], AcknowledgeType::Accept);
    ack(&mut w, i, &[1], AcknowledgeType::Reject);
    ack(&mut w, i, &[2], AcknowledgeType::Release);
    commit(&mut w, i);
    let all = completions(&w, i);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].partition, ("t".into(), 0));
    assert_eq!(
        all[0].offsets,
        vec![(0, 4)],
        "one range, whatever the types"
    );
    assert_eq!(all[0].result, Ok(()));
    assert_eq!(all[0].omitted, 0);
}

#[test]
fn a_commit_reports_acknowledgements_a_fetch_completed_before_it() {
    let mut w = World::new(1, 4);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 4);
    w.nodes[i].polling = false;
    ack(&mut w, i, &[0, 1, 2, 3], AcknowledgeType::Accept);
    // No commit yet: they ride on the next ShareFetch and complete there.
    w.run_until(5 * S, |w| reported(w, i, Result::is_ok).len() == 4);
    assert!(w.broker.acknowledges.is_empty(), "they rode on ShareFetch");
    let results = commit(&mut w, i);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[&("t".into(), 0)], Ok(()));
    assert!(
        commit(&mut w, i).is_empty(),
        "the next commit has nothing new"
    );
}

#[test]
fn implicit_acceptances_riding_on_fetches_are_reported_with_ok() {
    let mut w = World::new(1, 10);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged).len() == 10
    });
    w.run_until(5 * S, |w| reported(w, i, Result::is_ok).len() == 10);
    assert_eq!(reported(&w, i, Result::is_ok), (0..10).collect::<Vec<_>>());
    assert!(reported(&w, i, Result::is_err).is_empty());
    assert!(w.broker.acknowledges.is_empty(), "they rode on ShareFetch");
}

#[test]
fn an_expired_lock_is_reported_with_the_error_and_the_offsets() {
    let mut w = World::new(1, 3);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    w.broker.expire_locks();
    // No commit: the acknowledgements ride on the next ShareFetch and fail there.
    ack(&mut w, i, &[0, 1, 2], AcknowledgeType::Accept);
    w.run_until(5 * S, |w| !reported(w, i, Result::is_err).is_empty());
    assert_eq!(reported(&w, i, Result::is_err), vec![0, 1, 2]);
    assert!(reported(&w, i, Result::is_ok).is_empty());
    let failed = completions(&w, i)
        .into_iter()
        .find(|c| c.result.is_err())
        .unwrap();
    assert!(
        matches!(
            failed.result,
            Err(ShareError::InvalidRecordState { partition: 0, .. })
        ),
        "{:?}",
        failed.result
    );
    // The offset-less summary is still there.
    assert!(w.nodes[i]
        .events
        .iter()
        .any(|e| matches!(e, ShareEvent::AcknowledgeFailed(r) if r.len() == 1)));
    assert!(w.broker.acknowledges.is_empty(), "it rode on ShareFetch");
}

#[test]
fn close_reports_the_final_acknowledgements_but_not_records_never_handed_out() {
    let mut w = World::new(1, 5);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 5);
    w.nodes[i].polling = false;
    ack(&mut w, i, &[0], AcknowledgeType::Accept);
    w.command(i, |s, cx| s.close(cx));
    w.run_until(5 * S, |w| w.nodes[i].done);
    assert_eq!(
        w.broker.acknowledges.last().unwrap().share_session_epoch,
        -1
    );
    // 0 accepted, 1..=4 released at close: all reported, from the machine's output.
    assert_eq!(reported(&w, i, Result::is_ok), vec![0, 1, 2, 3, 4]);
    assert_eq!(w.broker.offsets_in(0, State::Available), vec![1, 2, 3, 4]);

    // Fetched but never handed out: released at close, not reported.
    let mut w = World::new(1, 5);
    let i = explicit(&mut w);
    w.nodes[i].polling = false;
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acquired).len() == 5
    });
    w.command(i, |s, cx| s.close(cx));
    w.run_until(5 * S, |w| w.nodes[i].done);
    assert_eq!(
        w.broker.offsets_in(0, State::Available),
        vec![0, 1, 2, 3, 4]
    );
    assert!(completions(&w, i).is_empty(), "{:?}", completions(&w, i));
}

#[test]
fn acknowledgements_left_when_close_gives_up_are_reported_closed() {
    let mut w = World::new(1, 2);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 2);
    w.nodes[i].polling = false;
    ack(&mut w, i, &[0, 1], AcknowledgeType::Accept);
    // The session is lost and the final acknowledgement cannot go out.
    w.broker.fail_next(
        crate::protocol::ApiKey::ShareAcknowledge,
        &[crate::protocol::KafkaCode::SHARE_SESSION_NOT_FOUND],
    );
    w.command(i, |s, cx| s.close(cx));
    w.run_until(60 * S, |w| w.nodes[i].done);
    assert_eq!(reported(&w, i, Result::is_err), vec![0, 1]);
    assert!(completions(&w, i).iter().all(|c| matches!(
        c.result,
        Err(ShareError::SessionLost(_) | ShareError::Closed)
    )));
}
