//! The client router: owns every broker connection, the cluster metadata and the
//! coordinators, and routes typed requests. No I/O: sockets are requested with
//! [`IoCommand`]s, bytes come in through `handle_*` and go out through `poll_transmit`.
//!
//! # Drain order
//! After any `handle_*` call or [`Client::send`], an adapter drains in this order:
//! 1. [`Client::poll_io`] until `None` (open or close sockets),
//! 2. [`Client::poll_transmit`] for every writable connection,
//! 3. [`Client::poll_event`] until `None` (completed requests, metadata updates),
//! 4. [`Client::poll_timeout`], to arm its one timer; call [`Client::handle_timeout`] then.
//!
//! ```no_run
//! # use std::time::Instant;
//! # use kafka_core::client::{Client, Event, IoCommand};
//! # use kafka_core::cluster::Route;
//! # use kafka_core::config::ClientConfig;
//! # use kafka_core::protocol::messages::metadata::MetadataRequest;
//! # fn open_socket(_: &str, _: u16) {}
//! # fn write_socket(_: &[u8]) {}
//! let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")]).unwrap();
//! let mut client = Client::new(config, [7; 32]).unwrap();
//! let id = client.send(Instant::now(), Route::Any, MetadataRequest::default());
//! loop {
//!     while let Some(cmd) = client.poll_io() {
//!         if let IoCommand::Connect { conn, host, port, .. } = cmd {
//!             open_socket(&host, port); // within the command's `setup_timeout`
//!             client.handle_connected(Instant::now(), conn);
//!         }
//!     }
//!     // ... for each writable socket: client.poll_transmit(now, conn, &mut buf); write it
//!     // ... for each readable socket: client.handle_received(now, conn, &bytes)
//!     while let Some(event) = client.poll_event() {
//!         if let Event::Response(ready) = event {
//!             if ready.is(id) {
//!                 let metadata = client.take_response(id).unwrap().unwrap();
//!                 println!("{} brokers", metadata.brokers.len());
//!                 return;
//!             }
//!         }
//!     }
//!     // ... sleep until client.poll_timeout(), then client.handle_timeout(now)
//! #   break;
//! }
//! ```

mod cause;
mod credentials;
mod erased;
mod failures;
mod lookups;
mod observe;
mod ops;
mod options;
mod router;
mod sockets;
mod timers;
mod wants;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::{Backoff, Lane, Metadata, Route};
use crate::config::{ClientConfig, SecurityProtocol};
use crate::conn::sasl::SaslCredentials;
use crate::conn::{
    Auth, ConnConfig, ConnError, Connection, CredentialSource, RequestError, Shape, SocketError,
    Token,
};
use crate::protocol::Request;

pub use cause::Cause;
use erased::{ErasedRequest, Shared};
pub use erased::{RequestId, ResponseReady};
pub use failures::{BOOTSTRAP_VIOLATIONS, REQUEST_VIOLATIONS};
pub use ops::{Notice, OpContext, OpId, OpRef, Operation};
pub use options::RequestOptions;
use timers::{Timer, Timers};

/// Opaque id of one socket the adapter owns on the client's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// A socket operation the adapter must perform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoCommand {
    /// Open a TCP connection, then report [`Client::handle_connected`] or
    /// [`Client::handle_closed`].
    Connect {
        /// The id to report back with.
        conn: ConnId,
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
        /// How long this attempt may take to connect (each resolved address in turn gets
        /// this long): `socket.connection.setup.timeout.ms`, doubled per consecutive
        /// failed attempt to this node up to `socket.connection.setup.timeout.max.ms`,
        /// with ±20% jitter, as Java's `ClusterConnectionStates`. The core uses the same
        /// value for the connection's own setup (TLS, negotiation, SASL) once connected.
        setup_timeout: Duration,
    },
    /// Close the socket; no more calls for this id are expected.
    Close {
        /// Which socket.
        conn: ConnId,
    },
}

/// Something the application may want to react to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A request the application sent finished (successfully or not): fetch it with
    /// [`Client::take_response`]. Requests owned by machines never appear here.
    Response(ResponseReady),
    /// Cluster metadata changed.
    MetadataUpdated,
    /// A machine finished: its output went to its callback, or waits in
    /// [`Client::take_op_output`].
    OperationDone(OpRef),
    /// A machine has something for the application (read it with [`Client::command`]).
    Notify(OpRef),
    /// A connection authenticates with OAUTHBEARER and no valid token is cached: ask the
    /// token provider (off the hot path if it blocks) and answer with
    /// [`Client::handle_oauth_token`]. Asked once until answered.
    OAuthTokenNeeded,
    /// A connection to a broker failed.
    ConnectionFailed {
        /// The broker's node id (negative for bootstrap servers).
        node: i32,
        /// Why.
        error: ConnError,
    },
}

/// Why a request could not be submitted at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration cannot be used by the core (e.g. TLS settings).
    #[error("configuration: {0}")]
    Config(String),
}

/// Who a request belongs to: its completion goes there and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The application: completions become [`Event::Response`].
    App,
    /// A machine: completions wake it only.
    Op(u64),
    /// The router itself (metadata, coordinator lookups).
    Internal(router::Internal),
}

#[derive(Debug)]
enum Phase {
    Connecting,
    Open(Box<Connection>),
}

struct Slot {
    node: i32,
    host: String,
    port: u16,
    lane: Lane,
    phase: Phase,
    /// This attempt's connection setup timeout (see [`IoCommand::Connect`]).
    setup_timeout: Duration,
    /// The connection got ready (a later failure is not a failed setup).
    was_ready: bool,
    /// Requests routed here before the socket connected.
    waiting: Vec<(Token, Shared, Shape)>,
}

struct Pending {
    route: Route,
    request: Shared,
    opts: RequestOptions,
    attempts: u32,
    /// Where it is now, if submitted.
    at: Option<(ConnId, Token)>,
    /// When a parked request gives up waiting for a route.
    give_up_at: Option<Instant>,
    /// When a parked request is retried.
    retry_at: Option<Instant>,
    /// In its route's parked queue, waiting for metadata or a coordinator.
    parked: bool,
    owner: Owner,
    /// When it was submitted (connection failures since then may explain its wait).
    since: Instant,
    /// The last failure the router retried past for it (or why it waits for a route).
    last_cause: Option<Cause>,
    /// Its attempts' protocol violations in a row (see [`REQUEST_VIOLATIONS`]).
    violations: u32,
}

impl Pending {
    /// A request submitted at `now`, not yet attempted or placed anywhere.
    fn new(
        route: Route,
        request: Shared,
        opts: RequestOptions,
        owner: Owner,
        now: Instant,
    ) -> Self {
        Pending {
            route,
            request,
            opts,
            attempts: 0,
            at: None,
            give_up_at: None,
            retry_at: None,
            parked: false,
            owner,
            since: now,
            last_cause: None,
            violations: 0,
        }
    }

    fn internal(&self) -> Option<&router::Internal> {
        match &self.owner {
            Owner::Internal(i) => Some(i),
            _ => None,
        }
    }
}

/// The sans-IO Kafka client core. See the module docs for the drain order.
pub struct Client {
    config: ClientConfig,
    conn_config: Arc<ConnConfig>,
    seed: [u8; 32],
    metadata: Metadata,
    bootstrap: Vec<(String, u16)>,
    extra_brokers: BTreeMap<i32, (String, u16)>,
    coordinators: HashMap<(i8, String), i32>,
    slots: BTreeMap<ConnId, Slot>,
    by_node: HashMap<(i32, Lane), ConnId>,
    node_failures: HashMap<i32, (u32, Instant)>,
    /// Consecutive connection attempts per node that failed before getting ready (the
    /// setup timeout doubles with each); cleared when one gets ready or a ready one closes.
    setup_failures: HashMap<i32, u32>,
    /// The last connection failure (not idle closes), and when: the cause of a call that
    /// waits for metadata or a coordinator.
    last_failure: Option<(Instant, Cause)>,
    /// When a failure last ended the calls waiting for a route (a fatal cause or the
    /// bootstrap rule), and why: machines that wait on metadata end with it.
    last_fatal: Option<(Instant, RequestError)>,
    /// Protocol violations in a row per bootstrap address (node < 0) since the last
    /// connection that got ready (the bootstrap rule, see `router::BOOTSTRAP_VIOLATIONS`).
    bootstrap_violations: BTreeMap<i32, u32>,
    pending: BTreeMap<u64, Pending>,
    by_token: HashMap<Token, u64>,
    done: HashMap<u64, Result<Box<dyn std::any::Any + Send>, RequestError>>,
    io: VecDeque<IoCommand>,
    events: VecDeque<Event>,
    next_id: u64,
    next_conn: u64,
    reconnect: Backoff,
    retry: Backoff,
    /// The per-attempt connection setup timeout, grown by `node_failures` (see
    /// [`IoCommand::Connect`]).
    setup: Backoff,
    metadata_due: Option<Instant>,
    metadata_in_flight: bool,
    /// Topics to keep in metadata, with when a request last routed to them (they expire
    /// after `metadata.max.idle.ms`).
    wanted_topics: BTreeMap<String, Instant>,
    /// Machines that want every topic's metadata (pattern subscriptions): while one
    /// does, refreshes ask for all topics (see `wants.rs`).
    all_topics_wanted: BTreeSet<u64>,
    /// The metadata request in flight asks for all topics.
    metadata_all_in_flight: bool,
    /// Metadata requests let the broker auto-create topics (a producer runs here, as
    /// Java's producer metadata does).
    auto_create_topics: bool,
    #[cfg(feature = "tls")]
    tls: Option<crate::conn::tls::TlsClientConfig>,
    wall_clock: Duration,
    /// The `now` last seen when the wall clock was set (record timestamps advance from it).
    wall_clock_at: Option<Instant>,
    /// Coordinators to look up at the next `poll_io` (batched FindCoordinator).
    lookups_wanted: BTreeSet<(i8, String)>,
    /// Coordinators whose lookup is in flight or waiting for its retry.
    lookups_in_flight: HashSet<(i8, String)>,
    /// Requests waiting for their route to resolve, per route, in arrival order.
    parked: HashMap<Route, VecDeque<u64>>,
    /// Requests waiting out a node's reconnect backoff, in arrival order per node: they
    /// go out before any later request to that node, else one routed just after the
    /// backoff would overtake them (an idempotent producer's batches reordered).
    node_waiters: HashMap<i32, VecDeque<u64>>,
    /// Every deadline, by reason.
    timers: Timers,
    /// Machines with a reason to be polled.
    ready_ops: BTreeSet<u64>,
    /// The machine being polled or commanded now (its slot is out of `ops` meanwhile): a
    /// request of its that fails synchronously keeps its outcome and marks it ready.
    polling_op: Option<u64>,
    /// The last `now` the core was given, for work deferred to `poll_io`.
    last_now: Option<Instant>,
    /// Running operations by id (ids shared with requests).
    ops: BTreeMap<u64, ops::OpSlot>,
    /// When the last metadata response arrived (refreshes are spaced by the retry backoff).
    metadata_at: Option<Instant>,
    /// Outputs of finished operations started with `start_op`.
    op_outputs: HashMap<u64, Box<dyn std::any::Any + Send>>,
    /// Finished requests the application owns (the rest of `done` belongs to machines).
    app_done: HashSet<u64>,
    /// The last OAUTHBEARER token the adapter supplied, reused until it expires.
    oauth_token: Option<crate::config::OAuthToken>,
    /// Connections waiting for a token; `Event::OAuthTokenNeeded` is out while non-empty.
    awaiting_token: BTreeSet<ConnId>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connections", &self.slots.len())
            .field("pending", &self.pending.len())
            .field("brokers", &self.metadata.brokers().len())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Creates a client. `seed` must be fresh randomness from the adapter: it drives SCRAM
    /// nonces and backoff jitter (a simulation passes a fixed seed to replay a run).
    pub fn new(config: ClientConfig, seed: [u8; 32]) -> Result<Client, ClientError> {
        let c = config.common();
        if matches!(
            config.security().protocol,
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl
        ) && !cfg!(feature = "tls")
        {
            return Err(ClientError::Config(
                "TLS requested but the `tls` feature is off".into(),
            ));
        }
        let conn_config = Arc::new(ConnConfig {
            client_id: Some(c.client_id.clone()),
            software_name: c.client_software_name.clone(),
            software_version: c.client_software_version.clone(),
            request_timeout: c.request_timeout,
            setup_timeout: c.socket_connection_setup_timeout,
            max_frame: c.receive_message_max_bytes as usize,
            max_in_flight: c.max_in_flight_requests_per_connection.max(1) as usize,
            idle_timeout: c.connections_max_idle,
        });
        let jitter_seed = u64::from_be_bytes(seed[..8].try_into().unwrap_or_default());
        #[cfg(feature = "tls")]
        let tls = match config.security().protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => Some(tls_config(&config)?),
            _ => None,
        };
        Ok(Client {
            #[cfg(feature = "tls")]
            tls,
            wall_clock: Duration::ZERO,
            wall_clock_at: None,
            lookups_wanted: Default::default(),
            lookups_in_flight: Default::default(),
            parked: HashMap::new(),
            node_waiters: HashMap::new(),
            timers: Timers::default(),
            ready_ops: BTreeSet::new(),
            polling_op: None,
            last_now: None,
            bootstrap: c
                .bootstrap_servers
                .iter()
                .map(|b| (b.host.clone(), b.port))
                .collect(),
            reconnect: Backoff::new(c.reconnect_backoff, c.reconnect_backoff_max, jitter_seed),
            retry: Backoff::new(
                c.retry_backoff,
                c.retry_backoff_max,
                jitter_seed.rotate_left(17),
            ),
            setup: Backoff::new(
                c.socket_connection_setup_timeout,
                c.socket_connection_setup_timeout_max,
                jitter_seed.rotate_left(41),
            ),
            config,
            conn_config,
            seed,
            metadata: Metadata::default(),
            extra_brokers: BTreeMap::new(),
            coordinators: HashMap::new(),
            slots: BTreeMap::new(),
            by_node: HashMap::new(),
            node_failures: HashMap::new(),
            setup_failures: HashMap::new(),
            last_failure: None,
            last_fatal: None,
            bootstrap_violations: BTreeMap::new(),
            pending: BTreeMap::new(),
            by_token: HashMap::new(),
            done: HashMap::new(),
            io: VecDeque::new(),
            events: VecDeque::new(),
            next_id: 1,
            next_conn: 1,
            metadata_due: None,
            metadata_in_flight: false,
            wanted_topics: Default::default(),
            all_topics_wanted: Default::default(),
            metadata_all_in_flight: false,
            auto_create_topics: false,
            ops: BTreeMap::new(),
            op_outputs: HashMap::new(),
            app_done: HashSet::new(),
            oauth_token: None,
            awaiting_token: BTreeSet::new(),
            metadata_at: None,
        })
    }

    /// Tells the core the wall-clock time (since the Unix epoch), used to check TLS
    /// certificate validity and to stamp records sent without a timestamp. Adapters call
    /// it before reporting connections and whenever they hand the core a new `now`.
    pub fn handle_wall_clock(&mut self, since_unix_epoch: Duration) {
        self.wall_clock = since_unix_epoch;
        self.wall_clock_at = self.last_now;
    }

    /// The wall clock at `now`, in ms since the Unix epoch: the last value given to
    /// [`handle_wall_clock`](Self::handle_wall_clock) advanced by the time since.
    pub(crate) fn wall_clock_ms(&self, now: Instant) -> i64 {
        let since = self
            .wall_clock_at
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        i64::try_from((self.wall_clock + since).as_millis()).unwrap_or(i64::MAX)
    }

    /// The configuration the client was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The cached cluster metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Sends `request` to `route` at the highest version both sides support.
    pub fn send<R>(&mut self, now: Instant, route: Route, request: R) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.send_with(now, route, request, RequestOptions::default())
    }

    /// Like [`Client::send`] with a pinned version.
    pub fn send_version<R>(
        &mut self,
        now: Instant,
        route: Route,
        request: R,
        version: i16,
    ) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.send_with(
            now,
            route,
            request,
            RequestOptions::default().version(version),
        )
    }

    /// Like [`Client::send`] with its own [`RequestOptions`] (timeout, no response, no
    /// router retries, pinned version).
    pub fn send_with<R>(
        &mut self,
        now: Instant,
        route: Route,
        request: R,
        opts: RequestOptions,
    ) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        let raw = self.next_request_id();
        self.submit_as(now, raw, route, Arc::new(request), opts, Owner::App);
        RequestId::new(raw)
    }

    /// The outcome of a finished request the application sent, once; `None` while it is
    /// still running (or if a machine owns it).
    pub fn take_response<R: Request + 'static>(
        &mut self,
        id: RequestId<R>,
    ) -> Option<Result<R::Response, RequestError>> {
        if !self.app_done.remove(&id.raw) {
            return None;
        }
        self.take_done(id)
    }

    fn take_done<R: Request + 'static>(
        &mut self,
        id: RequestId<R>,
    ) -> Option<Result<R::Response, RequestError>> {
        let result = self.done.remove(&id.raw)?;
        Some(result.and_then(|any| {
            any.downcast::<R::Response>()
                .map(|b| *b)
                .map_err(|_| RequestError::NoRoute("response type mismatch".into()))
        }))
    }

    /// Declares that nobody will take the response of request `id` (e.g. its caller gave
    /// up): it is withdrawn if not yet written, else dropped when it arrives.
    pub fn discard_response<R>(&mut self, id: RequestId<R>) {
        self.app_done.remove(&id.raw);
        self.withdraw(id.raw);
    }

    /// Forgets request `id` wherever it is: its outcome if finished, its place in a
    /// connection queue or a parked queue, its timer. A request already written stays
    /// matched on its connection, and its response is dropped on arrival.
    pub(crate) fn withdraw(&mut self, id: u64) {
        if self.done.remove(&id).is_some() {
            return;
        }
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.timers.set(Timer::Parked(id), None);
        if let Some((conn, token)) = p.at {
            self.by_token.remove(&token);
            match self.slots.get_mut(&conn) {
                Some(Slot {
                    phase: Phase::Open(c),
                    ..
                }) => {
                    c.cancel(token);
                }
                Some(slot) => slot.waiting.retain(|(t, _, _)| *t != token),
                None => {}
            }
        }
        if let Some(internal) = p.internal() {
            self.internal_ended(internal, Some("discarded"));
        }
    }

    /// Number of requests not yet finished (queued, parked or in flight).
    pub fn requests_pending(&self) -> usize {
        self.pending.len()
    }

    /// Number of armed timers (for tests and leak checks).
    pub fn timers_armed(&self) -> usize {
        self.timers.len()
    }

    /// Asks for a metadata refresh including `topics` (also called on stale-metadata errors).
    pub fn request_metadata(&mut self, now: Instant, topics: impl IntoIterator<Item = String>) {
        for t in topics {
            self.wanted_topics.insert(t, now);
        }
        // At most one refresh per `retry.backoff.ms` (Java's metadata backoff), so routes
        // that keep waiting (an unknown broker, a topic without a leader) cannot spin.
        let earliest = self
            .metadata_at
            .map_or(now, |t| (t + self.config.common().retry_backoff).max(now));
        self.metadata_due = Some(match self.metadata_due {
            Some(due) if due <= earliest => due,
            _ => earliest,
        });
        self.maybe_refresh_metadata(now);
        self.sync_metadata_timer();
    }

    /// Marks a wanted topic as used at `now` (it stays in metadata another
    /// `metadata.max.idle.ms`), for machines that route to its leader themselves.
    pub(crate) fn touch_topic(&mut self, now: Instant, topic: &str) {
        if let Some(used) = self.wanted_topics.get_mut(topic) {
            *used = now;
        }
    }

    /// Forgets a partition leader after a NOT_LEADER_OR_FOLLOWER-like error and refreshes.
    pub fn invalidate_leader(&mut self, now: Instant, topic: &str, partition: i32) {
        self.metadata.invalidate_leader(topic, partition);
        self.request_metadata(now, [topic.to_string()]);
    }

    /// Forgets the cached coordinator of a group or transactional id (after a
    /// NOT_COORDINATOR-like error inside a response), so the next request looks it up again.
    pub fn invalidate_coordinator(&mut self, key: &str) {
        self.coordinators.retain(|(_, k), _| k != key);
    }

    /// The cluster's finalized max level of feature `name`, as the open connection with
    /// the newest feature epoch knows it.
    pub fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.slots
            .values()
            .filter_map(|s| match &s.phase {
                Phase::Open(c) => c.api_versions(),
                Phase::Connecting => None,
            })
            .max_by_key(|t| t.finalized_epoch())
            .and_then(|t| t.finalized_feature(name))
    }

    /// What broker `node` advertised in ApiVersions, from an open connection to it.
    pub(crate) fn broker_versions(&self, node: i32) -> Option<&crate::conn::ApiVersionTable> {
        self.slots
            .values()
            .filter(|s| s.node == node)
            .find_map(|s| match &s.phase {
                Phase::Open(c) => c.api_versions(),
                Phase::Connecting => None,
            })
    }

    /// The next socket operation.
    pub fn poll_io(&mut self) -> Option<IoCommand> {
        if let (false, Some(now)) = (self.lookups_wanted.is_empty(), self.last_now) {
            self.flush_lookups(now);
        }
        self.io.pop_front()
    }

    /// Whether socket operations (or coordinator lookups that may need sockets) are
    /// waiting in [`Client::poll_io`].
    pub fn poll_io_pending(&self) -> bool {
        !self.io.is_empty() || !self.lookups_wanted.is_empty()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The earliest instant at which [`Client::handle_timeout`] has work; `None` if idle.
    /// O(log n): the first entry of the timer table.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.ops_ready() {
            // Machines left to poll by a busy `run_ops` (bounded per call).
            return self.last_now.or(self.timers.next());
        }
        self.timers.next()
    }

    /// Fires due timers; calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handle_timeout_inner(now);
        self.run_ops(now);
    }

    fn handle_timeout_inner(&mut self, now: Instant) {
        self.last_now = Some(now);
        while let Some(timer) = self.timers.pop_due(now) {
            match timer {
                Timer::Conn(id) => {
                    if let Some(Slot {
                        phase: Phase::Open(c),
                        ..
                    }) = self.slots.get_mut(&id)
                    {
                        c.handle_timeout(now);
                    }
                    // Re-arms the connection's next deadline (or handles its failure).
                    self.drain(now, id);
                }
                Timer::Parked(id) => self.route(now, id),
                Timer::Op(op) => self.wake_op(op),
                Timer::Metadata => {
                    self.maybe_refresh_metadata(now);
                    self.sync_metadata_timer();
                }
            }
        }
    }

    fn new_token(&mut self) -> Token {
        self.next_id += 1;
        Token(self.next_id)
    }

    /// A fresh id for a request or a machine (one counter: ids never collide).
    pub(crate) fn next_request_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Submits request `id` (from [`Client::next_request_id`]) for `owner`.
    pub(crate) fn submit_as(
        &mut self,
        now: Instant,
        id: u64,
        route: Route,
        request: Arc<dyn ErasedRequest>,
        opts: RequestOptions,
        owner: Owner,
    ) {
        self.last_now = Some(now);
        let pending = Pending::new(route, Shared(request), opts, owner, now);
        self.pending.insert(id, pending);
        self.route(now, id);
    }

    /// Records the outcome of request `id` for its owner: the application gets an
    /// [`Event::Response`], a machine is woken, the router's own requests end here.
    fn finish(&mut self, id: u64, result: Result<Box<dyn std::any::Any + Send>, RequestError>) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.timers.set(Timer::Parked(id), None);
        match p.owner {
            Owner::Internal(internal) => {
                let error = result.err().map(|e| e.to_string());
                self.internal_ended(&internal, error.as_deref());
            }
            Owner::App => {
                self.done.insert(id, result);
                self.app_done.insert(id);
                self.events.push_back(Event::Response(ResponseReady(id)));
            }
            Owner::Op(op) => {
                // The machine may be the one running now (a request that failed as it
                // was sent): its outcome is kept for it all the same.
                if self.op_alive(op) {
                    self.done.insert(id, result);
                    self.wake_op(op);
                }
            }
        }
    }

    /// Arms the metadata timer for the next due refresh (none while one is in flight).
    fn sync_metadata_timer(&mut self) {
        let due = self.metadata_due.filter(|_| !self.metadata_in_flight);
        self.timers.set(Timer::Metadata, due);
    }

    fn retry_delay(&mut self, attempts: u32) -> Duration {
        self.retry.delay(attempts.saturating_sub(1))
    }
}

/// Builds the TLS settings from the configuration. Certificate and key *files* must have
/// been loaded by the adapter into the `*_pem` settings: the core reads no files.
#[cfg(feature = "tls")]
fn tls_config(config: &ClientConfig) -> Result<crate::conn::tls::TlsClientConfig, ClientError> {
    let ssl = &config.security().ssl;
    if ssl.ca_location.is_some() || ssl.certificate_location.is_some() || ssl.key_location.is_some()
    {
        return Err(ClientError::Config(
            "ssl.*.location files must be loaded by the adapter (the core reads no files)".into(),
        ));
    }
    let t = crate::conn::tls::TlsConfig {
        ca_pem: ssl.ca_pem.as_ref().map(|p| p.as_bytes().to_vec()),
        client_cert_pem: ssl.certificate_pem.as_ref().map(|p| p.as_bytes().to_vec()),
        client_key_pem: ssl.key_pem.clone(),
        server_name_override: None,
        endpoint_identification: ssl.endpoint_identification
            == crate::config::EndpointIdentification::Https,
        danger_accept_invalid_certs: ssl.danger_accept_invalid_certs,
    };
    t.build()
        .map_err(|e| ClientError::Config(format!("TLS: {e}")))
}

#[cfg(test)]
mod tests;
