//! [`AsyncConsumer`]: the async consumer handle of the front, over the shared
//! [`Mailbox`] / [`ConsumerCore`](crate::consumer::ConsumerCore) pair.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use kafka_core::admin::{AdminError, TopicPartition};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{Consumer, EdgeOffsets, OffsetsForTimes};

use super::{Call, Command, Handle};
use crate::chan::{self, Receiver};
use crate::consumer::{
    self, ConsumerError, ConsumerKey, ConsumerMetrics, ConsumerRecord, HubCommand, Mailbox,
    OffsetsForTimesResult,
};

/// An async consumer on a front's driver task (assign mode). Cheap to clone (`Send +
/// Sync`; clones share one queue of fetched records); when the last clone goes, the
/// consumer closes in the background.
#[derive(Clone)]
pub struct AsyncConsumer {
    inner: Arc<Inner>,
}

struct Inner {
    mailbox: Mailbox,
    front: Handle,
    /// The client's configuration, for the offset lookups (`isolation.level`).
    config: ClientConfig,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let close = self.mailbox.close_command(|_| {});
        self.mailbox.submit(close);
    }
}

impl Handle {
    /// Starts `consumer` (made from `config`, the client's configuration) on the driver.
    pub fn start_consumer(&self, config: &ClientConfig, consumer: Consumer) -> AsyncConsumer {
        let key = ConsumerKey::next();
        let mailbox = Mailbox::new(config, key, self.submitter());
        let theirs = mailbox.clone();
        let start: Command = Box::new(move |hub, now| {
            hub.start_consumer(now, consumer, &theirs);
        });
        let _ = self.commands.push(start);
        AsyncConsumer::over(mailbox, self.clone(), config)
    }

    /// A submit function for a mailbox on this driver.
    pub(crate) fn submitter(&self) -> crate::consumer::Submit {
        let commands = self.commands.clone();
        Box::new(move |c: HubCommand| commands.push(c).is_ok())
    }
}

impl AsyncConsumer {
    /// The consumer over `mailbox` (its core side started on `front`'s driver); closes
    /// it when the last clone goes.
    pub(crate) fn over(mailbox: Mailbox, front: Handle, config: &ClientConfig) -> Self {
        let config = config.clone();
        AsyncConsumer {
            inner: Arc::new(Inner {
                mailbox,
                front,
                config,
            }),
        }
    }

    /// The log start offsets of `partitions`, within `timeout` (see
    /// [`EdgeOffsets`]).
    pub fn beginning_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Call<Result<BTreeMap<TopicPartition, i64>, AdminError>> {
        let parts = consumer::lookup_partitions(partitions);
        let op = EdgeOffsets::beginning(&self.inner.config, parts).timeout(timeout);
        self.inner.front.run(op)
    }

    /// The end offsets of `partitions` (the last stable offset under read_committed),
    /// within `timeout` (see [`EdgeOffsets`]).
    pub fn end_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Call<Result<BTreeMap<TopicPartition, i64>, AdminError>> {
        let parts = consumer::lookup_partitions(partitions);
        let op = EdgeOffsets::end(&self.inner.config, parts).timeout(timeout);
        self.inner.front.run(op)
    }

    /// Per partition, the first record at or after a time (ms since the epoch), within
    /// `timeout` (see [`OffsetsForTimes`]).
    pub fn offsets_for_times<T: AsRef<str>>(
        &self,
        times: impl IntoIterator<Item = ((T, i32), i64)>,
        timeout: Duration,
    ) -> Call<OffsetsForTimesResult> {
        let times = consumer::lookup_times(times);
        let op = OffsetsForTimes::new(&self.inner.config, times).timeout(timeout);
        self.inner.front.run(op)
    }

    /// The timer of the front's runtime.
    pub(crate) fn sleep(&self, at: Instant) -> super::Task {
        (self.inner.front.sleep)(at)
    }

    /// The next record, waiting as long as it takes (or the next partition error).
    pub async fn recv(&self) -> Result<ConsumerRecord, ConsumerError> {
        let mailbox = &self.inner.mailbox;
        poll_fn(|cx| mailbox.poll_take_one(Some(cx.waker()))).await
    }

    /// The next record if one is queued (or the next partition error); else `Pending`,
    /// with `cx`'s waker woken when one arrives (for `Stream` impls).
    pub fn poll_recv(
        &self,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Result<ConsumerRecord, ConsumerError>> {
        self.inner.mailbox.poll_take_one(Some(cx.waker()))
    }

    /// Up to `max.poll.records` records, waiting up to `timeout` for the first (or the
    /// next partition error); an empty `Vec` if none came in time.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        let mailbox = &self.inner.mailbox;
        if let Poll::Ready(r) = mailbox.poll_take(None) {
            return r;
        }
        let timer = (self.inner.front.sleep)(Instant::now() + timeout);
        let mut timer = pin!(timer);
        poll_fn(|cx| {
            if let Poll::Ready(r) = mailbox.poll_take(Some(cx.waker())) {
                return Poll::Ready(r);
            }
            timer.as_mut().poll(cx).map(|()| Ok(Vec::new()))
        })
        .await
    }

    /// See [`Mailbox::assign`].
    pub fn assign<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), ConsumerError> {
        self.inner.mailbox.assign(consumer::partitions(partitions))
    }

    /// See [`Mailbox::seek`].
    pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), ConsumerError> {
        self.inner.mailbox.seek(topic, partition, offset)
    }

    /// See [`Mailbox::seek_with_epoch`].
    pub fn seek_with_epoch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) -> Result<(), ConsumerError> {
        let mailbox = &self.inner.mailbox;
        mailbox.seek_with_epoch(topic, partition, offset, leader_epoch)
    }

    /// See [`Mailbox::seek_to_beginning`].
    pub fn seek_to_beginning<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), ConsumerError> {
        self.inner
            .mailbox
            .seek_to_beginning(consumer::partitions(partitions))
    }

    /// See [`Mailbox::seek_to_end`].
    pub fn seek_to_end<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), ConsumerError> {
        self.inner
            .mailbox
            .seek_to_end(consumer::partitions(partitions))
    }

    /// See [`Mailbox::pause`].
    pub fn pause<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), ConsumerError> {
        self.inner.mailbox.pause(consumer::partitions(partitions))
    }

    /// See [`Mailbox::resume`].
    pub fn resume<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), ConsumerError> {
        self.inner.mailbox.resume(consumer::partitions(partitions))
    }

    /// The next offset the application gets from the partition (`None` while unknown,
    /// e.g. before the reset of a new assignment is answered).
    pub async fn position(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, ConsumerError> {
        let (tx, rx) = chan::channel(1);
        let command = self
            .inner
            .mailbox
            .position_command(topic, partition, move |p| {
                let _ = tx.push(p);
            });
        self.submit(command)?;
        recv(rx).await.ok_or(ConsumerError::DriverGone)
    }

    /// A snapshot of the core consumer's counters.
    pub async fn metrics(&self) -> Result<ConsumerMetrics, ConsumerError> {
        let (tx, rx) = chan::channel(1);
        let command = self.inner.mailbox.metrics_command(move |m| {
            let _ = tx.push(m);
        });
        self.submit(command)?;
        recv(rx).await.ok_or(ConsumerError::DriverGone)
    }

    /// Closes: takers get [`ConsumerError::Closed`] at once; resolves with the final
    /// counters once the core consumer stopped.
    pub async fn close(&self) -> Result<ConsumerMetrics, ConsumerError> {
        let (tx, rx) = chan::channel(1);
        let command = self.inner.mailbox.close_command(move |m| {
            let _ = tx.push(m);
        });
        self.submit(command)?;
        recv(rx).await.ok_or(ConsumerError::DriverGone)
    }

    fn submit(&self, command: HubCommand) -> Result<(), ConsumerError> {
        if self.inner.mailbox.submit(command) {
            Ok(())
        } else {
            Err(ConsumerError::DriverGone)
        }
    }
}

impl std::fmt::Debug for AsyncConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConsumer")
            .field("mailbox", &self.inner.mailbox)
            .finish()
    }
}

async fn recv<T>(mut rx: Receiver<T>) -> Option<T> {
    poll_fn(|cx| rx.poll_recv(cx)).await
}

/// An async adapter's `Consumer` (tokio, async-std): the struct (with the doc comment and
/// attributes given) over an [`AsyncConsumer`], every method, and the crate-private
/// `failed(ConsumerError) -> Error` the adapter's other faces map errors with (its `Error`
/// needs `Consume`, `Group`, `Closed`, `DriverGone` and `Lookup`). The adapter writes only
/// its constructors (building `Consumer { inner }`) and its `Stream` impl.
#[macro_export]
macro_rules! async_consumer {
    ($(#[$meta:meta])*) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        pub struct Consumer {
            inner: $crate::front::AsyncConsumer,
        }

        impl Consumer {
        /// The next record, waiting as long as it takes. A partition the core cannot go on
        /// with is [`Error::Consume`] (once; the other partitions go on).
        pub async fn recv(&self) -> Result<$crate::consumer::ConsumerRecord, Error> {
            self.inner.recv().await.map_err(failed)
        }

        /// Up to `max.poll.records` records, oldest fetched first, waiting up to `timeout`
        /// for the first; an empty `Vec` if none came.
        pub async fn poll(&self, timeout: ::std::time::Duration) -> Result<Vec<$crate::consumer::ConsumerRecord>, Error> {
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
        pub async fn metrics(&self) -> Result<$crate::consumer::ConsumerMetrics, Error> {
            self.inner.metrics().await.map_err(failed)
        }

        /// The log start offsets of `partitions` (any partitions, assigned or not), within
        /// `timeout` (Java's `beginningOffsets`).
        pub async fn beginning_offsets<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
            timeout: ::std::time::Duration,
        ) -> Result<::std::collections::BTreeMap<::kafka_core::admin::TopicPartition, i64>, Error> {
            let call = self.inner.beginning_offsets(partitions, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// The end offsets of `partitions`: the high watermark, or the last stable offset
        /// under read_committed (Java's `endOffsets`).
        pub async fn end_offsets<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
            timeout: ::std::time::Duration,
        ) -> Result<::std::collections::BTreeMap<::kafka_core::admin::TopicPartition, i64>, Error> {
            let call = self.inner.end_offsets(partitions, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// Per partition, the first record whose timestamp is at or after a time (ms since
        /// the epoch); `None` where no record is that recent (Java's `offsetsForTimes`).
        pub async fn offsets_for_times<T: AsRef<str>>(
            &self,
            times: impl IntoIterator<Item = ((T, i32), i64)>,
            timeout: ::std::time::Duration,
        ) -> Result<::std::collections::BTreeMap<::kafka_core::admin::TopicPartition, Option<::kafka_core::consumer::OffsetAndTimestamp>>, Error> {
            let call = self.inner.offsets_for_times(times, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// Closes: takers get [`Error::Closed`] from now on; resolves with the final
        /// counters once the core consumer stopped.
        pub async fn close(&self) -> Result<$crate::consumer::ConsumerMetrics, Error> {
            self.inner.close().await.map_err(failed)
        }
        }

        pub(crate) fn failed(e: $crate::consumer::ConsumerError) -> Error {
            match e {
                $crate::consumer::ConsumerError::Consume(e) => Error::Consume(e),
                $crate::consumer::ConsumerError::Group(e) => Error::Group(e),
                $crate::consumer::ConsumerError::Closed => Error::Closed,
                _ => Error::DriverGone,
            }
        }
    };
}
