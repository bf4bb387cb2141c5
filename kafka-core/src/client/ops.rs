//! Machines: state machines the client runs and routes for — one-shot admin calls and
//! long-lived machines (producer, consumer, group member, transaction manager) alike.
//!
//! The owner rule: every request a machine sends through its [`OpContext`] is owned by
//! it. Its completion wakes only that machine (never the application, never another
//! machine); its timers wake only it; when it finishes or is cancelled every request it
//! still owns is withdrawn or its late response dropped. A machine is polled only when it
//! has a reason: started, one of its requests completed, one of its timers fired, the
//! application gave it a command, or a [`Notice`] it asked for (connection closed,
//! metadata updated) arrived. Nothing scans idle machines.

use std::any::Any;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use super::timers::Timer;
use super::{Client, Event, Owner, RequestId, RequestOptions};
use crate::cluster::{Metadata, Route};
use crate::config::ClientConfig;
use crate::conn::{ConnError, RequestError};
use crate::protocol::Request;

/// Something outside a machine's own requests that it may react to.
#[derive(Debug)]
#[non_exhaustive]
pub enum Notice<'a> {
    /// A connection to a broker failed or closed (a fetch session on it is gone).
    ConnectionClosed {
        /// The broker's node id (negative for bootstrap servers).
        node: i32,
        /// Why.
        error: &'a ConnError,
    },
    /// Cluster metadata changed.
    MetadataUpdated,
}

/// A state machine run by the [`Client`]: an admin call that ends with one output, or a
/// long-lived machine that takes commands (see [`Client::command`]) and ends on close.
///
/// `poll` is called once right after [`Client::start_op`] and then whenever the machine
/// has a reason (see the module docs); it must tolerate being polled with nothing new.
pub trait Operation: Send + 'static {
    /// What the operation finishes with.
    type Output: Send + 'static;

    /// Advances the machine; `Some` when finished (it is not polled again).
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output>;

    /// Told about connection and metadata changes; returns whether to be polled now.
    /// The default asks to be polled on metadata updates only.
    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        matches!(notice, Notice::MetadataUpdated)
    }
}

/// Untyped handle of a running machine, as carried by [`Event::OperationDone`] and
/// [`Event::Notify`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpRef(pub(crate) u64);

/// Typed handle of a running machine, for [`Client::take_op_output`] and
/// [`Client::command`].
pub struct OpId<O> {
    raw: u64,
    _output: PhantomData<fn() -> O>,
}

impl<O> OpId<O> {
    /// The untyped handle (compare with [`Event::OperationDone`]).
    pub fn untyped(&self) -> OpRef {
        OpRef(self.raw)
    }
}

impl<O> PartialEq<OpRef> for OpId<O> {
    fn eq(&self, other: &OpRef) -> bool {
        self.raw == other.0
    }
}

impl<O> Clone for OpId<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for OpId<O> {}

impl<O> std::fmt::Debug for OpId<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpId({})", self.raw)
    }
}

/// What a machine may do while it runs: send requests it owns, read their responses and
/// the cached metadata, arm its timer, and tell the application it has news.
pub struct OpContext<'a> {
    client: &'a mut Client,
    op: u64,
    now: Instant,
    wake: Option<Instant>,
    notify: bool,
    owned: &'a mut HashSet<u64>,
}

impl OpContext<'_> {
    /// The current instant, as given to the client.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Asks to be polled again no later than `at` (the earliest of the calls made during
    /// one poll wins; each poll re-arms it, so a machine keeps only its next deadline).
    pub fn wake_at(&mut self, at: Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }

    /// Tells the application this machine has something for it (one [`Event::Notify`]
    /// until the application next gives it a command).
    pub fn notify(&mut self) {
        self.notify = true;
    }

    /// The client's configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.client.config
    }

    /// The cached cluster metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.client.metadata
    }

    /// Sends a request owned by this machine (see [`Client::send`]).
    pub fn send<R>(&mut self, route: Route, request: R) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.send_with(route, request, RequestOptions::default())
    }

    /// Sends a request at a pinned version.
    pub fn send_version<R>(&mut self, route: Route, request: R, version: i16) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.send_with(route, request, RequestOptions::default().version(version))
    }

    /// Sends a request with its own shape (timeout, no response, no router retries).
    pub fn send_with<R>(&mut self, route: Route, request: R, opts: RequestOptions) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        let raw = self.client.next_request_id();
        self.owned.insert(raw);
        self.client.submit_as(
            self.now,
            raw,
            route,
            std::sync::Arc::new(request),
            opts,
            Owner::Op(self.op),
        );
        RequestId::new(raw)
    }

    /// The outcome of one of this machine's requests, once.
    pub fn take_response<R: Request + 'static>(
        &mut self,
        id: RequestId<R>,
    ) -> Option<Result<R::Response, RequestError>> {
        if !self.owned.contains(&id.raw) {
            return None;
        }
        let out = self.client.take_done(id)?;
        self.owned.remove(&id.raw);
        Some(out)
    }

    /// Whether one of this machine's requests has finished (its outcome is waiting).
    pub fn is_done<R>(&self, id: RequestId<R>) -> bool {
        self.client.done.contains_key(&id.raw)
    }

    /// Why one of this machine's requests is still pending (the last failure the router
    /// retried past, a connection failure since it was sent, or why it waits for a
    /// route); `None` once it finished or when nothing went wrong yet.
    pub fn cause_of<R>(&self, id: RequestId<R>) -> Option<super::Cause> {
        if !self.owned.contains(&id.raw) {
            return None;
        }
        self.client.request_cause(id.raw)
    }

    /// The last connection failure at or after `since` (for a machine that waits on
    /// metadata rather than on a request of its own).
    pub fn last_failure_since(&self, since: Instant) -> Option<super::Cause> {
        self.client.last_failure_since(since)
    }

    /// The error that ended every waiting call (a fatal connection failure such as an
    /// authentication failure, or the bootstrap rule) at or after `since`: a machine that
    /// waits on metadata should end with it too.
    pub fn fatal_since(&self, since: Instant) -> Option<RequestError> {
        self.client.fatal_since(since)
    }

    /// Gives up on a request: withdrawn if not yet written, else its response is dropped.
    pub fn discard<R>(&mut self, id: RequestId<R>) {
        if self.owned.remove(&id.raw) {
            self.client.withdraw(id.raw);
        }
    }

    /// Forgets a partition leader and refreshes metadata (see [`Client::invalidate_leader`]).
    pub fn invalidate_leader(&mut self, topic: &str, partition: i32) {
        self.client.invalidate_leader(self.now, topic, partition);
    }

    /// Applies a KIP-951 leader hint (see [`Metadata::apply_leader_hint`]); without
    /// one that applies, forgets the leader and refreshes metadata instead.
    pub fn leader_hint(
        &mut self,
        topic: &str,
        partition: i32,
        leader: i32,
        epoch: i32,
        endpoint: Option<crate::cluster::BrokerInfo>,
    ) -> bool {
        let applied = self
            .client
            .metadata
            .apply_leader_hint(topic, partition, leader, epoch, endpoint);
        if !applied {
            self.invalidate_leader(topic, partition);
        }
        applied
    }

    /// Forgets a coordinator (see [`Client::invalidate_coordinator`]).
    pub fn invalidate_coordinator(&mut self, key: &str) {
        self.client.invalidate_coordinator(key);
    }

    /// Asks for a metadata refresh including `topics`; the machine hears of it through
    /// [`Notice::MetadataUpdated`].
    pub fn request_metadata(&mut self, topics: impl IntoIterator<Item = String>) {
        self.client.request_metadata(self.now, topics);
    }

    /// While `on`, this machine wants every topic's metadata (a pattern subscription):
    /// refreshes ask for all topics every `metadata.max.age.ms`. It ends with `false` or
    /// when the machine finishes; then topics nothing else wants leave the cache.
    pub fn want_all_topics(&mut self, on: bool) {
        self.client.want_all_topics(self.now, self.op, on);
    }

    /// Lets this client's metadata requests auto-create topics on brokers that allow
    /// it (`auto.create.topics.enable`), as Java's producer does.
    pub fn allow_topic_auto_creation(&mut self) {
        self.client.auto_create_topics = true;
    }

    /// Keeps a topic this machine routes to by itself (to its leader's node) in the
    /// metadata: without it the topic expires after `metadata.max.idle.ms`.
    pub fn keep_topic(&mut self, topic: &str) {
        self.client.touch_topic(self.now, topic);
    }

    /// The cached coordinator of a group (`key_type` 0) or transactional id (1), if known.
    pub fn coordinator(&self, key_type: i8, key: &str) -> Option<i32> {
        self.client
            .coordinators
            .get(&(key_type, key.to_string()))
            .copied()
    }

    /// The cluster's finalized max level of feature `name` (e.g. `transaction.version`),
    /// from the open connection whose ApiVersions named the newest feature epoch;
    /// `None` if no connection is open or the feature is not finalized.
    pub fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.client.finalized_feature(name)
    }

    /// Whether broker `node` is known to support `api` at `version` or newer: `None` when
    /// no connection to it is open (its versions are unknown).
    pub fn broker_supports(
        &self,
        node: i32,
        api: crate::protocol::ApiKey,
        version: i16,
    ) -> Option<bool> {
        let table = self.client.broker_versions(node)?;
        Some(table.broker_range(api).is_some_and(|r| r.max >= version))
    }

    /// The retry backoff for the `attempt`-th retry (exponential with jitter, from
    /// `retry.backoff.ms` and `retry.backoff.max.ms`).
    pub fn retry_backoff(&mut self, attempt: u32) -> Duration {
        self.client.retry_delay(attempt)
    }

    /// A seed for the machine's own pseudo-random choices (partitioner stickiness and the
    /// like): from the client's seed and the machine's id, so a replayed run with the same
    /// client seed makes the same choices.
    pub fn seed(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.client.seed[8..16]);
        u64::from_be_bytes(b) ^ self.op.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// The wall clock now, in ms since the Unix epoch (from what the adapter last gave
    /// the client, advanced by the `Instant`s since).
    pub fn wall_clock_ms(&self) -> i64 {
        self.client.wall_clock_ms(self.now)
    }

    /// Requests this machine owns that have not been taken yet.
    pub fn owned_requests(&self) -> usize {
        self.owned.len()
    }
}

/// How a finished operation hands its output over.
enum Finished {
    /// Given to the caller's callback.
    Delivered,
    /// Kept for [`Client::take_op_output`].
    Kept(Box<dyn Any + Send>),
}

trait ErasedOp: Send {
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Finished>;
    fn notice(&mut self, notice: &Notice<'_>) -> bool;
    fn machine(&mut self) -> &mut dyn Any;
}

struct Kept<O>(O);

impl<O: Operation> ErasedOp for Kept<O> {
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Finished> {
        let out = self.0.poll(cx)?;
        Some(Finished::Kept(Box::new(out)))
    }
    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        self.0.notice(notice)
    }
    fn machine(&mut self) -> &mut dyn Any {
        &mut self.0
    }
}

struct WithCallback<O, F> {
    op: O,
    done: Option<F>,
}

impl<O, F> ErasedOp for WithCallback<O, F>
where
    O: Operation,
    F: FnOnce(O::Output) + Send + 'static,
{
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Finished> {
        let out = self.op.poll(cx)?;
        if let Some(done) = self.done.take() {
            done(out);
        }
        Some(Finished::Delivered)
    }
    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        self.op.notice(notice)
    }
    fn machine(&mut self) -> &mut dyn Any {
        &mut self.op
    }
}

/// A running machine and the requests it owns.
pub(super) struct OpSlot {
    op: Box<dyn ErasedOp>,
    owned: HashSet<u64>,
    /// An [`Event::Notify`] is out and not yet answered by a command.
    notified: bool,
    /// Everything the machine does while polled or commanded runs in it.
    span: crate::trace::OpSpan,
}

/// Polls per `run_ops` call before the rest waits for the next call (a machine that
/// keeps waking itself cannot stall the adapter).
const MAX_POLLS_PER_RUN: usize = 65_536;

impl Client {
    /// Starts a machine; its output is kept until [`Client::take_op_output`] once
    /// [`Event::OperationDone`] names it.
    pub fn start_op<O: Operation>(&mut self, now: Instant, op: O) -> OpId<O> {
        let raw = self.insert_op(now, Box::new(Kept(op)), std::any::type_name::<O>());
        OpId {
            raw,
            _output: PhantomData,
        }
    }

    /// Starts a machine whose output goes to `done` (called from inside the client, e.g.
    /// to complete an async adapter's oneshot channel).
    pub fn start_op_then<O, F>(&mut self, now: Instant, op: O, done: F) -> OpId<O>
    where
        O: Operation,
        F: FnOnce(O::Output) + Send + 'static,
    {
        let op = WithCallback {
            op,
            done: Some(done),
        };
        let raw = self.insert_op(now, Box::new(op), std::any::type_name::<O>());
        OpId {
            raw,
            _output: PhantomData,
        }
    }

    /// The output of a finished operation, once.
    pub fn take_op_output<O: Operation>(&mut self, id: OpId<O>) -> Option<O::Output> {
        let out = self.op_outputs.remove(&id.raw)?;
        out.downcast::<O::Output>().ok().map(|b| *b)
    }

    /// Gives a running machine a command: `f` gets the machine and a context (to send
    /// requests, arm timers) at once; then the machine is polled. `None` if it is not
    /// running (finished or cancelled). Answers a pending [`Event::Notify`].
    pub fn command<O: Operation, T>(
        &mut self,
        now: Instant,
        id: OpId<O>,
        f: impl FnOnce(&mut O, &mut OpContext<'_>) -> T,
    ) -> Option<T> {
        self.last_now = Some(now);
        let mut slot = self.ops.remove(&id.raw)?;
        if !slot.op.machine().is::<O>() {
            self.ops.insert(id.raw, slot);
            return None;
        }
        slot.notified = false;
        let out = {
            let Some(machine) = slot.op.machine().downcast_mut::<O>() else {
                return None; // checked above
            };
            let mut cx = OpContext {
                client: self,
                op: id.raw,
                now,
                wake: None,
                notify: false,
                owned: &mut slot.owned,
            };
            cx.client.polling_op = Some(id.raw);
            let out = slot.span.in_scope(|| f(machine, &mut cx));
            let (wake, notify) = (cx.wake, cx.notify);
            self.polling_op = None;
            if let Some(at) = wake {
                self.timers.set(Timer::Op(id.raw), Some(at));
            }
            if notify {
                self.notify_app(id.raw, &mut slot);
            }
            out
        };
        self.ops.insert(id.raw, slot);
        self.ready_ops.insert(id.raw);
        self.run_ops(now);
        Some(out)
    }

    /// Stops a machine: every request it owns is withdrawn (or, if already written, its
    /// response dropped on arrival), so none of its completions ever surfaces.
    pub fn cancel_op(&mut self, op: OpRef) {
        if let Some(slot) = self.ops.remove(&op.0) {
            self.release(op.0, slot);
        }
        self.op_outputs.remove(&op.0);
    }

    /// Number of machines still running.
    pub fn ops_running(&self) -> usize {
        self.ops.len()
    }

    fn insert_op(&mut self, now: Instant, op: Box<dyn ErasedOp>, name: &'static str) -> u64 {
        let raw = self.next_request_id();
        self.last_now = Some(now);
        self.ops.insert(
            raw,
            OpSlot {
                op,
                owned: HashSet::new(),
                notified: false,
                span: crate::trace::OpSpan::new(raw, name),
            },
        );
        self.ready_ops.insert(raw);
        self.run_ops(now);
        raw
    }

    /// Whether machine `op` is running: in `ops`, or checked out being polled or
    /// commanded right now.
    pub(super) fn op_alive(&self, op: u64) -> bool {
        self.ops.contains_key(&op) || self.polling_op == Some(op)
    }

    /// Marks the owner of a finished request ready to be polled.
    pub(super) fn wake_op(&mut self, op: u64) {
        if self.op_alive(op) {
            self.ready_ops.insert(op);
        }
    }

    /// Tells every machine about `notice`; those that ask are polled next.
    pub(super) fn notice_ops(&mut self, notice: &Notice<'_>) {
        for (raw, slot) in self.ops.iter_mut() {
            if slot.op.notice(notice) {
                self.ready_ops.insert(*raw);
            }
        }
    }

    /// Polls every machine that has a reason, until none has (bounded per call).
    pub(super) fn run_ops(&mut self, now: Instant) {
        let mut polls = 0;
        while let Some(raw) = self.ready_ops.pop_first() {
            let Some(mut slot) = self.ops.remove(&raw) else {
                continue;
            };
            polls += 1;
            let mut cx = OpContext {
                client: self,
                op: raw,
                now,
                wake: None,
                notify: false,
                owned: &mut slot.owned,
            };
            cx.client.polling_op = Some(raw);
            let finished = slot.span.in_scope(|| slot.op.poll(&mut cx));
            let (wake, notify) = (cx.wake, cx.notify);
            self.polling_op = None;
            match finished {
                None => {
                    self.timers.set(Timer::Op(raw), wake);
                    if notify {
                        self.notify_app(raw, &mut slot);
                    }
                    self.ops.insert(raw, slot);
                }
                Some(f) => {
                    if let Finished::Kept(out) = f {
                        self.op_outputs.insert(raw, out);
                    }
                    self.release(raw, slot);
                    self.events.push_back(Event::OperationDone(OpRef(raw)));
                }
            }
            if polls >= MAX_POLLS_PER_RUN {
                break;
            }
        }
    }

    /// Whether machines wait to be polled (then `poll_timeout` says "now").
    pub(super) fn ops_ready(&self) -> bool {
        !self.ready_ops.is_empty()
    }

    /// Drops what a finished or cancelled machine still owns.
    fn release(&mut self, raw: u64, slot: OpSlot) {
        self.timers.set(Timer::Op(raw), None);
        self.ready_ops.remove(&raw);
        self.drop_all_topics_want(raw);
        for id in slot.owned {
            self.withdraw(id);
        }
    }

    fn notify_app(&mut self, raw: u64, slot: &mut OpSlot) {
        if !slot.notified {
            slot.notified = true;
            self.events.push_back(Event::Notify(OpRef(raw)));
        }
    }
}
