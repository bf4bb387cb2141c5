//! [`ShareConsumerView`]: a share group member (KIP-932) in the caller's loop: every
//! call goes straight to the core [`ShareConsumer`]; records and events are ready after
//! its `Event::Notify`, and nothing here waits.

use std::time::Instant;

use kafka_core::client::{OpContext, OpId};
use kafka_core::group::TopicPartition;
use kafka_core::share::{
    AcknowledgeType, ShareCommitId, ShareConsumer, ShareError, ShareEvent, ShareRecord,
};

use crate::Driver;

impl Driver {
    /// Starts a share consumer with the client's settings (needs `group.id`; follows
    /// `share.acknowledgement.mode`) subscribed to `topics`. Records and events wait for
    /// it when [`Driver::poll_event`] yields `Event::Notify(op)` with `op == id`; it
    /// finishes (`Event::OperationDone`) after [`ShareConsumerView::close`].
    pub fn start_share_consumer<T: AsRef<str>>(
        &mut self,
        topics: impl IntoIterator<Item = T>,
    ) -> Result<OpId<ShareConsumer>, ShareError> {
        let share = ShareConsumer::new(self.core().config())?;
        let id = self.start(share);
        self.share_consumer(id).subscribe(topics);
        Ok(id)
    }

    /// The running share consumer `id`, to poll, acknowledge and commit.
    pub fn share_consumer(&mut self, id: OpId<ShareConsumer>) -> ShareConsumerView<'_> {
        ShareConsumerView { driver: self, id }
    }
}

/// A borrowed view of one running share consumer (see [`Driver::share_consumer`]).
/// Nothing here blocks: take records with [`ShareConsumerView::poll`] and events
/// (assignments, commit results as `ShareEvent::Committed` with the id
/// [`ShareConsumerView::commit`] returned, failed acknowledgements, fencing) with
/// [`ShareConsumerView::take_event`] after the consumer's `Event::Notify`. Calls on a
/// consumer that is not running do nothing (`poll` returns 0).
#[derive(Debug)]
pub struct ShareConsumerView<'a> {
    driver: &'a mut Driver,
    id: OpId<ShareConsumer>,
}

impl ShareConsumerView<'_> {
    /// Subscribes to exactly these topics and joins (an empty list leaves the group).
    pub fn subscribe<T: AsRef<str>>(&mut self, topics: impl IntoIterator<Item = T>) {
        let topics: Vec<String> = topics.into_iter().map(|t| t.as_ref().into()).collect();
        self.command(|s, cx| s.subscribe(cx, topics));
    }

    /// Appends up to `max.poll.records` records with their delivery counts to `out` and
    /// returns how many. In implicit mode, what the previous poll handed out is accepted
    /// first; in explicit mode, refused with `ShareError::Unacknowledged` while records
    /// handed out before await an acknowledgement. `ShareError::Closed` if not running.
    pub fn poll(&mut self, out: &mut Vec<ShareRecord>) -> Result<usize, ShareError> {
        self.command(|s, cx| s.poll(cx, out))
            .unwrap_or(Err(ShareError::Closed))
    }

    /// Acknowledges a record [`ShareConsumerView::poll`] handed out (explicit mode):
    /// accept, release (deliver again) or reject. Sent with the next fetch to its leader,
    /// or at once by [`ShareConsumerView::commit`]. `AcknowledgeType::Renew` keeps the
    /// record and restarts its acquisition lock (sent at once; Kafka 4.2+); a later poll
    /// hands it out again. `ShareError::Closed` if not running.
    pub fn acknowledge(
        &mut self,
        record: &ShareRecord,
        kind: AcknowledgeType,
    ) -> Result<(), ShareError> {
        let (topic, partition, offset) = (&record.topic, record.partition, record.offset);
        self.command(|s, _| s.acknowledge(topic, partition, offset, kind))
            .unwrap_or(Err(ShareError::Closed))
    }

    /// Sends every acknowledgement decided so far at once (implicit mode: accepts what
    /// was handed out first); the per-partition results come as `ShareEvent::Committed`
    /// with the returned id (`None`: not running).
    pub fn commit(&mut self) -> Option<ShareCommitId> {
        self.command(|s, cx| s.commit(cx))
    }

    /// The next event, if any.
    pub fn take_event(&mut self) -> Option<ShareEvent> {
        self.command(|s, _| s.take_event()).flatten()
    }

    /// Every event waiting, in order.
    pub fn take_events(&mut self) -> Vec<ShareEvent> {
        self.command(|s, _| std::iter::from_fn(|| s.take_event()).collect())
            .unwrap_or_default()
    }

    /// The partitions assigned now.
    pub fn assignment(&mut self) -> Vec<TopicPartition> {
        self.command(|s, _| s.assignment()).unwrap_or_default()
    }

    /// The acquisition lock timeout the brokers last reported (the group's
    /// `share.record.lock.duration.ms`); `None` before the first fetch answer or if not
    /// running (Java's `acquisitionLockTimeoutMs()`).
    pub fn acquisition_lock_timeout(&mut self) -> Option<std::time::Duration> {
        self.command(|s, _| s.acquisition_lock_timeout()).flatten()
    }

    /// The member id and epoch (`None` if not running).
    pub fn member(&mut self) -> Option<(String, i32)> {
        self.command(|s, _| {
            let (m, epoch) = s.member();
            (m.to_string(), epoch)
        })
    }

    /// Closes: what was handed out is accepted (implicit) or released (explicit, not
    /// acknowledged), records fetched but not handed out are released, the share
    /// sessions are closed and the member leaves; then the machine finishes (at most
    /// `request.timeout.ms` later). Commits still open end with `ShareError::Closed` for
    /// what they were waiting on.
    pub fn close(&mut self) {
        self.command(|s, cx| s.close(cx));
    }

    fn command<T>(
        &mut self,
        f: impl FnOnce(&mut ShareConsumer, &mut OpContext<'_>) -> T,
    ) -> Option<T> {
        self.driver.core_mut().command(Instant::now(), self.id, f)
    }
}
