//! Acquisition-lock renewals (`AcknowledgeType::Renew`, KIP-1222): sent at once in a
//! ShareAcknowledge with `IsRenewAck` and type 4, the record kept acquired and handed
//! out again, its final acknowledgement still owed; a broker older than v2 gets none and
//! the renewal fails with a typed error; the lock timeout the broker reports.

use std::time::Duration;

use super::broker::State;
use super::{ack, completions, explicit, World};
use crate::group::TopicPartition;
use crate::share::{AcknowledgeType, ShareError, ShareEvent};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// Every acknowledgement batch of partition 0 sent so far, in ShareFetch and
/// ShareAcknowledge requests: `(first, last, types, the request's IsRenewAck)`.
fn batches_sent(w: &World) -> Vec<(i64, i64, Vec<i8>, bool)> {
    let mut out = Vec::new();
    for f in &w.broker.fetches {
        for p in f.topics.iter().flat_map(|t| &t.partitions) {
            for b in &p.acknowledgement_batches {
                let t = b.acknowledge_types.clone();
                out.push((b.first_offset, b.last_offset, t, f.is_renew_ack));
            }
        }
    }
    for a in &w.broker.acknowledges {
        for p in a.topics.iter().flat_map(|t| &t.partitions) {
            for b in &p.acknowledgement_batches {
                let t = b.acknowledge_types.clone();
                out.push((b.first_offset, b.last_offset, t, a.is_renew_ack));
            }
        }
    }
    out
}

#[test]
fn a_renewal_keeps_the_record_acquired_hands_it_out_again_and_a_final_ack_is_still_owed() {
    let mut w = World::new(1, 3);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    assert_eq!(
        w.command(i, |s, _| s.acquisition_lock_timeout()),
        Some(Duration::from_secs(15)),
        "the lock timeout the ShareFetch answer reported"
    );
    ack(&mut w, i, &[1, 2], AcknowledgeType::Accept);
    ack(&mut w, i, &[0], AcknowledgeType::Renew);
    // A renewal is not owed any more for the poll refusal (as Java's).
    assert_eq!(w.command(i, |s, _| s.unacknowledged()), 0);
    assert_eq!(w.command(i, |s, _| s.renewals_in_progress()), 1);
    w.nodes[i].refused.clear();
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 4);
    assert!(w.nodes[i].refused.is_empty(), "{:?}", w.nodes[i].refused);
    // Sent at once in a ShareAcknowledge with IsRenewAck, as type 4.
    let renew: Vec<_> = w
        .broker
        .acknowledges
        .iter()
        .filter(|a| a.is_renew_ack)
        .collect();
    assert_eq!(renew.len(), 1);
    assert!(batches_sent(&w).contains(&(0, 0, vec![4], true)));
    assert!(
        batches_sent(&w).iter().all(|b| b.2 != vec![4] || b.3),
        "type 4 only with IsRenewAck"
    );
    // Still acquired by this member, renewed once, not settled.
    assert_eq!(w.broker.offsets_in(0, State::Acquired), vec![0]);
    assert_eq!(w.broker.logs[0][0].renewals, 1);
    assert_eq!(w.broker.offsets_in(0, State::Acknowledged), vec![1, 2]);
    // Handed out again, the same record and delivery count.
    let again = &w.nodes[i].records[3];
    assert_eq!((again.offset, again.delivery_count), (0, 1));
    assert_eq!(again.value.as_deref(), Some(&b"p0-0"[..]));
    assert_eq!(w.command(i, |s, _| s.renewals_in_progress()), 0);
    // The renewal's completion is reported like any acknowledgement.
    let tp: TopicPartition = ("t".into(), 0);
    let ok: Vec<i64> = completions(&w, i)
        .iter()
        .filter(|c| c.partition == tp && c.result.is_ok())
        .flat_map(|c| c.iter_offsets().collect::<Vec<_>>())
        .collect();
    assert!(ok.contains(&0), "{ok:?}");
    // Now the record awaits its final acknowledgement: polls are refused until then.
    w.run(100 * MS);
    assert_eq!(w.nodes[i].records.len(), 4);
    assert_eq!(
        w.nodes[i].refused.last(),
        Some(&ShareError::Unacknowledged { count: 1 })
    );
    // Renewed again, then accepted.
    ack(&mut w, i, &[0], AcknowledgeType::Renew);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 5);
    assert_eq!(w.broker.logs[0][0].renewals, 2);
    ack(&mut w, i, &[0], AcknowledgeType::Accept);
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged) == vec![0, 1, 2]
    });
    assert!(batches_sent(&w).iter().any(|b| b.0 == 0 && b.2 == vec![1]));
    assert_eq!(
        w.nodes[i].records.len(),
        5,
        "accepted: not handed out again"
    );
}

#[test]
fn a_renewal_with_a_broker_older_than_v2_fails_typed_and_nothing_is_sent() {
    let mut w = World::new(1, 3);
    w.broker.share_max_version = 1;
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    ack(&mut w, i, &[1, 2], AcknowledgeType::Accept);
    ack(&mut w, i, &[0], AcknowledgeType::Renew);
    let unsupported = ShareError::RenewUnsupported { node: 1 };
    w.run_until(5 * S, |w| {
        completions(w, i)
            .iter()
            .any(|c| c.result == Err(unsupported.clone()))
    });
    let failed: Vec<i64> = completions(&w, i)
        .iter()
        .filter(|c| c.result.is_err())
        .flat_map(|c| c.iter_offsets().collect::<Vec<_>>())
        .collect();
    assert_eq!(failed, vec![0]);
    assert!(w.nodes[i].events.iter().any(|e| matches!(
        e,
        ShareEvent::AcknowledgeFailed(r) if r.values().any(|r| *r == Err(unsupported.clone()))
    )));
    assert!(batches_sent(&w).iter().all(|b| b.2 != vec![4] && !b.3));
    // The member still holds the record: handed out again, to be settled as usual.
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 4);
    assert_eq!(w.nodes[i].records[3].offset, 0);
    assert_eq!(w.broker.offsets_in(0, State::Acquired), vec![0]);
    ack(&mut w, i, &[0], AcknowledgeType::Accept);
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged) == vec![0, 1, 2]
    });
}

#[test]
fn close_releases_a_renewal_not_sent_yet_and_renewed_records_not_handed_out_again() {
    let mut w = World::new(1, 3);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    w.nodes[i].polling = false;
    ack(&mut w, i, &[1], AcknowledgeType::Accept);
    ack(&mut w, i, &[2], AcknowledgeType::Renew);
    // The renewal of 2 completes; 2 waits to be handed out again.
    w.run_until(5 * S, |w| w.broker.logs[0][2].renewals == 1);
    w.run(50 * MS);
    w.command(i, |s, cx| {
        assert!(s.has_pending());
        s.acknowledge("t", 0, 0, AcknowledgeType::Renew).unwrap();
        s.close(cx);
        assert_eq!(
            s.acknowledge("t", 0, 0, AcknowledgeType::Renew),
            Err(ShareError::Closed)
        );
    });
    w.run_until(5 * S, |w| w.nodes[i].done);
    assert_eq!(w.broker.offsets_in(0, State::Available), vec![0, 2]);
    assert_eq!(w.broker.offsets_in(0, State::Acknowledged), vec![1]);
    assert_eq!(w.broker.logs[0][0].renewals, 0, "never renewed");
}

#[test]
fn renew_needs_explicit_mode_and_a_record_awaiting_acknowledgement() {
    let mut w = World::new(1, 3);
    let i = w.add(&[]);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    assert_eq!(
        w.command(i, |s, _| s.acknowledge("t", 0, 0, AcknowledgeType::Renew)),
        Err(ShareError::ImplicitMode)
    );
    let mut w = World::new(1, 3);
    let i = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[i].records.len() == 3);
    ack(&mut w, i, &[0], AcknowledgeType::Accept);
    assert!(matches!(
        w.command(i, |s, _| s.acknowledge("t", 0, 0, AcknowledgeType::Renew)),
        Err(ShareError::NotAcquired { offset: 0, .. })
    ));
}

#[test]
fn renewing_before_the_lock_expires_keeps_the_record_from_another_member() {
    let mut w = World::new(1, 1);
    w.broker.expiring_locks = true;
    w.broker.lock_ms = 2_000;
    let a = explicit(&mut w);
    w.run_until(5 * S, |w| w.nodes[a].records.len() == 1);
    let b = explicit(&mut w);
    // A renews every 1.5 s for 9 s, well past the 2 s lock; each renewal hands the
    // record back to A, still at delivery count 1.
    for n in 1..=6 {
        ack(&mut w, a, &[0], AcknowledgeType::Renew);
        w.run_until(S, |w| w.nodes[a].records.len() == n + 1);
        w.run(1_500 * MS);
        assert!(w.nodes[b].records.is_empty(), "B got A's renewed record");
    }
    assert!(w.nodes[a].records.iter().all(|r| r.delivery_count == 1));
    ack(&mut w, a, &[0], AcknowledgeType::Accept);
    w.run_until(5 * S, |w| {
        w.broker.offsets_in(0, State::Acknowledged) == vec![0]
    });
    w.run(3 * S);
    assert!(w.nodes[b].records.is_empty());
}
