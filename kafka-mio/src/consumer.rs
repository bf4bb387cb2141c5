//! [`ConsumerView`]: consuming through the caller's loop: every call goes straight to
//! the core consumer; records are ready after its `Event::Notify`.

use std::time::Instant;

use kafka_core::client::{OpContext, OpId};
use kafka_core::consumer::{
    ConsumeError, Consumer, ConsumerMetrics, ConsumerRecord, EdgeOffsets, OffsetsForTimes,
};

use kafka_driver::consumer::{lookup_partitions, lookup_times};

use crate::Driver;

impl Driver {
    /// Starts a consumer (assign mode) with the client's consumer settings. Records or
    /// errors wait for it when [`Driver::poll_event`] yields `Event::Notify(op)` with
    /// `op == id`; it finishes (`Event::OperationDone`, its output the final counters)
    /// after [`ConsumerView::close`].
    pub fn start_consumer(&mut self) -> OpId<Consumer> {
        let consumer = Consumer::new(self.core().config());
        self.start(consumer)
    }

    /// Starts a lookup of the log start offsets of `partitions` (Java's
    /// `beginningOffsets`); its result is [`Driver::take_output`] after its
    /// `Event::OperationDone`.
    pub fn beginning_offsets<'t>(
        &mut self,
        partitions: impl IntoIterator<Item = (&'t str, i32)>,
    ) -> OpId<EdgeOffsets> {
        let parts = lookup_partitions(partitions);
        let op = EdgeOffsets::beginning(self.core().config(), parts);
        self.start(op)
    }

    /// Starts a lookup of the end offsets of `partitions` (the last stable offset under
    /// read_committed; Java's `endOffsets`), taken like
    /// [`Driver::beginning_offsets`].
    pub fn end_offsets<'t>(
        &mut self,
        partitions: impl IntoIterator<Item = (&'t str, i32)>,
    ) -> OpId<EdgeOffsets> {
        let parts = lookup_partitions(partitions);
        let op = EdgeOffsets::end(self.core().config(), parts);
        self.start(op)
    }

    /// Starts a lookup, per partition, of the first record at or after a time (ms since
    /// the epoch; Java's `offsetsForTimes`), taken like [`Driver::beginning_offsets`].
    pub fn offsets_for_times<'t>(
        &mut self,
        times: impl IntoIterator<Item = ((&'t str, i32), i64)>,
    ) -> OpId<OffsetsForTimes> {
        let times = lookup_times(times);
        let op = OffsetsForTimes::new(self.core().config(), times);
        self.start(op)
    }

    /// The running consumer `id`, to control and take records from.
    pub fn consumer(&mut self, id: OpId<Consumer>) -> ConsumerView<'_> {
        ConsumerView { driver: self, id }
    }
}

/// A borrowed view of one running consumer (see [`Driver::consumer`]). Nothing here
/// blocks or waits: [`ConsumerView::poll`] hands out what is fetched already, and the
/// caller polls again after the consumer's next `Event::Notify`. Calls on a consumer
/// that is not running do nothing (`poll` returns 0).
#[derive(Debug)]
pub struct ConsumerView<'a> {
    driver: &'a mut Driver,
    id: OpId<Consumer>,
}

impl ConsumerView<'_> {
    /// Consumes exactly these partitions from now on (Java's `assign`).
    pub fn assign<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|c, cx| c.assign(cx, partitions));
    }

    /// The next record handed out from the partition is at `offset`.
    pub fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.command(|c, _| c.seek(topic, partition, offset));
    }

    /// Moves the position to an offset known to follow a record of leader epoch
    /// `leader_epoch` (a committed offset's): validated with OffsetForLeaderEpoch before
    /// fetching from it (KIP-320).
    pub fn seek_with_epoch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) {
        self.command(|c, _| c.seek_with_epoch(topic, partition, offset, leader_epoch));
    }

    /// Moves the positions to the log start.
    pub fn seek_to_beginning<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|c, _| c.seek_to_beginning(partitions));
    }

    /// Moves the positions to the log end.
    pub fn seek_to_end<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|c, _| c.seek_to_end(partitions));
    }

    /// Hands out nothing more from these partitions until resumed.
    pub fn pause<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|c, _| c.pause(partitions));
    }

    /// Fetches and hands out these partitions again.
    pub fn resume<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.command(|c, _| c.resume(partitions));
    }

    /// The offset of the next record handed out from the partition, once known.
    pub fn position(&mut self, topic: &str, partition: i32) -> Option<i64> {
        self.command(|c, _| c.position(topic, partition)).flatten()
    }

    /// Appends up to `max.poll.records` fetched records to `out` (slices of the fetched
    /// buffers, no copy); returns how many.
    pub fn poll(&mut self, out: &mut Vec<ConsumerRecord>) -> usize {
        self.command(|c, _| c.poll(out)).unwrap_or(0)
    }

    /// The next partition error, if any.
    pub fn take_error(&mut self) -> Option<ConsumeError> {
        self.command(|c, _| c.take_error()).flatten()
    }

    /// Stops; the consumer finishes at once (its output: the final counters).
    pub fn close(&mut self) {
        self.command(|c, cx| c.close(cx));
    }

    /// A snapshot of the consumer's counters (`None` if it is not running).
    pub fn metrics(&mut self) -> Option<ConsumerMetrics> {
        self.command(|c, _| c.metrics())
    }

    fn command<T>(&mut self, f: impl FnOnce(&mut Consumer, &mut OpContext<'_>) -> T) -> Option<T> {
        self.driver.core_mut().command(Instant::now(), self.id, f)
    }
}
