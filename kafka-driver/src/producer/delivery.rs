//! Per-record outcomes: [`Slots`] shared by a run of sends, the driver's [`Sink`] for one
//! record and the caller's [`Delivery`] handle.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use kafka_core::producer::ProduceError;

use super::{Callback, Outcome};

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// The topic.
    pub topic: std::sync::Arc<str>,
    /// The partition.
    pub partition: i32,
    /// The record's offset (`-1` with `acks=0`: unknown).
    pub offset: i64,
    /// The create time written, or the broker's append time when the topic uses
    /// LogAppendTime.
    pub timestamp: i64,
}

/// One record's place in a [`Slots`].
enum Entry {
    /// No outcome yet; the waker of the handle's last poll.
    Pending(Option<Waker>),
    Done(Outcome),
    Taken,
}

/// The outcomes of a run of consecutive sends (one allocation per
/// [`SLOTS_PER_CHUNK`](super::SLOTS_PER_CHUNK) records, not per record).
pub(crate) struct Slots {
    state: Mutex<State>,
    /// Blocking waiters park here.
    cond: Condvar,
}

impl Slots {
    pub(crate) fn new() -> Self {
        Slots {
            state: Mutex::new(State {
                entries: Vec::new(),
                sleepers: 0,
            }),
            cond: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fill(&self, pos: u32, outcome: Outcome) {
        let (waker, sleepers) = {
            let mut state = self.lock();
            let e = entry(&mut state.entries, pos);
            let waker = match std::mem::replace(e, Entry::Done(outcome)) {
                Entry::Pending(w) => w,
                _ => None,
            };
            (waker, state.sleepers)
        };
        if let Some(w) = waker {
            w.wake();
        }
        // Only blocking waiters need the (syscall) notification.
        if sleepers > 0 {
            self.cond.notify_all();
        }
    }
}

/// The entries of a [`Slots`] and how many blocking waiters park on it.
struct State {
    entries: Vec<Entry>,
    sleepers: usize,
}

fn entry(entries: &mut Vec<Entry>, pos: u32) -> &mut Entry {
    let i = pos as usize;
    if entries.len() <= i {
        entries.resize_with(i + 1, || Entry::Pending(None));
    }
    &mut entries[i]
}

/// Where the driver puts one record's outcome. Dropped unused (the driver went away), it
/// reports [`ProduceError::Closed`] (possibly delivered: the driver may have sent it).
pub(crate) struct Sink(Option<Target>);

enum Target {
    Slot(Arc<Slots>, u32),
    Callback(Callback),
}

impl Sink {
    pub(crate) fn slot(slots: Arc<Slots>, pos: u32) -> Self {
        Sink(Some(Target::Slot(slots, pos)))
    }

    pub(crate) fn callback(cb: Callback) -> Self {
        Sink(Some(Target::Callback(cb)))
    }

    /// Hands over the record's outcome.
    pub(crate) fn complete(mut self, outcome: Outcome) {
        deliver(self.0.take(), outcome);
    }
}

fn deliver(target: Option<Target>, outcome: Outcome) {
    match target {
        Some(Target::Slot(slots, pos)) => slots.fill(pos, outcome),
        Some(Target::Callback(cb)) => cb(outcome),
        None => {}
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(target) = self.0.take() {
            deliver(
                Some(target),
                Err(ProduceError::Closed {
                    possibly_delivered: true,
                }),
            );
        }
    }
}

/// One record's outcome, once the broker answered for its batch: a future (await it) or
/// a blocking handle ([`wait`](Delivery::wait)). Cheap: records sent together share one
/// allocation. Dropping it does not cancel the record.
#[must_use = "a Delivery is how you learn whether the record was written"]
pub struct Delivery {
    slots: Arc<Slots>,
    pos: u32,
}

impl Delivery {
    pub(crate) fn new(slots: Arc<Slots>, pos: u32) -> Self {
        Delivery { slots, pos }
    }

    /// The outcome if it is known, without waiting.
    pub fn try_take(&mut self) -> Option<Outcome> {
        take(&mut self.slots.lock().entries, self.pos)
    }

    /// Blocks until the outcome is known.
    pub fn wait(self) -> Outcome {
        let mut state = self.slots.lock();
        loop {
            if let Some(out) = take(&mut state.entries, self.pos) {
                return out;
            }
            state.sleepers += 1;
            state = self
                .slots
                .cond
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.sleepers -= 1;
        }
    }

    /// Blocks until the outcome is known or `timeout` passes (then the handle comes back).
    pub fn wait_timeout(self, timeout: Duration) -> Result<Outcome, Delivery> {
        let until = Instant::now() + timeout;
        let mut state = self.slots.lock();
        loop {
            if let Some(out) = take(&mut state.entries, self.pos) {
                return Ok(out);
            }
            let now = Instant::now();
            if now >= until {
                drop(state);
                return Err(self);
            }
            state.sleepers += 1;
            state = self
                .slots
                .cond
                .wait_timeout(state, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            state.sleepers -= 1;
        }
    }
}

/// Takes the outcome at `pos` if it is there.
fn take(entries: &mut Vec<Entry>, pos: u32) -> Option<Outcome> {
    let e = entry(entries, pos);
    if !matches!(e, Entry::Done(_)) {
        return None;
    }
    match std::mem::replace(e, Entry::Taken) {
        Entry::Done(out) => Some(out),
        _ => None,
    }
}

impl Future for Delivery {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let mut state = self.slots.lock();
        let e = entry(&mut state.entries, self.pos);
        match e {
            Entry::Pending(w) => {
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Entry::Done(_) => match std::mem::replace(e, Entry::Taken) {
                Entry::Done(out) => Poll::Ready(out),
                _ => Poll::Pending,
            },
            // Polled after it finished: the outcome was handed out already.
            Entry::Taken => Poll::Ready(Err(ProduceError::Closed {
                possibly_delivered: true,
            })),
        }
    }
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}
