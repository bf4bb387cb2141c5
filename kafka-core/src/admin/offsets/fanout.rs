//! Per-partition requests fanned out to partition leaders: a refresh of the client's
//! metadata finds the leaders, one request per leader broker carries its partitions,
//! and partitions answered with a stale-leader or retriable error, or whose leader's
//! connection failed, go back through a fresh metadata lookup until the deadline.
//!
//! Fail fast (Java's `PartitionLeaderStrategy` without tolerated unknown topics, since
//! KAFKA-15425): a topic that a metadata answer after the lookup reports
//! UNKNOWN_TOPIC_OR_PARTITION, or a partition beyond the count that answer lists, ends
//! with UNKNOWN_TOPIC_OR_PARTITION at once instead of being looked up until the deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::admin::{AdminError, Call, Deadline, OpContext, TopicPartition};
use crate::client::Cause;
use crate::cluster::Metadata;
use crate::cluster::Route;
use crate::protocol::{KafkaCode, Request};

/// One partition's answer inside a leader's response.
pub(crate) struct Answer<V> {
    pub(crate) tp: TopicPartition,
    pub(crate) error_code: i16,
    pub(crate) value: V,
}

/// What a per-leader API needs: build a request for some partitions, read the answers.
pub(crate) trait PerLeader {
    /// The per-partition argument (an offset spec, a before-offset).
    type Arg: Clone;
    /// The request sent to each leader.
    type Request: Request<Response = Self::Response>
        + Clone
        + Send
        + Sync
        + std::fmt::Debug
        + 'static;
    /// Its response.
    type Response: Send + 'static;
    /// The per-partition result.
    type Value;

    /// The request for `items`, all led by one broker.
    fn request(&self, items: &[(TopicPartition, Self::Arg)], cx: &OpContext<'_>) -> Self::Request;

    /// The per-partition answers in a response.
    fn answers(resp: Self::Response) -> Vec<Answer<Self::Value>>;
}

/// Where a partition stands while it has no result.
enum Why {
    /// Waiting for the next Metadata lookup.
    Lookup,
    /// In a request to its leader.
    Sent,
}

/// The fan-out state of one operation.
pub(crate) struct FanOut<P: PerLeader> {
    args: BTreeMap<TopicPartition, P::Arg>,
    open: BTreeMap<TopicPartition, Why>,
    /// The metadata generation when this operation asked the client for a refresh.
    lookup: Option<u64>,
    lookup_at: Option<Instant>,
    lookups: u32,
    calls: Vec<(Vec<TopicPartition>, Call<P::Request>)>,
    results: BTreeMap<TopicPartition, Result<P::Value, AdminError>>,
    /// The last failure retried past (a retriable code, a leader's connection), for a
    /// timeout's message.
    last_cause: Option<Cause>,
}

impl<P: PerLeader> std::fmt::Debug for FanOut<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("partitions", &self.args.len())
            .field("open", &self.open.len())
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

/// Errors after which the partition's leader is looked up again.
fn relookup(code: KafkaCode) -> bool {
    code.is_retriable()
}

impl<P: PerLeader> FanOut<P> {
    pub(crate) fn new(args: BTreeMap<TopicPartition, P::Arg>) -> Self {
        let open = args.keys().map(|tp| (tp.clone(), Why::Lookup)).collect();
        FanOut {
            args,
            open,
            lookup: None,
            lookup_at: None,
            lookups: 0,
            calls: Vec::new(),
            results: BTreeMap::new(),
            last_cause: None,
        }
    }

    /// Advances; `Some` with one result per partition when every partition is settled.
    pub(crate) fn poll(
        &mut self,
        api: &P,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
    ) -> Option<BTreeMap<TopicPartition, Result<P::Value, AdminError>>> {
        self.poll_calls(cx, deadline);
        let before = self.calls.len();
        self.poll_lookup(api, cx, deadline);
        if self.calls.len() > before {
            // Sends the requests the lookup just routed.
            self.poll_calls(cx, deadline);
        }
        if self.open.is_empty() {
            return Some(std::mem::take(&mut self.results));
        }
        None
    }

    fn poll_calls(&mut self, cx: &mut OpContext<'_>, deadline: Deadline) {
        let mut i = 0;
        while i < self.calls.len() {
            let Some(outcome) = self.calls[i].1.poll(cx, deadline) else {
                i += 1;
                continue;
            };
            let (sent, _) = self.calls.swap_remove(i);
            let mut unanswered: BTreeSet<TopicPartition> = sent.into_iter().collect();
            match outcome {
                Ok(resp) => {
                    for a in P::answers(resp) {
                        if !unanswered.remove(&a.tp) {
                            continue;
                        }
                        self.settle(cx, a);
                    }
                    for tp in unanswered {
                        let e = AdminError::missing("partition");
                        self.finish(tp, Err(e));
                    }
                }
                Err(e) if e.is_retriable() && !deadline.passed(cx) => {
                    // The leader's connection failed (a dead or paused broker, whose
                    // leaderships the client forgot): look the leaders up again.
                    if let Some(cause) = e.as_cause() {
                        self.last_cause = Some(cause);
                    }
                    for tp in unanswered {
                        cx.invalidate_leader(&tp.topic, tp.partition);
                        self.open.insert(tp, Why::Lookup);
                    }
                    self.schedule_lookup(cx);
                }
                Err(e) => {
                    for tp in unanswered {
                        self.finish(tp, Err(e.clone()));
                    }
                }
            }
        }
    }

    fn settle(&mut self, cx: &mut OpContext<'_>, a: Answer<P::Value>) {
        let code = KafkaCode(a.error_code);
        if code == KafkaCode::NONE {
            self.finish(a.tp, Ok(a.value));
        } else if relookup(code) {
            self.last_cause = Some(Cause::code(a.error_code, None));
            cx.invalidate_leader(&a.tp.topic, a.tp.partition);
            self.open.insert(a.tp, Why::Lookup);
            self.schedule_lookup(cx);
        } else {
            let e = AdminError::check(a.error_code, None).err();
            let e = e.unwrap_or_else(|| AdminError::Protocol("no error".into()));
            self.finish(a.tp, Err(e));
        }
    }

    fn finish(&mut self, tp: TopicPartition, result: Result<P::Value, AdminError>) {
        self.open.remove(&tp);
        self.results.insert(tp, result);
    }

    /// The next lookup after the retry backoff (the first one goes out at once).
    fn schedule_lookup(&mut self, cx: &mut OpContext<'_>) {
        if self.lookup_at.is_none() && self.lookup.is_none() {
            self.lookups += 1;
            let at = cx.now() + cx.retry_backoff(self.lookups);
            self.lookup_at = Some(at);
            cx.wake_at(at);
        }
    }

    fn waiting(&self) -> impl Iterator<Item = &TopicPartition> {
        self.open
            .iter()
            .filter(|(_, w)| matches!(w, Why::Lookup))
            .map(|(tp, _)| tp)
    }

    /// Leaders come from the client's own metadata (one metadata path): the fan-out asks
    /// for a refresh of its topics and routes once an answer newer than the ask arrived.
    fn poll_lookup(&mut self, api: &P, cx: &mut OpContext<'_>, deadline: Deadline) {
        if self.waiting().next().is_none() {
            self.lookup = None;
            return;
        }
        if let Some(e) = deadline.fatal(cx) {
            // An authentication failure, the bootstrap rule: no lookup can succeed.
            let waiting: Vec<TopicPartition> = self.waiting().cloned().collect();
            for tp in waiting {
                self.finish(tp, Err(e.clone()));
            }
            return;
        }
        if let Some(asked) = self.lookup {
            if cx.metadata().generation() <= asked {
                if deadline.passed(cx) {
                    self.time_out_waiting(cx, deadline);
                } else {
                    cx.wake_at(deadline.at);
                }
                return;
            }
            self.lookup = None;
            self.route(api, cx, asked);
            if self.waiting().next().is_some() {
                self.schedule_lookup(cx);
            }
        }
        if self.waiting().next().is_none() {
            return;
        }
        if deadline.passed(cx) {
            self.time_out_waiting(cx, deadline);
            return;
        }
        match self.lookup_at {
            Some(at) if at > cx.now() => {
                cx.wake_at(at);
                return;
            }
            _ => self.lookup_at = None,
        }
        let topics: BTreeSet<String> = self.waiting().map(|tp| tp.topic.clone()).collect();
        self.lookup = Some(cx.metadata().generation());
        cx.request_metadata(topics);
        cx.wake_at(deadline.at);
    }

    fn time_out_waiting(&mut self, cx: &OpContext<'_>, deadline: Deadline) {
        let waiting: Vec<TopicPartition> = self.waiting().cloned().collect();
        for tp in waiting {
            let e = deadline.timed_out(cx, self.last_cause.clone());
            self.finish(tp, Err(e));
        }
    }

    /// Sends the waiting partitions whose leader the lookup found, one request per
    /// leader; ends those the answer (newer than generation `asked`) says do not exist.
    fn route(&mut self, api: &P, cx: &mut OpContext<'_>, asked: u64) {
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, P::Arg)>> = BTreeMap::new();
        let waiting: Vec<TopicPartition> = self.waiting().cloned().collect();
        for tp in waiting {
            if let Some(e) = does_not_exist(cx.metadata(), &tp, asked) {
                self.finish(tp, Err(e));
                continue;
            }
            match leader_of(cx.metadata(), &tp) {
                Ok(leader) => {
                    let arg = self.args[&tp].clone();
                    by_leader.entry(leader).or_default().push((tp, arg));
                }
                Err(e) if e.is_retriable() => {
                    if let Some(cause) = e.as_cause() {
                        self.last_cause = Some(cause);
                    }
                }
                Err(e) => self.finish(tp, Err(e)),
            }
        }
        for (leader, items) in by_leader {
            let request = api.request(&items, cx);
            let tps: Vec<TopicPartition> = items.into_iter().map(|(tp, _)| tp).collect();
            for tp in &tps {
                self.open.insert(tp.clone(), Why::Sent);
            }
            self.calls.push((
                tps,
                Call::new(Route::Broker(leader), request).without_resend(),
            ));
        }
    }
}

/// UNKNOWN_TOPIC_OR_PARTITION when a metadata answer newer than generation `asked`
/// named `tp`'s topic and reported it unknown, or listed its partitions without `tp`.
fn does_not_exist(metadata: &Metadata, tp: &TopicPartition, asked: u64) -> Option<AdminError> {
    if metadata.topic_generation(&tp.topic)? <= asked {
        return None;
    }
    let unknown = match metadata.topic(&tp.topic) {
        None => metadata.topic_error(&tp.topic) == Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0),
        Some(t) => !t.partitions.is_empty() && !t.partitions.contains_key(&tp.partition),
    };
    unknown.then(|| AdminError::Kafka {
        code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
        message: Some(match metadata.topic(&tp.topic) {
            None => format!("topic {} does not exist", tp.topic),
            Some(t) => format!(
                "topic {} has {} partitions, no partition {}",
                tp.topic,
                t.partitions.len(),
                tp.partition
            ),
        }),
    })
}

/// The leader of `tp` in the client's metadata, or why there is none (retriable while
/// the topic is being created or the partition has no leader).
fn leader_of(metadata: &Metadata, tp: &TopicPartition) -> Result<i32, AdminError> {
    let unknown = || AdminError::Kafka {
        code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
        message: None,
    };
    if let Some(code) = metadata.topic_error(&tp.topic) {
        AdminError::check(code, None)?;
    }
    let topic = metadata.topic(&tp.topic).ok_or_else(unknown)?;
    let p = topic.partitions.get(&tp.partition).ok_or_else(unknown)?;
    if p.leader < 0 {
        return Err(AdminError::Kafka {
            code: KafkaCode::LEADER_NOT_AVAILABLE,
            message: None,
        });
    }
    Ok(p.leader)
}
