//! [`Producer`]: the async producer on the async-io reactor (a thin face over
//! [`kafka_driver::front::AsyncProducer`], shared with `kafka-tokio`).

use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::producer::{ProduceError, Producer as CoreProducer, ProducerMetrics};
use kafka_driver::front::{self, AsyncProducer};
use kafka_driver::producer::Refused;
pub use kafka_driver::producer::{Delivery as DeliveryFuture, Record, RecordMetadata};

use std::sync::Arc;

use crate::{runtime, Error, Spawner, Task};

/// The async producer. `send` stages a record and returns its [`DeliveryFuture`] at
/// once (it waits only while `buffer.memory` is used up, at most `max.block.ms`); the
/// driver task batches, sends and resolves deliveries. Cheap to clone (`Send + Sync`);
/// when the last clone goes the producer closes gracefully in the background.
///
/// ```no_run
/// use kafka_core::config::ClientConfig;
/// use kafka_async_std::{Producer, Record};
/// use std::time::Duration;
///
/// smol::block_on(async {
///     let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
///     let producer = Producer::with_spawner(config, |task| smol::spawn(task).detach())?;
///     let delivery = producer.send(Record::new("events", "hello").key("k1")).await?;
///     let written = delivery.await?;
///     println!("partition {} offset {}", written.partition, written.offset);
///     producer.close(Duration::from_secs(30)).await?;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
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
/// use kafka_async_std::{ConsumerRecord, Error, GroupConsumer, Producer, Record};
/// use kafka_core::config::ClientConfig;
///
/// async fn transact(
///     p: &Producer,
///     c: &GroupConsumer,
///     records: &[ConsumerRecord],
/// ) -> Result<(), Error> {
///     let t = Duration::from_secs(30);
///     p.begin_transaction().await?;
///     for r in records {
///         let value = r.value.as_deref().unwrap_or_default().to_ascii_uppercase();
///         // Not waited for: a record that fails makes the commit fail.
///         drop(p.send(Record::new("output", value)).await?);
///     }
///     let (group, offsets) = c.transaction_offsets().await?;
///     p.send_offsets_to_transaction(offsets, &group, t).await?;
///     p.commit_transaction(t).await
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// smol::block_on(async {
///     let spawn = |task| smol::spawn(task).detach();
///     let consumer = GroupConsumer::with_spawner(
///         ClientConfig::from_pairs([
///             ("bootstrap.servers", "127.0.0.1:9092"),
///             ("group.id", "uppercase"),
///             ("enable.auto.commit", "false"),
///             ("isolation.level", "read_committed"),
///         ])?,
///         spawn,
///     )?;
///     consumer.subscribe(["input"])?;
///     let producer = Producer::with_spawner(
///         ClientConfig::from_pairs([
///             ("bootstrap.servers", "127.0.0.1:9092"),
///             ("transactional.id", "uppercase-1"),
///         ])?,
///         spawn,
///     )?;
///     producer.init_transactions(Duration::from_secs(30)).await?;
///     loop {
///         let records = consumer.poll(Duration::from_millis(500)).await?;
///         if records.is_empty() {
///             continue;
///         }
///         match transact(&producer, &consumer, &records).await {
///             Ok(()) => {}
///             Err(Error::Transaction(e)) if e.is_abortable() => {
///                 producer.abort_transaction(Duration::from_secs(30)).await?;
///                 let mut firsts = BTreeMap::new();
///                 for r in &records {
///                     firsts.entry((r.topic.clone(), r.partition)).or_insert(r.offset);
///                 }
///                 for ((topic, partition), offset) in firsts {
///                     consumer.seek(&topic, partition, offset)?;
///                 }
///             }
///             Err(e) => return Err(e.into()), // fatal (e.g. fenced): drop the producer
///         }
///     }
/// })
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Producer {
    inner: AsyncProducer,
}

impl Producer {
    /// Creates the producer, its driver spawned on async-std's executor; connections
    /// open on first use.
    #[cfg(feature = "async-std")]
    pub fn new(config: ClientConfig) -> Result<Producer, Error> {
        Producer::with_spawner(config, |task| {
            async_std::task::spawn(task);
        })
    }

    /// Creates the producer; `spawner` runs its driver and socket tasks to completion
    /// in the background (smol: `|task| smol::spawn(task).detach()`).
    pub fn with_spawner<S>(config: ClientConfig, spawner: S) -> Result<Producer, Error>
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        let producer = CoreProducer::new(&config)?;
        let spawner: Arc<Spawner> = Arc::new(spawner);
        let front = front::start(runtime::AsyncIo(spawner), config.clone())?;
        Ok(Producer {
            inner: front.start_producer(&config, producer),
        })
    }

    /// Stages `record` and returns its delivery future. Waits only while the staging
    /// queue is full, at most `max.block.ms` ([`Error::Timeout`]).
    pub async fn send(&self, record: Record) -> Result<DeliveryFuture, Error> {
        self.inner.send(record).await.map_err(refused)
    }

    /// Stages `record`; `callback` gets its outcome on the driver task (keep it short
    /// and non-blocking). Waits like [`Producer::send`].
    pub async fn send_with(
        &self,
        record: Record,
        callback: impl FnOnce(Result<RecordMetadata, ProduceError>) + Send + 'static,
    ) -> Result<(), Error> {
        self.inner
            .send_with(record, Box::new(callback))
            .await
            .map_err(refused)
    }

    /// Resolves once every record sent before the call is reported (linger is cut
    /// short).
    pub async fn flush(&self) -> Result<(), Error> {
        self.inner.flush().await.map_err(refused)
    }

    /// Closes: no more sends; waits up to `timeout` for every record to be reported,
    /// then aborts (what is left is reported [`ProduceError::Closed`]). Returns the
    /// final counters.
    pub async fn close(&self, timeout: Duration) -> Result<ProducerMetrics, Error> {
        self.inner.close(timeout).await.map_err(refused)
    }

    kafka_driver::async_producer_transactions!();

    /// A snapshot of the core producer's counters.
    pub async fn metrics(&self) -> Result<ProducerMetrics, Error> {
        self.inner.metrics().await.map_err(refused)
    }
}

fn txn_failed(e: kafka_driver::front::TxnFailure) -> Error {
    match e {
        kafka_driver::front::TxnFailure::Txn(e) => Error::Transaction(e),
        kafka_driver::front::TxnFailure::Timeout(d) => Error::Timeout(d),
        _ => Error::DriverGone,
    }
}

fn refused(e: Refused) -> Error {
    match e {
        Refused::Timeout(d) => Error::Timeout(d),
        Refused::Closed => Error::Closed,
        _ => Error::DriverGone,
    }
}
