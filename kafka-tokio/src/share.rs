//! [`ShareConsumer`]: the share consumer (KIP-932 share groups) on a tokio runtime, a
//! thin face over [`kafka_driver::front::AsyncShareConsumer`].

use kafka_core::config::ClientConfig;
use kafka_core::share::ShareConsumer as CoreShare;
pub use kafka_core::share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareError, ShareEvent, ShareRecord,
};
use kafka_driver::front;
use tokio::runtime::Handle;

use crate::{runtime, Error};

kafka_driver::async_share_consumer! {
    /// A member of a share group (`group.id`; KIP-932): the members consume the same
    /// partitions together, each record handed to one member at a time, with its delivery
    /// count. `share.acknowledgement.mode`: `implicit` (default: a poll accepts what the
    /// previous one returned) or `explicit` ([`ShareConsumer::acknowledge`]).
    /// [`ShareConsumer::close`] accepts (implicit) or releases (explicit) what was not
    /// acknowledged, releases what was fetched but not handed out, and leaves.
    ///
    /// ```no_run
    /// use kafka_core::config::ClientConfig;
    /// use kafka_tokio::ShareConsumer;
    /// use std::time::Duration;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let consumer = ShareConsumer::new(ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("group.id", "workers"),
    ///     ])?)?;
    ///     consumer.subscribe(["jobs"]).await?;
    ///     for record in consumer.poll(Duration::from_secs(1)).await? {
    ///         println!("{}@{} (delivery {})", record.partition, record.offset, record.delivery_count);
    ///     }
    ///     consumer.close().await?;
    ///     Ok(())
    /// }
    /// ```
}

impl ShareConsumer {
    /// Creates the consumer and spawns its driver on the current tokio runtime; it joins
    /// at [`ShareConsumer::subscribe`].
    pub fn new(config: ClientConfig) -> Result<ShareConsumer, Error> {
        let handle = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        ShareConsumer::with_runtime(config, &handle)
    }

    /// Like [`ShareConsumer::new`], spawning the driver on the runtime behind `handle`.
    pub fn with_runtime(config: ClientConfig, handle: &Handle) -> Result<ShareConsumer, Error> {
        let core = CoreShare::new(&config).map_err(Error::Share)?;
        let close_timeout = config.common().request_timeout * 2;
        let front = front::start(runtime::Tokio(handle.clone()), config)?;
        Ok(ShareConsumer {
            inner: front.start_share(core, close_timeout),
        })
    }
}
