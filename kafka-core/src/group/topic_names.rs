//! Names for the topic ids of a KIP-848 target assignment, as Java's
//! `AbstractMembershipManager.findTopicNameInGlobalOrLocalCache` finds them: the client's
//! metadata first, then the names of ids assigned before. A member subscribed to names
//! learns new ones from its metadata refreshes; a pattern member has no names to ask
//! for, so the ids it cannot name are asked for by topic id (Metadata v12+; Java's
//! `ConsumerMetadata` asks for the assigned topic ids of a broker-side regex
//! subscription, never for every topic). Once named, a topic is an ordinary named want
//! (its leaders for the fetcher).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use crate::client::{OpContext, RequestId};
use crate::cluster::Route;
use crate::protocol::messages::metadata::request::MetadataRequestTopic;
use crate::protocol::messages::metadata::MetadataRequest;
use crate::protocol::{KafkaCode, Uuid};

/// Topic-id-to-name resolution for one member. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct TopicNames {
    /// Names of ids assigned so far (Java's `assignedTopicNamesCache`): an id never
    /// changes its name, so these stay right while the id is assigned.
    known: BTreeMap<Uuid, Arc<str>>,
    /// A Metadata request by topic id in flight.
    lookup: Option<RequestId<MetadataRequest>>,
    /// No lookup before this (backoff after one that left ids unnamed).
    not_before: Option<Instant>,
    attempts: u32,
}

impl TopicNames {
    /// Names what it can of `ids`: `(named, unnamed)`.
    pub(crate) fn resolve<'a>(
        &mut self,
        cx: &OpContext<'_>,
        ids: impl Iterator<Item = &'a Uuid>,
    ) -> (BTreeMap<Uuid, Arc<str>>, Vec<Uuid>) {
        let mut named = BTreeMap::new();
        let mut unnamed = Vec::new();
        let mut from_metadata: Option<BTreeMap<Uuid, &str>> = None;
        for id in ids {
            if let Some(n) = self.known.get(id) {
                named.insert(*id, n.clone());
                continue;
            }
            let md = cx.metadata();
            let by_id = from_metadata.get_or_insert_with(|| {
                md.topic_names()
                    .filter_map(|n| Some((md.topic(n)?.id, n)))
                    .collect()
            });
            match by_id.get(id) {
                Some(n) => {
                    let n: Arc<str> = Arc::from(*n);
                    self.known.insert(*id, n.clone());
                    named.insert(*id, n);
                }
                None => unnamed.push(*id),
            }
        }
        (named, unnamed)
    }

    /// An assignment by topic id as named partitions, and the ids no name is known for
    /// yet (their partitions wait).
    pub(crate) fn name_target(
        &mut self,
        cx: &OpContext<'_>,
        target: &BTreeMap<Uuid, Vec<i32>>,
    ) -> (
        std::collections::BTreeSet<super::member::TopicPartition>,
        Vec<Uuid>,
    ) {
        let (names, unnamed) = self.resolve(cx, target.keys());
        let mut resolved = std::collections::BTreeSet::new();
        for (id, parts) in target {
            if let Some(name) = names.get(id) {
                resolved.extend(parts.iter().map(|&p| (name.clone(), p)));
            }
        }
        (resolved, unnamed)
    }

    /// The id of an assigned topic named `name` (the metadata's, else the one it was
    /// assigned under).
    pub(crate) fn id_of(&self, cx: &OpContext<'_>, name: &str) -> Option<Uuid> {
        if let Some(info) = cx.metadata().topic(name) {
            return Some(info.id);
        }
        self.known
            .iter()
            .find(|(_, n)| &***n == name)
            .map(|(id, _)| *id)
    }

    /// Asks for `ids` by topic id unless a lookup is in flight or backing off. The
    /// answer is read by [`TopicNames::collect`].
    pub(crate) fn look_up(&mut self, cx: &mut OpContext<'_>, ids: &[Uuid]) {
        if ids.is_empty() || self.lookup.is_some() {
            return;
        }
        let now = cx.now();
        if let Some(at) = self.not_before.filter(|at| *at > now) {
            cx.wake_at(at);
            return;
        }
        let topics = ids
            .iter()
            .map(|id| MetadataRequestTopic {
                topic_id: *id,
                name: None,
                ..Default::default()
            })
            .collect();
        let req = MetadataRequest {
            topics: Some(topics),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        self.lookup = Some(cx.send(Route::Any, req));
    }

    /// Reads a finished lookup: names learnt are kept and asked for by name (so the
    /// client's metadata, which the fetcher routes by, holds them); ids left unnamed
    /// (UNKNOWN_TOPIC_ID, a failed request) wait one backoff before the next lookup.
    pub(crate) fn collect(&mut self, cx: &mut OpContext<'_>) {
        let Some(id) = self.lookup else { return };
        let Some(answer) = cx.take_response(id) else {
            return;
        };
        self.lookup = None;
        let mut learnt = Vec::new();
        let mut complete = false;
        if let Ok(resp) = answer {
            complete = true;
            for t in resp.topics {
                match t.name {
                    Some(name) if KafkaCode(t.error_code) == KafkaCode::NONE => {
                        self.known.insert(t.topic_id, Arc::from(name.as_str()));
                        learnt.push(name);
                    }
                    _ => complete = false,
                }
            }
        }
        if complete {
            self.attempts = 0;
            self.not_before = None;
        } else {
            self.attempts += 1;
            self.not_before = Some(cx.now() + cx.retry_backoff(self.attempts));
        }
        if !learnt.is_empty() {
            cx.request_metadata(learnt);
        }
    }

    /// Forgets names of ids no longer assigned (Java keeps only the assigned ones).
    pub(crate) fn retain(&mut self, ids: &BTreeSet<Uuid>) {
        self.known.retain(|id, _| ids.contains(id));
    }

    /// Forgets everything (left or fenced); a lookup in flight is dropped.
    pub(crate) fn clear(&mut self, cx: &mut OpContext<'_>) {
        if let Some(id) = self.lookup.take() {
            cx.discard(id);
        }
        self.known.clear();
        self.not_before = None;
        self.attempts = 0;
    }
}
