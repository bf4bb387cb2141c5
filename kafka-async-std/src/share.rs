//! [`ShareConsumer`]: the share consumer (KIP-932 share groups) on async-std or smol, a
//! thin face over [`kafka_driver::front::AsyncShareConsumer`] (as `kafka-tokio`'s).

use std::sync::Arc;

use kafka_core::config::ClientConfig;
use kafka_core::share::ShareConsumer as CoreShare;
pub use kafka_core::share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareError, ShareEvent, ShareRecord,
};
use kafka_driver::front;

use crate::{runtime, Error, Spawner, Task};

kafka_driver::async_share_consumer! {
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
}
