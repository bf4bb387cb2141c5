//! The world of the client-level targets: one [`Client`] with its sockets played by a
//! scripted cluster of brokers `b1..b3` (see [`crate::answers`]). Network actions come
//! from the input (answers whole, held back or in chunks, lost, out of order, raw;
//! connects accepted, refused or left hanging until the adapter's setup timeout;
//! closes; time jumps); the target adds its machine's commands. After every step the
//! drain runs as an adapter's would and the generic invariants are checked.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use kafka_core::client::{Client, ConnId, Event, IoCommand};
use kafka_core::config::ClientConfig;
use kafka_core::conn::SocketError;
use kafka_core::protocol::messages::produce::ProduceRequest;
use kafka_core::protocol::ApiKey;

use crate::answers::{answer, Style};
use crate::input::Input;
use crate::wire::{body_of, throttle_of, Inbound, Seen};

/// Network opcodes; targets number their own from [`net_op::COUNT`].
pub mod net_op {
    /// Answer the oldest request on a socket, delivered whole.
    pub const ANSWER: u8 = 0;
    /// Answer the oldest request on a socket, held back.
    pub const ANSWER_HELD: u8 = 1;
    /// Deliver a chunk of a socket's held-back bytes.
    pub const DELIVER: u8 = 2;
    /// Move the clock.
    pub const TIME: u8 = 3;
    /// A hanging connect completes (or is refused).
    pub const CONNECT: u8 = 4;
    /// A socket closes.
    pub const CLOSE: u8 = 5;
    /// The oldest answer on a socket is lost.
    pub const LOSE: u8 = 6;
    /// Raw bytes on a socket.
    pub const RAW: u8 = 7;
    /// Answer any request on a socket (out of order).
    pub const ANSWER_ANY: u8 = 8;
    /// How many network opcodes there are.
    pub const COUNT: u8 = 9;
}

/// Settings every client-level target starts from: short timeouts so deadlines are
/// reached in a few jumps.
pub const BASE_SETTINGS: &[(&str, &str)] = &[
    ("bootstrap.servers", "b1:9092,b2:9092"),
    ("request.timeout.ms", "1000"),
    ("socket.connection.setup.timeout.ms", "500"),
    ("socket.connection.setup.timeout.max.ms", "1000"),
    ("retry.backoff.ms", "20"),
    ("retry.backoff.max.ms", "100"),
    ("reconnect.backoff.ms", "20"),
    ("reconnect.backoff.max.ms", "200"),
    ("metadata.max.age.ms", "3000"),
    ("connections.max.idle.ms", "20000"),
    ("retries", "2"),
    ("default.api.timeout.ms", "4000"),
];

/// The longest one request attempt can take without a throttle: waiting for a route
/// (a request timeout), the adapter's connect and the connection's own setup (the max
/// setup timeout each, jitter included), the request timeout, the retry and reconnect
/// backoffs.
pub const ATTEMPT_BOUND: Duration = Duration::from_millis(1000 + 1200 * 2 + 1000 + 120 + 240);

enum Phase {
    Connecting { deadline: Instant },
    Open,
}

struct Sock {
    phase: Phase,
    inbound: Inbound,
    waiting: VecDeque<Seen>,
    /// APIs of requests whose answer was lost (they hold their in-flight slot).
    lost: Vec<ApiKey>,
    held: Vec<u8>,
}

/// The client and its scripted cluster.
pub struct Net {
    /// The client under test.
    pub client: Client,
    /// The virtual clock's origin.
    pub origin: Instant,
    /// Now.
    pub now: Instant,
    socks: BTreeMap<u64, Sock>,
    /// The latest instant a throttle delivered to the client may delay a request to.
    pub throttled_until: Instant,
    /// The peer answers nothing and refuses connects (the final phase).
    pub silent: bool,
    max_in_flight: usize,
    /// Events for the target, in order.
    pub events: VecDeque<Event>,
}

impl Net {
    /// A client made from [`BASE_SETTINGS`] and `extra` (later keys win).
    pub fn new(extra: &[(&str, String)]) -> (Net, ClientConfig) {
        let mut pairs: Vec<(&str, String)> = BASE_SETTINGS
            .iter()
            .map(|(k, v)| (*k, v.to_string()))
            .collect();
        pairs.extend(extra.iter().cloned());
        let config = ClientConfig::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
            .expect("fuzz client settings");
        let max_in_flight = config.common().max_in_flight_requests_per_connection.max(1) as usize;
        let client = Client::new(config.clone(), [9; 32]).expect("client");
        let origin = Instant::now();
        (
            Net {
                client,
                origin,
                now: origin,
                socks: BTreeMap::new(),
                throttled_until: origin,
                silent: false,
                max_in_flight,
                events: VecDeque::new(),
            },
            config,
        )
    }

    /// A socket chosen by the input among those `fit` accepts.
    fn pick_where(&self, input: &mut Input, fit: impl Fn(&Sock) -> bool) -> Option<u64> {
        let ids: Vec<u64> = self
            .socks
            .iter()
            .filter(|(_, s)| fit(s))
            .map(|(id, _)| *id)
            .collect();
        (!ids.is_empty()).then(|| ids[input.below(ids.len())])
    }

    /// One network action.
    pub fn step(&mut self, code: u8, input: &mut Input) {
        self.trace(&format!("net action {code}"));
        match code {
            net_op::ANSWER | net_op::ANSWER_HELD | net_op::ANSWER_ANY => {
                let Some(id) = self.pick_where(input, |s| !s.waiting.is_empty()) else {
                    return;
                };
                let sock = self.socks.get_mut(&id).expect("picked");
                let at = if code == net_op::ANSWER_ANY {
                    input.below(sock.waiting.len())
                } else {
                    0
                };
                let Some(to) = sock.waiting.remove(at) else {
                    return;
                };
                let style = Style::pick(input);
                let bytes = answer(&to, input, style);
                if let Some(ms) = body_of(&bytes, to.api, to.version)
                    .and_then(|b| throttle_of(to.api, to.version, b))
                    .filter(|&ms| ms > 0)
                {
                    let until = self.now + Duration::from_millis(ms as u64);
                    self.throttled_until = self.throttled_until.max(until);
                }
                sock.held.extend_from_slice(&bytes);
                if code != net_op::ANSWER_HELD {
                    let all = std::mem::take(&mut sock.held);
                    self.client.handle_received(self.now, ConnId(id), &all);
                }
            }
            net_op::DELIVER => {
                let Some(id) = self.pick_where(input, |s| !s.held.is_empty()) else {
                    return;
                };
                let sock = self.socks.get_mut(&id).expect("picked");
                let n = input.below(sock.held.len() + 1);
                let chunk: Vec<u8> = sock.held.drain(..n).collect();
                self.client.handle_received(self.now, ConnId(id), &chunk);
            }
            net_op::TIME => {
                let jump = match input.u8() % 4 {
                    0 => Duration::from_millis(u64::from(input.u8())),
                    1 => Duration::from_millis(u64::from(input.u16() % 8192)),
                    _ => self
                        .next_due()
                        .map_or(Duration::ZERO, |t| t.saturating_duration_since(self.now)),
                };
                self.now += jump;
                self.fire();
            }
            net_op::CONNECT => {
                let hanging: Vec<u64> = self
                    .socks
                    .iter()
                    .filter(|(_, s)| matches!(s.phase, Phase::Connecting { .. }))
                    .map(|(id, _)| *id)
                    .collect();
                if hanging.is_empty() {
                    return;
                }
                let id = hanging[input.below(hanging.len())];
                self.connect(id, !input.one_in(4));
            }
            net_op::CLOSE => {
                if let Some(id) = self.pick_where(input, |_| true) {
                    let cause = if input.one_in(2) {
                        SocketError::Reset
                    } else {
                        SocketError::ClosedByPeer
                    };
                    self.socks.remove(&id);
                    self.client.handle_closed(self.now, ConnId(id), cause);
                }
            }
            net_op::LOSE => {
                if let Some(id) = self.pick_where(input, |s| !s.waiting.is_empty()) {
                    let sock = self.socks.get_mut(&id).expect("picked");
                    if let Some(seen) = sock.waiting.pop_front() {
                        sock.lost.push(seen.api);
                    }
                }
            }
            _ => {
                if let Some(id) = self.pick_where(input, |s| matches!(s.phase, Phase::Open)) {
                    let raw = input.bytes(32).to_vec();
                    self.client.handle_received(self.now, ConnId(id), &raw);
                }
            }
        }
    }

    fn connect(&mut self, id: u64, ok: bool) {
        if ok {
            if let Some(s) = self.socks.get_mut(&id) {
                s.phase = Phase::Open;
            }
            self.client.handle_connected(self.now, ConnId(id));
        } else {
            self.socks.remove(&id);
            self.client
                .handle_closed(self.now, ConnId(id), SocketError::Refused);
        }
    }

    /// The next instant something is due: the client's timer or a hanging connect's
    /// setup timeout.
    pub fn next_due(&self) -> Option<Instant> {
        let connects = self.socks.values().filter_map(|s| match s.phase {
            Phase::Connecting { deadline } => Some(deadline),
            Phase::Open => None,
        });
        connects.chain(self.client.poll_timeout()).min()
    }

    /// Fires what is due at `now` (hanging connects past their setup timeout fail, as
    /// an adapter enforces it); afterwards the client's next timer is in the future.
    pub fn fire(&mut self) {
        let timed_out: Vec<u64> = self
            .socks
            .iter()
            .filter(
                |(_, s)| matches!(s.phase, Phase::Connecting { deadline } if deadline <= self.now),
            )
            .map(|(id, _)| *id)
            .collect();
        for id in timed_out {
            self.socks.remove(&id);
            self.client
                .handle_closed(self.now, ConnId(id), SocketError::ConnectTimedOut);
        }
        for _ in 0..50 {
            if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
                self.client.handle_timeout(self.now);
                self.drain(&mut Input::new(&[]));
            }
        }
        if let Some(t) = self.client.poll_timeout() {
            assert!(
                t > self.now,
                "poll_timeout at {:?} not after now {:?} after 50 handle_timeout calls: busy loop ({:?})",
                t.saturating_duration_since(self.origin),
                self.now - self.origin,
                self.client
            );
        }
    }

    /// The adapter's drain: socket commands, writes, events; then the invariants. New
    /// connects are accepted at once, refused or left hanging as the input says (refused
    /// while silent).
    pub fn drain(&mut self, input: &mut Input) {
        for _ in 0..64 {
            let mut busy = false;
            while let Some(cmd) = self.client.poll_io() {
                busy = true;
                match cmd {
                    IoCommand::Connect {
                        conn,
                        setup_timeout,
                        ..
                    } => {
                        // Any address: raw and corrupted answers advertise brokers anywhere.
                        assert!(
                            !self.socks.contains_key(&conn.0),
                            "connection id {} reused",
                            conn.0
                        );
                        self.socks.insert(
                            conn.0,
                            Sock {
                                phase: Phase::Connecting {
                                    deadline: self.now + setup_timeout,
                                },
                                inbound: Inbound::default(),
                                waiting: VecDeque::new(),
                                lost: Vec::new(),
                                held: Vec::new(),
                            },
                        );
                        if self.silent {
                            self.connect(conn.0, false);
                        } else {
                            match input.u8() {
                                0..=191 => self.connect(conn.0, true),
                                192..=223 => self.connect(conn.0, false),
                                _ => {}
                            }
                        }
                    }
                    IoCommand::Close { conn } => {
                        self.socks.remove(&conn.0);
                    }
                    other => panic!("unknown io command {other:?}"),
                }
            }
            let ids: Vec<u64> = self.client.connections().map(|c| c.0).collect();
            for id in ids {
                let mut out = Vec::new();
                self.client.poll_transmit(self.now, ConnId(id), &mut out);
                if out.is_empty() {
                    continue;
                }
                busy = true;
                let sock = self
                    .socks
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("bytes written to connection {id}, not open"));
                assert!(
                    matches!(sock.phase, Phase::Open),
                    "bytes written to connection {id} before it connected"
                );
                for seen in sock.inbound.push(&out) {
                    let no_response = seen.api == ApiKey::Produce
                        && seen.decode::<ProduceRequest>().is_some_and(|p| p.acks == 0);
                    if !no_response && !self.silent {
                        sock.waiting.push_back(seen);
                    } else if !no_response {
                        sock.lost.push(seen.api);
                    }
                }
            }
            while let Some(e) = self.client.poll_event() {
                self.events.push_back(e);
            }
            if !busy {
                break;
            }
        }
        self.check();
    }

    /// The generic invariants: the in-flight window per socket, and no timer or
    /// request leak (every armed timer belongs to a socket, a request, a machine or the
    /// metadata refresh).
    fn check(&self) {
        for (id, s) in &self.socks {
            let in_flight = s.waiting.len() + s.lost.len();
            assert!(
                in_flight <= self.max_in_flight + 1 + usize::from(!s.held.is_empty()),
                "connection {id}: {in_flight} requests in flight, max.in.flight {}",
                self.max_in_flight
            );
        }
        let armed = self.client.timers_armed();
        let owners =
            self.socks.len() + self.client.requests_pending() + self.client.ops_running() + 1;
        assert!(
            armed <= owners,
            "{armed} timers armed for {owners} possible owners: {:?}",
            self.client
        );
    }

    /// Requests (unanswered or lost) of `api` on each open socket.
    pub fn in_flight_of(&self, api: ApiKey) -> Vec<usize> {
        self.socks
            .values()
            .map(|s| {
                s.waiting.iter().filter(|r| r.api == api).count()
                    + s.lost.iter().filter(|a| **a == api).count()
            })
            .collect()
    }

    /// With `FUZZ_TRACE` set, prints what happens (for replaying a finding).
    pub fn trace(&self, what: &str) {
        if std::env::var_os("FUZZ_TRACE").is_some() {
            let socks: Vec<String> = self
                .socks
                .iter()
                .map(|(id, s)| {
                    let phase = match s.phase {
                        Phase::Connecting { .. } => "connecting",
                        Phase::Open => "open",
                    };
                    let waiting: Vec<ApiKey> = s.waiting.iter().map(|r| r.api).collect();
                    format!("{id} {phase} waiting {waiting:?} lost {:?}", s.lost)
                })
                .collect();
            eprintln!(
                "{:?} {what}: {socks:?} events {:?}",
                self.now - self.origin,
                self.events
            );
        }
    }

    /// Enters the final phase: nothing is answered any more (answers held back are
    /// dropped), new connects are refused.
    pub fn go_silent(&mut self) {
        self.silent = true;
        for s in self.socks.values_mut() {
            let apis: Vec<ApiKey> = s.waiting.drain(..).map(|r| r.api).collect();
            s.lost.extend(apis);
            s.held.clear();
        }
    }

    /// One jump of the final phase: to the next due instant, firing it. False when
    /// nothing is due.
    pub fn jump(&mut self) -> bool {
        let Some(t) = self.next_due() else {
            return false;
        };
        self.now = self.now.max(t);
        self.fire();
        self.drain(&mut Input::new(&[]));
        true
    }

    /// The socket ids the client has open or opening (for the target's checks).
    pub fn sockets(&self) -> usize {
        self.socks.len()
    }
}
