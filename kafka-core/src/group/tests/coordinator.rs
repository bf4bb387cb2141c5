//! A scripted classic group coordinator, shared by several clients: join rounds that wait
//! for every known member (or the rebalance timeout), MEMBER_ID_REQUIRED first, the
//! leader's SyncGroup releasing the followers', heartbeats per state, session expiry,
//! LeaveGroup, and offsets with generation checks — the rules of Kafka's
//! `GroupCoordinator` the client depends on.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use crate::protocol::messages::join_group::response::JoinGroupResponseMember;
use crate::protocol::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use crate::protocol::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};
use crate::protocol::messages::offset_commit::response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use crate::protocol::messages::offset_commit::{OffsetCommitRequest, OffsetCommitResponse};
use crate::protocol::messages::offset_fetch::response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use crate::protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
use crate::protocol::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};
use crate::protocol::KafkaCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupState {
    Empty,
    Preparing,
    Completing,
    Stable,
}

#[derive(Clone)]
pub(crate) struct Member {
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) instance: Option<String>,
    last_seen: Instant,
    session: Duration,
    rebalance: Duration,
    /// Joined in the current round.
    joined: bool,
}

/// A held answer: which client and request it is for.
pub(crate) type Ticket = usize;

pub(crate) enum Answer {
    Join(JoinGroupResponse),
    Sync(SyncGroupResponse),
}

pub(crate) struct Coordinator {
    pub(crate) state: GroupState,
    pub(crate) generation: i32,
    pub(crate) leader: String,
    pub(crate) protocol: String,
    pub(crate) members: BTreeMap<String, Member>,
    next_member: u32,
    round_deadline: Option<Instant>,
    held_joins: Vec<(Ticket, String)>,
    held_syncs: Vec<(Ticket, String)>,
    assignments: BTreeMap<String, Bytes>,
    pub(crate) offsets: BTreeMap<(String, i32), i64>,
    /// Every accepted commit: (member, generation, topic, partition, offset).
    pub(crate) commit_log: Vec<(String, i32, String, i32, i64)>,
    /// Ready answers for held requests.
    pub(crate) released: Vec<(Ticket, Answer)>,
    /// Answer the next OffsetCommit partitions with this code.
    pub(crate) fail_next_commit: Option<KafkaCode>,
    pub(crate) rebalances: u32,
    /// What a new coordinator loads after a failover: the group as of its last completed
    /// SyncGroup (members, generation, leader, protocol, assignments).
    persisted: Option<Persisted>,
}

#[derive(Clone)]
struct Persisted {
    generation: i32,
    leader: String,
    protocol: String,
    members: BTreeMap<String, Member>,
    assignments: BTreeMap<String, Bytes>,
}

impl Coordinator {
    pub(crate) fn new() -> Self {
        Coordinator {
            state: GroupState::Empty,
            generation: 0,
            leader: String::new(),
            protocol: String::new(),
            members: BTreeMap::new(),
            next_member: 0,
            round_deadline: None,
            held_joins: Vec::new(),
            held_syncs: Vec::new(),
            assignments: BTreeMap::new(),
            offsets: BTreeMap::new(),
            commit_log: Vec::new(),
            released: Vec::new(),
            fail_next_commit: None,
            rebalances: 0,
            persisted: None,
        }
    }

    /// The coordinator moves to another broker, which loads the group as last persisted:
    /// requests held in a join or sync round are answered NOT_COORDINATOR, a round in
    /// progress is forgotten (the generation it handed out in JoinGroup answers was never
    /// stored), and every member's session restarts. Committed offsets were stored.
    pub(crate) fn fail_over(&mut self, now: Instant) {
        let not_coordinator = KafkaCode::NOT_COORDINATOR.0;
        for (t, _) in self.held_joins.drain(..) {
            self.released.push((
                t,
                Answer::Join(JoinGroupResponse {
                    error_code: not_coordinator,
                    generation_id: -1,
                    ..Default::default()
                }),
            ));
        }
        for (t, _) in self.held_syncs.drain(..) {
            self.released.push((
                t,
                Answer::Sync(SyncGroupResponse {
                    error_code: not_coordinator,
                    ..Default::default()
                }),
            ));
        }
        self.round_deadline = None;
        match self.persisted.clone() {
            Some(p) => {
                self.generation = p.generation;
                self.leader = p.leader;
                self.protocol = p.protocol;
                self.members = p.members;
                self.assignments = p.assignments;
                self.state = if self.members.is_empty() {
                    GroupState::Empty
                } else {
                    GroupState::Stable
                };
            }
            None => {
                self.members.clear();
                self.assignments.clear();
                self.state = GroupState::Empty;
            }
        }
        for m in self.members.values_mut() {
            m.last_seen = now;
            m.joined = false;
        }
    }

    fn persist(&mut self) {
        self.persisted = Some(Persisted {
            generation: self.generation,
            leader: self.leader.clone(),
            protocol: self.protocol.clone(),
            members: self.members.clone(),
            assignments: self.assignments.clone(),
        });
    }

    fn prepare(&mut self, now: Instant) {
        if self.state != GroupState::Preparing {
            self.state = GroupState::Preparing;
            let rebalance = self
                .members
                .values()
                .map(|m| m.rebalance)
                .max()
                .unwrap_or_default();
            self.round_deadline = Some(now + rebalance);
            for m in self.members.values_mut() {
                m.joined = false;
            }
            // Followers waiting in SyncGroup learn of the new round.
            for (t, _) in self.held_syncs.drain(..) {
                self.released.push((
                    t,
                    Answer::Sync(SyncGroupResponse {
                        error_code: KafkaCode::REBALANCE_IN_PROGRESS.0,
                        ..Default::default()
                    }),
                ));
            }
        }
    }

    /// A JoinGroup: answered now (`Some`) or held until the round completes.
    pub(crate) fn join(
        &mut self,
        now: Instant,
        t: Ticket,
        req: &JoinGroupRequest,
    ) -> Option<JoinGroupResponse> {
        let protocols: Vec<(String, Bytes)> = req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        let mut member_id = req.member_id.clone();
        if member_id.is_empty() {
            // Static members are known by instance id.
            if let Some(inst) = &req.group_instance_id {
                if let Some((id, _)) = self
                    .members
                    .iter()
                    .find(|(_, m)| m.instance.as_ref() == Some(inst))
                {
                    let old = id.clone();
                    self.next_member += 1;
                    let new = format!("{inst}-{}", self.next_member);
                    let mut m = self.members.remove(&old).expect("member");
                    m.last_seen = now;
                    m.protocols = protocols.clone();
                    self.members.insert(new.clone(), m);
                    if self.leader == old {
                        self.leader = new.clone();
                    }
                    if let Some(a) = self.assignments.remove(&old) {
                        self.assignments.insert(new.clone(), a);
                    }
                    if self.state == GroupState::Stable {
                        // A static member coming back gets its assignment without a rebalance.
                        return Some(JoinGroupResponse {
                            generation_id: self.generation,
                            protocol_type: Some("consumer".into()),
                            protocol_name: Some(self.protocol.clone()),
                            leader: self.leader.clone(),
                            skip_assignment: false,
                            member_id: new,
                            ..Default::default()
                        });
                    }
                    member_id = new;
                } else {
                    self.next_member += 1;
                    member_id = format!("{inst}-{}", self.next_member);
                }
            } else {
                self.next_member += 1;
                let id = format!("member-{}", self.next_member);
                self.members.insert(
                    id.clone(),
                    Member {
                        protocols,
                        instance: None,
                        last_seen: now,
                        session: Duration::from_millis(req.session_timeout_ms as u64),
                        rebalance: Duration::from_millis(req.rebalance_timeout_ms as u64),
                        joined: false,
                    },
                );
                return Some(JoinGroupResponse {
                    error_code: KafkaCode::MEMBER_ID_REQUIRED.0,
                    member_id: id,
                    generation_id: -1,
                    ..Default::default()
                });
            }
        } else if !self.members.contains_key(&member_id) {
            return Some(JoinGroupResponse {
                error_code: KafkaCode::UNKNOWN_MEMBER_ID.0,
                generation_id: -1,
                ..Default::default()
            });
        }
        let m = self
            .members
            .entry(member_id.clone())
            .or_insert_with(|| Member {
                protocols: Vec::new(),
                instance: req.group_instance_id.clone(),
                last_seen: now,
                session: Duration::from_millis(req.session_timeout_ms as u64),
                rebalance: Duration::from_millis(req.rebalance_timeout_ms as u64),
                joined: false,
            });
        m.protocols = protocols;
        m.last_seen = now;
        self.prepare(now);
        if let Some(m) = self.members.get_mut(&member_id) {
            m.joined = true;
        }
        self.held_joins.retain(|(_, id)| *id != member_id);
        self.held_joins.push((t, member_id));
        self.maybe_complete_round(now);
        None
    }

    /// Held requests of members no longer in the group are answered UNKNOWN_MEMBER_ID
    /// (a member that left while its JoinGroup waited, one expired while in SyncGroup).
    fn answer_departed(&mut self) {
        let code = KafkaCode::UNKNOWN_MEMBER_ID.0;
        let members = &self.members;
        let (joins, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_joins)
            .into_iter()
            .partition(|(_, id)| members.contains_key(id));
        self.held_joins = joins;
        for (t, _) in gone {
            self.released.push((
                t,
                Answer::Join(JoinGroupResponse {
                    error_code: code,
                    generation_id: -1,
                    ..Default::default()
                }),
            ));
        }
        let (syncs, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_syncs)
            .into_iter()
            .partition(|(_, id)| members.contains_key(id));
        self.held_syncs = syncs;
        for (t, _) in gone {
            self.released.push((
                t,
                Answer::Sync(SyncGroupResponse {
                    error_code: code,
                    ..Default::default()
                }),
            ));
        }
    }

    /// Completes the join round when every member joined or the deadline passed.
    pub(crate) fn maybe_complete_round(&mut self, now: Instant) {
        self.answer_departed();
        if self.state != GroupState::Preparing {
            return;
        }
        let all = self.members.values().all(|m| m.joined);
        if !all && self.round_deadline.is_some_and(|d| now < d) {
            return;
        }
        self.members.retain(|_, m| m.joined);
        self.answer_departed();
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.generation += 1;
            self.assignments.clear();
            self.persist();
            return;
        }
        self.generation += 1;
        self.rebalances += 1;
        self.state = GroupState::Completing;
        self.assignments.clear();
        let first = self
            .held_joins
            .first()
            .map(|(_, id)| id.clone())
            .unwrap_or_default();
        if !self.members.contains_key(&self.leader) {
            self.leader = first;
        }
        // The first protocol of the leader's list every member supports.
        let leader_protocols = &self.members[&self.leader].protocols;
        self.protocol = leader_protocols
            .iter()
            .map(|(n, _)| n.clone())
            .find(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == n))
            })
            .unwrap_or_default();
        for (t, id) in std::mem::take(&mut self.held_joins) {
            let members = if id == self.leader {
                self.members
                    .iter()
                    .map(|(mid, m)| JoinGroupResponseMember {
                        member_id: mid.clone(),
                        group_instance_id: m.instance.clone(),
                        metadata: m
                            .protocols
                            .iter()
                            .find(|(n, _)| *n == self.protocol)
                            .map(|(_, b)| b.clone())
                            .unwrap_or_default(),
                        ..Default::default()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            self.released.push((
                t,
                Answer::Join(JoinGroupResponse {
                    generation_id: self.generation,
                    protocol_type: Some("consumer".into()),
                    protocol_name: Some(self.protocol.clone()),
                    leader: self.leader.clone(),
                    member_id: id,
                    members,
                    ..Default::default()
                }),
            ));
        }
        let _ = now;
    }

    pub(crate) fn sync(
        &mut self,
        now: Instant,
        t: Ticket,
        req: &SyncGroupRequest,
    ) -> Option<SyncGroupResponse> {
        let err = |code: KafkaCode| {
            Some(SyncGroupResponse {
                error_code: code.0,
                ..Default::default()
            })
        };
        let Some(m) = self.members.get_mut(&req.member_id) else {
            return err(KafkaCode::UNKNOWN_MEMBER_ID);
        };
        m.last_seen = now;
        if req.generation_id != self.generation {
            return err(KafkaCode::ILLEGAL_GENERATION);
        }
        match self.state {
            GroupState::Preparing | GroupState::Empty => err(KafkaCode::REBALANCE_IN_PROGRESS),
            GroupState::Stable => Some(SyncGroupResponse {
                protocol_type: Some("consumer".into()),
                protocol_name: Some(self.protocol.clone()),
                assignment: self
                    .assignments
                    .get(&req.member_id)
                    .cloned()
                    .unwrap_or_default(),
                ..Default::default()
            }),
            GroupState::Completing => {
                self.held_syncs.push((t, req.member_id.clone()));
                if req.member_id == self.leader {
                    for a in &req.assignments {
                        self.assignments
                            .insert(a.member_id.clone(), a.assignment.clone());
                    }
                    self.state = GroupState::Stable;
                    self.persist();
                    for (t, id) in std::mem::take(&mut self.held_syncs) {
                        self.released.push((
                            t,
                            Answer::Sync(SyncGroupResponse {
                                protocol_type: Some("consumer".into()),
                                protocol_name: Some(self.protocol.clone()),
                                assignment: self.assignments.get(&id).cloned().unwrap_or_default(),
                                ..Default::default()
                            }),
                        ));
                    }
                }
                None
            }
        }
    }

    pub(crate) fn heartbeat(&mut self, now: Instant, req: &HeartbeatRequest) -> HeartbeatResponse {
        let code = match self.members.get_mut(&req.member_id) {
            None => KafkaCode::UNKNOWN_MEMBER_ID,
            Some(m) => {
                m.last_seen = now;
                if req.generation_id != self.generation {
                    KafkaCode::ILLEGAL_GENERATION
                } else if self.state == GroupState::Preparing {
                    KafkaCode::REBALANCE_IN_PROGRESS
                } else {
                    KafkaCode::NONE
                }
            }
        };
        HeartbeatResponse {
            error_code: code.0,
            ..Default::default()
        }
    }

    pub(crate) fn leave(&mut self, now: Instant, req: &LeaveGroupRequest) -> LeaveGroupResponse {
        let mut any = false;
        for m in &req.members {
            any |= self.members.remove(&m.member_id).is_some();
        }
        any |= self.members.remove(&req.member_id).is_some();
        if any {
            self.prepare(now);
            self.maybe_complete_round(now);
        }
        LeaveGroupResponse::default()
    }

    /// Members silent for their session timeout are removed (a rebalance follows).
    pub(crate) fn expire(&mut self, now: Instant) {
        let before = self.members.len();
        // A member waiting for its JoinGroup answer in the current round does not expire.
        let preparing = self.state == GroupState::Preparing;
        self.members.retain(|_, m| {
            (preparing && m.joined) || now.saturating_duration_since(m.last_seen) < m.session
        });
        if self.members.len() < before {
            if self.state == GroupState::Stable || self.state == GroupState::Completing {
                self.prepare(now);
            }
            self.maybe_complete_round(now);
        } else if self.state == GroupState::Preparing {
            self.maybe_complete_round(now);
        }
    }

    pub(crate) fn commit(
        &mut self,
        now: Instant,
        req: &OffsetCommitRequest,
    ) -> OffsetCommitResponse {
        let code = match self.members.get_mut(&req.member_id) {
            None => KafkaCode::UNKNOWN_MEMBER_ID,
            Some(m) => {
                m.last_seen = now;
                if req.generation_id_or_member_epoch != self.generation {
                    KafkaCode::ILLEGAL_GENERATION
                } else if self.state == GroupState::Completing {
                    KafkaCode::REBALANCE_IN_PROGRESS
                } else {
                    self.fail_next_commit.take().unwrap_or(KafkaCode::NONE)
                }
            }
        };
        self.respond_commit(req, code)
    }

    /// Stores a commit judged `code` and answers it.
    pub(crate) fn respond_commit(
        &mut self,
        req: &OffsetCommitRequest,
        code: KafkaCode,
    ) -> OffsetCommitResponse {
        OffsetCommitResponse {
            topics: req
                .topics
                .iter()
                .map(|t| OffsetCommitResponseTopic {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| {
                            if code == KafkaCode::NONE {
                                self.offsets.insert(
                                    (t.name.clone(), p.partition_index),
                                    p.committed_offset,
                                );
                                self.commit_log.push((
                                    req.member_id.clone(),
                                    req.generation_id_or_member_epoch,
                                    t.name.clone(),
                                    p.partition_index,
                                    p.committed_offset,
                                ));
                            }
                            OffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code: code.0,
                                ..Default::default()
                            }
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub(crate) fn fetch_offsets(&self, req: &OffsetFetchRequest) -> OffsetFetchResponse {
        OffsetFetchResponse {
            topics: req
                .topics
                .iter()
                .flatten()
                .map(|t| OffsetFetchResponseTopic {
                    name: t.name.clone(),
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|&p| OffsetFetchResponsePartition {
                            partition_index: p,
                            committed_offset: self
                                .offsets
                                .get(&(t.name.clone(), p))
                                .copied()
                                .unwrap_or(-1),
                            committed_leader_epoch: -1,
                            metadata: Some(String::new()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}
