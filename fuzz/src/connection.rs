//! `machine_connection`: one [`Connection`] against a scripted peer. The input is a
//! sequence of actions — answers (built, empty, raw or corrupted; whole, held back
//! or cut into chunks at any point), lost answers, answers out of order, time jumps,
//! new requests (pinned, shaped, without response), cancels, closes and violations —
//! with the invariants checked after every step, then a silent peer until every
//! request has ended.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::conn::sasl::{Mechanism, SaslCredentials};
use kafka_core::conn::{
    Auth, Completion, ConnConfig, ConnState, Connection, CredentialSource, Shape, SocketError,
    Token,
};
use kafka_core::protocol::messages::list_offsets::request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use kafka_core::protocol::messages::list_offsets::ListOffsetsRequest;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::messages::produce::ProduceRequest;
use kafka_core::protocol::ApiKey;

use crate::answers::{answer, Style};
use crate::input::{Input, STEP};
use crate::wire::{body_of, throttle_of, Inbound, Seen};

/// Action opcodes (the first byte of each step, modulo their count).
pub mod op {
    /// Answer the oldest request and deliver it whole.
    pub const ANSWER: u8 = 0;
    /// Answer the oldest request, held back for `DELIVER`.
    pub const ANSWER_HELD: u8 = 1;
    /// Deliver a chunk of the held-back bytes (cut anywhere).
    pub const DELIVER: u8 = 2;
    /// Move the clock.
    pub const TIME: u8 = 3;
    /// Submit a request.
    pub const SUBMIT: u8 = 4;
    /// Cancel a request.
    pub const CANCEL: u8 = 5;
    /// The socket closes.
    pub const CLOSE: u8 = 6;
    /// The owner reports a violation.
    pub const VIOLATION: u8 = 7;
    /// Raw bytes from the peer.
    pub const RAW: u8 = 8;
    /// The oldest request's answer is lost.
    pub const LOSE: u8 = 9;
    /// Answer some request out of order.
    pub const ANSWER_ANY: u8 = 10;
    /// How many opcodes there are.
    pub const COUNT: u8 = 11;
}

const REQUEST_TIMEOUT: Duration = Duration::from_millis(1000);
const SETUP_TIMEOUT: Duration = Duration::from_millis(2000);
const MAX_STEPS: usize = 4000;

struct Peer {
    inbound: Inbound,
    /// Requests written and not yet answered or lost, in order.
    waiting: VecDeque<Seen>,
    /// Requests whose answer was lost (they still hold their in-flight slot).
    lost: usize,
    /// Answer bytes held back, delivered in chunks.
    held: Vec<u8>,
}

struct Run<'a> {
    input: Input<'a>,
    origin: Instant,
    now: Instant,
    conn: Connection,
    peer: Peer,
    max_in_flight: usize,
    /// Every token submitted: `true` once completed.
    tokens: BTreeMap<u64, bool>,
    next_token: u64,
    /// Until when a throttle (applied by the owner or by the connection itself) may delay requests.
    throttled_until: Instant,
    failed: bool,
    responses: usize,
}

/// Runs one input; returns how many requests got a response (a seed's depth).
pub fn run(data: &[u8]) -> usize {
    let mut input = Input::new(data);
    let mut head = input.chunk(STEP);
    let origin = Instant::now();
    let max_in_flight = 1 + head.below(5);
    let cfg = ConnConfig {
        request_timeout: REQUEST_TIMEOUT,
        setup_timeout: SETUP_TIMEOUT,
        max_frame: 1 << 20,
        max_in_flight,
        idle_timeout: Duration::from_millis(5000),
        ..ConnConfig::default()
    };
    let auth = head.one_in(4).then(|| {
        Auth::new(
            Mechanism::Plain,
            CredentialSource::Static(SaslCredentials::UsernamePassword {
                username: "u".into(),
                password: "p".into(),
            }),
            [3; 32],
        )
    });
    let conn = Connection::new(origin, Arc::new(cfg), auth);
    let mut run = Run {
        input: Input::new(&[]),
        origin,
        now: origin,
        conn,
        peer: Peer {
            inbound: Inbound::default(),
            waiting: VecDeque::new(),
            lost: 0,
            held: Vec::new(),
        },
        max_in_flight,
        tokens: BTreeMap::new(),
        next_token: 1,
        throttled_until: origin,
        failed: false,
        responses: 0,
    };
    run.drain();
    let mut steps = 0;
    while !input.is_empty() && steps < MAX_STEPS {
        run.input = input.chunk(STEP);
        if std::env::var("FUZZ_TRACE").is_ok() {
            eprintln!(
                "{:?} waiting {:?}",
                run.conn,
                run.peer.waiting.iter().map(|s| s.api).collect::<Vec<_>>()
            );
        }
        run.step();
        run.drain();
        steps += 1;
    }
    run.silence();
    run.responses
}

impl Run<'_> {
    fn step(&mut self) {
        let code = self.input.u8() % op::COUNT;
        match code {
            op::ANSWER | op::ANSWER_HELD | op::ANSWER_ANY => {
                let at = if code == op::ANSWER_ANY {
                    self.input.below(self.peer.waiting.len())
                } else {
                    0
                };
                let Some(to) = self.peer.waiting.remove(at) else {
                    return;
                };
                let style = Style::pick(&mut self.input);
                let bytes = answer(&to, &mut self.input, style);
                self.peer.held.extend_from_slice(&bytes);
                if code != op::ANSWER_HELD {
                    let all = std::mem::take(&mut self.peer.held);
                    self.conn.handle_received(self.now, &all);
                }
            }
            op::DELIVER => {
                let n = self.input.below(self.peer.held.len() + 1);
                let chunk: Vec<u8> = self.peer.held.drain(..n).collect();
                self.conn.handle_received(self.now, &chunk);
            }
            op::TIME => self.advance(),
            op::SUBMIT => self.submit(),
            op::CANCEL => {
                let t = self.input.below(self.next_token as usize) as u64;
                if self.conn.cancel(Token(t)) {
                    let done = self.tokens.insert(t, true);
                    assert_eq!(done, Some(false), "cancelled token {t} was not pending");
                }
            }
            op::CLOSE => self.conn.handle_closed("b1:9092", SocketError::Reset),
            op::VIOLATION => self
                .conn
                .handle_violation(kafka_core::conn::ConnError::SetupTimedOut),
            op::RAW => {
                let raw = self.input.bytes(255).to_vec();
                self.conn.handle_received(self.now, &raw);
            }
            _ => {
                if self.peer.waiting.pop_front().is_some() {
                    self.peer.lost += 1;
                }
            }
        }
    }

    fn advance(&mut self) {
        let jump = match self.input.u8() % 4 {
            0 => Duration::from_millis(u64::from(self.input.u8())),
            1 => Duration::from_millis(u64::from(self.input.u16())),
            _ => self
                .conn
                .poll_timeout()
                .map_or(Duration::ZERO, |t| t.saturating_duration_since(self.now)),
        };
        self.now += jump;
        self.fire();
    }

    /// Fires due timers; afterwards the next timer is in the future (no busy loop). A
    /// timer may come due through the first call's work (a request dispatched after a
    /// throttle fails at once, the connection is then idle), hence a few calls.
    fn fire(&mut self) {
        for _ in 0..3 {
            if self.conn.poll_timeout().is_some_and(|t| t <= self.now) {
                self.conn.handle_timeout(self.now);
                self.drain();
            }
        }
        if let Some(t) = self.conn.poll_timeout() {
            assert!(
                t > self.now,
                "poll_timeout {:?} is not after now {:?} once handled: busy loop ({:?})",
                t - self.origin,
                self.now - self.origin,
                self.conn
            );
        }
    }

    fn submit(&mut self) {
        let token = Token(self.next_token);
        self.tokens.insert(self.next_token, false);
        self.next_token += 1;
        let mut shape = Shape::default();
        if self.input.one_in(8) {
            shape.version = Some(self.input.below(20) as i16);
        }
        if self.input.one_in(8) {
            shape.timeout = Some(Duration::from_millis(u64::from(self.input.u16() % 3000)));
        }
        let request: Box<dyn kafka_core::conn::OutboundRequest> = match self.input.u8() % 3 {
            0 => Box::new(MetadataRequest::default()),
            1 => Box::new(ListOffsetsRequest {
                replica_id: -1,
                topics: vec![ListOffsetsTopic {
                    name: "t".into(),
                    partitions: vec![ListOffsetsPartition {
                        partition_index: 0,
                        timestamp: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            _ => {
                shape.no_response = true;
                Box::new(ProduceRequest {
                    acks: 0,
                    timeout_ms: 1000,
                    ..Default::default()
                })
            }
        };
        self.conn.submit_shaped(self.now, token, request, shape);
    }

    /// The owner's drain: completions (applying throttles), resume, transmit; then the
    /// invariants.
    fn drain(&mut self) {
        while let Some(c) = self.conn.poll_completion() {
            let token = match &c {
                Completion::Response {
                    token,
                    api,
                    version,
                    frame,
                } => {
                    let mut whole = (frame.len() as u32 + 4).to_be_bytes().to_vec();
                    whole.extend_from_slice(frame);
                    let throttle = body_of(&whole, *api, *version)
                        .and_then(|b| throttle_of(*api, *version, b));
                    if let Some(ms) = throttle.filter(|&ms| ms > 0) {
                        self.conn.apply_throttle(self.now, ms);
                        let until = self.now + Duration::from_millis(ms as u64);
                        self.throttled_until = self.throttled_until.max(until);
                    }
                    self.responses += 1;
                    *token
                }
                Completion::Sent { token } => *token,
                Completion::Failed { token, .. } => *token,
                _ => panic!("unknown completion {c:?}"),
            };
            match self.tokens.insert(token.0, true) {
                Some(false) => {}
                Some(true) => panic!("token {} completed twice: {c:?}", token.0),
                None => panic!("completion for a token never submitted: {c:?}"),
            }
        }
        // The connection applies throttles of its own exchanges too (ApiVersions at
        // setup, KIP-219): the bound starts after whichever ends last.
        if let Some(until) = self.conn.throttled_until() {
            self.throttled_until = self.throttled_until.max(until);
        }
        self.conn.resume(self.now);
        let mut out = Vec::new();
        self.conn.poll_transmit(&mut out);
        for seen in self.peer.inbound.push(&out) {
            let no_response = seen.api == ApiKey::Produce
                && seen.decode::<ProduceRequest>().is_some_and(|p| p.acks == 0);
            if !no_response {
                self.peer.waiting.push_back(seen);
            }
        }
        if let ConnState::Failed(_) = self.conn.state() {
            if !self.failed {
                self.failed = true;
                self.peer.waiting.clear();
                self.peer.lost = 0;
            }
            assert!(
                self.tokens.values().all(|&done| done),
                "a failed connection left requests unfinished: {:?}",
                self.conn
            );
            assert!(
                self.conn.poll_timeout().is_none(),
                "a failed connection arms a timer"
            );
        } else {
            // Answered or lost, every written request counts against the window until
            // its answer is read (held-back bytes are not read yet).
            let in_flight = self.peer.waiting.len() + self.peer.lost;
            let answered_unread = usize::from(!self.peer.held.is_empty());
            assert!(
                in_flight <= self.max_in_flight + answered_unread + 1,
                "{in_flight} requests in flight, max.in.flight {}",
                self.max_in_flight
            );
        }
    }

    /// The peer goes silent: every request must end within the setup timeout, any
    /// throttle the owner applied and one request timeout (plus a shaped timeout), with
    /// the clock only jumping to the connection's own deadlines.
    fn silence(&mut self) {
        let start = self.now.max(self.throttled_until);
        let bound = start + SETUP_TIMEOUT + Duration::from_millis(3000) + REQUEST_TIMEOUT * 2;
        for _ in 0..1000 {
            if self.tokens.values().all(|&done| done) {
                return;
            }
            let Some(t) = self.conn.poll_timeout() else {
                break;
            };
            assert!(
                t <= bound,
                "requests still pending at {:?} past the bound {:?}: {:?}",
                t - self.origin,
                bound - self.origin,
                self.conn
            );
            self.now = self.now.max(t);
            self.fire();
            self.drain();
        }
        let open: Vec<u64> = self
            .tokens
            .iter()
            .filter(|(_, d)| !**d)
            .map(|(t, _)| *t)
            .collect();
        assert!(
            open.is_empty(),
            "requests {open:?} never ended with a silent peer: {:?}",
            self.conn
        );
    }
}
