//! [`ShareConsumer`]: the blocking share consumer (KIP-932 share groups) over the core's
//! `ShareConsumer` machine, run on the client's driver thread. Each call is one command
//! on the machine; `poll` waits for the machine's `Notify` (a [`kafka_driver::Watcher`])
//! between commands, so it never spins.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use kafka_core::client::{OpContext, OpId};
use kafka_core::config::ClientConfig;
use kafka_core::share::ShareConsumer as CoreShare;
pub use kafka_core::share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareError, ShareEvent, ShareRecord,
};

use kafka_driver::front::AckCallbackSlot;

use crate::{BlockingClient, Error};

/// What the driver thread signals: the machine has news, or finished.
#[derive(Default)]
struct Signal {
    state: Mutex<(u64, bool)>,
    cond: Condvar,
}

impl Signal {
    fn raise(&self, done: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += 1;
        s.1 |= done;
        self.cond.notify_all();
    }

    fn seen(&self) -> (u64, bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the count moves past `seen` or the machine finished, at most until
    /// `deadline`.
    fn wait(&self, seen: u64, deadline: Instant) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.0 == seen && !s.1 {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            s = match self.cond.wait_timeout(s, deadline - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

/// A member of a share group (`group.id`; KIP-932, Kafka 4.1+ with `share.version` 1):
/// the members of a group consume the same partitions together, each record handed to
/// one member at a time. [`poll`] hands out records with their delivery count.
/// Acknowledgement follows `share.acknowledgement.mode`: `implicit` (default: a poll
/// accepts what the previous one handed out) or `explicit` ([`acknowledge`] each record
/// accept/release/reject). [`commit_sync`] sends what was decided at once and waits for
/// the per-partition results; otherwise acknowledgements ride on the next fetch.
/// [`close`] accepts (implicit) or releases (explicit) what was not acknowledged,
/// releases what was fetched but not handed out, and leaves the group. In explicit mode
/// a poll is refused ([`ShareError::Unacknowledged`]) while records the previous polls
/// returned are not all acknowledged. Completed acknowledgements, with their offsets and
/// outcome, go to the callback set with [`set_acknowledgement_commit_callback`] (or are
/// [`ShareEvent::Acknowledged`] events without one).
///
/// [`poll`]: ShareConsumer::poll
/// [`acknowledge`]: ShareConsumer::acknowledge
/// [`commit_sync`]: ShareConsumer::commit_sync
/// [`close`]: ShareConsumer::close
/// [`set_acknowledgement_commit_callback`]: ShareConsumer::set_acknowledgement_commit_callback
///
/// ```no_run
/// use kafka_blocking::ShareConsumer;
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// let config = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("group.id", "workers"),
/// ])?;
/// let consumer = ShareConsumer::new(config)?;
/// consumer.subscribe(["jobs"])?;
/// for _ in 0..10 {
///     for record in consumer.poll(Duration::from_secs(1))? {
///         println!("{}@{} (delivery {})", record.partition, record.offset, record.delivery_count);
///     }
/// }
/// consumer.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShareConsumer {
    client: BlockingClient,
    id: OpId<CoreShare>,
    signal: Arc<Signal>,
    /// Commit results seen while waiting for something else.
    committed: Mutex<BTreeMap<ShareCommitId, AckResults>>,
    /// Events for the application ([`ShareConsumer::take_events`]).
    events: Mutex<Vec<ShareEvent>>,
    /// Told of completed acknowledgements on the application's thread.
    callback: AckCallbackSlot,
    close_timeout: Duration,
    closed: Mutex<bool>,
}

impl std::fmt::Debug for ShareConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareConsumer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ShareConsumer {
    /// Creates the consumer and its driver thread; it joins at
    /// [`ShareConsumer::subscribe`].
    pub fn new(config: ClientConfig) -> Result<ShareConsumer, Error> {
        let core = CoreShare::new(&config).map_err(Error::Share)?;
        let close_timeout = config.common().request_timeout * 2;
        let client = BlockingClient::new(config)?;
        let signal = Arc::new(Signal::default());
        let theirs = signal.clone();
        let id = client.ask(move |hub, now| {
            let id = hub.core.start_op(now, core);
            hub.watch(id.untyped(), Arc::new(move |done| theirs.raise(done)));
            id
        })?;
        Ok(ShareConsumer {
            client,
            id,
            signal,
            committed: Mutex::default(),
            events: Mutex::default(),
            callback: AckCallbackSlot::default(),
            close_timeout,
            closed: Mutex::new(false),
        })
    }

    /// Subscribes to exactly these topics and joins the share group (an empty list
    /// leaves it).
    pub fn subscribe<T: AsRef<str>>(
        &self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<(), Error> {
        let topics: Vec<String> = topics.into_iter().map(|t| t.as_ref().to_string()).collect();
        self.command(move |s, cx| s.subscribe(cx, topics))
    }

    /// Sets the acknowledgement commit callback (Java's `AcknowledgementCommitCallback`):
    /// called on the application's thread, inside [`poll`](ShareConsumer::poll),
    /// [`commit_sync`](ShareConsumer::commit_sync),
    /// [`take_events`](ShareConsumer::take_events) and [`close`](ShareConsumer::close),
    /// once per partition and outcome of acknowledgements that completed (riding on a
    /// fetch, on a commit or on the close), with the offsets of the records it was handed.
    /// Those completions are then no [`ShareEvent::Acknowledged`] events. Calls the
    /// callback makes on this consumer see no completions of their own.
    pub fn set_acknowledgement_commit_callback(
        &self,
        callback: impl FnMut(&AckCompletion) + Send + 'static,
    ) {
        self.callback.set(callback);
    }

    /// Waits up to `timeout` for records; returns at once when some are there. In
    /// implicit mode, the records the previous poll returned are accepted first. In
    /// explicit mode, refused with [`ShareError::Unacknowledged`] (nothing handed out,
    /// nothing lost) while records returned before are not all acknowledged.
    pub fn poll(&self, timeout: Duration) -> Result<Vec<ShareRecord>, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let (seen, done) = self.signal.seen();
            if done {
                return Err(Error::Closed);
            }
            let records = self.command(|s, cx| {
                let mut out = Vec::new();
                s.poll(cx, &mut out).map(|_| out)
            })?;
            self.take_core_events()?;
            let records = records.map_err(Error::Share)?;
            if !records.is_empty() || Instant::now() >= deadline {
                return Ok(records);
            }
            self.signal.wait(seen, deadline);
        }
    }

    /// Acknowledges a record [`ShareConsumer::poll`] returned (explicit mode): accept,
    /// release (deliver again) or reject. Sent with the next fetch, or by
    /// [`ShareConsumer::commit_sync`]. `AcknowledgeType::Renew` keeps the record and
    /// restarts its acquisition lock (sent at once; Kafka 4.2+); a later poll returns it
    /// again, to be accepted, released, rejected or renewed once more.
    pub fn acknowledge(&self, record: &ShareRecord, kind: AcknowledgeType) -> Result<(), Error> {
        let (topic, partition, offset) = (record.topic.clone(), record.partition, record.offset);
        self.command(move |s, _| s.acknowledge(&topic, partition, offset, kind))?
            .map_err(Error::Share)
    }

    /// Sends every acknowledgement decided so far and waits up to `timeout` for the
    /// per-partition results (an empty map when there was nothing to acknowledge).
    pub fn commit_sync(&self, timeout: Duration) -> Result<AckResults, Error> {
        let deadline = Instant::now() + timeout;
        let id = self.command(|s, cx| s.commit(cx))?;
        loop {
            let (seen, done) = self.signal.seen();
            self.command(|_, _| ())?;
            self.take_core_events()?;
            let mut committed = self.committed.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = committed.remove(&id) {
                return Ok(r);
            }
            drop(committed);
            if done {
                return Err(Error::Closed);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout(timeout));
            }
            self.signal.wait(seen, deadline);
        }
    }

    /// Sends every acknowledgement decided so far without waiting; its result comes as a
    /// [`ShareEvent::Committed`] from [`ShareConsumer::take_events`].
    pub fn commit_async(&self) -> Result<ShareCommitId, Error> {
        self.command(|s, cx| s.commit(cx))
    }

    /// Events since the last call: assignments, results of `commit_async`, failed
    /// acknowledgements, completed ones (without a callback), fencing.
    pub fn take_events(&self) -> Vec<ShareEvent> {
        let _ = self.take_core_events();
        let mut committed = self.committed.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<ShareEvent> =
            std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, results) in std::mem::take(&mut *committed) {
            out.push(ShareEvent::Committed { id, results });
        }
        out
    }

    /// The partitions assigned now.
    pub fn assignment(&self) -> Result<Vec<(Arc<str>, i32)>, Error> {
        self.command(|s, _| s.assignment())
    }

    /// The acquisition lock timeout the brokers last reported (the group's
    /// `share.record.lock.duration.ms`); `None` before the first fetch answer (Java's
    /// `acquisitionLockTimeoutMs()`).
    pub fn acquisition_lock_timeout(&self) -> Result<Option<Duration>, Error> {
        self.command(|s, _| s.acquisition_lock_timeout())
    }

    /// Closes: acknowledgements owed are sent (implicit: accept what was handed out;
    /// explicit: release what was not acknowledged), records fetched but not handed out
    /// are released, the share sessions are closed and the member leaves. Waits at most
    /// `2 × request.timeout.ms`.
    pub fn close(&self) -> Result<(), Error> {
        {
            let mut closed = self.closed.lock().unwrap_or_else(|e| e.into_inner());
            if *closed {
                return Ok(());
            }
            *closed = true;
        }
        let deadline = Instant::now() + self.close_timeout;
        let id = self.id;
        let running = self
            .client
            .ask(move |hub, now| hub.core.command(now, id, |s, cx| s.close(cx)).is_some())?;
        if !running {
            return Ok(());
        }
        loop {
            let (seen, done) = self.signal.seen();
            if done {
                // The machine's last events: the close's acknowledgements and commits.
                let last = self.client.ask(move |hub, _| hub.core.take_op_output(id))?;
                let _ = self.absorb(last.unwrap_or_default());
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout(self.close_timeout));
            }
            self.signal.wait(seen, deadline);
        }
    }

    fn command<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut CoreShare, &mut OpContext<'_>) -> T + Send + 'static,
    ) -> Result<T, Error> {
        let id = self.id;
        self.client
            .ask(move |hub, now| hub.core.command(now, id, f))?
            .ok_or(Error::Closed)
    }

    /// Moves the machine's events here; a failed member is an error.
    fn take_core_events(&self) -> Result<(), Error> {
        let events = self.command(|s, _| {
            let mut out = Vec::new();
            while let Some(e) = s.take_event() {
                out.push(e);
            }
            out
        });
        let Ok(events) = events else {
            return Ok(());
        };
        self.absorb(events)
    }

    /// Files events: commit results by id, completions to the callback, the rest for
    /// [`ShareConsumer::take_events`]; a failed member is an error.
    fn absorb(&self, events: Vec<ShareEvent>) -> Result<(), Error> {
        let mut failed = None;
        for e in events {
            match e {
                ShareEvent::Committed { id, results } => {
                    self.committed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id, results);
                }
                ShareEvent::Failed(err) => {
                    failed = Some(err.clone());
                    self.push_event(ShareEvent::Failed(err));
                }
                ShareEvent::Acknowledged(completions) => {
                    if let Some(kept) = self.callback.run(completions) {
                        self.push_event(ShareEvent::Acknowledged(kept));
                    }
                }
                other => self.push_event(other),
            }
        }
        match failed {
            Some(e) => Err(Error::Share(e)),
            None => Ok(()),
        }
    }

    fn push_event(&self, e: ShareEvent) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: an application that never takes events keeps the latest ones.
        if events.len() >= 1024 {
            events.remove(0);
        }
        events.push(e);
    }
}

impl Drop for ShareConsumer {
    /// Asks the machine to close without waiting; the driver thread stops with the last
    /// handle, so the final acknowledgements and the leave may not get out (the
    /// records return when their locks expire, the member when its session times out).
    /// Call [`ShareConsumer::close`] for an orderly exit.
    fn drop(&mut self) {
        let closed = *self.closed.lock().unwrap_or_else(|e| e.into_inner());
        if !closed {
            let id = self.id;
            let _ = self.client.submit(Box::new(move |hub, now| {
                let _ = hub.core.command(now, id, |s, cx| s.close(cx));
            }));
        }
    }
}
