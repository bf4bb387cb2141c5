//! One broker connection as a sans-IO state machine.
//!
//! Lifecycle: `ApiVersions` (newest version first, falling back to the broker's range when
//! it answers UNSUPPORTED_VERSION) → optional SASL (handshake + authenticate) → `Ready`.
//! Requests submitted earlier wait in a queue and are written once the connection is
//! ready, at the highest version both sides support, up to `max_in_flight` at a time.
//! Any remote misbehaviour fails the connection for good: every queued and in-flight
//! request completes with the same error.
//!
//! Drain order for the owner after any `handle_*` call: [`Connection::poll_completion`]
//! until `None` (applying each response's throttle), [`Connection::resume`], then
//! [`Connection::poll_transmit`] and [`Connection::poll_timeout`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::protocol::messages::api_versions::ApiVersionsRequest;
use crate::protocol::{peek_correlation_id, read_response, ApiKey, KafkaCode};

use super::auth::{Auth, AuthOutput};
use super::error::{ConnError, RequestError, SocketError};
use super::frame::FrameReader;
use super::request::{ConnConfig, OutboundRequest};
use super::versions::ApiVersionTable;

/// Opaque handle the owner attaches to a request to match its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(pub u64);

/// The outcome of one submitted request.
#[derive(Debug)]
#[non_exhaustive]
pub enum Completion {
    /// The response frame arrived (header included; decode with `read_response`).
    Response {
        /// The submission's token.
        token: Token,
        /// The API.
        api: ApiKey,
        /// The version it was sent at.
        version: i16,
        /// The whole response frame after the size prefix.
        frame: Bytes,
    },
    /// A request that expects no response (Produce with acks=0) was written to the
    /// outbound buffer; nothing more will come for it.
    Sent {
        /// The submission's token.
        token: Token,
    },
    /// The request failed.
    Failed {
        /// The submission's token.
        token: Token,
        /// Why.
        error: RequestError,
        /// Whether it had been written to the connection (the broker may have acted on it).
        sent: bool,
    },
}

/// Where the connection is in its lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnState {
    /// Exchanging ApiVersions, authenticating, or waiting for TLS.
    Setup,
    /// Negotiated (and authenticated): requests flow.
    Ready,
    /// Failed for good.
    Failed(ConnError),
}

/// Requests this machine sends on its own behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Internal {
    ApiVersions,
    Auth,
}

#[derive(Debug)]
struct InFlight {
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    deadline: Instant,
    owner: Result<Token, Internal>,
}

struct Queued {
    token: Token,
    request: Box<dyn OutboundRequest>,
    shape: Shape,
}

/// How one request behaves on the connection, beyond its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// A pinned version; else the highest common one.
    pub version: Option<i16>,
    /// The highest version to use when none is pinned (transactions v1 keep Produce at
    /// v11 and EndTxn at v4).
    pub max_version: Option<i16>,
    /// How long to wait for the response once written (else `request.timeout.ms`).
    pub timeout: Option<Duration>,
    /// The broker sends no response (Produce with acks=0): the request completes with
    /// [`Completion::Sent`] as soon as it is written.
    pub no_response: bool,
}

/// A sans-IO connection to one broker. See the module docs for the drain order.
pub struct Connection {
    cfg: Arc<ConnConfig>,
    state: ConnState,
    frames: FrameReader,
    out: Vec<u8>,
    versions: Option<ApiVersionTable>,
    api_versions_version: i16,
    auth: Option<Auth>,
    queue: VecDeque<Queued>,
    inflight: VecDeque<InFlight>,
    /// The in-flight deadlines in time order (the earliest in O(log n), whatever each
    /// request's own timeout).
    deadlines: std::collections::BTreeSet<(Instant, i32)>,
    completions: VecDeque<Completion>,
    next_correlation: i32,
    setup_deadline: Option<Instant>,
    throttled_until: Option<Instant>,
    last_activity: Instant,
    /// SASL waits for credentials from the owner (see [`Connection::supply_credentials`]).
    awaiting_credentials: bool,
    #[cfg(feature = "tls")]
    tls: Option<super::tls::TlsSession>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("state", &self.state)
            .field("queued", &self.queue.len())
            .field("in_flight", &self.inflight.len())
            .field("throttled_until", &self.throttled_until)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts a connection whose socket the adapter reports connected at `now`. The
    /// ApiVersions request is queued for transmission immediately. `auth` runs SASL after
    /// negotiation when present.
    pub fn new(now: Instant, cfg: Arc<ConnConfig>, auth: Option<Auth>) -> Self {
        let mut conn = Connection {
            #[cfg(feature = "tls")]
            tls: None,
            frames: FrameReader::new(cfg.max_frame),
            setup_deadline: Some(now + cfg.setup_timeout),
            cfg,
            state: ConnState::Setup,
            out: Vec::new(),
            versions: None,
            api_versions_version: ApiKey::ApiVersions.supported_versions().max,
            auth,
            queue: VecDeque::new(),
            inflight: VecDeque::new(),
            deadlines: Default::default(),
            completions: VecDeque::new(),
            next_correlation: 0,
            throttled_until: None,
            last_activity: now,
            awaiting_credentials: false,
        };
        conn.send_api_versions(now);
        conn
    }

    /// Starts a connection that speaks TLS (`session` is fresh, before its handshake);
    /// Kafka bytes flow inside it. Otherwise like [`Connection::new`].
    #[cfg(feature = "tls")]
    pub fn with_tls(
        now: Instant,
        cfg: Arc<ConnConfig>,
        auth: Option<Auth>,
        session: super::tls::TlsSession,
    ) -> Self {
        let mut conn = Connection::new(now, cfg, auth);
        conn.tls = Some(session);
        conn
    }

    /// Replaces the setup deadline (`ConnConfig::setup_timeout` from the connection's
    /// start) with `now + timeout`, while setup is still going on: the client's per-attempt
    /// value, grown by consecutive failures.
    pub fn set_setup_timeout(&mut self, now: Instant, timeout: Duration) {
        if self.setup_deadline.is_some() {
            self.setup_deadline = Some(now + timeout);
        }
    }

    /// The lifecycle state.
    pub fn state(&self) -> &ConnState {
        &self.state
    }

    /// The broker's advertised versions, once known.
    pub fn api_versions(&self) -> Option<&ApiVersionTable> {
        self.versions.as_ref()
    }

    /// Whether authentication waits for credentials (an OAUTHBEARER token) from the owner.
    pub fn needs_credentials(&self) -> bool {
        self.awaiting_credentials && !matches!(self.state, ConnState::Failed(_))
    }

    /// Answers [`Connection::needs_credentials`]: authentication goes on with them, or the
    /// connection fails with the reason (an authentication failure).
    pub fn supply_credentials(
        &mut self,
        now: Instant,
        credentials: Result<super::sasl::SaslCredentials, String>,
    ) {
        if !self.needs_credentials() {
            return;
        }
        self.awaiting_credentials = false;
        let Some(auth) = self.auth.as_mut() else {
            return;
        };
        let output = match credentials {
            Ok(c) => {
                auth.supply(c);
                auth.start(now)
            }
            Err(message) => AuthOutput::Failed(ConnError::AuthenticationFailed {
                mechanism: "OAUTHBEARER".into(),
                message: format!("no token: {message}"),
            }),
        };
        if let Err(e) = self.apply_auth_output(now, output) {
            self.fail(e);
        }
        self.dispatch(now);
    }

    /// Requests queued or in flight for the owner.
    pub fn pending(&self) -> usize {
        self.queue.len() + self.inflight.iter().filter(|f| f.owner.is_ok()).count()
    }

    /// Queues a request; `version` pins a version, else the highest common one is used.
    pub fn submit(
        &mut self,
        now: Instant,
        token: Token,
        request: Box<dyn OutboundRequest>,
        version: Option<i16>,
    ) {
        let shape = Shape {
            version,
            ..Shape::default()
        };
        self.submit_shaped(now, token, request, shape);
    }

    /// Queues a request with its own [`Shape`] (timeout, no response, pinned version).
    pub fn submit_shaped(
        &mut self,
        now: Instant,
        token: Token,
        request: Box<dyn OutboundRequest>,
        shape: Shape,
    ) {
        if let ConnState::Failed(e) = &self.state {
            let error = RequestError::Connection(e.clone());
            self.completions.push_back(Completion::Failed {
                token,
                error,
                sent: false,
            });
            return;
        }
        self.queue.push_back(Queued {
            token,
            request,
            shape,
        });
        self.dispatch(now);
    }

    /// Withdraws a request that is still queued (not yet written); true if it was. A
    /// written request cannot be withdrawn: its response is still read and matched.
    pub fn cancel(&mut self, token: Token) -> bool {
        let before = self.queue.len();
        self.queue.retain(|q| q.token != token);
        self.queue.len() != before
    }

    /// Until when requests wait for a broker's throttle (KIP-219), if one applies.
    pub fn throttled_until(&self) -> Option<Instant> {
        self.throttled_until
    }

    /// Delays requests until `now + throttle_ms` (KIP-219: the broker asked us to back off).
    pub fn apply_throttle(&mut self, now: Instant, throttle_ms: i32) {
        if throttle_ms > 0 {
            let until = now + Duration::from_millis(throttle_ms as u64);
            self.throttled_until = Some(self.throttled_until.map_or(until, |t| t.max(until)));
        }
    }

    /// Feeds bytes received from the socket.
    pub fn handle_received(&mut self, now: Instant, data: &[u8]) {
        if matches!(self.state, ConnState::Failed(_)) {
            return;
        }
        self.last_activity = now;
        #[cfg(feature = "tls")]
        if let Some(tls) = self.tls.as_mut() {
            let mut plain = Vec::new();
            let result = tls
                .handle_ciphertext(data)
                .and_then(|()| tls.read_plaintext(&mut plain));
            self.frames.push(&plain);
            if let Err(e) = result {
                self.fail(ConnError::Tls(e.into()));
                return;
            }
        } else {
            self.frames.push(data);
        }
        #[cfg(not(feature = "tls"))]
        self.frames.push(data);
        let completed = self.completions.len();
        loop {
            match self.frames.next_frame() {
                Ok(Some(frame)) => {
                    if let Err(e) = self.handle_frame(now, frame) {
                        self.fail(e);
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        // The broker's close_notify: the frames before it were handled above; nothing
        // more will come, so what waits fails now rather than at its request timeout.
        #[cfg(feature = "tls")]
        if self.tls.as_ref().is_some_and(|t| t.peer_closed()) {
            self.fail(ConnError::TlsClosedByPeer);
            return;
        }
        // A response may carry a throttle (KIP-219) that only the owner decodes: the
        // requests waiting for a free in-flight slot go out when the owner has applied
        // it and calls `resume`, never before.
        let answered = self
            .completions
            .iter()
            .skip(completed)
            .any(|c| matches!(c, Completion::Response { .. }));
        if !answered {
            self.dispatch(now);
        }
    }

    /// Writes what waits once the owner has handled the responses of the last
    /// [`handle_received`](Self::handle_received) (and applied their throttle with
    /// [`apply_throttle`](Self::apply_throttle)).
    pub fn resume(&mut self, now: Instant) {
        if !matches!(self.state, ConnState::Failed(_)) {
            self.dispatch(now);
        }
    }

    /// The adapter reports the socket to `addr` (`host:port`) closed or broken.
    pub fn handle_closed(&mut self, addr: &str, error: SocketError) {
        self.fail(ConnError::Socket {
            addr: addr.to_string(),
            error,
        });
    }

    /// Fails the connection for a violation its owner found in a response frame (a
    /// body that does not decode): in-flight requests fail with `sent: true`, queued ones
    /// with `sent: false`, as for any remote misbehaviour.
    pub fn handle_violation(&mut self, error: ConnError) {
        self.fail(error);
    }

    /// Appends bytes to write to the socket; returns how many. An empty `out` with
    /// capacity (a buffer the adapter recycles) is swapped with the connection's own
    /// buffer instead of copied into: the connection keeps `out`'s memory for the next
    /// requests.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize {
        #[cfg(feature = "tls")]
        if let Some(tls) = self.tls.as_mut() {
            if !self.out.is_empty() {
                match tls.write_plaintext(&self.out) {
                    Ok(()) => self.out.clear(),
                    // Before the handshake finishes rustls buffers a bounded amount;
                    // keep the rest until it is done.
                    Err(super::tls::TlsError::HandshakeBufferFull { .. }) => {}
                    Err(e) => {
                        self.fail(ConnError::Tls(e.into()));
                        return 0;
                    }
                }
            }
            return tls.poll_ciphertext(out);
        }
        let n = self.out.len();
        if out.is_empty() && out.capacity() > 0 {
            // No copy of what may be megabytes of record batches.
            std::mem::swap(out, &mut self.out);
        } else {
            out.append(&mut self.out);
        }
        n
    }

    /// The next request outcome.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    /// The earliest instant at which [`Connection::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.state, ConnState::Failed(_)) {
            return None;
        }
        let mut t: Option<Instant> = None;
        let mut consider = |d: Option<Instant>| {
            if let Some(d) = d {
                t = Some(t.map_or(d, |t| t.min(d)));
            }
        };
        consider(self.deadlines.first().map(|(d, _)| *d));
        consider(self.setup_deadline);
        if !self.queue.is_empty() {
            consider(self.throttled_until);
        }
        if self.state == ConnState::Ready && self.queue.is_empty() && self.inflight.is_empty() {
            consider(Some(self.last_activity + self.cfg.idle_timeout));
        }
        // A due re-authentication waits for the requests in flight (their responses or
        // deadlines wake the owner): its deadline is a timer only while none are.
        if self.inflight.is_empty() {
            consider(self.auth.as_ref().and_then(Auth::reauth_deadline));
        }
        t
    }

    /// Fires due timers; calling it early is a no-op.
    pub fn handle_timeout(&mut self, now: Instant) {
        if matches!(self.state, ConnState::Failed(_)) {
            return;
        }
        let due = self
            .deadlines
            .first()
            .filter(|(d, _)| *d <= now)
            .map(|(_, c)| *c);
        if let Some(f) = due.and_then(|c| self.inflight.iter().find(|f| f.correlation_id == c)) {
            let e = ConnError::RequestTimedOut {
                api: f.api,
                correlation_id: f.correlation_id,
            };
            self.fail(e);
            return;
        }
        if self.setup_deadline.is_some_and(|d| d <= now) {
            self.fail(ConnError::SetupTimedOut);
            return;
        }
        if self.state == ConnState::Ready
            && self.queue.is_empty()
            && self.inflight.is_empty()
            && self.last_activity + self.cfg.idle_timeout <= now
        {
            self.fail(ConnError::Idle);
            return;
        }
        if self.throttled_until.is_some_and(|t| t <= now) {
            self.throttled_until = None;
        }
        self.dispatch(now);
    }

    fn send_api_versions(&mut self, now: Instant) {
        let req = ApiVersionsRequest {
            client_software_name: self.cfg.software_name.clone(),
            client_software_version: self.cfg.software_version.clone(),
            ..Default::default()
        };
        self.write_internal(now, &req, self.api_versions_version, Internal::ApiVersions);
    }

    fn write_internal(
        &mut self,
        now: Instant,
        req: &dyn OutboundRequest,
        version: i16,
        kind: Internal,
    ) {
        let correlation_id = self.next_correlation_id();
        match req.write_frame(
            &mut self.out,
            version,
            correlation_id,
            self.cfg.client_id.as_deref(),
        ) {
            Ok(()) => self.push_inflight(InFlight {
                correlation_id,
                api: req.api_key(),
                version,
                deadline: now + self.cfg.request_timeout,
                owner: Err(kind),
            }),
            Err(source) => self.fail(ConnError::SetupEncode {
                api: req.api_key(),
                source,
            }),
        }
    }

    fn push_inflight(&mut self, f: InFlight) {
        self.deadlines.insert((f.deadline, f.correlation_id));
        self.inflight.push_back(f);
    }

    fn next_correlation_id(&mut self) -> i32 {
        let id = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1) & i32::MAX;
        id
    }

    fn handle_frame(&mut self, now: Instant, frame: Bytes) -> Result<(), ConnError> {
        let received = peek_correlation_id(&frame).map_err(|_| ConnError::UnexpectedFrame)?;
        let Some(front) = self.inflight.front() else {
            return Err(ConnError::UnexpectedFrame);
        };
        if front.correlation_id != received {
            return Err(ConnError::CorrelationMismatch {
                expected: front.correlation_id,
                received,
            });
        }
        let Some(f) = self.inflight.pop_front() else {
            return Err(ConnError::UnexpectedFrame);
        };
        self.deadlines.remove(&(f.deadline, f.correlation_id));
        match f.owner {
            Ok(token) => {
                self.completions.push_back(Completion::Response {
                    token,
                    api: f.api,
                    version: f.version,
                    frame,
                });
                Ok(())
            }
            Err(Internal::ApiVersions) => self.handle_api_versions(now, f.version, frame),
            Err(Internal::Auth) => {
                let Some(auth) = self.auth.as_mut() else {
                    return Err(ConnError::UnexpectedFrame);
                };
                let output = auth.handle_response(now, f.api, f.version, frame)?;
                self.apply_auth_output(now, output)
            }
        }
    }

    fn handle_api_versions(
        &mut self,
        now: Instant,
        version: i16,
        frame: Bytes,
    ) -> Result<(), ConnError> {
        // A broker that does not support our version answers in v0 with UNSUPPORTED_VERSION
        // and its own ApiVersions range (KIP-511).
        let resp = match read_response::<ApiVersionsRequest>(frame.clone(), version) {
            Ok((_, r)) if r.error_code != KafkaCode::UNSUPPORTED_VERSION.0 => r,
            first => match read_response::<ApiVersionsRequest>(frame, 0) {
                Ok((_, r)) => r,
                // Neither reading fits: report the one at the version we sent.
                Err(v0) => {
                    let (version, source) = match first {
                        Err(e) => (version, e),
                        Ok(_) => (0, v0),
                    };
                    return Err(ConnError::Decode {
                        api: ApiKey::ApiVersions,
                        version,
                        source,
                    });
                }
            },
        };
        if resp.error_code == KafkaCode::UNSUPPORTED_VERSION.0 {
            let theirs = ApiVersionTable::from_response(&resp).negotiate(ApiKey::ApiVersions);
            return match theirs {
                Ok(v) if v < version => {
                    self.api_versions_version = v;
                    self.send_api_versions(now);
                    Ok(())
                }
                _ => Err(ConnError::ApiVersions(resp.error_code)),
            };
        }
        if resp.error_code != 0 {
            return Err(ConnError::ApiVersions(resp.error_code));
        }
        let table = ApiVersionTable::from_response(&resp);
        self.apply_throttle(now, resp.throttle_time_ms);
        self.versions = Some(table);
        let output = match self.auth.as_mut() {
            Some(auth) => auth.start(now),
            None => AuthOutput::Done,
        };
        self.apply_auth_output(now, output)
    }

    fn apply_auth_output(&mut self, now: Instant, output: AuthOutput) -> Result<(), ConnError> {
        match output {
            AuthOutput::Send(req) => {
                let api = req.api_key();
                let versions = self.versions.as_ref().ok_or(ConnError::UnexpectedFrame)?;
                let version = versions
                    .negotiate(api)
                    .map_err(|_| ConnError::SetupUnsupported { api })?;
                self.write_internal(now, req.as_ref(), version, Internal::Auth);
                Ok(())
            }
            AuthOutput::NeedCredentials => {
                self.awaiting_credentials = true;
                Ok(())
            }
            AuthOutput::Done => {
                self.state = ConnState::Ready;
                self.setup_deadline = None;
                Ok(())
            }
            AuthOutput::Failed(e) => Err(e),
        }
    }

    /// Writes queued requests while the connection is ready, unthrottled, not
    /// re-authenticating and below the in-flight limit.
    fn dispatch(&mut self, now: Instant) {
        if let Some(auth) = self.auth.as_mut() {
            if self.state == ConnState::Ready && auth.reauth_due(now) {
                // KIP-368: stop sending, let in-flight requests finish, then re-authenticate.
                if self.inflight.is_empty() {
                    self.state = ConnState::Setup;
                    let output = auth.start(now);
                    if let Err(e) = self.apply_auth_output(now, output) {
                        self.fail(e);
                    }
                }
                return;
            }
        }
        if self.state != ConnState::Ready || self.throttled_until.is_some_and(|t| t > now) {
            return;
        }
        while self.inflight.len() < self.cfg.max_in_flight {
            let Some(q) = self.queue.pop_front() else {
                break;
            };
            let api = q.request.api_key();
            let version = match (q.shape.version, self.versions.as_ref()) {
                (Some(v), Some(t)) => match t.broker_range(api) {
                    Some(r) if r.contains(v) && api.versions().contains(v) => Ok(v),
                    broker => Err(RequestError::UnsupportedVersion {
                        api,
                        ours: api.versions(),
                        broker,
                    }),
                },
                (None, Some(t)) => match q.shape.max_version {
                    Some(max) => t.negotiate_at_most(api, max),
                    None => t.negotiate(api),
                },
                (_, None) => Err(RequestError::NoRoute("connection not negotiated".into())),
            };
            let version = match version {
                Ok(v) => v,
                Err(error) => {
                    self.completions.push_back(Completion::Failed {
                        token: q.token,
                        error,
                        sent: false,
                    });
                    continue;
                }
            };
            let correlation_id = self.next_correlation_id();
            match q.request.write_frame(
                &mut self.out,
                version,
                correlation_id,
                self.cfg.client_id.as_deref(),
            ) {
                Ok(()) if q.shape.no_response => self
                    .completions
                    .push_back(Completion::Sent { token: q.token }),
                Ok(()) => self.push_inflight(InFlight {
                    correlation_id,
                    api,
                    version,
                    deadline: now + q.shape.timeout.unwrap_or(self.cfg.request_timeout),
                    owner: Ok(q.token),
                }),
                Err(e) => self.completions.push_back(Completion::Failed {
                    token: q.token,
                    error: RequestError::Encode(e),
                    sent: false,
                }),
            }
            self.last_activity = now;
        }
    }

    fn fail(&mut self, e: ConnError) {
        if matches!(self.state, ConnState::Failed(_)) {
            return;
        }
        self.deadlines.clear();
        for f in self.inflight.drain(..) {
            if let Ok(token) = f.owner {
                let error = RequestError::Connection(e.clone());
                self.completions.push_back(Completion::Failed {
                    token,
                    error,
                    sent: true,
                });
            }
        }
        for q in self.queue.drain(..) {
            let error = RequestError::Connection(e.clone());
            self.completions.push_back(Completion::Failed {
                token: q.token,
                error,
                sent: false,
            });
        }
        self.out.clear();
        self.state = ConnState::Failed(e);
    }
}
