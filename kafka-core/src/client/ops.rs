//! Operations: multi-request state machines (admin calls, later producer and consumer
//! steps) that the client runs for the adapter. An operation sends requests through an
//! [`OpContext`], is polled again whenever anything happened (a response, a timer, a
//! closed socket), and finishes with one typed output. Adapters never see its requests.

use std::any::Any;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use super::{Client, Event, RequestId};
use crate::cluster::{Metadata, Route};
use crate::config::ClientConfig;
use crate::conn::RequestError;
use crate::protocol::Request;

/// A multi-step piece of work run by the [`Client`].
///
/// `poll` is called right after [`Client::start_op`] and then after every `handle_*` call
/// and [`Client::handle_timeout`]; it must tolerate being polled with nothing new.
pub trait Operation: Send + 'static {
    /// What the operation finishes with.
    type Output: Send + 'static;

    /// Advances the operation; `Some` when finished (it is not polled again).
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output>;
}

/// Typed handle of a running operation, for [`Client::take_op_output`].
pub struct OpId<O> {
    raw: u64,
    _output: PhantomData<fn() -> O>,
}

impl<O> OpId<O> {
    /// The id reported in [`Event::OperationDone`].
    pub fn raw(&self) -> u64 {
        self.raw
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

/// What an operation may do while it is polled: send requests, read their responses and
/// the cached metadata, and ask to be polled again at a given instant.
pub struct OpContext<'a> {
    client: &'a mut Client,
    now: Instant,
    wake: Option<Instant>,
}

impl OpContext<'_> {
    /// The current instant, as given to the client.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Asks to be polled again no later than `at` (timers for retries and deadlines).
    pub fn wake_at(&mut self, at: Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }

    /// The client's configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.client.config
    }

    /// The cached cluster metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.client.metadata
    }

    /// Sends a request (see [`Client::send`]).
    pub fn send<R>(&mut self, route: Route, request: R) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.client.send(self.now, route, request)
    }

    /// Sends a request at a pinned version (see [`Client::send_version`]).
    pub fn send_version<R>(&mut self, route: Route, request: R, version: i16) -> RequestId<R>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        self.client.send_version(self.now, route, request, version)
    }

    /// The outcome of a request, once (see [`Client::take_response`]).
    pub fn take_response<R: Request + 'static>(
        &mut self,
        id: RequestId<R>,
    ) -> Option<Result<R::Response, RequestError>> {
        self.client.take_response(id)
    }

    /// Gives up on a request: its response is dropped (see [`Client::discard_response`]).
    pub fn discard<R>(&mut self, id: RequestId<R>) {
        self.client.discard_response(id.raw());
    }

    /// Forgets a partition leader and refreshes metadata (see [`Client::invalidate_leader`]).
    pub fn invalidate_leader(&mut self, topic: &str, partition: i32) {
        self.client.invalidate_leader(self.now, topic, partition);
    }

    /// Forgets a coordinator (see [`Client::invalidate_coordinator`]).
    pub fn invalidate_coordinator(&mut self, key: &str) {
        self.client.invalidate_coordinator(key);
    }

    /// The cached coordinator of a group (`key_type` 0) or transactional id (1), if known.
    pub fn coordinator(&self, key_type: i8, key: &str) -> Option<i32> {
        self.client
            .coordinators
            .get(&(key_type, key.to_string()))
            .copied()
    }

    /// The retry backoff for the `attempt`-th retry (exponential with jitter, from
    /// `retry.backoff.ms` and `retry.backoff.max.ms`).
    pub fn retry_backoff(&mut self, attempt: u32) -> Duration {
        self.client.retry_delay(attempt)
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
}

struct Kept<O>(O);

impl<O: Operation> ErasedOp for Kept<O> {
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Finished> {
        let out = self.0.poll(cx)?;
        Some(Finished::Kept(Box::new(out)))
    }
}

struct WithCallback<O, F> {
    op: O,
    done: Option<F>,
}

impl<O, F> ErasedOp for WithCallback<O, F>
where
    O: Operation,
    F: FnOnce(O::Output) + Send,
{
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Finished> {
        let out = self.op.poll(cx)?;
        if let Some(done) = self.done.take() {
            done(out);
        }
        Some(Finished::Delivered)
    }
}

/// A running operation and when it wants to be polled at the latest.
pub(super) struct OpSlot {
    op: Box<dyn ErasedOp>,
    wake: Option<Instant>,
}

impl Client {
    /// Starts an operation; its output is kept until [`Client::take_op_output`] once
    /// [`Event::OperationDone`] names it.
    pub fn start_op<O: Operation>(&mut self, now: Instant, op: O) -> OpId<O> {
        let raw = self.insert_op(now, Box::new(Kept(op)));
        OpId {
            raw,
            _output: PhantomData,
        }
    }

    /// Starts an operation whose output goes to `done` (called from inside the client,
    /// e.g. to complete an async adapter's oneshot channel). Returns the raw id for
    /// [`Client::cancel_op`].
    pub fn start_op_then<O, F>(&mut self, now: Instant, op: O, done: F) -> u64
    where
        O: Operation,
        F: FnOnce(O::Output) + Send + 'static,
    {
        let op = WithCallback {
            op,
            done: Some(done),
        };
        self.insert_op(now, Box::new(op))
    }

    /// The output of a finished operation, once.
    pub fn take_op_output<O: Operation>(&mut self, id: OpId<O>) -> Option<O::Output> {
        let out = self.op_outputs.remove(&id.raw)?;
        out.downcast::<O::Output>().ok().map(|b| *b)
    }

    /// Stops polling an operation (its requests in flight still complete, unread).
    pub fn cancel_op(&mut self, raw: u64) {
        self.ops.remove(&raw);
        self.op_outputs.remove(&raw);
    }

    /// Number of operations still running.
    pub fn ops_running(&self) -> usize {
        self.ops.len()
    }

    fn insert_op(&mut self, now: Instant, op: Box<dyn ErasedOp>) -> u64 {
        let raw = self.next_id;
        self.next_id += 1;
        self.last_now = Some(now);
        self.ops.insert(raw, OpSlot { op, wake: None });
        self.run_ops(now);
        raw
    }

    /// Polls every running operation once (after anything happened).
    pub(super) fn run_ops(&mut self, now: Instant) {
        if self.ops.is_empty() {
            return;
        }
        let mut ops = std::mem::take(&mut self.ops);
        ops.retain(|&raw, slot| {
            let mut cx = OpContext {
                client: self,
                now,
                wake: None,
            };
            let finished = slot.op.poll(&mut cx);
            slot.wake = cx.wake;
            match finished {
                None => true,
                Some(f) => {
                    if let Finished::Kept(out) = f {
                        self.op_outputs.insert(raw, out);
                    }
                    self.events.push_back(Event::OperationDone(raw));
                    false
                }
            }
        });
        // Operations started meanwhile (none today) keep their place.
        ops.append(&mut self.ops);
        self.ops = ops;
    }

    /// The earliest wake-up any running operation asked for.
    pub(super) fn ops_timeout(&self) -> Option<Instant> {
        self.ops.values().filter_map(|s| s.wake).min()
    }
}
