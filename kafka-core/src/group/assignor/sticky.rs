//! The sticky assignors (`sticky`, `cooperative-sticky`), as Java's `StickyAssignor`,
//! `CooperativeStickyAssignor` and their shared `AbstractStickyAssignor`.
//!
//! Goals, in order: balance (partition counts within one when every member subscribes to
//! the same topics, as balanced as the subscriptions allow otherwise), then stickiness
//! (members keep what they owned), then rack alignment (KIP-881, when members send racks
//! and some partitions are not on every rack; owned partitions off the member's rack may
//! move).
//!
//! What a member owned comes from its subscription: for `sticky` (eager: members revoke
//! everything before joining) from its user data, the previous assignment and generation
//! it encodes; for `cooperative-sticky` from the subscription's owned partitions and
//! generation (v2+), or a generation in the user data from older clients. When members
//! claim the same partition, the higher generation keeps it; with equal generations
//! nobody does.
//!
//! Two builders, as in Java: `constrained` when all members subscribe to the same topics
//! (quota filling), `general` otherwise (balancing by moving partitions while it improves).
//! `cooperative-sticky` then removes every partition changing owner from the result: it
//! is revoked first and handed to its new owner in the follow-up rebalance.

mod constrained;
mod general;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use super::{
    use_rack_aware, AssignError, AssignFailure, Assignor, Group, MemberSubscription,
    RebalanceProtocol, TopicLayout, Tp,
};
use crate::group::protocol::{flatten, Assignment, Subscription, TopicPartitions};
use crate::protocol::wire;

/// The `sticky` assignor (eager protocol).
#[derive(Debug, Clone, Copy, Default)]
pub struct StickyAssignor;

/// The `cooperative-sticky` assignor (cooperative protocol preferred, eager supported).
#[derive(Debug, Clone, Copy, Default)]
pub struct CooperativeStickyAssignor;

impl Assignor for StickyAssignor {
    fn name(&self) -> &str {
        "sticky"
    }

    fn protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    /// The previous assignment and its generation (Java's `StickyAssignor` user data v1:
    /// `[topic, [partition]]` then an int32 generation); `None` before the first
    /// assignment (`generation < 0` and nothing owned).
    fn user_data(&self, owned: &[TopicPartitions], generation: i32) -> Option<Vec<u8>> {
        if generation < 0 && owned.iter().all(|t| t.partitions.is_empty()) {
            return None;
        }
        Some(encode_sticky_user_data(owned, generation))
    }

    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError> {
        let group = Group::new("sticky", layout, members)?;
        let data = group
            .members
            .iter()
            .map(|m| eager_member_data(m.subscription))
            .collect();
        let out = assign_sticky(&group, data, false).map_err(|reason| AssignError {
            assignor: "sticky",
            reason,
        })?;
        Ok(group.to_assignments(out))
    }
}

impl Assignor for CooperativeStickyAssignor {
    fn name(&self) -> &str {
        "cooperative-sticky"
    }

    fn protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
    }

    /// The generation as a big-endian int32 (Java's `CooperativeStickyAssignor` user
    /// data, read only from subscriptions older than v2); always present.
    fn user_data(&self, _owned: &[TopicPartitions], generation: i32) -> Option<Vec<u8>> {
        Some(generation.to_be_bytes().to_vec())
    }

    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError> {
        let group = Group::new("cooperative-sticky", layout, members)?;
        let data = group
            .members
            .iter()
            .map(|m| cooperative_member_data(m.subscription))
            .collect();
        let out = assign_sticky(&group, data, true).map_err(|reason| AssignError {
            assignor: "cooperative-sticky",
            reason,
        })?;
        Ok(group.to_assignments(out))
    }
}

/// What a member claims to own, and from which generation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MemberData {
    pub(crate) partitions: Vec<TopicPartitions>,
    pub(crate) generation: Option<i32>,
}

/// `StickyAssignor.memberData`: always from the user data (an eager member owns nothing
/// when it joins). Unreadable user data counts as nothing owned at generation -1.
pub(crate) fn eager_member_data(subscription: &Subscription) -> MemberData {
    match subscription.user_data.as_deref() {
        None | Some([]) => MemberData::default(),
        Some(bytes) => decode_sticky_user_data(bytes).unwrap_or(MemberData {
            partitions: Vec::new(),
            generation: Some(-1),
        }),
    }
}

/// `CooperativeStickyAssignor.memberData`: the owned partitions, with the generation
/// from the subscription (v2+) or else from the user data.
pub(crate) fn cooperative_member_data(subscription: &Subscription) -> MemberData {
    let generation = if subscription.generation_id >= 0 {
        Some(subscription.generation_id)
    } else {
        subscription.user_data.as_deref().map(|b| match b {
            [a, b, c, d, ..] => i32::from_be_bytes([*a, *b, *c, *d]),
            _ => -1,
        })
    };
    MemberData {
        partitions: subscription.owned_partitions.clone(),
        generation,
    }
}

/// Java's `StickyAssignor` user data, v1. Topics come in the iteration order of the Java
/// `HashMap` that groups them there, so the bytes are Java's.
pub(crate) fn encode_sticky_user_data(owned: &[TopicPartitions], generation: i32) -> Vec<u8> {
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for (topic, partition) in flatten(owned) {
        match topics.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, ps)) => ps.push(partition),
            None => topics.push((topic, vec![partition])),
        }
    }
    let order = java_hash_map_order(topics.iter().map(|(t, _)| *t));
    let mut out = Vec::new();
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for i in order {
        let (topic, partitions) = &topics[i];
        // Topic names longer than Kafka's string limit cannot be owned; cut rather than panic.
        let name = &topic.as_bytes()[..topic.len().min(i16::MAX as usize)];
        out.extend_from_slice(&(name.len() as i16).to_be_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        for p in partitions {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&generation.to_be_bytes());
    out
}

/// Reads `StickyAssignor` user data, v1 or v0 (no generation). `None` if unreadable.
/// Strings are read leniently (invalid UTF-8 replaced), as Java's decoder does.
pub(crate) fn decode_sticky_user_data(bytes: &[u8]) -> Option<MemberData> {
    let mut b = Bytes::copy_from_slice(bytes);
    let topics = wire::get_array_len(&mut b, false, "previous_assignment").ok()?;
    let mut partitions = Vec::with_capacity(topics.min(wire::PREALLOC_LIMIT));
    for _ in 0..topics {
        let len = wire::get_i16(&mut b).ok()?;
        let raw = wire::take(&mut b, usize::try_from(len).ok()?).ok()?;
        let topic = String::from_utf8_lossy(&raw).into_owned();
        let n = wire::get_array_len(&mut b, false, "partitions").ok()?;
        let mut ps = Vec::with_capacity(n.min(wire::PREALLOC_LIMIT));
        for _ in 0..n {
            ps.push(wire::get_i32(&mut b).ok()?);
        }
        partitions.push(TopicPartitions {
            topic,
            partitions: ps,
        });
    }
    let generation = wire::get_i32(&mut b).ok();
    Some(MemberData {
        partitions,
        generation,
    })
}

/// The iteration order of a Java `HashMap<String, _>` filled with `computeIfAbsent` in
/// the given order (default capacity 16, load factor 0.75, resize before an insert that
/// finds the map over its threshold; by bucket, the latest key first within one). Buckets with nine or more keys, where Java would
/// resize or treeify early, are not modelled.
fn java_hash_map_order<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<usize> {
    let hashes: Vec<u32> = keys
        .map(|k| {
            let h = k
                .encode_utf16()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
                as u32;
            h ^ (h >> 16)
        })
        .collect();
    let mut capacity: usize = 16;
    for size in 0..hashes.len() {
        if size > capacity * 3 / 4 {
            capacity *= 2;
        }
    }
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    // `computeIfAbsent` puts a new key at the head of its bucket, and resizes keep the
    // order within buckets: latest first.
    order.sort_by_key(|&i| (hashes[i] as usize & (capacity - 1), std::cmp::Reverse(i)));
    order
}

/// Rack information as Java's `AbstractStickyAssignor.RackInfo` keeps it.
pub(crate) struct RackInfo<'g> {
    group: &'g Group<'g>,
    /// Member racks, when rack-aware assignment is used (`consumerRacks` in Java).
    member_racks: Vec<Option<&'g str>>,
    active: bool,
    /// Members per rack, when any member has a rack (orders partitions to assign).
    members_per_rack: BTreeMap<&'g str, usize>,
}

impl<'g> RackInfo<'g> {
    pub(crate) fn new(group: &'g Group<'g>) -> Self {
        let mut members_per_rack: BTreeMap<&str, usize> = BTreeMap::new();
        for m in &group.members {
            if let Some(r) = m.rack {
                *members_per_rack.entry(r).or_default() += 1;
            }
        }
        let active = !members_per_rack.is_empty() && {
            let member_racks: Vec<&str> = members_per_rack.keys().copied().collect();
            let partition_racks: Vec<&str> = group
                .all_partitions()
                .flat_map(|tp| group.racks(tp).iter().copied())
                .collect();
            use_rack_aware(
                &member_racks,
                &partition_racks,
                group.all_partitions().map(|tp| group.racks(tp)),
            )
        };
        RackInfo {
            group,
            member_racks: group
                .members
                .iter()
                .map(|m| if active { m.rack } else { None })
                .collect(),
            active,
            members_per_rack,
        }
    }

    /// Whether rack-aware assignment is in use (`!consumerRacks.isEmpty()`).
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    /// The member's rack when rack-aware assignment is in use.
    pub(crate) fn member_rack(&self, member: usize) -> Option<&'g str> {
        self.member_racks[member]
    }

    /// The racks of `tp`'s replicas.
    pub(crate) fn partition_racks(&self, tp: Tp) -> &[&'g str] {
        self.group.racks(tp)
    }

    /// The member has a rack and no replica of `tp` is on it.
    pub(crate) fn mismatch(&self, member: usize, tp: Tp) -> bool {
        match self.member_racks[member] {
            Some(rack) => !self.group.racks(tp).contains(&rack),
            None => false,
        }
    }

    /// Partitions with fewer same-rack members first (stable), when any member has a rack.
    pub(crate) fn sort_by_rack_members(&self, partitions: &mut [Tp]) {
        if self.members_per_rack.is_empty() {
            return;
        }
        partitions.sort_by_cached_key(|&tp| {
            self.group
                .racks(tp)
                .iter()
                .map(|r| self.members_per_rack.get(r).copied().unwrap_or(0))
                .sum::<usize>()
        });
    }

    /// The first index from `first` on (cyclically) of a member of `list` on a rack of `tp`.
    pub(crate) fn next_rack_member(&self, tp: Tp, list: &[usize], first: usize) -> Option<usize> {
        if !self.active {
            return None;
        }
        let racks = self.group.racks(tp);
        if racks.is_empty() {
            return None;
        }
        (0..list.len())
            .map(|i| (first + i) % list.len())
            .find(|&i| self.member_racks[list[i]].is_some_and(|r| racks.contains(&r)))
    }
}

/// The sticky algorithm over prepared members; per member, its partitions.
fn assign_sticky(
    group: &Group<'_>,
    data: Vec<MemberData>,
    cooperative: bool,
) -> Result<Vec<Vec<Tp>>, AssignFailure> {
    let n = group.members.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let all_equal = group
        .members
        .windows(2)
        .all(|w| w[0].subscribed == w[1].subscribed);

    // Owned partitions per member, claims by several members resolved by generation.
    let mut max_generation = -1;
    let mut owned: Vec<Vec<Tp>> = vec![Vec::new(); n];
    let mut owner_of: HashMap<Tp, usize> = HashMap::new();
    let mut multiple: BTreeSet<Tp> = BTreeSet::new();
    for (m, d) in data.iter().enumerate() {
        let generation = d.generation.unwrap_or(-1);
        max_generation = max_generation.max(generation);
        let mut claims: Vec<Tp> = group.known(&d.partitions).collect();
        dedup_keep_order(&mut claims);
        for tp in claims {
            let Some(&other) = owner_of.get(&tp) else {
                owned[m].push(tp);
                owner_of.insert(tp, m);
                continue;
            };
            // Java compares with the other member's subscription generation.
            let other_generation = group.members[other].subscription.generation_id.max(-1);
            if generation == other_generation {
                multiple.insert(tp);
                owned[other].retain(|&x| x != tp);
                owner_of.insert(tp, m);
            } else if generation > other_generation {
                owned[m].push(tp);
                owned[other].retain(|&x| x != tp);
                owner_of.insert(tp, m);
            }
        }
    }

    let racks = RackInfo::new(group);
    let (mut out, transferring) = if all_equal {
        let (out, transferring) = constrained::build(group, &racks, owned, &multiple)?;
        (out, Some(transferring))
    } else {
        let prev = general::previous_assignment(group, &data, max_generation);
        (general::build(group, &racks, owned, prev)?, None)
    };

    if cooperative {
        let transferring = match transferring {
            Some(t) => t,
            None => transferring_ownership(group, &out),
        };
        for (tp, member) in transferring {
            out[member].retain(|&x| x != tp);
        }
    }
    Ok(out)
}

/// Partitions assigned to a member that did not own them while another member that owned
/// them lost them: they must be revoked before they can move.
fn transferring_ownership(group: &Group<'_>, out: &[Vec<Tp>]) -> BTreeMap<Tp, usize> {
    let mut added: BTreeMap<Tp, usize> = BTreeMap::new();
    let mut revoked: BTreeSet<Tp> = BTreeSet::new();
    for (m, assigned) in out.iter().enumerate() {
        let owned: BTreeSet<Tp> = group
            .known(&group.members[m].subscription.owned_partitions)
            .collect();
        let assigned_set: BTreeSet<Tp> = assigned.iter().copied().collect();
        for &tp in assigned {
            if !owned.contains(&tp) {
                added.insert(tp, m);
            }
        }
        revoked.extend(owned.difference(&assigned_set));
    }
    added.retain(|tp, _| revoked.contains(tp));
    added
}

fn dedup_keep_order(tps: &mut Vec<Tp>) {
    let mut seen = BTreeSet::new();
    tps.retain(|tp| seen.insert(*tp));
}

#[cfg(test)]
mod tests;
