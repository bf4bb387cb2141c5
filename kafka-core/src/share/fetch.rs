//! Share sessions, one per partition leader: ShareFetch with acknowledgements riding
//! along, ShareAcknowledge for those that cannot wait (commits, close), and the fetched
//! data with its acquired ranges.
//!
//! Session epochs (KIP-932): 0 opens a session with every partition to fetch (no
//! acknowledgements may ride on it); each answered request moves the epoch on (after
//! `i32::MAX` comes 1); an incremental request names only partitions added or carrying
//! acknowledgements, and forgets the ones no longer fetched there; -1 closes the session
//! (the final ShareAcknowledge at close). A top-level error, SHARE_SESSION_NOT_FOUND,
//! INVALID_SHARE_SESSION_EPOCH or a failed request resets the session: the next
//! ShareFetch has epoch 0, and acknowledgements not read by the broker wait for the
//! request after it. One request is in flight per leader.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::acks::{batches, AckRange, AcknowledgeType, Acks, Pending};
use super::ShareError;
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::config::ClientConfig;
use crate::consumer::records::Chunk;
use crate::group::TopicPartition;
use crate::protocol::messages::share_acknowledge::request as ack_req;
use crate::protocol::messages::share_acknowledge::ShareAcknowledgeRequest;
use crate::protocol::messages::share_fetch::request::{
    AcknowledgementBatch, FetchPartition, FetchTopic, ForgottenTopic,
};
use crate::protocol::messages::share_fetch::ShareFetchRequest;
use crate::protocol::{ApiKey, KafkaCode, Uuid};
use crate::record::DecodeOptions;

/// The epoch that closes a session.
const FINAL: i32 = -1;

/// One partition's fetched data: records decoded lazily, handed out only inside the
/// acquired ranges.
pub(crate) struct Fetched {
    pub(crate) tp: TopicPartition,
    pub(crate) node: i32,
    pub(crate) chunk: Chunk,
    /// Acquired `(first, last, delivery count)`, sorted by first offset.
    pub(crate) acquired: Vec<(i64, i64, i16)>,
    /// Offsets handed out so far (increasing).
    pub(crate) delivered: Vec<i64>,
}

/// The outcome of acknowledgements for one partition: the ranges sent and the result.
pub(crate) type AckOutcome = (TopicPartition, Vec<AckRange>, Result<(), ShareError>);

enum Kind {
    Fetch(RequestId<ShareFetchRequest>),
    Ack(RequestId<ShareAcknowledgeRequest>),
}

struct InFlight {
    kind: Kind,
    epoch: i32,
    sent: Pending,
    added: Vec<TopicPartition>,
    forgotten: Vec<TopicPartition>,
}

#[derive(Default)]
struct Session {
    /// The epoch the next request carries (0: open a new session).
    epoch: i32,
    /// Partitions the broker's session holds.
    partitions: BTreeSet<TopicPartition>,
    in_flight: Option<InFlight>,
    not_before: Option<Instant>,
    attempts: u32,
    /// Closing: the final request was answered or is not needed.
    closed: bool,
}

impl Session {
    fn reset(&mut self) {
        self.epoch = 0;
        self.partitions.clear();
    }
}

/// What the share consumer wants from one leader this round.
pub(crate) struct Wants<'a> {
    /// Assigned partitions it leads.
    pub(crate) desired: &'a BTreeSet<TopicPartition>,
    /// Data fetched from it still waits to be handed out: no ShareFetch.
    pub(crate) draining: bool,
    /// A commit waits for its acknowledgements: send them now.
    pub(crate) urgent: bool,
    /// Closing: send the final ShareAcknowledge.
    pub(crate) closing: bool,
}

/// Every leader's share session. See the module docs.
pub(crate) struct Sessions {
    group: String,
    nodes: BTreeMap<i32, Session>,
    /// Names of the topic ids sent.
    names: BTreeMap<Uuid, Arc<str>>,
    max_wait: Duration,
    min_bytes: i32,
    max_bytes: i32,
    /// Most bytes one fetched batch may decompress to.
    max_decompressed: usize,
    max_records: i32,
    request_timeout: Duration,
    /// The acquisition lock timeout the brokers last reported.
    lock_timeout: Option<Duration>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("nodes", &self.nodes.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    pub(crate) fn new(config: &ClientConfig, group: String) -> Self {
        let c = config.consumer();
        Sessions {
            group,
            nodes: BTreeMap::new(),
            names: BTreeMap::new(),
            max_wait: c.fetch_max_wait,
            min_bytes: c.fetch_min_bytes,
            max_bytes: c.fetch_max_bytes,
            max_decompressed: c.max_decompressed_bytes(),
            max_records: i32::try_from(c.max_poll_records).unwrap_or(i32::MAX),
            request_timeout: config.common().request_timeout,
            lock_timeout: None,
        }
    }

    /// The acquisition lock timeout the last ShareFetch or ShareAcknowledge answer
    /// reported (the group's `share.record.lock.duration.ms`), if any did.
    pub(crate) fn lock_timeout(&self) -> Option<Duration> {
        self.lock_timeout
    }

    fn note_lock_timeout(&mut self, ms: i32) {
        if let Ok(ms @ 1..) = u64::try_from(ms) {
            self.lock_timeout = Some(Duration::from_millis(ms));
        }
    }

    /// Whether every session is closed (the final acknowledgement answered, or none was
    /// needed) and nothing is in flight.
    pub(crate) fn all_closed(&self) -> bool {
        self.nodes
            .values()
            .all(|s| s.in_flight.is_none() && (s.closed || s.epoch == 0))
    }

    /// Partitions whose acknowledgements are in flight.
    pub(crate) fn acks_in_flight(&self) -> impl Iterator<Item = &TopicPartition> {
        self.nodes
            .values()
            .filter_map(|s| s.in_flight.as_ref())
            .flat_map(|f| f.sent.keys())
    }

    /// Gives up on every request in flight (the machine finishes): the acknowledgements
    /// they carried, whose outcome is now unknown.
    pub(crate) fn abandon(&mut self) -> Pending {
        let mut out = Pending::new();
        for s in self.nodes.values_mut() {
            if let Some(f) = s.in_flight.take() {
                for (tp, r) in f.sent {
                    out.entry(tp).or_default().extend(r);
                }
            }
        }
        out
    }

    /// Nodes with sessions or requests.
    pub(crate) fn nodes(&self) -> Vec<i32> {
        self.nodes.keys().copied().collect()
    }

    /// A connection to `node` closed: its session is gone.
    pub(crate) fn connection_closed(&mut self, node: i32) {
        if let Some(s) = self.nodes.get_mut(&node) {
            s.reset();
        }
    }

    /// Reads finished requests.
    pub(crate) fn collect(
        &mut self,
        cx: &mut OpContext<'_>,
        acks: &mut Acks,
        fetched: &mut Vec<Fetched>,
        outcomes: &mut Vec<AckOutcome>,
    ) {
        let nodes: Vec<i32> = self.nodes.keys().copied().collect();
        for node in nodes {
            let s = self.nodes.get_mut(&node).expect("node");
            let Some(f) = &s.in_flight else { continue };
            let answer = match f.kind {
                Kind::Fetch(id) => match cx.take_response(id) {
                    None => continue,
                    Some(Ok(r)) => Ok(Answer::Fetch(r)),
                    Some(Err(e)) => Err(e),
                },
                Kind::Ack(id) => match cx.take_response(id) {
                    None => continue,
                    Some(Ok(r)) => Ok(Answer::Ack(r)),
                    Some(Err(e)) => Err(e),
                },
            };
            let f = s.in_flight.take().expect("in flight");
            crate::trace::debug!(
                node,
                api = api_of(&f),
                epoch = f.epoch,
                ok = answer.is_ok(),
                "kafka share request answered"
            );
            let top = match &answer {
                Ok(Answer::Fetch(r)) => KafkaCode(r.error_code),
                Ok(Answer::Ack(r)) => KafkaCode(r.error_code),
                Err(_) => KafkaCode::NONE,
            };
            let failed = match &answer {
                Err(e) => Some(ShareError::Transport(e.to_string())),
                Ok(_) if top == KafkaCode::NONE => None,
                Ok(_) => Some(ShareError::from_ack_code(api_of(&f), "", -1, top)),
            };
            if let Some(e) = failed {
                crate::trace::debug!(
                    node,
                    api = api_of(&f),
                    error = %e,
                    "kafka share request failed; session reset"
                );
                s.reset();
                s.attempts += 1;
                s.not_before = Some(cx.now() + cx.retry_backoff(s.attempts));
                if f.epoch == FINAL {
                    s.closed = true;
                    outcomes.extend(f.sent.into_iter().map(|(tp, r)| (tp, r, Err(e.clone()))));
                } else {
                    // Not read by the broker: they go with a later request.
                    acks.restore(f.sent);
                }
                continue;
            }
            s.attempts = 0;
            s.not_before = None;
            if f.epoch == FINAL {
                s.closed = true;
                s.epoch = 0;
            } else {
                s.epoch = if f.epoch == i32::MAX { 1 } else { f.epoch + 1 };
            }
            for tp in f.added {
                s.partitions.insert(tp);
            }
            for tp in &f.forgotten {
                s.partitions.remove(tp);
            }
            let mut sent = f.sent;
            match &answer {
                Ok(Answer::Fetch(r)) => self.note_lock_timeout(r.acquisition_lock_timeout_ms),
                Ok(Answer::Ack(r)) => self.note_lock_timeout(r.acquisition_lock_timeout_ms),
                Err(_) => {}
            }
            match answer {
                Ok(Answer::Fetch(r)) => {
                    for t in r.responses {
                        let Some(name) = self.names.get(&t.topic_id).cloned() else {
                            continue;
                        };
                        for p in t.partitions {
                            let tp = (name.clone(), p.partition_index);
                            if let Some(ranges) = sent.remove(&tp) {
                                let code = KafkaCode(p.acknowledge_error_code);
                                outcomes.push((tp.clone(), ranges, result(&tp, code)));
                            }
                            let code = KafkaCode(p.error_code);
                            crate::trace::debug!(
                                node,
                                topic = %tp.0,
                                partition = tp.1,
                                %code,
                                acquired = p.acquired_records.len(),
                                bytes = p.records.len(),
                                "kafka share fetch partition answer"
                            );
                            if code != KafkaCode::NONE {
                                if leader_moved(code) {
                                    cx.invalidate_leader(&name, p.partition_index);
                                }
                                continue;
                            }
                            let mut acquired: Vec<(i64, i64, i16)> = p
                                .acquired_records
                                .iter()
                                .filter(|a| a.first_offset >= 0 && a.last_offset >= a.first_offset)
                                .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
                                .collect();
                            if acquired.is_empty() {
                                continue;
                            }
                            acquired.sort_by_key(|a| a.0);
                            let from = acquired[0].0;
                            fetched.push(Fetched {
                                tp,
                                node,
                                chunk: Chunk::new(
                                    0,
                                    p.records,
                                    from,
                                    Vec::new(),
                                    false,
                                    DecodeOptions {
                                        max_decompressed_bytes: self.max_decompressed,
                                        ..DecodeOptions::default()
                                    },
                                ),
                                acquired,
                                delivered: Vec::new(),
                            });
                        }
                    }
                }
                Ok(Answer::Ack(r)) => {
                    for t in r.responses {
                        let Some(name) = self.names.get(&t.topic_id).cloned() else {
                            continue;
                        };
                        for p in t.partitions {
                            let tp = (name.clone(), p.partition_index);
                            if let Some(ranges) = sent.remove(&tp) {
                                let r = result(&tp, KafkaCode(p.error_code));
                                outcomes.push((tp.clone(), ranges, r));
                            }
                        }
                    }
                }
                Err(_) => {}
            }
            // Partitions the answer did not mention were taken without complaint.
            outcomes.extend(sent.into_iter().map(|(tp, r)| (tp, r, Ok(()))));
        }
    }

    /// Sends what `node` needs now, if nothing is in flight to it.
    pub(crate) fn send(
        &mut self,
        cx: &mut OpContext<'_>,
        node: i32,
        member_id: &str,
        wants: Wants<'_>,
        acks: &mut Acks,
        outcomes: &mut Vec<AckOutcome>,
    ) {
        let s = self.nodes.entry(node).or_default();
        if s.in_flight.is_some() || (wants.closing && s.closed) {
            return;
        }
        if let Some(at) = s.not_before {
            if at > cx.now() && !wants.closing {
                cx.wake_at(at);
                return;
            }
        }
        let is_node = |tp: &TopicPartition| leader_of(cx, tp) == Some(node);
        if wants.closing {
            let sent = acks.take_pending(is_node);
            if s.epoch == 0 {
                // No session: nothing can carry them (the locks expire instead).
                s.closed = true;
                outcomes.extend(
                    sent.into_iter()
                        .map(|(tp, r)| (tp, r, Err(ShareError::Closed))),
                );
                return;
            }
            let request = self.ack_request(member_id, FINAL, &sent);
            let id = cx.send_with(Route::Broker(node), request, self.opts(false));
            let s = self.nodes.get_mut(&node).expect("node");
            s.in_flight = Some(InFlight {
                kind: Kind::Ack(id),
                epoch: FINAL,
                sent,
                added: Vec::new(),
                forgotten: Vec::new(),
            });
            return;
        }
        if acks.has_renewal(is_node) {
            // Renewals need ShareAcknowledge v2; an older leader never sees them.
            match cx.broker_supports(node, ApiKey::ShareAcknowledge, 2) {
                Some(true) => {}
                Some(false) => {
                    let refused = acks.take_renewals(is_node);
                    let e = ShareError::RenewUnsupported { node };
                    outcomes.extend(refused.into_iter().map(|(tp, r)| (tp, r, Err(e.clone()))));
                }
                // Versions unknown: no connection, so no session (epoch 0) either; the
                // renewals wait for the one the next ShareFetch opens.
                None => {}
            }
        }
        let has_acks = acks.pending.keys().any(is_node);
        // Acknowledgements for partitions no longer fetched here, or wanted at once.
        let stray = acks
            .pending
            .keys()
            .any(|tp| is_node(tp) && !wants.desired.contains(tp));
        // Renewals go at once, in a ShareAcknowledge (a ShareFetch carrying them may
        // fetch nothing, KIP-1222), before the locks they renew expire.
        let renew = acks.has_renewal(is_node);
        if s.epoch > 0 && has_acks && (wants.urgent || renew || stray || wants.draining) {
            let sent = acks.take_pending(is_node);
            let epoch = s.epoch;
            let request = self.ack_request(member_id, epoch, &sent);
            let id = cx.send_with(Route::Broker(node), request, self.opts(false));
            let s = self.nodes.get_mut(&node).expect("node");
            s.in_flight = Some(InFlight {
                kind: Kind::Ack(id),
                epoch,
                sent,
                added: Vec::new(),
                forgotten: Vec::new(),
            });
            return;
        }
        if wants.draining {
            return;
        }
        let (added, forgotten, sent) = if s.epoch == 0 {
            (
                wants.desired.iter().cloned().collect::<Vec<_>>(),
                Vec::new(),
                Pending::new(),
            )
        } else {
            let added: Vec<TopicPartition> = wants
                .desired
                .iter()
                .filter(|tp| !s.partitions.contains(*tp))
                .cloned()
                .collect();
            let forgotten: Vec<TopicPartition> = s
                .partitions
                .iter()
                .filter(|tp| !wants.desired.contains(*tp))
                .cloned()
                .collect();
            let sent = acks.take_pending(|tp| is_node(tp) && wants.desired.contains(tp));
            (added, forgotten, sent)
        };
        if s.epoch == 0 && added.is_empty() {
            return;
        }
        if s.epoch > 0 && wants.desired.is_empty() && forgotten.is_empty() && sent.is_empty() {
            return;
        }
        let epoch = s.epoch;
        crate::trace::debug!(
            node,
            epoch,
            added = added.len(),
            forgotten = forgotten.len(),
            acks = sent.len(),
            "kafka share fetch sent"
        );
        let request = self.fetch_request(cx, member_id, epoch, &added, &forgotten, &sent);
        let id = cx.send_with(Route::Broker(node), request, self.opts(true));
        let s = self.nodes.get_mut(&node).expect("node");
        s.in_flight = Some(InFlight {
            kind: Kind::Fetch(id),
            epoch,
            sent,
            added,
            forgotten,
        });
    }

    fn opts(&self, long_poll: bool) -> RequestOptions {
        let timeout = if long_poll {
            self.request_timeout + self.max_wait
        } else {
            self.request_timeout
        };
        RequestOptions::default().timeout(timeout).no_router_retry()
    }

    fn id_of(&mut self, cx: &OpContext<'_>, topic: &Arc<str>) -> Uuid {
        let id = cx.metadata().topic(topic).map(|t| t.id).unwrap_or_default();
        self.names.insert(id, topic.clone());
        id
    }

    fn fetch_request(
        &mut self,
        cx: &OpContext<'_>,
        member_id: &str,
        epoch: i32,
        added: &[TopicPartition],
        forgotten: &[TopicPartition],
        sent: &Pending,
    ) -> ShareFetchRequest {
        let mut topics: BTreeMap<Uuid, BTreeMap<i32, Vec<AcknowledgementBatch>>> = BTreeMap::new();
        for tp in added {
            let id = self.id_of(cx, &tp.0);
            topics.entry(id).or_default().entry(tp.1).or_default();
        }
        for (tp, ranges) in sent {
            let id = self.id_of(cx, &tp.0);
            let batches = batches(ranges).into_iter().map(
                |(first_offset, last_offset, acknowledge_types)| AcknowledgementBatch {
                    first_offset,
                    last_offset,
                    acknowledge_types,
                    ..Default::default()
                },
            );
            topics
                .entry(id)
                .or_default()
                .entry(tp.1)
                .or_default()
                .extend(batches);
        }
        let mut gone: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for tp in forgotten {
            let id = self.id_of(cx, &tp.0);
            gone.entry(id).or_default().push(tp.1);
        }
        ShareFetchRequest {
            group_id: Some(self.group.clone()),
            member_id: Some(member_id.to_string()),
            share_session_epoch: epoch,
            max_wait_ms: millis(self.max_wait),
            min_bytes: self.min_bytes,
            max_bytes: self.max_bytes,
            max_records: self.max_records,
            batch_size: self.max_records,
            topics: topics
                .into_iter()
                .map(|(topic_id, parts)| FetchTopic {
                    topic_id,
                    partitions: parts
                        .into_iter()
                        .map(
                            |(partition_index, acknowledgement_batches)| FetchPartition {
                                partition_index,
                                acknowledgement_batches,
                                ..Default::default()
                            },
                        )
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            forgotten_topics_data: gone
                .into_iter()
                .map(|(topic_id, partitions)| ForgottenTopic {
                    topic_id,
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn ack_request(
        &mut self,
        member_id: &str,
        epoch: i32,
        sent: &Pending,
    ) -> ShareAcknowledgeRequest {
        let mut topics: BTreeMap<Uuid, Vec<ack_req::AcknowledgePartition>> = BTreeMap::new();
        for (tp, ranges) in sent {
            let id = self
                .names
                .iter()
                .find(|(_, n)| **n == tp.0)
                .map(|(id, _)| *id)
                .unwrap_or_default();
            let acknowledgement_batches = batches(ranges)
                .into_iter()
                .map(|(first_offset, last_offset, acknowledge_types)| {
                    ack_req::AcknowledgementBatch {
                        first_offset,
                        last_offset,
                        acknowledge_types,
                        ..Default::default()
                    }
                })
                .collect();
            topics
                .entry(id)
                .or_default()
                .push(ack_req::AcknowledgePartition {
                    partition_index: tp.1,
                    acknowledgement_batches,
                    ..Default::default()
                });
        }
        let is_renew_ack = sent
            .values()
            .flatten()
            .any(|r| r.kind == AcknowledgeType::Renew);
        ShareAcknowledgeRequest {
            group_id: Some(self.group.clone()),
            member_id: Some(member_id.to_string()),
            share_session_epoch: epoch,
            is_renew_ack,
            topics: topics
                .into_iter()
                .map(|(topic_id, partitions)| ack_req::AcknowledgeTopic {
                    topic_id,
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

enum Answer {
    Fetch(crate::protocol::messages::share_fetch::ShareFetchResponse),
    Ack(crate::protocol::messages::share_acknowledge::ShareAcknowledgeResponse),
}

fn api_of(f: &InFlight) -> &'static str {
    match f.kind {
        Kind::Fetch(_) => "ShareFetch",
        Kind::Ack(_) => "ShareAcknowledge",
    }
}

fn result(tp: &TopicPartition, code: KafkaCode) -> Result<(), ShareError> {
    if code == KafkaCode::NONE {
        Ok(())
    } else {
        Err(ShareError::from_ack_code(
            "ShareAcknowledge",
            &tp.0,
            tp.1,
            code,
        ))
    }
}

fn leader_moved(code: KafkaCode) -> bool {
    matches!(
        code,
        KafkaCode::NOT_LEADER_OR_FOLLOWER
            | KafkaCode::FENCED_LEADER_EPOCH
            | KafkaCode::UNKNOWN_LEADER_EPOCH
            | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
            | KafkaCode::UNKNOWN_TOPIC_ID
            | KafkaCode::LEADER_NOT_AVAILABLE
    )
}

/// The partition's leader in the client's metadata.
pub(crate) fn leader_of(cx: &OpContext<'_>, tp: &TopicPartition) -> Option<i32> {
    cx.metadata().leader(&tp.0, tp.1).filter(|&l| l >= 0)
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
