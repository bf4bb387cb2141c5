//! The sticky assignment when every member subscribes to the same topics (Java's
//! `ConstrainedAssignmentBuilder`).
//!
//! With `P` partitions and `M` members, each member gets `min = P / M` or `max = ⌈P / M⌉`
//! partitions, and exactly `P % M` members get `max`:
//!
//! 1. Members keep their owned partitions (on their rack, when rack-aware) up to `max`
//!    while `max` slots remain, else up to `min`; the rest may be revoked.
//! 2. When rack-aware, unassigned partitions go round-robin to members on a replica's
//!    rack, within the quotas.
//! 3. The rest go round-robin to members below `min`, then to members at `min` while
//!    `max` slots remain.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::RackInfo;
use crate::group::assignor::{AssignFailure, Group, Tp};

/// Partitions moving from a current owner to another member, with the new owner (what
/// `cooperative-sticky` must leave out for now).
pub(super) type Transfers = BTreeMap<Tp, usize>;

/// Per member, its partitions; and the partitions changing owner.
pub(super) fn build(
    group: &Group<'_>,
    racks: &RackInfo<'_>,
    owned: Vec<Vec<Tp>>,
    multiple_owners: &BTreeSet<Tp>,
) -> Result<(Vec<Vec<Tp>>, Transfers), AssignFailure> {
    let members = owned.len();
    let total: usize = group.topics.iter().map(|t| t.partitions.len()).sum();
    let mut b = Builder {
        min_quota: total / members,
        max_quota: total.div_ceil(members),
        expected_over_min: total % members,
        current_over_min: 0,
        assignment: vec![Vec::new(); members],
        maybe_revoked: HashMap::new(),
        multiple_owners,
        under_min: Vec::new(),
        exactly_min: Vec::new(),
        transferring: BTreeMap::new(),
    };

    let assigned = b.assign_owned(racks, owned);
    let mut unassigned: Vec<Tp> = group
        .all_partitions()
        .filter(|tp| !assigned.contains(tp))
        .collect();
    // Member indexes are in member-id order, as Java sorts these lists.
    b.under_min.sort_unstable();
    b.exactly_min.sort_unstable();
    racks.sort_by_rack_members(&mut unassigned);

    let unassigned = b.assign_rack_aware_round_robin(racks, unassigned);
    b.assign_round_robin(&unassigned)?;
    b.verify_unfilled()?;
    Ok((b.assignment, b.transferring))
}

struct Builder<'a> {
    min_quota: usize,
    max_quota: usize,
    /// Members that end with `max_quota` (zero when `min_quota == max_quota`).
    expected_over_min: usize,
    current_over_min: usize,
    assignment: Vec<Vec<Tp>>,
    /// Owned partitions not kept by their owner, with that owner.
    maybe_revoked: HashMap<Tp, usize>,
    multiple_owners: &'a BTreeSet<Tp>,
    /// Members that may still get partitions: below `min_quota` ...
    under_min: Vec<usize>,
    /// ... and at exactly `min_quota` while `max_quota` slots remain.
    exactly_min: Vec<usize>,
    transferring: BTreeMap<Tp, usize>,
}

impl Builder<'_> {
    /// Step 1; returns the partitions kept.
    fn assign_owned(&mut self, racks: &RackInfo<'_>, owned: Vec<Vec<Tp>>) -> BTreeSet<Tp> {
        let mut assigned = BTreeSet::new();
        for (member, tps) in owned.into_iter().enumerate() {
            let mut keep: Vec<Tp> = Vec::with_capacity(tps.len());
            for tp in tps {
                if racks.mismatch(member, tp) {
                    self.maybe_revoked.insert(tp, member);
                } else {
                    keep.push(tp);
                }
            }
            // Java keeps the lowest partition numbers first, across topics.
            keep.sort_by_key(|tp| (tp.partition, tp.topic));
            keep.retain(|tp| !self.multiple_owners.contains(tp));

            let kept = if keep.len() < self.min_quota {
                self.under_min.push(member);
                keep.len()
            } else if keep.len() >= self.max_quota && self.current_over_min < self.expected_over_min
            {
                self.current_over_min += 1;
                if self.current_over_min == self.expected_over_min {
                    self.exactly_min.clear();
                }
                self.max_quota
            } else {
                if self.current_over_min < self.expected_over_min {
                    self.exactly_min.push(member);
                }
                self.min_quota
            };
            for &tp in &keep[kept..] {
                self.maybe_revoked.insert(tp, member);
            }
            keep.truncate(kept);
            assigned.extend(keep.iter().copied());
            self.assignment[member].extend(keep);
        }
        assigned
    }

    /// Step 2; returns the partitions still unassigned, in order.
    fn assign_rack_aware_round_robin(
        &mut self,
        racks: &RackInfo<'_>,
        unassigned: Vec<Tp>,
    ) -> Vec<Tp> {
        if !racks.active() {
            return unassigned;
        }
        let mut left = Vec::new();
        let mut next_index = 0;
        for tp in unassigned {
            let mut chosen = None;
            if let Some(mut index) = racks.next_rack_member(tp, &self.under_min, next_index) {
                let member = self.under_min[index];
                let count = self.assignment[member].len() + 1;
                if count >= self.min_quota {
                    self.under_min.remove(index);
                    if count < self.max_quota && self.current_over_min < self.expected_over_min {
                        self.exactly_min.push(member);
                    }
                } else {
                    index += 1;
                }
                next_index = match self.under_min.len() {
                    0 => 0,
                    n => index % n,
                };
                chosen = Some(member);
            } else if !self.exactly_min.is_empty() {
                if let Some(first) = racks.next_rack_member(tp, &self.exactly_min, 0) {
                    let member = self.exactly_min[first];
                    if self.assignment[member].len() + 1 == self.max_quota {
                        self.exactly_min.remove(first);
                        self.current_over_min += 1;
                        if self.current_over_min == self.expected_over_min {
                            self.exactly_min.clear();
                        }
                    }
                    chosen = Some(member);
                }
            }
            match chosen {
                Some(member) => {
                    self.assign_new(tp, member);
                }
                None => left.push(tp),
            }
        }
        left
    }

    /// Step 3, walking `under_min` like Java's list iterator (restarted at its end).
    fn assign_round_robin(&mut self, unassigned: &[Tp]) -> Result<(), AssignFailure> {
        let mut next = 0;
        for &tp in unassigned {
            let (member, from_under) = if next < self.under_min.len() {
                next += 1;
                (self.under_min[next - 1], true)
            } else if self.under_min.is_empty() && self.exactly_min.is_empty() {
                return Err(AssignFailure::Internal(
                    "no more unfilled members to assign to",
                ));
            } else if self.under_min.is_empty() {
                (self.exactly_min.remove(0), false)
            } else {
                next = 1;
                (self.under_min[0], true)
            };

            let count = self.assign_new(tp, member);
            if count == self.min_quota {
                if !from_under {
                    return Err(AssignFailure::Internal("a member at quota fell below it"));
                }
                next -= 1;
                self.under_min.remove(next);
                self.exactly_min.push(member);
            } else if count == self.max_quota {
                self.current_over_min += 1;
            }
        }
        Ok(())
    }

    fn assign_new(&mut self, tp: Tp, member: usize) -> usize {
        self.assignment[member].push(tp);
        let moved = self.maybe_revoked.get(&tp).is_some_and(|&m| m != member);
        if moved || self.multiple_owners.contains(&tp) {
            self.transferring.insert(tp, member);
        }
        self.assignment[member].len()
    }

    fn verify_unfilled(&self) -> Result<(), AssignFailure> {
        if self.under_min.is_empty() {
            return Ok(());
        }
        if self.current_over_min != self.expected_over_min {
            return Err(AssignFailure::Internal(
                "fewer members than expected above the minimum quota, and nothing left to assign",
            ));
        }
        if self
            .under_min
            .iter()
            .any(|&m| self.assignment[m].len() != self.min_quota)
        {
            return Err(AssignFailure::Internal(
                "a member ended below the minimum quota",
            ));
        }
        Ok(())
    }
}
