//! [`GroupConsumer`]: the blocking group consumer (`subscribe`, classic protocol), over
//! `kafka_driver`'s group mailbox and driver-side group core; its seek, pause, resume,
//! position, metrics and close are the blocking [`Consumer`]'s over the same queue.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupConsumer as CoreGroup;
use kafka_driver::chan;
use kafka_driver::consumer::{ConsumerKey, HubCommand};
use kafka_driver::group::{topic_names, GroupMailbox, Listener};
pub use kafka_driver::group::{
    CommitError, CommitHandle, GroupMetadata, Offsets, Rebalance, RebalanceListener,
    TopicPartition, TransactionOffsets,
};

use crate::consumer::failed;
use crate::driver::Msg;
use crate::{gone, BlockingClient, Consumer, ConsumerMetrics, ConsumerRecord, Error};

/// A consumer in a group (`group.id`, `group.protocol=classic`): [`subscribe`] joins,
/// the group's assignor shares the topics' partitions among its members, and
/// [`GroupConsumer::poll`] hands out records of the owned partitions, from the committed
/// offsets on, while the driver thread fetches ahead. Rebalance events go to a
/// [`RebalanceListener`] inside `poll`, on the polling thread, before any later record
/// (Java's `ConsumerRebalanceListener`; it may [`commit_sync`]). Commits (automatic
/// every `auto.commit.interval.ms`, at a revocation and at close, or explicit) are of
/// the positions the application has taken, never of what was fetched ahead. Cheap to
/// clone; when the last clone goes the consumer closes in the background (commit and
/// leave) without blocking.
///
/// [`subscribe`]: GroupConsumer::subscribe
/// [`commit_sync`]: GroupConsumer::commit_sync
///
/// ```no_run
/// use kafka_blocking::{GroupConsumer, Offsets, Rebalance};
/// use kafka_core::config::ClientConfig;
/// use std::time::Duration;
///
/// let config = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("group.id", "billing"),
///     ("auto.offset.reset", "earliest"),
///     ("enable.auto.commit", "false"),
/// ])?;
/// let consumer = GroupConsumer::new(config)?;
/// consumer.subscribe_with(["events"], |c: &GroupConsumer, e: &Rebalance| {
///     if let Rebalance::Revoked(_) = e {
///         // What was handed out is committed before the partitions move.
///         let _ = c.commit_sync(Offsets::Consumed, Duration::from_secs(10));
///     }
/// })?;
/// for _ in 0..10 {
///     for record in consumer.poll(Duration::from_secs(1))? {
///         println!("{}-{}@{}", record.topic, record.partition, record.offset);
///     }
///     consumer.commit_sync(Offsets::Consumed, Duration::from_secs(10))?;
/// }
/// consumer.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct GroupConsumer {
    group: GroupMailbox,
    consumer: Consumer,
    listener: Arc<Listener<GroupConsumer>>,
}

impl GroupConsumer {
    /// Creates the consumer and its driver thread; it joins at
    /// [`GroupConsumer::subscribe`].
    pub fn new(config: ClientConfig) -> Result<GroupConsumer, Error> {
        let core = CoreGroup::new(&config)?;
        let client = BlockingClient::new(config.clone())?;
        let inbox = client.inbox.clone();
        let submit = Box::new(move |c: HubCommand| inbox.push(Msg::Command(c)).is_ok());
        let group = GroupMailbox::new(&config, ConsumerKey::next(), submit);
        let theirs = group.clone();
        client.submit(Box::new(move |hub, now| {
            hub.start_group(now, core, &theirs)
        }))?;
        Ok(GroupConsumer {
            consumer: Consumer::over(group.mailbox().clone(), client, &config),
            group,
            listener: Arc::default(),
        })
    }

    /// Subscribes to exactly these topics and joins the group (replacing the previous
    /// subscription; an empty list leaves it). Rebalance events go nowhere but their
    /// acknowledgement (see [`GroupConsumer::subscribe_with`]).
    pub fn subscribe<T: AsRef<str>>(
        &self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<(), Error> {
        self.listener.set(None);
        self.group.subscribe(topic_names(topics)).map_err(failed)
    }

    /// Like [`GroupConsumer::subscribe`], with `listener` called on the polling thread,
    /// inside [`GroupConsumer::poll`], for each rebalance event before any record after
    /// it. A revocation is given up after the listener returns and every commit sent
    /// until then finished, so a commit from the listener lands before the partitions
    /// move.
    pub fn subscribe_with<T: AsRef<str>>(
        &self,
        topics: impl IntoIterator<Item = T>,
        listener: impl RebalanceListener<GroupConsumer> + 'static,
    ) -> Result<(), Error> {
        self.listener.set(Some(Box::new(listener)));
        self.group.subscribe(topic_names(topics)).map_err(failed)
    }

    /// Subscribes to every topic whose whole name matches `pattern` and joins the group
    /// (replacing the previous subscription). Classic protocol: a regex matched here
    /// over every topic's metadata (refreshed every `metadata.max.age.ms`; internal
    /// topics left out); an invalid one is an error now. KIP-848: sent to the
    /// coordinator (RE2J), which refuses an invalid one (the next poll fails with
    /// `GroupError::InvalidPattern`).
    pub fn subscribe_pattern(&self, pattern: &str) -> Result<(), Error> {
        self.listener.set(None);
        self.group.subscribe_pattern(pattern).map_err(failed)
    }

    /// Like [`GroupConsumer::subscribe_pattern`], with `listener` for rebalance events
    /// (see [`GroupConsumer::subscribe_with`]).
    pub fn subscribe_pattern_with(
        &self,
        pattern: &str,
        listener: impl RebalanceListener<GroupConsumer> + 'static,
    ) -> Result<(), Error> {
        self.listener.set(Some(Box::new(listener)));
        self.group.subscribe_pattern(pattern).map_err(failed)
    }

    /// Leaves the group: every partition is revoked.
    pub fn unsubscribe(&self) -> Result<(), Error> {
        self.group.subscribe(Vec::new()).map_err(failed)
    }

    /// Up to `max.poll.records` records of owned partitions, waiting up to `timeout` for
    /// the first (an empty `Vec` if none came); rebalance events go to the listener
    /// first. Each poll is the application's sign of life for `max.poll.interval.ms`
    /// and the moment automatic commits are sent.
    pub fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, Error> {
        let listener = self.listener.clone();
        let mut on = |e: &[Rebalance]| listener.deliver(self, e);
        self.group.take_blocking(timeout, &mut on).map_err(failed)
    }

    /// Commits `offsets` ([`Offsets::Consumed`]: what the application has taken) and
    /// waits up to `timeout` for the result.
    pub fn commit_sync(&self, offsets: Offsets, timeout: Duration) -> Result<(), Error> {
        match self.group.commit(offsets).wait(Some(timeout)) {
            Some(r) => r.map_err(Error::Commit),
            None => Err(Error::Timeout(timeout)),
        }
    }

    /// Commits `offsets`; the handle gets the result ([`CommitHandle::wait`]). Dropping
    /// it does not cancel the commit.
    pub fn commit_async(&self, offsets: Offsets) -> CommitHandle {
        self.group.commit(offsets)
    }

    /// The partitions owned now.
    pub fn assignment(&self) -> Result<Vec<TopicPartition>, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.group.assignment_command(move |a| {
            let _ = tx.push(a);
        });
        if !self.group.mailbox().submit(command) {
            return Err(gone());
        }
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// The member's group identity, for `send_offsets_to_transaction` (KIP-447: a
    /// zombie member's offsets are refused).
    pub fn group_metadata(&self) -> Result<GroupMetadata, Error> {
        Ok(self.transaction_offsets()?.0)
    }

    /// The member's group identity and the positions the application has taken (what
    /// `poll` handed out), per owned partition: what a consume-transform-produce loop
    /// sends into its transaction before committing it.
    pub fn transaction_offsets(&self) -> Result<TransactionOffsets, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command = self.group.transaction_offsets_command(move |a| {
            let _ = tx.push(a);
        });
        if !self.group.mailbox().submit(command) {
            return Err(gone());
        }
        rx.recv_deadline(None)
            .map_err(|_| gone())?
            .ok_or(Error::Closed)
    }

    /// The next record handed out from the partition is at `offset` (an owned
    /// partition; it is also the partition's consumed position).
    pub fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Error> {
        self.consumer.seek(topic, partition, offset)
    }

    /// [`GroupConsumer::seek`] to an offset known to follow a record of leader epoch
    /// `leader_epoch` (a committed offset's): validated with OffsetForLeaderEpoch before
    /// fetching from it (KIP-320).
    pub fn seek_with_epoch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) -> Result<(), Error> {
        self.consumer
            .seek_with_epoch(topic, partition, offset, leader_epoch)
    }

    /// Hands out nothing more from these partitions until resumed.
    pub fn pause<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.consumer.pause(partitions)
    }

    /// Fetches and hands out these partitions again (revoking ones stay paused).
    pub fn resume<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
    ) -> Result<(), Error> {
        self.consumer.resume(partitions)
    }

    /// The offset of the next record handed out from the partition, once known.
    pub fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Error> {
        self.consumer.position(topic, partition)
    }

    /// The log start offsets of `partitions` (any partitions, owned or not), within
    /// `timeout`.
    pub fn beginning_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<kafka_core::admin::TopicPartition, i64>, Error> {
        self.consumer.beginning_offsets(partitions, timeout)
    }

    /// The end offsets of `partitions` (the last stable offset under read_committed),
    /// within `timeout`.
    pub fn end_offsets<T: AsRef<str>>(
        &self,
        partitions: impl IntoIterator<Item = (T, i32)>,
        timeout: Duration,
    ) -> Result<BTreeMap<kafka_core::admin::TopicPartition, i64>, Error> {
        self.consumer.end_offsets(partitions, timeout)
    }

    /// Per partition, the first record at or after a time (ms since the epoch); `None`
    /// where no record is that recent.
    pub fn offsets_for_times<T: AsRef<str>>(
        &self,
        times: impl IntoIterator<Item = ((T, i32), i64)>,
        timeout: Duration,
    ) -> Result<
        BTreeMap<
            kafka_core::admin::TopicPartition,
            Option<kafka_core::consumer::OffsetAndTimestamp>,
        >,
        Error,
    > {
        self.consumer.offsets_for_times(times, timeout)
    }

    /// A snapshot of the fetcher's counters.
    pub fn metrics(&self) -> Result<ConsumerMetrics, Error> {
        self.consumer.metrics()
    }

    /// Closes: the listener sees every owned partition `Revoked` (`Lost` without a
    /// generation) first, on this thread, and may commit (Java's close); then commits
    /// what the application has taken (auto-commit on), leaves the group (not a static
    /// member) and returns the final counters; polls fail [`Error::Closed`] from now on.
    pub fn close(&self) -> Result<ConsumerMetrics, Error> {
        if self.listener.is_set() {
            let answer = self
                .group
                .ask_release()
                .map(|mut rx| rx.recv_deadline(None));
            if let Some(Ok(Some(event))) = answer {
                self.listener.deliver(self, &[event]);
            }
        }
        self.consumer.close()
    }

    /// The client under the consumer (metadata, raw requests, [`Notice`](crate::Notice)s).
    pub fn client(&self) -> &BlockingClient {
        self.consumer.client()
    }
}

impl std::fmt::Debug for GroupConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupConsumer")
            .field("mailbox", &self.group)
            .finish_non_exhaustive()
    }
}
