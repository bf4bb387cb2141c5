//! [`AsyncShareConsumer`]: the share consumer (KIP-932) for the async adapters. Each call
//! is one command on the core `ShareConsumer` running on the driver task; `poll` waits
//! for the machine's `Notify` ([`Hub::watch`](crate::Hub::watch)) or its timeout between
//! commands.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_core::client::{OpContext, OpId};
use kafka_core::share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareConsumer as CoreShare,
    ShareError, ShareEvent, ShareRecord,
};

use super::{race, Handle};
use crate::chan::{self, Receiver, Sender};

/// Why a share consumer call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShareCallError {
    /// The machine refused (local misuse) or cannot go on.
    #[error(transparent)]
    Share(ShareError),
    /// `commit_sync` or `close` did not finish in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The consumer is closed or its driver is gone.
    #[error("closed")]
    Closed,
}

type Slot = Arc<Mutex<Option<OpId<CoreShare>>>>;

/// The acknowledgement commit callback (Java's `AcknowledgementCommitCallback`) of a
/// share consumer, shared by the blocking and async surfaces: set by the application,
/// run on its thread or task when completions are filed.
#[derive(Default)]
pub struct AckCallbackSlot(Mutex<Option<AckCallback>>);

type AckCallback = Box<dyn FnMut(&AckCompletion) + Send>;

impl AckCallbackSlot {
    /// Sets (replaces) the callback.
    pub fn set(&self, callback: impl FnMut(&AckCompletion) + Send + 'static) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(callback));
    }

    /// Runs the callback once per completion; without one, gives the completions back
    /// (to be kept as an event). The callback is taken out while it runs, so a call it
    /// makes on the consumer files its own completions as events instead of deadlocking.
    pub fn run(&self, completions: Vec<AckCompletion>) -> Option<Vec<AckCompletion>> {
        let taken = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut callback) = taken else {
            return Some(completions);
        };
        completions.iter().for_each(&mut callback);
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(callback);
        None
    }
}

/// The async share consumer surface (see the module docs).
pub struct AsyncShareConsumer {
    handle: Handle,
    slot: Slot,
    wake: Mutex<Receiver<bool>>,
    pending: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
    committed: Mutex<BTreeMap<ShareCommitId, AckResults>>,
    events: Mutex<Vec<ShareEvent>>,
    callback: AckCallbackSlot,
    close_timeout: Duration,
}

impl std::fmt::Debug for AsyncShareConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncShareConsumer").finish_non_exhaustive()
    }
}

impl Handle {
    /// Starts the core share consumer `core` on this driver.
    pub fn start_share(&self, core: CoreShare, close_timeout: Duration) -> AsyncShareConsumer {
        let (tx, rx): (Sender<bool>, Receiver<bool>) = chan::channel(1);
        let pending = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let slot: Slot = Arc::default();
        let (theirs, p, f) = (slot.clone(), pending.clone(), finished.clone());
        let _ = self.commands.push(Box::new(move |hub, now| {
            let id = hub.core.start_op(now, core);
            if let Ok(mut s) = theirs.lock() {
                *s = Some(id);
            }
            hub.watch(
                id.untyped(),
                Arc::new(move |done| {
                    if done {
                        f.store(true, Ordering::SeqCst);
                    }
                    // At most one wake-up waits in the channel.
                    if !p.swap(true, Ordering::SeqCst) || done {
                        let _ = tx.push(done);
                    }
                }),
            );
        }));
        AsyncShareConsumer {
            handle: self.clone(),
            slot,
            wake: Mutex::new(rx),
            pending,
            finished,
            committed: Mutex::default(),
            events: Mutex::default(),
            callback: AckCallbackSlot::default(),
            close_timeout,
        }
    }
}

impl AsyncShareConsumer {
    /// One command on the machine; `Closed` when it finished or the driver is gone.
    async fn command<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut CoreShare, &mut OpContext<'_>) -> T + Send + 'static,
    ) -> Result<T, ShareCallError> {
        let slot = self.slot.clone();
        self.handle
            .ask(move |hub| {
                let id = (*slot.lock().ok()?)?;
                hub.core.command(Instant::now(), id, f)
            })
            .await
            .ok()
            .flatten()
            .ok_or(ShareCallError::Closed)
    }

    /// Waits for the machine's next wake-up, at most until `deadline`.
    async fn wait(&self, deadline: Instant) {
        let woken = std::future::poll_fn(|cx| {
            let mut rx = self.wake.lock().unwrap_or_else(|e| e.into_inner());
            rx.poll_recv(cx).map(|_| ())
        });
        let _ = race(woken, (self.handle.sleep)(deadline)).await;
        self.pending.store(false, Ordering::SeqCst);
    }

    /// Subscribes to exactly these topics and joins (an empty list leaves).
    pub async fn subscribe(&self, topics: Vec<String>) -> Result<(), ShareCallError> {
        self.command(move |s, cx| s.subscribe(cx, topics)).await
    }

    /// Sets the acknowledgement commit callback: called in the application's task inside
    /// `poll`, `commit_sync`, `take_events` and `close`, once per partition and outcome
    /// of completed acknowledgements (then no `ShareEvent::Acknowledged` for them).
    pub fn set_acknowledgement_commit_callback(
        &self,
        callback: impl FnMut(&AckCompletion) + Send + 'static,
    ) {
        self.callback.set(callback);
    }

    /// Waits up to `timeout` for records (implicit mode: accepts the previous poll's;
    /// explicit mode: refused with `ShareError::Unacknowledged` while records returned
    /// before are not all acknowledged).
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ShareRecord>, ShareCallError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.finished.load(Ordering::SeqCst) {
                return Err(ShareCallError::Closed);
            }
            self.pending.store(false, Ordering::SeqCst);
            let records = self
                .command(|s, cx| {
                    let mut out = Vec::new();
                    s.poll(cx, &mut out).map(|_| out)
                })
                .await?;
            self.take_core_events().await?;
            let records = records.map_err(ShareCallError::Share)?;
            if !records.is_empty() || Instant::now() >= deadline {
                return Ok(records);
            }
            self.wait(deadline).await;
        }
    }

    /// The acquisition lock timeout the brokers last reported (`None` before the first
    /// fetch answer).
    pub async fn acquisition_lock_timeout(&self) -> Result<Option<Duration>, ShareCallError> {
        self.command(|s, _| s.acquisition_lock_timeout()).await
    }

    /// Acknowledges a record `poll` returned (explicit mode).
    pub async fn acknowledge(
        &self,
        record: &ShareRecord,
        kind: AcknowledgeType,
    ) -> Result<(), ShareCallError> {
        let (topic, partition, offset) = (record.topic.clone(), record.partition, record.offset);
        self.command(move |s, _| s.acknowledge(&topic, partition, offset, kind))
            .await?
            .map_err(ShareCallError::Share)
    }

    /// Sends every acknowledgement decided so far and waits for the results.
    pub async fn commit_sync(&self, timeout: Duration) -> Result<AckResults, ShareCallError> {
        let deadline = Instant::now() + timeout;
        let id = self.command(|s, cx| s.commit(cx)).await?;
        loop {
            self.pending.store(false, Ordering::SeqCst);
            self.take_core_events().await?;
            if let Some(r) = self
                .committed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id)
            {
                return Ok(r);
            }
            if Instant::now() >= deadline {
                return Err(ShareCallError::Timeout(timeout));
            }
            self.wait(deadline).await;
        }
    }

    /// Sends every acknowledgement decided so far; the result is a
    /// [`ShareEvent::Committed`] from [`AsyncShareConsumer::take_events`].
    pub async fn commit_async(&self) -> Result<ShareCommitId, ShareCallError> {
        self.command(|s, cx| s.commit(cx)).await
    }

    /// Events since the last call (assignments, `commit_async` results, failures).
    pub async fn take_events(&self) -> Vec<ShareEvent> {
        let _ = self.take_core_events().await;
        let mut out = std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()));
        let committed =
            std::mem::take(&mut *self.committed.lock().unwrap_or_else(|e| e.into_inner()));
        out.extend(
            committed
                .into_iter()
                .map(|(id, results)| ShareEvent::Committed { id, results }),
        );
        out
    }

    /// Closes (see the core `ShareConsumer::close`) and waits for the machine to finish.
    pub async fn close(&self) -> Result<(), ShareCallError> {
        let deadline = Instant::now() + self.close_timeout;
        if self.command(|s, cx| s.close(cx)).await.is_err() {
            return Ok(());
        }
        while !self.finished.load(Ordering::SeqCst) {
            if Instant::now() >= deadline {
                return Err(ShareCallError::Timeout(self.close_timeout));
            }
            self.wait(deadline).await;
        }
        // The machine's last events: the close's acknowledgements and commits.
        let slot = self.slot.clone();
        let last = self
            .handle
            .ask(move |hub| {
                let id = (*slot.lock().ok()?)?;
                hub.core.take_op_output(id)
            })
            .await
            .ok()
            .flatten();
        let _ = self.absorb(last.unwrap_or_default());
        Ok(())
    }

    async fn take_core_events(&self) -> Result<(), ShareCallError> {
        let Ok(events) = self
            .command(|s, _| {
                let mut out = Vec::new();
                while let Some(e) = s.take_event() {
                    out.push(e);
                }
                out
            })
            .await
        else {
            return Ok(());
        };
        self.absorb(events)
    }

    /// Files events: commit results by id, completions to the callback, the rest for
    /// `take_events`; a failed member is an error.
    fn absorb(&self, events: Vec<ShareEvent>) -> Result<(), ShareCallError> {
        let mut failed = None;
        for e in events {
            match e {
                ShareEvent::Committed { id, results } => {
                    self.committed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id, results);
                }
                ShareEvent::Acknowledged(completions) => {
                    if let Some(kept) = self.callback.run(completions) {
                        self.push_event(ShareEvent::Acknowledged(kept));
                    }
                }
                other => {
                    if let ShareEvent::Failed(err) = &other {
                        failed = Some(err.clone());
                    }
                    self.push_event(other);
                }
            }
        }
        match failed {
            Some(e) => Err(ShareCallError::Share(e)),
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

impl Drop for AsyncShareConsumer {
    /// Asks the machine to close without waiting (see `close`).
    fn drop(&mut self) {
        let slot = self.slot.clone();
        let _ = self.handle.commands.push(Box::new(move |hub, now| {
            if let Some(id) = slot.lock().ok().and_then(|s| *s) {
                let _ = hub.core.command(now, id, |s, cx| s.close(cx));
            }
        }));
    }
}

/// An async adapter's `ShareConsumer` (tokio, async-std): the struct (with the doc
/// comment and attributes given) over an [`AsyncShareConsumer`], the error mapping
/// `failed(ShareCallError) -> Error` (the adapter's `Error` needs `Share`, `Timeout` and
/// `Closed`) and every method; the adapter writes only its constructors, building the
/// struct as `ShareConsumer { inner }`.
#[macro_export]
macro_rules! async_share_consumer {
    ($(#[$meta:meta])*) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct ShareConsumer {
            inner: $crate::front::AsyncShareConsumer,
        }

        fn failed(e: $crate::front::ShareCallError) -> Error {
            match e {
                $crate::front::ShareCallError::Share(e) => Error::Share(e),
                $crate::front::ShareCallError::Timeout(d) => Error::Timeout(d),
                _ => Error::Closed,
            }
        }

        impl ShareConsumer {
            /// Subscribes to exactly these topics and joins (an empty list leaves).
            pub async fn subscribe<T: AsRef<str>>(
                &self,
                topics: impl IntoIterator<Item = T>,
            ) -> Result<(), Error> {
                let topics = topics.into_iter().map(|t| t.as_ref().to_string()).collect();
                self.inner.subscribe(topics).await.map_err(failed)
            }

            /// Waits up to `timeout` for records; implicit mode accepts the previous
            /// poll's first; explicit mode refuses (`ShareError::Unacknowledged`) while
            /// records returned before are not all acknowledged.
            pub async fn poll(
                &self,
                timeout: ::std::time::Duration,
            ) -> Result<Vec<::kafka_core::share::ShareRecord>, Error> {
                self.inner.poll(timeout).await.map_err(failed)
            }

            /// Sets the acknowledgement commit callback (Java's
            /// `AcknowledgementCommitCallback`): called in the application's task inside
            /// `poll`, `commit_sync`, `take_events` and `close`, once per partition and
            /// outcome of completed acknowledgements, with the offsets of the records it
            /// was handed (then no `ShareEvent::Acknowledged` for them).
            pub fn set_acknowledgement_commit_callback(
                &self,
                callback: impl FnMut(&::kafka_core::share::AckCompletion) + Send + 'static,
            ) {
                self.inner.set_acknowledgement_commit_callback(callback)
            }

            /// The acquisition lock timeout the brokers last reported (the group's
            /// `share.record.lock.duration.ms`); `None` before the first fetch answer
            /// (Java's `acquisitionLockTimeoutMs()`).
            pub async fn acquisition_lock_timeout(
                &self,
            ) -> Result<Option<::std::time::Duration>, Error> {
                self.inner.acquisition_lock_timeout().await.map_err(failed)
            }

            /// Acknowledges a record `poll` returned (explicit mode): accept, release or
            /// reject; `AcknowledgeType::Renew` keeps it and restarts its acquisition
            /// lock (Kafka 4.2+), and a later poll returns it again.
            pub async fn acknowledge(
                &self,
                record: &::kafka_core::share::ShareRecord,
                kind: ::kafka_core::share::AcknowledgeType,
            ) -> Result<(), Error> {
                self.inner.acknowledge(record, kind).await.map_err(failed)
            }

            /// Sends every acknowledgement decided so far and waits up to `timeout` for
            /// the per-partition results.
            pub async fn commit_sync(
                &self,
                timeout: ::std::time::Duration,
            ) -> Result<::kafka_core::share::AckResults, Error> {
                self.inner.commit_sync(timeout).await.map_err(failed)
            }

            /// Sends every acknowledgement decided so far; the result comes as a
            /// `ShareEvent::Committed` from [`ShareConsumer::take_events`].
            pub async fn commit_async(&self) -> Result<::kafka_core::share::ShareCommitId, Error> {
                self.inner.commit_async().await.map_err(failed)
            }

            /// Events since the last call.
            pub async fn take_events(&self) -> Vec<::kafka_core::share::ShareEvent> {
                self.inner.take_events().await
            }

            /// Closes: acknowledgements owed are sent, the sessions closed, the member
            /// leaves.
            pub async fn close(&self) -> Result<(), Error> {
                self.inner.close().await.map_err(failed)
            }
        }
    };
}
