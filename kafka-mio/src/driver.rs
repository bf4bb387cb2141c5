//! [`Driver`]: the core [`Client`] plus its mio sockets, fed from the caller's loop.

use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::Range;
use std::time::{Duration, Instant};

use mio::event::Event as MioEvent;
use mio::{Registry, Token};

use kafka_core::client::{Client, ConnId, Event, IoCommand, OpId, OpRef, Operation};
use kafka_core::config::ClientConfig;
use kafka_driver::wall_clock;

use crate::socket::{ConnectState, Sock, TokenPool};
use crate::{ConnectError, Error};

/// Non-completion events kept for [`Driver::poll_event`]; older ones are dropped.
const MAX_EVENTS: usize = 256;
/// Read buffer size.
const READ_CHUNK: usize = 64 * 1024;

/// The Kafka client inside the caller's mio loop.
///
/// It registers its sockets on the caller's [`Registry`] with tokens from the range given
/// to [`Driver::new`] only, never blocks (except for name resolution, see the crate docs)
/// and never owns the loop. Each turn of the caller's loop:
/// 1. `poll.poll(&mut events, driver.timeout())` (or the minimum with the caller's timers),
/// 2. [`Driver::handle_event`] for each event whose token the driver [`owns`](Driver::owns),
/// 3. [`Driver::poll`] (fires due timers and drains the core: sockets to open or close,
///    bytes to write, events),
/// 4. [`Driver::poll_completed`] / [`Driver::take_output`] for finished operations.
pub struct Driver {
    core: Client,
    tokens: TokenPool,
    socks: HashMap<ConnId, Sock>,
    by_token: HashMap<Token, ConnId>,
    setup_timeout: Duration,
    completed: VecDeque<OpRef>,
    events: VecDeque<Event>,
    /// Work was handed to the core outside a drain (`start`, `core_mut`).
    dirty: bool,
    read_buf: Vec<u8>,
}

impl Driver {
    /// Creates a driver that will register its sockets on `registry` with tokens from
    /// `tokens` only (freed tokens are reused; when all are in use, a new connection
    /// fails with [`ConnectError::TokensExhausted`] and the core retries it later).
    /// Connections open on first use.
    pub fn new(
        config: ClientConfig,
        registry: &Registry,
        tokens: Range<usize>,
    ) -> Result<Driver, Error> {
        // The registry is only used once sockets exist; taking it here states the contract.
        let _ = registry;
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let core = kafka_driver::new_client(config)?;
        Ok(Driver {
            core,
            tokens: TokenPool::new(tokens),
            socks: HashMap::new(),
            by_token: HashMap::new(),
            setup_timeout,
            completed: VecDeque::new(),
            events: VecDeque::new(),
            dirty: false,
            read_buf: vec![0; READ_CHUNK],
        })
    }

    /// The core client, for metadata and other state.
    pub fn core(&self) -> &Client {
        &self.core
    }

    /// The core client, e.g. to send raw requests. Call [`Driver::poll`] before the next
    /// wait ([`Driver::timeout`] returns zero until then).
    pub fn core_mut(&mut self) -> &mut Client {
        self.dirty = true;
        &mut self.core
    }

    /// Whether `token` belongs to this driver's range (events for other tokens are the
    /// caller's; [`Driver::handle_event`] ignores them).
    pub fn owns(&self, token: Token) -> bool {
        self.tokens.contains(token)
    }

    /// The tokens of the sockets currently registered (all inside the driver's range).
    pub fn tokens(&self) -> impl Iterator<Item = Token> + '_ {
        self.by_token.keys().copied()
    }

    /// Starts an operation (e.g. an admin call). Its requests go out at the next
    /// [`Driver::poll`]; [`Driver::poll_completed`] reports it finished.
    pub fn start<O: Operation>(&mut self, op: O) -> OpId<O> {
        self.dirty = true;
        self.core.start_op(Instant::now(), op)
    }

    /// The output of a finished operation, once.
    pub fn take_output<O: Operation>(&mut self, id: OpId<O>) -> Option<O::Output> {
        self.core.take_op_output(id)
    }

    /// The handle of the next finished operation (compare with `OpId::untyped`).
    pub fn poll_completed(&mut self) -> Option<OpRef> {
        self.completed.pop_front()
    }

    /// The next other core event (metadata updates, connection failures, finished raw
    /// requests). Only the latest 256 are kept.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// How long the caller's `poll` may wait before the driver has timer work; `None`
    /// when idle. Zero while work is waiting for [`Driver::poll`].
    pub fn timeout(&self) -> Option<Duration> {
        if self.dirty || self.core.poll_io_pending() {
            return Some(Duration::ZERO);
        }
        let connects = self.socks.values().filter_map(|s| s.connecting);
        let wake = self.core.poll_timeout().into_iter().chain(connects).min()?;
        Some(wake.saturating_duration_since(Instant::now()))
    }

    /// Handles one readiness event of the caller's `poll`. Events whose token the driver
    /// does not own, or whose socket is gone, are ignored.
    pub fn handle_event(&mut self, registry: &Registry, event: &MioEvent) {
        let Some(&conn) = self.by_token.get(&event.token()) else {
            return;
        };
        self.socket_ready(registry, conn, event);
        self.drain(registry);
    }

    /// Fires the core's due timers and connect timeouts, then drains (calling it early
    /// is harmless).
    pub fn handle_timeout(&mut self, registry: &Registry) {
        let now = Instant::now();
        self.core.handle_timeout(now);
        self.expire_connects(registry, now);
        self.drain(registry);
    }

    /// One step after the caller's `poll` returned: fires due timers (if any) and
    /// drains the core (opens and closes sockets, writes, collects events).
    pub fn poll(&mut self, registry: &Registry) {
        let now = Instant::now();
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        self.expire_connects(registry, now);
        self.drain(registry);
    }

    fn socket_ready(&mut self, registry: &Registry, conn: ConnId, event: &MioEvent) {
        let Some(sock) = self.socks.get_mut(&conn) else {
            return;
        };
        if sock.connecting.is_some() {
            match sock.check_connected() {
                ConnectState::Pending => return,
                ConnectState::Failed(e) => return self.connect_failed(registry, conn, e),
                ConnectState::Done => {
                    if let Err(e) = sock.flush(registry) {
                        return self.fail(registry, conn, &e.to_string());
                    }
                    self.core.handle_wall_clock(wall_clock());
                    self.core.handle_connected(Instant::now(), conn);
                }
            }
        }
        if event.is_error() {
            // Only the socket's own error counts: the event may be a stale one of the
            // token's previous socket.
            let error = self.socks.get(&conn).map(|s| s.stream.take_error());
            if let Some(Ok(Some(e)) | Err(e)) = error {
                return self.fail(registry, conn, &e.to_string());
            }
        }
        if event.is_readable() || event.is_read_closed() {
            let Some(sock) = self.socks.get_mut(&conn) else {
                return;
            };
            let core = &mut self.core;
            let result = sock.read_all(&mut self.read_buf, |data| {
                core.handle_received(Instant::now(), conn, data);
            });
            if let Err(cause) = result {
                return self.fail(registry, conn, &cause);
            }
        }
        if event.is_writable() {
            if let Some(Err(e)) = self.socks.get_mut(&conn).map(|s| s.flush(registry)) {
                self.fail(registry, conn, &e.to_string());
            }
        }
    }

    /// The drain order of the core: socket commands, transmits, events; again while
    /// transmits or failures queued new socket commands.
    fn drain(&mut self, registry: &Registry) {
        self.dirty = false;
        loop {
            while let Some(cmd) = self.core.poll_io() {
                match cmd {
                    IoCommand::Connect { conn, host, port } => {
                        self.connect(registry, conn, &host, port);
                    }
                    IoCommand::Close { conn } => self.close(registry, conn),
                    _ => {}
                }
            }
            let failed = self.transmit(registry);
            while let Some(event) = self.core.poll_event() {
                kafka_driver::answer_token_request(&mut self.core, &event);
                match event {
                    Event::OperationDone(raw) => self.completed.push_back(raw),
                    other => {
                        if self.events.len() == MAX_EVENTS {
                            self.events.pop_front();
                        }
                        self.events.push_back(other);
                    }
                }
            }
            // A failed write may have moved requests to sockets already visited.
            if !failed && !self.core.poll_io_pending() {
                break;
            }
        }
    }

    /// Pulls bytes from the core for every connected socket whose previous bytes are
    /// written (the core keeps the rest: backpressure), and writes them. Returns whether
    /// a socket failed.
    fn transmit(&mut self, registry: &Registry) -> bool {
        let mut failed = false;
        let now = Instant::now();
        let conns: Vec<ConnId> = self.core.connections().collect();
        for conn in conns {
            let Some(sock) = self.socks.get_mut(&conn) else {
                continue;
            };
            if sock.connecting.is_some() || !sock.flushed() {
                continue;
            }
            if self.core.poll_transmit(now, conn, sock.out_buf()) == 0 {
                continue;
            }
            if let Err(e) = sock.flush(registry) {
                self.fail(registry, conn, &e.to_string());
                failed = true;
            }
        }
        failed
    }

    /// Resolves (blocking for host names) and starts a non-blocking connect.
    fn connect(&mut self, registry: &Registry, conn: ConnId, host: &str, port: u16) {
        let addrs = match (host, port).to_socket_addrs() {
            Ok(addrs) => addrs.collect::<Vec<_>>(),
            Err(e) => return self.report_failure(conn, &ConnectError::Resolve(host.into(), e)),
        };
        self.connect_to(registry, conn, host, addrs);
    }

    /// Tries the addresses in order until one starts connecting.
    fn connect_to(
        &mut self,
        registry: &Registry,
        conn: ConnId,
        host: &str,
        mut addrs: Vec<SocketAddr>,
    ) {
        if addrs.is_empty() {
            let e = ConnectError::Resolve(host.into(), std::io::ErrorKind::NotFound.into());
            return self.report_failure(conn, &e);
        }
        let token = match self.tokens.take() {
            Ok(t) => t,
            Err(e) => return self.report_failure(conn, &e),
        };
        let deadline = Instant::now() + self.setup_timeout;
        let mut last = None;
        while !addrs.is_empty() {
            let addr = addrs.remove(0);
            match Sock::connect(registry, token, addr, std::mem::take(&mut addrs), deadline) {
                Ok(sock) => {
                    self.by_token.insert(token, conn);
                    self.socks.insert(conn, sock);
                    return;
                }
                Err(e) => last = Some(e),
            }
        }
        self.tokens.give_back(token);
        let e = last.unwrap_or(ConnectError::Resolve(
            host.into(),
            std::io::ErrorKind::NotFound.into(),
        ));
        self.report_failure(conn, &e);
    }

    /// A connect failed: try the next resolved address, or report the failure.
    fn connect_failed(&mut self, registry: &Registry, conn: ConnId, error: ConnectError) {
        let Some(mut sock) = self.remove(conn) else {
            return;
        };
        let fallback = std::mem::take(&mut sock.fallback);
        sock.close(registry);
        if fallback.is_empty() {
            self.report_failure(conn, &error);
        } else {
            self.connect_to(registry, conn, "", fallback);
        }
    }

    /// Fails sockets whose connect has run past `socket.connection.setup.timeout.ms`.
    fn expire_connects(&mut self, registry: &Registry, now: Instant) {
        let expired: Vec<ConnId> = self
            .socks
            .iter()
            .filter(|(_, s)| s.connecting.is_some_and(|d| d <= now))
            .map(|(c, _)| *c)
            .collect();
        for conn in expired {
            let e = ConnectError::SetupTimeout(self.setup_timeout);
            self.connect_failed(registry, conn, e);
        }
    }

    fn report_failure(&mut self, conn: ConnId, error: &ConnectError) {
        self.core
            .handle_closed(Instant::now(), conn, &error.to_string());
    }

    /// Drops a socket after an I/O failure and tells the core.
    fn fail(&mut self, registry: &Registry, conn: ConnId, cause: &str) {
        if let Some(sock) = self.remove(conn) {
            sock.close(registry);
        }
        self.core.handle_closed(Instant::now(), conn, cause);
    }

    /// The core closed `conn`.
    fn close(&mut self, registry: &Registry, conn: ConnId) {
        if let Some(sock) = self.remove(conn) {
            sock.close(registry);
        }
    }

    fn remove(&mut self, conn: ConnId) -> Option<Sock> {
        let sock = self.socks.remove(&conn)?;
        self.by_token.remove(&sock.token);
        self.tokens.give_back(sock.token);
        Some(sock)
    }

    /// Deregisters every socket from `registry` (they also close when the driver drops,
    /// but mio wants registered sources deregistered first).
    pub fn shutdown(&mut self, registry: &Registry) {
        let conns: Vec<ConnId> = self.socks.keys().copied().collect();
        for conn in conns {
            self.close(registry, conn);
        }
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("core", &self.core)
            .field("tokens", &self.tokens)
            .field("sockets", &self.socks.len())
            .finish_non_exhaustive()
    }
}
