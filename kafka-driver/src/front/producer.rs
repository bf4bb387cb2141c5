//! [`AsyncProducer`]: the async producer handle of the front, over the shared
//! [`Outbox`] / [`ProducerCore`](crate::producer::ProducerCore) pair.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{Producer, ProducerMetrics, TxnError, TxnOffset};

use super::{Command, Handle};
use crate::chan::{self, Receiver};
use crate::producer::{Callback, Delivery, Outbox, ProducerKey, Record, Refused, TxnCall};

/// Why a transactional call gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnFailure {
    /// The core refused or failed the call.
    #[error(transparent)]
    Txn(#[from] TxnError),
    /// No result within the caller's timeout (the call goes on; call again to wait).
    #[error("no result within {0:?}")]
    Timeout(Duration),
    /// The driver is gone.
    #[error("the producer's driver is gone")]
    DriverGone,
}

/// An async producer on a front's driver task. Cheap to clone (`Send + Sync`); when the
/// last clone goes, the producer closes gracefully in the background (the driver keeps
/// running until every record is reported).
#[derive(Clone)]
pub struct AsyncProducer {
    inner: Arc<Inner>,
}

struct Inner {
    outbox: Outbox,
    front: Handle,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.outbox.close();
        let key = self.outbox.key();
        let (tx, _rx) = chan::channel(1);
        let _ = self.front.commands.push(Box::new(move |hub, now| {
            hub.producer(key, |p, core| p.close(core, now, tx));
        }));
    }
}

impl Handle {
    /// Starts `producer` (made from `config`, the client's configuration) on the driver.
    pub fn start_producer(&self, config: &ClientConfig, producer: Producer) -> AsyncProducer {
        let key = ProducerKey::next();
        let commands = self.commands.clone();
        let wake = Box::new(move || {
            let _ = commands.push(Box::new(move |hub, now| hub.pump_producer(key, now)));
        });
        let outbox = Outbox::new(config, key, wake);
        let theirs = outbox.clone();
        let start: Command = Box::new(move |hub, now| {
            hub.start_producer(now, producer, &theirs);
        });
        let _ = self.commands.push(start);
        AsyncProducer {
            inner: Arc::new(Inner {
                outbox,
                front: self.clone(),
            }),
        }
    }
}

impl AsyncProducer {
    /// Stages `record` and returns its delivery future. Waits only while the staging
    /// queue is full (the core's `buffer.memory` is used up), at most `max.block.ms`.
    pub async fn send(&self, record: Record) -> Result<Delivery, Refused> {
        let mut record = Some(record);
        if let Poll::Ready(r) = self.inner.outbox.poll_send(&mut record, None) {
            return r;
        }
        self.wait(|cx| self.inner.outbox.poll_send(&mut record, Some(cx.waker())))
            .await
    }

    /// Stages `record`; `callback` gets its outcome on the driver task (keep it short).
    /// Waits like [`AsyncProducer::send`].
    pub async fn send_with(&self, record: Record, callback: Callback) -> Result<(), Refused> {
        let (mut record, mut callback) = (Some(record), Some(callback));
        let outbox = &self.inner.outbox;
        if let Poll::Ready(r) = outbox.poll_send_with(&mut record, &mut callback, None) {
            return r;
        }
        self.wait(|cx| outbox.poll_send_with(&mut record, &mut callback, Some(cx.waker())))
            .await
    }

    /// Resolves once every record sent before the call is reported (linger is cut
    /// short).
    pub async fn flush(&self) -> Result<(), Refused> {
        let until = self.inner.outbox.staged();
        let key = self.inner.outbox.key();
        let (tx, rx) = chan::channel(1);
        self.command(move |hub, now| {
            hub.producer(key, |p, core| p.flush(core, now, until, tx));
        })?;
        // `None`: the producer had finished, so nothing is left to flush.
        let _ = recv(rx).await;
        Ok(())
    }

    /// Closes: no more sends; waits up to `timeout` for every record to be reported,
    /// then aborts (what is left is reported [`ProduceError::Closed`]) and waits for
    /// that. Returns the final counters.
    ///
    /// [`ProduceError::Closed`]: kafka_core::producer::ProduceError::Closed
    pub async fn close(&self, timeout: Duration) -> Result<ProducerMetrics, Refused> {
        self.inner.outbox.close();
        let key = self.inner.outbox.key();
        let (tx, rx) = chan::channel(1);
        self.command(move |hub, now| {
            let tx2 = tx.clone();
            if hub
                .producer(key, |p, core| p.close(core, now, tx2))
                .is_none()
            {
                let metrics = hub.finished_producer(key).cloned().unwrap_or_default();
                let _ = tx.push(metrics);
            }
        })?;
        let mut rx = rx;
        let timer = (self.inner.front.sleep)(Instant::now() + timeout);
        let mut timer = pin!(timer);
        let early = poll_fn(|cx| {
            if let Poll::Ready(m) = rx.poll_recv(cx) {
                return Poll::Ready(Some(m));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match early {
            Some(Some(m)) => return Ok(m),
            Some(None) => return Err(Refused::DriverGone),
            None => {}
        }
        self.command(move |hub, now| {
            hub.producer(key, |p, core| p.abort(core, now));
        })?;
        recv(rx).await.ok_or(Refused::DriverGone)
    }

    /// Runs a transactional call on the driver (after the records staged before it)
    /// and waits up to `timeout` for its result.
    pub async fn transaction(&self, call: TxnCall, timeout: Duration) -> Result<(), TxnFailure> {
        let key = self.inner.outbox.key();
        let (tx, mut rx) = chan::channel(1);
        self.command(move |hub, now| {
            let tx2 = tx.clone();
            if hub
                .producer(key, |p, core| p.transaction(core, now, call, tx2))
                .is_none()
            {
                let _ = tx.push(Err(TxnError::Closed));
            }
        })
        .map_err(|_| TxnFailure::DriverGone)?;
        let timer = (self.inner.front.sleep)(Instant::now() + timeout);
        let mut timer = pin!(timer);
        let got = poll_fn(|cx| {
            if let Poll::Ready(r) = rx.poll_recv(cx) {
                return Poll::Ready(Some(r));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match got {
            Some(Some(r)) => r.map_err(TxnFailure::Txn),
            Some(None) => Err(TxnFailure::DriverGone),
            // Closed, not dropped: a result that comes later stays with the driver for
            // a repeated call.
            None => match rx.close() {
                Some(r) => r.map_err(TxnFailure::Txn),
                None => Err(TxnFailure::Timeout(timeout)),
            },
        }
    }

    /// `init_transactions` (see [`TxnCall::Init`]).
    pub async fn init_transactions(&self, timeout: Duration) -> Result<(), TxnFailure> {
        self.transaction(TxnCall::Init, timeout).await
    }

    /// `begin_transaction`.
    pub async fn begin_transaction(&self) -> Result<(), TxnFailure> {
        self.transaction(TxnCall::Begin, Duration::from_secs(3600))
            .await
    }

    /// `send_offsets_to_transaction`: `offsets` are `(topic, partition, next offset)`.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: impl IntoIterator<Item = impl Into<TxnOffset>>,
        group: &GroupMetadata,
        timeout: Duration,
    ) -> Result<(), TxnFailure> {
        let offsets: Vec<TxnOffset> = offsets.into_iter().map(Into::into).collect();
        self.transaction(TxnCall::SendOffsets(offsets, group.clone()), timeout)
            .await
    }

    /// `commit_transaction`.
    pub async fn commit_transaction(&self, timeout: Duration) -> Result<(), TxnFailure> {
        self.transaction(TxnCall::Commit, timeout).await
    }

    /// `abort_transaction`.
    pub async fn abort_transaction(&self, timeout: Duration) -> Result<(), TxnFailure> {
        self.transaction(TxnCall::Abort, timeout).await
    }

    /// A snapshot of the core producer's counters.
    pub async fn metrics(&self) -> Result<ProducerMetrics, Refused> {
        let key = self.inner.outbox.key();
        let (tx, rx) = chan::channel(1);
        self.command(move |hub, now| {
            let m = hub
                .producer(key, |p, core| p.metrics(core, now))
                .or_else(|| hub.finished_producer(key).cloned())
                .unwrap_or_default();
            let _ = tx.push(m);
        })?;
        recv(rx).await.ok_or(Refused::DriverGone)
    }

    /// `max.block.ms`.
    pub fn max_block(&self) -> Duration {
        self.inner.outbox.max_block()
    }

    /// Polls `stage` until it is ready or `max.block.ms` passes.
    async fn wait<T>(
        &self,
        mut stage: impl FnMut(&mut std::task::Context<'_>) -> Poll<Result<T, Refused>>,
    ) -> Result<T, Refused> {
        let max_block = self.inner.outbox.max_block();
        let timer = (self.inner.front.sleep)(Instant::now() + max_block);
        let mut timer = pin!(timer);
        poll_fn(|cx| {
            if let Poll::Ready(r) = stage(cx) {
                return Poll::Ready(r);
            }
            timer
                .as_mut()
                .poll(cx)
                .map(|()| Err(Refused::Timeout(max_block)))
        })
        .await
    }

    fn command(
        &self,
        command: impl FnOnce(&mut crate::Hub<crate::PipeOutlet>, Instant) + Send + 'static,
    ) -> Result<(), Refused> {
        self.inner
            .front
            .commands
            .push(Box::new(command))
            .map_err(|_| Refused::DriverGone)
    }
}

impl std::fmt::Debug for AsyncProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncProducer")
            .field("outbox", &self.inner.outbox)
            .finish()
    }
}

async fn recv<T>(mut rx: Receiver<T>) -> Option<T> {
    poll_fn(|cx| rx.poll_recv(cx)).await
}

/// An async adapter's transactional `Producer` methods (tokio, async-std), over its
/// `inner: AsyncProducer`, mapping [`TxnFailure`] with the adapter's
/// `txn_failed(TxnFailure) -> Error`. Used inside the adapter's `impl Producer`.
#[macro_export]
macro_rules! async_producer_transactions {
    () => {
        /// Gets the producer id of the `transactional.id` from its coordinator, fencing
        /// every older instance and ending what they left open; waits up to `timeout`
        /// (a later call waits for the same result). Once, before the first
        /// transaction.
        pub async fn init_transactions(&self, timeout: ::std::time::Duration) -> Result<(), Error> {
            self.inner
                .init_transactions(timeout)
                .await
                .map_err(txn_failed)
        }

        /// Opens a transaction: records sent from now on belong to it.
        pub async fn begin_transaction(&self) -> Result<(), Error> {
            self.inner.begin_transaction().await.map_err(txn_failed)
        }

        /// Adds consumed offsets `(topic, partition, next offset)` to the open
        /// transaction: they commit for `group` (the consumer's `group_metadata()`) if and
        /// only if the transaction commits.
        pub async fn send_offsets_to_transaction(
            &self,
            offsets: impl IntoIterator<Item = impl Into<kafka_core::producer::TxnOffset>>,
            group: &kafka_core::group::GroupMetadata,
            timeout: ::std::time::Duration,
        ) -> Result<(), Error> {
            self.inner
                .send_offsets_to_transaction(offsets, group, timeout)
                .await
                .map_err(txn_failed)
        }

        /// Commits the open transaction (every record sent in it is flushed first). An
        /// abortable [`Error::Transaction`] means: abort, then go on; on
        /// [`Error::Timeout`] the commit goes on (call again to wait for it).
        pub async fn commit_transaction(
            &self,
            timeout: ::std::time::Duration,
        ) -> Result<(), Error> {
            self.inner
                .commit_transaction(timeout)
                .await
                .map_err(txn_failed)
        }

        /// Aborts the open transaction: records not yet sent are dropped, the rest are
        /// never visible to `read_committed` consumers.
        pub async fn abort_transaction(&self, timeout: ::std::time::Duration) -> Result<(), Error> {
            self.inner
                .abort_transaction(timeout)
                .await
                .map_err(txn_failed)
        }
    };
}
