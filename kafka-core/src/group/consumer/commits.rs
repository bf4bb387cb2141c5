//! Commits: explicit ones, automatic ones (`enable.auto.commit`), and the consumed
//! positions they carry (the fetcher's, or the ones an adapter reports).

use super::{GroupConsumer, GroupEvent};
use crate::client::OpContext;
use crate::group::member::TopicPartition;
use crate::group::offsets::CommitId;

impl GroupConsumer {
    /// Commits these offsets (the next offset to consume, per partition) with the
    /// member's generation. The result arrives as [`GroupEvent::Committed`]; a commit
    /// while not in a generation ends at once with [`CommitError::NotMember`].
    pub fn commit(
        &mut self,
        cx: &mut OpContext<'_>,
        offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) -> CommitId {
        let offsets: Vec<_> = offsets.into_iter().collect();
        let id = self.commits.start(
            cx,
            self.member.commit_as(),
            offsets.clone(),
            &self.fetcher,
            self.commit_timeout,
        );
        for (tp, o) in offsets {
            self.committed.insert(tp, o);
        }
        self.take_commit_results();
        id
    }

    /// Commits the positions of every owned partition (what `poll` has handed out, or
    /// what the application reported with [`GroupConsumer::set_consumed`]).
    pub fn commit_consumed(&mut self, cx: &mut OpContext<'_>) -> CommitId {
        let offsets = self.consumed(self.owned.iter());
        self.commit(cx, offsets)
    }

    /// Whether a commit is still running.
    pub fn commit_running(&self, id: CommitId) -> bool {
        self.commits.running(id)
    }

    pub(super) fn consumed<'a>(
        &self,
        parts: impl Iterator<Item = &'a TopicPartition>,
    ) -> Vec<(TopicPartition, i64)> {
        parts
            .filter_map(|tp| {
                let at = match &self.reported {
                    Some(r) => r.get(tp).copied(),
                    None => self.fetcher.position(&tp.0, tp.1),
                };
                Some((tp.clone(), at?))
            })
            .collect()
    }

    /// From now on, commits of consumed positions (automatic ones, the commit of a
    /// revocation, close, [`GroupConsumer::commit_consumed`]) use the positions the
    /// application reports with [`GroupConsumer::set_consumed`], not the fetcher's. For
    /// adapters that take records ahead of the application (a queue between
    /// [`GroupConsumer::take_records`] and the application): what was fetched is not what
    /// was consumed. A partition with no reported position is not committed.
    pub fn use_reported_positions(&mut self) {
        self.reported.get_or_insert_with(Default::default);
    }

    /// The application has consumed these partitions up to these offsets (the next
    /// offset to consume). Partitions not owned are ignored; only with
    /// [`GroupConsumer::use_reported_positions`].
    pub fn set_consumed(&mut self, offsets: impl IntoIterator<Item = (TopicPartition, i64)>) {
        let Some(reported) = &mut self.reported else {
            return;
        };
        for (tp, offset) in offsets {
            if self.owned.contains(&tp) {
                reported.insert(tp, offset);
            }
        }
    }

    pub(super) fn auto_commit_if_due(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        if self.auto_commit && self.member.is_stable() {
            let due = *self
                .next_auto_commit
                .get_or_insert(now + self.auto_commit_interval);
            if due <= now {
                self.next_auto_commit = Some(now + self.auto_commit_interval);
                let revoking = self.revoking.as_ref().map(|r| r.partitions.clone());
                let parts = self
                    .owned
                    .iter()
                    .filter(|tp| !revoking.as_ref().is_some_and(|r| r.contains(*tp)));
                let offsets = self.consumed(parts);
                let offsets = self.changed(offsets);
                if !offsets.is_empty() {
                    self.commits.start(
                        cx,
                        self.member.commit_as(),
                        offsets,
                        &self.fetcher,
                        self.commit_timeout,
                    );
                }
            }
        }
    }

    /// Offsets that differ from the last commit (and records them as committed).
    pub(super) fn changed(
        &mut self,
        offsets: Vec<(TopicPartition, i64)>,
    ) -> Vec<(TopicPartition, i64)> {
        let out: Vec<_> = offsets
            .into_iter()
            .filter(|(tp, o)| self.committed.get(tp) != Some(o))
            .collect();
        for (tp, o) in &out {
            self.committed.insert(tp.clone(), *o);
        }
        out
    }

    pub(super) fn take_commit_results(&mut self) {
        while let Some(done) = self.commits.done.pop_front() {
            if done.result.is_err() {
                // A failed commit leaves those positions uncommitted: allow a retry.
                self.committed.clear();
            }
            self.events.push_back(GroupEvent::Committed {
                id: done.id,
                result: done.result,
            });
        }
    }
}
