//! Delivery on the virtual clock: connects completing, requests reaching brokers (which
//! answer, with the network faults, throttling and corruption applied) and answers and
//! resets reaching clients.

use std::collections::VecDeque;
use std::time::Duration;

use kafka_core::client::ConnId;
use kafka_core::protocol::ApiKey;

use super::super::corrupt::corrupt;
use super::super::throttle::set_throttle;
use super::super::wire::{take_frames, Frame};
use super::{ToClient, World};

impl World {
    /// The broker side drops connection `k`: the client hears a reset after a latency.
    pub(super) fn reset_from_broker(&mut self, k: (usize, u64)) {
        let node = self.conns.get(&k).map_or(-1, |c| c.node);
        let lat = self.latency_to(node, 0);
        let now = self.now;
        if let Some(c) = self.conns.get_mut(&k) {
            c.dead = true;
            c.to_broker.clear();
            let at = c.to_client.back().map_or(now, |b| b.0).max(now + lat);
            c.to_client.push_back((at, ToClient::Reset));
        }
    }

    pub(super) fn faulty(&self, api: ApiKey) -> bool {
        self.faults_on
            && api != ApiKey::ApiVersions
            && self.faults.apis.as_ref().is_none_or(|a| a.contains(&api))
    }

    /// Makes everything due now happen: connects complete, bytes reach brokers (which
    /// answer), answers and resets reach clients.
    pub(super) fn deliver(&mut self) {
        let keys: Vec<(usize, u64)> = self.conns.keys().copied().collect();
        for k in keys {
            self.deliver_connect(k);
            self.deliver_to_broker(k);
            self.deliver_to_client(k);
        }
    }

    pub(super) fn deliver_connect(&mut self, k: (usize, u64)) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some((at, up)) = c.opening else {
            return;
        };
        if at > self.now {
            return;
        }
        let still_up = self.cluster.broker(c.node).is_some_and(|b| b.up);
        if up && still_up {
            c.opening = None;
            self.net.connects += 1;
            self.mix(6, k.1, 1);
            self.clients[k.0].handle_connected(self.now, ConnId(k.1));
        } else {
            self.conns.remove(&k);
            self.net.refused += 1;
            self.mix(6, k.1, 0);
            self.clients[k.0].handle_closed(
                self.now,
                ConnId(k.1),
                "connection refused (simulated)",
            );
        }
    }

    pub(super) fn deliver_to_broker(&mut self, k: (usize, u64)) {
        loop {
            let Some(c) = self.conns.get_mut(&k) else {
                return;
            };
            if c.dead || c.parked.is_some() || c.muted_until.is_some_and(|m| m > self.now) {
                return;
            }
            let node = c.node;
            let frames: VecDeque<Frame> = if !c.held.is_empty() {
                std::mem::take(&mut c.held)
            } else {
                if c.to_broker.front().is_none_or(|(t, _)| *t > self.now) {
                    return;
                }
                let (_, bytes) = c.to_broker.pop_front().expect("checked");
                if self.half_open(node) {
                    // The broker's host is unreachable: the bytes vanish, nothing is reset.
                    self.link_counters.requests_vanished += 1;
                    continue;
                }
                let c = self.conns.get_mut(&k).expect("still open");
                c.broker_buf.extend_from_slice(&bytes);
                match take_frames(&mut c.broker_buf) {
                    Ok(f) => f.into(),
                    Err(bad) => panic!("seed {}: the client wrote a bad frame: {bad:?}", self.seed),
                }
            };
            let second = (self.now - self.origin).as_secs();
            let mut frames = frames;
            while let Some(frame) = frames.pop_front() {
                self.mix(7, k.1, frame.api as u64);
                let c = self.conns.get_mut(&k).expect("still open");
                c.window = match c.window {
                    (s, n) if s == second => (s, n + 1),
                    _ => (second, 1),
                };
                if c.window.1 > self.net.peak_rate.0 {
                    self.net.peak_rate = (c.window.1, frame.api.name());
                }
                let faulty = self.faulty(frame.api);
                if faulty && self.rng.chance(self.faults.reset_before) {
                    self.net.requests_dropped += 1;
                    self.reset_from_broker(k);
                    return;
                }
                let answered = self.cluster.handle(node, &frame);
                if let Some(ticket) = answered.as_ref().and_then(|a| a.parked) {
                    self.park(k, ticket, frame.api, frames);
                    self.deliver_ready();
                    return;
                }
                self.deliver_ready();
                let Some(mut answer) = answered else {
                    continue;
                };
                let mut throttle = 0;
                if self.faults_on
                    && self.throttling.applies(frame.api)
                    && self.rng.chance(self.throttling.chance)
                {
                    let (lo, hi) = self.throttling.ms;
                    let ms = lo + self.rng.below(hi - lo + 1);
                    if set_throttle(&mut answer.bytes, frame.api, frame.version, ms as i32) {
                        throttle = ms;
                        self.net.throttled += 1;
                        *self.net.throttled_apis.entry(frame.api.name()).or_default() += 1;
                    }
                }
                if faulty && self.rng.chance(self.faults.lose_answer) {
                    self.net.answers_lost += 1;
                    self.reset_from_broker(k);
                    return;
                }
                if faulty
                    && self.corruption.per_mille > 0
                    && self.rng.chance(self.corruption.per_mille)
                {
                    let (api, version) = (frame.api, frame.version);
                    corrupt(
                        &mut self.rng,
                        api,
                        version,
                        &mut answer.bytes,
                        &mut self.corrupted,
                    );
                }
                let mut hold = Duration::from_millis(answer.hold_ms);
                if faulty && self.rng.chance(self.faults.stall) {
                    self.net.stalls += 1;
                    *self.net.stalled_apis.entry(frame.api.name()).or_default() += 1;
                    hold += Duration::from_millis(self.faults.stall_ms);
                }
                let lat = self.latency_to(node, answer.bytes.len());
                let now = self.now;
                let c = self.conns.get_mut(&k).expect("still open");
                let at = c
                    .to_client
                    .back()
                    .map_or(now, |b| b.0)
                    .max(now + hold + lat);
                c.to_client
                    .push_back((at, ToClient::Bytes(answer.bytes, throttle)));
                if throttle > 0 {
                    // Kafka mutes the channel from sending the answer until the throttle ends.
                    let until = now + hold + Duration::from_millis(throttle);
                    c.muted_until = Some(c.muted_until.map_or(until, |m| m.max(until)));
                }
            }
        }
    }

    pub(super) fn deliver_to_client(&mut self, k: (usize, u64)) {
        loop {
            let Some(c) = self.conns.get_mut(&k) else {
                return;
            };
            if c.to_client.front().is_none_or(|(t, _)| *t > self.now) {
                return;
            }
            let (_, what) = c.to_client.pop_front().expect("checked");
            let node = c.node;
            if self.half_open(node) {
                // Lost on the way; a reset from the broker side is lost as well.
                self.link_counters.answers_vanished += 1;
                continue;
            }
            match what {
                ToClient::Reset => {
                    self.conns.remove(&k);
                    self.mix(8, k.1, 0);
                    self.clients[k.0].handle_closed(
                        self.now,
                        ConnId(k.1),
                        "connection reset by the simulated broker",
                    );
                    return;
                }
                ToClient::Bytes(bytes, throttle) => {
                    self.mix(9, k.1, bytes.len() as u64);
                    // Delivered in up to three pieces cut at random points, as TCP may.
                    let mut rest: &[u8] = &bytes;
                    for _ in 0..2 {
                        if rest.len() < 2 || !self.rng.chance(300) {
                            break;
                        }
                        let cut = 1 + self.rng.below(rest.len() as u64 - 1) as usize;
                        self.clients[k.0].handle_received(self.now, ConnId(k.1), &rest[..cut]);
                        rest = &rest[cut..];
                    }
                    if throttle > 0 {
                        // What the client wrote before the answer's last bytes arrived was
                        // not written under its throttle: send it on now.
                        self.transmit(k);
                    }
                    self.clients[k.0].handle_received(self.now, ConnId(k.1), rest);
                    if throttle > 0 {
                        let until = self.now + Duration::from_millis(throttle);
                        if let Some(c) = self.conns.get_mut(&k) {
                            c.throttled_until =
                                Some(c.throttled_until.map_or(until, |t| t.max(until)));
                        }
                    }
                }
            }
        }
    }
}
