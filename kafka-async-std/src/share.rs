//! [`ShareConsumer`]: the share consumer (KIP-932 share groups) on async-std or smol, a
//! thin face over [`kafka_driver::front::AsyncShareConsumer`] (as `kafka-tokio`'s).

use std::sync::Arc;
use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::share::ShareConsumer as CoreShare;
pub use kafka_core::share::{
    AckResults, AcknowledgeType, ShareCommitId, ShareError, ShareEvent, ShareRecord,
};
use kafka_driver::front::{self, AsyncShareConsumer, ShareCallError};

use crate::{runtime, Error, Spawner, Task};

/// A member of a share group (`group.id`; KIP-932): the members consume the same
/// partitions together, each record handed to one member at a time, with its delivery
/// count. `share.acknowledgement.mode`: `implicit` (default: a poll accepts what the
/// previous one returned) or `explicit` ([`ShareConsumer::acknowledge`]).
/// [`ShareConsumer::close`] accepts (implicit) or releases (explicit) what was not
/// acknowledged, releases what was fetched but not handed out, and leaves.
///
/// ```no_run
/// use kafka_async_std::ShareConsumer;
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// smol::block_on(async {
///     let config = ClientConfig::from_pairs([
///         ("bootstrap.servers", "127.0.0.1:9092"),
///         ("group.id", "workers"),
///     ])?;
///     let consumer = ShareConsumer::with_spawner(config, |task| smol::spawn(task).detach())?;
///     consumer.subscribe(["jobs"]).await?;
///     for record in consumer.poll(Duration::from_secs(1)).await? {
///         println!("{}@{} (delivery {})", record.partition, record.offset, record.delivery_count);
///     }
///     consumer.close().await?;
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ShareConsumer {
    inner: AsyncShareConsumer,
}

fn failed(e: ShareCallError) -> Error {
    match e {
        ShareCallError::Share(e) => Error::Share(e),
        ShareCallError::Timeout(d) => Error::Timeout(d),
        _ => Error::Closed,
    }
}

impl ShareConsumer {
    /// Creates the consumer, its driver spawned on async-std's executor; it joins at
    /// [`ShareConsumer::subscribe`].
    #[cfg(feature = "async-std")]
    pub fn new(config: ClientConfig) -> Result<ShareConsumer, Error> {
        ShareConsumer::with_spawner(config, |task| {
            async_std::task::spawn(task);
        })
    }

    /// Creates the consumer; `spawner` runs its driver and socket tasks to completion in
    /// the background (smol: `|task| smol::spawn(task).detach()`).
    pub fn with_spawner<S>(config: ClientConfig, spawner: S) -> Result<ShareConsumer, Error>
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        let core = CoreShare::new(&config).map_err(Error::Share)?;
        let close_timeout = config.common().request_timeout * 2;
        let spawner: Arc<Spawner> = Arc::new(spawner);
        let front = front::start(runtime::AsyncIo(spawner), config)?;
        Ok(ShareConsumer {
            inner: front.start_share(core, close_timeout),
        })
    }

    /// Subscribes to exactly these topics and joins (an empty list leaves).
    pub async fn subscribe<T: AsRef<str>>(
        &self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<(), Error> {
        let topics = topics.into_iter().map(|t| t.as_ref().to_string()).collect();
        self.inner.subscribe(topics).await.map_err(failed)
    }

    /// Waits up to `timeout` for records; implicit mode accepts the previous poll's first.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ShareRecord>, Error> {
        self.inner.poll(timeout).await.map_err(failed)
    }

    /// Acknowledges a record `poll` returned (explicit mode).
    pub async fn acknowledge(
        &self,
        record: &ShareRecord,
        kind: AcknowledgeType,
    ) -> Result<(), Error> {
        self.inner.acknowledge(record, kind).await.map_err(failed)
    }

    /// Sends every acknowledgement decided so far and waits up to `timeout` for the
    /// per-partition results.
    pub async fn commit_sync(&self, timeout: Duration) -> Result<AckResults, Error> {
        self.inner.commit_sync(timeout).await.map_err(failed)
    }

    /// Sends every acknowledgement decided so far; the result comes as a
    /// [`ShareEvent::Committed`] from [`ShareConsumer::take_events`].
    pub async fn commit_async(&self) -> Result<ShareCommitId, Error> {
        self.inner.commit_async().await.map_err(failed)
    }

    /// Events since the last call.
    pub async fn take_events(&self) -> Vec<ShareEvent> {
        self.inner.take_events().await
    }

    /// Closes: acknowledgements owed are sent, the sessions closed, the member leaves.
    pub async fn close(&self) -> Result<(), Error> {
        self.inner.close().await.map_err(failed)
    }
}
