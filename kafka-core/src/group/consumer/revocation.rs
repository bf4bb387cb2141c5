//! Handing partitions over: a revocation is an obligation the application ends with its
//! next poll (with every commit sent until then finished), bounded by
//! `max.poll.interval.ms`; new partitions start at their committed offsets.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{GroupConsumer, GroupEvent};
use crate::client::OpContext;
use crate::group::assignor::RebalanceProtocol;
use crate::group::member::TopicPartition;

pub(super) struct Revocation {
    pub(super) partitions: BTreeSet<TopicPartition>,
    pub(super) raised_at: Instant,
    /// The application polled after it was raised (its handling is done).
    pub(super) polled: bool,
    /// After giving them up: join (eager) or rejoin (cooperative).
    pub(super) then: RebalanceProtocol,
}

impl GroupConsumer {
    /// The application polled having seen every event so far: [`GroupConsumer::touch`],
    /// and the end of a pending revocation's handling (with auto-commit, the revoked
    /// partitions' positions are committed now; they are given up once every commit
    /// sent until now has finished). [`GroupConsumer::poll`] is this plus
    /// [`GroupConsumer::take_records`].
    pub fn handle_poll(&mut self, cx: &mut OpContext<'_>) {
        let first_poll = self.revoking.as_mut().filter(|r| !r.polled).map(|r| {
            r.polled = true;
            r.partitions.clone()
        });
        if let (Some(parts), true) = (first_poll, self.auto_commit) {
            let offsets = self.consumed(parts.iter());
            let offsets = self.changed(offsets);
            self.commits.start(
                cx,
                self.member.commit_as(),
                offsets,
                &self.fetcher,
                self.commit_timeout,
            );
        }
        self.touch(cx);
    }

    pub(super) fn give_up_all(&mut self, cx: &mut OpContext<'_>) {
        let all = std::mem::take(&mut self.owned);
        self.fetcher.forget(all.iter().map(|(t, p)| (&**t, *p)));
        self.fetcher.assign(cx, std::iter::empty());
        if let Some(f) = self.fetching.take() {
            f.cancel(cx);
        }
        self.revoking = None;
        self.committed.clear();
        if let Some(r) = &mut self.reported {
            r.clear();
        }
    }

    pub(super) fn start_revocation(
        &mut self,
        cx: &mut OpContext<'_>,
        partitions: BTreeSet<TopicPartition>,
        then: RebalanceProtocol,
    ) {
        if partitions.is_empty() {
            if then == RebalanceProtocol::Eager {
                self.member.join_allowed();
            }
            return;
        }
        self.fetcher
            .pause(partitions.iter().map(|(t, p)| (&**t, *p)));
        // Partitions of a revocation still pending were reported `Revoked` already.
        let before = self.revoking.as_ref().map(|r| &r.partitions);
        let new: Vec<TopicPartition> = partitions
            .iter()
            .filter(|tp| !before.is_some_and(|b| b.contains(*tp)))
            .cloned()
            .collect();
        if !new.is_empty() {
            self.events.push_back(GroupEvent::Revoked(new));
        }
        self.revoking = Some(Revocation {
            partitions,
            raised_at: cx.now(),
            polled: false,
            then,
        });
    }

    /// A new assignment names partitions of the pending revocation: they are not given
    /// up after all, but start afresh, as Java's do after an eager revocation: out of
    /// the revocation and the owned set, positions forgotten (an adapter dropped their
    /// queued records at `Revoked`), so the caller announces them `Assigned` again and
    /// takes them over from their committed offsets.
    pub(super) fn take_back(
        &mut self,
        cx: &mut OpContext<'_>,
        assignment: &BTreeSet<TopicPartition>,
    ) {
        let Some(r) = &mut self.revoking else { return };
        let back: Vec<TopicPartition> = r.partitions.intersection(assignment).cloned().collect();
        if back.is_empty() {
            return;
        }
        for tp in &back {
            r.partitions.remove(tp);
            self.owned.remove(tp);
            self.committed.remove(tp);
            if let Some(reported) = &mut self.reported {
                reported.remove(tp);
            }
        }
        self.fetcher.forget(back.iter().map(|(t, p)| (&**t, *p)));
        self.fetcher
            .assign(cx, self.owned.iter().map(|(t, p)| (&**t, *p)));
    }

    /// Ends a revocation once the application polled after it and every commit sent
    /// until then finished, or after the rebalance timeout.
    pub(super) fn finish_revocation(&mut self, cx: &mut OpContext<'_>) {
        let Some(r) = &self.revoking else { return };
        let bound = r.raised_at + self.max_poll_interval;
        let handled = r.polled && !self.commits.busy();
        if !handled && cx.now() < bound {
            cx.wake_at(bound);
            return;
        }
        let Some(r) = self.revoking.take() else {
            return;
        };
        for tp in &r.partitions {
            self.owned.remove(tp);
            self.committed.remove(tp);
            if let Some(reported) = &mut self.reported {
                reported.remove(tp);
            }
        }
        self.fetcher
            .forget(r.partitions.iter().map(|(t, p)| (&**t, *p)));
        self.fetcher
            .assign(cx, self.owned.iter().map(|(t, p)| (&**t, *p)));
        match r.then {
            RebalanceProtocol::Eager => self.member.join_allowed(),
            RebalanceProtocol::Cooperative => {
                self.member.request_rejoin(cx.now(), "partitions revoked");
            }
        }
    }

    /// Committed offsets arrived: the new partitions start there (or by the reset
    /// policy) and are fetched from now on.
    pub(super) fn finish_fetching(&mut self, cx: &mut OpContext<'_>) {
        let Some(f) = &mut self.fetching else { return };
        let group = self.member.group().to_string();
        let Some(found) = f.poll(cx, &group) else {
            return;
        };
        let Some(f) = self.fetching.take() else {
            return;
        };
        for tp in &f.partitions {
            if let Some(Some((offset, epoch))) = found.get(tp) {
                // With its epoch, validated like Java's seek(tp, OffsetAndMetadata).
                self.fetcher.seek_with_epoch(&tp.0, tp.1, *offset, *epoch);
                self.committed.insert(tp.clone(), *offset);
            }
            self.owned.insert(tp.clone());
        }
        let revoking = self.revoking.as_ref().map(|r| r.partitions.clone());
        self.fetcher
            .assign(cx, self.owned.iter().map(|(t, p)| (&**t, *p)));
        if let Some(r) = revoking {
            self.fetcher.pause(r.iter().map(|(t, p)| (&**t, *p)));
        }
    }
}
