//! [`TxnPipeline`]: exactly-once consume-transform-produce on tokio, a group consumer tied
//! to a transactional producer (the macro is shared with `kafka-async-std`).

use kafka_core::config::ClientConfig;

use crate::{ConsumerRecord, Error, GroupConsumer, Producer, Record};

kafka_driver::async_txn_pipeline!(
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
    /// use kafka_core::config::ClientConfig;
    /// use kafka_tokio::{Record, TxnPipeline};
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let consumer = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("group.id", "enricher"),
    ///         ("isolation.level", "read_committed"),
    ///         ("enable.auto.commit", "false"),
    ///     ])?;
    ///     let producer = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("transactional.id", "enricher-1"),
    ///     ])?;
    ///     let pipeline = TxnPipeline::new(consumer, producer, ["raw"]).await?;
    ///     loop {
    ///         let upper = |r: &kafka_tokio::ConsumerRecord, out: &mut Vec<Record>| {
    ///             let v = r.value.as_deref().unwrap_or_default().to_ascii_uppercase();
    ///             out.push(Record::new("enriched", v));
    ///         };
    ///         pipeline.run_once(Duration::from_secs(1), upper).await?;
    ///         # break;
    ///     }
    ///     pipeline.close().await?;
    ///     Ok(())
    /// }
    /// ```
);

impl TxnPipeline {
    /// A pipeline reading `topics` with `consumer` (it must read `read_committed` with
    /// `enable.auto.commit=false`) and writing with `producer` (it must have a
    /// `transactional.id`); `init_transactions` runs here. Inside a tokio runtime.
    pub async fn new<T: AsRef<str>>(
        consumer: ClientConfig,
        producer: ClientConfig,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<TxnPipeline, Error> {
        TxnPipeline::build(
            consumer,
            producer,
            topics,
            GroupConsumer::new,
            Producer::new,
        )
        .await
    }
}
