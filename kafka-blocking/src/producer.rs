//! [`Producer`]: the blocking producer, over `kafka_driver`'s shared staging queue and
//! driver-side producer core.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{ProduceError, Producer as CoreProducer, ProducerMetrics};
use kafka_driver::chan::{self, RecvError};
pub use kafka_driver::producer::{Delivery, Record, RecordMetadata};
use kafka_driver::producer::{Outbox, ProducerKey, Refused, TxnCall};

use crate::driver::Msg;
use crate::{gone, BlockingClient, Error};

/// A blocking producer: `send` stages a record and returns its [`Delivery`] at once
/// (it waits only while `buffer.memory` is used up, at most `max.block.ms`); the driver
/// thread batches, sends and completes deliveries. Cheap to clone, usable from any number
/// of threads. When the last clone goes, the producer closes gracefully in the
/// background.
///
/// ```no_run
/// use kafka_blocking::{Producer, Record};
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
/// let producer = Producer::new(config)?;
/// let delivery = producer.send(Record::new("events", "hello").key("k1"))?;
/// let written = delivery.wait()?;
/// println!("partition {} offset {}", written.partition, written.offset);
/// producer.close(Duration::from_secs(30))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// With a `transactional.id`, a consume-transform-produce loop: each poll's records,
/// transformed, and the positions consumed commit together or not at all (the input is
/// read `read_committed`, auto-commit off). After an abortable error the batch is
/// aborted and read again, each partition from its first record in it.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use std::time::Duration;
///
/// use kafka_blocking::{ConsumerRecord, Error, GroupConsumer, Producer, Record};
/// use kafka_core::config::ClientConfig;
///
/// fn transact(
///     p: &Producer,
///     c: &GroupConsumer,
///     records: &[ConsumerRecord],
/// ) -> Result<(), Error> {
///     let t = Duration::from_secs(30);
///     p.begin_transaction()?;
///     for r in records {
///         let value = r.value.as_deref().unwrap_or_default().to_ascii_uppercase();
///         // Not waited for: a record that fails makes the commit fail.
///         drop(p.send(Record::new("output", value))?);
///     }
///     let (group, offsets) = c.transaction_offsets()?;
///     p.send_offsets_to_transaction(offsets, &group, t)?;
///     p.commit_transaction(t)
/// }
///
/// let consumer = GroupConsumer::new(ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("group.id", "uppercase"),
///     ("enable.auto.commit", "false"),
///     ("isolation.level", "read_committed"),
/// ])?)?;
/// consumer.subscribe(["input"])?;
/// let producer = Producer::new(ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("transactional.id", "uppercase-1"),
/// ])?)?;
/// producer.init_transactions(Duration::from_secs(30))?;
/// loop {
///     let records = consumer.poll(Duration::from_millis(500))?;
///     if records.is_empty() {
///         continue;
///     }
///     match transact(&producer, &consumer, &records) {
///         Ok(()) => {}
///         Err(Error::Transaction(e)) if e.is_abortable() => {
///             producer.abort_transaction(Duration::from_secs(30))?;
///             let mut firsts = BTreeMap::new();
///             for r in &records {
///                 firsts.entry((r.topic.clone(), r.partition)).or_insert(r.offset);
///             }
///             for ((topic, partition), offset) in firsts {
///                 consumer.seek(&topic, partition, offset)?;
///             }
///         }
///         Err(e) => return Err(e.into()), // fatal (e.g. fenced): drop the producer
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

struct Inner {
    outbox: Outbox,
    client: BlockingClient,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.outbox.close();
        let key = self.outbox.key();
        let (tx, _rx) = chan::channel(1);
        let _ = self.client.submit(Box::new(move |hub, now| {
            hub.producer(key, |p, core| p.close(core, now, tx));
        }));
    }
}

impl Producer {
    /// Creates the producer and its driver thread; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Producer, Error> {
        let producer = CoreProducer::new(&config)?;
        let client = BlockingClient::new(config.clone())?;
        let key = ProducerKey::next();
        let inbox = client.inbox.clone();
        let wake = Box::new(move || {
            let _ = inbox.push(Msg::Command(Box::new(move |hub, now| {
                hub.pump_producer(key, now)
            })));
        });
        let outbox = Outbox::new(&config, key, wake);
        let theirs = outbox.clone();
        client.submit(Box::new(move |hub, now| {
            hub.start_producer(now, producer, &theirs)
        }))?;
        Ok(Producer {
            inner: Arc::new(Inner { outbox, client }),
        })
    }

    /// Stages `record` and returns its delivery handle ([`Delivery::wait`]). Blocks
    /// only while the staging queue is full, at most `max.block.ms`
    /// ([`Error::Timeout`]).
    pub fn send(&self, record: Record) -> Result<Delivery, Error> {
        match self.inner.outbox.send_blocking(record, None) {
            Ok(Some(d)) => Ok(d),
            Ok(None) => Err(Error::Closed),
            Err(e) => Err(refused(e)),
        }
    }

    /// Stages `record`; `callback` gets its outcome on the driver thread (keep it short
    /// and non-blocking). Blocks like [`Producer::send`].
    pub fn send_with(
        &self,
        record: Record,
        callback: impl FnOnce(Result<RecordMetadata, ProduceError>) + Send + 'static,
    ) -> Result<(), Error> {
        self.inner
            .outbox
            .send_blocking(record, Some(Box::new(callback)))
            .map(|_| ())
            .map_err(refused)
    }

    /// Waits until every record sent before the call is reported (linger is cut short),
    /// at most `timeout`.
    pub fn flush(&self, timeout: Duration) -> Result<(), Error> {
        let until = self.inner.outbox.staged();
        let key = self.inner.outbox.key();
        let (tx, mut rx) = chan::channel(1);
        self.inner.client.submit(Box::new(move |hub, now| {
            hub.producer(key, |p, core| p.flush(core, now, until, tx));
        }))?;
        match rx.recv_deadline(Some(Instant::now() + timeout)) {
            // Disconnected: the producer had finished, nothing is left to flush.
            Ok(()) | Err(RecvError::Disconnected) => Ok(()),
            Err(RecvError::Timeout) => Err(Error::Timeout(timeout)),
        }
    }

    /// Closes: no more sends; waits up to `timeout` for every record to be reported, then
    /// aborts (what is left is reported [`ProduceError::Closed`]) and waits for that.
    /// Returns the final counters.
    pub fn close(&self, timeout: Duration) -> Result<ProducerMetrics, Error> {
        self.inner.outbox.close();
        let key = self.inner.outbox.key();
        let (tx, mut rx) = chan::channel(1);
        self.inner.client.submit(Box::new(move |hub, now| {
            let tx2 = tx.clone();
            if hub
                .producer(key, |p, core| p.close(core, now, tx2))
                .is_none()
            {
                let _ = tx.push(hub.finished_producer(key).cloned().unwrap_or_default());
            }
        }))?;
        match rx.recv_deadline(Some(Instant::now() + timeout)) {
            Ok(m) => return Ok(m),
            Err(RecvError::Disconnected) => return Err(gone()),
            Err(RecvError::Timeout) => {}
        }
        self.inner.client.submit(Box::new(move |hub, now| {
            hub.producer(key, |p, core| p.abort(core, now));
        }))?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// Gets the producer id of the `transactional.id` from its coordinator, fencing
    /// every older instance and ending what they left open; waits up to `timeout` (a
    /// later call waits for the same result). Once per producer, before the first
    /// transaction.
    pub fn init_transactions(&self, timeout: Duration) -> Result<(), Error> {
        self.transaction(TxnCall::Init, timeout)
    }

    /// Opens a transaction: records sent from now on belong to it.
    pub fn begin_transaction(&self) -> Result<(), Error> {
        self.transaction(TxnCall::Begin, Duration::from_secs(3600))
    }

    /// Adds consumed offsets to the open transaction (the next offsets to read, per
    /// partition): they commit for `group` if and only if the transaction commits.
    /// `group` is the consumer's [`GroupConsumer::group_metadata`](crate::GroupConsumer::group_metadata).
    pub fn send_offsets_to_transaction(
        &self,
        offsets: impl IntoIterator<Item = impl Into<kafka_core::producer::TxnOffset>>,
        group: &GroupMetadata,
        timeout: Duration,
    ) -> Result<(), Error> {
        let offsets = offsets.into_iter().map(Into::into).collect();
        self.transaction(TxnCall::SendOffsets(offsets, group.clone()), timeout)
    }

    /// Commits the open transaction: every record sent in it is flushed first. An
    /// [`Error::Transaction`] that is abortable means: abort, then go on. On
    /// [`Error::Timeout`] the commit goes on; call again to get its result (also if it
    /// ended meanwhile: the next call, if a commit, gets the result nobody took).
    pub fn commit_transaction(&self, timeout: Duration) -> Result<(), Error> {
        self.transaction(TxnCall::Commit, timeout)
    }

    /// Aborts the open transaction: records not yet sent are dropped
    /// ([`ProduceError::Aborted`]), the rest are never visible to `read_committed`
    /// consumers.
    pub fn abort_transaction(&self, timeout: Duration) -> Result<(), Error> {
        self.transaction(TxnCall::Abort, timeout)
    }

    fn transaction(&self, call: TxnCall, timeout: Duration) -> Result<(), Error> {
        let key = self.inner.outbox.key();
        let (tx, mut rx) = chan::channel(1);
        self.inner.client.submit(Box::new(move |hub, now| {
            let tx2 = tx.clone();
            if hub
                .producer(key, |p, core| p.transaction(core, now, call, tx2))
                .is_none()
            {
                let _ = tx.push(Err(kafka_core::producer::TxnError::Closed));
            }
        }))?;
        match rx.recv_deadline(Some(Instant::now() + timeout)) {
            Ok(r) => r.map_err(Error::Transaction),
            Err(RecvError::Disconnected) => Err(gone()),
            // Closed, not dropped: a result that comes later stays with the driver
            // for a repeated call.
            Err(RecvError::Timeout) => match rx.close() {
                Some(r) => r.map_err(Error::Transaction),
                None => Err(Error::Timeout(timeout)),
            },
        }
    }

    /// A snapshot of the core producer's counters.
    pub fn metrics(&self) -> Result<ProducerMetrics, Error> {
        let key = self.inner.outbox.key();
        self.inner.client.ask(move |hub, now| {
            hub.producer(key, |p, core| p.metrics(core, now))
                .or_else(|| hub.finished_producer(key).cloned())
                .unwrap_or_default()
        })
    }

    /// The client under the producer (metadata, raw requests, [`Notice`](crate::Notice)s).
    pub fn client(&self) -> &BlockingClient {
        &self.inner.client
    }
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("outbox", &self.inner.outbox)
            .finish_non_exhaustive()
    }
}

fn refused(e: Refused) -> Error {
    match e {
        Refused::Timeout(d) => Error::Timeout(d),
        Refused::Closed => Error::Closed,
        _ => gone(),
    }
}
