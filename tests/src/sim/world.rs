//! The simulated world: clients (the production `kafka_core::client::Client`, with its
//! machines), the simulated cluster, and a simulated network between them, all on a
//! virtual clock that jumps to the earliest thing due. Every choice (latencies, which
//! request loses its answer, ...) comes from one seeded [`Rng`], so a seed replays
//! exactly; [`World::trace`] is a digest of everything that happened, for determinism
//! checks.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_core::client::Client;
use kafka_core::protocol::ApiKey;

use super::cluster::SimCluster;
use super::corrupt::{CorruptCounters, Corruption};
use super::links::{LinkCounters, LinkFaults};
use super::rng::Rng;
use super::throttle::Throttling;

mod clients;
mod delivery;
mod events;
mod latency;
mod net;
mod parking;

pub use events::ClusterEvent;
pub use net::{NetCounters, NetFaults};
use net::{SimConn, ToClient};

/// The world: clients, cluster, network, clock.
pub struct World {
    /// The seed it was made from (print it on failure).
    pub seed: u64,
    /// The clients, by index.
    pub clients: Vec<Client>,
    /// The cluster.
    pub cluster: SimCluster,
    /// Faults in force while [`faults_on`](Self::faults_on).
    pub faults: NetFaults,
    /// Whether faults fire (cleared to heal).
    pub faults_on: bool,
    /// One-way latency range in ms.
    pub latency_ms: (u64, u64),
    /// Network counters.
    pub net: NetCounters,
    /// Throttled answers (KIP-219), while [`faults_on`](Self::faults_on).
    pub throttling: Throttling,
    /// Degraded links by broker node id, while [`faults_on`](Self::faults_on).
    pub links: BTreeMap<i32, LinkFaults>,
    /// What the degraded links did.
    pub link_counters: LinkCounters,
    /// Answers corrupted on their way (F19), while [`faults_on`](Self::faults_on).
    pub corruption: Corruption,
    /// What [`corruption`](Self::corruption) damaged.
    pub corrupted: CorruptCounters,
    rng: Rng,
    now: Instant,
    origin: Instant,
    conns: BTreeMap<(usize, u64), SimConn>,
    schedule: BTreeMap<(Instant, u64), ClusterEvent>,
    scheduled: u64,
    trace: u64,
    events: u64,
    spins: u64,
    /// Every traced event `(kind, a, b, nanoseconds)`, kept when set to `Some` (the
    /// determinism test diffs two of them).
    pub log: Option<Vec<(u64, u64, u64, u64)>>,
    /// Clients stopped by [`World::kill_client`]: never driven again.
    killed: BTreeSet<usize>,
    /// Records deleted by scheduled DeleteRecords, `(topic, partition, new log start)`,
    /// until taken.
    deletions: Vec<(String, i32, i64)>,
    /// Values of records cut off by `LeaderLosesBatches`, until taken.
    lost_values: Vec<Vec<u8>>,
    /// Parked requests by ticket: their connection and API (`world/parking.rs`).
    parked: BTreeMap<u64, ((usize, u64), ApiKey)>,
}

impl World {
    /// A world from `seed` with a cluster of `brokers` brokers and no clients.
    pub fn new(seed: u64, brokers: usize) -> World {
        #[allow(clippy::disallowed_methods)]
        let origin = Instant::now(); // the virtual clock's origin; time then moves by hand
        let mut cluster = SimCluster::new(brokers);
        cluster.txn.reseed(seed);
        cluster.classic.reseed(seed);
        World {
            seed,
            clients: Vec::new(),
            cluster,
            faults: NetFaults::default(),
            faults_on: false,
            latency_ms: (0, 3),
            net: NetCounters::default(),
            throttling: Throttling::default(),
            links: BTreeMap::new(),
            link_counters: LinkCounters::default(),
            corruption: Corruption::default(),
            corrupted: CorruptCounters::default(),
            rng: Rng::new(seed),
            now: origin,
            origin,
            conns: BTreeMap::new(),
            schedule: BTreeMap::new(),
            scheduled: 0,
            trace: 0xcbf2_9ce4_8422_2325,
            events: 0,
            spins: 0,
            log: None,
            killed: BTreeSet::new(),
            deletions: Vec::new(),
            lost_values: Vec::new(),
            parked: BTreeMap::new(),
        }
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.origin
    }

    /// The world's random generator (scenarios draw their workload from it too).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// A digest of every event so far and their count: equal for equal seeds.
    pub fn trace(&self) -> (u64, u64) {
        (self.trace, self.events)
    }

    /// The DeleteRecords done since the last call: `(topic, partition, new log start)`.
    pub fn take_deletions(&mut self) -> Vec<(String, i32, i64)> {
        std::mem::take(&mut self.deletions)
    }

    /// The values of records cut off by `LeaderLosesBatches` since the last call.
    pub fn take_lost_values(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.lost_values)
    }

    /// Whether client `ci` was killed.
    pub fn is_killed(&self, ci: usize) -> bool {
        self.killed.contains(&ci)
    }

    /// Runs for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.step(end) {}
        self.now = self.now.max(end);
    }

    /// Runs until `done` holds (checked after every step) or `limit` of virtual time
    /// passes; whether it held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut World) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            if done(self) {
                return true;
            }
            if !self.step(end) {
                self.now = self.now.max(end);
                return done(self);
            }
        }
    }

    fn mix(&mut self, kind: u64, a: u64, b: u64) {
        let t = (self.now - self.origin).as_nanos() as u64;
        if let Some(log) = &mut self.log {
            log.push((kind, a, b, t));
        }
        for v in [kind, a, b, t] {
            for byte in v.to_le_bytes() {
                self.trace ^= u64::from(byte);
                self.trace = self.trace.wrapping_mul(0x0100_0000_01b3);
            }
        }
        self.events += 1;
    }

    /// One step: let the clients act, then move the clock to the next thing due (not
    /// past `end`) and make it happen. False once nothing is due before `end`.
    pub fn step(&mut self, end: Instant) -> bool {
        self.flush_clients();
        let Some(next) = self.next_due() else {
            return false;
        };
        if next > end {
            return false;
        }
        if next > self.now {
            self.now = next;
            self.spins = 0;
        } else {
            self.spins += 1;
            assert!(
                self.spins < 100_000,
                "seed {}: busy loop: 100,000 steps at {:?} without the clock moving (timers {:?})",
                self.seed,
                self.elapsed(),
                self.clients
                    .iter()
                    .map(|c| c
                        .poll_timeout()
                        .map(|t| t.saturating_duration_since(self.origin)))
                    .collect::<Vec<_>>()
            );
        }
        self.fire_schedule();
        self.cluster.advance(self.now - self.origin);
        self.deliver_ready();
        self.deliver();
        for ci in 0..self.clients.len() {
            if self.killed.contains(&ci) {
                continue;
            }
            if self.clients[ci]
                .poll_timeout()
                .is_some_and(|t| t <= self.now)
            {
                self.clients[ci].handle_timeout(self.now);
                self.mix(1, ci as u64, 0);
            }
        }
        true
    }

    fn next_due(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut consider = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        for (ci, c) in self.clients.iter().enumerate() {
            if self.killed.contains(&ci) {
                continue;
            }
            if let Some(t) = c.poll_timeout() {
                consider(t);
            }
        }
        for conn in self.conns.values() {
            if let Some((t, _)) = conn.opening {
                consider(t);
            }
            if conn.parked.is_none() && !conn.dead {
                let front = conn.to_broker.front().map(|(t, _)| *t);
                let held = (!conn.held.is_empty()).then_some(self.now);
                if let Some(t) = held.or(front) {
                    consider(conn.muted_until.map_or(t, |m| m.max(t)));
                }
            }
            if let Some((t, _)) = conn.to_client.front() {
                consider(*t);
            }
        }
        if let Some(((t, _), _)) = self.schedule.first_key_value() {
            consider(*t);
        }
        if let Some(d) = self.cluster.next_due() {
            consider(self.origin + d);
        }
        next
    }
}
