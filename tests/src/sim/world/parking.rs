//! Requests the cluster parks (a classic JoinGroup waiting for the join phase's end, a
//! SyncGroup waiting for the leader's): the connection reads nothing more until the
//! answer comes (Kafka mutes a channel with a request in flight); answers the cluster
//! makes due are sent on their connections, lost like others while faults are on.

use std::collections::VecDeque;

use kafka_core::protocol::ApiKey;

use super::super::wire::Frame;
use super::World;

impl World {
    /// Parks connection `k` on `ticket`; `rest` are the requests read behind it.
    pub(super) fn park(
        &mut self,
        k: (usize, u64),
        ticket: u64,
        api: ApiKey,
        rest: VecDeque<Frame>,
    ) {
        self.mix(11, k.1, ticket);
        self.parked.insert(ticket, (k, api));
        if let Some(c) = self.conns.get_mut(&k) {
            c.parked = Some(ticket);
            c.held = rest;
        }
    }

    /// Sends every parked request's answer the cluster made due (a connection gone
    /// since drops it).
    pub(super) fn deliver_ready(&mut self) {
        for (ticket, bytes) in self.cluster.classic.take_ready() {
            let Some((k, api)) = self.parked.remove(&ticket) else {
                continue;
            };
            let Some(c) = self.conns.get_mut(&k) else {
                continue;
            };
            if c.parked != Some(ticket) || c.dead {
                continue;
            }
            c.parked = None;
            let node = c.node;
            self.mix(12, k.1, ticket);
            if self.faulty(api) && self.rng.chance(self.faults.lose_answer) {
                self.net.answers_lost += 1;
                self.reset_from_broker(k);
                continue;
            }
            let lat = self.latency_to(node, bytes.len());
            let now = self.now;
            let c = self.conns.get_mut(&k).expect("checked");
            let at = c.to_client.back().map_or(now, |b| b.0).max(now + lat);
            c.to_client
                .push_back((at, super::ToClient::Bytes(bytes, 0)));
        }
    }
}
