//! [`TxnPipeline`]: exactly-once consume-transform-produce, a group consumer tied to a
//! transactional producer.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::config::ClientConfig;

use crate::{ConsumerRecord, Error, GroupConsumer, Producer, Record};

/// Exactly-once consume-transform-produce: each [`run_once`](TxnPipeline::run_once)
/// polls the group consumer, sends what `transform` makes of the records in one
/// transaction with the consumed offsets, and commits it. A transaction is open only
/// inside `run_once`, never across a poll, so a rebalance (delivered inside the poll)
/// never finds one open: partitions are given up with everything before them committed
/// or aborted. If the member lost its generation meanwhile, the coordinator refuses its
/// offsets (KIP-447) and the transaction aborts. On an abortable error the transaction
/// is aborted and the consumer rewound to the first record of the batch, so the next
/// `run_once` sees the same records again.
///
/// ```no_run
/// use kafka_blocking::{Record, TxnPipeline};
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// let consumer = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("group.id", "enricher"),
///     ("isolation.level", "read_committed"),
///     ("enable.auto.commit", "false"),
/// ])?;
/// let producer = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("transactional.id", "enricher-1"),
/// ])?;
/// let pipeline = TxnPipeline::new(consumer, producer, ["raw"])?;
/// loop {
///     pipeline.run_once(Duration::from_secs(1), |r, out| {
///         out.push(Record::new("enriched", r.value.clone().unwrap_or_default()));
///     })?;
///     # break;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TxnPipeline {
    consumer: GroupConsumer,
    producer: Producer,
    timeout: Duration,
}

impl TxnPipeline {
    /// A pipeline reading `topics` with `consumer` (it must read `read_committed` with
    /// `enable.auto.commit=false`) and writing with `producer` (it must have a
    /// `transactional.id`); `init_transactions` runs here.
    pub fn new<T: AsRef<str>>(
        consumer: ClientConfig,
        producer: ClientConfig,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<TxnPipeline, Error> {
        kafka_driver::pipeline::check_configs(&consumer, &producer)?;
        let timeout = producer.producer().transaction_timeout;
        let producer = Producer::new(producer)?;
        producer.init_transactions(timeout)?;
        let consumer = GroupConsumer::new(consumer)?;
        consumer.subscribe(topics)?;
        Ok(TxnPipeline {
            consumer,
            producer,
            timeout,
        })
    }

    /// Polls once (up to `poll_timeout`); if records came, sends `transform`'s output for
    /// each (it pushes any number of records) and the consumed offsets in one
    /// transaction and commits it. Returns how many input records were committed (0 if
    /// none came). An abortable error aborts and rewinds (see the type docs) and is
    /// returned; calling again retries the same records. A fatal one (another instance
    /// took the `transactional.id` over) means: drop the pipeline.
    pub fn run_once(
        &self,
        poll_timeout: Duration,
        mut transform: impl FnMut(&ConsumerRecord, &mut Vec<Record>),
    ) -> Result<usize, Error> {
        let records = self.consumer.poll(poll_timeout)?;
        if records.is_empty() {
            return Ok(0);
        }
        let mut first: BTreeMap<(&str, i32), i64> = BTreeMap::new();
        for r in &records {
            first.entry((&r.topic, r.partition)).or_insert(r.offset);
        }
        self.producer.begin_transaction()?;
        match self.transact(&records, &mut transform) {
            Ok(()) => Ok(records.len()),
            Err(Error::Transaction(e)) if e.is_abortable() => {
                self.producer.abort_transaction(self.timeout)?;
                for ((topic, partition), offset) in first {
                    self.consumer.seek(topic, partition, offset)?;
                }
                Err(Error::Transaction(e))
            }
            Err(e) => Err(e),
        }
    }

    fn transact(
        &self,
        records: &[ConsumerRecord],
        transform: &mut impl FnMut(&ConsumerRecord, &mut Vec<Record>),
    ) -> Result<(), Error> {
        let mut out = Vec::new();
        for r in records {
            transform(r, &mut out);
            for record in out.drain(..) {
                // Outcomes are not waited for: the commit flushes them, and a failed
                // record fails the commit.
                drop(self.producer.send(record)?);
            }
        }
        let (group, offsets) = self.consumer.transaction_offsets()?;
        self.producer
            .send_offsets_to_transaction(offsets, &group, self.timeout)?;
        self.producer.commit_transaction(self.timeout)
    }

    /// The group consumer (for its metrics, assignment, or a rebalance listener set
    /// with `subscribe_with`).
    pub fn consumer(&self) -> &GroupConsumer {
        &self.consumer
    }

    /// The transactional producer.
    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    /// Closes both: the consumer leaves the group, the producer finishes.
    pub fn close(self) -> Result<(), Error> {
        self.consumer.close()?;
        self.producer.close(self.timeout)?;
        Ok(())
    }
}
