//! The checker on a clean base history, then the base plus one fault per anomaly: each
//! is flagged with exactly its own variant.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// A clean history and the handles the fault tests extend it with.
struct Base {
    h: History,
    /// The complete read_uncommitted session.
    ru: ReadSession,
    /// The complete read_committed session.
    rc: ReadSession,
    ids: BTreeMap<&'static str, SendId>,
}

impl Base {
    /// Topic `t`, two partitions. Partition 0: p1 `a0`@0 `a1`@1, p2 `b0`@2, p2 `b1`
    /// (indeterminate, written) @3, txn 2's `y0`@4 (aborted; marker @5), p1 `a2`@6.
    /// Partition 1: p2 `c0`@0, txn 1's `x0`@1 `x1`@2 (committed; marker @3), p2 `c3`@4; p2's
    /// `c1` (indeterminate, not written) and `c2` (failed). One complete session per
    /// isolation.
    fn new() -> Base {
        let mut h = History::new();
        let mut ids = BTreeMap::new();
        let sends: [(&str, &str, i32, Option<u64>, Outcome); 11] = [
            ("p1", "a0", 0, None, Outcome::Acked { offset: 0 }),
            ("p2", "c0", 1, None, Outcome::Acked { offset: 0 }),
            ("p1", "a1", 0, None, Outcome::Acked { offset: 1 }),
            ("tx1", "x0", 1, Some(1), Outcome::Acked { offset: 1 }),
            ("p2", "b0", 0, None, Outcome::Acked { offset: 2 }),
            ("p2", "c1", 1, None, Outcome::Indeterminate),
            ("tx1", "x1", 1, Some(1), Outcome::Acked { offset: 2 }),
            ("p2", "b1", 0, None, Outcome::Indeterminate),
            ("tx2", "y0", 0, Some(2), Outcome::Acked { offset: 4 }),
            ("p2", "c2", 1, None, Outcome::Failed),
            ("p2", "c3", 1, None, Outcome::Acked { offset: 4 }),
        ];
        for (producer, value, partition, txn, outcome) in sends {
            let id = h.send(producer, "t", partition, value.as_bytes(), txn);
            h.outcome(id, outcome);
            ids.insert(value, id);
        }
        let id = h.send("p1", "t", 0, b"a2", None);
        h.outcome(id, Outcome::Acked { offset: 6 });
        ids.insert("a2", id);
        h.txn_outcome(1, TxnOutcome::Committed);
        h.txn_outcome(2, TxnOutcome::Aborted);

        let reads: [(i32, i64, &str); 10] = [
            (0, 0, "a0"),
            (1, 0, "c0"),
            (0, 1, "a1"),
            (0, 2, "b0"),
            (1, 1, "x0"),
            (1, 2, "x1"),
            (0, 3, "b1"),
            (0, 4, "y0"),
            (1, 4, "c3"),
            (0, 6, "a2"),
        ];
        let ru = h.begin_reads("u", Isolation::ReadUncommitted, true);
        let rc = h.begin_reads("c", Isolation::ReadCommitted, true);
        for (partition, offset, value) in reads {
            h.read(ru, "t", partition, offset, value.as_bytes());
            if value != "y0" {
                h.read(rc, "t", partition, offset, value.as_bytes());
            }
        }
        Base { h, ru, rc, ids }
    }

    fn id(&self, value: &str) -> SendId {
        self.ids[value]
    }

    /// An acked send to `t/partition`.
    fn acked(
        &mut self,
        producer: &str,
        partition: i32,
        value: &str,
        txn: Option<u64>,
        offset: i64,
    ) -> SendId {
        let id = self.h.send(producer, "t", partition, value.as_bytes(), txn);
        self.h.outcome(id, Outcome::Acked { offset });
        id
    }

    /// `t/partition@offset` read by both complete sessions.
    fn read_both(&mut self, partition: i32, offset: i64, value: &str) {
        for s in [self.ru, self.rc] {
            self.h.read(s, "t", partition, offset, value.as_bytes());
        }
    }

    /// A new, incomplete session reading `reads` of topic `t` in order.
    fn session(&mut self, isolation: Isolation, reads: &[(i32, i64, &str)]) {
        let s = self.h.begin_reads("extra", isolation, false);
        for &(partition, offset, value) in reads {
            self.h.read(s, "t", partition, offset, value.as_bytes());
        }
    }

    fn kinds(&self) -> BTreeSet<&'static str> {
        self.h.check().anomalies.iter().map(Anomaly::kind).collect()
    }
}

fn only(kinds: &[&'static str]) -> BTreeSet<&'static str> {
    kinds.iter().copied().collect()
}

#[test]
fn clean_base_is_clean() {
    let base = Base::new();
    let v = base.h.check();
    v.assert_clean("base");
    assert!(v.is_clean());
    assert_eq!((v.sends, v.acked, v.reads), (12, 9, 19));
}

#[test]
fn lost_ack_in_each_complete_session() {
    let mut b = Base::new();
    let late = b.acked("p3", 1, "late", None, 5);
    let v = b.h.check();
    assert_eq!(b.kinds(), only(&["LostAck"]));
    let lost: Vec<_> = v
        .anomalies
        .iter()
        .filter_map(|a| match a {
            Anomaly::LostAck { session, record } => Some((session.as_str(), record.send)),
            _ => None,
        })
        .collect();
    assert_eq!(lost, [("u#0", Some(late)), ("c#1", Some(late))]);
}

#[test]
fn lost_ack_of_committed_txn_counts_but_aborted_and_unknown_do_not() {
    let mut b = Base::new();
    b.acked("tx3", 1, "gone-aborted", Some(3), 5);
    b.acked("tx4", 1, "gone-unknown", Some(4), 6);
    b.h.txn_outcome(3, TxnOutcome::Aborted);
    b.h.txn_outcome(4, TxnOutcome::Unknown);
    assert!(b.h.check().is_clean());
    b.acked("tx5", 1, "gone-committed", Some(5), 7);
    b.h.txn_outcome(5, TxnOutcome::Committed);
    assert_eq!(b.kinds(), only(&["LostAck"]));
}

#[test]
fn a_session_of_one_topic_expects_only_that_topics_records() {
    let mut b = Base::new();
    let other = b.h.send("p3", "u", 0, b"elsewhere", None);
    b.h.outcome(other, Outcome::Acked { offset: 0 });
    assert_eq!(
        b.kinds(),
        only(&["LostAck"]),
        "the base sessions read every topic"
    );
    let mut b = Base::new();
    let s =
        b.h.begin_reads_of("scoped", Isolation::ReadUncommitted, true, "u");
    let other = b.h.send("p3", "u", 0, b"elsewhere", None);
    b.h.outcome(other, Outcome::Acked { offset: 0 });
    let v = b.h.check();
    let scoped_lost = v
        .anomalies
        .iter()
        .any(|a| matches!(a, Anomaly::LostAck { session, .. } if session.starts_with("scoped")));
    assert!(scoped_lost, "the `u` session misses `elsewhere`: {v:?}");
    b.h.read(s, "u", 0, 0, b"elsewhere");
    let v = b.h.check();
    assert!(
        !v.anomalies.iter().any(|a| {
            matches!(a, Anomaly::LostAck { session, .. } if session.starts_with("scoped"))
        }),
        "`t`'s records are not expected in the `u` session: {v:?}"
    );
}

#[test]
fn deleted_records_are_not_lost_but_later_ones_are() {
    let mut b = Base::new();
    b.acked("p3", 1, "d5", None, 5);
    b.acked("p3", 1, "d6", None, 6);
    assert_eq!(b.kinds(), only(&["LostAck"]));
    b.h.records_deleted("t", 1, 6);
    let v = b.h.check();
    let lost: Vec<_> = v
        .anomalies
        .iter()
        .filter_map(|a| match a {
            Anomaly::LostAck { record, .. } => record.send,
            _ => None,
        })
        .collect();
    assert_eq!(lost.len(), 2, "d6 in each complete session: {v:?}");
    assert!(
        lost.iter().all(|&id| b.h.rec_of(id).value == b"d6"),
        "{v:?}"
    );
    b.h.records_deleted("t", 1, 7);
    assert!(b.h.check().is_clean());
}

#[test]
fn records_the_broker_destroyed_are_neither_lost_nor_reordered() {
    let mut b = Base::new();
    // p3's `z0`@5 was acknowledged, then cut off; `z1` was written into offset 5.
    b.acked("p3", 1, "z0", None, 5);
    b.acked("p3", 1, "z1", None, 5);
    b.read_both(1, 5, "z1");
    let kinds = b.kinds();
    assert!(
        kinds.contains("LostAck") && kinds.contains("Reordered"),
        "{kinds:?}"
    );
    b.h.records_lost_by_broker([b"z0".to_vec()]);
    assert!(b.h.check().is_clean());
    // Naming a record excuses that record only.
    b.acked("p3", 1, "z2", None, 6);
    assert_eq!(b.kinds(), only(&["LostAck"]));
}

#[test]
fn duplicate_value_at_two_offsets() {
    let mut b = Base::new();
    // The indeterminate b1 (read at 3 by the base sessions) written again at 7.
    b.session(Isolation::ReadUncommitted, &[(0, 7, "b1")]);
    assert_eq!(b.kinds(), only(&["Duplicate"]));
    let v = b.h.check();
    assert!(matches!(&v.anomalies[..], [Anomaly::Duplicate { offsets, .. }] if offsets == &[3, 7]));
}

#[test]
fn double_delivery_within_a_session() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 0, "a0"), (0, 0, "a0")]);
    assert_eq!(b.kinds(), only(&["DoubleDelivery"]));
    // A re-read after going further is a double delivery too, not also a rewind.
    let mut b = Base::new();
    b.session(
        Isolation::ReadUncommitted,
        &[(0, 0, "a0"), (0, 1, "a1"), (0, 0, "a0")],
    );
    assert_eq!(b.kinds(), only(&["DoubleDelivery"]));
}

#[test]
fn reordered_acks_of_one_producer() {
    let mut b = Base::new();
    b.acked("p3", 1, "r0", None, 6);
    b.acked("p3", 1, "r1", None, 5);
    b.read_both(1, 5, "r1");
    b.read_both(1, 6, "r0");
    assert_eq!(b.kinds(), only(&["Reordered"]));
    // Two producers interleaving is fine.
    let mut b = Base::new();
    b.acked("p3", 1, "r0", None, 6);
    b.acked("p4", 1, "r1", None, 5);
    b.read_both(1, 5, "r1");
    b.read_both(1, 6, "r0");
    assert!(b.h.check().is_clean());
}

#[test]
fn reordered_by_read_offsets() {
    let mut b = Base::new();
    // Acked in order, read in the opposite order: also an offset mismatch.
    b.acked("p3", 1, "r0", None, 5);
    b.acked("p3", 1, "r1", None, 6);
    b.read_both(1, 5, "r1");
    b.read_both(1, 6, "r0");
    let v = b.h.check();
    assert_eq!(b.kinds(), only(&["Reordered", "OffsetMismatch"]));
    assert!(v.anomalies.iter().any(|a| matches!(
        a,
        Anomaly::Reordered {
            by: OffsetKind::Read,
            ..
        }
    )));
}

#[test]
fn offset_mismatch() {
    let mut b = Base::new();
    b.acked("p3", 1, "m0", None, 6);
    b.read_both(1, 5, "m0");
    assert_eq!(b.kinds(), only(&["OffsetMismatch"]));
    // Reported once per (send, offset), not once per session.
    assert_eq!(b.h.check().anomalies.len(), 1);
}

#[test]
fn rewound_within_a_session() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 2, "b0"), (0, 1, "a1")]);
    assert_eq!(b.kinds(), only(&["Rewound"]));
    // Going back on another partition is no rewind.
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 2, "b0"), (1, 1, "x0")]);
    assert!(b.h.check().is_clean());
}

#[test]
fn skipped_offset_within_a_session() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 0, "a0"), (0, 2, "b0")]);
    assert_eq!(b.kinds(), only(&["Skipped"]));
    // Known only from a read elsewhere (the indeterminate b1 at 3) counts too.
    let mut b = Base::new();
    b.session(Isolation::ReadCommitted, &[(0, 2, "b0"), (0, 6, "a2")]);
    let v = b.h.check();
    assert!(matches!(&v.anomalies[..], [Anomaly::Skipped { record, .. }] if record.value == b"b1"));
    // The aborted y0 at 4 is not visible to read_committed: passing it is fine.
    let mut b = Base::new();
    b.session(Isolation::ReadCommitted, &[(0, 3, "b1"), (0, 6, "a2")]);
    assert!(b.h.check().is_clean());
}

#[test]
fn aborted_read() {
    let mut b = Base::new();
    b.session(Isolation::ReadCommitted, &[(0, 4, "y0")]);
    assert_eq!(b.kinds(), only(&["AbortedRead"]));
    // The same read under read_uncommitted is fine.
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 4, "y0")]);
    assert!(b.h.check().is_clean());
}

#[test]
fn aborted_read_of_a_failed_send_of_a_committed_txn() {
    let mut b = Base::new();
    let id = b.h.send("tx1", "t", 1, b"x2", Some(1));
    b.h.outcome(id, Outcome::Failed);
    b.session(Isolation::ReadCommitted, &[(1, 5, "x2")]);
    let v = b.h.check();
    assert_eq!(b.kinds(), only(&["AbortedRead", "FailedButWritten"]));
    assert!(v.anomalies.iter().any(|a| matches!(
        a,
        Anomaly::AbortedRead {
            cause: AbortCause::SendFailed,
            txn: 1,
            ..
        }
    )));
}

#[test]
fn uncommitted_read() {
    let mut b = Base::new();
    b.acked("tx3", 1, "z0", Some(3), 5); // no outcome ever given
    b.acked("tx4", 1, "z1", Some(4), 6);
    b.h.txn_outcome(4, TxnOutcome::Unknown);
    b.session(Isolation::ReadCommitted, &[(1, 5, "z0"), (1, 6, "z1")]);
    let v = b.h.check();
    assert_eq!(b.kinds(), only(&["UncommittedRead"]));
    let outcomes: Vec<_> = v
        .anomalies
        .iter()
        .filter_map(|a| match a {
            Anomaly::UncommittedRead { txn, outcome, .. } => Some((*txn, *outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, [(3, None), (4, Some(TxnOutcome::Unknown))]);
}

#[test]
fn torn_txn_in_complete_read_committed_session() {
    let mut b = Base::new();
    b.acked("tx5", 1, "w0", Some(5), 5);
    b.acked("tx5", 1, "w1", Some(5), 6);
    b.h.txn_outcome(5, TxnOutcome::Committed);
    b.read_both(1, 5, "w0");
    let ru = b.ru;
    b.h.read(ru, "t", 1, 6, b"w1");
    let v = b.h.check();
    assert_eq!(b.kinds(), only(&["TornTxn"]));
    assert!(matches!(
        &v.anomalies[..],
        [Anomaly::TornTxn { session, txn: 5, seen, missing }]
            if session == "c#1" && seen.len() == 1 && missing[0].value == b"w1"
    ));
}

#[test]
fn phantom_read() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 7, "ghost")]);
    assert_eq!(b.kinds(), only(&["PhantomRead"]));
    // A value sent to another partition is a phantom here.
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(1, 5, "a0")]);
    let v = b.h.check();
    assert!(matches!(
        &v.anomalies[..],
        [Anomaly::PhantomRead { sent_elsewhere: Some(r), .. }] if r.partition == 0
    ));
}

#[test]
fn failed_but_written() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(1, 5, "c2")]);
    assert_eq!(b.kinds(), only(&["FailedButWritten"]));
}

#[test]
fn double_outcome() {
    let mut b = Base::new();
    let a0 = b.id("a0");
    b.h.outcome(a0, Outcome::Failed);
    assert_eq!(b.kinds(), only(&["DoubleOutcome"]));
}

#[test]
fn missing_outcome() {
    let mut b = Base::new();
    b.h.send("p3", "t", 1, b"n0", None);
    assert_eq!(b.kinds(), only(&["MissingOutcome"]));
}

#[test]
fn display_names_the_records() {
    let mut b = Base::new();
    b.acked("p3", 1, "late", None, 5);
    let v = b.h.check();
    assert_eq!(
        v.anomalies[0].to_string(),
        "LostAck: t/1@5 \"late\" (send #12) acked but not read by complete session u#0"
    );
    let text = v.to_string();
    assert!(
        text.starts_with("2 anomalies in 13 sends (10 acked) and 19 reads"),
        "{text}"
    );
    // Stable: the same history gives the same verdict.
    assert_eq!(b.h.check().anomalies, v.anomalies);
}

#[test]
#[should_panic(expected = "seed 42: 1 anomalies")]
fn assert_clean_panics_with_context() {
    let mut b = Base::new();
    b.session(Isolation::ReadUncommitted, &[(0, 7, "ghost")]);
    b.h.check().assert_clean("seed 42");
}

#[test]
fn assert_clean_lists_at_most_twenty() {
    let mut b = Base::new();
    for n in 0..25 {
        b.h.send("p9", "t", 1, format!("n{n}").as_bytes(), None);
    }
    let text = b.h.check().to_string();
    assert_eq!(text.lines().count(), 1 + 20 + 1, "{text}");
    assert!(text.ends_with("... and 5 more"), "{text}");
}
