//! How a topic is named in a request: by name or by topic id.

use crate::protocol::messages::delete_topics::request::DeleteTopicState;
use crate::protocol::messages::delete_topics::response::DeletableTopicResult;
use crate::protocol::messages::metadata::request::MetadataRequestTopic;
use crate::protocol::messages::metadata::response::MetadataResponseTopic;
use crate::protocol::Uuid;

mod sealed {
    pub trait Sealed {}
    impl Sealed for String {}
    impl Sealed for crate::protocol::Uuid {}
}

/// How a topic is named in a request: by name (`String`) or by topic id ([`Uuid`]).
/// Operations that take either ([`DeleteTopics`](super::DeleteTopics),
/// [`DescribeTopics`](super::DescribeTopics))
/// key their results by it.
pub trait TopicKey: sealed::Sealed + Clone + Ord + std::fmt::Debug + Send + 'static {
    /// The DeleteTopics request entry for this topic.
    #[doc(hidden)]
    fn delete_state(&self) -> DeleteTopicState;
    /// The key a DeleteTopics result answers for (`None`: the broker left it out).
    #[doc(hidden)]
    fn from_deleted(r: &DeletableTopicResult) -> Option<Self>;
    /// Whether the key is the "no topic" value (empty name, zero id).
    #[doc(hidden)]
    fn is_unset(&self) -> bool;
    /// The Metadata request entry for this topic.
    #[doc(hidden)]
    fn metadata_topic(&self) -> MetadataRequestTopic;
    /// The key a Metadata topic answers for.
    #[doc(hidden)]
    fn from_metadata(t: &MetadataResponseTopic) -> Option<Self>;
}

impl TopicKey for String {
    fn delete_state(&self) -> DeleteTopicState {
        DeleteTopicState {
            name: Some(self.clone()),
            ..Default::default()
        }
    }
    fn from_deleted(r: &DeletableTopicResult) -> Option<Self> {
        r.name.clone()
    }
    fn is_unset(&self) -> bool {
        self.is_empty()
    }
    fn metadata_topic(&self) -> MetadataRequestTopic {
        MetadataRequestTopic {
            name: Some(self.clone()),
            ..Default::default()
        }
    }
    fn from_metadata(t: &MetadataResponseTopic) -> Option<Self> {
        t.name.clone()
    }
}

impl TopicKey for Uuid {
    fn delete_state(&self) -> DeleteTopicState {
        DeleteTopicState {
            name: None,
            topic_id: *self,
            ..Default::default()
        }
    }
    fn from_deleted(r: &DeletableTopicResult) -> Option<Self> {
        (r.topic_id != Uuid::ZERO).then_some(r.topic_id)
    }
    fn is_unset(&self) -> bool {
        *self == Uuid::ZERO
    }
    fn metadata_topic(&self) -> MetadataRequestTopic {
        MetadataRequestTopic {
            name: None,
            topic_id: *self,
            ..Default::default()
        }
    }
    fn from_metadata(t: &MetadataResponseTopic) -> Option<Self> {
        (t.topic_id != Uuid::ZERO).then_some(t.topic_id)
    }
}
