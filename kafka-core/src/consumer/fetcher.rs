//! The fetcher: one Fetch in flight per broker, built from that broker's fetch session
//! and the partitions it serves that may be fetched now (those it leads, or those whose
//! preferred read replica it is: KIP-392); answers become chunks for the application,
//! position errors resets, diverging epochs truncation checks (KIP-320), leader errors a
//! metadata refresh.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use super::records::Chunk;
use super::session::{Plan, Sent};
use super::{ConsumeError, Consumer, Reset};
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::config::OffsetReset;
use crate::conn::RequestError;
use crate::protocol::messages::fetch::request::{FetchPartition, FetchTopic, ForgottenTopic};
use crate::protocol::messages::fetch::{FetchRequest, FetchResponse};
use crate::protocol::{ApiKey, KafkaCode};
use crate::record::DecodeOptions;

/// A Fetch in flight to one broker.
#[derive(Debug)]
pub(super) struct InFlightFetch {
    pub(super) node: i32,
    pub(super) id: RequestId<FetchRequest>,
    pub(super) plan: Plan,
    pub(super) sent_at: Instant,
    /// Every partition fetched (sent or held by the session), its position and the
    /// leader epoch then: an answer for a partition whose position has moved since (a
    /// seek, a pause's rewind) is from the wrong offset, and one from before a leader
    /// change is not validated: both are dropped.
    pub(super) positions: Vec<(usize, i64, i32)>,
}

impl Consumer {
    /// Sends a Fetch to every broker that has none in flight and leads a partition that
    /// may be fetched now; returns the earliest retry deadline that held one back.
    pub(super) fn send_fetches(&mut self, cx: &mut OpContext<'_>) -> Option<Instant> {
        let now = cx.now();
        let mut next: Option<Instant> = None;
        if self.buffered_bytes >= self.budget {
            return None;
        }
        let mut by_node: BTreeMap<i32, Vec<(usize, Sent)>> = BTreeMap::new();
        // Brokers leading a partition whose chunk waits for the application (paused ones
        // aside: theirs may wait for ever).
        let mut draining: HashSet<i32> = HashSet::new();
        // Per broker: whether a wanted partition may have records to fetch (not known to
        // be at the end of its log).
        let mut behind: HashSet<i32> = HashSet::new();
        let read_committed =
            self.cfg.isolation_level == crate::config::IsolationLevel::ReadCommitted;
        let n = self.parts.len();
        // Rotate the starting partition so that none starves under fetch.max.bytes.
        self.rotation = if n == 0 { 0 } else { (self.rotation + 1) % n };
        for k in 0..n {
            let i = (self.rotation + k) % n;
            let p = &self.parts[i];
            if p.assigned && p.buffered && !p.paused {
                if let Some(node) = self.fetch_node(cx, i) {
                    draining.insert(node);
                }
            }
            if !p.assigned || p.paused || p.buffered || p.reset.is_some() || p.validate {
                continue;
            }
            let Some(position) = p.position else { continue };
            if let Some(at) = p.retry_at.filter(|&at| at > now) {
                next = Some(next.map_or(at, |n| n.min(at)));
                continue;
            }
            let Some(node) = self.select_replica(cx, i) else {
                let topic = self.parts[i].topic.to_string();
                cx.request_metadata([topic]);
                continue;
            };
            let p = &self.parts[i];
            let leader_epoch = p.leader.map_or(-1, |(_, e)| e);
            // The broker checks the epoch of the record before the position itself
            // (diverging_epoch); only from Fetch v12 on, which not every broker has.
            let last_fetched_epoch = if p.offset_epoch >= 0
                && cx.broker_supports(node, ApiKey::Fetch, 12) == Some(true)
            {
                p.offset_epoch
            } else {
                -1
            };
            let end = if read_committed {
                p.last_stable_offset
            } else {
                p.high_watermark
            };
            if end < 0 || position < end {
                behind.insert(node);
            }
            by_node.entry(node).or_default().push((
                i,
                Sent {
                    offset: position,
                    max_bytes: self.cfg.max_partition_fetch_bytes,
                    leader_epoch,
                    last_fetched_epoch,
                },
            ));
        }
        for (node, wanted) in by_node {
            if self.fetches.iter().any(|f| f.node == node) {
                continue;
            }
            // Only caught-up partitions to fetch while another one's chunk is being
            // drained: such a Fetch would wait out fetch.max.wait.ms at the broker, and
            // the drained partition could not be fetched again meanwhile (one Fetch in
            // flight per broker). It goes once the chunk is handed out, with that
            // partition in it.
            if draining.contains(&node) && !behind.contains(&node) {
                continue;
            }
            let plan = self.sessions.entry(node).or_default().plan(&wanted);
            let positions = wanted
                .iter()
                .map(|&(i, s)| (i, s.offset, s.leader_epoch))
                .collect();
            if wanted.iter().any(|&(i, _)| {
                self.parts[i]
                    .preferred
                    .is_some_and(|(r, _)| r == node && Some(r) != self.leader_node(cx, i))
            }) {
                self.metrics.preferred_replica_fetches += 1;
            }
            let request = self.fetch_request(cx, &plan);
            let timeout = self.request_timeout + self.cfg.fetch_max_wait;
            let opts = RequestOptions::default().timeout(timeout);
            let id = cx.send_with(Route::Broker(node), request, opts);
            self.metrics.fetches += 1;
            self.fetches.push(InFlightFetch {
                node,
                id,
                plan,
                sent_at: now,
                positions,
            });
        }
        next
    }

    fn fetch_request(&self, cx: &OpContext<'_>, plan: &Plan) -> FetchRequest {
        let mut topics: Vec<FetchTopic> = Vec::new();
        for &(i, sent) in &plan.send {
            let p = &self.parts[i];
            let part = FetchPartition {
                partition: p.partition,
                current_leader_epoch: sent.leader_epoch,
                fetch_offset: sent.offset,
                last_fetched_epoch: sent.last_fetched_epoch,
                log_start_offset: -1,
                partition_max_bytes: sent.max_bytes,
                ..Default::default()
            };
            match topics.iter_mut().find(|t| *t.topic == *p.topic) {
                Some(t) => t.partitions.push(part),
                None => topics.push(FetchTopic {
                    topic: p.topic.to_string(),
                    topic_id: topic_id(cx, &p.topic),
                    partitions: vec![part],
                    ..Default::default()
                }),
            }
        }
        let mut forgotten: Vec<ForgottenTopic> = Vec::new();
        for &i in &plan.forget {
            let p = &self.parts[i];
            match forgotten.iter_mut().find(|t| *t.topic == *p.topic) {
                Some(t) => t.partitions.push(p.partition),
                None => forgotten.push(ForgottenTopic {
                    topic: p.topic.to_string(),
                    topic_id: topic_id(cx, &p.topic),
                    partitions: vec![p.partition],
                    ..Default::default()
                }),
            }
        }
        FetchRequest {
            replica_id: -1,
            max_wait_ms: i32::try_from(self.cfg.fetch_max_wait.as_millis()).unwrap_or(i32::MAX),
            min_bytes: self.cfg.fetch_min_bytes,
            max_bytes: self.cfg.fetch_max_bytes,
            isolation_level: self.cfg.isolation_level.wire(),
            session_id: plan.session_id,
            session_epoch: plan.epoch,
            topics,
            forgotten_topics_data: forgotten,
            rack_id: self.rack.clone(),
            ..Default::default()
        }
    }

    /// Takes every answered Fetch.
    pub(super) fn collect_fetches(&mut self, cx: &mut OpContext<'_>) {
        let mut i = 0;
        while i < self.fetches.len() {
            if !cx.is_done(self.fetches[i].id) {
                i += 1;
                continue;
            }
            let f = self.fetches.swap_remove(i);
            let Some(answer) = cx.take_response(f.id) else {
                continue;
            };
            self.metrics
                .record_latency(cx.now().saturating_duration_since(f.sent_at));
            match answer {
                Ok(resp) => self.apply_fetch(cx, f, resp),
                Err(e) => {
                    self.sessions.entry(f.node).or_default().reset();
                    self.metrics.session_resets += 1;
                    let at = cx.now() + self.backoff(cx, &e);
                    for &(p, _) in &f.plan.send {
                        self.parts[p].retry_at = Some(at);
                    }
                    // Back to the leader for what that replica served (Java's
                    // handleFetchFailure).
                    for &(p, _, _) in &f.positions {
                        self.drop_preferred(p, f.node);
                    }
                }
            }
        }
    }

    fn backoff(&self, cx: &mut OpContext<'_>, _e: &RequestError) -> Duration {
        cx.retry_backoff(1)
    }

    fn apply_fetch(&mut self, cx: &mut OpContext<'_>, f: InFlightFetch, resp: FetchResponse) {
        let code = KafkaCode(resp.error_code);
        let session = self.sessions.entry(f.node).or_default();
        if code != KafkaCode::NONE {
            crate::trace::debug!(node = f.node, %code, "fetch session error; next fetch is full");
            session.reset();
            self.metrics.session_resets += 1;
            let session_error = code == KafkaCode::FETCH_SESSION_ID_NOT_FOUND
                || code == KafkaCode::INVALID_FETCH_SESSION_EPOCH
                || code == KafkaCode::FETCH_SESSION_TOPIC_ID_ERROR;
            if !session_error {
                let at = cx.now() + cx.retry_backoff(1);
                for &(p, _) in &f.plan.send {
                    self.parts[p].retry_at = Some(at);
                }
                for &(p, _, _) in &f.positions {
                    self.drop_preferred(p, f.node);
                }
            }
            return;
        }
        session.answered(&f.plan, resp.session_id);
        let read_committed =
            self.cfg.isolation_level == crate::config::IsolationLevel::ReadCommitted;
        for t in resp.responses {
            for pd in t.partitions {
                let Some(i) = self.find(cx, &t.topic, &t.topic_id, pd.partition_index) else {
                    self.metrics.unexpected_partitions += 1;
                    continue;
                };
                let Some(&(_, fetched_at, epoch_then)) =
                    f.positions.iter().find(|&&(k, _, _)| k == i)
                else {
                    continue; // not fetched in this request
                };
                let p = &mut self.parts[i];
                if !p.assigned
                    || p.buffered
                    || p.validate
                    || p.position != Some(fetched_at)
                    || p.leader.map_or(-1, |(_, e)| e) != epoch_then
                {
                    // Unassigned, sought, reset or the leader changed since the fetch
                    // was sent.
                    continue;
                }
                let code = KafkaCode(pd.error_code);
                let from_replica = p
                    .preferred
                    .is_some_and(|(r, _)| r == f.node && p.leader.map(|(l, _)| l) != Some(r));
                if code != KafkaCode::NONE && from_replica {
                    // An error from the preferred replica: back to the leader, at once
                    // (Java: even OFFSET_OUT_OF_RANGE is only the replica lagging).
                    crate::trace::debug!(topic = %p.topic, partition = p.partition, replica = f.node, %code, "preferred read replica dropped");
                    p.preferred = None;
                    if code == KafkaCode::OFFSET_OUT_OF_RANGE {
                        continue;
                    }
                }
                match code {
                    KafkaCode::NONE => {
                        p.high_watermark = pd.high_watermark;
                        p.last_stable_offset = pd.last_stable_offset;
                        p.retry_at = None;
                        if pd.preferred_read_replica >= 0
                            && p.preferred.map(|(r, _)| r) != Some(pd.preferred_read_replica)
                        {
                            // KIP-392: fetch from there until metadata.max.age.ms passes.
                            let until = cx.now() + self.metadata_max_age;
                            p.preferred = Some((pd.preferred_read_replica, until));
                        }
                        let diverging = &pd.diverging_epoch;
                        if diverging.epoch >= 0 {
                            let (epoch, end) = (diverging.epoch, diverging.end_offset);
                            self.judge_end_offset(i, fetched_at, epoch, end);
                            continue;
                        }
                        let data = pd.records.unwrap_or_default();
                        if data.is_empty() {
                            continue;
                        }
                        let aborted = pd
                            .aborted_transactions
                            .unwrap_or_default()
                            .iter()
                            .map(|a| (a.producer_id, a.first_offset))
                            .collect();
                        let from = p.position.unwrap_or(0);
                        self.metrics.bytes_fetched += data.len() as u64;
                        self.buffered_bytes += data.len();
                        p.buffered = true;
                        let chunk = Chunk::new(
                            i,
                            data,
                            from,
                            aborted,
                            read_committed,
                            DecodeOptions {
                                max_decompressed_bytes: self.cfg.max_decompressed_bytes(),
                                ..DecodeOptions::default()
                            },
                        );
                        self.chunks.push_back(chunk);
                    }
                    KafkaCode::OFFSET_OUT_OF_RANGE => {
                        let offset = p.position.unwrap_or(-1);
                        match self.cfg.auto_offset_reset {
                            OffsetReset::None => {
                                p.position = None;
                                let error = ConsumeError::OffsetOutOfRange {
                                    topic: p.topic.to_string(),
                                    partition: p.partition,
                                    offset,
                                };
                                self.errors.push_back(error);
                            }
                            policy => {
                                crate::trace::info!(topic = %p.topic, partition = p.partition, offset, ?policy, "offset out of range: resetting");
                                p.reset = Some(Reset::from_policy(policy));
                                self.metrics.resets += 1;
                            }
                        }
                    }
                    KafkaCode::NOT_LEADER_OR_FOLLOWER
                    | KafkaCode::FENCED_LEADER_EPOCH
                    | KafkaCode::UNKNOWN_LEADER_EPOCH
                    | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                    | KafkaCode::UNKNOWN_TOPIC_ID
                    | KafkaCode::INCONSISTENT_TOPIC_ID
                    | KafkaCode::KAFKA_STORAGE_ERROR
                    | KafkaCode::LEADER_NOT_AVAILABLE => {
                        let (topic, partition) = (p.topic.clone(), p.partition);
                        p.retry_at = Some(cx.now() + cx.retry_backoff(1));
                        cx.invalidate_leader(&topic, partition);
                    }
                    other => {
                        p.retry_at = Some(cx.now() + cx.retry_backoff(1));
                        let error = ConsumeError::Partition {
                            topic: p.topic.to_string(),
                            partition: p.partition,
                            code: other,
                        };
                        self.errors.push_back(error);
                    }
                }
            }
        }
    }

    /// The partition's leader, if known.
    fn leader_node(&self, cx: &OpContext<'_>, i: usize) -> Option<i32> {
        let p = &self.parts[i];
        cx.metadata().leader(&p.topic, p.partition)
    }

    /// Whether `replica` may serve the partition now: in metadata and not offline.
    fn replica_online(&self, cx: &OpContext<'_>, i: usize, replica: i32) -> bool {
        let p = &self.parts[i];
        let offline = cx
            .metadata()
            .topic(&p.topic)
            .and_then(|t| t.partitions.get(&p.partition))
            .is_none_or(|info| info.offline_replicas.contains(&replica));
        cx.metadata().broker(replica).is_some() && !offline
    }

    /// The broker a partition is fetched from: its preferred read replica while that
    /// holds (not past `metadata.max.age.ms`, still in metadata), else its leader.
    pub(super) fn fetch_node(&self, cx: &OpContext<'_>, i: usize) -> Option<i32> {
        let leader = self.leader_node(cx, i)?;
        match self.parts[i].preferred {
            Some((r, until)) if cx.now() <= until && self.replica_online(cx, i, r) => Some(r),
            _ => Some(leader),
        }
    }

    /// As [`Consumer::fetch_node`], and drops a preferred replica that no longer holds
    /// (a vanished one also refreshes metadata, as in Java).
    fn select_replica(&mut self, cx: &mut OpContext<'_>, i: usize) -> Option<i32> {
        let leader = self.leader_node(cx, i)?;
        let Some((r, until)) = self.parts[i].preferred else {
            return Some(leader);
        };
        if cx.now() > until {
            crate::trace::debug!(replica = r, "preferred read replica expired");
            self.parts[i].preferred = None;
            return Some(leader);
        }
        if self.replica_online(cx, i, r) {
            return Some(r);
        }
        self.parts[i].preferred = None;
        let topic = self.parts[i].topic.to_string();
        cx.request_metadata([topic]);
        Some(leader)
    }

    /// A fetch from `node` failed: a partition it served as preferred replica goes back
    /// to its leader.
    fn drop_preferred(&mut self, i: usize, node: i32) {
        let p = &mut self.parts[i];
        if p.preferred.is_some_and(|(r, _)| r == node) {
            p.preferred = None;
        }
    }

    /// The consumer index of a partition in a Fetch answer (by name, or by topic id
    /// from v13 on).
    fn find(
        &self,
        cx: &OpContext<'_>,
        name: &str,
        id: &crate::protocol::Uuid,
        partition: i32,
    ) -> Option<usize> {
        if !name.is_empty() {
            return self.index.get(&(name.into(), partition)).copied();
        }
        let _ = cx;
        let topic = self.topic_by_id.get(id)?;
        self.index.get(&(topic.clone(), partition)).copied()
    }
}

fn topic_id(cx: &OpContext<'_>, topic: &str) -> crate::protocol::Uuid {
    cx.metadata().topic(topic).map(|t| t.id).unwrap_or_default()
}
