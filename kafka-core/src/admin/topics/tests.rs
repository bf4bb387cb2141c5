//! Topic operations against scripted brokers: controller retries narrowed to the
//! refused topics.

use std::cell::Cell;

use super::*;
use crate::admin::offsets::tests::{drive, metadata};
use crate::protocol::messages::create_partitions::response::CreatePartitionsTopicResult;
use crate::protocol::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsResponse,
};
use crate::protocol::messages::delete_topics::response::DeletableTopicResult;
use crate::protocol::messages::delete_topics::{DeleteTopicsRequest, DeleteTopicsResponse};
use crate::protocol::ApiKey;
use crate::test_support::response_frame;

#[test]
fn delete_topics_retries_only_the_topics_refused_with_not_controller() {
    let attempts = Cell::new(0);
    let mut asked = Vec::new();
    let op = DeleteTopics::new(["a", "b", "gone"]);
    let r = drive(op, |_, seen| match seen.api() {
        ApiKey::Metadata => response_frame(seen, &metadata(&[1]), seen.version()),
        ApiKey::DeleteTopics => {
            attempts.set(attempts.get() + 1);
            let req: DeleteTopicsRequest = seen.decode();
            let names: Vec<String> = req.topics.iter().filter_map(|t| t.name.clone()).collect();
            asked.push(names.clone());
            let code = |n: &str| match (n, attempts.get()) {
                ("a", 1) => KafkaCode::NOT_CONTROLLER.0,
                ("gone", _) => KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                _ => 0,
            };
            let resp = DeleteTopicsResponse {
                responses: names
                    .iter()
                    .map(|n| DeletableTopicResult {
                        name: Some(n.clone()),
                        error_code: code(n),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            response_frame(seen, &resp, seen.version())
        }
        other => panic!("unexpected {other:?}"),
    })
    .expect("delete topics");
    assert_eq!(asked, vec![vec!["a", "b", "gone"], vec!["a"]]);
    assert_eq!(r["a"], Ok(()));
    assert_eq!(r["b"], Ok(()));
    assert_eq!(
        r["gone"].as_ref().err().and_then(AdminError::code),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
}

#[test]
fn create_partitions_sends_counts_assignments_and_validate_only() {
    let op = CreatePartitions::new([
        (
            "a",
            NewPartitions::increase_to(3).assignments(vec![vec![1], vec![2]]),
        ),
        ("b", NewPartitions::increase_to(5)),
    ])
    .validate_only(true);
    let r = drive(op, |_, seen| match seen.api() {
        ApiKey::Metadata => response_frame(seen, &metadata(&[1]), seen.version()),
        ApiKey::CreatePartitions => {
            let req: CreatePartitionsRequest = seen.decode();
            assert!(req.validate_only);
            let a = &req.topics[0];
            assert_eq!((a.name.as_str(), a.count), ("a", 3));
            let brokers: Vec<Vec<i32>> = a
                .assignments
                .iter()
                .flatten()
                .map(|x| x.broker_ids.clone())
                .collect();
            assert_eq!(brokers, vec![vec![1], vec![2]]);
            assert_eq!(req.topics[1].assignments, None);
            let resp = CreatePartitionsResponse {
                results: vec![CreatePartitionsTopicResult {
                    name: "a".into(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            response_frame(seen, &resp, seen.version())
        }
        other => panic!("unexpected {other:?}"),
    })
    .expect("create partitions");
    assert_eq!(r["a"], Ok(()));
    assert!(matches!(r["b"], Err(AdminError::Protocol(_))), "{r:?}");
}
