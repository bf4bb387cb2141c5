//! [`GroupConsumerView`]: a group consumer in the caller's loop: every call goes
//! straight to the core's [`GroupConsumer`]; the caller is the application, so its
//! [`GroupConsumerView::poll`] is the application's poll (sign of life, auto-commit,
//! end of a revocation) and there is no queue between the fetcher and it.

use std::time::Instant;

use kafka_core::client::{OpContext, OpId};
use kafka_core::consumer::{ConsumeError, ConsumerMetrics, ConsumerRecord};
use kafka_core::group::{
    CommitId, GroupConsumer, GroupError, GroupEvent, GroupMetadata, TopicPartition, TopicPattern,
};

use kafka_core::producer::TxnOffset;

use crate::Driver;

impl Driver {
    /// Starts a group consumer with the client's settings (needs `group.id`) subscribed
    /// to `topics`. Records and events wait for it when [`Driver::poll_event`] yields
    /// `Event::Notify(op)` with `op == id`; it finishes (`Event::OperationDone`, its
    /// output the final counters) after [`GroupConsumerView::close`].
    pub fn start_group_consumer<T: AsRef<str>>(
        &mut self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<OpId<GroupConsumer>, GroupError> {
        let group = GroupConsumer::new(self.core().config())?;
        let id = self.start(group);
        self.group_consumer(id).subscribe(topics);
        Ok(id)
    }

    /// The running group consumer `id`, to poll, commit and control.
    pub fn group_consumer(&mut self, id: OpId<GroupConsumer>) -> GroupConsumerView<'_> {
        GroupConsumerView { driver: self, id }
    }
}

/// A borrowed view of one running group consumer (see [`Driver::group_consumer`]).
/// Nothing here blocks: take events with [`GroupConsumerView::take_event`] (rebalances
/// and commit results, `GroupEvent::Committed` with the id a commit returned) and
/// records with [`GroupConsumerView::poll`] after the consumer's `Event::Notify`. A
/// `Revoked` event's partitions are given up at the next `poll` once every commit sent
/// until then finished, so commit there first if auto-commit is off. Calls on a
/// consumer that is not running do nothing.
#[derive(Debug)]
pub struct GroupConsumerView<'a> {
    driver: &'a mut Driver,
    id: OpId<GroupConsumer>,
}

impl GroupConsumerView<'_> {
    /// Subscribes to exactly these topics (an empty list leaves the group).
    pub fn subscribe<T: AsRef<str>>(&mut self, topics: impl IntoIterator<Item = T>) {
        let topics: Vec<String> = topics.into_iter().map(|t| t.as_ref().into()).collect();
        self.command(|g, cx| g.subscribe(cx, topics.iter().map(String::as_str)));
    }

    /// Subscribes to every topic whose whole name matches `pattern` (replacing the
    /// previous subscription). Classic protocol: a regex matched over every topic's
    /// metadata; an invalid one is an error now. KIP-848: sent to the coordinator, which
    /// refuses an invalid one (`GroupEvent::Failed`). `Ok` also when not running.
    pub fn subscribe_pattern(&mut self, pattern: &str) -> Result<(), GroupError> {
        let protocol = self.driver.core().config().group().group_protocol;
        let pattern = TopicPattern::new(pattern, protocol)?;
        self.command(|g, cx| g.subscribe_pattern(cx, pattern))
            .unwrap_or(Ok(()))
    }

    /// Leaves the group: every partition is revoked.
    pub fn unsubscribe(&mut self) {
        self.command(|g, cx| g.unsubscribe(cx));
    }

    /// The application's poll: appends up to `max.poll.records` records of owned
    /// partitions to `out` and returns how many (see `GroupConsumer::poll`).
    pub fn poll(&mut self, out: &mut Vec<ConsumerRecord>) -> usize {
        self.command(|g, cx| g.poll(cx, out)).unwrap_or(0)
    }

    /// The next rebalance event or commit result.
    pub fn take_event(&mut self) -> Option<GroupEvent> {
        self.command(|g, _| g.take_event()).flatten()
    }

    /// The next partition error, if any.
    pub fn take_error(&mut self) -> Option<ConsumeError> {
        self.command(|g, _| g.take_error()).flatten()
    }

    /// Commits these offsets (next offset to consume per partition); the result comes as
    /// `GroupEvent::Committed` with the returned id (`None`: not running).
    pub fn commit(
        &mut self,
        offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) -> Option<CommitId> {
        self.command(|g, cx| g.commit(cx, offsets))
    }

    /// Commits what [`GroupConsumerView::poll`] has handed out, per owned partition.
    pub fn commit_consumed(&mut self) -> Option<CommitId> {
        self.command(|g, cx| g.commit_consumed(cx))
    }

    /// The partitions owned now.
    pub fn assignment(&mut self) -> Vec<TopicPartition> {
        self.command(|g, _| g.assignment()).unwrap_or_default()
    }

    /// The member id and generation (empty and -1 while not a member).
    pub fn generation(&mut self) -> Option<(String, i32)> {
        self.command(|g, _| {
            let (m, gen) = g.generation();
            (m.to_string(), gen)
        })
    }

    /// The member's group identity, for
    /// [`ProducerView::send_offsets_to_transaction`](crate::ProducerView::send_offsets_to_transaction)
    /// (KIP-447: a zombie member's offsets are refused). `None` if not running.
    pub fn group_metadata(&mut self) -> Option<GroupMetadata> {
        self.command(|g, _| g.group_metadata())
    }

    /// The member's group identity and the consumed position (the next offset after
    /// what [`GroupConsumerView::poll`] handed out) of every owned partition: what a
    /// consume-transform-produce loop sends into its transaction before committing it.
    /// `None` if not running.
    pub fn transaction_offsets(&mut self) -> Option<(GroupMetadata, Vec<TxnOffset>)> {
        self.command(|g, _| (g.group_metadata(), g.transaction_offsets()))
    }

    /// The next record handed out from the (owned) partition is at `offset`.
    pub fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.command(|g, _| g.seek(topic, partition, offset));
    }

    /// Moves an owned partition's position to an offset known to follow a record of
    /// leader epoch `leader_epoch` (a committed offset's): validated with
    /// OffsetForLeaderEpoch before fetching from it (KIP-320).
    pub fn seek_with_epoch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) {
        self.command(|g, _| g.seek_with_epoch(topic, partition, offset, leader_epoch));
    }

    /// Hands out nothing more from these partitions until resumed.
    pub fn pause<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|g, _| g.pause(partitions));
    }

    /// Fetches and hands out these partitions again (revoking ones stay paused).
    pub fn resume<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|g, _| g.resume(partitions));
    }

    /// The offset of the next record handed out from the partition, once known.
    pub fn position(&mut self, topic: &str, partition: i32) -> Option<i64> {
        self.command(|g, _| g.position(topic, partition)).flatten()
    }

    /// What the application gives up when it closes: every owned partition as
    /// `GroupEvent::Revoked` (`Lost` without a generation), to handle (and commit)
    /// before [`GroupConsumerView::close`], as the other adapters' listeners do at close;
    /// `None` when it owns nothing or is not running.
    pub fn release_on_close(&mut self) -> Option<GroupEvent> {
        self.command(|g, _| g.release_on_close()).flatten()
    }

    /// Closes: commits what was handed out (auto-commit on), leaves the group, then the
    /// machine finishes (its output: the final counters).
    pub fn close(&mut self) {
        self.command(|g, cx| g.close(cx));
    }

    /// A snapshot of the fetcher's counters (`None` if it is not running).
    pub fn metrics(&mut self) -> Option<ConsumerMetrics> {
        self.command(|g, _| g.metrics())
    }

    fn command<T>(
        &mut self,
        f: impl FnOnce(&mut GroupConsumer, &mut OpContext<'_>) -> T,
    ) -> Option<T> {
        self.driver.core_mut().command(Instant::now(), self.id, f)
    }
}
