//! Partition assignors: what the group leader runs over every member's [`Subscription`]
//! to hand out partitions, as pure functions of their inputs.
//!
//! The built-in assignors follow the Java client's: [`RangeAssignor`] (`range`),
//! [`RoundRobinAssignor`] (`roundrobin`), [`StickyAssignor`] (`sticky`) and
//! [`CooperativeStickyAssignor`] (`cooperative-sticky`), including rack-aware assignment
//! (KIP-881) when members send a rack and the layout carries replica racks.
//!
//! Inputs are deduplicated and read in a fixed order (members by id, topics by name), so
//! an assignment is a function of its inputs. Java iterates hash maps in places; where
//! its result depends on that order (some sticky cases), ours is one of the valid
//! answers, not necessarily Java's.

mod range;
mod round_robin;
mod sticky;

use std::collections::BTreeMap;

pub use range::RangeAssignor;
pub use round_robin::RoundRobinAssignor;
pub use sticky::{CooperativeStickyAssignor, StickyAssignor};

use crate::group::protocol::{flatten, java_cmp, Assignment, Subscription, TopicPartitions};

/// How members hand partitions over in a rebalance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RebalanceProtocol {
    /// Every member revokes everything before rejoining; the leader may reshuffle freely.
    Eager,
    /// Members keep their partitions while rejoining; a partition changing owner is
    /// first revoked (left out of the assignment) and handed over in a later rebalance.
    Cooperative,
}

/// One member's subscription as the leader sees it in the JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberSubscription {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its `group.instance.id` (static membership), if any.
    pub instance_id: Option<String>,
    /// Its decoded subscription.
    pub subscription: Subscription,
}

/// Partition layout the leader assigns from: topic -> partitions with the racks of their replicas.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicLayout {
    /// Every known topic and its partitions. Topics nobody subscribes to are ignored, and
    /// so are subscribed topics missing here or without partitions.
    pub topics: BTreeMap<String, Vec<PartitionRacks>>,
}

/// One partition and the racks of its replicas (empty when brokers have no rack).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRacks {
    /// Partition index.
    pub partition: i32,
    /// Racks of the partition's replicas (all replicas, as Java counts them).
    pub racks: Vec<String>,
}

/// A partition assignment strategy, as the group leader runs it.
pub trait Assignor: Send + Sync + std::fmt::Debug {
    /// The protocol name sent in JoinGroup (`range`, `cooperative-sticky`, ...).
    fn name(&self) -> &str;

    /// The rebalance protocols this assignor supports; the first is preferred.
    fn protocols(&self) -> &[RebalanceProtocol];

    /// The user data a member puts in its [`Subscription`], given the partitions it owns
    /// and the generation it got them in (`-1` before its first assignment).
    fn user_data(&self, owned: &[TopicPartitions], generation: i32) -> Option<Vec<u8>> {
        let _ = (owned, generation);
        None
    }

    /// Assigns the layout's subscribed partitions to `members`. Every member gets an
    /// entry, possibly empty.
    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError>;
}

/// The built-in assignor called `name` (`range`, `roundrobin`, `sticky`,
/// `cooperative-sticky`), also accepting Java class names such as
/// `org.apache.kafka.clients.consumer.RangeAssignor`.
pub fn builtin(name: &str) -> Option<Box<dyn Assignor>> {
    const PACKAGE: &str = "org.apache.kafka.clients.consumer.";
    let short = name.trim();
    let short = short.strip_prefix(PACKAGE).unwrap_or(short);
    match short {
        "range" | "RangeAssignor" => Some(Box::new(RangeAssignor)),
        "roundrobin" | "RoundRobinAssignor" => Some(Box::new(RoundRobinAssignor)),
        "sticky" | "StickyAssignor" => Some(Box::new(StickyAssignor)),
        "cooperative-sticky" | "CooperativeStickyAssignor" => {
            Some(Box::new(CooperativeStickyAssignor))
        }
        _ => None,
    }
}

/// An assignor could not produce an assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{assignor} assignor: {reason}")]
pub struct AssignError {
    /// The assignor's name.
    pub assignor: &'static str,
    /// What went wrong.
    pub reason: AssignFailure,
}

/// Why an assignor failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AssignFailure {
    /// Two entries of `members` carry the same member id (the input is not a group).
    #[error("member id {0:?} appears more than once")]
    DuplicateMember(String),
    /// The algorithm's own consistency check failed (Java throws
    /// `IllegalStateException` at the same points); a bug, not an input problem.
    #[error("internal consistency check failed: {0}")]
    Internal(&'static str),
}

/// A partition of the prepared group: the topic's index in [`Group::topics`] (topics are
/// sorted by name, so the derived order is Java's topic-then-partition order) and the
/// partition id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Tp {
    pub(crate) topic: u32,
    pub(crate) partition: i32,
}

/// A subscribed topic with partitions.
#[derive(Debug)]
pub(crate) struct TopicInfo<'a> {
    pub(crate) name: &'a str,
    /// Partition ids, ascending, distinct.
    pub(crate) partitions: Vec<i32>,
    /// Racks of each partition's replicas (parallel to `partitions`), sorted, distinct.
    pub(crate) racks: Vec<Vec<&'a str>>,
}

/// A member of the prepared group.
#[derive(Debug)]
pub(crate) struct MemberInfo<'a> {
    pub(crate) id: &'a str,
    pub(crate) instance_id: Option<&'a str>,
    /// `client.rack`, when set and non-empty.
    pub(crate) rack: Option<&'a str>,
    /// Subscribed topics that exist in the layout (indexes into [`Group::topics`]), ascending.
    pub(crate) topics: Vec<u32>,
    /// Every subscribed topic name, existing or not, sorted and distinct.
    pub(crate) subscribed: Vec<&'a str>,
    pub(crate) subscription: &'a Subscription,
}

/// The assignors' common view of their input: members sorted by id, the subscribed topics
/// with partitions sorted by name.
#[derive(Debug)]
pub(crate) struct Group<'a> {
    pub(crate) topics: Vec<TopicInfo<'a>>,
    pub(crate) members: Vec<MemberInfo<'a>>,
}

impl<'a> Group<'a> {
    pub(crate) fn new(
        assignor: &'static str,
        layout: &'a TopicLayout,
        members: &'a [MemberSubscription],
    ) -> Result<Group<'a>, AssignError> {
        let mut sorted: Vec<&MemberSubscription> = members.iter().collect();
        sorted.sort_by(|a, b| java_cmp(&a.member_id, &b.member_id));
        for pair in sorted.windows(2) {
            if pair[0].member_id == pair[1].member_id {
                return Err(AssignError {
                    assignor,
                    reason: AssignFailure::DuplicateMember(pair[0].member_id.clone()),
                });
            }
        }
        let mut wanted: Vec<&str> = members
            .iter()
            .flat_map(|m| m.subscription.topics.iter().map(String::as_str))
            .collect();
        wanted.sort_by(|a, b| java_cmp(a, b));
        wanted.dedup();
        let mut topics = Vec::new();
        for name in wanted {
            let Some(parts) = layout.topics.get(name) else {
                continue;
            };
            let mut parts: Vec<&PartitionRacks> = parts.iter().collect();
            parts.sort_by_key(|p| p.partition);
            parts.dedup_by_key(|p| p.partition);
            if parts.is_empty() {
                continue;
            }
            topics.push(TopicInfo {
                name,
                partitions: parts.iter().map(|p| p.partition).collect(),
                racks: parts
                    .iter()
                    .map(|p| {
                        let mut r: Vec<&str> = p.racks.iter().map(String::as_str).collect();
                        r.sort_unstable();
                        r.dedup();
                        r
                    })
                    .collect(),
            });
        }
        let index = |name: &str| {
            topics
                .binary_search_by(|t: &TopicInfo<'_>| java_cmp(t.name, name))
                .ok()
                .map(|i| i as u32)
        };
        let members = sorted
            .into_iter()
            .map(|m| {
                let mut subscribed: Vec<&str> =
                    m.subscription.topics.iter().map(String::as_str).collect();
                subscribed.sort_by(|a, b| java_cmp(a, b));
                subscribed.dedup();
                let topic_ids = subscribed.iter().filter_map(|t| index(t)).collect();
                MemberInfo {
                    id: &m.member_id,
                    instance_id: m.instance_id.as_deref(),
                    rack: m.subscription.rack_id.as_deref().filter(|r| !r.is_empty()),
                    topics: topic_ids,
                    subscribed,
                    subscription: &m.subscription,
                }
            })
            .collect();
        Ok(Group { topics, members })
    }

    /// The index of topic `name`, if it is a subscribed topic with partitions.
    pub(crate) fn topic_index(&self, name: &str) -> Option<u32> {
        self.topics
            .binary_search_by(|t| java_cmp(t.name, name))
            .ok()
            .map(|i| i as u32)
    }

    /// Turns `(topic name, partition)` pairs into [`Tp`]s, dropping those of topics that
    /// are not subscribed or have no such partition.
    pub(crate) fn known<'b>(&'b self, tps: &'b [TopicPartitions]) -> impl Iterator<Item = Tp> + 'b {
        flatten(tps).filter_map(|(topic, partition)| {
            let t = self.topic_index(topic)?;
            self.topics[t as usize]
                .partitions
                .binary_search(&partition)
                .ok()?;
            Some(Tp {
                topic: t,
                partition,
            })
        })
    }

    /// Every subscribed partition, by topic then partition.
    pub(crate) fn all_partitions(&self) -> impl Iterator<Item = Tp> + '_ {
        self.topics.iter().enumerate().flat_map(|(t, info)| {
            info.partitions.iter().map(move |&partition| Tp {
                topic: t as u32,
                partition,
            })
        })
    }

    /// The racks of `tp`'s replicas.
    pub(crate) fn racks(&self, tp: Tp) -> &[&'a str] {
        let info = &self.topics[tp.topic as usize];
        match info.partitions.binary_search(&tp.partition) {
            Ok(i) => &info.racks[i],
            Err(_) => &[],
        }
    }

    /// Member indexes in Java's `MemberInfo` order: members with an instance id first, by
    /// instance id, then the others by member id.
    pub(crate) fn java_member_order(&self, mut ids: Vec<usize>) -> Vec<usize> {
        ids.sort_by(|&a, &b| {
            let (a, b) = (&self.members[a], &self.members[b]);
            match (a.instance_id, b.instance_id) {
                (Some(x), Some(y)) => java_cmp(x, y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => java_cmp(a.id, b.id),
            }
        });
        ids
    }

    /// The per-member partition lists as [`Assignment`]s (topics by name, partitions
    /// ascending, no user data), one entry per member.
    pub(crate) fn to_assignments(&self, per_member: Vec<Vec<Tp>>) -> BTreeMap<String, Assignment> {
        self.members
            .iter()
            .zip(per_member)
            .map(|(m, mut tps)| {
                tps.sort_unstable();
                let mut partitions: Vec<TopicPartitions> = Vec::new();
                for tp in tps {
                    let name = self.topics[tp.topic as usize].name;
                    match partitions.last_mut() {
                        Some(last) if last.topic == name => last.partitions.push(tp.partition),
                        _ => partitions.push(TopicPartitions {
                            topic: name.to_owned(),
                            partitions: vec![tp.partition],
                        }),
                    }
                }
                (
                    m.id.to_owned(),
                    Assignment {
                        partitions,
                        user_data: None,
                    },
                )
            })
            .collect()
    }
}

/// Java's `useRackAwareAssignment`: rack-aware only when some member rack is also a
/// replica rack and not every partition has replicas on every rack.
pub(crate) fn use_rack_aware<'a>(
    member_racks: &[&'a str],
    partition_racks: &[&'a str],
    per_partition: impl Iterator<Item = &'a [&'a str]>,
) -> bool {
    if member_racks.is_empty() || !member_racks.iter().any(|r| partition_racks.contains(r)) {
        return false;
    }
    let mut all: Vec<&str> = partition_racks.to_vec();
    all.sort_unstable();
    all.dedup();
    !per_partition
        .into_iter()
        .all(|racks| racks == all.as_slice())
}

#[cfg(test)]
pub(crate) mod tests;
