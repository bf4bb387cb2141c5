//! The simulated cluster's group coordinator for KIP-848 consumer groups
//! (`group.protocol=consumer`): per group the group epoch, the members with their member
//! epochs and assignments, and the target assignment computed by a server-side range
//! assignor. The heartbeat handler (`handlers/consumer_group_heartbeat.rs`) and the
//! offset handlers call in here; committed offsets stay in `txn_state`
//! (`TxnCoordinator::group_offsets`), shared with transactional commits.
//!
//! The rules followed (Kafka's `GroupMetadataManager` and `CurrentAssignmentBuilder`):
//! - a new group starts at epoch 1; a join (epoch 0), a leave (epoch -1), a member
//!   removed after its session timeout and a change of subscription bump the group
//!   epoch; the target is recomputed for it on a heartbeat, at most once per
//!   `assignment_interval_ms` (Kafka 4.3's `group.consumer.assignment.interval.ms`, 1 s;
//!   a group's first target at once), and members move to the target's epoch — a member
//!   joining in between gets the current target epoch and nothing yet;
//! - a member that owns partitions its new target lacks keeps its epoch and is sent its
//!   assignment without them (to revoke); only when a heartbeat no longer lists them as
//!   owned does it move to the target epoch;
//! - a partition of a member's target is handed to it only once no other member holds
//!   it (assigned, or still being revoked) — revoke first, assign after the ack;
//! - a heartbeat with an epoch above the member's, or below it other than the previous
//!   epoch with owned partitions all still assigned (a lost answer), is
//!   FENCED_MEMBER_EPOCH; an unknown member id UNKNOWN_MEMBER_ID.
//!
//! Not modelled: the rebalance timeout (a member slow to revoke keeps the partitions
//! until its session expires), static members' kept places, regex subscriptions, rack
//! awareness.

use std::collections::{BTreeMap, BTreeSet};

use kafka_core::protocol::KafkaCode;

/// `(topic, partition)`.
pub type Tp = (String, i32);

/// One member of a consumer group.
#[derive(Debug, Clone, Default)]
pub struct GroupMember {
    /// The member epoch.
    pub epoch: i32,
    /// The epoch before the last change (a heartbeat at it is still accepted when its
    /// owned partitions are all assigned: its answer was lost).
    pub previous_epoch: i32,
    /// Subscribed topic names.
    pub topics: BTreeSet<String>,
    /// The partitions assigned to it now (sent in heartbeat answers).
    pub assigned: BTreeSet<Tp>,
    /// Partitions it must give up: held until a heartbeat no longer lists them.
    pub revoking: BTreeSet<Tp>,
    /// What its last heartbeat said it owns.
    pub owned: BTreeSet<Tp>,
    /// The assignment last sent to it (`None`: never sent).
    pub sent: Option<BTreeSet<Tp>>,
    /// Its last heartbeat (ms of virtual time).
    pub last_seen_ms: u64,
}

/// One consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// Bumped at every membership or subscription change (a new group starts at 1, as
    /// Kafka 4.3's, so its first member joins at 2).
    pub epoch: i32,
    /// Members by member id.
    pub members: BTreeMap<String, GroupMember>,
    /// The target assignment per member, computed for group epoch
    /// [`target_epoch`](Self::target_epoch).
    pub target: BTreeMap<String, BTreeSet<Tp>>,
    /// The group epoch the target was computed for; members reconcile towards it.
    pub target_epoch: i32,
    /// When the target was last computed (ms of virtual time; `None`: never).
    pub assigned_at_ms: Option<u64>,
}

impl Default for ConsumerGroup {
    fn default() -> Self {
        ConsumerGroup {
            epoch: 1,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            target_epoch: 1,
            assigned_at_ms: None,
        }
    }
}

/// What the group coordinator counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupCounters {
    /// Members that joined (epoch 0 heartbeats creating or resetting a member).
    pub joins: u64,
    /// Members that left with epoch -1 (or -2).
    pub leaves: u64,
    /// Members removed after their session timeout.
    pub expired: u64,
    /// Heartbeats answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID.
    pub fenced: u64,
    /// Revocations acknowledged (a member moved to its target epoch after giving
    /// partitions up).
    pub revocations: u64,
    /// Commits applied, and those refused STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID.
    pub commits: u64,
    /// Commits refused for a member's id or epoch.
    pub commits_refused: u64,
    /// Times a committed offset was lower than the one it replaced.
    pub commits_backwards: u64,
    /// Times a committed offset was past its partition's log end.
    pub commits_past_end: u64,
    /// Each backward commit: group, partition, old and new offset, member, when.
    pub backwards: Vec<String>,
}

/// The group coordinator's state. See the module docs.
#[derive(Debug, Clone)]
pub struct GroupCoordinator {
    /// Groups by id.
    pub groups: BTreeMap<String, ConsumerGroup>,
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// `group.consumer.heartbeat.interval.ms`, sent in every answer but a leave's.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.assignment.interval.ms` (Kafka 4.3, default 1 s): the least time
    /// between two target assignments of a group.
    pub assignment_interval_ms: u64,
    /// Counters.
    pub counters: GroupCounters,
    /// Coordinator moves seen (a new coordinator restarts every session).
    moves_seen: u64,
}

impl Default for GroupCoordinator {
    fn default() -> Self {
        GroupCoordinator {
            groups: BTreeMap::new(),
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            assignment_interval_ms: 1_000,
            counters: GroupCounters::default(),
            moves_seen: 0,
        }
    }
}

/// A heartbeat as the coordinator reads it.
#[derive(Debug, Clone)]
pub struct Beat {
    /// The member id (chosen by the client, KIP-1082).
    pub member_id: String,
    /// Its epoch (0 join, -1 / -2 leave).
    pub epoch: i32,
    /// Subscribed topic names, when sent.
    pub topics: Option<BTreeSet<String>>,
    /// Owned partitions, when sent (topic ids already resolved to names).
    pub owned: Option<BTreeSet<Tp>>,
}

/// The coordinator's answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeatAnswer {
    /// The member epoch.
    pub epoch: i32,
    /// The assignment, when it is to be sent.
    pub assignment: Option<BTreeSet<Tp>>,
}

impl GroupCoordinator {
    /// A heartbeat of `group` at `now_ms`; `partitions(topic)` is a topic's partition
    /// count (`None`: no such topic); `full`: a full request (after a lost answer the
    /// assignment is sent again even if unchanged).
    pub fn heartbeat(
        &mut self,
        group: &str,
        beat: &Beat,
        now_ms: u64,
        full: bool,
        partitions: &dyn Fn(&str) -> Option<i32>,
    ) -> Result<BeatAnswer, KafkaCode> {
        let g = self.groups.entry(group.to_string()).or_default();
        match beat.epoch {
            -1 | -2 => {
                if g.members.remove(&beat.member_id).is_some() {
                    self.counters.leaves += 1;
                    g.epoch += 1;
                }
                return Ok(BeatAnswer {
                    epoch: beat.epoch,
                    assignment: None,
                });
            }
            0 => {
                // A join, or a rejoin after fencing: whatever the member held is gone
                // (the client declared it lost).
                self.counters.joins += 1;
                g.members.insert(
                    beat.member_id.clone(),
                    GroupMember {
                        topics: beat.topics.clone().unwrap_or_default(),
                        last_seen_ms: now_ms,
                        ..Default::default()
                    },
                );
                g.epoch += 1;
            }
            e => {
                let Some(m) = g.members.get(&beat.member_id) else {
                    self.counters.fenced += 1;
                    return Err(KafkaCode::UNKNOWN_MEMBER_ID);
                };
                let lost_answer = e == m.previous_epoch
                    && beat
                        .owned
                        .as_ref()
                        .is_some_and(|o| o.is_subset(&m.assigned));
                if e != m.epoch && !lost_answer {
                    self.counters.fenced += 1;
                    return Err(KafkaCode::FENCED_MEMBER_EPOCH);
                }
                if let Some(topics) = &beat.topics {
                    if *topics != m.topics {
                        g.members.get_mut(&beat.member_id).expect("known").topics = topics.clone();
                        g.epoch += 1;
                    }
                }
            }
        }
        g.maybe_assign(now_ms, self.assignment_interval_ms, partitions);
        let m = g.members.get_mut(&beat.member_id).expect("a member");
        m.last_seen_ms = now_ms;
        if let Some(o) = &beat.owned {
            m.owned = o.clone();
        }
        if g.reconcile(&beat.member_id) {
            self.counters.revocations += 1;
        }
        let m = g.members.get_mut(&beat.member_id).expect("a member");
        let changed = m.sent.as_ref() != Some(&m.assigned);
        let send = changed || full || beat.epoch == 0;
        if send {
            m.sent = Some(m.assigned.clone());
        }
        Ok(BeatAnswer {
            epoch: m.epoch,
            assignment: send.then(|| m.assigned.clone()),
        })
    }

    /// Checks an OffsetCommit (or a member's OffsetFetch) of `group` by `member_id` at
    /// `epoch` (Kafka's rules for consumer groups): an epoch below 0 from outside the
    /// group is accepted while the group has no members; otherwise the member must exist
    /// (UNKNOWN_MEMBER_ID) at exactly that epoch (STALE_MEMBER_EPOCH).
    pub fn check_member(&self, group: &str, member_id: &str, epoch: i32) -> Result<(), KafkaCode> {
        let g = self.groups.get(group);
        if epoch < 0 && g.is_none_or(|g| g.members.is_empty()) {
            return Ok(());
        }
        match g.and_then(|g| g.members.get(member_id)) {
            None => Err(KafkaCode::UNKNOWN_MEMBER_ID),
            Some(m) if m.epoch != epoch => Err(KafkaCode::STALE_MEMBER_EPOCH),
            Some(_) => Ok(()),
        }
    }

    /// Removes members whose session expired by `now_ms`; `moves` is the transaction
    /// coordinator's count of coordinator moves: a move restarts every session (the new
    /// coordinator has heard from nobody yet).
    pub fn advance(&mut self, now_ms: u64, moves: u64) {
        let restart = moves != self.moves_seen;
        self.moves_seen = moves;
        let session = self.session_timeout_ms;
        for g in self.groups.values_mut() {
            if restart {
                for m in g.members.values_mut() {
                    m.last_seen_ms = now_ms;
                }
            }
            let before = g.members.len();
            g.members.retain(|_, m| m.last_seen_ms + session > now_ms);
            let gone = before - g.members.len();
            if gone > 0 {
                self.counters.expired += gone as u64;
                g.epoch += 1;
            }
        }
    }

    /// The earliest session expiry (ms of virtual time).
    pub fn next_due_ms(&self) -> Option<u64> {
        self.groups
            .values()
            .flat_map(|g| g.members.values())
            .map(|m| m.last_seen_ms + self.session_timeout_ms)
            .min()
    }

    /// Every partition some member of `group` holds (assigned or being revoked), with
    /// the holders: the coordinator's view of exclusivity.
    pub fn holders(&self, group: &str) -> BTreeMap<Tp, Vec<String>> {
        let mut out: BTreeMap<Tp, Vec<String>> = BTreeMap::new();
        if let Some(g) = self.groups.get(group) {
            for (id, m) in &g.members {
                for tp in m.assigned.union(&m.revoking) {
                    out.entry(tp.clone()).or_default().push(id.clone());
                }
            }
        }
        out
    }
}

impl ConsumerGroup {
    /// A new target for the group epoch if the target lags it and the last one is at
    /// least `interval_ms` old (Kafka 4.3's assignment interval; the first is at once).
    fn maybe_assign(
        &mut self,
        now_ms: u64,
        interval_ms: u64,
        partitions: &dyn Fn(&str) -> Option<i32>,
    ) {
        let due = self
            .assigned_at_ms
            .is_none_or(|at| now_ms >= at + interval_ms);
        if self.target_epoch < self.epoch && due {
            self.assign(partitions);
            self.target_epoch = self.epoch;
            self.assigned_at_ms = Some(now_ms);
        }
    }

    /// The target: for each subscribed topic, its partitions split in contiguous ranges
    /// over the members subscribed to it, sorted by member id.
    fn assign(&mut self, partitions: &dyn Fn(&str) -> Option<i32>) {
        self.target = self
            .members
            .keys()
            .map(|id| (id.clone(), BTreeSet::new()))
            .collect();
        let topics: BTreeSet<&String> = self.members.values().flat_map(|m| &m.topics).collect();
        for topic in topics {
            let Some(count) = partitions(topic) else {
                continue;
            };
            let subscribers: Vec<&String> = self
                .members
                .iter()
                .filter(|(_, m)| m.topics.contains(topic))
                .map(|(id, _)| id)
                .collect();
            let n = subscribers.len() as i32;
            for (i, id) in subscribers.into_iter().enumerate() {
                let i = i as i32;
                let (per, extra) = (count / n, count % n);
                let start = i * per + i.min(extra);
                let len = per + i32::from(i < extra);
                let t = self.target.get_mut(id).expect("listed");
                t.extend((start..start + len).map(|p| (topic.clone(), p)));
            }
        }
    }

    /// Moves member `id` towards its target; true when it finished a revocation.
    fn reconcile(&mut self, id: &str) -> bool {
        let target = self.target.get(id).cloned().unwrap_or_default();
        let group_epoch = self.target_epoch;
        // Partitions another member holds: assigned to it, or still being revoked.
        let others: BTreeSet<Tp> = self
            .members
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .flat_map(|(_, m)| m.assigned.iter().chain(&m.revoking).cloned())
            .collect();
        let m = self.members.get_mut(id).expect("a member");
        let mut acked = false;
        if !m.revoking.is_empty() {
            if m.owned.is_disjoint(&m.revoking) {
                m.revoking.clear();
                acked = true;
            } else {
                return false; // still revoking: nothing else changes
            }
        }
        // Whatever is assigned but no longer targeted must be revoked first.
        let drop: BTreeSet<Tp> = m.assigned.difference(&target).cloned().collect();
        if !drop.is_empty() {
            m.assigned.retain(|tp| !drop.contains(tp));
            m.revoking = drop;
            return acked;
        }
        if m.epoch != group_epoch {
            m.previous_epoch = m.epoch;
            m.epoch = group_epoch;
        }
        // Targeted partitions nobody else holds any more are handed over.
        for tp in target {
            if !others.contains(&tp) {
                m.assigned.insert(tp);
            }
        }
        acked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(t: &str) -> Option<i32> {
        (t == "t").then_some(6)
    }

    fn tps(ps: &[i32]) -> BTreeSet<Tp> {
        ps.iter().map(|p| ("t".to_string(), *p)).collect()
    }

    /// A coordinator that assigns at every heartbeat (no assignment interval).
    fn eager() -> GroupCoordinator {
        GroupCoordinator {
            assignment_interval_ms: 0,
            ..Default::default()
        }
    }

    fn beat_at(
        c: &mut GroupCoordinator,
        now_ms: u64,
        id: &str,
        epoch: i32,
        owned: &[i32],
    ) -> Result<BeatAnswer, KafkaCode> {
        let b = Beat {
            member_id: id.into(),
            epoch,
            topics: Some(["t".to_string()].into()),
            owned: Some(tps(owned)),
        };
        c.heartbeat("g", &b, now_ms, false, &parts)
    }

    fn beat(
        c: &mut GroupCoordinator,
        id: &str,
        epoch: i32,
        owned: &[i32],
    ) -> Result<BeatAnswer, KafkaCode> {
        beat_at(c, 0, id, epoch, owned)
    }

    #[test]
    fn a_partition_moves_only_after_its_owner_stops_listing_it() {
        let mut c = eager();
        let a = beat(&mut c, "a", 0, &[]).unwrap();
        assert_eq!((a.epoch, a.assignment), (2, Some(tps(&[0, 1, 2, 3, 4, 5]))));
        // b joins: the target splits, but a still owns 3..5.
        let b = beat(&mut c, "b", 0, &[]).unwrap();
        assert_eq!((b.epoch, b.assignment), (3, Some(tps(&[]))));
        // a is told to give 3..5 up and keeps its epoch until it does.
        let a = beat(&mut c, "a", 2, &[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!((a.epoch, a.assignment), (2, Some(tps(&[0, 1, 2]))));
        let b = beat(&mut c, "b", 3, &[]).unwrap();
        assert_eq!(b.assignment, None, "nothing released yet");
        let a = beat(&mut c, "a", 2, &[0, 1, 2]).unwrap();
        assert_eq!((a.epoch, a.assignment), (3, None));
        let b = beat(&mut c, "b", 3, &[]).unwrap();
        assert_eq!(b.assignment, Some(tps(&[3, 4, 5])));
        assert!(c.holders("g").values().all(|h| h.len() == 1));
    }

    #[test]
    fn a_new_target_waits_for_the_assignment_interval() {
        // As Kafka 4.3 (vectors/transcripts/group_rebalance.json): the first target at
        // once, a joiner then gets the current target epoch and nothing, and the owner
        // is asked to revoke only once the interval since the last target has passed.
        let mut c = GroupCoordinator::default();
        let a = beat_at(&mut c, 0, "a", 0, &[]).unwrap();
        assert_eq!((a.epoch, a.assignment), (2, Some(tps(&[0, 1, 2, 3, 4, 5]))));
        let b = beat_at(&mut c, 200, "b", 0, &[]).unwrap();
        assert_eq!((b.epoch, b.assignment), (2, Some(tps(&[]))));
        let a = beat_at(&mut c, 999, "a", 2, &[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!((a.epoch, a.assignment), (2, None), "no new target yet");
        let a = beat_at(&mut c, 1_000, "a", 2, &[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!((a.epoch, a.assignment), (2, Some(tps(&[0, 1, 2]))));
        let a = beat_at(&mut c, 1_100, "a", 2, &[0, 1, 2]).unwrap();
        assert_eq!(a.epoch, 3);
        let b = beat_at(&mut c, 1_200, "b", 2, &[]).unwrap();
        assert_eq!((b.epoch, b.assignment), (3, Some(tps(&[3, 4, 5]))));
    }

    #[test]
    fn stale_epochs_are_fenced_and_a_lost_answer_is_forgiven() {
        let mut c = eager();
        beat(&mut c, "a", 0, &[]).unwrap();
        beat(&mut c, "b", 0, &[]).unwrap();
        assert_eq!(beat(&mut c, "x", 3, &[]), Err(KafkaCode::UNKNOWN_MEMBER_ID));
        assert_eq!(
            beat(&mut c, "b", 7, &[]),
            Err(KafkaCode::FENCED_MEMBER_EPOCH)
        );
        // a acknowledges 0..2 and moves to epoch 3; the answer is lost, it retries at 2.
        beat(&mut c, "a", 2, &[0, 1, 2]).unwrap();
        assert_eq!(beat(&mut c, "a", 2, &[0, 1, 2]).map(|a| a.epoch), Ok(3));
        // ... but not while listing partitions it no longer has.
        assert_eq!(
            beat(&mut c, "a", 2, &[0, 1, 2, 3]),
            Err(KafkaCode::FENCED_MEMBER_EPOCH)
        );
        assert_eq!(
            c.check_member("g", "a", 2),
            Err(KafkaCode::STALE_MEMBER_EPOCH)
        );
        assert_eq!(c.check_member("g", "a", 3), Ok(()));
        assert_eq!(
            c.check_member("g", "z", 3),
            Err(KafkaCode::UNKNOWN_MEMBER_ID)
        );
    }

    #[test]
    fn a_silent_member_expires_and_its_partitions_move() {
        let mut c = eager();
        beat(&mut c, "a", 0, &[]).unwrap();
        c.advance(44_999, 0);
        assert_eq!(c.groups["g"].members.len(), 1);
        assert_eq!(c.next_due_ms(), Some(45_000));
        c.advance(45_000, 0);
        assert!(c.groups["g"].members.is_empty());
        assert_eq!((c.counters.expired, c.groups["g"].epoch), (1, 3));
    }
}
