//! The sticky assignment when members subscribe to different topics (Java's
//! `GeneralAssignmentBuilder`).
//!
//! 1. Members keep the owned partitions of topics they still subscribe to (on their rack,
//!    when rack-aware).
//! 2. Unassigned partitions (topics with the fewest candidate members first) go one by one
//!    to the candidate with the fewest partitions, preferring same-rack members.
//! 3. While the assignment is not balanced, partitions move to candidates with at least
//!    two fewer partitions: back to a previous owner of an older generation when that
//!    helps, else to the least loaded candidate, undoing an earlier move of the same topic
//!    between the same pair when there is one (so partitions do not swap back and forth).
//!    The moves are kept only if they improve the balance score, unless this is the
//!    group's first assignment.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{MemberData, RackInfo};
use crate::group::assignor::{AssignFailure, Group, Tp};

/// Bound on the balancing moves, far above what the algorithm makes; past it, the
/// assignment so far (complete and valid, maybe less balanced) is kept.
const MAX_MOVES: usize = 1 << 22;

/// For partitions claimed in a generation older than the newest one seen, the member
/// that claimed it in the newest of those older generations (ties: the first member).
pub(super) fn previous_assignment(
    group: &Group<'_>,
    data: &[MemberData],
    max_generation: i32,
) -> HashMap<Tp, (usize, i32)> {
    let mut prev: HashMap<Tp, (usize, i32)> = HashMap::new();
    for (member, d) in data.iter().enumerate() {
        let generation = match d.generation {
            Some(g) if g < max_generation => g,
            None if max_generation > -1 => -1,
            _ => continue,
        };
        for tp in group.known(&d.partitions) {
            let entry = prev.entry(tp).or_insert((member, generation));
            if generation > entry.1 {
                *entry = (member, generation);
            }
        }
    }
    prev
}

/// Per member, its partitions.
pub(super) fn build(
    group: &Group<'_>,
    racks: &RackInfo<'_>,
    owned: Vec<Vec<Tp>>,
    prev: HashMap<Tp, (usize, i32)>,
) -> Result<Vec<Vec<Tp>>, AssignFailure> {
    let mut topic_members: Vec<Vec<usize>> = vec![Vec::new(); group.topics.len()];
    for (m, info) in group.members.iter().enumerate() {
        for &t in &info.topics {
            topic_members[t as usize].push(m);
        }
    }
    // Topics with fewer candidate members first, then by name.
    let mut topic_order: Vec<u32> = (0..group.topics.len() as u32).collect();
    topic_order.sort_by_key(|&t| (topic_members[t as usize].len(), t));
    let sorted_all: Vec<Tp> = topic_order
        .iter()
        .flat_map(|&t| {
            group.topics[t as usize]
                .partitions
                .iter()
                .map(move |&partition| Tp {
                    topic: t,
                    partition,
                })
        })
        .collect();

    let mut b = Builder {
        group,
        racks,
        max_size: group
            .members
            .iter()
            .map(|m| {
                m.topics
                    .iter()
                    .map(|&t| group.topics[t as usize].partitions.len())
                    .sum()
            })
            .collect(),
        topic_members,
        owner: HashMap::new(),
        fixed: vec![false; owned.len()],
        current: owned,
        sorted: BTreeSet::new(),
        moves: Movements::default(),
        moves_left: MAX_MOVES,
    };
    for (m, tps) in b.current.iter().enumerate() {
        for &tp in tps {
            b.owner.insert(tp, m);
        }
    }

    let (assigned, revocation_required) = b.keep_owned();
    let unassigned: Vec<Tp> = sorted_all
        .iter()
        .copied()
        .filter(|tp| !assigned.contains(tp))
        .collect();
    b.sorted = (0..b.current.len())
        .map(|m| (b.current[m].len(), m))
        .collect();
    b.balance(&prev, sorted_all, unassigned, revocation_required)?;
    Ok(b.current)
}

struct Builder<'g> {
    group: &'g Group<'g>,
    racks: &'g RackInfo<'g>,
    /// Candidate members per topic.
    topic_members: Vec<Vec<usize>>,
    /// Partitions a member could have at most (all of its subscribed topics).
    max_size: Vec<usize>,
    current: Vec<Vec<Tp>>,
    owner: HashMap<Tp, usize>,
    /// Members that cannot take part in balancing (left out of `sorted`).
    fixed: Vec<bool>,
    /// `(partition count, member)`, ascending: Java's `sortedCurrentSubscriptions`.
    sorted: BTreeSet<(usize, usize)>,
    moves: Movements,
    moves_left: usize,
}

impl Builder<'_> {
    /// Step 1: drops owned partitions of topics no longer subscribed (or off-rack).
    fn keep_owned(&mut self) -> (BTreeSet<Tp>, bool) {
        let mut assigned = BTreeSet::new();
        let mut revocation_required = false;
        for m in 0..self.current.len() {
            let topics = &self.group.members[m].topics;
            let racks = self.racks;
            self.current[m].retain(|&tp| {
                if !topics.contains(&tp.topic) || racks.mismatch(m, tp) {
                    revocation_required = true;
                    false
                } else {
                    assigned.insert(tp);
                    true
                }
            });
        }
        (assigned, revocation_required)
    }

    fn balance(
        &mut self,
        prev: &HashMap<Tp, (usize, i32)>,
        mut sorted_all: Vec<Tp>,
        mut unassigned: Vec<Tp>,
        revocation_required: bool,
    ) -> Result<(), AssignFailure> {
        let initializing = self.sorted.last().is_none_or(|&(size, _)| size == 0);

        // Step 2: same-rack members first, then anyone.
        let mut to_assign = unassigned.clone();
        if self.racks.active() {
            to_assign.retain(|&tp| !self.assign_to_least_loaded(tp, true));
        }
        for &tp in &to_assign {
            self.assign_to_least_loaded(tp, false);
        }

        // Only partitions of topics with two or more candidates can move, and only
        // members that lack some candidate partition or hold a movable one take part.
        let movable = |t: u32, topic_members: &[Vec<usize>]| topic_members[t as usize].len() >= 2;
        sorted_all.retain(|tp| movable(tp.topic, &self.topic_members));
        unassigned.retain(|tp| movable(tp.topic, &self.topic_members));
        for m in 0..self.current.len() {
            let participates = self.current[m].len() < self.max_size[m]
                || self.current[m]
                    .iter()
                    .any(|tp| movable(tp.topic, &self.topic_members));
            if !participates {
                self.fixed[m] = true;
                self.sorted.remove(&(self.current[m].len(), m));
            }
        }

        let before = (self.current.clone(), self.owner.clone());
        if !revocation_required {
            self.perform_reassignments(&unassigned, prev)?;
        }
        let reassigned = self.perform_reassignments(&sorted_all, prev)?;
        if !initializing
            && reassigned
            && self.balance_score(&self.current) >= self.balance_score(&before.0)
        {
            (self.current, self.owner) = before;
        }
        Ok(())
    }

    /// Gives `tp` to the least loaded candidate (on its rack, with `same_rack`).
    fn assign_to_least_loaded(&mut self, tp: Tp, same_rack: bool) -> bool {
        let members = &self.group.members;
        let pick = self.sorted.iter().copied().find(|&(_, m)| {
            members[m].topics.contains(&tp.topic) && !(same_rack && self.racks.mismatch(m, tp))
        });
        let Some((size, m)) = pick else { return false };
        self.sorted.remove(&(size, m));
        self.current[m].push(tp);
        self.owner.insert(tp, m);
        self.sorted.insert((size + 1, m));
        true
    }

    /// Within one: no member could take a partition from one with two more.
    fn is_balanced(&self) -> bool {
        let (Some(&(min, _)), Some(&(max, _))) = (self.sorted.first(), self.sorted.last()) else {
            return true;
        };
        if min + 1 >= max {
            return true;
        }
        for &(size, m) in &self.sorted {
            if size == self.max_size[m] {
                continue;
            }
            for &t in &self.group.members[m].topics {
                for &partition in &self.group.topics[t as usize].partitions {
                    let tp = Tp {
                        topic: t,
                        partition,
                    };
                    if let Some(&other) = self.owner.get(&tp) {
                        if other != m && !self.fixed[other] && size + 1 < self.current[other].len()
                        {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    /// Sum over member pairs of the difference of their partition counts.
    fn balance_score(&self, assignment: &[Vec<Tp>]) -> usize {
        let sizes: Vec<usize> = (0..assignment.len())
            .filter(|&m| !self.fixed[m])
            .map(|m| assignment[m].len())
            .collect();
        let mut score = 0;
        for (i, a) in sizes.iter().enumerate() {
            for b in &sizes[i + 1..] {
                score += a.abs_diff(*b);
            }
        }
        score
    }

    /// Step 3 over `partitions`, repeated while it moves something; whether it did.
    fn perform_reassignments(
        &mut self,
        partitions: &[Tp],
        prev: &HashMap<Tp, (usize, i32)>,
    ) -> Result<bool, AssignFailure> {
        let mut performed = false;
        loop {
            let mut modified = false;
            for &tp in partitions {
                if self.is_balanced() || self.moves_left == 0 {
                    break;
                }
                let Some(&member) = self.owner.get(&tp) else {
                    return Err(AssignFailure::Internal("a movable partition has no owner"));
                };
                let size = self.current[member].len();
                // Back to its previous owner (older generation) if that one has two fewer.
                if let Some(&(before, _)) = prev.get(&tp) {
                    let eligible = !self.fixed[before]
                        && self.group.members[before].topics.contains(&tp.topic);
                    if eligible && size > self.current[before].len() + 1 {
                        self.reassign_to(tp, before);
                        performed = true;
                        modified = true;
                        continue;
                    }
                }
                let candidates = &self.topic_members[tp.topic as usize];
                let partition_racks = self.racks.partition_racks(tp);
                let mut moved = false;
                if let Some(rack) = self.racks.member_rack(member) {
                    if partition_racks.contains(&rack) {
                        moved = candidates.iter().any(|&other| {
                            self.racks
                                .member_rack(other)
                                .is_some_and(|r| partition_racks.contains(&r))
                                && size > self.current[other].len() + 1
                        });
                    }
                }
                if !moved {
                    moved = candidates
                        .iter()
                        .any(|&other| size > self.current[other].len() + 1);
                }
                if moved {
                    self.reassign(tp);
                    performed = true;
                    modified = true;
                }
            }
            if !modified || self.moves_left == 0 {
                return Ok(performed);
            }
        }
    }

    /// Moves `tp` to the least loaded candidate.
    fn reassign(&mut self, tp: Tp) {
        let members = &self.group.members;
        if let Some(&(_, m)) = self
            .sorted
            .iter()
            .find(|&&(_, m)| members[m].topics.contains(&tp.topic))
        {
            self.reassign_to(tp, m);
        }
    }

    fn reassign_to(&mut self, tp: Tp, new_owner: usize) {
        let Some(&old_owner) = self.owner.get(&tp) else {
            return;
        };
        let tp = self
            .moves
            .actual_partition_to_move(tp, old_owner, new_owner);
        let Some(&old_owner) = self.owner.get(&tp) else {
            return;
        };
        self.moves_left = self.moves_left.saturating_sub(1);
        self.sorted
            .remove(&(self.current[old_owner].len(), old_owner));
        self.sorted
            .remove(&(self.current[new_owner].len(), new_owner));
        self.moves.record(tp, old_owner, new_owner);
        self.current[old_owner].retain(|&x| x != tp);
        self.current[new_owner].push(tp);
        self.owner.insert(tp, new_owner);
        self.sorted
            .insert((self.current[new_owner].len(), new_owner));
        self.sorted
            .insert((self.current[old_owner].len(), old_owner));
    }
}

/// Partition moves made while balancing: per partition its original and current owner,
/// and per topic the partitions moved between each pair (Java's `PartitionMovements`).
#[derive(Default)]
struct Movements {
    by_partition: HashMap<Tp, (usize, usize)>,
    by_topic: HashMap<u32, BTreeMap<(usize, usize), BTreeSet<Tp>>>,
}

impl Movements {
    fn remove(&mut self, tp: Tp) -> Option<(usize, usize)> {
        let pair = self.by_partition.remove(&tp)?;
        if let Some(topic) = self.by_topic.get_mut(&tp.topic) {
            if let Some(set) = topic.get_mut(&pair) {
                set.remove(&tp);
                if set.is_empty() {
                    topic.remove(&pair);
                }
            }
            if topic.is_empty() {
                self.by_topic.remove(&tp.topic);
            }
        }
        Some(pair)
    }

    fn add(&mut self, tp: Tp, pair: (usize, usize)) {
        self.by_partition.insert(tp, pair);
        self.by_topic
            .entry(tp.topic)
            .or_default()
            .entry(pair)
            .or_default()
            .insert(tp);
    }

    fn record(&mut self, tp: Tp, old_owner: usize, new_owner: usize) {
        match self.remove(tp) {
            Some((source, _)) if source == new_owner => {} // moved back: no movement left
            Some((source, _)) => self.add(tp, (source, new_owner)),
            None => self.add(tp, (old_owner, new_owner)),
        }
    }

    /// Moving `tp` from `old_owner` to `new_owner` would reverse an earlier move of the
    /// same topic: move back one of the partitions that went the other way instead.
    fn actual_partition_to_move(&self, tp: Tp, old_owner: usize, new_owner: usize) -> Tp {
        let Some(topic) = self.by_topic.get(&tp.topic) else {
            return tp;
        };
        let source = self
            .by_partition
            .get(&tp)
            .map_or(old_owner, |&(source, _)| source);
        match topic.get(&(new_owner, source)).and_then(|set| set.first()) {
            Some(&other) => other,
            None => tp,
        }
    }
}
