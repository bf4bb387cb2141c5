//! [`GroupConsumer`]: the group consumer (`subscribe`, classic protocol) on a tokio
//! runtime (a thin face over [`kafka_driver::front::AsyncGroupConsumer`], shared with
//! `kafka-async-std` through `kafka_driver::async_group_consumer!`).

use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupConsumer as CoreGroup;
use kafka_driver::consumer::{ConsumerMetrics, ConsumerRecord};
use kafka_driver::front;
pub use kafka_driver::group::{
    CommitError, CommitHandle, Offsets, Rebalance, RebalanceListener, TopicPartition,
};
use tokio::runtime::Handle;

use crate::consumer::failed;
use crate::{runtime, Error};

kafka_driver::async_group_consumer! {
    /// A consumer in a group (`group.id`, `group.protocol=classic`): [`subscribe`] joins,
    /// the group's assignor shares the topics' partitions among its members, and
    /// [`GroupConsumer::poll`] / [`GroupConsumer::recv`] hand out records of the owned
    /// partitions, from the committed offsets on. Rebalance events go to a
    /// [`RebalanceListener`] inside `poll`, on the polling task, before any later record.
    /// Commits (automatic every `auto.commit.interval.ms`, at a revocation and at close, or
    /// [`GroupConsumer::commit_sync`] / [`GroupConsumer::commit_async`]) are of the
    /// positions the application has taken, never of what the driver fetched ahead. Cheap to
    /// clone; when the last clone goes the consumer closes in the background (commit and
    /// leave), without blocking.
    ///
    /// [`subscribe`]: GroupConsumer::subscribe
    ///
    /// ```no_run
    /// use kafka_core::config::ClientConfig;
    /// use kafka_tokio::{GroupConsumer, Offsets, Rebalance};
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let config = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("group.id", "billing"),
    ///         ("auto.offset.reset", "earliest"),
    ///     ])?;
    ///     let consumer = GroupConsumer::new(config)?;
    ///     consumer.subscribe_with(["events"], |c: &GroupConsumer, e: &Rebalance| {
    ///         if let Rebalance::Revoked(_) = e {
    ///             let _ = c.commit_async(Offsets::Consumed); // lands before the handover
    ///         }
    ///     })?;
    ///     for record in consumer.poll(Duration::from_secs(1)).await? {
    ///         println!("{}-{}@{}", record.topic, record.partition, record.offset);
    ///     }
    ///     consumer.commit_sync(Offsets::Consumed, Duration::from_secs(10)).await?;
    ///     consumer.close().await?;
    ///     Ok(())
    /// }
    /// ```
}

impl GroupConsumer {
    /// Creates the consumer and spawns its driver on the current tokio runtime; it
    /// joins at [`GroupConsumer::subscribe`].
    pub fn new(config: ClientConfig) -> Result<GroupConsumer, Error> {
        let handle = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        GroupConsumer::with_runtime(config, &handle)
    }

    /// Like [`GroupConsumer::new`], spawning the driver on the runtime behind `handle`.
    pub fn with_runtime(config: ClientConfig, handle: &Handle) -> Result<GroupConsumer, Error> {
        let group = CoreGroup::new(&config)?;
        let front = front::start(runtime::Tokio(handle.clone()), config.clone())?;
        Ok(GroupConsumer::over(front.start_group(&config, group)))
    }
}

/// Records of owned partitions until the consumer is closed (rebalance events go to the
/// listener first); an error is an `Err` item.
impl futures_core::Stream for GroupConsumer {
    type Item = Result<ConsumerRecord, Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &*self;
        let listener = this.listener.clone();
        let mut on = |e: &[Rebalance]| listener.deliver(this, e);
        this.inner.poll_recv(cx, &mut on).map(|r| match r {
            Err(kafka_driver::consumer::ConsumerError::Closed) => None,
            r => Some(r.map_err(failed)),
        })
    }
}
