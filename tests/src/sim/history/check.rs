//! The checks behind [`History::check`], one method per family of anomalies.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    AbortCause, Anomaly, History, Isolation, OffsetKind, Outcome, ReadRec, SendId, Tp, TxnOutcome,
};

impl History {
    pub(super) fn check_outcomes(&self, out: &mut Vec<Anomaly>) {
        for id in self.ids() {
            let s = self.rec_of(id);
            match s.outcomes.as_slice() {
                [] => out.push(Anomaly::MissingOutcome {
                    record: self.send_rec(id, None),
                }),
                [_] => {}
                [first, extra @ ..] => {
                    for second in extra {
                        out.push(Anomaly::DoubleOutcome {
                            record: self.send_rec(id, self.acked_at(id)),
                            first: *first,
                            second: *second,
                        });
                    }
                }
            }
        }
    }

    /// Per read: phantom, failed, aborted, uncommitted, offset mismatch; per session and
    /// partition: double delivery and rewinds.
    pub(super) fn check_reads(&self, out: &mut Vec<Anomaly>) {
        let mut mismatched = BTreeSet::new();
        for s in &self.sessions {
            let rc = s.isolation == Isolation::ReadCommitted;
            // Per partition: the offsets read and the highest read so far.
            let mut seen: BTreeMap<Tp, (BTreeSet<i64>, Option<&ReadRec>)> = BTreeMap::new();
            for r in &s.reads {
                let session = s.name.clone();
                let record = self.read_rec(r);
                let (offsets, highest) = seen.entry((r.topic.clone(), r.partition)).or_default();
                if !offsets.insert(r.offset) {
                    out.push(Anomaly::DoubleDelivery {
                        session: session.clone(),
                        record: record.clone(),
                    });
                } else if let Some(prev) = highest.filter(|p| p.offset > r.offset) {
                    out.push(Anomaly::Rewound {
                        session: session.clone(),
                        previous: self.read_rec(prev),
                        record: record.clone(),
                    });
                }
                if highest.is_none_or(|p| p.offset < r.offset) {
                    *highest = Some(r);
                }
                let Some(id) = self.matched(r) else {
                    let sent_elsewhere = self
                        .by_value
                        .get(&r.value)
                        .map(|&id| self.send_rec(id, self.acked_at(id)));
                    out.push(Anomaly::PhantomRead {
                        session,
                        record,
                        sent_elsewhere,
                    });
                    continue;
                };
                let outcome = self.outcome_of(id);
                if outcome == Some(Outcome::Failed) {
                    out.push(Anomaly::FailedButWritten {
                        session: session.clone(),
                        record: record.clone(),
                    });
                }
                if let (true, Some(txn)) = (rc, self.rec_of(id).txn) {
                    let txn_outcome = self.txns.get(&txn).copied();
                    let cause = match (txn_outcome, outcome) {
                        (Some(TxnOutcome::Aborted), _) => Some(AbortCause::TxnAborted),
                        (_, Some(Outcome::Failed)) => Some(AbortCause::SendFailed),
                        _ => None,
                    };
                    if let Some(cause) = cause {
                        out.push(Anomaly::AbortedRead {
                            session: session.clone(),
                            record: record.clone(),
                            txn,
                            cause,
                        });
                    } else if txn_outcome != Some(TxnOutcome::Committed) {
                        out.push(Anomaly::UncommittedRead {
                            session: session.clone(),
                            record: record.clone(),
                            txn,
                            outcome: txn_outcome,
                        });
                    }
                }
                if let Some(acked) = self.acked_at(id).filter(|&a| a != r.offset) {
                    if mismatched.insert((id, r.offset)) {
                        out.push(Anomaly::OffsetMismatch {
                            session,
                            record,
                            acked,
                        });
                    }
                }
            }
        }
    }

    pub(super) fn check_duplicates(&self, out: &mut Vec<Anomaly>) {
        // Per (partition, value): the offsets it was read at, and its first read.
        type Reads<'a> = (BTreeSet<i64>, &'a ReadRec);
        let mut offsets: BTreeMap<(Tp, &[u8]), Reads<'_>> = BTreeMap::new();
        for r in self.sessions.iter().flat_map(|s| &s.reads) {
            let key = ((r.topic.clone(), r.partition), r.value.as_slice());
            offsets
                .entry(key)
                .or_insert_with(|| (BTreeSet::new(), r))
                .0
                .insert(r.offset);
        }
        for (set, r) in offsets.values() {
            if set.len() > 1 {
                let offsets: Vec<i64> = set.iter().copied().collect();
                let mut record = self.read_rec(r);
                record.offset = offsets.first().copied();
                out.push(Anomaly::Duplicate { record, offsets });
            }
        }
    }

    pub(super) fn check_order(&self, out: &mut Vec<Anomaly>) {
        let mut lanes: BTreeMap<(&str, &str, i32), Vec<SendId>> = BTreeMap::new();
        for id in self.ids() {
            let s = self.rec_of(id);
            lanes
                .entry((&s.producer, &s.topic, s.partition))
                .or_default()
                .push(id);
        }
        // The lowest offset each send was read at.
        let mut read_at: BTreeMap<SendId, i64> = BTreeMap::new();
        for r in self.sessions.iter().flat_map(|s| &s.reads) {
            if let Some(id) = self.matched(r) {
                let o = read_at.entry(id).or_insert(r.offset);
                *o = (*o).min(r.offset);
            }
        }
        let mut reported = BTreeSet::new();
        for ((producer, _, _), ids) in &lanes {
            let acked: Vec<SendId> = ids
                .iter()
                .copied()
                .filter(|&id| self.acked_at(id).is_some() && !self.broker_lost(id))
                .collect();
            for by in [OffsetKind::Acked, OffsetKind::Read] {
                let offset_of = |id: SendId| match by {
                    OffsetKind::Acked => self.acked_at(id),
                    OffsetKind::Read => read_at.get(&id).copied(),
                };
                let mut highest: Option<(SendId, i64)> = None;
                for &id in &acked {
                    let Some(o) = offset_of(id) else { continue };
                    match highest {
                        Some((prev, po)) if o <= po => {
                            if reported.insert((prev, id)) {
                                out.push(Anomaly::Reordered {
                                    producer: producer.to_string(),
                                    by,
                                    earlier: self.send_rec(prev, Some(po)),
                                    later: self.send_rec(id, Some(o)),
                                });
                            }
                        }
                        _ => highest = Some((id, o)),
                    }
                }
            }
        }
    }

    /// Records known at an offset (acked there, or read there in any session) that a
    /// session passed over.
    pub(super) fn check_skips(&self, out: &mut Vec<Anomaly>) {
        let mut known: BTreeMap<Tp, BTreeMap<i64, SendId>> = BTreeMap::new();
        for id in self.ids().filter(|&id| !self.broker_lost(id)) {
            if let Some(o) = self.acked_at(id) {
                let s = self.rec_of(id);
                known
                    .entry((s.topic.clone(), s.partition))
                    .or_default()
                    .entry(o)
                    .or_insert(id);
            }
        }
        for r in self.sessions.iter().flat_map(|s| &s.reads) {
            if let Some(id) = self.matched(r) {
                known
                    .entry((r.topic.clone(), r.partition))
                    .or_default()
                    .entry(r.offset)
                    .or_insert(id);
            }
        }
        for s in &self.sessions {
            let mut read: BTreeMap<Tp, BTreeSet<i64>> = BTreeMap::new();
            for r in &s.reads {
                read.entry((r.topic.clone(), r.partition))
                    .or_default()
                    .insert(r.offset);
            }
            for (tp, offsets) in &read {
                let (Some(&lo), Some(&hi), Some(records)) =
                    (offsets.first(), offsets.last(), known.get(tp))
                else {
                    continue;
                };
                if hi.saturating_sub(lo) < 2 {
                    continue; // nothing strictly between (and an empty range would panic)
                }
                for (&o, &id) in records.range(lo + 1..hi) {
                    if !offsets.contains(&o) && self.visible(id, s.isolation) {
                        out.push(Anomaly::Skipped {
                            session: s.name.clone(),
                            record: self.send_rec(id, Some(o)),
                        });
                    }
                }
            }
        }
    }

    /// Complete sessions: every acked committed record present; committed transactions
    /// whole under read_committed.
    pub(super) fn check_complete(&self, out: &mut Vec<Anomaly>) {
        let mut by_txn: BTreeMap<u64, Vec<SendId>> = BTreeMap::new();
        for id in self.ids() {
            if let (Some(t), Some(_)) = (self.rec_of(id).txn, self.acked_at(id)) {
                by_txn.entry(t).or_default().push(id);
            }
        }
        for s in self.sessions.iter().filter(|s| s.complete) {
            let seen: BTreeSet<SendId> = s.reads.iter().filter_map(|r| self.matched(r)).collect();
            let mut excused = BTreeSet::new();
            if s.isolation == Isolation::ReadCommitted {
                for (&txn, ids) in &by_txn {
                    if self.txns.get(&txn) != Some(&TxnOutcome::Committed) {
                        continue;
                    }
                    let (got, missing): (Vec<SendId>, Vec<SendId>) = ids
                        .iter()
                        .filter(|&&id| s.topic.as_ref().is_none_or(|t| *t == self.rec_of(id).topic))
                        .partition(|id| seen.contains(id));
                    if !got.is_empty() && !missing.is_empty() {
                        excused.extend(missing.iter().copied());
                        let recs = |ids: &[SendId]| {
                            ids.iter()
                                .map(|&id| self.send_rec(id, self.acked_at(id)))
                                .collect()
                        };
                        out.push(Anomaly::TornTxn {
                            session: s.name.clone(),
                            txn,
                            seen: recs(&got),
                            missing: recs(&missing),
                        });
                    }
                }
            }
            for id in self.ids() {
                let Some(o) = self.acked_at(id) else { continue };
                if s.topic
                    .as_ref()
                    .is_some_and(|t| *t != self.rec_of(id).topic)
                    || self.deleted_at(id, o)
                    || self.broker_lost(id)
                {
                    continue;
                }
                if self.committed(id) && !seen.contains(&id) && !excused.contains(&id) {
                    out.push(Anomaly::LostAck {
                        session: s.name.clone(),
                        record: self.send_rec(id, Some(o)),
                    });
                }
            }
        }
    }
}
