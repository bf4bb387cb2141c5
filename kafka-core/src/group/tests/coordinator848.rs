//! A scripted KIP-848 group coordinator: members heartbeat with their epoch and owned
//! partitions; the target assignment (a range split over members sorted by id) is
//! recomputed on every membership change (a new group epoch); a member is given only
//! the partitions of its target that no other member still owns, and moves to the group
//! epoch once it owns nothing outside its target — the rules of Kafka's
//! `GroupMetadataManager` the client depends on. Commits check the member epoch.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::protocol::messages::consumer_group_heartbeat::response::{Assignment, TopicPartitions};
use crate::protocol::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use crate::protocol::messages::offset_commit::OffsetCommitRequest;
use crate::protocol::{KafkaCode, Uuid};

pub(crate) struct Member848 {
    pub(crate) epoch: i32,
    pub(crate) owned: BTreeSet<i32>,
    /// The assignment last sent.
    sent: Option<BTreeSet<i32>>,
    last_seen: Instant,
}

pub(crate) struct Coordinator848 {
    pub(crate) topic_id: Uuid,
    pub(crate) partitions: i32,
    pub(crate) group_epoch: i32,
    pub(crate) members: BTreeMap<String, Member848>,
    targets: BTreeMap<String, BTreeSet<i32>>,
    session: Duration,
    /// Heartbeats seen: (member, epoch sent).
    pub(crate) heartbeats: Vec<(String, i32)>,
    /// Per heartbeat: epoch, `SubscribedTopicNames`, `SubscribedTopicRegex`.
    pub(crate) subscriptions: Vec<(i32, Option<Vec<String>>, Option<String>)>,
    /// Answer a heartbeat carrying a regex with INVALID_REGULAR_EXPRESSION.
    pub(crate) reject_regex: bool,
}

impl Coordinator848 {
    pub(crate) fn new(topic_id: Uuid, partitions: i32) -> Self {
        Coordinator848 {
            topic_id,
            partitions,
            group_epoch: 0,
            members: BTreeMap::new(),
            targets: BTreeMap::new(),
            session: Duration::from_secs(10),
            heartbeats: Vec::new(),
            subscriptions: Vec::new(),
            reject_regex: false,
        }
    }

    fn rebalance(&mut self) {
        self.group_epoch += 1;
        let ids: Vec<String> = self.members.keys().cloned().collect();
        self.targets.clear();
        let n = ids.len().max(1) as i32;
        for (i, id) in ids.iter().enumerate() {
            let i = i as i32;
            let per = self.partitions / n;
            let extra = self.partitions % n;
            let start = i * per + i.min(extra);
            let len = per + i32::from(i < extra);
            self.targets
                .insert(id.clone(), (start..start + len).collect());
        }
    }

    /// Fences a member: its next heartbeat gets FENCED_MEMBER_EPOCH.
    pub(crate) fn fence(&mut self, id: &str) {
        if let Some(m) = self.members.get_mut(id) {
            m.epoch += 1000;
        }
    }

    /// A failover: the new coordinator starts every member's session at `at`.
    pub(crate) fn restart_sessions(&mut self, at: Instant) {
        for m in self.members.values_mut() {
            m.last_seen = at;
        }
    }

    pub(crate) fn expire(&mut self, now: Instant) {
        let before = self.members.len();
        let session = self.session;
        self.members
            .retain(|_, m| now.saturating_duration_since(m.last_seen) < session);
        if self.members.len() < before {
            self.rebalance();
        }
    }

    pub(crate) fn heartbeat(
        &mut self,
        now: Instant,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        self.heartbeats
            .push((req.member_id.clone(), req.member_epoch));
        self.subscriptions.push((
            req.member_epoch,
            req.subscribed_topic_names.clone(),
            req.subscribed_topic_regex.clone(),
        ));
        if self.reject_regex && req.subscribed_topic_regex.is_some() {
            return ConsumerGroupHeartbeatResponse {
                error_code: KafkaCode::INVALID_REGULAR_EXPRESSION.0,
                error_message: Some("missing closing )".into()),
                ..Default::default()
            };
        }
        let err = |code: KafkaCode| ConsumerGroupHeartbeatResponse {
            error_code: code.0,
            ..Default::default()
        };
        if req.member_id.is_empty() {
            return err(KafkaCode::INVALID_REQUEST);
        }
        match req.member_epoch {
            -1 | -2 => {
                if self.members.remove(&req.member_id).is_some() {
                    self.rebalance();
                }
                return ConsumerGroupHeartbeatResponse {
                    member_id: Some(req.member_id.clone()),
                    member_epoch: req.member_epoch,
                    ..Default::default()
                };
            }
            // Kafka's GroupMetadataManager: "TopicPartitions must be empty when
            // (re-)joining." (INVALID_REQUEST).
            0 if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) => {
                return err(KafkaCode::INVALID_REQUEST);
            }
            0 => {
                self.members.insert(
                    req.member_id.clone(),
                    Member848 {
                        epoch: 0,
                        owned: BTreeSet::new(),
                        sent: None,
                        last_seen: now,
                    },
                );
                self.rebalance();
            }
            e => match self.members.get(&req.member_id) {
                None => return err(KafkaCode::UNKNOWN_MEMBER_ID),
                Some(m) if m.epoch != e => return err(KafkaCode::FENCED_MEMBER_EPOCH),
                Some(_) => {}
            },
        }
        let owned: Option<BTreeSet<i32>> = req.topic_partitions.as_ref().map(|ts| {
            ts.iter()
                .filter(|t| t.topic_id == self.topic_id)
                .flat_map(|t| t.partitions.iter().copied())
                .collect()
        });
        let others: BTreeSet<i32> = self
            .members
            .iter()
            .filter(|(id, _)| **id != req.member_id)
            .flat_map(|(_, m)| m.owned.iter().chain(m.sent.iter().flatten()).copied())
            .collect();
        let target = self
            .targets
            .get(&req.member_id)
            .cloned()
            .unwrap_or_default();
        let group_epoch = self.group_epoch;
        let m = self.members.get_mut(&req.member_id).expect("member");
        m.last_seen = now;
        if let Some(o) = owned {
            m.owned = o;
        }
        // Keep what is owned and still targeted; add targeted partitions nobody else holds.
        let assignment: BTreeSet<i32> = target
            .iter()
            .copied()
            .filter(|p| m.owned.contains(p) || !others.contains(p))
            .collect();
        if m.owned.is_subset(&target) || m.epoch == 0 {
            m.epoch = group_epoch;
        }
        let changed = m.sent.as_ref() != Some(&assignment);
        if changed {
            m.sent = Some(assignment.clone());
        }
        // Kafka answers a full request (epoch 0, or rebalance timeout, names and owned
        // partitions all set, as after a lost answer) with the assignment even if unchanged.
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && req.subscribed_topic_names.is_some()
                && req.topic_partitions.is_some());
        ConsumerGroupHeartbeatResponse {
            member_id: Some(req.member_id.clone()),
            member_epoch: m.epoch,
            heartbeat_interval_ms: 500,
            assignment: (changed || full).then(|| Assignment {
                topic_partitions: vec![TopicPartitions {
                    topic_id: self.topic_id,
                    partitions: assignment.into_iter().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// An OffsetCommit (v9+): the member epoch must be the member's current one.
    pub(crate) fn check_commit(&self, req: &OffsetCommitRequest) -> KafkaCode {
        match self.members.get(&req.member_id) {
            None => KafkaCode::UNKNOWN_MEMBER_ID,
            Some(m) if m.epoch != req.generation_id_or_member_epoch => {
                KafkaCode::STALE_MEMBER_EPOCH
            }
            Some(_) => KafkaCode::NONE,
        }
    }
}
