//! [`Consumer`]: the blocking consumer (assign mode), over `kafka_driver`'s shared queue
//! of fetched records and driver-side consumer core.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_core::admin::{AdminError, TopicPartition};
use kafka_core::client::Operation;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{
    Consumer as CoreConsumer, EdgeOffsets, OffsetAndTimestamp, OffsetsForTimes,
};
use kafka_driver::chan;
use kafka_driver::consumer::{self, ConsumerError, ConsumerKey, HubCommand, Mailbox};
pub use kafka_driver::consumer::{ConsumerMetrics, ConsumerRecord};

use crate::driver::Msg;
use crate::{gone, BlockingClient, Error};

/// A blocking consumer of assigned partitions: the driver thread fetches ahead (KIP-227
/// sessions, `fetch.*` and `max.partition.fetch.bytes`, `queued.max.messages.kbytes`),
/// [`Consumer::poll`] hands out up to `max.poll.records` records. Records are the
/// core's [`ConsumerRecord`]s: key, value and headers are slices of the fetched buffers,
/// never copied. Cheap to clone (clones share one queue); when the last clone goes, the
/// consumer closes in the background.
///
/// ```no_run
/// use kafka_blocking::Consumer;
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// let config = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("auto.offset.reset", "earliest"),
/// ])?;
/// let consumer = Consumer::new(config)?;
/// consumer.assign([("events", 0), ("events", 1)])?;
/// for record in consumer.poll(Duration::from_secs(1))? {
///     println!("{}-{}@{}: {:?}", record.topic, record.partition, record.offset, record.value);
/// }
/// consumer.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Consumer {
    inner: Arc<Inner>,
}

struct Inner {
    mailbox: Mailbox,
    client: BlockingClient,
    /// The client's configuration, for the offset lookups (`isolation.level`).
    config: ClientConfig,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let close = self.mailbox.close_command(|_| {});
        self.mailbox.submit(close);
    }
}

impl Consumer {
    /// Creates the consumer and its driver thread; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Consumer, Error> {
        let consumer = CoreConsumer::new(&config);
        let client = BlockingClient::new(config.clone())?;
        let inbox = client.inbox.clone();
        let submit = Box::new(move |c: HubCommand| inbox.push(Msg::Command(c)).is_ok());
        let mailbox = Mailbox::new(&config, ConsumerKey::next(), submit);
        let theirs = mailbox.clone();
        client.submit(Box::new(move |hub, now| {
            hub.start_consumer(now, consumer, &theirs)
        }))?;
        Ok(Consumer::over(mailbox, client, &config))
    }

    /// The consumer over `mailbox` (its core side started on `client`'s driver); closes
    /// it when the last clone goes.
    pub(crate) fn over(
        mailbox: Mailbox,
        client: BlockingClient,
        config: &ClientConfig,
    ) -> Consumer {
        let config = config.clone();
        Consumer {
            inner: Arc::new(Inner {
                mailbox,
                client,
                config,
            }),
        }
    }

    /// Up to `max.poll.records` records, oldest fetched first, waiting up to `timeout`
    /// for the first; an empty `Vec` if none came. A partition the core cannot go on
    /// with is [`Error::Consume`] (once; the other partitions go on).
    pub fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, Error> {
        self.inner.mailbox.take_blocking(timeout).map_err(failed)
    }

    /// Consumes exactly these partitions from now on (Java's `assign`): partitions
    /// already assigned keep their positions, new ones start from `auto.offset.reset`
    /// unless sought.
    pub fn assign<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        let parts = consumer::partitions(partitions);
        self.inner.mailbox.assign(parts).map_err(failed)
    }

    /// The next record handed out from the partition is at `offset`.
    pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Error> {
        self.inner
            .mailbox
            .seek(topic, partition, offset)
            .map_err(failed)
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
            .mailbox
            .seek_with_epoch(topic, partition, offset, leader_epoch)
            .map_err(failed)
    }

    /// Moves the positions to the log start.
    pub fn seek_to_beginning<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        let parts = consumer::partitions(partitions);
        self.inner.mailbox.seek_to_beginning(parts).map_err(failed)
    }

    /// Moves the positions to the log end (the last stable offset under
    /// read_committed).
    pub fn seek_to_end<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        let parts = consumer::partitions(partitions);
        self.inner.mailbox.seek_to_end(parts).map_err(failed)
    }

    /// Hands out nothing more from these partitions until [`Consumer::resume`]; their
    /// positions stay at the first record not handed out.
    pub fn pause<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        let parts = consumer::partitions(partitions);
        self.inner.mailbox.pause(parts).map_err(failed)
    }

    /// Fetches and hands out these partitions again.
    pub fn resume<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        let parts = consumer::partitions(partitions);
        self.inner.mailbox.resume(parts).map_err(failed)
    }

    /// The offset of the next record handed out from the partition (`None` while
    /// unknown, e.g. until a new partition's reset is answered).
    pub fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command = self
            .inner
            .mailbox
            .position_command(topic, partition, move |p| {
                let _ = tx.push(p);
            });
        self.submit(command)?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// A snapshot of the core consumer's counters.
    pub fn metrics(&self) -> Result<ConsumerMetrics, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.inner.mailbox.metrics_command(move |m| {
            let _ = tx.push(m);
        });
        self.submit(command)?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// The log start offsets of `partitions` (any partitions, assigned or not), within
    /// `timeout` (Java's `beginningOffsets`).
    pub fn beginning_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let parts = consumer::lookup_partitions(partitions);
        self.lookup(EdgeOffsets::beginning(&self.inner.config, parts).timeout(timeout))
    }

    /// The end offsets of `partitions`: the high watermark, or the last stable offset
    /// under read_committed (Java's `endOffsets`).
    pub fn end_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let parts = consumer::lookup_partitions(partitions);
        self.lookup(EdgeOffsets::end(&self.inner.config, parts).timeout(timeout))
    }

    /// Per partition, the first record whose timestamp is at or after a time (ms since
    /// the epoch); `None` where no record is that recent (Java's `offsetsForTimes`).
    pub fn offsets_for_times<T: AsRef<str>>(
        &self,
        times: impl IntoIterator<Item = ((T, i32), i64)>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>, Error> {
        let times = consumer::lookup_times(times);
        self.lookup(OffsetsForTimes::new(&self.inner.config, times).timeout(timeout))
    }

    fn lookup<O, T>(&self, op: O) -> Result<T, Error>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.inner.client.run_op(op)?.map_err(Error::Lookup)
    }

    /// Closes: polls fail [`Error::Closed`] from now on; returns the final counters once
    /// the core consumer stopped.
    pub fn close(&self) -> Result<ConsumerMetrics, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.inner.mailbox.close_command(move |m| {
            let _ = tx.push(m);
        });
        self.submit(command)?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// The client under the consumer (metadata, raw requests, [`Notice`](crate::Notice)s).
    pub fn client(&self) -> &BlockingClient {
        &self.inner.client
    }

    fn submit(&self, command: HubCommand) -> Result<(), Error> {
        if self.inner.mailbox.submit(command) {
            Ok(())
        } else {
            Err(gone())
        }
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("mailbox", &self.inner.mailbox)
            .finish_non_exhaustive()
    }
}

pub(crate) fn failed(e: ConsumerError) -> Error {
    match e {
        ConsumerError::Consume(e) => Error::Consume(e),
        ConsumerError::Group(e) => Error::Group(e),
        ConsumerError::Closed => Error::Closed,
        _ => gone(),
    }
}
