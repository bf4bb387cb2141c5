//! Committed offsets of a group member: OffsetCommit with the member's generation
//! (retried while retriable, every commit ending in exactly one result) and OffsetFetch
//! with `require_stable` for newly assigned partitions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use super::member::TopicPartition;
use super::CommitError;
use crate::client::{OpContext, RequestId};
use crate::cluster::Route;
use crate::consumer::Consumer;
use crate::protocol::messages::offset_commit::request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use crate::protocol::messages::offset_commit::OffsetCommitRequest;
use crate::protocol::messages::offset_fetch::request::OffsetFetchRequestTopic;
use crate::protocol::messages::offset_fetch::OffsetFetchRequest;
use crate::protocol::KafkaCode;

/// OffsetFetch v7: one group, topic names, `require_stable` (Kafka 2.5+).
const FETCH_VERSION: i16 = 7;

/// Names one commit; its result arrives as
/// [`GroupEvent::Committed`](super::GroupEvent::Committed) with the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(pub(crate) u64);

/// Who the commit is for: the generation (or member epoch) and member it is sent with,
/// and the OffsetCommit version that carries them.
#[derive(Debug, Clone)]
pub(crate) struct CommitAs {
    pub(crate) group: String,
    pub(crate) generation: i32,
    pub(crate) member_id: String,
    pub(crate) instance: Option<String>,
    pub(crate) version: i16,
}

struct Commit {
    id: CommitId,
    /// Partitions, offsets and the leader epoch of the record before each (-1: unknown).
    offsets: Vec<(TopicPartition, i64, i32)>,
    membership: CommitAs,
    request: Option<RequestId<OffsetCommitRequest>>,
    retry_at: Option<Instant>,
    attempts: u32,
    deadline: Instant,
}

/// What a finished commit reports.
#[derive(Debug)]
pub(crate) struct CommitDone {
    pub(crate) id: CommitId,
    pub(crate) result: Result<(), CommitError>,
}

/// Commits in flight.
#[derive(Default)]
pub(crate) struct Commits {
    next: u64,
    live: Vec<Commit>,
    pub(crate) done: VecDeque<CommitDone>,
}

impl Commits {
    /// Starts a commit of `offsets` for `membership`; `None` membership ends it at once
    /// with [`CommitError::NotMember`]. Each offset carries the leader epoch `fetcher`
    /// knows for it (KIP-320), so a member restoring it validates it.
    pub(crate) fn start(
        &mut self,
        cx: &mut OpContext<'_>,
        membership: Option<CommitAs>,
        offsets: Vec<(TopicPartition, i64)>,
        fetcher: &Consumer,
        timeout: Duration,
    ) -> CommitId {
        self.next += 1;
        let id = CommitId(self.next);
        let Some(membership) = membership else {
            self.done.push_back(CommitDone {
                id,
                result: Err(CommitError::NotMember),
            });
            return id;
        };
        if offsets.is_empty() {
            self.done.push_back(CommitDone { id, result: Ok(()) });
            return id;
        }
        let offsets = offsets
            .into_iter()
            .map(|(tp, o)| {
                let epoch = fetcher.epoch_before(&tp.0, tp.1, o).unwrap_or(-1);
                (tp, o, epoch)
            })
            .collect();
        let mut c = Commit {
            id,
            offsets,
            membership,
            request: None,
            retry_at: None,
            attempts: 0,
            deadline: cx.now() + timeout,
        };
        // One commit on the wire at a time, in the order they were made: a retried older
        // commit (its answer lost after the coordinator stored it) must never land after
        // a newer one and move an offset back. Later ones wait their turn in `poll`.
        if self.live.is_empty() {
            send(cx, &mut c);
        }
        self.live.push(c);
        id
    }

    /// Whether any commit is still running.
    pub(crate) fn busy(&self) -> bool {
        !self.live.is_empty()
    }

    /// Whether one commit is still running.
    pub(crate) fn running(&self, id: CommitId) -> bool {
        self.live.iter().any(|c| c.id == id)
    }

    /// Takes the answer of the commit on the wire, retries it while retriable or sends
    /// the next one in line; arms the wake-up.
    pub(crate) fn poll(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        // Only the oldest commit is ever sent (see `start`): once it ends, the next.
        while let Some(c) = self.live.first_mut() {
            if c.request.is_none() && c.retry_at.is_none() {
                // Its turn came: first attempt.
                send(cx, c);
            }
            if let Some(req) = c.request {
                let Some(answer) = cx.take_response(req) else {
                    return;
                };
                c.request = None;
                let outcome = match answer {
                    Ok(resp) => judge(&resp, c),
                    Err(e) => Outcome::Retry(format!("{e}")),
                };
                match outcome {
                    Outcome::Done(result) => {
                        let c = self.live.remove(0);
                        self.done.push_back(CommitDone { id: c.id, result });
                        continue;
                    }
                    Outcome::Retry(why) => {
                        if now >= c.deadline {
                            let c = self.live.remove(0);
                            self.done.push_back(CommitDone {
                                id: c.id,
                                result: Err(CommitError::Transport(why)),
                            });
                            continue;
                        }
                        c.attempts += 1;
                        let group = c.membership.group.clone();
                        cx.invalidate_coordinator(&group);
                        c.retry_at = Some(now + cx.retry_backoff(c.attempts));
                    }
                }
            }
            if let Some(at) = c.retry_at {
                if at <= now {
                    c.retry_at = None;
                    send(cx, c);
                } else {
                    cx.wake_at(at);
                }
            }
            return;
        }
    }

    /// Ends every commit (the consumer closed or the owner is gone).
    pub(crate) fn abandon(&mut self, cx: &mut OpContext<'_>) {
        self.abandon_with(cx, &CommitError::Closed);
    }

    /// Ends every commit with `error`: none is sent (again) after this.
    pub(crate) fn abandon_with(&mut self, cx: &mut OpContext<'_>, error: &CommitError) {
        for c in self.live.drain(..) {
            if let Some(r) = c.request {
                cx.discard(r);
            }
            self.done.push_back(CommitDone {
                id: c.id,
                result: Err(error.clone()),
            });
        }
    }
}

enum Outcome {
    Done(Result<(), CommitError>),
    Retry(String),
}

fn send(cx: &mut OpContext<'_>, c: &mut Commit) {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for ((topic, partition), offset, epoch) in &c.offsets {
        let p = OffsetCommitRequestPartition {
            partition_index: *partition,
            committed_offset: *offset,
            committed_leader_epoch: *epoch,
            committed_metadata: Some(String::new()),
            ..Default::default()
        };
        match topics.last_mut() {
            Some(t) if *t.name == **topic => t.partitions.push(p),
            _ => topics.push(OffsetCommitRequestTopic {
                name: topic.to_string(),
                partitions: vec![p],
                ..Default::default()
            }),
        }
    }
    let m = &c.membership;
    let req = OffsetCommitRequest {
        group_id: m.group.clone(),
        generation_id_or_member_epoch: m.generation,
        member_id: m.member_id.clone(),
        group_instance_id: m.instance.clone(),
        topics,
        ..Default::default()
    };
    let route = Route::GroupCoordinator(m.group.clone());
    c.request = Some(cx.send_version(route, req, m.version));
}

/// A commit's answer: done (ok, refused for the generation, failed for a partition) or
/// to be retried (coordinator moved or loading, a retriable partition error).
fn judge(
    resp: &crate::protocol::messages::offset_commit::OffsetCommitResponse,
    c: &Commit,
) -> Outcome {
    let mut answered = BTreeSet::new();
    for t in &resp.topics {
        for p in &t.partitions {
            let code = KafkaCode(p.error_code);
            answered.insert((t.name.as_str(), p.partition_index));
            match code {
                KafkaCode::NONE => {}
                KafkaCode::ILLEGAL_GENERATION
                | KafkaCode::UNKNOWN_MEMBER_ID
                | KafkaCode::FENCED_INSTANCE_ID
                | KafkaCode::STALE_MEMBER_EPOCH
                | KafkaCode::FENCED_MEMBER_EPOCH => {
                    return Outcome::Done(Err(CommitError::Rebalanced(code)))
                }
                KafkaCode::REBALANCE_IN_PROGRESS => {
                    return Outcome::Done(Err(CommitError::Rebalanced(code)))
                }
                _ if code.is_retriable() => return Outcome::Retry(code.to_string()),
                _ => {
                    return Outcome::Done(Err(CommitError::Partition {
                        topic: t.name.clone(),
                        partition: p.partition_index,
                        code,
                    }))
                }
            }
        }
    }
    let all = c
        .offsets
        .iter()
        .all(|((t, p), _, _)| answered.contains(&(&**t, *p)));
    if all {
        Outcome::Done(Ok(()))
    } else {
        Outcome::Retry("the answer left partitions out".into())
    }
}

/// A committed offset and the leader epoch committed with it, if any.
pub(crate) type Committed = (i64, Option<i32>);

/// An OffsetFetch for newly assigned partitions.
pub(crate) struct Fetching {
    pub(crate) partitions: BTreeSet<TopicPartition>,
    request: Option<RequestId<OffsetFetchRequest>>,
    retry_at: Option<Instant>,
    attempts: u32,
}

impl Fetching {
    /// Asks the coordinator for the committed offsets of `partitions`.
    pub(crate) fn start(
        cx: &mut OpContext<'_>,
        group: &str,
        partitions: BTreeSet<TopicPartition>,
    ) -> Self {
        let mut f = Fetching {
            partitions,
            request: None,
            retry_at: None,
            attempts: 0,
        };
        f.send(cx, group);
        f
    }

    fn send(&mut self, cx: &mut OpContext<'_>, group: &str) {
        let mut topics: Vec<OffsetFetchRequestTopic> = Vec::new();
        for (topic, p) in &self.partitions {
            match topics.last_mut() {
                Some(t) if *t.name == **topic => t.partition_indexes.push(*p),
                _ => topics.push(OffsetFetchRequestTopic {
                    name: topic.to_string(),
                    partition_indexes: vec![*p],
                    ..Default::default()
                }),
            }
        }
        let req = OffsetFetchRequest {
            group_id: group.to_string(),
            topics: Some(topics),
            require_stable: true,
            ..Default::default()
        };
        let route = Route::GroupCoordinator(group.to_string());
        self.request = Some(cx.send_version(route, req, FETCH_VERSION));
    }

    /// Committed offsets (`None` = nothing committed) and the leader epoch committed
    /// with each (if any), once answered.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        group: &str,
    ) -> Option<BTreeMap<TopicPartition, Option<Committed>>> {
        let now = cx.now();
        if let Some(at) = self.retry_at {
            if at > now {
                cx.wake_at(at);
                return None;
            }
            self.retry_at = None;
            self.send(cx, group);
        }
        let req = self.request?;
        let answer = cx.take_response(req)?;
        self.request = None;
        let mut retry = false;
        let mut found = BTreeMap::new();
        match answer {
            Ok(resp) if resp.error_code == 0 => {
                for t in resp.topics {
                    let topic: std::sync::Arc<str> = t.name.as_str().into();
                    for p in t.partitions {
                        let tp = (topic.clone(), p.partition_index);
                        if !self.partitions.contains(&tp) {
                            continue;
                        }
                        let code = KafkaCode(p.error_code);
                        if code == KafkaCode::NONE {
                            let epoch = Some(p.committed_leader_epoch).filter(|&e| e >= 0);
                            let at = Some(p.committed_offset)
                                .filter(|&o| o >= 0)
                                .map(|o| (o, epoch));
                            found.insert(tp, at);
                        } else {
                            // UNSTABLE_OFFSET_COMMIT (a transaction is pending), loading,
                            // or anything else: ask again.
                            retry = true;
                        }
                    }
                }
                if found.len() < self.partitions.len() {
                    retry = true;
                }
            }
            Ok(resp) => {
                let code = KafkaCode(resp.error_code);
                if matches!(
                    code,
                    KafkaCode::NOT_COORDINATOR | KafkaCode::COORDINATOR_NOT_AVAILABLE
                ) {
                    // The coordinator moved: look it up again before the retry.
                    cx.invalidate_coordinator(group);
                }
                retry = true;
            }
            Err(_) => retry = true,
        }
        if retry {
            self.attempts += 1;
            let at = now + cx.retry_backoff(self.attempts);
            self.retry_at = Some(at);
            cx.wake_at(at);
            return None;
        }
        Some(found)
    }

    /// Withdraws the request.
    pub(crate) fn cancel(self, cx: &mut OpContext<'_>) {
        if let Some(r) = self.request {
            cx.discard(r);
        }
    }
}
