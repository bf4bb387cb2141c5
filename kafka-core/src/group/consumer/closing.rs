//! Closing: the final automatic commit, then LeaveGroup, each bounded.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{GroupConsumer, GroupEvent};
use crate::client::OpContext;

#[derive(Debug)]
pub(super) enum Closing {
    /// Waiting for the final auto-commit and every commit before it.
    Committing(Instant),
    /// Waiting for LeaveGroup.
    Leaving(Instant),
    Done,
}

impl GroupConsumer {
    /// What the application gives up when it closes, for its listener to see before
    /// [`GroupConsumer::close`] (Java's `onLeavePrepare`): every partition announced
    /// `Assigned` and not yet `Revoked` or `Lost`, as
    /// `Revoked` while the member holds a generation (a commit from the listener is still
    /// accepted) or `Lost` when it holds none; `None` when it owns nothing or is closing.
    pub fn release_on_close(&self) -> Option<GroupEvent> {
        // What the application was told it has (partitions still being taken over
        // too) and not yet told it loses.
        let owned: Vec<_> = self.announced().into_iter().collect();
        if self.closing.is_some() || owned.is_empty() {
            return None;
        }
        Some(if self.member.commit_as().is_some() {
            GroupEvent::Revoked(owned)
        } else {
            GroupEvent::Lost(owned)
        })
    }

    /// Closes: commits consumed positions (with auto-commit on) and waits for every
    /// commit still running, leaves the group (not a static member), then finishes.
    pub fn close(&mut self, cx: &mut OpContext<'_>) {
        if self.closing.is_some() {
            return;
        }
        let now = cx.now();
        let deadline = now + self.commit_timeout;
        if self.auto_commit && !self.owned.is_empty() && self.member.commit_as().is_some() {
            let offsets = self.consumed(self.owned.iter());
            let offsets = self.changed(offsets);
            self.commits.start(
                cx,
                self.member.commit_as(),
                offsets,
                &self.fetcher,
                self.commit_timeout,
            );
        }
        if self.commits.busy() {
            self.closing = Some(Closing::Committing(deadline));
        } else {
            self.member.leave(cx, "the consumer is closing");
            self.closing = Some(Closing::Leaving(deadline));
        }
    }

    pub(super) fn poll_closing(&mut self, cx: &mut OpContext<'_>) -> bool {
        let now = cx.now();
        match self.closing {
            None => return false,
            Some(Closing::Committing(deadline)) => {
                // Every commit made before close too (an automatic one may still be
                // retrying), not just the final one: they are what the next owner reads.
                if self.commits.busy() && now < deadline {
                    cx.wake_at(deadline);
                    return true;
                }
                self.member.leave(cx, "the consumer is closing");
                self.closing = Some(Closing::Leaving(deadline));
            }
            Some(Closing::Leaving(_) | Closing::Done) => {}
        }
        if let Some(Closing::Leaving(deadline)) = self.closing {
            self.member.poll(
                cx,
                &BTreeSet::new(),
                &BTreeSet::new(),
                false,
                &mut self.member_events,
            );
            self.member_events.clear();
            if self.member.leaving() && now < deadline {
                cx.wake_at(deadline);
                return true;
            }
            self.closing = Some(Closing::Done);
        }
        true
    }
}
