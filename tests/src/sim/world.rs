//! The simulated world: clients (the production `kafka_core::client::Client`, with its
//! machines), the simulated cluster, and a simulated network between them, all on a
//! virtual clock that jumps to the earliest thing due. Every choice (latencies, which
//! request loses its answer, ...) comes from one seeded [`Rng`], so a seed replays
//! exactly; [`World::trace`] is a digest of everything that happened, for determinism
//! checks.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use kafka_core::client::{Client, ConnId, IoCommand};
use kafka_core::config::ClientConfig;
use kafka_core::protocol::ApiKey;

use super::cluster::SimCluster;
use super::corrupt::{corrupt, CorruptCounters, Corruption};
use super::links::{LinkCounters, LinkFaults};
use super::rng::Rng;
use super::throttle::{set_throttle, Throttling};
use super::wire::{take_frames, Frame};

mod parking;

/// Network faults, active while [`World::faults_on`] is set.
#[derive(Debug, Clone)]
pub struct NetFaults {
    /// Per mille of requests applied by the broker whose answer is lost: the connection
    /// resets before it arrives (a lost acknowledgement).
    pub lose_answer: u32,
    /// Per mille of requests never applied: the connection resets as the broker reads.
    pub reset_before: u32,
    /// Per mille of answers held for [`stall_ms`](Self::stall_ms) (a slow broker: the
    /// client's request timeout fires first).
    pub stall: u32,
    /// How long a stalled answer is held.
    pub stall_ms: u64,
    /// The APIs the three faults above apply to (`None`: all but ApiVersions).
    pub apis: Option<Vec<ApiKey>>,
}

impl Default for NetFaults {
    fn default() -> Self {
        NetFaults {
            lose_answer: 0,
            reset_before: 0,
            stall: 0,
            stall_ms: 5_000,
            apis: None,
        }
    }
}

/// Something scheduled to happen to the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterEvent {
    /// A new leader (and leader epoch) for a partition.
    MoveLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
    },
    /// A broker stops: its connections reset, connecting to it is refused, its
    /// partitions get new leaders.
    Kill(i32),
    /// A stopped broker starts again.
    Restart(i32),
    /// A broker evicts a fetch session.
    EvictSession(i32),
    /// A topic goes missing from the cluster, its log kept (`topics.rs`).
    HideTopic(String),
    /// A hidden topic comes back.
    ShowTopic(String),
    /// A topic is deleted for good.
    DeleteTopic(String),
    /// An unclean election whose new leader lacks the last batches, with the producers'
    /// state rebuilt from what it kept (`lost_batches.rs`); the history must be told
    /// (`World::take_lost_values`).
    LeaderLosesBatches {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
        /// How many of the log's last batches it lacks.
        drop_batches: usize,
    },
    /// DeleteRecords up to a partition's end, its producers' state going with them
    /// (`forget.rs`); the history must be told (`World::take_deletions`).
    DeleteRecords {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// An unclean leader election: the new leader lacks the log's last batches (see
    /// [`SimCluster::unclean_election`](super::cluster::SimCluster::unclean_election)).
    UncleanElection {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
        /// How many of the log's last batches it lacks.
        drop_batches: usize,
    },
}

#[derive(Debug)]
enum ToClient {
    /// An answer, and the throttle (ms) it carries.
    Bytes(Vec<u8>, u64),
    Reset,
}

#[derive(Debug)]
struct SimConn {
    node: i32,
    /// When the connect attempt completes (`None` once open).
    opening: Option<(Instant, bool)>,
    to_broker: VecDeque<(Instant, Vec<u8>)>,
    broker_buf: Vec<u8>,
    to_client: VecDeque<(Instant, ToClient)>,
    /// The broker side reset it: whatever the client still writes is lost.
    dead: bool,
    /// The broker reads nothing more before this (KIP-219: muted after a throttled
    /// answer).
    muted_until: Option<Instant>,
    /// The client received a throttled answer: it must write nothing before this.
    throttled_until: Option<Instant>,
    /// Requests read in the current virtual second: `(second, count)`.
    window: (u64, u64),
    /// A request parked by the cluster (a classic JoinGroup or SyncGroup): nothing more
    /// is read until it is answered, as Kafka mutes a channel with a request in flight.
    parked: Option<u64>,
    /// Requests read behind the parked one, handled once it is answered.
    held: VecDeque<Frame>,
}

/// Counts of what the network did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// Connections opened.
    pub connects: u64,
    /// Connect attempts refused (broker down).
    pub refused: u64,
    /// Answers lost after the request was applied.
    pub answers_lost: u64,
    /// Requests dropped unread.
    pub requests_dropped: u64,
    /// Answers stalled.
    pub stalls: u64,
    /// Answers stalled, by API.
    pub stalled_apis: BTreeMap<&'static str, u64>,
    /// Connections reset by a broker stopping.
    pub kill_resets: u64,
    /// Connections the clients closed.
    pub client_closes: u64,
    /// Answers that carried a throttle (KIP-219).
    pub throttled: u64,
    /// Throttled answers by API.
    pub throttled_apis: BTreeMap<&'static str, u64>,
    /// Writes by a client to a connection it had been told was throttled.
    pub throttle_violations: u64,
    /// The most requests one connection carried in one virtual second, and their API
    /// (the last one counted).
    pub peak_rate: (u64, &'static str),
}

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
    killed: std::collections::BTreeSet<usize>,
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
            killed: std::collections::BTreeSet::new(),
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

    /// Adds a client made from `pairs` (bootstrap `b1:9092` unless given); its index.
    pub fn add_client(&mut self, pairs: &[(&str, &str)]) -> usize {
        let mut all = vec![("bootstrap.servers", "b1:9092")];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("scenario config");
        self.add_client_with(config)
    }

    /// Adds a client made from `config`; its index.
    pub fn add_client_with(&mut self, config: ClientConfig) -> usize {
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            chunk.copy_from_slice(&self.rng.next_u64().to_le_bytes());
        }
        let mut client = Client::new(config, seed).expect("client");
        client.handle_wall_clock(Duration::from_secs(1_700_000_000) + self.elapsed());
        self.clients.push(client);
        self.clients.len() - 1
    }

    /// Kills client `ci` as a process dies: it is never driven again (no timers, no
    /// reads, no writes) and its connections vanish (bytes in flight are lost). Its
    /// state stays readable for assertions.
    pub fn kill_client(&mut self, ci: usize) {
        self.killed.insert(ci);
        self.mix(10, ci as u64, 0);
        self.conns.retain(|k, _| k.0 != ci);
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

    /// Schedules `event` to happen `after` from now.
    pub fn schedule(&mut self, after: Duration, event: ClusterEvent) {
        self.scheduled += 1;
        self.schedule
            .insert((self.now + after, self.scheduled), event);
    }

    /// Schedules `count` leader moves, each of a random partition of `topic` (which has
    /// `partitions` partitions) to a random broker, at random instants in the next
    /// `within_ms` ms.
    pub fn schedule_leader_moves(
        &mut self,
        topic: &str,
        partitions: i32,
        count: usize,
        within_ms: u64,
    ) {
        let brokers = self.cluster.brokers.len() as u64;
        for _ in 0..count {
            let at = Duration::from_millis(5 + self.rng.below(within_ms));
            let partition = self.rng.below(partitions as u64) as i32;
            let to = 1 + self.rng.below(brokers) as i32;
            let event = ClusterEvent::MoveLeader {
                topic: topic.to_string(),
                partition,
                to,
            };
            self.schedule(at, event);
        }
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

    fn latency(&mut self) -> Duration {
        let (lo, hi) = self.latency_ms;
        self.rng.millis(lo, hi)
    }

    /// The degraded link to `node`, if any (while faults are on).
    fn link(&self, node: i32) -> Option<LinkFaults> {
        if !self.faults_on {
            return None;
        }
        self.links.get(&node).cloned()
    }

    /// A one-way latency to `node` for a message of `len` bytes (the bandwidth cap's
    /// transfer time included).
    fn latency_to(&mut self, node: i32, len: usize) -> Duration {
        match self.link(node) {
            Some(l) => {
                self.link_counters.slowed += 1;
                let base = match l.latency_ms {
                    Some((lo, hi)) => self.rng.millis(lo, hi),
                    None => self.latency(),
                };
                base + l.transfer(len)
            }
            None => self.latency(),
        }
    }

    fn half_open(&self, node: i32) -> bool {
        self.link(node).is_some_and(|l| l.half_open)
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

    /// Lets every client open and close sockets and write what it has.
    fn flush_clients(&mut self) {
        for ci in 0..self.clients.len() {
            if self.killed.contains(&ci) {
                continue;
            }
            while let Some(cmd) = self.clients[ci].poll_io() {
                match cmd {
                    IoCommand::Connect {
                        conn,
                        host,
                        setup_timeout,
                        ..
                    } => {
                        let node = self.cluster.node_of(&host);
                        let up = node
                            .and_then(|n| self.cluster.broker(n))
                            .is_some_and(|b| b.up);
                        let mut at = self.now + self.latency_to(node.unwrap_or(-1), 0) * 2;
                        let mut up = up;
                        if self.half_open(node.unwrap_or(-1)) {
                            // No answer to the SYN: the connect hangs until the setup
                            // timeout the adapter is given, then fails.
                            self.link_counters.connects_hung += 1;
                            at = self.now + setup_timeout;
                            up = false;
                        }
                        self.mix(2, conn.0, u64::from(up));
                        self.conns.insert(
                            (ci, conn.0),
                            SimConn {
                                node: node.unwrap_or(-1),
                                opening: Some((at, up)),
                                to_broker: VecDeque::new(),
                                broker_buf: Vec::new(),
                                to_client: VecDeque::new(),
                                dead: false,
                                muted_until: None,
                                throttled_until: None,
                                window: (0, 0),
                                parked: None,
                                held: VecDeque::new(),
                            },
                        );
                    }
                    IoCommand::Close { conn } => {
                        self.mix(3, conn.0, 0);
                        if self.conns.remove(&(ci, conn.0)).is_some() {
                            self.net.client_closes += 1;
                        }
                    }
                    _ => {}
                }
            }
            let open: Vec<u64> = self
                .conns
                .range((ci, 0)..(ci + 1, 0))
                .filter(|(_, c)| c.opening.is_none())
                .map(|(k, _)| k.1)
                .collect();
            for id in open {
                self.transmit((ci, id));
            }
            // Events are not the scenarios' business: they read the machines directly.
            while self.clients[ci].poll_event().is_some() {}
        }
    }

    /// Takes what client `k.0` wrote to connection `k.1` and sends it on its way.
    fn transmit(&mut self, k: (usize, u64)) {
        let (ci, id) = k;
        let mut out = Vec::new();
        self.clients[ci].poll_transmit(self.now, ConnId(id), &mut out);
        if out.is_empty() {
            return;
        }
        self.mix(4, id, out.len() as u64);
        let node = self.conns.get(&(ci, id)).map_or(-1, |c| c.node);
        let lat = self.latency_to(node, out.len());
        let now = self.now;
        let conn = self.conns.get_mut(&(ci, id)).expect("open conn");
        if conn.throttled_until.is_some_and(|t| t > now) {
            self.net.throttle_violations += 1;
        }
        if conn.dead {
            return; // the broker side is gone: the bytes are lost
        }
        let at = conn.to_broker.back().map_or(now, |b| b.0).max(now + lat);
        conn.to_broker.push_back((at, out));
    }

    fn fire_schedule(&mut self) {
        while let Some(entry) = self.schedule.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let event = entry.remove();
            self.mix(5, 0, 0);
            match event {
                ClusterEvent::MoveLeader {
                    topic,
                    partition,
                    to,
                } => {
                    self.cluster.move_leader(&topic, partition, to);
                }
                ClusterEvent::Kill(node) => {
                    self.cluster.kill(node);
                    let keys: Vec<(usize, u64)> = self
                        .conns
                        .iter()
                        .filter(|(_, c)| c.node == node && !c.dead)
                        .map(|(k, _)| *k)
                        .collect();
                    for k in keys {
                        self.net.kill_resets += 1;
                        self.reset_from_broker(k);
                    }
                }
                ClusterEvent::Restart(node) => self.cluster.restart(node),
                ClusterEvent::UncleanElection {
                    topic,
                    partition,
                    to,
                    drop_batches,
                } => {
                    self.cluster
                        .unclean_election(&topic, partition, to, drop_batches);
                }
                ClusterEvent::HideTopic(name) => {
                    self.cluster.hide_topic(&name);
                }
                ClusterEvent::ShowTopic(name) => {
                    self.cluster.show_topic(&name);
                }
                ClusterEvent::DeleteTopic(name) => {
                    self.cluster.delete_topic(&name);
                }
                ClusterEvent::LeaderLosesBatches {
                    topic,
                    partition,
                    to,
                    drop_batches,
                } => {
                    let values =
                        self.cluster
                            .lose_last_batches(&topic, partition, to, drop_batches);
                    self.lost_values.extend(values);
                }
                ClusterEvent::DeleteRecords { topic, partition } => {
                    if let Some(start) = self.cluster.delete_records(&topic, partition) {
                        self.deletions.push((topic, partition, start));
                    }
                }
                ClusterEvent::EvictSession(node) => {
                    if let Some(b) = self.cluster.brokers.iter_mut().find(|b| b.id == node) {
                        b.sessions.evict_any();
                    }
                }
            }
        }
    }

    /// The broker side drops connection `k`: the client hears a reset after a latency.
    fn reset_from_broker(&mut self, k: (usize, u64)) {
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

    fn faulty(&self, api: ApiKey) -> bool {
        self.faults_on
            && api != ApiKey::ApiVersions
            && self.faults.apis.as_ref().is_none_or(|a| a.contains(&api))
    }

    /// Makes everything due now happen: connects complete, bytes reach brokers (which
    /// answer), answers and resets reach clients.
    fn deliver(&mut self) {
        let keys: Vec<(usize, u64)> = self.conns.keys().copied().collect();
        for k in keys {
            self.deliver_connect(k);
            self.deliver_to_broker(k);
            self.deliver_to_client(k);
        }
    }

    fn deliver_connect(&mut self, k: (usize, u64)) {
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

    fn deliver_to_broker(&mut self, k: (usize, u64)) {
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

    fn deliver_to_client(&mut self, k: (usize, u64)) {
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
