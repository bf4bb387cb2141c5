//! DeleteTopics, by name or by topic id.

use std::time::Duration;

use super::{controller_retriable, TopicKey};
use crate::admin::{
    Absorbed, AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout,
};
use crate::cluster::Route;
use crate::protocol::messages::delete_topics::request::DeleteTopicState;
use crate::protocol::messages::delete_topics::{DeleteTopicsRequest, DeleteTopicsResponse};
use crate::protocol::Uuid;

/// Deletes topics, by name ([`DeleteTopics::new`]) or by topic id
/// ([`DeleteTopics::by_ids`]), sent to the controller. Topics refused with NOT_CONTROLLER
/// or THROTTLING_QUOTA_EXCEEDED are retried until the deadline; an unknown topic fails
/// with UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID (by id).
#[derive(Debug)]
pub struct DeleteTopics<K: TopicKey = String> {
    items: Items<DeleteTopicsRequest, K, ()>,
    topics: Vec<K>,
    timeout: Timeout,
}

impl DeleteTopics<String> {
    /// Deletes the topics named `names`.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::with_keys(names.into_iter().map(Into::into))
    }
}

impl DeleteTopics<Uuid> {
    /// Deletes the topics with ids `ids`.
    pub fn by_ids(ids: impl IntoIterator<Item = Uuid>) -> Self {
        Self::with_keys(ids)
    }
}

impl<K: TopicKey> DeleteTopics<K> {
    fn with_keys(keys: impl IntoIterator<Item = K>) -> Self {
        let mut topics: Vec<K> = keys.into_iter().collect();
        topics.sort();
        topics.dedup();
        DeleteTopics {
            items: Items::new("topic"),
            topics,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// Records the answers; returns the topics to send again.
fn absorb_deleted<K: TopicKey>(
    topics: &[K],
    batch: Batch<'_, K, ()>,
    resp: DeleteTopicsResponse,
) -> Absorbed<K> {
    let mut retry = Vec::new();
    for r in resp.responses {
        let Some(key) = K::from_deleted(&r) else {
            continue;
        };
        if !topics.contains(&key) {
            continue;
        }
        if controller_retriable(r.error_code) {
            retry.push(key);
            continue;
        }
        let result = AdminError::check(r.error_code, r.error_message.as_deref());
        batch.results.insert(key, result);
    }
    Absorbed::Retry(retry)
}

impl<K: TopicKey> Operation for DeleteTopics<K> {
    type Output = Result<ItemResults<K, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.topics.iter().any(TopicKey::is_unset) {
            return Some(Err(AdminError::Invalid(
                "empty topic name or zero topic id".into(),
            )));
        }
        if !self.items.started() && !self.topics.is_empty() {
            let request = DeleteTopicsRequest {
                topics: self.topics.iter().map(TopicKey::delete_state).collect(),
                timeout_ms: self.timeout.as_ms(cx),
                ..Default::default()
            };
            self.items
                .start(Route::Controller, request, self.topics.clone());
        }
        let topics = &self.topics;
        let absorb = |batch: Batch<'_, K, ()>, resp| absorb_deleted(topics, batch, resp);
        self.items.poll(cx, deadline, absorb, |request, retry| {
            let wanted: Vec<DeleteTopicState> = retry.iter().map(TopicKey::delete_state).collect();
            request.topics.retain(|t| wanted.contains(t));
        })
    }
}
