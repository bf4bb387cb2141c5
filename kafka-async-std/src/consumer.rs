//! [`Consumer`]: the async consumer (assign mode) on the async-io reactor (a thin face
//! over [`kafka_driver::front::AsyncConsumer`], shared with `kafka-tokio`). It is also a
//! [`Stream`](futures_lite::Stream) of records.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use kafka_core::config::ClientConfig;
use kafka_core::consumer::Consumer as CoreConsumer;
use kafka_driver::consumer::ConsumerError;
pub use kafka_driver::consumer::{ConsumerMetrics, ConsumerRecord};
use kafka_driver::front;

use crate::{runtime, Error, Spawner, Task};

kafka_driver::async_consumer! {
    /// The async consumer of assigned partitions: the driver task fetches ahead (KIP-227
    /// sessions, `fetch.*`, `queued.max.messages.kbytes`); [`Consumer::recv`] hands out
    /// one record, [`Consumer::poll`] up to `max.poll.records`, and as a `Stream` it yields
    /// records until closed. Records are the core's [`ConsumerRecord`]s: key, value and
    /// headers are slices of the fetched buffers, never copied. Cheap to clone (`Send +
    /// Sync`; clones share one queue); when the last clone goes the consumer closes in the
    /// background.
    ///
    /// ```no_run
    /// use kafka_async_std::Consumer;
    /// use kafka_core::config::ClientConfig;
    ///
    /// smol::block_on(async {
    ///     let config = ClientConfig::from_pairs([
    ///         ("bootstrap.servers", "127.0.0.1:9092"),
    ///         ("auto.offset.reset", "earliest"),
    ///     ])?;
    ///     let consumer = Consumer::with_spawner(config, |task| smol::spawn(task).detach())?;
    ///     consumer.assign([("events", 0), ("events", 1)])?;
    ///     let record = consumer.recv().await?;
    ///     println!("{}-{}@{}: {:?}", record.topic, record.partition, record.offset, record.value);
    ///     consumer.close().await?;
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
}

impl Consumer {
    /// Creates the consumer, its driver spawned on async-std's executor; connections
    /// open on first use.
    #[cfg(feature = "async-std")]
    pub fn new(config: ClientConfig) -> Result<Consumer, Error> {
        Consumer::with_spawner(config, |task| {
            async_std::task::spawn(task);
        })
    }

    /// Creates the consumer; `spawner` runs its driver and socket tasks to completion
    /// in the background (smol: `|task| smol::spawn(task).detach()`).
    pub fn with_spawner<S>(config: ClientConfig, spawner: S) -> Result<Consumer, Error>
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        let consumer = CoreConsumer::new(&config);
        let spawner: Arc<Spawner> = Arc::new(spawner);
        let front = front::start(runtime::AsyncIo(spawner), config.clone())?;
        Ok(Consumer {
            inner: front.start_consumer(&config, consumer),
        })
    }
}

/// Records until the consumer is closed; a partition error is an `Err` item.
impl futures_lite::Stream for Consumer {
    type Item = Result<ConsumerRecord, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.poll_recv(cx).map(|r| match r {
            Err(ConsumerError::Closed) => None,
            r => Some(r.map_err(failed)),
        })
    }
}
