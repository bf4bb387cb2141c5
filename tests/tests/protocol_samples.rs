//! Self-consistency of the generated codecs, with no Java: for every API key, version and
//! direction, seeded sample messages encode, decode back to equal values, re-encode to the
//! same bytes, and `encoded_len` matches the bytes written.

use bytes::Bytes;
use kafka_core::protocol::oracle::SampleRng;
use kafka_core::protocol::{visit_message, ApiKey, Direction, Message, MessageVisitor};

struct RoundTrip {
    seed: u64,
}

impl MessageVisitor for RoundTrip {
    type Output = usize;

    fn visit<M: Message>(self) -> usize {
        let mut checked = 0;
        for version in M::VERSIONS.min..=M::VERSIONS.max {
            for case in 0..8u64 {
                let mut rng = SampleRng::new(self.seed ^ (version as u64) << 8 ^ case);
                let msg = M::sample(&mut rng, version);
                let mut buf = Vec::new();
                msg.encode_to(&mut buf, version)
                    .unwrap_or_else(|e| panic!("{} v{version} case {case}: encode: {e}", M::NAME));
                assert_eq!(
                    msg.encoded_len(version).unwrap(),
                    buf.len(),
                    "{} v{version}: encoded_len",
                    M::NAME
                );
                let back = M::decode_from(Bytes::from(buf.clone()), version)
                    .unwrap_or_else(|e| panic!("{} v{version} case {case}: decode: {e}", M::NAME));
                assert_eq!(
                    back,
                    msg,
                    "{} v{version} case {case}: value changed",
                    M::NAME
                );
                let mut again = Vec::new();
                back.encode_to(&mut again, version).unwrap();
                assert_eq!(
                    again,
                    buf,
                    "{} v{version} case {case}: bytes changed",
                    M::NAME
                );
                assert_eq!(back.to_json(version), msg.to_json(version));
                // Every strict prefix must fail cleanly (no panic, typed error).
                for cut in [0, buf.len() / 2, buf.len().saturating_sub(1)] {
                    if cut < buf.len() {
                        assert!(
                            M::decode_from(Bytes::copy_from_slice(&buf[..cut]), version).is_err()
                        );
                    }
                }
                checked += 1;
            }
        }
        checked
    }
}

#[test]
fn every_api_version_and_direction_round_trips() {
    let mut total = 0;
    for &key in ApiKey::ALL {
        for direction in [Direction::Request, Direction::Response] {
            total += visit_message(
                key,
                direction,
                RoundTrip {
                    seed: key as u64 * 7919 + direction as u64,
                },
            );
        }
    }
    assert_eq!(ApiKey::ALL.len(), 89);
    assert!(total >= 604 * 8, "only {total} cases");
}

#[test]
fn versions_outside_the_schema_are_refused() {
    use kafka_core::protocol::messages::produce::ProduceRequest;
    let mut buf = Vec::new();
    assert!(ProduceRequest::default().encode_to(&mut buf, 2).is_err());
    assert!(buf.is_empty());
    assert!(ProduceRequest::decode_from(Bytes::new(), 14).is_err());
}

#[test]
fn non_default_field_missing_from_version_is_an_encode_error() {
    use kafka_core::protocol::messages::fetch::request::{FetchPartition, FetchTopic};
    use kafka_core::protocol::messages::fetch::FetchRequest;
    use kafka_core::protocol::EncodeError;
    // LastFetchedEpoch exists from v12 and is not ignorable.
    let partition = FetchPartition {
        last_fetched_epoch: 5,
        ..Default::default()
    };
    let mut topic = FetchTopic::default();
    topic.partitions.push(partition);
    let mut req = FetchRequest::default();
    req.topics.push(topic);
    let mut buf = Vec::new();
    let err = req.encode_to(&mut buf, 11).unwrap_err();
    assert_eq!(
        err,
        EncodeError::FieldNotInVersion {
            field: "LastFetchedEpoch",
            version: 11
        }
    );
    assert!(
        buf.is_empty(),
        "a failed encode leaves the buffer as it was"
    );
    assert!(req.encode_to(&mut buf, 12).is_ok());
}

#[test]
fn ignorable_field_missing_from_version_is_dropped() {
    use kafka_core::protocol::messages::fetch::FetchRequest;
    // ClusterId exists from v12 (tagged) and is ignorable: older versions drop it.
    let req = FetchRequest {
        cluster_id: Some("c".into()),
        ..Default::default()
    };
    let mut buf = Vec::new();
    req.encode_to(&mut buf, 11).unwrap();
    let back = FetchRequest::decode_from(Bytes::from(buf), 11).unwrap();
    assert_eq!(back.cluster_id, None);
}
