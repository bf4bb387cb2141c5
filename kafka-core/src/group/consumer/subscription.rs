//! The subscription: topic names or a pattern (classic: matched here over all-topics
//! metadata, rejoining when the matching set changes; KIP-848: sent to the coordinator),
//! and leaving it.

use std::collections::BTreeSet;

use super::GroupConsumer;
use crate::client::OpContext;
use crate::group::member::TopicPartition;
use crate::group::pattern::Matcher;
use crate::group::{GroupError, GroupEvent, TopicPattern};

impl GroupConsumer {
    /// Subscribes to exactly these topics (replacing the previous subscription) and
    /// joins or rejoins the group.
    pub fn subscribe<'t>(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: impl IntoIterator<Item = &'t str>,
    ) {
        let topics: BTreeSet<String> = topics.into_iter().map(str::to_string).collect();
        let had_pattern = self.clear_pattern(cx);
        if topics == self.topics && !had_pattern {
            return;
        }
        self.topics = topics;
        cx.request_metadata(self.topics.iter().cloned());
        if self.topics.is_empty() {
            self.unsubscribe(cx);
            return;
        }
        self.member.request_rejoin(cx.now(), "subscription changed");
        self.last_poll.get_or_insert(cx.now());
    }

    /// Subscribes to every topic whose whole name matches `pattern` (replacing the
    /// previous subscription) and joins or rejoins the group. Classic: matched here
    /// against every topic's metadata (refreshed every `metadata.max.age.ms`; internal
    /// topics left out with `exclude.internal.topics`), joining once the first
    /// all-topics answer is in; a topic that starts or stops matching rejoins. KIP-848:
    /// sent as `SubscribedTopicRegex` and matched by the coordinator (an invalid one ends
    /// as [`GroupEvent::Failed`]); the assigned topics are asked for by topic id, never
    /// every topic. Refused if `pattern` was made for the classic
    /// protocol's rules and this consumer is classic but it is not compiled.
    pub fn subscribe_pattern(
        &mut self,
        cx: &mut OpContext<'_>,
        pattern: TopicPattern,
    ) -> Result<(), GroupError> {
        let classic = self.member.is_classic();
        if classic && !pattern.is_compiled() {
            return Err(GroupError::InvalidPattern {
                pattern: pattern.as_str().to_string(),
                reason: "made for group.protocol=consumer".into(),
            });
        }
        if self.pattern.as_ref().is_some_and(|m| m.pattern == pattern) {
            return Ok(());
        }
        let now = cx.now();
        if classic {
            cx.want_all_topics(true);
        } else {
            // The coordinator matches; the member asks for the topic ids it is assigned
            // (Java's `ConsumerMetadata`: by topic id for a broker-side regex).
            self.topics.clear();
            self.member.set_pattern(Some(pattern.as_str().to_string()));
            self.member.request_rejoin(now, "subscription changed");
        }
        self.pattern = Some(Matcher::new(pattern, self.exclude_internal, cx.metadata()));
        self.last_poll.get_or_insert(now);
        Ok(())
    }

    /// The pattern subscribed to, if any.
    pub fn pattern(&self) -> Option<&str> {
        self.pattern.as_ref().map(|m| m.pattern.as_str())
    }

    /// Ends a pattern subscription; whether there was one.
    pub(super) fn clear_pattern(&mut self, cx: &mut OpContext<'_>) -> bool {
        if self.pattern.take().is_none() {
            return false;
        }
        cx.want_all_topics(false);
        self.member.set_pattern(None);
        true
    }

    /// Classic pattern subscriptions: after each all-topics answer, the matching topics
    /// become the subscription; a change (or the first answer) joins or rejoins.
    pub(super) fn match_pattern(&mut self, cx: &mut OpContext<'_>) {
        if !self.member.is_classic() {
            return;
        }
        let Some(m) = &mut self.pattern else { return };
        let Some(matched) = m.refresh(cx.metadata()) else {
            return;
        };
        let first = std::mem::take(&mut m.first);
        if matched != self.topics || (first && self.member.is_idle()) {
            self.topics = matched;
            self.member
                .request_rejoin(cx.now(), "the topics matching the pattern changed");
        }
    }

    pub(super) fn subscribed(&self) -> bool {
        !self.topics.is_empty() || self.pattern.is_some()
    }

    /// Leaves the group and gives up every partition (they are reported `Revoked`).
    pub fn unsubscribe(&mut self, cx: &mut OpContext<'_>) {
        self.clear_pattern(cx);
        self.topics.clear();
        // Every partition announced and not yet reported revoked: owned ones and ones
        // whose committed offsets are still being looked up (`Assigned` too).
        let all = self.announced();
        if !all.is_empty() {
            self.events
                .push_back(GroupEvent::Revoked(all.into_iter().collect()));
        }
        self.give_up_all(cx);
        self.member.leave(cx, "the consumer unsubscribed");
    }

    /// The subscribed topics (with a classic pattern: those it matches now).
    pub fn subscription(&self) -> impl Iterator<Item = &str> {
        self.topics.iter().map(String::as_str)
    }

    /// The partitions the application owns now.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.owned.iter().cloned().collect()
    }
}
