//! The classic coordinator's join phases and timers: a rebalance starting, the join
//! phase ending (early once everyone joined, or at the rebalance timeout) into the next
//! generation, sessions and pending member ids expiring, and a coordinator move
//! reloading every group as persisted.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_core::protocol::KafkaCode;

use super::super::wire::answer;
use super::{
    join_answer, join_error, sync_error, ClassicCoordinator, ClassicGroup, ClassicState,
    InitialDelay,
};

impl ClassicCoordinator {
    pub(super) fn max_rebalance_timeout(&self, group: &str) -> u64 {
        self.groups[group]
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// Starts a join phase.
    pub(super) fn prepare_rebalance(&mut self, group: &str, now_ms: u64) {
        let timeout = self.max_rebalance_timeout(group);
        let delay = self.initial_delay_ms;
        let g = self.groups.get_mut(group).expect("known");
        let mut waiting = Vec::new();
        if g.state == ClassicState::CompletingRebalance {
            for m in g.members.values_mut() {
                m.assignment = Bytes::new();
                waiting.extend(m.sync_ticket.take());
            }
        }
        if g.state == ClassicState::Empty {
            g.initial = Some(InitialDelay { started_ms: now_ms });
            g.join_deadline_ms = now_ms + delay.min(timeout);
        } else {
            g.initial = None;
            g.join_deadline_ms = now_ms + timeout;
        }
        g.state = ClassicState::PreparingRebalance;
        for t in waiting {
            self.counters.rebalancing += 1;
            self.answer_sync(t, &sync_error(KafkaCode::REBALANCE_IN_PROGRESS));
        }
        self.try_complete_join(group, now_ms);
    }

    /// Ends the join phase early once every member joined and nobody is pending.
    pub(super) fn try_complete_join(&mut self, group: &str, now_ms: u64) {
        let g = &self.groups[group];
        let all = g.members.values().all(|m| m.join_ticket.is_some()) && g.pending.is_empty();
        if g.state == ClassicState::PreparingRebalance && g.initial.is_none() && all {
            self.complete_join(group, now_ms);
        }
    }

    /// The join phase's end: the next generation.
    pub(super) fn complete_join(&mut self, group: &str, now_ms: u64) {
        let g = self.groups.get_mut(group).expect("known");
        let before = g.members.len();
        g.members.retain(|_, m| m.join_ticket.is_some());
        self.counters.dropped_at_join += (before - g.members.len()) as u64;
        self.counters.generations += 1;
        g.generation += 1;
        g.initial = None;
        if g.members.is_empty() {
            g.state = ClassicState::Empty;
            g.protocol = None;
            g.protocol_type = None;
            g.leader = None;
            g.persist();
            return;
        }
        let candidates = g.candidates();
        let mut votes: BTreeMap<&String, usize> = BTreeMap::new();
        for m in g.members.values() {
            if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                *votes.entry(name).or_default() += 1;
            }
        }
        let most = votes.values().copied().max().unwrap_or(0);
        g.protocol = votes
            .iter()
            .find(|(_, &v)| v == most)
            .map(|(n, _)| (*n).clone());
        if g.leader.as_ref().is_none_or(|l| !g.members.contains_key(l)) {
            g.leader = g.members.keys().next().cloned();
        }
        g.state = ClassicState::CompletingRebalance;
        let ids: Vec<String> = g.members.keys().cloned().collect();
        let mut answers = Vec::new();
        for id in ids {
            let body = join_answer(g, &id);
            let m = g.members.get_mut(&id).expect("listed");
            m.last_seen_ms = now_ms;
            if let Some(t) = m.join_ticket.take() {
                answers.push((t, body));
            }
        }
        for (t, body) in answers {
            self.answer_join(t, &body);
        }
    }

    /// Moves time to `now_ms`; `moves` is the count of coordinator moves (a move reloads
    /// every group as persisted): sessions expire, pending ids expire, join phases end.
    pub fn advance(&mut self, now_ms: u64, moves: u64) {
        if moves != self.moves_seen {
            self.moves_seen = moves;
            self.reload(now_ms);
        }
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for group in names {
            let g = self.groups.get_mut(&group).expect("listed");
            let before = g.pending.len();
            g.pending.retain(|_, until| *until > now_ms);
            let pending_gone = before != g.pending.len();
            let expired: Vec<String> = g
                .members
                .iter()
                .filter(|(_, m)| {
                    m.join_ticket.is_none() && m.last_seen_ms + m.session_timeout_ms <= now_ms
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                self.counters.expired += 1;
                self.remove_member(&group, &id, now_ms);
            }
            if pending_gone {
                self.try_complete_join(&group, now_ms);
            }
            let g = &self.groups[&group];
            if g.state == ClassicState::PreparingRebalance && g.join_deadline_ms <= now_ms {
                self.complete_join(&group, now_ms);
            }
        }
    }

    /// A new coordinator: parked requests answered NOT_COORDINATOR, groups as persisted.
    pub(super) fn reload(&mut self, now_ms: u64) {
        for (t, (frame, _)) in std::mem::take(&mut self.parked) {
            let bytes = if frame.api == kafka_core::protocol::ApiKey::JoinGroup {
                answer(&frame, &join_error(KafkaCode::NOT_COORDINATOR, ""))
            } else {
                answer(&frame, &sync_error(KafkaCode::NOT_COORDINATOR))
            };
            self.ready.push((t, bytes));
        }
        for g in self.groups.values_mut() {
            self.counters.reloads += 1;
            let mut restored = match g.persisted.take() {
                Some(p) => *p,
                None => ClassicGroup::new(),
            };
            for m in restored.members.values_mut() {
                m.last_seen_ms = now_ms;
            }
            restored.persist();
            *g = restored;
        }
    }

    /// When the coordinator next has something to do (ms of virtual time).
    pub fn next_due_ms(&self) -> Option<u64> {
        self.groups
            .values()
            .flat_map(|g| {
                let sessions = g
                    .members
                    .values()
                    .filter(|m| m.join_ticket.is_none())
                    .map(|m| m.last_seen_ms + m.session_timeout_ms);
                let join =
                    (g.state == ClassicState::PreparingRebalance).then_some(g.join_deadline_ms);
                sessions.chain(join).chain(g.pending.values().copied())
            })
            .min()
    }
}
