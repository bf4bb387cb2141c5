//! The simulated cluster's group coordinator for classic groups (`group.protocol=classic`):
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the classic checks of OffsetCommit,
//! as Kafka's `ClassicGroup` and its coordinator apply them. The handlers
//! (`handlers/{join_group,sync_group,heartbeat,leave_group}.rs`) decode and encode; the
//! rules live here. A JoinGroup or SyncGroup that must wait is parked under a ticket and
//! answered later ([`ClassicCoordinator::take_ready`]); the world holds the connection's
//! later requests until then, as Kafka mutes a channel with a request in flight.
//!
//! The rules followed:
//! - a join without a member id (v4+) gets one with MEMBER_ID_REQUIRED and is pending
//!   until it joins with it (or its session timeout passes); before v4 it joins at once;
//! - a new member, a leave, a member whose session expired, a changed protocol list or a
//!   rejoining leader start a rebalance (PreparingRebalance): the join phase ends when
//!   every member has joined and nobody is pending, or at the longest rebalance timeout,
//!   when members that did not join are removed; an empty group's first join phase
//!   waits `group.initial.rebalance.delay.ms` (extended while members keep coming);
//! - the join phase's end makes the next generation (CompletingRebalance): the protocol
//!   most members list first among those all members support, the leader kept or the
//!   first member, every waiting JoinGroup answered (the leader with every member's
//!   metadata); a follower rejoining a stable group with the same protocols is answered
//!   at once with the current generation;
//! - SyncGroup waits for the leader's, whose assignment makes the group Stable and
//!   answers every waiting one; in Stable it is answered at once; in PreparingRebalance
//!   REBALANCE_IN_PROGRESS (and a rebalance starting answers the waiting ones so);
//! - heartbeats: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS while
//!   preparing, else NONE; every accepted request restarts the member's session, and a
//!   member waiting in the join phase is kept alive;
//! - OffsetCommit ([`ClassicCoordinator::check_commit`]): a generation below 0 from
//!   outside is accepted while the group is empty; otherwise an unknown member is
//!   UNKNOWN_MEMBER_ID, another generation ILLEGAL_GENERATION, and CompletingRebalance
//!   REBALANCE_IN_PROGRESS; a commit during PreparingRebalance at the current generation
//!   is accepted (the eager revocation commit);
//! - a coordinator move answers every parked request NOT_COORDINATOR and reloads each
//!   group as last persisted (at each leader's SyncGroup and each generation that left
//!   the group empty), every session restarting.
//!
//! Not modelled: static members (`group.instance.id`), the pending-sync timeout,
//! `group.max.size`, session-timeout bounds.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_core::protocol::messages::join_group::response::JoinGroupResponseMember;
use kafka_core::protocol::messages::join_group::JoinGroupResponse;
use kafka_core::protocol::messages::sync_group::SyncGroupResponse;
use kafka_core::protocol::KafkaCode;

use super::rng::Rng;
use super::wire::{answer, Frame};

mod phases;
#[cfg(test)]
mod tests;

/// A classic group's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicState {
    /// No members.
    Empty,
    /// The join phase: waiting for the members' JoinGroups.
    PreparingRebalance,
    /// A new generation, waiting for the leader's SyncGroup.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
}

/// One member of a classic group.
#[derive(Debug, Clone, Default)]
pub struct ClassicMember {
    /// `session.timeout.ms` it joined with.
    pub session_timeout_ms: u64,
    /// `max.poll.interval.ms` it joined with (the join phase's bound).
    pub rebalance_timeout_ms: u64,
    /// Its protocols (assignor name, metadata), in its order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// Its assignment in the current generation (empty until the leader's SyncGroup).
    pub assignment: Bytes,
    /// Its JoinGroup waiting for the join phase to end.
    pub join_ticket: Option<u64>,
    /// Its SyncGroup waiting for the leader's.
    pub sync_ticket: Option<u64>,
    /// The last request that kept its session (ms of virtual time).
    pub last_seen_ms: u64,
}

/// One classic group.
#[derive(Debug, Clone)]
pub struct ClassicGroup {
    /// Its state.
    pub state: ClassicState,
    /// The generation (0 before the first).
    pub generation: i32,
    /// The protocol type of its members (`consumer`).
    pub protocol_type: Option<String>,
    /// The protocol (assignor) chosen for the generation.
    pub protocol: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// Members by id.
    pub members: BTreeMap<String, ClassicMember>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with when they expire.
    pub pending: BTreeMap<String, u64>,
    /// When the join phase ends at the latest (PreparingRebalance).
    pub join_deadline_ms: u64,
    /// The join phase is an empty group's initial delay (it never ends early).
    initial: Option<InitialDelay>,
    /// The group as last persisted (reloaded by a new coordinator).
    persisted: Option<Box<ClassicGroup>>,
}

#[derive(Debug, Clone, Copy)]
struct InitialDelay {
    started_ms: u64,
}

impl ClassicGroup {
    fn new() -> ClassicGroup {
        ClassicGroup {
            state: ClassicState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            pending: BTreeMap::new(),
            join_deadline_ms: 0,
            initial: None,
            persisted: None,
        }
    }

    /// The protocols every member supports.
    fn candidates(&self) -> BTreeSet<String> {
        let mut all: Option<BTreeSet<String>> = None;
        for m in self.members.values() {
            let mine: BTreeSet<String> = m.protocols.iter().map(|(n, _)| n.clone()).collect();
            all = Some(match all {
                None => mine,
                Some(a) => a.intersection(&mine).cloned().collect(),
            });
        }
        all.unwrap_or_default()
    }

    fn persist(&mut self) {
        let mut copy = self.clone();
        copy.persisted = None;
        for m in copy.members.values_mut() {
            m.join_ticket = None;
            m.sync_ticket = None;
        }
        copy.pending.clear();
        self.persisted = Some(Box::new(copy));
    }
}

/// What the classic coordinator counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassicCounters {
    /// JoinGroups answered MEMBER_ID_REQUIRED.
    pub member_id_required: u64,
    /// Members added to a group.
    pub joins: u64,
    /// Generations made (join phases ended).
    pub generations: u64,
    /// Members removed by LeaveGroup.
    pub leaves: u64,
    /// Members removed after their session timeout.
    pub expired: u64,
    /// Members removed at the end of a join phase they did not join.
    pub dropped_at_join: u64,
    /// Answers REBALANCE_IN_PROGRESS to heartbeats and SyncGroups.
    pub rebalancing: u64,
    /// Answers ILLEGAL_GENERATION (heartbeat, sync, commit).
    pub illegal_generation: u64,
    /// Answers UNKNOWN_MEMBER_ID (join, heartbeat, sync, commit, leave).
    pub unknown_member: u64,
    /// Classic commits applied.
    pub commits: u64,
    /// Classic commits refused by the group's state, by code.
    pub commits_refused: BTreeMap<i16, u64>,
    /// Valid commits refused by injection, by code.
    pub commits_injected: BTreeMap<i16, u64>,
    /// Parked requests answered NOT_COORDINATOR by a coordinator move, and group reloads.
    pub reloads: u64,
}

/// A JoinGroup as the coordinator reads it.
#[derive(Debug, Clone)]
pub struct Join {
    /// The member id (empty on a first join).
    pub member_id: String,
    /// The client id (new member ids start with it).
    pub client_id: String,
    /// `session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// `max.poll.interval.ms` (v0: the session timeout).
    pub rebalance_timeout_ms: u64,
    /// `consumer`.
    pub protocol_type: String,
    /// Assignor names and their metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// Whether the id must be asked for first (v4+).
    pub require_member_id: bool,
}

/// The classic group coordinator. See the module docs.
#[derive(Debug, Clone)]
pub struct ClassicCoordinator {
    /// Groups by id.
    pub groups: BTreeMap<String, ClassicGroup>,
    /// `group.initial.rebalance.delay.ms`.
    pub initial_delay_ms: u64,
    /// Per mille of valid OffsetCommits refused anyway (while `commit_faults_on`), with
    /// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID in turn.
    pub commit_faults: u32,
    /// Whether the injected commit refusals fire.
    pub commit_faults_on: bool,
    /// Counters.
    pub counters: ClassicCounters,
    /// Parked requests by ticket: the frame to answer and its group.
    parked: BTreeMap<u64, (Frame, String)>,
    /// Answers due now: `(ticket, framed answer)`.
    ready: Vec<(u64, Vec<u8>)>,
    next_ticket: u64,
    next_member: u64,
    moves_seen: u64,
    rng: Rng,
}

impl Default for ClassicCoordinator {
    fn default() -> Self {
        ClassicCoordinator {
            groups: BTreeMap::new(),
            initial_delay_ms: 3_000,
            commit_faults: 0,
            commit_faults_on: false,
            counters: ClassicCounters::default(),
            parked: BTreeMap::new(),
            ready: Vec::new(),
            next_ticket: 1,
            next_member: 1,
            moves_seen: 0,
            rng: Rng::new(0),
        }
    }
}

/// A JoinGroup or SyncGroup answered now, or parked under a ticket.
#[derive(Debug)]
pub enum Reply<T> {
    /// Answered now.
    Now(T),
    /// Answered later through [`ClassicCoordinator::take_ready`].
    Parked(u64),
}

fn join_error(code: KafkaCode, member_id: &str) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code.0,
        generation_id: -1,
        member_id: member_id.to_string(),
        ..Default::default()
    }
}

fn sync_error(code: KafkaCode) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: code.0,
        ..Default::default()
    }
}

impl ClassicCoordinator {
    /// Seeds the injected refusals.
    pub fn reseed(&mut self, seed: u64) {
        self.rng = Rng::new(seed ^ 0x636c_6173_7369_6321);
    }

    /// Whether `group` is a classic group here.
    pub fn has(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// The answers that became due: `(ticket, framed answer)`.
    pub fn take_ready(&mut self) -> Vec<(u64, Vec<u8>)> {
        std::mem::take(&mut self.ready)
    }

    fn park(&mut self, frame: &Frame, group: &str) -> u64 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.parked.insert(t, (frame.clone(), group.to_string()));
        t
    }

    fn answer_join(&mut self, ticket: u64, body: &JoinGroupResponse) {
        if let Some((frame, _)) = self.parked.remove(&ticket) {
            self.ready.push((ticket, answer(&frame, body)));
        }
    }

    fn answer_sync(&mut self, ticket: u64, body: &SyncGroupResponse) {
        if let Some((frame, _)) = self.parked.remove(&ticket) {
            self.ready.push((ticket, answer(&frame, body)));
        }
    }

    /// A JoinGroup of `group` (see the module docs).
    pub fn join(
        &mut self,
        group: &str,
        j: Join,
        frame: &Frame,
        now_ms: u64,
    ) -> Reply<JoinGroupResponse> {
        if j.protocol_type.is_empty() || j.protocols.is_empty() {
            return Reply::Now(join_error(
                KafkaCode::INCONSISTENT_GROUP_PROTOCOL,
                &j.member_id,
            ));
        }
        if j.session_timeout_ms == 0 {
            return Reply::Now(join_error(KafkaCode::INVALID_SESSION_TIMEOUT, &j.member_id));
        }
        if !self.groups.contains_key(group) && !j.member_id.is_empty() {
            self.counters.unknown_member += 1;
            return Reply::Now(join_error(KafkaCode::UNKNOWN_MEMBER_ID, &j.member_id));
        }
        let g = self
            .groups
            .entry(group.to_string())
            .or_insert_with(ClassicGroup::new);
        if g.state != ClassicState::Empty {
            let theirs: BTreeSet<String> = j.protocols.iter().map(|(n, _)| n.clone()).collect();
            let same_type = g.protocol_type.as_deref() == Some(j.protocol_type.as_str());
            if !same_type || g.candidates().is_disjoint(&theirs) {
                return Reply::Now(join_error(
                    KafkaCode::INCONSISTENT_GROUP_PROTOCOL,
                    &j.member_id,
                ));
            }
        }
        if j.member_id.is_empty() {
            let id = format!("{}-{}", j.client_id, self.next_member);
            self.next_member += 1;
            if j.require_member_id {
                g.pending.insert(id.clone(), now_ms + j.session_timeout_ms);
                self.counters.member_id_required += 1;
                return Reply::Now(join_error(KafkaCode::MEMBER_ID_REQUIRED, &id));
            }
            let ticket = self.park(frame, group);
            self.add_member(group, id, j, ticket, now_ms);
            return Reply::Parked(ticket);
        }
        let g = self.groups.get_mut(group).expect("made above");
        if g.pending.remove(&j.member_id).is_some() {
            let ticket = self.park(frame, group);
            let id = j.member_id.clone();
            self.add_member(group, id, j, ticket, now_ms);
            return Reply::Parked(ticket);
        }
        let Some(m) = g.members.get(&j.member_id) else {
            self.counters.unknown_member += 1;
            return Reply::Now(join_error(KafkaCode::UNKNOWN_MEMBER_ID, &j.member_id));
        };
        let same = m.protocols == j.protocols;
        let is_leader = g.leader.as_deref() == Some(j.member_id.as_str());
        let answer_now = match g.state {
            ClassicState::CompletingRebalance => same,
            ClassicState::Stable => same && !is_leader,
            _ => false,
        };
        if answer_now {
            let id = j.member_id.clone();
            let g = self.groups.get_mut(group).expect("known");
            g.members.get_mut(&id).expect("known").last_seen_ms = now_ms;
            return Reply::Now(join_answer(g, &id));
        }
        let ticket = self.park(frame, group);
        let g = self.groups.get_mut(group).expect("known");
        let m = g.members.get_mut(&j.member_id).expect("known");
        m.protocols = j.protocols;
        m.session_timeout_ms = j.session_timeout_ms;
        m.rebalance_timeout_ms = j.rebalance_timeout_ms;
        m.join_ticket = Some(ticket);
        m.last_seen_ms = now_ms;
        if g.state == ClassicState::PreparingRebalance {
            self.try_complete_join(group, now_ms);
        } else {
            self.prepare_rebalance(group, now_ms);
        }
        Reply::Parked(ticket)
    }

    fn add_member(&mut self, group: &str, id: String, j: Join, ticket: u64, now_ms: u64) {
        self.counters.joins += 1;
        let g = self.groups.get_mut(group).expect("known");
        g.protocol_type.get_or_insert(j.protocol_type);
        g.members.insert(
            id,
            ClassicMember {
                session_timeout_ms: j.session_timeout_ms,
                rebalance_timeout_ms: j.rebalance_timeout_ms,
                protocols: j.protocols,
                assignment: Bytes::new(),
                join_ticket: Some(ticket),
                sync_ticket: None,
                last_seen_ms: now_ms,
            },
        );
        match g.state {
            ClassicState::PreparingRebalance => {
                if let Some(i) = g.initial {
                    // The initial delay grows while members keep coming.
                    let bound = i.started_ms + self.max_rebalance_timeout(group);
                    let g = self.groups.get_mut(group).expect("known");
                    g.join_deadline_ms = (now_ms + self.initial_delay_ms).min(bound);
                }
                self.try_complete_join(group, now_ms);
            }
            _ => self.prepare_rebalance(group, now_ms),
        }
    }

    /// A SyncGroup (see the module docs).
    pub fn sync(
        &mut self,
        group: &str,
        member_id: &str,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
        frame: &Frame,
        now_ms: u64,
    ) -> Reply<SyncGroupResponse> {
        let code = self.check_member(group, member_id, generation);
        let code = match (code, self.groups.get(group).map(|g| g.state)) {
            (Err(c), _) => Err(c),
            (Ok(()), Some(ClassicState::PreparingRebalance)) => {
                self.counters.rebalancing += 1;
                Err(KafkaCode::REBALANCE_IN_PROGRESS)
            }
            (Ok(()), _) => Ok(()),
        };
        if let Err(c) = code {
            return Reply::Now(sync_error(c));
        }
        let g = self.groups.get_mut(group).expect("checked");
        g.members.get_mut(member_id).expect("checked").last_seen_ms = now_ms;
        if g.state == ClassicState::Stable {
            let m = &g.members[member_id];
            return Reply::Now(sync_answer(g, m.assignment.clone()));
        }
        let ticket = self.park(frame, group);
        let g = self.groups.get_mut(group).expect("checked");
        g.members.get_mut(member_id).expect("checked").sync_ticket = Some(ticket);
        if g.leader.as_deref() == Some(member_id) {
            let given: BTreeMap<String, Bytes> = assignments.into_iter().collect();
            for (id, m) in g.members.iter_mut() {
                m.assignment = given.get(id).cloned().unwrap_or_default();
            }
            g.state = ClassicState::Stable;
            g.persist();
            let mut answers = Vec::new();
            for m in g.members.values_mut() {
                if let Some(t) = m.sync_ticket.take() {
                    answers.push((t, m.assignment.clone()));
                }
            }
            let g = &self.groups[group];
            let bodies: Vec<(u64, SyncGroupResponse)> = answers
                .into_iter()
                .map(|(t, a)| (t, sync_answer(g, a)))
                .collect();
            for (t, body) in bodies {
                self.answer_sync(t, &body);
            }
        }
        Reply::Parked(ticket)
    }

    /// A Heartbeat (see the module docs).
    pub fn heartbeat(
        &mut self,
        group: &str,
        member_id: &str,
        generation: i32,
        now_ms: u64,
    ) -> KafkaCode {
        if let Err(c) = self.check_member(group, member_id, generation) {
            return c;
        }
        let g = self.groups.get_mut(group).expect("checked");
        g.members.get_mut(member_id).expect("checked").last_seen_ms = now_ms;
        if g.state == ClassicState::PreparingRebalance {
            self.counters.rebalancing += 1;
            return KafkaCode::REBALANCE_IN_PROGRESS;
        }
        KafkaCode::NONE
    }

    /// A LeaveGroup of one member: its answer's code.
    pub fn leave(&mut self, group: &str, member_id: &str, now_ms: u64) -> KafkaCode {
        let Some(g) = self.groups.get_mut(group) else {
            self.counters.unknown_member += 1;
            return KafkaCode::UNKNOWN_MEMBER_ID;
        };
        if g.pending.remove(member_id).is_some() {
            self.try_complete_join(group, now_ms);
            return KafkaCode::NONE;
        }
        if !g.members.contains_key(member_id) {
            self.counters.unknown_member += 1;
            return KafkaCode::UNKNOWN_MEMBER_ID;
        }
        self.counters.leaves += 1;
        self.remove_member(group, member_id, now_ms);
        KafkaCode::NONE
    }

    /// Removes a member (left or expired) and rebalances what remains.
    fn remove_member(&mut self, group: &str, member_id: &str, now_ms: u64) {
        let g = self.groups.get_mut(group).expect("known");
        let Some(m) = g.members.remove(member_id) else {
            return;
        };
        if let Some(t) = m.join_ticket {
            self.counters.unknown_member += 1;
            self.answer_join(t, &join_error(KafkaCode::UNKNOWN_MEMBER_ID, member_id));
        }
        if let Some(t) = m.sync_ticket {
            self.counters.unknown_member += 1;
            self.answer_sync(t, &sync_error(KafkaCode::UNKNOWN_MEMBER_ID));
        }
        match self.groups[group].state {
            ClassicState::Stable | ClassicState::CompletingRebalance => {
                self.prepare_rebalance(group, now_ms)
            }
            ClassicState::PreparingRebalance => self.try_complete_join(group, now_ms),
            ClassicState::Empty => {}
        }
    }

    /// The member check of heartbeats, syncs and commits: UNKNOWN_MEMBER_ID (no such
    /// group, an empty one, no such member), ILLEGAL_GENERATION.
    fn check_member(
        &mut self,
        group: &str,
        member_id: &str,
        generation: i32,
    ) -> Result<(), KafkaCode> {
        let known = self
            .groups
            .get(group)
            .filter(|g| g.state != ClassicState::Empty)
            .and_then(|g| g.members.get(member_id).map(|_| g.generation));
        match known {
            None => {
                self.counters.unknown_member += 1;
                Err(KafkaCode::UNKNOWN_MEMBER_ID)
            }
            Some(gen) if gen != generation => {
                self.counters.illegal_generation += 1;
                Err(KafkaCode::ILLEGAL_GENERATION)
            }
            Some(_) => Ok(()),
        }
    }

    /// Checks an OffsetCommit to classic `group` (see the module docs); counts it.
    pub fn check_commit(
        &mut self,
        group: &str,
        member_id: &str,
        generation: i32,
    ) -> Result<(), KafkaCode> {
        let state = self.groups.get(group).map(|g| g.state);
        let outcome = if generation < 0 && state.is_none_or(|s| s == ClassicState::Empty) {
            Ok(())
        } else {
            self.check_member(group, member_id, generation)
                .and_then(|()| {
                    if state == Some(ClassicState::CompletingRebalance) {
                        Err(KafkaCode::REBALANCE_IN_PROGRESS)
                    } else {
                        Ok(())
                    }
                })
        };
        let outcome = match outcome {
            Ok(()) if self.commit_faults_on && self.rng.chance(self.commit_faults) => {
                let code = [
                    KafkaCode::REBALANCE_IN_PROGRESS,
                    KafkaCode::ILLEGAL_GENERATION,
                    KafkaCode::UNKNOWN_MEMBER_ID,
                ][self.rng.below(3) as usize];
                *self.counters.commits_injected.entry(code.0).or_default() += 1;
                Err(code)
            }
            Ok(()) => {
                self.counters.commits += 1;
                Ok(())
            }
            Err(code) => {
                *self.counters.commits_refused.entry(code.0).or_default() += 1;
                Err(code)
            }
        };
        outcome
    }

    /// Every partition assignment of the current generation, per member: the leader's
    /// decision as the coordinator holds it (raw ConsumerProtocol bytes).
    pub fn assignments(&self, group: &str) -> BTreeMap<String, Bytes> {
        self.groups
            .get(group)
            .map(|g| {
                g.members
                    .iter()
                    .map(|(id, m)| (id.clone(), m.assignment.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The JoinGroup answer of the current generation for member `id` (the leader gets
/// every member's metadata for the chosen protocol).
fn join_answer(g: &ClassicGroup, id: &str) -> JoinGroupResponse {
    let protocol = g.protocol.clone().unwrap_or_default();
    let leader = g.leader.clone().unwrap_or_default();
    let members = if leader == id {
        g.members
            .iter()
            .map(|(mid, m)| JoinGroupResponseMember {
                member_id: mid.clone(),
                metadata: m
                    .protocols
                    .iter()
                    .find(|(n, _)| *n == protocol)
                    .map(|(_, b)| b.clone())
                    .unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    } else {
        Vec::new()
    };
    JoinGroupResponse {
        generation_id: g.generation,
        protocol_type: g.protocol_type.clone(),
        protocol_name: Some(protocol),
        leader,
        member_id: id.to_string(),
        members,
        ..Default::default()
    }
}

fn sync_answer(g: &ClassicGroup, assignment: Bytes) -> SyncGroupResponse {
    SyncGroupResponse {
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol.clone(),
        assignment,
        ..Default::default()
    }
}
