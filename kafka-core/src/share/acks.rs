//! Acknowledgement bookkeeping: records handed out and not acknowledged yet, decided
//! acknowledgements not sent yet (as offset ranges, so a range from the wire is never
//! expanded offset by offset), and their encoding as AcknowledgementBatches with
//! contiguous runs of one type merged.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::TopicPartition;

/// How a record is acknowledged (the wire values of KIP-932).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum AcknowledgeType {
    /// Processed: never delivered again (1).
    Accept,
    /// Not processed: back to the group, delivered again (to any member) with a higher
    /// delivery count (2).
    Release,
    /// Unprocessable: never delivered again, not counted as processed (3).
    Reject,
    /// An offset in an acquired range that holds no deliverable record (a control
    /// record or a compacted gap) (0).
    Gap,
    /// Still processing: the record stays acquired by this member and its acquisition
    /// lock starts again (KIP-1222, ShareFetch/ShareAcknowledge v2; 4). Not a final
    /// acknowledgement: once the renewal completes the record is handed out again by a
    /// later poll and still needs an accept, release or reject (or another renewal).
    Renew,
}

impl AcknowledgeType {
    /// The wire value.
    pub fn code(self) -> i8 {
        match self {
            AcknowledgeType::Gap => 0,
            AcknowledgeType::Accept => 1,
            AcknowledgeType::Release => 2,
            AcknowledgeType::Reject => 3,
            AcknowledgeType::Renew => 4,
        }
    }
}

/// An inclusive offset range with one acknowledgement type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckRange {
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) kind: AcknowledgeType,
    /// The records were handed to the application (reported when completed); `false`
    /// for gaps and releases of records never handed out.
    pub(crate) handed: bool,
}

/// Acknowledgements decided and not sent, per partition.
pub(crate) type Pending = BTreeMap<TopicPartition, Vec<AckRange>>;

/// What the share consumer owes the brokers.
#[derive(Debug, Default)]
pub(crate) struct Acks {
    /// Records handed out and not acknowledged yet.
    pub(crate) handed: BTreeMap<TopicPartition, BTreeSet<i64>>,
    /// Acknowledgements decided, not sent yet.
    pub(crate) pending: Pending,
}

impl Acks {
    /// A record was handed out.
    pub(crate) fn hand_out(&mut self, tp: &TopicPartition, offset: i64) {
        self.handed.entry(tp.clone()).or_default().insert(offset);
    }

    /// Acknowledges a handed-out record; `false` if it is not awaiting one.
    pub(crate) fn acknowledge(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        kind: AcknowledgeType,
    ) -> bool {
        let Some(set) = self.handed.get_mut(tp) else {
            return false;
        };
        if !set.remove(&offset) {
            return false;
        }
        if set.is_empty() {
            self.handed.remove(tp);
        }
        self.add_range(
            tp,
            AckRange {
                first: offset,
                last: offset,
                kind,
                handed: true,
            },
        );
        true
    }

    /// How many handed-out records await an acknowledgement.
    pub(crate) fn unacknowledged(&self) -> usize {
        self.handed.values().map(BTreeSet::len).sum()
    }

    /// Every handed-out record not acknowledged yet gets `kind` (implicit acceptance,
    /// release at close).
    pub(crate) fn settle_handed(&mut self, kind: AcknowledgeType) {
        for (tp, offsets) in std::mem::take(&mut self.handed) {
            for o in offsets {
                self.add_range(
                    &tp,
                    AckRange {
                        first: o,
                        last: o,
                        kind,
                        handed: true,
                    },
                );
            }
        }
    }

    /// Adds a decided range of records never handed out (gaps, releases).
    pub(crate) fn add(
        &mut self,
        tp: &TopicPartition,
        first: i64,
        last: i64,
        kind: AcknowledgeType,
    ) {
        self.add_range(
            tp,
            AckRange {
                first,
                last,
                kind,
                handed: false,
            },
        );
    }

    fn add_range(&mut self, tp: &TopicPartition, r: AckRange) {
        if r.last < r.first {
            return;
        }
        self.pending.entry(tp.clone()).or_default().push(r);
    }

    /// Takes the decided acknowledgements of the partitions `which` accepts.
    pub(crate) fn take_pending(
        &mut self,
        mut which: impl FnMut(&TopicPartition) -> bool,
    ) -> Pending {
        let keys: Vec<TopicPartition> = self.pending.keys().filter(|k| which(k)).cloned().collect();
        keys.into_iter()
            .filter_map(|k| self.pending.remove_entry(&k))
            .collect()
    }

    /// Takes the renewals (`Renew` ranges) of the partitions `which` accepts.
    pub(crate) fn take_renewals(
        &mut self,
        mut which: impl FnMut(&TopicPartition) -> bool,
    ) -> Pending {
        let mut out = Pending::new();
        for (tp, ranges) in self.pending.iter_mut().filter(|(tp, _)| which(tp)) {
            let (renew, keep): (Vec<AckRange>, Vec<AckRange>) = std::mem::take(ranges)
                .into_iter()
                .partition(|r| r.kind == AcknowledgeType::Renew);
            *ranges = keep;
            if !renew.is_empty() {
                out.insert(tp.clone(), renew);
            }
        }
        self.pending.retain(|_, r| !r.is_empty());
        out
    }

    /// Whether a renewal of a partition `which` accepts waits to be sent.
    pub(crate) fn has_renewal(&self, mut which: impl FnMut(&TopicPartition) -> bool) -> bool {
        self.pending
            .iter()
            .any(|(tp, r)| which(tp) && r.iter().any(|r| r.kind == AcknowledgeType::Renew))
    }

    /// Renewals not sent yet become `kind` (a release at close).
    pub(crate) fn replace_renewals(&mut self, kind: AcknowledgeType) {
        for r in self.pending.values_mut().flatten() {
            if r.kind == AcknowledgeType::Renew {
                r.kind = kind;
            }
        }
    }

    /// Puts acknowledgements back (their request failed before the broker read them).
    pub(crate) fn restore(&mut self, sent: Pending) {
        for (tp, ranges) in sent {
            self.pending.entry(tp).or_default().extend(ranges);
        }
    }

    /// Forgets everything (fenced: the member's acquisitions are gone).
    pub(crate) fn clear(&mut self) {
        self.handed.clear();
        self.pending.clear();
    }
}

/// A partition's ranges as `(first, last, types)` batches: sorted, and contiguous ranges
/// of one type merged into one batch with a single type.
pub(crate) fn batches(ranges: &[AckRange]) -> Vec<(i64, i64, Vec<i8>)> {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.first);
    let mut out: Vec<(i64, i64, AcknowledgeType)> = Vec::new();
    for r in sorted {
        match out.last_mut() {
            Some(last) if last.2 == r.kind && last.1.checked_add(1) == Some(r.first) => {
                last.1 = r.last;
            }
            _ => out.push((r.first, r.last, r.kind)),
        }
    }
    out.into_iter()
        .map(|(f, l, k)| (f, l, vec![k.code()]))
        .collect()
}

/// The parts of the acquired ranges not in `delivered` (sorted offsets), as ranges.
pub(crate) fn undelivered(acquired: &[(i64, i64)], delivered: &[i64]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for &(first, last) in acquired {
        let mut from = first;
        let start = delivered.partition_point(|&o| o < first);
        for &o in delivered[start..].iter().take_while(|&&o| o <= last) {
            if o > from {
                out.push((from, o - 1));
            }
            from = o.saturating_add(1);
        }
        if from <= last {
            out.push((from, last));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(first: i64, last: i64, kind: AcknowledgeType) -> AckRange {
        AckRange {
            first,
            last,
            kind,
            handed: true,
        }
    }

    #[test]
    fn contiguous_runs_of_one_type_merge() {
        use AcknowledgeType::*;
        let got = batches(&[
            r(3, 3, Accept),
            r(0, 1, Accept),
            r(2, 2, Accept),
            r(4, 4, Release),
            r(6, 9, Release),
        ]);
        assert_eq!(got, vec![(0, 3, vec![1]), (4, 4, vec![2]), (6, 9, vec![2])]);
    }

    #[test]
    fn undelivered_parts_of_acquired_ranges() {
        assert_eq!(undelivered(&[(0, 9)], &[0, 1, 5, 9]), vec![(2, 4), (6, 8)]);
        assert_eq!(
            undelivered(&[(0, 2), (10, 11)], &[]),
            vec![(0, 2), (10, 11)]
        );
        assert_eq!(undelivered(&[(0, i64::MAX)], &[0]), vec![(1, i64::MAX)]);
    }
}
