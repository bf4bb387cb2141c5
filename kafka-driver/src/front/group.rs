//! [`AsyncGroupConsumer`]: the async group consumer of the front, over the shared
//! [`GroupMailbox`] / [`GroupCore`](crate::group::GroupCore) pair; its seek, pause,
//! resume, position, metrics and close are an [`AsyncConsumer`]'s over the same queue.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupConsumer;

use super::{AsyncConsumer, Command, Handle};
use crate::chan;
use crate::consumer::{ConsumerError, ConsumerKey, ConsumerRecord};
use crate::group::{
    CommitError, CommitHandle, GroupMailbox, Offsets, Rebalance, TopicPartition, TransactionOffsets,
};

/// An async group consumer on a front's driver task. Cheap to clone (`Send + Sync`;
/// clones share one queue); when the last clone goes, the consumer closes in the
/// background (commit with auto-commit on, leave).
#[derive(Clone, Debug)]
pub struct AsyncGroupConsumer {
    group: GroupMailbox,
    consumer: AsyncConsumer,
}

impl Handle {
    /// Starts `group` (made from `config`, the client's configuration) on the driver.
    pub fn start_group(&self, config: &ClientConfig, group: GroupConsumer) -> AsyncGroupConsumer {
        let mailbox = GroupMailbox::new(config, ConsumerKey::next(), self.submitter());
        let theirs = mailbox.clone();
        let start: Command = Box::new(move |hub, now| hub.start_group(now, group, &theirs));
        let _ = self.commands.push(start);
        AsyncGroupConsumer {
            consumer: AsyncConsumer::over(mailbox.mailbox().clone(), self.clone(), config),
            group: mailbox,
        }
    }
}

impl AsyncGroupConsumer {
    /// The consumer face (seek, pause, resume, position, metrics, close; not its takes).
    pub fn consumer(&self) -> &AsyncConsumer {
        &self.consumer
    }

    /// See [`GroupMailbox::subscribe`].
    pub fn subscribe(&self, topics: Vec<String>) -> Result<(), ConsumerError> {
        self.group.subscribe(topics)
    }

    /// See [`GroupMailbox::subscribe_pattern`].
    pub fn subscribe_pattern(&self, pattern: &str) -> Result<(), ConsumerError> {
        self.group.subscribe_pattern(pattern)
    }

    /// One poll: events to `on_events` (on this task, before any record after them),
    /// then up to `max.poll.records` records, waiting up to `timeout` for the first; an
    /// empty `Vec` if none came.
    pub async fn poll(
        &self,
        timeout: Duration,
        on_events: &mut (dyn FnMut(&[Rebalance]) + Send),
    ) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        if let Poll::Ready(r) = self.group.poll_take(None, true, on_events) {
            return r;
        }
        let timer = self.consumer.sleep(Instant::now() + timeout);
        let mut timer = pin!(timer);
        poll_fn(|cx| {
            if let Poll::Ready(r) = self.group.poll_take(Some(cx.waker()), false, on_events) {
                return Poll::Ready(r);
            }
            timer.as_mut().poll(cx).map(|()| Ok(Vec::new()))
        })
        .await
    }

    /// The next record, waiting as long as it takes (events to `on_events` first).
    pub async fn recv(
        &self,
        on_events: &mut (dyn FnMut(&[Rebalance]) + Send),
    ) -> Result<ConsumerRecord, ConsumerError> {
        let mut first = true;
        poll_fn(|cx| {
            let touch = std::mem::replace(&mut first, false);
            self.group.poll_take_one(Some(cx.waker()), touch, on_events)
        })
        .await
    }

    /// The next record if one is queued (events to `on_events` first); else `Pending`,
    /// with `cx`'s waker woken when one arrives (for `Stream` impls). Every call is a
    /// sign of life.
    pub fn poll_recv(
        &self,
        cx: &mut std::task::Context<'_>,
        on_events: &mut dyn FnMut(&[Rebalance]),
    ) -> Poll<Result<ConsumerRecord, ConsumerError>> {
        self.group.poll_take_one(Some(cx.waker()), true, on_events)
    }

    /// See [`GroupMailbox::commit`].
    pub fn commit(&self, offsets: Offsets) -> CommitHandle {
        self.group.commit(offsets)
    }

    /// Commits and waits up to `timeout` for the result; `None` if it did not come in
    /// time (the commit goes on).
    pub async fn commit_sync(
        &self,
        offsets: Offsets,
        timeout: Duration,
    ) -> Option<Result<(), CommitError>> {
        let mut handle = pin!(self.group.commit(offsets));
        let mut timer = pin!(self.consumer.sleep(Instant::now() + timeout));
        poll_fn(|cx| {
            if let Poll::Ready(r) = handle.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await
    }

    /// The partitions owned now.
    pub async fn assignment(&self) -> Result<Vec<TopicPartition>, ConsumerError> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.group.assignment_command(move |a| {
            let _ = tx.push(a);
        });
        if !self.group.mailbox().submit(command) {
            return Err(ConsumerError::DriverGone);
        }
        poll_fn(|cx| rx.poll_recv(cx))
            .await
            .ok_or(ConsumerError::DriverGone)
    }

    /// What the application gives up at close (`Revoked` or `Lost` of every owned
    /// partition), for its listener before the close; `None` when it owns nothing.
    pub async fn release_on_close(&self) -> Option<Rebalance> {
        let mut rx = self.group.ask_release()?;
        poll_fn(|cx| rx.poll_recv(cx)).await.flatten()
    }

    /// The member's group identity and the positions the application has taken, as
    /// `(topic, partition, next offset)`: what a consume-transform-produce loop sends
    /// into its transaction. `Closed` once the consumer is closed.
    pub async fn transaction_offsets(&self) -> Result<TransactionOffsets, ConsumerError> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.group.transaction_offsets_command(move |a| {
            let _ = tx.push(a);
        });
        if !self.group.mailbox().submit(command) {
            return Err(ConsumerError::DriverGone);
        }
        poll_fn(|cx| rx.poll_recv(cx))
            .await
            .ok_or(ConsumerError::DriverGone)?
            .ok_or(ConsumerError::Closed)
    }
}

/// An async adapter's `GroupConsumer` (tokio, async-std): the struct (with the doc
/// comment and attributes given) over an [`AsyncGroupConsumer`] and its listener, a
/// crate-private `GroupConsumer::over(inner)`, and every method, mapping errors with the
/// adapter's `failed(ConsumerError) -> Error`. The adapter writes only its constructors.
#[macro_export]
macro_rules! async_group_consumer {
    ($(#[$meta:meta])*) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        pub struct GroupConsumer {
            inner: $crate::front::AsyncGroupConsumer,
            listener: ::std::sync::Arc<$crate::group::Listener<GroupConsumer>>,
        }

        impl GroupConsumer {
        fn over(inner: $crate::front::AsyncGroupConsumer) -> Self {
            GroupConsumer {
                inner,
                listener: ::std::sync::Arc::default(),
            }
        }

        /// Subscribes to exactly these topics and joins the group (replacing the previous
        /// subscription; an empty list leaves it). Rebalance events go nowhere but their
        /// acknowledgement (see [`GroupConsumer::subscribe_with`]).
        pub fn subscribe<T: AsRef<str>>(
            &self,
            topics: impl IntoIterator<Item = T>,
        ) -> Result<(), Error> {
            self.listener.set(None);
            self.inner
                .subscribe($crate::group::topic_names(topics))
                .map_err(failed)
        }

        /// Like [`GroupConsumer::subscribe`], with `listener` called on the polling task,
        /// inside [`GroupConsumer::poll`] / [`GroupConsumer::recv`], for each rebalance
        /// event before any record after it (Java's `ConsumerRebalanceListener`). A
        /// revocation is given up after the listener returns and every commit sent
        /// until then finished, so a [`GroupConsumer::commit_async`] from the listener
        /// lands before the partitions move.
        pub fn subscribe_with<T: AsRef<str>>(
            &self,
            topics: impl IntoIterator<Item = T>,
            listener: impl RebalanceListener<GroupConsumer> + 'static,
        ) -> Result<(), Error> {
            self.listener.set(Some(Box::new(listener)));
            self.inner
                .subscribe($crate::group::topic_names(topics))
                .map_err(failed)
        }

        /// Subscribes to every topic whose whole name matches `pattern` and joins the
        /// group (replacing the previous subscription). Classic protocol: a regex
        /// matched here over every topic's metadata (refreshed every
        /// `metadata.max.age.ms`; internal topics left out); an invalid one is an error
        /// now. KIP-848: sent to the coordinator (RE2J), which refuses an invalid one
        /// (the next poll fails with `GroupError::InvalidPattern`).
        pub fn subscribe_pattern(&self, pattern: &str) -> Result<(), Error> {
            self.listener.set(None);
            self.inner.subscribe_pattern(pattern).map_err(failed)
        }

        /// Like [`GroupConsumer::subscribe_pattern`], with `listener` for rebalance
        /// events (see [`GroupConsumer::subscribe_with`]).
        pub fn subscribe_pattern_with(
            &self,
            pattern: &str,
            listener: impl RebalanceListener<GroupConsumer> + 'static,
        ) -> Result<(), Error> {
            self.listener.set(Some(Box::new(listener)));
            self.inner.subscribe_pattern(pattern).map_err(failed)
        }

        /// Leaves the group: every partition is revoked.
        pub fn unsubscribe(&self) -> Result<(), Error> {
            self.inner.subscribe(Vec::new()).map_err(failed)
        }

        /// Up to `max.poll.records` records of owned partitions, waiting up to `timeout`
        /// for the first (an empty `Vec` if none came); rebalance events go to the
        /// listener first. Each poll is the application's sign of life for
        /// `max.poll.interval.ms` and the moment automatic commits are sent.
        pub async fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, Error> {
            let listener = self.listener.clone();
            let mut on = |e: &[Rebalance]| listener.deliver(self, e);
            self.inner.poll(timeout, &mut on).await.map_err(failed)
        }

        /// The next record, waiting as long as it takes (events to the listener first).
        pub async fn recv(&self) -> Result<ConsumerRecord, Error> {
            let listener = self.listener.clone();
            let mut on = |e: &[Rebalance]| listener.deliver(self, e);
            self.inner.recv(&mut on).await.map_err(failed)
        }

        /// Commits `offsets` ([`Offsets::Consumed`]: what the application has taken) and
        /// waits up to `timeout` for the result.
        pub async fn commit_sync(&self, offsets: Offsets, timeout: Duration) -> Result<(), Error> {
            match self.inner.commit_sync(offsets, timeout).await {
                Some(r) => r.map_err(Error::Commit),
                None => Err(Error::Timeout(timeout)),
            }
        }

        /// Commits `offsets`; the handle (a future) resolves with the result. Dropping it
        /// does not cancel the commit.
        pub fn commit_async(&self, offsets: Offsets) -> CommitHandle {
            self.inner.commit(offsets)
        }

        /// The partitions owned now.
        pub async fn assignment(&self) -> Result<Vec<TopicPartition>, Error> {
            self.inner.assignment().await.map_err(failed)
        }

        /// The member's group identity, for `send_offsets_to_transaction` (KIP-447: a
        /// zombie member's offsets are refused).
        pub async fn group_metadata(&self) -> Result<$crate::group::GroupMetadata, Error> {
            Ok(self.transaction_offsets().await?.0)
        }

        /// The member's group identity and the positions the application has taken
        /// (what `poll` handed out), per owned partition, as `(topic, partition, next
        /// offset)`: what a consume-transform-produce loop sends into its transaction.
        pub async fn transaction_offsets(&self) -> Result<$crate::group::TransactionOffsets, Error> {
            self.inner.transaction_offsets().await.map_err(failed)
        }

        /// The next record handed out from the partition is at `offset` (an owned
        /// partition; it is also the partition's consumed position).
        pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Error> {
            self.inner
                .consumer()
                .seek(topic, partition, offset)
                .map_err(failed)
        }

        /// [`GroupConsumer::seek`] to an offset known to follow a record of leader epoch
        /// `leader_epoch` (a committed offset's): validated with OffsetForLeaderEpoch
        /// before fetching from it (KIP-320).
        pub fn seek_with_epoch(
            &self,
            topic: &str,
            partition: i32,
            offset: i64,
            leader_epoch: Option<i32>,
        ) -> Result<(), Error> {
            self.inner
                .consumer()
                .seek_with_epoch(topic, partition, offset, leader_epoch)
                .map_err(failed)
        }

        /// Hands out nothing more from these partitions until resumed.
        pub fn pause<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
        ) -> Result<(), Error> {
            self.inner.consumer().pause(partitions).map_err(failed)
        }

        /// Fetches and hands out these partitions again (revoking ones stay paused).
        pub fn resume<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
        ) -> Result<(), Error> {
            self.inner.consumer().resume(partitions).map_err(failed)
        }

        /// The offset of the next record handed out from the partition, once known.
        pub async fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Error> {
            self.inner
                .consumer()
                .position(topic, partition)
                .await
                .map_err(failed)
        }

        /// A snapshot of the fetcher's counters.
        pub async fn metrics(&self) -> Result<ConsumerMetrics, Error> {
            self.inner.consumer().metrics().await.map_err(failed)
        }

        /// The log start offsets of `partitions` (any partitions, owned or not), within
        /// `timeout`.
        pub async fn beginning_offsets<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
            timeout: Duration,
        ) -> Result<::std::collections::BTreeMap<kafka_core::admin::TopicPartition, i64>, Error> {
            let call = self.inner.consumer().beginning_offsets(partitions, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// The end offsets of `partitions` (the last stable offset under read_committed),
        /// within `timeout`.
        pub async fn end_offsets<T: AsRef<str>>(
            &self,
            partitions: impl IntoIterator<Item = (T, i32)>,
            timeout: Duration,
        ) -> Result<::std::collections::BTreeMap<kafka_core::admin::TopicPartition, i64>, Error> {
            let call = self.inner.consumer().end_offsets(partitions, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// Per partition, the first record at or after a time (ms since the epoch);
        /// `None` where no record is that recent.
        pub async fn offsets_for_times<T: AsRef<str>>(
            &self,
            times: impl IntoIterator<Item = ((T, i32), i64)>,
            timeout: Duration,
        ) -> Result<
            ::std::collections::BTreeMap<
                kafka_core::admin::TopicPartition,
                Option<kafka_core::consumer::OffsetAndTimestamp>,
            >,
            Error,
        > {
            let call = self.inner.consumer().offsets_for_times(times, timeout);
            call.await.map_err(Error::Lookup)
        }

        /// Closes: the listener sees every owned partition `Revoked` (`Lost` without
        /// a generation) first, on this task, and may commit (Java's close); then commits
        /// what the application has taken (auto-commit on), leaves the group (not a
        /// static member) and resolves with the final counters; polls get
        /// [`Error::Closed`] from now on.
        pub async fn close(&self) -> Result<ConsumerMetrics, Error> {
            if self.listener.is_set() {
                if let Some(event) = self.inner.release_on_close().await {
                    self.listener.deliver(self, &[event]);
                }
            }
            self.inner.consumer().close().await.map_err(failed)
        }
        }
    };
}
