//! The group consumer: the fetcher ([`Consumer`]) driven by group membership — subscribe,
//! rebalance events with revocation as an obligation, committed offsets as starting
//! positions, commits (explicit and automatic), leaving on close.
//!
//! Files: this one (the machine, its events and the membership events it turns into
//! them), `subscription` (names or a pattern), `revocation` (revocation obligations, new
//! partitions' starting offsets), `commits` (explicit and automatic commits, consumed
//! positions), `liveness` (the application's polls, `max.poll.interval.ms`), `closing`.

mod closing;
mod commits;
mod liveness;
mod revocation;
mod subscription;

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use closing::Closing;
use revocation::Revocation;

use super::assignor::RebalanceProtocol;
use super::member::{MemberEvent, TopicPartition};
use super::membership::Member;
use super::offsets::{CommitId, Commits, Fetching};
use super::pattern::Matcher;
use super::{CommitError, GroupError};
use crate::client::{Notice, OpContext, Operation};
use crate::config::ClientConfig;
use crate::consumer::{Consumer, ConsumerMetrics};

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

    /// [`GroupConsumer::consumed_offsets`] with the leader epoch of the record before
    /// each, where the fetcher knows it: what `send_offsets_to_transaction` commits
    /// (as `committed_leader_epoch`).
    pub fn transaction_offsets(&self) -> Vec<crate::producer::TxnOffset> {
        self.consumed_offsets()
            .into_iter()
            .map(|((topic, partition), offset)| {
                let epoch = self.fetcher.epoch_before(&topic, partition, offset);
                crate::producer::TxnOffset::new(&*topic, partition, offset).leader_epoch(epoch)
            })
            .collect()
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
        self.seek_with_epoch(topic, partition, offset, None);
    }

    /// [`GroupConsumer::seek`] to an offset known to follow a record of leader epoch
    /// `leader_epoch` (see [`Consumer::seek_with_epoch`](crate::consumer::Consumer::seek_with_epoch)):
    /// validated with OffsetForLeaderEpoch before fetching from it.
    pub fn seek_with_epoch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: Option<i32>,
    ) {
        self.fetcher
            .seek_with_epoch(topic, partition, offset, leader_epoch);
        let tp: TopicPartition = (topic.into(), partition);
        if let (Some(r), true) = (&mut self.reported, self.owned.contains(&tp)) {
            r.insert(tp, offset);
        }
    }

    /// Moves a partition's position back to records handed out but not consumed,
    /// keeping its leader epoch (see [`Consumer::rewind`](crate::consumer::Consumer::rewind));
    /// otherwise as [`GroupConsumer::seek`].
    pub fn rewind(&mut self, topic: &str, partition: i32, offset: i64) {
        self.fetcher.rewind(topic, partition, offset);
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

    /// Every partition announced with `Assigned` and not taken back: owned ones and the
    /// ones whose committed offsets are still being looked up.
    fn assigned(&self) -> BTreeSet<TopicPartition> {
        let mut all = self.owned.clone();
        if let Some(f) = &self.fetching {
            all.extend(f.partitions.iter().cloned());
        }
        all
    }

    /// [`GroupConsumer::assigned`] less the partitions whose revocation was already
    /// reported (`Revoked`) and is pending: what a new `Revoked` may name, so no
    /// partition is reported revoked twice (a `Lost` may still name them: the
    /// revocation became a loss).
    fn announced(&self) -> BTreeSet<TopicPartition> {
        let mut all = self.assigned();
        if let Some(r) = &self.revoking {
            all.retain(|tp| !r.partitions.contains(tp));
        }
        all
    }

    /// The membership is gone (fenced, expired, failed): `Lost` of everything assigned
    /// (partitions being revoked too: their revocation became a loss), unless nothing
    /// is, and commits still waiting for an answer end with
    /// [`CommitError::MembershipLost`]. Retrying one later could land under a new
    /// membership (a rejoined KIP-848 member can be given its old epoch number back
    /// while the group's target assignment waits for its interval) and move an offset
    /// back below what the partition's next owner committed (a possible cause of
    /// the backward commit `sim_adapters_groups` saw once in about 60 runs).
    fn report_all_lost(&mut self, cx: &mut OpContext<'_>) {
        let all = self.assigned();
        if !all.is_empty() {
            self.events
                .push_back(GroupEvent::Lost(all.into_iter().collect()));
        }
        self.commits.abandon_with(cx, &CommitError::MembershipLost);
        self.take_commit_results();
    }

    fn on_member_events(&mut self, cx: &mut OpContext<'_>) {
        let events = std::mem::take(&mut self.member_events);
        for e in events {
            match e {
                MemberEvent::Revoke { lost: true } => {
                    self.report_all_lost(cx);
                    self.give_up_all(cx);
                }
                MemberEvent::Revoke { lost: false } => {
                    // Eager: everything assigned goes, partitions whose committed offsets
                    // are still being looked up too (the member joins as owning nothing).
                    let all = self.assigned();
                    if let Some(f) = self.fetching.take() {
                        f.cancel(cx);
                    }
                    self.start_revocation(cx, all, RebalanceProtocol::Eager);
                }
                MemberEvent::Assigned { partitions, .. } => {
                    // Against everything announced so far: a partition still being taken
                    // over (its committed offset looked up) that the new assignment drops
                    // is revoked like an owned one.
                    self.take_back(cx, &partitions);
                    let before = self.assigned();
                    let revoked: BTreeSet<_> = before.difference(&partitions).cloned().collect();
                    let announced: Vec<_> = partitions.difference(&before).cloned().collect();
                    let added: BTreeSet<_> = partitions.difference(&self.owned).cloned().collect();
                    if let Some(f) = self.fetching.take() {
                        f.cancel(cx);
                    }
                    if !revoked.is_empty() {
                        self.start_revocation(cx, revoked, RebalanceProtocol::Cooperative);
                    }
                    if !announced.is_empty() {
                        self.events.push_back(GroupEvent::Assigned(announced));
                    }
                    if !added.is_empty() {
                        let group = self.member.group().to_string();
                        self.fetching = Some(Fetching::start(cx, &group, added));
                    }
                }
                MemberEvent::Failed(e) => {
                    // The partitions go with the membership (Java calls
                    // `onPartitionsLost` on a fatal error): `Lost`, then `Failed`.
                    self.failed = true;
                    self.report_all_lost(cx);
                    self.events.push_back(GroupEvent::Failed(e));
                    self.give_up_all(cx);
                }
            }
        }
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
            // Partitions being revoked are held until given up: an eager member joins
            // only after that (Java joins after `onPartitionsRevoked` returned).
            let mut owned = self.assigned();
            if let Some(r) = &self.revoking {
                owned.extend(r.partitions.iter().cloned());
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

#[cfg(test)]
impl GroupConsumer {
    /// Every partition the member holds: owned (revoking ones included) or being taken
    /// over (its committed offset asked for). Two members must never hold one at once.
    pub(crate) fn held(&self) -> BTreeSet<TopicPartition> {
        if matches!(self.closing, Some(Closing::Leaving(_) | Closing::Done)) {
            // Its last commit is done; it hands nothing out any more.
            return BTreeSet::new();
        }
        self.assigned()
    }
}
