//! [`Hub`]: the core, one [`Outlet`] per socket, and the one drain loop every adapter runs.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::client::{Client, ConnId, Event, IoCommand, OpRef};
use kafka_core::conn::{ConnError, SocketError};
use kafka_core::consumer::{Consumer, ConsumerMetrics};
use kafka_core::group::GroupConsumer;
use kafka_core::producer::{Producer, ProducerMetrics};

use crate::consumer::{ConsumerCore, ConsumerKey, ConsumerSide, Mailbox};
use crate::group::{GroupCore, GroupMailbox};
use crate::producer::{Outbox, ProducerCore, ProducerKey};
use crate::wall_clock;

/// What a socket's task (or thread, or readiness handler) tells its driver.
#[derive(Debug)]
#[non_exhaustive]
pub enum SocketReport {
    /// The socket connected.
    Connected(ConnId),
    /// Bytes arrived (a part of the socket's [`ReadBuf`](crate::ReadBuf), not a copy).
    Data(ConnId, Bytes),
    /// The socket drained bytes after its outlet had said it was full: pull again.
    Writable(ConnId),
    /// The socket failed to connect or closed, and why.
    Closed(ConnId, SocketError),
}

/// Where the bytes for one socket go: a pipe to the socket's task or thread, or the
/// socket itself. The drain loop pulls from the core only while the outlet is
/// [`writable`](Outlet::writable), so a socket that cannot take bytes leaves them in the
/// core (per-broker back-pressure) instead of in an adapter queue.
pub trait Outlet {
    /// Whether the socket can take more bytes now. An outlet that answers `false` must
    /// make its adapter report [`SocketReport::Writable`] (or otherwise drain again) once
    /// it can.
    fn writable(&mut self) -> bool;

    /// Hands over bytes to write (only called while writable); `Err` (with why) when the
    /// socket is gone.
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), SocketError>;

    /// Bytes handed over and not yet written (for [`HubStats`] and tests).
    fn queued(&self) -> usize;

    /// An empty buffer for the next [`send`](Self::send): best one whose bytes were
    /// written, with its capacity (the core swaps its buffer into it instead of copying).
    fn spare(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// A buffer from [`spare`](Self::spare) that got nothing to send.
    fn unused(&mut self, buf: Vec<u8>) {
        drop(buf);
    }

    /// Called when the core closes the socket, before the outlet is dropped.
    fn close(&mut self) {}
}

/// What an adapter tells its user about the client as a whole (operation outputs never
/// go this way: they go to the operation's caller).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A connection to a broker failed; the core backs off and retries.
    ConnectionFailed {
        /// The broker's node id (negative for bootstrap servers).
        node: i32,
        /// Why.
        error: ConnError,
    },
    /// The cached cluster metadata changed.
    MetadataUpdated,
}

/// A user's hook for [`Notice`]s. It runs on the adapter's driver (task or thread), so
/// it must be quick and must not block: forward to a channel of your choice.
pub type OnNotice = Arc<dyn Fn(&Notice) + Send + Sync>;

/// Counters of the hub's outbound side (for tests and monitoring).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubStats {
    /// Sockets with an outlet now.
    pub sockets: usize,
    /// Bytes queued in all outlets now.
    pub queued: usize,
    /// The most bytes one outlet has held at once since the hub was made. The drain loop
    /// keeps it at most [`OUTBOUND_HIGH_WATER`](crate::OUTBOUND_HIGH_WATER) (for pipes;
    /// what the outlet calls full) plus one transmit.
    pub peak_queued_per_socket: usize,
    /// The largest single `poll_transmit` handed to an outlet (the core's batch: at most
    /// `max.in.flight.requests.per.connection` requests).
    pub largest_transmit: usize,
    /// Times a producer's staging queue woke the driver for its records
    /// ([`Hub::pump_producer`]).
    pub producer_wakes: u64,
    /// Times the driver took a producer's records at a deadline of its own (the planned
    /// take of the wake rule, or `max.block.ms` of a record waiting for metadata).
    pub producer_timed_pumps: u64,
}

/// The core and the outlets of its sockets.
pub struct Hub<O> {
    /// The sans-IO client.
    pub core: Client,
    sockets: HashMap<ConnId, O>,
    /// Core events kept for [`Hub::poll_event`] (only with [`Hub::keep_events`]).
    events: VecDeque<Event>,
    keep_events: bool,
    on_notice: Option<OnNotice>,
    peak_queued: usize,
    largest_transmit: usize,
    producer_wakes: u64,
    producer_timed_pumps: u64,
    /// The running producers fed from outboxes (their `Notify` events go to them).
    producers: Vec<ProducerCore>,
    /// Final counters of producers that finished.
    finished_producers: HashMap<ProducerKey, ProducerMetrics>,
    /// The running consumers (assign mode and groups) feeding mailboxes (their `Notify`
    /// events go to them).
    consumers: Vec<Box<dyn ConsumerSide>>,
    /// Final counters of consumers that finished.
    finished_consumers: HashMap<ConsumerKey, ConsumerMetrics>,
    /// Wake-ups for machines the application drives with commands of its own (the
    /// share consumer): called on their `Notify` and `OperationDone`.
    watchers: HashMap<OpRef, Watcher>,
}

/// A wake-up hook for one machine ([`Hub::watch`]); `true` when the machine finished.
pub type Watcher = Arc<dyn Fn(bool) + Send + Sync>;

impl<O: Outlet> Hub<O> {
    /// A hub around `core`, with no sockets yet.
    pub fn new(core: Client) -> Self {
        Hub {
            core,
            sockets: HashMap::new(),
            events: VecDeque::new(),
            keep_events: false,
            on_notice: None,
            peak_queued: 0,
            largest_transmit: 0,
            producer_wakes: 0,
            producer_timed_pumps: 0,
            producers: Vec::new(),
            finished_producers: HashMap::new(),
            consumers: Vec::new(),
            finished_consumers: HashMap::new(),
            watchers: HashMap::new(),
        }
    }

    /// Calls `watcher` on every `Notify` of the machine `op` and once when it finishes
    /// (with `true`; the watcher is then dropped). For machines the application drives
    /// by its own commands.
    pub fn watch(&mut self, op: OpRef, watcher: Watcher) {
        self.watchers.insert(op, watcher);
    }

    /// Keeps every core event for [`Hub::poll_event`] (for adapters whose user reads
    /// events, as the mio driver's does); otherwise events become [`Notice`]s and logs.
    pub fn keep_events(&mut self, keep: bool) {
        self.keep_events = keep;
    }

    /// Sets (or clears) the hook that receives [`Notice`]s.
    pub fn on_notice(&mut self, hook: Option<OnNotice>) {
        self.on_notice = hook;
    }

    /// Drains the core until it has nothing more to do right now: opens sockets with
    /// `open(conn, host, port, setup_timeout)` (the new socket's outlet, or why it could
    /// not be opened; each resolved address gets `setup_timeout` to connect, the core's
    /// per-attempt value, see [`IoCommand::Connect`]), closes the ones
    /// the core is done with, hands pending bytes to every *writable* outlet, and routes
    /// events (logs, the [`Notice`] hook, and the event queue if kept).
    pub fn flush(
        &mut self,
        mut open: impl FnMut(ConnId, String, u16, Duration) -> Result<O, SocketError>,
    ) {
        loop {
            let mut progressed = false;
            self.core.handle_wall_clock(wall_clock());
            while let Some(cmd) = self.core.poll_io() {
                progressed = true;
                match cmd {
                    IoCommand::Connect {
                        conn,
                        host,
                        port,
                        setup_timeout,
                    } => match open(conn, host, port, setup_timeout) {
                        Ok(outlet) => {
                            self.sockets.insert(conn, outlet);
                        }
                        Err(cause) => self.core.handle_closed(Instant::now(), conn, cause),
                    },
                    IoCommand::Close { conn } => self.close(conn),
                    _ => {}
                }
            }
            let now = Instant::now();
            let conns: Vec<ConnId> = self.core.connections().collect();
            for conn in conns {
                let mut buf = match self.sockets.get_mut(&conn) {
                    Some(outlet) => {
                        if !outlet.writable() {
                            continue;
                        }
                        outlet.spare()
                    }
                    None => Vec::new(),
                };
                if self.core.poll_transmit(now, conn, &mut buf) == 0 {
                    if let Some(outlet) = self.sockets.get_mut(&conn) {
                        outlet.unused(buf);
                    }
                    continue;
                }
                progressed = true;
                self.largest_transmit = self.largest_transmit.max(buf.len());
                let sent = match self.sockets.get_mut(&conn) {
                    Some(outlet) => outlet.send(buf).map(|()| outlet.queued()),
                    None => Err(SocketError::Io("socket gone".into())),
                };
                match sent {
                    Ok(queued) => self.peak_queued = self.peak_queued.max(queued),
                    Err(cause) => {
                        self.close(conn);
                        self.core.handle_closed(now, conn, cause);
                    }
                }
            }
            while let Some(event) = self.core.poll_event() {
                progressed |= self.route_event(event);
            }
            if !progressed && !self.core.poll_io_pending() {
                return;
            }
        }
    }

    /// Applies what a socket reported (the caller drains with [`Hub::flush`] after).
    pub fn report(&mut self, report: SocketReport) {
        match report {
            SocketReport::Connected(conn) => self.connected(conn),
            SocketReport::Data(conn, data) => self.received(conn, &data),
            SocketReport::Writable(_) => {}
            SocketReport::Closed(conn, cause) => self.closed(conn, cause),
        }
    }

    /// The socket of `conn` connected: tells the core the wall clock (certificate
    /// validity), then the connection.
    pub fn connected(&mut self, conn: ConnId) {
        self.core.handle_wall_clock(wall_clock());
        self.core.handle_connected(Instant::now(), conn);
    }

    /// Bytes arrived on `conn`.
    pub fn received(&mut self, conn: ConnId, data: &[u8]) {
        self.core.handle_received(Instant::now(), conn, data);
    }

    /// The socket of `conn` failed or closed: drops its outlet and tells the core.
    pub fn closed(&mut self, conn: ConnId, cause: SocketError) {
        self.sockets.remove(&conn);
        self.core.handle_closed(Instant::now(), conn, cause);
    }

    /// The next core event, if [`Hub::keep_events`] is on.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The outlet of `conn`.
    pub fn outlet(&self, conn: ConnId) -> Option<&O> {
        self.sockets.get(&conn)
    }

    /// The outlet of `conn`, to change.
    pub fn outlet_mut(&mut self, conn: ConnId) -> Option<&mut O> {
        self.sockets.get_mut(&conn)
    }

    /// Takes the outlet of `conn` out of the hub (e.g. to replace a socket whose
    /// connect failed with one to the host's next address).
    pub fn take_outlet(&mut self, conn: ConnId) -> Option<O> {
        self.sockets.remove(&conn)
    }

    /// Puts an outlet for `conn` (back) into the hub.
    pub fn insert_outlet(&mut self, conn: ConnId, outlet: O) {
        self.sockets.insert(conn, outlet);
    }

    /// Every socket and its outlet.
    pub fn outlets(&self) -> impl Iterator<Item = (ConnId, &O)> + '_ {
        self.sockets.iter().map(|(c, o)| (*c, o))
    }

    /// The outbound counters.
    pub fn stats(&self) -> HubStats {
        HubStats {
            sockets: self.sockets.len(),
            queued: self.sockets.values().map(Outlet::queued).sum(),
            peak_queued_per_socket: self.peak_queued,
            largest_transmit: self.largest_transmit,
            producer_wakes: self.producer_wakes,
            producer_timed_pumps: self.producer_timed_pumps,
        }
    }

    /// Starts the core producer `producer` for the records staged in `outbox`; from now
    /// on its `Event::Notify` and `Event::OperationDone` go to its [`ProducerCore`]
    /// (not to [`Hub::poll_event`]).
    pub fn start_producer(&mut self, now: Instant, producer: Producer, outbox: &Outbox) {
        let core = ProducerCore::start(&mut self.core, now, producer, outbox);
        self.producers.push(core);
        // Records may have been staged before the start ran.
        self.producer(outbox.key(), |p, core| p.pump(core, now));
    }

    /// Runs `f` on the producer `key` and the core; `None` if it is not running (then
    /// its final counters are in [`Hub::finished_producer`]).
    pub fn producer<T>(
        &mut self,
        key: ProducerKey,
        f: impl FnOnce(&mut ProducerCore, &mut Client) -> T,
    ) -> Option<T> {
        let i = self.producers.iter().position(|p| p.key() == key)?;
        let out = f(&mut self.producers[i], &mut self.core);
        self.retire_finished();
        Some(out)
    }

    /// The final counters of the producer `key`, once it finished.
    pub fn finished_producer(&self, key: ProducerKey) -> Option<&ProducerMetrics> {
        self.finished_producers.get(&key)
    }

    /// The producer `key` has new staged records (its outbox's wake).
    pub fn pump_producer(&mut self, key: ProducerKey, now: Instant) {
        self.producer_wakes += 1;
        self.producer(key, |p, core| p.pump(core, now));
    }

    /// Whether producers or consumers are still running (a driver keeps going until
    /// they finish, even when every handle is gone).
    pub fn producers_running(&self) -> bool {
        !self.producers.is_empty() || !self.consumers.is_empty()
    }

    /// Starts the core consumer `consumer` for the application side `mailbox`; from now
    /// on its `Event::Notify` and `Event::OperationDone` go to its [`ConsumerCore`].
    pub fn start_consumer(&mut self, now: Instant, consumer: Consumer, mailbox: &Mailbox) {
        let core = ConsumerCore::start(&mut self.core, now, consumer, mailbox);
        self.consumers.push(Box::new(core));
    }

    /// Starts the core group consumer `group` for the application side `mailbox`; from
    /// now on its `Event::Notify` and `Event::OperationDone` go to its [`GroupCore`].
    pub fn start_group(&mut self, now: Instant, group: GroupConsumer, mailbox: &GroupMailbox) {
        let core = GroupCore::start(&mut self.core, now, group, mailbox);
        self.consumers.push(Box::new(core));
    }

    /// Runs `f` on the consumer `key` (either kind) and the core; `None` if it is not
    /// running (then its final counters are in [`Hub::finished_consumer`]).
    pub(crate) fn consumer<T>(
        &mut self,
        key: ConsumerKey,
        f: impl FnOnce(&mut dyn ConsumerSide, &mut Client) -> T,
    ) -> Option<T> {
        let i = self.consumers.iter().position(|c| c.key() == key)?;
        let out = f(&mut *self.consumers[i], &mut self.core);
        self.retire_finished();
        Some(out)
    }

    /// Runs `f` on the group consumer `key` and the core; `None` if it is not running.
    pub fn group<T>(
        &mut self,
        key: ConsumerKey,
        f: impl FnOnce(&mut GroupCore, &mut Client) -> T,
    ) -> Option<T> {
        let i = self.consumers.iter().position(|c| c.key() == key)?;
        let out = f(self.consumers[i].group()?, &mut self.core);
        self.retire_finished();
        Some(out)
    }

    /// The final counters of the consumer `key`, once it finished.
    pub fn finished_consumer(&self, key: ConsumerKey) -> Option<&ConsumerMetrics> {
        self.finished_consumers.get(&key)
    }

    /// A taker drained the consumer `key`'s queue below its low-water mark.
    pub fn pump_consumer(&mut self, key: ConsumerKey, now: Instant) {
        self.consumer(key, |c, core| c.pump(core, now));
    }

    /// The earliest of the core's deadline and the producers' (a planned take of staged
    /// records; a staged record the core keeps refusing fails at `max.block.ms`).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let producers = self.producers.iter().filter_map(ProducerCore::deadline);
        self.core.poll_timeout().into_iter().chain(producers).min()
    }

    /// Fires the producers' due deadlines, then the core's due timers: staged records
    /// reach the core before the batches they join are sealed by `linger.ms`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for p in &mut self.producers {
            if p.deadline().is_some_and(|d| d <= now) {
                self.producer_timed_pumps += 1;
                p.pump(&mut self.core, now);
            }
        }
        self.core.handle_timeout(now);
        self.retire_finished();
    }

    /// Closes every socket (on shutdown).
    pub fn close_all(&mut self) {
        for (_, mut outlet) in self.sockets.drain() {
            outlet.close();
        }
    }

    fn close(&mut self, conn: ConnId) {
        if let Some(mut outlet) = self.sockets.remove(&conn) {
            outlet.close();
        }
    }

    fn retire_finished(&mut self) {
        let finished = &mut self.finished_producers;
        self.producers.retain_mut(|p| {
            let done = p.finished_metrics();
            if let Some(m) = done {
                finished.insert(p.key(), m);
            }
            !p.is_finished()
        });
        let finished = &mut self.finished_consumers;
        self.consumers.retain(|c| match c.finished_metrics() {
            Some(m) => {
                finished.insert(c.key(), m);
                false
            }
            None => true,
        });
    }

    /// Routes one event; `true` if a producer acted on it (it may have made work).
    fn route_event(&mut self, event: Event) -> bool {
        match event {
            Event::Notify(op) | Event::OperationDone(op) => {
                if let Some(i) = self.producers.iter().position(|p| p.is(op)) {
                    let now = Instant::now();
                    let p = &mut self.producers[i];
                    match event {
                        Event::Notify(_) => p.pump(&mut self.core, now),
                        _ => p.finish(&mut self.core),
                    }
                    self.retire_finished();
                    return true;
                }
                if let Some(w) = self.watchers.get(&op) {
                    let done = matches!(event, Event::OperationDone(_));
                    w(done);
                    if done {
                        self.watchers.remove(&op);
                    }
                    return false;
                }
                if let Some(i) = self.consumers.iter().position(|c| c.is(op)) {
                    let now = Instant::now();
                    let c = &mut self.consumers[i];
                    match event {
                        Event::Notify(_) => c.pump(&mut self.core, now),
                        _ => c.finish(&mut self.core),
                    }
                    self.retire_finished();
                    return true;
                }
            }
            _ => {}
        }
        crate::answer_token_request(&mut self.core, &event);
        let notice = match &event {
            // The core logs the failure itself (warn, with the address); this is the
            // event the adapter hands on.
            Event::ConnectionFailed { node, error } => {
                #[cfg(feature = "tracing")]
                tracing::debug!(node = *node, cause = %error, "kafka event: broker connection failed");
                Some(Notice::ConnectionFailed {
                    node: *node,
                    error: error.clone(),
                })
            }
            Event::MetadataUpdated => {
                #[cfg(feature = "tracing")]
                tracing::debug!("kafka event: cluster metadata updated");
                Some(Notice::MetadataUpdated)
            }
            Event::OAuthTokenNeeded => {
                #[cfg(feature = "tracing")]
                tracing::debug!("kafka event: OAUTHBEARER token requested from the provider");
                None
            }
            Event::OperationDone(_op) => {
                #[cfg(feature = "tracing")]
                tracing::trace!(op = ?_op, "kafka event: operation done");
                None
            }
            _ => None,
        };
        if let (Some(notice), Some(hook)) = (notice, &self.on_notice) {
            hook(&notice);
        }
        if self.keep_events {
            self.events.push_back(event);
        }
        false
    }
}

impl<O> std::fmt::Debug for Hub<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("core", &self.core)
            .field("sockets", &self.sockets.len())
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}
