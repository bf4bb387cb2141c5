//! DeleteTopics, by name or by topic id.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{controller_retriable, TopicKey};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
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
    call: Option<Call<DeleteTopicsRequest>>,
    topics: Vec<K>,
    timeout: Timeout,
    results: BTreeMap<K, Result<(), AdminError>>,
}

impl DeleteTopics<String> {
    /// Deletes the topics named `names`.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
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
            call: None,
            topics,
            timeout: Timeout::default(),
            results: BTreeMap::new(),
        }
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    /// Records the answers; returns the topics to send again.
    fn absorb(&mut self, resp: DeleteTopicsResponse) -> Vec<K> {
        let mut retry = Vec::new();
        for r in resp.responses {
            let Some(key) = K::from_deleted(&r) else {
                continue;
            };
            if !self.topics.contains(&key) {
                continue;
            }
            if controller_retriable(r.error_code) {
                retry.push(key);
                continue;
            }
            let result = AdminError::check(r.error_code, r.error_message.as_deref());
            self.results.insert(key, result);
        }
        retry
    }
}

impl<K: TopicKey> Operation for DeleteTopics<K> {
    type Output = Result<BTreeMap<K, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.topics.is_empty() {
            return Some(Ok(BTreeMap::new()));
        }
        if self.topics.iter().any(TopicKey::is_unset) {
            return Some(Err(AdminError::Invalid(
                "empty topic name or zero topic id".into(),
            )));
        }
        let call = self.call.get_or_insert_with(|| {
            let request = DeleteTopicsRequest {
                topics: self.topics.iter().map(TopicKey::delete_state).collect(),
                timeout_ms: self.timeout.as_ms(cx),
                ..Default::default()
            };
            Call::new(Route::Controller, request)
        });
        let retry = match call.poll(cx, deadline)? {
            Ok(resp) => self.absorb(resp),
            Err(e) if self.results.is_empty() => return Some(Err(e)),
            Err(e) => {
                for t in &self.topics {
                    self.results.entry(t.clone()).or_insert(Err(e.clone()));
                }
                Vec::new()
            }
        };
        if !retry.is_empty() && !deadline.passed(cx) {
            let call = self.call.as_mut()?;
            let wanted: Vec<DeleteTopicState> = retry.iter().map(TopicKey::delete_state).collect();
            call.request_mut().topics.retain(|t| wanted.contains(t));
            call.retry(cx);
            return self.poll(cx);
        }
        for key in retry {
            self.results.insert(key, Err(AdminError::Timeout));
        }
        for t in &self.topics {
            self.results
                .entry(t.clone())
                .or_insert_with(|| Err(AdminError::Protocol("topic missing from response".into())));
        }
        Some(Ok(std::mem::take(&mut self.results)))
    }
}
