//! One broker's fetch session (KIP-227): the first Fetch (epoch 0) opens it with every
//! partition; later ones (epoch 1, 2, ...) carry only partitions whose fetch position or
//! size changed, and name the partitions to drop in `forgotten_topics_data`. A session
//! error, a connection loss, or a broker with a full session cache (session id 0) sends
//! the next Fetch full again.

use std::collections::HashMap;

/// What the broker's session holds for one partition: what was last sent for it (any
/// change sends the partition again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    pub(super) offset: i64,
    pub(super) max_bytes: i32,
    /// The leader epoch the consumer knows (KIP-320's `current_leader_epoch`).
    pub(super) leader_epoch: i32,
    /// The epoch of the record before `offset` (`last_fetched_epoch`, v12+), or -1.
    pub(super) last_fetched_epoch: i32,
}

/// The client side of one broker's fetch session.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// The broker's session id; 0: none (the next Fetch is full).
    pub(super) id: i32,
    /// The epoch of the next Fetch.
    pub(super) epoch: i32,
    /// Partitions (by consumer index) the broker's session holds.
    pub(super) held: HashMap<usize, Sent>,
    /// The broker answered without a session (its cache is full): stay sessionless.
    pub(super) sessionless: bool,
    /// Times this session had to start over.
    pub(super) resets: u64,
}

/// The partitions one Fetch names.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Partitions to send, with what to send.
    pub(super) send: Vec<(usize, Sent)>,
    /// Partitions the session holds but should drop.
    pub(super) forget: Vec<usize>,
    pub(super) session_id: i32,
    pub(super) epoch: i32,
}

impl Session {
    /// The Fetch to send for `wanted` (every partition this broker should fetch now).
    pub(super) fn plan(&self, wanted: &[(usize, Sent)]) -> Plan {
        if self.id == 0 {
            // Full: open a session (epoch 0), or stay sessionless (epoch -1).
            return Plan {
                send: wanted.to_vec(),
                forget: Vec::new(),
                session_id: 0,
                epoch: if self.sessionless { -1 } else { 0 },
            };
        }
        let mut send = Vec::new();
        for &(part, sent) in wanted {
            if self.held.get(&part) != Some(&sent) {
                send.push((part, sent));
            }
        }
        let forget = self
            .held
            .keys()
            .filter(|p| !wanted.iter().any(|(w, _)| w == *p))
            .copied()
            .collect();
        Plan {
            send,
            forget,
            session_id: self.id,
            epoch: self.epoch,
        }
    }

    /// The broker answered `plan` without a top-level error and with session `id`.
    pub(super) fn answered(&mut self, plan: &Plan, id: i32) {
        if id == 0 {
            // No session: a full fetch each time (epoch -1 from now on, as KIP-227 says
            // for a broker whose cache is full).
            self.id = 0;
            self.sessionless = true;
            self.held.clear();
            return;
        }
        if plan.session_id == 0 {
            self.held.clear();
        }
        self.id = id;
        self.epoch = next_epoch(plan.epoch);
        for p in &plan.forget {
            self.held.remove(p);
        }
        for &(p, sent) in &plan.send {
            self.held.insert(p, sent);
        }
    }

    /// The session is gone (an error, the connection): the next Fetch is full.
    pub(super) fn reset(&mut self) {
        if self.id != 0 {
            self.resets += 1;
            crate::trace::debug!(session = self.id, "fetch session reset");
        }
        self.id = 0;
        self.epoch = 0;
        self.held.clear();
    }
}

/// Epochs count up from 1 and wrap back to 1 (0 opens a session).
fn next_epoch(epoch: i32) -> i32 {
    if !(0..i32::MAX).contains(&epoch) {
        1
    } else {
        epoch + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(offset: i64) -> Sent {
        Sent {
            offset,
            max_bytes: 100,
            leader_epoch: 1,
            last_fetched_epoch: -1,
        }
    }

    #[test]
    fn full_then_incremental_then_forget() {
        let mut session = Session::default();
        let plan = session.plan(&[(0, s(0)), (1, s(0))]);
        assert_eq!((plan.session_id, plan.epoch, plan.send.len()), (0, 0, 2));
        session.answered(&plan, 77);
        // Partition 0 moved on; partition 1 did not: only 0 is sent.
        let plan = session.plan(&[(0, s(10)), (1, s(0))]);
        assert_eq!((plan.session_id, plan.epoch), (77, 1));
        assert_eq!(plan.send, vec![(0, s(10))]);
        assert!(plan.forget.is_empty());
        session.answered(&plan, 77);
        // Partition 1 paused: forgotten.
        let plan = session.plan(&[(0, s(10))]);
        assert!(plan.send.is_empty());
        assert_eq!(plan.forget, vec![1]);
        assert_eq!(plan.epoch, 2);
        session.answered(&plan, 77);
        assert_eq!(session.held.len(), 1);
        session.reset();
        let plan = session.plan(&[(0, s(10))]);
        assert_eq!((plan.session_id, plan.epoch, plan.send.len()), (0, 0, 1));
        assert_eq!(session.resets, 1);
    }

    #[test]
    fn a_full_session_cache_means_sessionless_fetches() {
        let mut session = Session::default();
        let plan = session.plan(&[(0, s(0))]);
        session.answered(&plan, 0);
        let plan = session.plan(&[(0, s(5))]);
        assert_eq!((plan.session_id, plan.epoch, plan.send.len()), (0, -1, 1));
    }

    #[test]
    fn epochs_wrap_to_one() {
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(0), 1);
    }
}
