//! [`Driver`]: the core [`Client`] plus its mio sockets, fed from the caller's loop.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::event::Event as MioEvent;
use mio::{Registry, Token};

use kafka_core::client::{Client, ConnId, Event, OpId, OpRef, Operation};
use kafka_core::config::ClientConfig;
use kafka_driver::{Hub, HubStats, OnNotice, READ_CHUNK};

use crate::socket::{ConnectState, Sock, TokenPool};
use crate::{ConnectError, Error};

/// The Kafka client inside the caller's mio loop.
///
/// It registers its sockets on the caller's [`Registry`] with tokens from the range given
/// to [`Driver::new`] only, never blocks (except for name resolution, see the crate docs)
/// and never owns the loop. Each turn of the caller's loop:
/// 1. `poll.poll(&mut events, driver.timeout())` (or the minimum with the caller's timers),
/// 2. [`Driver::handle_event`] for each event whose token the driver [`owns`](Driver::owns),
/// 3. [`Driver::poll`] (fires due timers and runs `kafka_driver`'s drain loop: sockets to
///    open or close, bytes for the sockets that can take them, events),
/// 4. [`Driver::take_output`] for the operations it waits on, and [`Driver::poll_event`]
///    until `None` (the core's events, in order, none dropped: drain them every turn).
pub struct Driver {
    hub: Hub<Sock>,
    registry: Arc<Registry>,
    tokens: TokenPool,
    by_token: HashMap<Token, ConnId>,
    /// Work was handed to the core outside a drain (`start`, `core_mut`).
    dirty: bool,
    read_buf: Vec<u8>,
}

impl Driver {
    /// Creates a driver that will register its sockets on `registry` (it keeps a clone of
    /// it) with tokens from `tokens` only (freed tokens are reused; when all are in use, a
    /// new connection fails with [`ConnectError::TokensExhausted`] and the core retries it
    /// later). Connections open on first use.
    pub fn new(
        config: ClientConfig,
        registry: &Registry,
        tokens: Range<usize>,
    ) -> Result<Driver, Error> {
        let core = kafka_driver::new_client(config)?;
        let mut hub = Hub::new(core);
        hub.keep_events(true);
        Ok(Driver {
            hub,
            registry: Arc::new(registry.try_clone().map_err(Error::Io)?),
            tokens: TokenPool::new(tokens),
            by_token: HashMap::new(),
            dirty: false,
            read_buf: vec![0; READ_CHUNK],
        })
    }

    /// The core client, for metadata and other state.
    pub fn core(&self) -> &Client {
        &self.hub.core
    }

    /// The core client, e.g. to send raw requests. Call [`Driver::poll`] before the next
    /// wait ([`Driver::timeout`] returns zero until then).
    pub fn core_mut(&mut self) -> &mut Client {
        self.dirty = true;
        &mut self.hub.core
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
    /// [`Driver::poll`]; poll [`Driver::take_output`] for its output.
    pub fn start<O: Operation>(&mut self, op: O) -> OpId<O> {
        self.dirty = true;
        self.hub.core.start_op(Instant::now(), op)
    }

    /// Starts an operation whose output goes to `done` (called inside a later
    /// [`Driver::poll`] or [`Driver::handle_event`]). Returns its id, for
    /// [`Driver::cancel`] (`id.untyped()`).
    pub fn start_then<O, F>(&mut self, op: O, done: F) -> OpId<O>
    where
        O: Operation,
        F: FnOnce(O::Output) + Send + 'static,
    {
        self.dirty = true;
        self.hub.core.start_op_then(Instant::now(), op, done)
    }

    /// Stops an operation (`OpId::untyped`); its output is never delivered and every
    /// request it owns is withdrawn.
    pub fn cancel(&mut self, op: OpRef) {
        self.dirty = true;
        self.hub.core.cancel_op(op);
    }

    /// The output of a finished operation, once.
    pub fn take_output<O: Operation>(&mut self, id: OpId<O>) -> Option<O::Output> {
        self.hub.core.take_op_output(id)
    }

    /// The next core event (connection failures, metadata updates, finished requests and
    /// operations, ...), in order. The queue is not bounded by the driver: drain it every
    /// turn. Match with a wildcard arm (`Event` is non-exhaustive).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.hub.poll_event()
    }

    /// Sets (or clears) a hook that also receives connection failures and metadata updates
    /// as [`Notice`](kafka_driver::Notice)s, inside the driver's calls.
    pub fn on_notice(&mut self, hook: Option<OnNotice>) {
        self.hub.on_notice(hook);
    }

    /// The outbound counters (bytes waiting for sockets, the most one socket has held).
    pub fn stats(&self) -> HubStats {
        self.hub.stats()
    }

    /// How long the caller's `poll` may wait before the driver has timer work; `None`
    /// when idle. Zero while work is waiting for [`Driver::poll`].
    pub fn timeout(&self) -> Option<Duration> {
        if self.dirty || self.hub.core.poll_io_pending() {
            return Some(Duration::ZERO);
        }
        let connects = self.hub.outlets().filter_map(|(_, s)| s.connecting);
        let wake = self
            .hub
            .core
            .poll_timeout()
            .into_iter()
            .chain(connects)
            .min()?;
        Some(wake.saturating_duration_since(Instant::now()))
    }

    /// Handles one readiness event of the caller's `poll`. Events whose token the driver
    /// does not own, or whose socket is gone, are ignored. `registry` must be the one
    /// given to [`Driver::new`].
    pub fn handle_event(&mut self, registry: &Registry, event: &MioEvent) {
        let _ = registry;
        let Some(&conn) = self.by_token.get(&event.token()) else {
            return;
        };
        self.socket_ready(conn, event);
        self.drain();
    }

    /// Fires the core's due timers and connect timeouts, then drains (calling it early
    /// is harmless).
    pub fn handle_timeout(&mut self, registry: &Registry) {
        let _ = registry;
        let now = Instant::now();
        self.hub.core.handle_timeout(now);
        self.expire_connects(now);
        self.drain();
    }

    /// One step after the caller's `poll` returned: fires due timers (if any) and
    /// drains the core (opens and closes sockets, writes, collects events).
    pub fn poll(&mut self, registry: &Registry) {
        let _ = registry;
        let now = Instant::now();
        if self.hub.core.poll_timeout().is_some_and(|t| t <= now) {
            self.hub.core.handle_timeout(now);
        }
        self.expire_connects(now);
        self.drain();
    }

    fn socket_ready(&mut self, conn: ConnId, event: &MioEvent) {
        let Some(sock) = self.hub.outlet_mut(conn) else {
            return;
        };
        if sock.connecting.is_some() {
            match sock.check_connected() {
                ConnectState::Pending => return,
                ConnectState::Failed(e) => return self.connect_failed(conn, e),
                ConnectState::Done => self.hub.connected(conn),
            }
        }
        if event.is_error() {
            // Only the socket's own error counts: the event may be a stale one of the
            // token's previous socket.
            let error = self.hub.outlet_mut(conn).map(|s| s.stream.take_error());
            if let Some(Ok(Some(e)) | Err(e)) = error {
                return self.hub.closed(conn, kafka_driver::socket_error(&e));
            }
        }
        if event.is_readable() || event.is_read_closed() {
            // Every read goes to the core at once: nothing piles up in the driver.
            loop {
                let Some(sock) = self.hub.outlet_mut(conn) else {
                    return;
                };
                match sock.read_once(&mut self.read_buf) {
                    Ok(Some(n)) => self.hub.received(conn, &self.read_buf[..n]),
                    Ok(None) => break,
                    Err(cause) => return self.hub.closed(conn, cause),
                }
            }
        }
        if event.is_writable() {
            // The socket drained: the drain after this pulls from the core again.
            if let Some(Err(e)) = self.hub.outlet_mut(conn).map(Sock::flush) {
                self.hub.closed(conn, kafka_driver::socket_error(&e));
            }
        }
    }

    /// `kafka_driver`'s drain loop; then the tokens of sockets it dropped are freed.
    fn drain(&mut self) {
        self.dirty = false;
        let (registry, tokens, by_token) = (&self.registry, &mut self.tokens, &mut self.by_token);
        self.hub.flush(|conn, host, port, setup| {
            let addrs = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| ConnectError::Resolve(host.clone(), e).socket_error())?
                .collect();
            let sock =
                connect_to(registry, tokens, &host, addrs, setup).map_err(|e| e.socket_error())?;
            by_token.insert(sock.token, conn);
            Ok(sock)
        });
        let hub = &self.hub;
        let tokens = &mut self.tokens;
        self.by_token.retain(|token, conn| {
            let alive = hub.outlet(*conn).is_some_and(|s| s.token == *token);
            if !alive {
                tokens.give_back(*token);
            }
            alive
        });
    }

    /// A connect failed: try the next resolved address, or report the failure.
    fn connect_failed(&mut self, conn: ConnId, error: ConnectError) {
        let Some(mut sock) = self.hub.take_outlet(conn) else {
            return;
        };
        let fallback = std::mem::take(&mut sock.fallback);
        let setup = sock.setup;
        self.by_token.remove(&sock.token);
        self.tokens.give_back(sock.token);
        drop(sock);
        let next = if fallback.is_empty() {
            Err(error)
        } else {
            connect_to(&self.registry, &mut self.tokens, "", fallback, setup)
        };
        match next {
            Ok(sock) => {
                self.by_token.insert(sock.token, conn);
                self.hub.insert_outlet(conn, sock);
            }
            Err(e) => self
                .hub
                .core
                .handle_closed(Instant::now(), conn, e.socket_error()),
        }
    }

    /// Fails sockets whose connect has run past the attempt's setup timeout.
    fn expire_connects(&mut self, now: Instant) {
        let expired: Vec<(ConnId, Duration)> = self
            .hub
            .outlets()
            .filter(|(_, s)| s.connecting.is_some_and(|d| d <= now))
            .map(|(c, s)| (c, s.setup))
            .collect();
        for (conn, setup) in expired {
            self.connect_failed(conn, ConnectError::SetupTimeout(setup));
        }
    }

    /// Deregisters every socket (they also close when the driver drops, but mio wants
    /// registered sources deregistered first).
    pub fn shutdown(&mut self, registry: &Registry) {
        let _ = registry;
        self.hub.close_all();
        self.drain();
    }
}

/// Starts a non-blocking connect to the first of `addrs` that accepts one, within `setup`
/// from now, keeping the rest as fallbacks for a later failure.
fn connect_to(
    registry: &Arc<Registry>,
    tokens: &mut TokenPool,
    host: &str,
    mut addrs: Vec<SocketAddr>,
    setup: Duration,
) -> Result<Sock, ConnectError> {
    let token = tokens.take()?;
    let mut last = None;
    while !addrs.is_empty() {
        let addr = addrs.remove(0);
        match Sock::connect(registry, token, addr, std::mem::take(&mut addrs), setup) {
            Ok(sock) => return Ok(sock),
            Err(e) => last = Some(e),
        }
    }
    tokens.give_back(token);
    Err(last.unwrap_or(ConnectError::Resolve(
        host.into(),
        std::io::ErrorKind::NotFound.into(),
    )))
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("hub", &self.hub)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}
