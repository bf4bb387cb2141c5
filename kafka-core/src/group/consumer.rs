//! The group consumer: the fetcher ([`Consumer`]) driven by group membership — subscribe,
//! rebalance events with revocation as an obligation, committed offsets as starting
//! positions, commits (explicit and automatic), leaving on close.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use super::assignor::RebalanceProtocol;
use super::member::{MemberEvent, TopicPartition};
use super::membership::Member;
use super::offsets::{CommitId, Commits, Fetching};
use super::pattern::Matcher;
use super::{CommitError, GroupError, TopicPattern};
use crate::client::{Notice, OpContext, Operation};
use crate::config::ClientConfig;
use crate::consumer::{Consumer, ConsumerMetrics, ConsumerRecord};

/// What the group consumer tells the application (take with
/// [`GroupConsumer::take_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupEvent {
    /// These partitions are the application's now (added to what it had).
    Assigned(Vec<TopicPartition>),
    /// These partitions are being taken away. No record of them is handed out any more;
    /// the member gives them up at the next [`GroupConsumer::poll`], once every commit
    /// sent until then has finished, so the application may commit first.
    Revoked(Vec<TopicPartition>),
    /// The membership was lost (session expired, fenced generation, poll interval
    /// exceeded): these partitions may already belong to another member; commits for
    /// them would be refused.
    Lost(Vec<TopicPartition>),
    /// A commit finished (explicit or automatic).
    Committed {
        /// The id [`GroupConsumer::commit`] returned (automatic commits have ids too).
        id: CommitId,
        /// Its result.
        result: Result<(), CommitError>,
    },
    /// The member cannot go on; the consumer stops consuming.
    Failed(GroupError),
}

struct Revocation {
    partitions: BTreeSet<TopicPartition>,
    raised_at: Instant,
    /// The application polled after it was raised (its handling is done).
    polled: bool,
    /// After giving them up: join (eager) or rejoin (cooperative).
    then: RebalanceProtocol,
}

/// A group member's identity as a transactional producer needs it to commit offsets
/// (Java's `ConsumerGroupMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The generation (classic) or member epoch (KIP-848); -1 outside one.
    pub generation_id: i32,
    /// The member id the coordinator knows this member by.
    pub member_id: String,
    /// `group.instance.id`, for static members.
    pub group_instance_id: Option<String>,
}

/// A consumer in a group (`group.protocol=classic`). Drive it like [`Consumer`]:
/// `client.start_op(now, GroupConsumer::new(&config)?)`, `subscribe` in a command, and
/// on `Event::Notify` a command that takes events and calls `poll`.
pub struct GroupConsumer {
    fetcher: Consumer,
    member: Member,
    /// The subscription: named topics, or (classic) the ones the pattern matches now.
    topics: BTreeSet<String>,
    /// A pattern subscription (classic: matched here; KIP-848: by the coordinator).
    pattern: Option<Matcher>,
    exclude_internal: bool,
    /// Partitions the application owns (announced with `Assigned`).
    owned: BTreeSet<TopicPartition>,
    revoking: Option<Revocation>,
    fetching: Option<Fetching>,
    commits: Commits,
    events: VecDeque<GroupEvent>,
    member_events: Vec<MemberEvent>,
    last_poll: Option<Instant>,
    poll_expired: bool,
    max_poll_interval: Duration,
    auto_commit: bool,
    auto_commit_interval: Duration,
    next_auto_commit: Option<Instant>,
    /// Positions last committed, to skip unchanged ones.
    committed: std::collections::BTreeMap<TopicPartition, i64>,
    commit_timeout: Duration,
    closing: Option<Closing>,
    failed: bool,
    /// Positions the application reported taking ([`GroupConsumer::use_reported_positions`]):
    /// what commits of consumed positions use instead of the fetcher's.
    reported: Option<std::collections::BTreeMap<TopicPartition, i64>>,
    /// Pending records were announced (`Notify`) and not taken since: records notify
    /// once until the next take (an adapter whose queue is full takes later), events
    /// every poll until taken.
    records_announced: bool,
}

#[derive(Debug)]
enum Closing {
    /// Waiting for the final auto-commit.
    Committing(CommitId, Instant),
    /// Waiting for LeaveGroup.
    Leaving(Instant),
    Done,
}

impl std::fmt::Debug for GroupConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupConsumer")
            .field("member", &self.member)
            .field("owned", &self.owned.len())
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl GroupConsumer {
    /// A group consumer for `config` (needs `group.id`).
    pub fn new(config: &ClientConfig) -> Result<Self, GroupError> {
        let g = config.group();
        let mut fetcher = Consumer::new(config);
        fetcher.owner_notifies = true;
        Ok(GroupConsumer {
            fetcher,
            member: Member::new(config)?,
            topics: BTreeSet::new(),
            pattern: None,
            exclude_internal: g.exclude_internal_topics,
            owned: BTreeSet::new(),
            revoking: None,
            fetching: None,
            commits: Commits::default(),
            events: VecDeque::new(),
            member_events: Vec::new(),
            last_poll: None,
            poll_expired: false,
            max_poll_interval: g.max_poll_interval,
            auto_commit: g.enable_auto_commit,
            auto_commit_interval: g.auto_commit_interval,
            next_auto_commit: None,
            committed: Default::default(),
            commit_timeout: config.common().request_timeout.max(Duration::from_secs(30)) * 2,
            closing: None,
            failed: false,
            reported: None,
            records_announced: false,
        })
    }

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
    /// as [`GroupEvent::Failed`]). Refused if `pattern` was made for the classic
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
        cx.want_all_topics(true);
        if !classic {
            // The coordinator matches; the metadata of every topic lets its assignment
            // be resolved by topic id.
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
    fn clear_pattern(&mut self, cx: &mut OpContext<'_>) -> bool {
        if self.pattern.take().is_none() {
            return false;
        }
        cx.want_all_topics(false);
        self.member.set_pattern(None);
        true
    }

    /// Classic pattern subscriptions: after each all-topics answer, the matching topics
    /// become the subscription; a change (or the first answer) joins or rejoins.
    fn match_pattern(&mut self, cx: &mut OpContext<'_>) {
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

    fn subscribed(&self) -> bool {
        !self.topics.is_empty() || self.pattern.is_some()
    }

    /// Leaves the group and gives up every partition (they are reported `Revoked`).
    pub fn unsubscribe(&mut self, cx: &mut OpContext<'_>) {
        self.clear_pattern(cx);
        self.topics.clear();
        if !self.owned.is_empty() {
            self.events
                .push_back(GroupEvent::Revoked(self.owned.iter().cloned().collect()));
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

    /// The member id and generation (empty and -1 while not a member).
    pub fn generation(&self) -> (&str, i32) {
        (self.member.member_id(), self.member.generation())
    }

    /// The member's group identity, for offsets committed inside a transaction
    /// (`send_offsets_to_transaction`, KIP-447). Outside a generation the generation is
    /// -1 and the member id empty: the coordinator then checks neither.
    pub fn group_metadata(&self) -> GroupMetadata {
        match self.member.commit_as() {
            Some(a) => GroupMetadata {
                group_id: a.group,
                generation_id: a.generation,
                member_id: a.member_id,
                group_instance_id: a.instance,
            },
            None => GroupMetadata {
                group_id: self.member.group().to_string(),
                generation_id: -1,
                member_id: String::new(),
                group_instance_id: self.member.instance().map(str::to_string),
            },
        }
    }

    /// The consumed position (the next offset to read) of every owned partition: what
    /// a consume-transform-produce loop commits inside its transaction.
    pub fn consumed_offsets(&self) -> Vec<(TopicPartition, i64)> {
        self.consumed(self.owned.iter())
    }

    /// Whether this member computed the current generation's assignment (classic
    /// protocol; KIP-848 assigns on the broker).
    pub fn is_leader(&self) -> bool {
        self.member.is_leader()
    }

    /// Completed rebalances.
    pub fn rebalances(&self) -> u64 {
        self.member.rebalances()
    }

    /// The next event, if any.
    pub fn take_event(&mut self) -> Option<GroupEvent> {
        self.events.pop_front()
    }

    /// Moves a partition's position (it must be owned). With reported positions it is
    /// the partition's consumed position too (nothing of it is consumed past it).
    pub fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.fetcher.seek(topic, partition, offset);
        let tp: TopicPartition = (topic.into(), partition);
        if let (Some(r), true) = (&mut self.reported, self.owned.contains(&tp)) {
            r.insert(tp, offset);
        }
    }

    /// Moves these owned partitions' positions to the log start.
    pub fn seek_to_beginning<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.fetcher.seek_to_beginning(partitions);
    }

    /// Moves these owned partitions' positions to the log end.
    pub fn seek_to_end<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.fetcher.seek_to_end(partitions);
    }

    /// The next offset handed out for an owned partition, once known.
    pub fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        self.fetcher.position(topic, partition)
    }

    /// Stops fetching these partitions.
    pub fn pause<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        self.fetcher.pause(partitions);
    }

    /// Fetches these partitions again (revoking partitions stay paused).
    pub fn resume<'t>(&mut self, partitions: impl IntoIterator<Item = (&'t str, i32)>) {
        let revoking = self.revoking.as_ref().map(|r| &r.partitions);
        let keep: Vec<(&str, i32)> = partitions
            .into_iter()
            .filter(|(t, p)| !revoking.is_some_and(|r| r.contains(&((*t).into(), *p))))
            .collect();
        self.fetcher.resume(keep);
    }

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

    fn consumed<'a>(
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

    /// Hands out up to `max.poll.records` records of owned partitions (appended to
    /// `out`); returns how many. Also the application's sign of life
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
        if self.failed {
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
            self.commits
                .start(cx, self.member.commit_as(), offsets, self.commit_timeout);
        }
        self.touch(cx);
    }

    fn auto_commit_if_due(&mut self, cx: &mut OpContext<'_>) {
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
                    self.commits
                        .start(cx, self.member.commit_as(), offsets, self.commit_timeout);
                }
            }
        }
    }

    /// Offsets that differ from the last commit (and records them as committed).
    fn changed(&mut self, offsets: Vec<(TopicPartition, i64)>) -> Vec<(TopicPartition, i64)> {
        let out: Vec<_> = offsets
            .into_iter()
            .filter(|(tp, o)| self.committed.get(tp) != Some(o))
            .collect();
        for (tp, o) in &out {
            self.committed.insert(tp.clone(), *o);
        }
        out
    }

    /// The next partition error of the fetcher.
    pub fn take_error(&mut self) -> Option<crate::consumer::ConsumeError> {
        self.fetcher.take_error()
    }

    /// Whether records, errors or events wait.
    pub fn has_pending(&self) -> bool {
        !self.events.is_empty() || self.fetcher.has_pending()
    }

    /// A snapshot of the fetcher's counters.
    pub fn metrics(&self) -> ConsumerMetrics {
        self.fetcher.metrics()
    }

    /// Closes: commits consumed positions (with auto-commit on), leaves the group (not
    /// a static member), then finishes.
    pub fn close(&mut self, cx: &mut OpContext<'_>) {
        if self.closing.is_some() {
            return;
        }
        let now = cx.now();
        let deadline = now + self.commit_timeout;
        if self.auto_commit && !self.owned.is_empty() && self.member.commit_as().is_some() {
            let offsets = self.consumed(self.owned.iter());
            let offsets = self.changed(offsets);
            let id = self
                .commits
                .start(cx, self.member.commit_as(), offsets, self.commit_timeout);
            self.closing = Some(Closing::Committing(id, deadline));
        } else {
            self.member.leave(cx, "the consumer is closing");
            self.closing = Some(Closing::Leaving(deadline));
        }
    }

    fn take_commit_results(&mut self) {
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

    fn give_up_all(&mut self, cx: &mut OpContext<'_>) {
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

    fn on_member_events(&mut self, cx: &mut OpContext<'_>) {
        let events = std::mem::take(&mut self.member_events);
        for e in events {
            match e {
                MemberEvent::Revoke { lost: true } => {
                    if !self.owned.is_empty() {
                        self.events
                            .push_back(GroupEvent::Lost(self.owned.iter().cloned().collect()));
                    }
                    self.give_up_all(cx);
                }
                MemberEvent::Revoke { lost: false } => {
                    self.start_revocation(cx, self.owned.clone(), RebalanceProtocol::Eager);
                }
                MemberEvent::Assigned { partitions, .. } => {
                    let revoked: BTreeSet<_> =
                        self.owned.difference(&partitions).cloned().collect();
                    let added: BTreeSet<_> = partitions.difference(&self.owned).cloned().collect();
                    if !revoked.is_empty() {
                        self.start_revocation(cx, revoked, RebalanceProtocol::Cooperative);
                    }
                    if let Some(f) = self.fetching.take() {
                        f.cancel(cx);
                    }
                    if !added.is_empty() {
                        self.events
                            .push_back(GroupEvent::Assigned(added.iter().cloned().collect()));
                        let group = self.member.group().to_string();
                        self.fetching = Some(Fetching::start(cx, &group, added));
                    }
                }
                MemberEvent::Failed(e) => {
                    self.failed = true;
                    self.events.push_back(GroupEvent::Failed(e));
                    self.give_up_all(cx);
                }
            }
        }
    }

    fn start_revocation(
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
        self.events
            .push_back(GroupEvent::Revoked(partitions.iter().cloned().collect()));
        self.revoking = Some(Revocation {
            partitions,
            raised_at: cx.now(),
            polled: false,
            then,
        });
    }

    /// Ends a revocation once the application polled after it and every commit sent
    /// until then finished, or after the rebalance timeout.
    fn finish_revocation(&mut self, cx: &mut OpContext<'_>) {
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
    fn finish_fetching(&mut self, cx: &mut OpContext<'_>) {
        let Some(f) = &mut self.fetching else { return };
        let group = self.member.group().to_string();
        let Some(found) = f.poll(cx, &group) else {
            return;
        };
        let Some(f) = self.fetching.take() else {
            return;
        };
        for tp in &f.partitions {
            if let Some(Some(offset)) = found.get(tp) {
                self.fetcher.seek(&tp.0, tp.1, *offset);
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

    /// `max.poll.interval.ms` without a poll: leave the group (the partitions are lost)
    /// until the application polls again.
    fn check_poll_interval(&mut self, cx: &mut OpContext<'_>) {
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
        if !self.owned.is_empty() {
            self.events
                .push_back(GroupEvent::Lost(self.owned.iter().cloned().collect()));
        }
        self.give_up_all(cx);
        self.member
            .leave(cx, "max.poll.interval.ms passed without a poll");
    }

    fn poll_closing(&mut self, cx: &mut OpContext<'_>) -> bool {
        let now = cx.now();
        match self.closing {
            None => return false,
            Some(Closing::Committing(id, deadline)) => {
                if self.commits.running(id) && now < deadline {
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

impl Operation for GroupConsumer {
    type Output = ConsumerMetrics;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<ConsumerMetrics> {
        self.commits.poll(cx);
        self.take_commit_results();
        if self.poll_closing(cx) {
            if matches!(self.closing, Some(Closing::Done)) {
                self.commits.abandon(cx);
                self.fetcher.close(cx);
                let _ = Operation::poll(&mut self.fetcher, cx);
                return Some(self.fetcher.metrics());
            }
            return None;
        }
        if !self.failed {
            self.check_poll_interval(cx);
            self.finish_revocation(cx);
            self.match_pattern(cx);
            let mut owned = self.owned.clone();
            if let Some(f) = &self.fetching {
                owned.extend(f.partitions.iter().cloned());
            }
            let busy = self.revoking.is_some() || self.fetching.is_some();
            self.member
                .poll(cx, &self.topics, &owned, busy, &mut self.member_events);
            self.on_member_events(cx);
            self.finish_revocation(cx);
            self.finish_fetching(cx);
        }
        let _ = Operation::poll(&mut self.fetcher, cx);
        let records = self.fetcher.has_pending();
        if !self.events.is_empty() || (records && !self.records_announced) {
            cx.notify();
        }
        self.records_announced |= records;
        None
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        self.fetcher.notice(notice);
        true
    }
}
