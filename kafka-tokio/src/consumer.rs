//! [`Consumer`]: the async consumer (assign mode) on a tokio runtime (a thin face over
//! [`kafka_driver::front::AsyncConsumer`], shared with `kafka-async-std`).

use kafka_core::config::ClientConfig;
use kafka_core::consumer::Consumer as CoreConsumer;
use kafka_driver::consumer::ConsumerError;
pub use kafka_driver::consumer::{ConsumerMetrics, ConsumerRecord};
use kafka_driver::front;
use tokio::runtime::Handle;

use crate::{runtime, Error};

kafka_driver::async_consumer! {
    /// The async consumer of assigned partitions: the driver task fetches ahead (KIP-227
    /// sessions, `fetch.*`, `queued.max.messages.kbytes`); [`Consumer::recv`] hands out
    /// one record, [`Consumer::poll`] up to `max.poll.records`, and as a
    /// [`Stream`](futures_core::Stream) it yields records until closed. Records are the core's
    /// [`ConsumerRecord`]s: key, value and headers are slices of the fetched buffers, never
    /// copied. Cheap to clone (`Send + Sync`; clones share one queue); when the last clone
    /// goes the consumer closes in the background.
    ///
    /// ```no_run
    /// use kafka_core::config::ClientConfig;
    /// use kafka_tokio::Consumer;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let config = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("auto.offset.reset", "earliest"),
    ///     ])?;
    ///     let consumer = Consumer::new(config)?;
    ///     consumer.assign([("events", 0), ("events", 1)])?;
    ///     let record = consumer.recv().await?;
    ///     println!("{}-{}@{}: {:?}", record.topic, record.partition, record.offset, record.value);
    ///     consumer.close().await?;
    ///     Ok(())
    /// }
    /// ```
}

impl Consumer {
    /// Creates the consumer and spawns its driver on the current tokio runtime;
    /// connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Consumer, Error> {
        let handle = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        Consumer::with_runtime(config, &handle)
    }

    /// Like [`Consumer::new`], spawning the driver on the runtime behind `handle`.
    pub fn with_runtime(config: ClientConfig, handle: &Handle) -> Result<Consumer, Error> {
        let consumer = CoreConsumer::new(&config);
        let front = front::start(runtime::Tokio(handle.clone()), config.clone())?;
        Ok(Consumer {
            inner: front.start_consumer(&config, consumer),
        })
    }
}

/// Records until the consumer is closed; a partition error is an `Err` item (use it
/// with `tokio_stream::StreamExt` or `futures::StreamExt`).
impl futures_core::Stream for Consumer {
    type Item = Result<ConsumerRecord, Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.inner.poll_recv(cx).map(|r| match r {
            Err(ConsumerError::Closed) => None,
            r => Some(r.map_err(failed)),
        })
    }
}
