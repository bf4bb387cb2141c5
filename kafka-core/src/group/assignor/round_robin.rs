//! The round-robin assignor (`roundrobin`), as Java's `RoundRobinAssignor`.
//!
//! All subscribed partitions (topics by name, partitions ascending) are dealt in turn to
//! the members in Java's member order (static members by instance id first, then the
//! others by member id), skipping members not subscribed to the partition's topic. With
//! identical subscriptions, counts differ by at most one. Not rack-aware (neither is Java's).

use std::collections::BTreeMap;

use super::{AssignError, Assignor, Group, MemberSubscription, RebalanceProtocol, TopicLayout, Tp};
use crate::group::protocol::Assignment;

/// The `roundrobin` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobinAssignor;

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &str {
        "roundrobin"
    }

    fn protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError> {
        let group = Group::new("roundrobin", layout, members)?;
        let mut out: Vec<Vec<Tp>> = vec![Vec::new(); group.members.len()];
        let order = group.java_member_order((0..group.members.len()).collect());
        let mut next = 0;
        for tp in group.all_partitions() {
            // Some member subscribes to every topic in the group, so this ends.
            while !group.members[order[next]].topics.contains(&tp.topic) {
                next = (next + 1) % order.len();
            }
            out[order[next]].push(tp);
            next = (next + 1) % order.len();
        }
        Ok(group.to_assignments(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::assignor::tests::{layout, member, result};

    #[test]
    fn javadoc_examples() {
        let l = layout(&[("t0", 3), ("t1", 3)]);
        let m = [member("C0", &["t0", "t1"]), member("C1", &["t0", "t1"])];
        let r = result(&RoundRobinAssignor.assign(&l, &m).unwrap());
        assert_eq!(r["C0"], vec![("t0", 0), ("t0", 2), ("t1", 1)]);
        assert_eq!(r["C1"], vec![("t0", 1), ("t1", 0), ("t1", 2)]);

        let l = layout(&[("t0", 1), ("t1", 2), ("t2", 3)]);
        let m = [
            member("C0", &["t0"]),
            member("C1", &["t0", "t1"]),
            member("C2", &["t0", "t1", "t2"]),
        ];
        let r = result(&RoundRobinAssignor.assign(&l, &m).unwrap());
        assert_eq!(r["C0"], vec![("t0", 0)]);
        assert_eq!(r["C1"], vec![("t1", 0)]);
        assert_eq!(r["C2"], vec![("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]);
    }

    #[test]
    fn no_members_or_no_partitions() {
        let l = layout(&[("t", 2)]);
        assert!(RoundRobinAssignor.assign(&l, &[]).unwrap().is_empty());
        let r = RoundRobinAssignor
            .assign(&l, &[member("a", &["u"])])
            .unwrap();
        assert!(r["a"].partitions.is_empty());
    }
}
