//! The application's polls: records handed out, its sign of life, and leaving the group
//! when `max.poll.interval.ms` passes without one.

use super::{GroupConsumer, GroupEvent};
use crate::client::OpContext;
use crate::consumer::ConsumerRecord;

impl GroupConsumer {
    /// Hands out up to `max.poll.records` records of owned partitions (appended to
    /// `out`; none after [`GroupConsumer::close`]); returns how many. Also the application's sign of life
    /// (`max.poll.interval.ms`), the moment automatic commits are sent (positions as
    /// the previous poll left them, as in Java), and the end of a pending revocation's
    /// handling.
    pub fn poll(&mut self, cx: &mut OpContext<'_>, out: &mut Vec<ConsumerRecord>) -> usize {
        self.handle_poll(cx);
        self.take_records(out)
    }

    /// Hands out up to `max.poll.records` records of owned partitions (appended to
    /// `out`) and nothing else: no sign of life, no commit, no end of a revocation. For
    /// adapters that queue records ahead of the application and report its polls with
    /// [`GroupConsumer::touch`] and [`GroupConsumer::handle_poll`].
    pub fn take_records(&mut self, out: &mut Vec<ConsumerRecord>) -> usize {
        self.records_announced = false;
        // Once closing, the final commit holds the positions: nothing past them is
        // handed out (the next owner reads from there).
        if self.failed || self.closing.is_some() {
            return 0;
        }
        self.fetcher.poll(out)
    }

    /// The application's sign of life (`max.poll.interval.ms`; after it passed, the
    /// member rejoins) and the moment a due automatic commit is sent. Unlike
    /// [`GroupConsumer::handle_poll`] it does not end a pending revocation: for an
    /// application poll that has not seen the `Revoked` event yet.
    pub fn touch(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        self.last_poll = Some(now);
        if self.poll_expired && self.subscribed() && !self.failed {
            self.poll_expired = false;
            self.member
                .request_rejoin(now, "the application polled again");
        }
        self.auto_commit_if_due(cx);
        self.take_commit_results();
    }

    /// `max.poll.interval.ms` without a poll: leave the group (the partitions are lost)
    /// until the application polls again.
    pub(super) fn check_poll_interval(&mut self, cx: &mut OpContext<'_>) {
        let Some(last) = self.last_poll else { return };
        if self.poll_expired || self.member.is_idle() || self.failed {
            return;
        }
        let due = last + self.max_poll_interval;
        if cx.now() < due {
            cx.wake_at(due);
            return;
        }
        self.poll_expired = true;
        // Partitions still being taken over were announced too (and ones being revoked:
        // their revocation became a loss).
        let all = self.assigned();
        if !all.is_empty() {
            self.events
                .push_back(GroupEvent::Lost(all.into_iter().collect()));
        }
        self.give_up_all(cx);
        self.member
            .leave(cx, "max.poll.interval.ms passed without a poll");
    }
}
