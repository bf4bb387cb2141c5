//! The range assignor (`range`), as Java's `RangeAssignor`.
//!
//! Per topic, the partitions in order are cut into contiguous ranges, one per subscribed
//! member in Java's member order (static members by instance id first, then the others by
//! member id); the first `partitions % members` members get one extra.
//!
//! Rack-aware (KIP-881) when some topic needs it (members send racks, replica racks are
//! known, and not every partition is on every rack): first, per set of topics with the
//! same members and partition count (co-partitioned), partition `i` of all of them goes to
//! the first member whose rack holds a replica of each, within each member's quota; then
//! single topics needing it are filled with rack-matching partitions; then the rest is
//! assigned in ranges. Per-topic quotas are the same as without racks, so balance and
//! co-partitioning come before rack alignment.

use std::collections::BTreeMap;

use super::{
    use_rack_aware, AssignError, Assignor, Group, MemberSubscription, RebalanceProtocol,
    TopicLayout, Tp,
};
use crate::group::protocol::Assignment;

/// The `range` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &str {
        "range"
    }

    fn protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError> {
        let group = Group::new("range", layout, members)?;
        let mut out: Vec<Vec<Tp>> = vec![Vec::new(); group.members.len()];
        let mut states: Vec<TopicState> = (0..group.topics.len())
            .map(|t| TopicState::new(&group, t as u32))
            .collect();

        if states.iter().any(|s| s.needs_rack_aware) {
            assign_with_rack_matching(&group, &mut states, &mut out);
        }
        for state in &mut states {
            state.assign_ranges(&mut out, |_, _, _| true);
        }
        Ok(group.to_assignments(out))
    }
}

/// What is left to assign of one topic.
struct TopicState {
    topic: u32,
    /// Subscribed members in Java's member order.
    consumers: Vec<usize>,
    /// Whether any of `consumers` has a rack (Java fills its partition-rack map only then).
    consumer_racks: bool,
    needs_rack_aware: bool,
    /// Partition ids not yet assigned, ascending.
    unassigned: Vec<i32>,
    assigned_count: BTreeMap<usize, usize>,
    per_consumer: usize,
    remaining_with_extra: i64,
}

impl TopicState {
    fn new(group: &Group<'_>, topic: u32) -> Self {
        let info = &group.topics[topic as usize];
        let subscribed = (0..group.members.len())
            .filter(|&m| group.members[m].topics.contains(&topic))
            .collect();
        let consumers = group.java_member_order(subscribed);
        let n = info.partitions.len();
        let (per_consumer, extra) = match consumers.len() {
            0 => (0, 0),
            c => (n / c, n % c),
        };
        let member_racks: Vec<&str> = consumers
            .iter()
            .filter_map(|&m| group.members[m].rack)
            .collect();
        let partition_racks: Vec<&str> = info.racks.iter().flatten().copied().collect();
        let needs_rack_aware = !member_racks.is_empty()
            && use_rack_aware(
                &member_racks,
                &partition_racks,
                info.racks.iter().map(Vec::as_slice),
            );
        TopicState {
            topic,
            assigned_count: consumers.iter().map(|&c| (c, 0)).collect(),
            consumer_racks: !member_racks.is_empty(),
            consumers,
            needs_rack_aware,
            unassigned: info.partitions.clone(),
            per_consumer,
            remaining_with_extra: extra as i64,
        }
    }

    /// The size of the partition-rack map Java groups co-partitioned topics by.
    fn rack_map_len(&self, group: &Group<'_>) -> usize {
        if self.consumer_racks {
            group.topics[self.topic as usize].partitions.len()
        } else {
            0
        }
    }

    fn racks_match(&self, group: &Group<'_>, member: usize, partition: i32) -> bool {
        match group.members[member].rack {
            None => true,
            Some(rack) => group
                .racks(Tp {
                    topic: self.topic,
                    partition,
                })
                .contains(&rack),
        }
    }

    fn max_assignable(&self, member: usize) -> usize {
        let cap = self.per_consumer + usize::from(self.remaining_with_extra > 0);
        cap.saturating_sub(self.assigned_count.get(&member).copied().unwrap_or(0))
    }

    fn on_assigned(&mut self, member: usize, partitions: &[i32], out: &mut [Vec<Tp>]) {
        out[member].extend(partitions.iter().map(|&partition| Tp {
            topic: self.topic,
            partition,
        }));
        let count = self.assigned_count.entry(member).or_insert(0);
        *count += partitions.len();
        if *count > self.per_consumer {
            self.remaining_with_extra -= 1;
        }
        self.unassigned.retain(|p| !partitions.contains(p));
    }

    /// Java's `assignRanges`: each member in order takes the first unassigned partitions
    /// `may_assign` allows, up to its quota.
    fn assign_ranges(
        &mut self,
        out: &mut [Vec<Tp>],
        may_assign: impl Fn(&Self, usize, i32) -> bool,
    ) {
        for i in 0..self.consumers.len() {
            if self.unassigned.is_empty() {
                break;
            }
            let member = self.consumers[i];
            let take: Vec<i32> = self
                .unassigned
                .iter()
                .copied()
                .filter(|&p| may_assign(self, member, p))
                .take(self.max_assignable(member))
                .collect();
            if !take.is_empty() {
                self.on_assigned(member, &take, out);
            }
        }
    }
}

/// Java's `assignWithRackMatching`: topics grouped by member set, then by partition count.
fn assign_with_rack_matching(group: &Group<'_>, states: &mut [TopicState], out: &mut [Vec<Tp>]) {
    let mut by_members: BTreeMap<(Vec<usize>, usize), Vec<usize>> = BTreeMap::new();
    for (i, s) in states.iter().enumerate() {
        by_members
            .entry((s.consumers.clone(), s.rack_map_len(group)))
            .or_default()
            .push(i);
    }
    for ((consumers, num_partitions), members_states) in by_members {
        if members_states.len() > 1 {
            assign_co_partitioned(
                group,
                &consumers,
                num_partitions,
                &members_states,
                states,
                out,
            );
        } else {
            let state = &mut states[members_states[0]];
            if state.needs_rack_aware {
                state.assign_ranges(out, |s, m, p| s.racks_match(group, m, p));
            }
        }
    }
}

/// Java's `assignCoPartitionedWithRackMatching`: partition `i` of every topic in the set
/// goes to the first member rack-matching all of them with quota left in each.
fn assign_co_partitioned(
    group: &Group<'_>,
    consumers: &[usize],
    num_partitions: usize,
    set: &[usize],
    states: &mut [TopicState],
    out: &mut [Vec<Tp>],
) {
    let mut remaining: Vec<usize> = consumers.to_vec();
    for i in 0..num_partitions {
        // Partition index i of each topic (ids are 0..n in any real layout).
        let pick = remaining.iter().copied().find(|&c| {
            set.iter().all(|&s| {
                let st = &states[s];
                let p = group.topics[st.topic as usize].partitions[i];
                st.racks_match(group, c, p) && st.max_assignable(c) > 0
            })
        });
        let Some(member) = pick else { continue };
        for &s in set {
            let p = group.topics[states[s].topic as usize].partitions[i];
            states[s].on_assigned(member, &[p], out);
        }
        if set.iter().all(|&s| states[s].max_assignable(member) == 0) {
            remaining.retain(|&c| c != member);
            if remaining.is_empty() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::assignor::tests::{layout, member, racked_layout, result};

    #[test]
    fn javadoc_example() {
        let l = layout(&[("t0", 3), ("t1", 3)]);
        let m = [member("C0", &["t0", "t1"]), member("C1", &["t0", "t1"])];
        let r = result(&RangeAssignor.assign(&l, &m).unwrap());
        assert_eq!(r["C0"], vec![("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]);
        assert_eq!(r["C1"], vec![("t0", 2), ("t1", 2)]);
    }

    #[test]
    fn static_members_first_by_instance_id() {
        let l = layout(&[("t", 3)]);
        let mut a = member("a", &["t"]);
        let mut b = member("b", &["t"]);
        a.instance_id = Some("z".into());
        b.instance_id = Some("y".into());
        let c = member("c", &["t"]);
        let r = result(&RangeAssignor.assign(&l, &[c, a, b]).unwrap());
        assert_eq!(r["b"], vec![("t", 0)]);
        assert_eq!(r["a"], vec![("t", 1)]);
        assert_eq!(r["c"], vec![("t", 2)]);
    }

    #[test]
    fn unknown_topics_and_members_without_partitions() {
        let l = layout(&[("t", 1)]);
        let m = [
            member("a", &["t", "missing"]),
            member("b", &["t"]),
            member("c", &[]),
        ];
        let r = result(&RangeAssignor.assign(&l, &m).unwrap());
        assert_eq!(r["a"], vec![("t", 0)]);
        assert!(r["b"].is_empty() && r["c"].is_empty());
    }

    #[test]
    fn rack_aware_aligns_within_quota() {
        // Partition p has its only replica on rack r{p % 2}; members a (r1) and b (r0).
        let l = racked_layout(&[("t", 4)], |p| vec![format!("r{}", p % 2)]);
        let mut a = member("a", &["t"]);
        a.subscription.rack_id = Some("r1".into());
        let mut b = member("b", &["t"]);
        b.subscription.rack_id = Some("r0".into());
        let r = result(&RangeAssignor.assign(&l, &[a, b]).unwrap());
        assert_eq!(r["a"], vec![("t", 1), ("t", 3)]);
        assert_eq!(r["b"], vec![("t", 0), ("t", 2)]);
    }

    #[test]
    fn co_partitioned_topics_stay_together_with_racks() {
        let l = racked_layout(&[("x", 2), ("y", 2)], |p| vec![format!("r{p}")]);
        let mut a = member("a", &["x", "y"]);
        a.subscription.rack_id = Some("r1".into());
        let mut b = member("b", &["x", "y"]);
        b.subscription.rack_id = Some("r0".into());
        let r = result(&RangeAssignor.assign(&l, &[a, b]).unwrap());
        assert_eq!(r["a"], vec![("x", 1), ("y", 1)]);
        assert_eq!(r["b"], vec![("x", 0), ("y", 0)]);
    }
}
