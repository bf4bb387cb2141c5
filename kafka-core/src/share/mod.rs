//! Share groups (KIP-932, "queues for Kafka"): the [`ShareConsumer`] machine.
//!
//! Members of a share group consume the same partitions together; the brokers hand each
//! record to one member at a time under an acquisition lock, count its deliveries, and
//! take it back if it is released or the lock expires. The consumer acknowledges what it
//! got: accept, release (deliver again) or reject.
//!
//! Files: this one (the machine: subscribe, poll, acknowledge, commit, close, events),
//! `membership` (ShareGroupHeartbeat), `fetch` (share sessions per leader: ShareFetch and
//! ShareAcknowledge), `acks` (what is owed: handed-out records, decided acknowledgements,
//! their batches), `report` (completed acknowledgements as [`AckCompletion`]s), `error`
//! ([`ShareError`]).
//!
//! Drive it like the group consumer: `client.start_op(now, ShareConsumer::new(&config)?)`,
//! `subscribe` in a command, and on `Event::Notify` a command that takes events and
//! calls [`ShareConsumer::poll`].

mod acks;
mod error;
mod fetch;
mod membership;
mod renew;
mod report;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Deref;
use std::time::{Duration, Instant};

pub use acks::AcknowledgeType;
pub use error::ShareError;
pub use report::{AckCompletion, MAX_ACK_REPORT_RANGES};

use acks::{undelivered, Acks};
use fetch::{leader_of, AckOutcome, Fetched, Sessions, Wants};
use membership::{MemberEvent, ShareMember};
use renew::Renewals;

use crate::client::{Notice, OpContext, Operation};
use crate::config::{ClientConfig, ShareAcknowledgementMode};
use crate::consumer::ConsumerRecord;
use crate::group::TopicPartition;

/// A record handed out by a share consumer, with how often it was delivered.
#[derive(Debug, Clone)]
pub struct ShareRecord {
    /// The record (key, value and headers are slices of the fetched buffer).
    pub record: ConsumerRecord,
    /// The delivery count: 1 the first time, more once released or timed out before.
    pub delivery_count: i16,
}

impl Deref for ShareRecord {
    type Target = ConsumerRecord;
    fn deref(&self) -> &ConsumerRecord {
        &self.record
    }
}

/// Identifies one [`ShareConsumer::commit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareCommitId(pub u64);

/// Per-partition acknowledgement results.
pub type AckResults = BTreeMap<TopicPartition, Result<(), ShareError>>;

/// What the share consumer tells the application (take with
/// [`ShareConsumer::take_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShareEvent {
    /// The coordinator assigned these partitions (replacing the previous set).
    Assigned(Vec<TopicPartition>),
    /// A commit finished: one result per partition it carried acknowledgements for.
    Committed {
        /// The id [`ShareConsumer::commit`] returned.
        id: ShareCommitId,
        /// Per-partition results.
        results: AckResults,
    },
    /// Acknowledgements sent with a fetch (not part of a commit) failed for these
    /// partitions (the same failures, with their offsets, are in
    /// [`ShareEvent::Acknowledged`]).
    AcknowledgeFailed(AckResults),
    /// Acknowledgements completed, successfully or not, whether they rode on a fetch, a
    /// commit or the close (Java's acknowledgement commit callback): per partition and
    /// outcome, the offsets of the records the application was handed. One such event
    /// waits at a time; later completions merge into it (bounded by
    /// [`MAX_ACK_REPORT_RANGES`]).
    Acknowledged(Vec<AckCompletion>),
    /// The member was fenced and rejoins; records handed out before can no longer be
    /// acknowledged (they return to the group when their locks expire).
    Fenced(ShareError),
    /// The member cannot go on.
    Failed(ShareError),
}

struct Commit {
    id: ShareCommitId,
    waiting: BTreeSet<TopicPartition>,
    results: AckResults,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closing {
    /// Final acknowledgements go out (epoch -1 per session).
    Acknowledging,
    /// The leave heartbeat is out.
    Leaving,
}

/// A share group member (KIP-932). See the module docs.
pub struct ShareConsumer {
    member: ShareMember,
    sessions: Sessions,
    mode: ShareAcknowledgementMode,
    topics: BTreeSet<String>,
    assigned: BTreeSet<TopicPartition>,
    fetched: VecDeque<Fetched>,
    acks: Acks,
    renewals: Renewals,
    commits: Vec<Commit>,
    /// Per partition, the worst outcome of acknowledgements of handed-out records that
    /// completed on a fetch since the last commit (bounded by the partitions).
    since_commit: AckResults,
    next_commit: u64,
    events: VecDeque<ShareEvent>,
    member_events: Vec<MemberEvent>,
    outcomes: Vec<AckOutcome>,
    max_poll_records: usize,
    closing: Option<(Closing, Instant)>,
    close_timeout: Duration,
    failed: bool,
    records_announced: bool,
}

impl std::fmt::Debug for ShareConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareConsumer")
            .field("member", &self.member)
            .field("assigned", &self.assigned.len())
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl ShareConsumer {
    /// A share consumer for `config`'s `group.id` and `share.acknowledgement.mode`.
    pub fn new(config: &ClientConfig) -> Result<Self, ShareError> {
        let member = ShareMember::new(config)?;
        let sessions = Sessions::new(config, member.group().to_string());
        Ok(ShareConsumer {
            member,
            sessions,
            mode: config.group().share_acknowledgement_mode,
            topics: BTreeSet::new(),
            assigned: BTreeSet::new(),
            fetched: VecDeque::new(),
            acks: Acks::default(),
            renewals: Renewals::default(),
            commits: Vec::new(),
            since_commit: AckResults::new(),
            next_commit: 0,
            events: VecDeque::new(),
            member_events: Vec::new(),
            outcomes: Vec::new(),
            max_poll_records: config.consumer().max_poll_records.max(1),
            closing: None,
            close_timeout: config.common().request_timeout,
            failed: false,
            records_announced: false,
        })
    }

    /// Subscribes to exactly these topics and joins (an empty list leaves the group).
    pub fn subscribe<T: Into<String>>(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: impl IntoIterator<Item = T>,
    ) {
        self.topics = topics.into_iter().map(Into::into).collect();
        if self.topics.is_empty() {
            self.member.leave(cx);
            self.set_assigned(BTreeSet::new());
            return;
        }
        cx.request_metadata(self.topics.iter().cloned());
        self.member.join(cx.now());
    }

    /// The partitions assigned now.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.assigned.iter().cloned().collect()
    }

    /// The member id and epoch (empty / 0 before the first heartbeat).
    pub fn member(&self) -> (&str, i32) {
        (&self.member.member_id, self.member.epoch)
    }

    /// How many handed-out records await an acknowledgement (explicit mode). Records
    /// acknowledged with [`AcknowledgeType::Renew`] are not counted: they are handed out
    /// again once renewed.
    pub fn unacknowledged(&self) -> usize {
        self.acks.unacknowledged()
    }

    /// How many renewals ([`AcknowledgeType::Renew`]) are not answered yet.
    pub fn renewals_in_progress(&self) -> usize {
        self.renewals.in_progress()
    }

    /// The acquisition lock timeout the brokers last reported in a ShareFetch or
    /// ShareAcknowledge answer (the group's `share.record.lock.duration.ms`): how long
    /// this member holds a record it was handed before it goes back to the group. `None`
    /// before the first answer (Java's `acquisitionLockTimeoutMs()`).
    pub fn acquisition_lock_timeout(&self) -> Option<Duration> {
        self.sessions.lock_timeout()
    }

    /// Hands out up to `max.poll.records` records into `out`; returns how many. In
    /// implicit mode, every record the previous poll handed out is accepted first. In
    /// explicit mode, refused with [`ShareError::Unacknowledged`] (nothing handed out,
    /// nothing changed) while records handed out before await an acknowledgement (a
    /// renewal counts as one); records whose renewal completed are handed out again
    /// first, and a poll that hands them out hands out nothing else (as Java's).
    pub fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        out: &mut Vec<ShareRecord>,
    ) -> Result<usize, ShareError> {
        if self.mode == ShareAcknowledgementMode::Explicit {
            let count = self.acks.unacknowledged();
            if count > 0 {
                return Err(ShareError::Unacknowledged { count });
            }
        }
        self.records_announced = false;
        if self.mode == ShareAcknowledgementMode::Implicit {
            self.acks.settle_handed(AcknowledgeType::Accept);
        }
        if self.renewals.has_ready() {
            let again = self.renewals.take_ready(self.max_poll_records);
            let n = again.len();
            for r in again {
                let tp: TopicPartition = (r.topic.clone(), r.partition);
                self.acks.hand_out(&tp, r.offset);
                self.renewals.hand_out(&tp, &r);
                out.push(r);
            }
            self.flush(cx);
            return Ok(n);
        }
        let explicit = self.mode == ShareAcknowledgementMode::Explicit;
        let mut n = 0;
        while n < self.max_poll_records {
            let Some(f) = self.fetched.front_mut() else {
                break;
            };
            match f.chunk.next_record(&f.tp.0, f.tp.1) {
                Some(Ok(r)) => {
                    let Some(&(_, _, count)) = f
                        .acquired
                        .iter()
                        .find(|a| a.0 <= r.offset && r.offset <= a.1)
                    else {
                        continue;
                    };
                    if f.delivered.last().is_some_and(|&l| l >= r.offset) {
                        continue;
                    }
                    f.delivered.push(r.offset);
                    self.acks.hand_out(&f.tp, r.offset);
                    let r = ShareRecord {
                        record: r,
                        delivery_count: count,
                    };
                    if explicit {
                        self.renewals.hand_out(&f.tp, &r);
                    }
                    out.push(r);
                    n += 1;
                }
                Some(Err(_)) | None => {
                    let f = self.fetched.pop_front().expect("front");
                    self.settle_fetched(f);
                }
            }
        }
        self.flush(cx);
        Ok(n)
    }

    /// Acknowledges a record handed out (explicit mode). Sent with the next fetch to its
    /// leader, or at once by [`ShareConsumer::commit`]. [`AcknowledgeType::Renew`] goes
    /// at once (a ShareAcknowledge with `IsRenewAck`); once the broker confirms it, the
    /// record is handed out again by a later poll. A leader older than ShareAcknowledge
    /// v2 cannot renew: the renewal completes with [`ShareError::RenewUnsupported`] (in
    /// [`ShareEvent::Acknowledged`]) and the record is handed out again as it is.
    pub fn acknowledge(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        kind: AcknowledgeType,
    ) -> Result<(), ShareError> {
        if self.mode == ShareAcknowledgementMode::Implicit {
            return Err(ShareError::ImplicitMode);
        }
        if kind == AcknowledgeType::Renew && self.closing.is_some() {
            return Err(ShareError::Closed);
        }
        let tp: TopicPartition = (topic.into(), partition);
        if kind == AcknowledgeType::Gap || !self.acks.acknowledge(&tp, offset, kind) {
            return Err(ShareError::NotAcquired {
                topic: topic.to_string(),
                partition,
                offset,
            });
        }
        self.renewals.acknowledged(&tp, offset, kind);
        Ok(())
    }

    /// Sends every acknowledgement decided so far at once (ShareAcknowledge per leader;
    /// implicit mode first accepts what was handed out). Ends with one
    /// [`ShareEvent::Committed`] with a result for every partition whose
    /// acknowledgements were decided since the previous commit: pending ones, those
    /// riding on a fetch, and those a fetch already completed (as Java's `commitSync`
    /// reports what was acknowledged since the last poll, which alone sends them there).
    pub fn commit(&mut self, cx: &mut OpContext<'_>) -> ShareCommitId {
        if self.mode == ShareAcknowledgementMode::Implicit {
            self.acks.settle_handed(AcknowledgeType::Accept);
        }
        self.next_commit += 1;
        let id = ShareCommitId(self.next_commit);
        // Acknowledgements decided before the commit: pending ones and those already
        // riding on a request.
        let mut waiting: BTreeSet<TopicPartition> = self.acks.pending.keys().cloned().collect();
        waiting.extend(self.sessions.acks_in_flight().cloned());
        self.commits.push(Commit {
            id,
            waiting,
            results: std::mem::take(&mut self.since_commit),
        });
        self.finish_commits();
        self.flush(cx);
        id
    }

    /// The next event, if any.
    pub fn take_event(&mut self) -> Option<ShareEvent> {
        self.events.pop_front()
    }

    /// Whether records wait to be handed out (fetched, or renewed to be handed out again).
    pub fn has_pending(&self) -> bool {
        !self.fetched.is_empty() || self.renewals.has_ready()
    }

    /// Closes: what was handed out is accepted (implicit) or released (explicit, not
    /// acknowledged), fetched records not handed out are released, each session is
    /// closed with a final ShareAcknowledge (epoch -1), then the member leaves (epoch -1).
    /// The machine finishes when that is done or after `request.timeout.ms`.
    pub fn close(&mut self, cx: &mut OpContext<'_>) {
        if self.closing.is_some() {
            return;
        }
        let kind = match self.mode {
            ShareAcknowledgementMode::Implicit => AcknowledgeType::Accept,
            ShareAcknowledgementMode::Explicit => AcknowledgeType::Release,
        };
        // Renewals not sent yet and renewed records not handed out again are released.
        self.acks.replace_renewals(AcknowledgeType::Release);
        self.release_renewed();
        self.acks.settle_handed(kind);
        self.renewals.forget_handed();
        while let Some(f) = self.fetched.pop_front() {
            self.release_fetched(f);
        }
        self.closing = Some((Closing::Acknowledging, cx.now() + self.close_timeout));
        self.flush(cx);
    }

    /// Records renewed and not handed out again are released (closing).
    fn release_renewed(&mut self) {
        for r in self.renewals.take_all_ready() {
            let tp: TopicPartition = (r.topic.clone(), r.partition);
            self.acks.hand_out(&tp, r.offset);
            self.acks
                .acknowledge(&tp, r.offset, AcknowledgeType::Release);
        }
    }

    /// The chunk is used up: acquired offsets it passed over without a record (control
    /// records, compacted gaps) are gaps, the ones beyond its data are released.
    fn settle_fetched(&mut self, f: Fetched) {
        let end = f.chunk.next_offset;
        let ranges: Vec<(i64, i64)> = f.acquired.iter().map(|a| (a.0, a.1)).collect();
        for (first, last) in undelivered(&ranges, &f.delivered) {
            if first < end {
                let gap_end = last.min(end - 1);
                self.acks.add(&f.tp, first, gap_end, AcknowledgeType::Gap);
                self.acks
                    .add(&f.tp, gap_end + 1, last, AcknowledgeType::Release);
            } else {
                self.acks.add(&f.tp, first, last, AcknowledgeType::Release);
            }
        }
    }

    /// Releases every acquired record of `f` not handed out.
    fn release_fetched(&mut self, f: Fetched) {
        let ranges: Vec<(i64, i64)> = f.acquired.iter().map(|a| (a.0, a.1)).collect();
        for (first, last) in undelivered(&ranges, &f.delivered) {
            self.acks.add(&f.tp, first, last, AcknowledgeType::Release);
        }
    }

    fn set_assigned(&mut self, assigned: BTreeSet<TopicPartition>) {
        // Fetched records of partitions no longer assigned go back to the group.
        let (keep, drop): (Vec<Fetched>, Vec<Fetched>) = std::mem::take(&mut self.fetched)
            .into_iter()
            .partition(|f| assigned.contains(&f.tp));
        self.fetched = keep.into();
        for f in drop {
            self.release_fetched(f);
        }
        if assigned != self.assigned {
            self.events
                .push_back(ShareEvent::Assigned(assigned.iter().cloned().collect()));
        }
        self.assigned = assigned;
    }

    fn on_member_events(&mut self) {
        for e in std::mem::take(&mut self.member_events) {
            match e {
                MemberEvent::Assigned(ps) => self.set_assigned(ps),
                MemberEvent::Fenced(code) => {
                    // Acquisitions belonged to the fenced epoch: nothing can be
                    // acknowledged any more; the records return when their locks expire.
                    self.fetched.clear();
                    let lost = std::mem::take(&mut self.acks.pending);
                    self.acks.clear();
                    self.renewals.clear();
                    for (tp, ranges) in lost {
                        self.outcomes
                            .push((tp, ranges, Err(ShareError::Fenced(code))));
                    }
                    self.set_assigned(BTreeSet::new());
                    self.events
                        .push_back(ShareEvent::Fenced(ShareError::Fenced(code)));
                }
                MemberEvent::Failed(e) => {
                    self.failed = true;
                    self.fetched.clear();
                    self.set_assigned(BTreeSet::new());
                    self.events.push_back(ShareEvent::Failed(e));
                }
            }
        }
    }

    /// Routes acknowledgement outcomes to the commits waiting for them, or reports
    /// failures of ones no commit waits for.
    fn route_outcomes(&mut self) {
        let mut stray = AckResults::new();
        for (tp, ranges, result) in std::mem::take(&mut self.outcomes) {
            self.report(&tp, &ranges, &result);
            self.renewals.completed(&tp, &ranges, &result);
            let mut taken = false;
            for c in &mut self.commits {
                if c.waiting.remove(&tp) {
                    keep_worst(&mut c.results, &tp, &result);
                    taken = true;
                }
            }
            if !taken && ranges.iter().any(|r| r.handed) {
                // Completed on a fetch, no commit waiting: the next commit reports it.
                keep_worst(&mut self.since_commit, &tp, &result);
            }
            if !taken && result.is_err() {
                stray.insert(tp, result);
            }
        }
        if !stray.is_empty() {
            // One waiting report per queue, keyed by partition: the queue stays bounded
            // when the application does not take events.
            let waiting = self.events.iter_mut().find_map(|e| match e {
                ShareEvent::AcknowledgeFailed(r) => Some(r),
                _ => None,
            });
            match waiting {
                Some(r) => r.extend(stray),
                None => self.events.push_back(ShareEvent::AcknowledgeFailed(stray)),
            }
        }
        self.finish_commits();
    }

    /// Merges a completed acknowledgement into the waiting [`ShareEvent::Acknowledged`]
    /// (only the records handed to the application are reported).
    fn report(
        &mut self,
        tp: &TopicPartition,
        ranges: &[acks::AckRange],
        result: &Result<(), ShareError>,
    ) {
        let handed: Vec<(i64, i64)> = ranges
            .iter()
            .filter(|r| r.handed && r.first <= r.last)
            .map(|r| (r.first, r.last))
            .collect();
        if handed.is_empty() {
            return;
        }
        let i = match self
            .events
            .iter()
            .position(|e| matches!(e, ShareEvent::Acknowledged(_)))
        {
            Some(i) => i,
            None => {
                self.events.push_back(ShareEvent::Acknowledged(Vec::new()));
                self.events.len() - 1
            }
        };
        if let ShareEvent::Acknowledged(waiting) = &mut self.events[i] {
            report::add(waiting, tp, handed, result);
        }
    }

    /// The machine finishes: acknowledgements still owed or in flight are reported
    /// `Closed`, commits still waiting end, and the waiting events are its output.
    fn finish(&mut self) -> Vec<ShareEvent> {
        let mut left = self.sessions.abandon();
        for (tp, ranges) in std::mem::take(&mut self.acks.pending) {
            left.entry(tp).or_default().extend(ranges);
        }
        self.acks.clear();
        self.renewals.clear();
        for (tp, ranges) in left {
            self.outcomes.push((tp, ranges, Err(ShareError::Closed)));
        }
        self.route_outcomes();
        for c in std::mem::take(&mut self.commits) {
            let mut results = c.results;
            results.extend(
                c.waiting
                    .into_iter()
                    .map(|tp| (tp, Err(ShareError::Closed))),
            );
            self.events
                .push_back(ShareEvent::Committed { id: c.id, results });
        }
        self.events.drain(..).collect()
    }

    fn finish_commits(&mut self) {
        let mut i = 0;
        while i < self.commits.len() {
            if self.commits[i].waiting.is_empty() {
                let c = self.commits.remove(i);
                self.events.push_back(ShareEvent::Committed {
                    id: c.id,
                    results: c.results,
                });
            } else {
                i += 1;
            }
        }
    }

    /// Sends what each leader needs now.
    fn flush(&mut self, cx: &mut OpContext<'_>) {
        let closing = matches!(self.closing, Some((Closing::Acknowledging, _)));
        if self.failed && !closing {
            return;
        }
        let mut by_node: BTreeMap<i32, BTreeSet<TopicPartition>> = BTreeMap::new();
        let mut leaderless = false;
        if !closing && self.member.is_member() {
            for tp in &self.assigned {
                cx.keep_topic(&tp.0);
                match leader_of(cx, tp) {
                    Some(n) => {
                        by_node.entry(n).or_default().insert(tp.clone());
                    }
                    None => leaderless = true,
                }
            }
        }
        let mut nodes: BTreeSet<i32> = by_node.keys().copied().collect();
        nodes.extend(self.sessions.nodes());
        for tp in self.acks.pending.keys() {
            match leader_of(cx, tp) {
                Some(n) => {
                    nodes.insert(n);
                }
                None => leaderless = true,
            }
        }
        if leaderless {
            cx.request_metadata(self.topics.iter().cloned());
        }
        let waiting: BTreeSet<&TopicPartition> =
            self.commits.iter().flat_map(|c| c.waiting.iter()).collect();
        let draining: BTreeSet<i32> = self.fetched.iter().map(|f| f.node).collect();
        let empty = BTreeSet::new();
        let member_id = self.member.member_id.clone();
        for node in nodes {
            let urgent = self
                .acks
                .pending
                .keys()
                .any(|tp| waiting.contains(tp) && leader_of(cx, tp) == Some(node));
            let wants = Wants {
                desired: by_node.get(&node).unwrap_or(&empty),
                draining: draining.contains(&node),
                urgent,
                closing,
            };
            if !closing && !self.member.is_member() {
                continue;
            }
            self.sessions.send(
                cx,
                node,
                &member_id,
                wants,
                &mut self.acks,
                &mut self.outcomes,
            );
        }
        self.route_outcomes();
    }
}

impl Operation for ShareConsumer {
    /// The events still waiting when the machine finished (the close's last
    /// [`ShareEvent::Acknowledged`] and [`ShareEvent::Committed`] results among them).
    type Output = Vec<ShareEvent>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Vec<ShareEvent>> {
        let mut fetched = Vec::new();
        self.sessions
            .collect(cx, &mut self.acks, &mut fetched, &mut self.outcomes);
        if self.closing.is_some() {
            for f in fetched {
                self.release_fetched(f);
            }
        } else {
            self.fetched.extend(fetched);
        }
        if let Some((stage, deadline)) = self.closing {
            self.route_outcomes();
            // Renewals answered while closing: the records are released.
            self.release_renewed();
            let now = cx.now();
            if stage == Closing::Acknowledging {
                self.flush(cx);
                if self.sessions.all_closed() || now >= deadline {
                    self.member.leave(cx);
                    self.closing = Some((Closing::Leaving, deadline));
                }
            }
            self.member.poll(cx, &self.topics, &mut self.member_events);
            let stage = self.closing.map_or(stage, |c| c.0);
            let left = stage == Closing::Leaving && !self.member.leaving();
            if left || now >= deadline {
                return Some(self.finish());
            }
            cx.wake_at(deadline);
            return None;
        }
        self.member.poll(cx, &self.topics, &mut self.member_events);
        self.on_member_events();
        self.flush(cx);
        let records = !self.fetched.is_empty() || self.renewals.has_ready();
        if !self.events.is_empty() || (records && !self.records_announced) {
            cx.notify();
        }
        self.records_announced |= records;
        None
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        if let Notice::ConnectionClosed { node, .. } = notice {
            self.sessions.connection_closed(*node);
        }
        true
    }
}

/// Records `result` for `tp` unless a failure is already there (a failure wins).
fn keep_worst(results: &mut AckResults, tp: &TopicPartition, result: &Result<(), ShareError>) {
    match results.get(tp) {
        Some(Err(_)) => {}
        _ => {
            results.insert(tp.clone(), result.clone());
        }
    }
}
