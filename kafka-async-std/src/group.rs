//! [`GroupConsumer`]: the group consumer (`subscribe`, classic protocol) on the async-io
//! reactor (a thin face over [`kafka_driver::front::AsyncGroupConsumer`], shared with
//! `kafka-tokio` through `kafka_driver::async_group_consumer!`). It is also a
//! [`Stream`](futures_lite::Stream) of records.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupConsumer as CoreGroup;
use kafka_driver::consumer::{ConsumerError, ConsumerMetrics, ConsumerRecord};
use kafka_driver::front;
pub use kafka_driver::group::{
    CommitError, CommitHandle, Offsets, Rebalance, RebalanceListener, TopicPartition,
};

use crate::consumer::failed;
use crate::{runtime, Error, Spawner, Task};

kafka_driver::async_group_consumer! {
    /// A consumer in a group (`group.id`, `group.protocol=classic`): [`subscribe`] joins,
    /// the group's assignor shares the topics' partitions among its members, and
    /// [`GroupConsumer::poll`] / [`GroupConsumer::recv`] (or the `Stream`) hand out records
    /// of the owned partitions, from the committed offsets on. Rebalance events go to a
    /// [`RebalanceListener`] inside the poll, on the polling task, before any later record.
    /// Commits (automatic every `auto.commit.interval.ms`, at a revocation and at close, or
    /// [`GroupConsumer::commit_sync`] / [`GroupConsumer::commit_async`]) are of the
    /// positions the application has taken, never of what the driver fetched ahead. Cheap to
    /// clone; when the last clone goes the consumer closes in the background (commit and
    /// leave), without blocking.
    ///
    /// [`subscribe`]: GroupConsumer::subscribe
    ///
    /// ```no_run
    /// use futures_lite::StreamExt;
    /// use kafka_async_std::{GroupConsumer, Offsets};
    /// use kafka_core::config::ClientConfig;
    /// use std::time::Duration;
    ///
    /// smol::block_on(async {
    ///     let config = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("group.id", "billing"),
    ///         ("auto.offset.reset", "earliest"),
    ///     ])?;
    ///     let consumer = GroupConsumer::with_spawner(config, |task| smol::spawn(task).detach())?;
    ///     consumer.subscribe(["events"])?;
    ///     let mut records = consumer.clone();
    ///     while let Some(record) = records.next().await {
    ///         let record = record?;
    ///         println!("{}-{}@{}", record.topic, record.partition, record.offset);
    ///         break;
    ///     }
    ///     consumer.commit_sync(Offsets::Consumed, Duration::from_secs(10)).await?;
    ///     consumer.close().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
}

impl GroupConsumer {
    /// Creates the consumer, its driver spawned on async-std's executor; it joins at
    /// [`GroupConsumer::subscribe`].
    #[cfg(feature = "async-std")]
    pub fn new(config: ClientConfig) -> Result<GroupConsumer, Error> {
        GroupConsumer::with_spawner(config, |task| {
            async_std::task::spawn(task);
        })
    }

    /// Creates the consumer; `spawner` runs its driver and socket tasks to completion
    /// in the background (smol: `|task| smol::spawn(task).detach()`).
    pub fn with_spawner<S>(config: ClientConfig, spawner: S) -> Result<GroupConsumer, Error>
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        let group = CoreGroup::new(&config)?;
        let spawner: Arc<Spawner> = Arc::new(spawner);
        let front = front::start(runtime::AsyncIo(spawner), config.clone())?;
        Ok(GroupConsumer::over(front.start_group(&config, group)))
    }
}

/// Records of owned partitions until the consumer is closed (rebalance events go to the
/// listener first); an error is an `Err` item.
impl futures_lite::Stream for GroupConsumer {
    type Item = Result<ConsumerRecord, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &*self;
        let listener = this.listener.clone();
        let mut on = |e: &[Rebalance]| listener.deliver(this, e);
        this.inner.poll_recv(cx, &mut on).map(|r| match r {
            Err(ConsumerError::Closed) => None,
            r => Some(r.map_err(failed)),
        })
    }
}
