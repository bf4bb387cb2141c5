//! The consumer protocol's embedded encodings: the bytes a consumer puts in JoinGroup's
//! protocol metadata ([`Subscription`]) and the leader puts in SyncGroup's assignments
//! ([`Assignment`]), as the Java client's `ConsumerProtocol` writes and reads them.
//!
//! Both are a 2-byte version header followed by the `ConsumerProtocolSubscription` or
//! `ConsumerProtocolAssignment` struct at that version (classic encoding, versions 0–3).
//! Subscription v1 adds owned partitions, v2 the generation id, v3 the rack id; the
//! assignment's body is the same in every version.
//!
//! Reading follows Java: a version above 3 is read as version 3 and whatever follows is
//! ignored (newer versions only append fields); a negative version is an error.
//! Writing follows Java too, so the bytes are identical: subscription topics are sorted,
//! owned partitions sorted by topic and partition and grouped per topic; assignment
//! partitions are grouped per topic in order of first appearance.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::protocol::messages::consumer_protocol_assignment as wire_assignment;
use crate::protocol::messages::consumer_protocol_subscription as wire_subscription;
use crate::protocol::wire;
use crate::protocol::{Decodable, DecodeError, Encodable, EncodeError};

/// The highest consumer protocol version this crate writes and reads in full.
pub const HIGHEST_VERSION: i16 = 3;

/// Partitions of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct TopicPartitions {
    /// The topic name.
    pub topic: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

/// A member's subscription: what it sends as JoinGroup protocol metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    /// Subscribed topics (written sorted).
    pub topics: Vec<String>,
    /// Assignor-specific data ([`Assignor::user_data`](super::assignor::Assignor::user_data)).
    pub user_data: Option<Vec<u8>>,
    /// Partitions the member owns now (v1+; read as empty from v0).
    pub owned_partitions: Vec<TopicPartitions>,
    /// The generation the owned partitions belong to, `-1` when unknown (v2+; `-1` from
    /// older versions). Negative values are written as `-1`, as Java does.
    pub generation_id: i32,
    /// The member's `client.rack` (v3+). An empty rack reads as `None`, as in Java.
    pub rack_id: Option<String>,
}

/// A member's assignment: what the leader sends it through SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Assigned partitions.
    pub partitions: Vec<TopicPartitions>,
    /// Assignor-specific data.
    pub user_data: Option<Vec<u8>>,
}

impl Subscription {
    /// The subscription in the consumer protocol at `version` (clamped to 0..=3: Java
    /// writes a newer version as its highest), header included.
    ///
    /// # Panics
    ///
    /// If a topic or the rack id is longer than 32,767 bytes (Kafka's string limit; topic
    /// names are at most 249 characters); [`Subscription::try_encode`] reports it instead.
    pub fn encode(&self, version: i16) -> Vec<u8> {
        match self.try_encode(version) {
            Ok(bytes) => bytes,
            Err(e) => panic!("consumer protocol subscription cannot be encoded: {e}"),
        }
    }

    /// Like [`Subscription::encode`], but an over-long string is an error.
    pub fn try_encode(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        let version = clamp_version(version);
        let mut topics = self.topics.clone();
        topics.sort_by(|a, b| java_cmp(a, b));
        let mut owned: Vec<(&str, i32)> = flatten(&self.owned_partitions).collect();
        owned.sort_by(|a, b| java_cmp(a.0, b.0).then(a.1.cmp(&b.1)));
        let mut owned_partitions: Vec<wire_subscription::TopicPartition> = Vec::new();
        for (topic, partition) in owned {
            match owned_partitions.last_mut() {
                Some(last) if last.topic == topic => last.partitions.push(partition),
                _ => owned_partitions.push(wire_subscription::TopicPartition {
                    topic: topic.to_owned(),
                    partitions: vec![partition],
                    ..Default::default()
                }),
            }
        }
        let data = wire_subscription::ConsumerProtocolSubscription {
            topics,
            user_data: self.user_data.clone().map(Bytes::from),
            owned_partitions,
            generation_id: self.generation_id.max(-1),
            rack_id: self.rack_id.clone(),
            ..Default::default()
        };
        with_header(version, &data)
    }

    /// Reads a subscription written by any consumer-protocol client (header included).
    pub fn decode(bytes: &[u8]) -> Result<Subscription, DecodeError> {
        let mut b = Bytes::copy_from_slice(bytes);
        let version = read_version(&mut b, "ConsumerProtocolSubscription")?;
        let data = wire_subscription::ConsumerProtocolSubscription::decode(&mut b, version)?;
        Ok(Subscription {
            topics: data.topics,
            user_data: data.user_data.map(|b| b.to_vec()),
            owned_partitions: data
                .owned_partitions
                .into_iter()
                .map(|tp| TopicPartitions {
                    topic: tp.topic,
                    partitions: tp.partitions,
                })
                .collect(),
            generation_id: data.generation_id.max(-1),
            rack_id: data.rack_id.filter(|r| !r.is_empty()),
        })
    }
}

impl Assignment {
    /// The assignment in the consumer protocol at `version` (clamped to 0..=3), header
    /// included. Partitions are grouped per topic in order of first appearance.
    ///
    /// # Panics
    ///
    /// If a topic is longer than 32,767 bytes; [`Assignment::try_encode`] reports it instead.
    pub fn encode(&self, version: i16) -> Vec<u8> {
        match self.try_encode(version) {
            Ok(bytes) => bytes,
            Err(e) => panic!("consumer protocol assignment cannot be encoded: {e}"),
        }
    }

    /// Like [`Assignment::encode`], but an over-long topic is an error.
    pub fn try_encode(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        let version = clamp_version(version);
        let mut assigned: Vec<wire_assignment::TopicPartition> = Vec::new();
        for (topic, partition) in flatten(&self.partitions) {
            match assigned.iter_mut().find(|t| t.topic == topic) {
                Some(t) => t.partitions.push(partition),
                None => assigned.push(wire_assignment::TopicPartition {
                    topic: topic.to_owned(),
                    partitions: vec![partition],
                    ..Default::default()
                }),
            }
        }
        let data = wire_assignment::ConsumerProtocolAssignment {
            assigned_partitions: assigned,
            user_data: self.user_data.clone().map(Bytes::from),
            ..Default::default()
        };
        with_header(version, &data)
    }

    /// Reads an assignment. An empty byte string is an empty assignment: the broker
    /// hands a member no bytes when the leader left it out (Java's admin client reads
    /// it so; Java's consumer instead refuses fewer than 2 bytes and rejoins, a choice
    /// left to the membership machine, which can test `bytes.is_empty()` itself).
    pub fn decode(bytes: &[u8]) -> Result<Assignment, DecodeError> {
        if bytes.is_empty() {
            return Ok(Assignment::default());
        }
        let mut b = Bytes::copy_from_slice(bytes);
        let version = read_version(&mut b, "ConsumerProtocolAssignment")?;
        let data = wire_assignment::ConsumerProtocolAssignment::decode(&mut b, version)?;
        Ok(Assignment {
            partitions: data
                .assigned_partitions
                .into_iter()
                .map(|tp| TopicPartitions {
                    topic: tp.topic,
                    partitions: tp.partitions,
                })
                .collect(),
            user_data: data.user_data.map(|b| b.to_vec()),
        })
    }
}

/// Every `(topic, partition)` of a list of topic partitions, in order.
pub(crate) fn flatten(tps: &[TopicPartitions]) -> impl Iterator<Item = (&str, i32)> + '_ {
    tps.iter()
        .flat_map(|tp| tp.partitions.iter().map(move |&p| (tp.topic.as_str(), p)))
}

/// Java's `String.compareTo`: by UTF-16 code units (differs from `str`'s byte order only
/// between supplementary characters and U+E000..U+FFFF).
pub(crate) fn java_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn clamp_version(version: i16) -> i16 {
    version.clamp(0, HIGHEST_VERSION)
}

fn read_version(b: &mut Bytes, message: &'static str) -> Result<i16, DecodeError> {
    let version = wire::get_i16(b)?;
    if version < 0 {
        return Err(DecodeError::UnsupportedVersion { message, version });
    }
    Ok(version.min(HIGHEST_VERSION))
}

fn with_header<T: Encodable>(version: i16, data: &T) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::with_capacity(2 + data.encoded_len(version)?);
    out.extend_from_slice(&version.to_be_bytes());
    data.encode(&mut out, version)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
        TopicPartitions {
            topic: topic.into(),
            partitions: partitions.to_vec(),
        }
    }

    fn full_subscription() -> Subscription {
        Subscription {
            topics: vec!["b".into(), "a".into()],
            user_data: Some(vec![1, 2, 3]),
            owned_partitions: vec![tp("b", &[1, 0]), tp("a", &[2])],
            generation_id: 7,
            rack_id: Some("r1".into()),
        }
    }

    #[test]
    fn subscription_v0_bytes() {
        let bytes = full_subscription().encode(0);
        let expected = [
            0, 0, // version
            0, 0, 0, 2, 0, 1, b'a', 0, 1, b'b', // topics, sorted
            0, 0, 0, 3, 1, 2, 3, // user data
        ];
        assert_eq!(bytes, expected);
    }

    #[test]
    fn subscription_v3_sorts_and_groups_owned_partitions() {
        let bytes = full_subscription().encode(3);
        let decoded = Subscription::decode(&bytes).unwrap();
        assert_eq!(decoded.topics, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(
            decoded.owned_partitions,
            vec![tp("a", &[2]), tp("b", &[0, 1])]
        );
        assert_eq!(decoded.generation_id, 7);
        assert_eq!(decoded.rack_id.as_deref(), Some("r1"));
        assert_eq!(&bytes[..2], &[0, 3]);
    }

    #[test]
    fn older_versions_drop_newer_fields() {
        let s = full_subscription();
        let v1 = Subscription::decode(&s.encode(1)).unwrap();
        assert_eq!(v1.generation_id, -1);
        assert_eq!(v1.rack_id, None);
        assert_eq!(v1.owned_partitions.len(), 2);
        let v2 = Subscription::decode(&s.encode(2)).unwrap();
        assert_eq!(v2.generation_id, 7);
        assert_eq!(v2.rack_id, None);
        let v0 = Subscription::decode(&s.encode(0)).unwrap();
        assert!(v0.owned_partitions.is_empty());
    }

    #[test]
    fn newer_versions_read_as_highest_and_ignore_trailing_bytes() {
        let mut bytes = full_subscription().encode(3);
        bytes[1] = 9;
        bytes.extend_from_slice(&[0xde, 0xad]);
        let decoded = Subscription::decode(&bytes).unwrap();
        assert_eq!(decoded.rack_id.as_deref(), Some("r1"));
        // Writing a newer version writes our highest.
        assert_eq!(&full_subscription().encode(12)[..2], &[0, 3]);
    }

    #[test]
    fn negative_version_and_truncation_are_errors() {
        assert!(matches!(
            Subscription::decode(&[0xff, 0xff, 0, 0, 0, 0]),
            Err(DecodeError::UnsupportedVersion { version: -1, .. })
        ));
        let bytes = full_subscription().encode(3);
        for n in 0..bytes.len() {
            assert!(Subscription::decode(&bytes[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn huge_counts_are_refused_before_allocating() {
        let bytes = [0, 1, 0x7f, 0xff, 0xff, 0xff, 0, 1];
        assert!(matches!(
            Subscription::decode(&bytes),
            Err(DecodeError::CountTooLarge { .. })
        ));
        assert!(Assignment::decode(&bytes).is_err());
    }

    #[test]
    fn empty_rack_and_negative_generation_normalise() {
        let s = Subscription {
            generation_id: -5,
            rack_id: Some(String::new()),
            ..Default::default()
        };
        let decoded = Subscription::decode(&s.encode(3)).unwrap();
        assert_eq!(decoded.generation_id, -1);
        assert_eq!(decoded.rack_id, None);
    }

    #[test]
    fn assignment_groups_by_first_appearance() {
        let a = Assignment {
            partitions: vec![tp("z", &[3]), tp("a", &[1]), tp("z", &[0])],
            user_data: None,
        };
        let bytes = a.encode(1);
        let decoded = Assignment::decode(&bytes).unwrap();
        assert_eq!(decoded.partitions, vec![tp("z", &[3, 0]), tp("a", &[1])]);
        assert_eq!(decoded.user_data, None);
        let expected = [
            0, 1, // version
            0, 0, 0, 2, // topics
            0, 1, b'z', 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, // z: [3, 0]
            0, 1, b'a', 0, 0, 0, 1, 0, 0, 0, 1, // a: [1]
            0xff, 0xff, 0xff, 0xff, // null user data
        ];
        assert_eq!(bytes, expected);
    }

    #[test]
    fn empty_assignment_bytes_are_an_empty_assignment() {
        assert_eq!(Assignment::decode(&[]).unwrap(), Assignment::default());
        assert!(Assignment::decode(&[0]).is_err());
    }

    #[test]
    fn overlong_strings_are_encode_errors() {
        let s = Subscription {
            topics: vec!["x".repeat(40_000)],
            ..Default::default()
        };
        assert!(s.try_encode(0).is_err());
    }

    #[test]
    fn mutated_bytes_never_panic() {
        let seeds = [full_subscription().encode(3), full_subscription().encode(1)];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut bytes = seeds[(x % 2) as usize].clone();
            let i = (x >> 8) as usize % bytes.len();
            bytes[i] = (x >> 32) as u8;
            let cut = (x >> 40) as usize % (bytes.len() + 1);
            let _ = Subscription::decode(&bytes[..cut]);
            let _ = Assignment::decode(&bytes[..cut]);
        }
    }

    #[test]
    fn java_order_is_utf16_order() {
        // U+FF61 sorts after U+1F600 by bytes, before it by UTF-16 code units.
        assert_eq!(java_cmp("\u{ff61}", "\u{1f600}"), Ordering::Greater);
        assert_eq!("\u{ff61}".cmp("\u{1f600}"), Ordering::Less);
        assert_eq!(java_cmp("a", "b"), Ordering::Less);
    }
}
