//! [`Consumer`]: the async consumer (assign mode) on a tokio runtime (a thin face over
//! [`kafka_driver::front::AsyncConsumer`], shared with `kafka-async-std`).

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::admin::TopicPartition;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{Consumer as CoreConsumer, OffsetAndTimestamp};
use kafka_driver::consumer::ConsumerError;
pub use kafka_driver::consumer::{ConsumerMetrics, ConsumerRecord};
use kafka_driver::front::{self, AsyncConsumer};
use tokio::runtime::Handle;

use crate::{runtime, Error};

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
#[derive(Clone, Debug)]
pub struct Consumer {
    inner: AsyncConsumer,
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

    /// The next record, waiting as long as it takes. A partition the core cannot go on
    /// with is [`Error::Consume`] (once; the other partitions go on).
    pub async fn recv(&self) -> Result<ConsumerRecord, Error> {
        self.inner.recv().await.map_err(failed)
    }

    /// Up to `max.poll.records` records, oldest fetched first, waiting up to `timeout`
    /// for the first; an empty `Vec` if none came.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, Error> {
        self.inner.poll(timeout).await.map_err(failed)
    }

    /// Consumes exactly these partitions from now on (Java's `assign`): partitions
    /// already assigned keep their positions, new ones start from `auto.offset.reset`
    /// unless sought.
    pub fn assign<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.inner.assign(partitions).map_err(failed)
    }

    /// The next record handed out from the partition is at `offset`.
    pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Error> {
        self.inner.seek(topic, partition, offset).map_err(failed)
    }

    /// Moves the position to an offset known to follow a record of leader epoch
    /// `leader_epoch` (a committed offset's): the position is validated with
    /// OffsetForLeaderEpoch before fetching from it (KIP-320; Java's
    /// `seek(partition, OffsetAndMetadata)`). Without an epoch, as [`Consumer::seek`].
    pub fn seek_with_epoch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) -> Result<(), Error> {
        self.inner
            .seek_with_epoch(topic, partition, offset, leader_epoch)
            .map_err(failed)
    }

    /// Moves the positions to the log start.
    pub fn seek_to_beginning<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.inner.seek_to_beginning(partitions).map_err(failed)
    }

    /// Moves the positions to the log end (the last stable offset under
    /// read_committed).
    pub fn seek_to_end<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.inner.seek_to_end(partitions).map_err(failed)
    }

    /// Hands out nothing more from these partitions until [`Consumer::resume`]; their
    /// positions stay at the first record not handed out.
    pub fn pause<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.inner.pause(partitions).map_err(failed)
    }

    /// Fetches and hands out these partitions again.
    pub fn resume<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.inner.resume(partitions).map_err(failed)
    }

    /// The offset of the next record handed out from the partition (`None` while
    /// unknown, e.g. until a new partition's reset is answered).
    pub async fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Error> {
        self.inner.position(topic, partition).await.map_err(failed)
    }

    /// A snapshot of the core consumer's counters.
    pub async fn metrics(&self) -> Result<ConsumerMetrics, Error> {
        self.inner.metrics().await.map_err(failed)
    }

    /// The log start offsets of `partitions` (any partitions, assigned or not), within
    /// `timeout` (Java's `beginningOffsets`).
    pub async fn beginning_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let call = self.inner.beginning_offsets(partitions, timeout);
        call.await.map_err(Error::Lookup)
    }

    /// The end offsets of `partitions`: the high watermark, or the last stable offset
    /// under read_committed (Java's `endOffsets`).
    pub async fn end_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let call = self.inner.end_offsets(partitions, timeout);
        call.await.map_err(Error::Lookup)
    }

    /// Per partition, the first record whose timestamp is at or after a time (ms since
    /// the epoch); `None` where no record is that recent (Java's `offsetsForTimes`).
    pub async fn offsets_for_times<T: AsRef<str>>(
        &self,
        times: impl IntoIterator<Item = ((T, i32), i64)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>, Error> {
        let call = self.inner.offsets_for_times(times, timeout);
        call.await.map_err(Error::Lookup)
    }

    /// Closes: takers get [`Error::Closed`] from now on; resolves with the final
    /// counters once the core consumer stopped.
    pub async fn close(&self) -> Result<ConsumerMetrics, Error> {
        self.inner.close().await.map_err(failed)
    }
}

pub(crate) fn failed(e: ConsumerError) -> Error {
    match e {
        ConsumerError::Consume(e) => Error::Consume(e),
        ConsumerError::Group(e) => Error::Group(e),
        ConsumerError::Closed => Error::Closed,
        _ => Error::DriverGone,
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
