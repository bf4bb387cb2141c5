//! Consume-transform-produce pipelines: the settings check every adapter's `TxnPipeline`
//! makes, and the async adapters' `TxnPipeline` (tokio, async-std) as a macro over their
//! `GroupConsumer`, `Producer` and `Error` (`kafka-blocking` writes its own, blocking).

use kafka_core::config::{ClientConfig, ConfigError, IsolationLevel};

/// Refuses a consumer that does not read `read_committed` with auto-commit off, or a
/// producer without a `transactional.id`: exactly-once needs all three.
pub fn check_configs(consumer: &ClientConfig, producer: &ClientConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, value: &str, why: &str| ConfigError::Conflict {
        reason: format!("{key}={value}: {why}"),
    };
    if consumer.consumer().isolation_level != IsolationLevel::ReadCommitted {
        return Err(bad(
            "isolation.level",
            "read_uncommitted",
            "a pipeline reads read_committed",
        ));
    }
    if consumer.group().enable_auto_commit {
        return Err(bad(
            "enable.auto.commit",
            "true",
            "offsets commit in the transaction",
        ));
    }
    if producer.producer().transactional_id.is_none() {
        return Err(bad(
            "transactional.id",
            "",
            "a pipeline writes transactionally",
        ));
    }
    Ok(())
}

/// An async adapter's `TxnPipeline` (the struct and its methods) over the adapter's
/// `GroupConsumer`, `Producer`, `Record`, `ConsumerRecord` and `Error` (with `Config` and
/// `Transaction` variants), which must be in scope; the adapter writes its constructors
/// over the private `TxnPipeline::build`. Same contract as `kafka_blocking::TxnPipeline`:
/// a transaction is open only inside `run_once`.
#[macro_export]
macro_rules! async_txn_pipeline {
    ($(#[$meta:meta])*) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct TxnPipeline {
            consumer: GroupConsumer,
            producer: Producer,
            timeout: ::std::time::Duration,
        }

        impl TxnPipeline {
            /// Checks the settings (see [`check_configs`]), creates the producer with
            /// `make_producer` and runs `init_transactions`, then creates the consumer with
            /// `make_consumer` and subscribes it to `topics`: the adapter's constructors
            /// call this with their own way of spawning.
            ///
            /// [`check_configs`]: $crate::pipeline::check_configs
            async fn build<T: AsRef<str>>(
                consumer: ::kafka_core::config::ClientConfig,
                producer: ::kafka_core::config::ClientConfig,
                topics: impl IntoIterator<Item = T>,
                make_consumer: impl FnOnce(::kafka_core::config::ClientConfig) -> Result<GroupConsumer, Error>,
                make_producer: impl FnOnce(::kafka_core::config::ClientConfig) -> Result<Producer, Error>,
            ) -> Result<TxnPipeline, Error> {
                $crate::pipeline::check_configs(&consumer, &producer)?;
                let timeout = producer.producer().transaction_timeout;
                let producer = make_producer(producer)?;
                producer.init_transactions(timeout).await?;
                let consumer = make_consumer(consumer)?;
                consumer.subscribe(topics)?;
                Ok(TxnPipeline {
                    consumer,
                    producer,
                    timeout,
                })
            }

            /// Polls once (up to `poll_timeout`); if records came, sends `transform`'s
            /// output for each (it pushes any number of records) and the consumed offsets
            /// in one transaction and commits it. Returns how many input records were
            /// committed (0 if none came). An abortable error aborts the transaction,
            /// rewinds each partition to its first record of the batch and is returned;
            /// calling again retries the same records. A fatal one (another instance took
            /// the `transactional.id` over) means: drop the pipeline.
            pub async fn run_once(
                &self,
                poll_timeout: ::std::time::Duration,
                mut transform: impl FnMut(&ConsumerRecord, &mut Vec<Record>),
            ) -> Result<usize, Error> {
                let records = self.consumer.poll(poll_timeout).await?;
                if records.is_empty() {
                    return Ok(0);
                }
                let mut first: ::std::collections::BTreeMap<(&str, i32), i64> =
                    ::std::collections::BTreeMap::new();
                for r in &records {
                    first.entry((&r.topic, r.partition)).or_insert(r.offset);
                }
                self.producer.begin_transaction().await?;
                match self.transact(&records, &mut transform).await {
                    Ok(()) => Ok(records.len()),
                    Err(Error::Transaction(e)) if e.is_abortable() => {
                        self.producer.abort_transaction(self.timeout).await?;
                        for ((topic, partition), offset) in first {
                            self.consumer.seek(topic, partition, offset)?;
                        }
                        Err(Error::Transaction(e))
                    }
                    Err(e) => Err(e),
                }
            }

            async fn transact(
                &self,
                records: &[ConsumerRecord],
                transform: &mut impl FnMut(&ConsumerRecord, &mut Vec<Record>),
            ) -> Result<(), Error> {
                let mut out = Vec::new();
                for r in records {
                    transform(r, &mut out);
                    for record in out.drain(..) {
                        // Outcomes are not waited for: the commit flushes them, and a
                        // failed record fails the commit.
                        drop(self.producer.send(record).await?);
                    }
                }
                let (group, offsets) = self.consumer.transaction_offsets().await?;
                self.producer
                    .send_offsets_to_transaction(offsets, &group, self.timeout)
                    .await?;
                self.producer.commit_transaction(self.timeout).await
            }

            /// The group consumer (for its metrics, assignment, or a rebalance listener
            /// set with `subscribe_with`).
            pub fn consumer(&self) -> &GroupConsumer {
                &self.consumer
            }

            /// The transactional producer.
            pub fn producer(&self) -> &Producer {
                &self.producer
            }

            /// Closes both: the consumer leaves the group, the producer finishes.
            pub async fn close(self) -> Result<(), Error> {
                self.consumer.close().await?;
                self.producer.close(self.timeout).await?;
                Ok(())
            }
        }
    };
}
