//! Real broker: our codecs against Apache Kafka 4.3.1 started by the rig. Version
//! negotiation picks the highest version both sides support for every API, and requests
//! at every version the broker supports round-trip through the real broker.

use kafka_core::protocol::messages::api_versions::ApiVersionsRequest;
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::delete_topics::request::DeleteTopicState;
use kafka_core::protocol::messages::delete_topics::DeleteTopicsRequest;
use kafka_core::protocol::messages::describe_cluster::DescribeClusterRequest;
use kafka_core::protocol::messages::find_coordinator::FindCoordinatorRequest;
use kafka_core::protocol::messages::list_groups::ListGroupsRequest;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::{ApiKey, KafkaCode};
use kafka_tests::{broker_or_skip, RawClient};

#[test]
fn negotiated_versions_are_the_highest_both_sides_support() {
    let Some(addr) = broker_or_skip("negotiated_versions_are_the_highest_both_sides_support")
    else {
        return;
    };
    let c = RawClient::connect(&addr).expect("connect");
    let mut checked = 0;
    for &(key, broker) in &c.broker_versions {
        let Some(api) = ApiKey::from_i16(key) else {
            panic!("broker advertises API {key} unknown to us")
        };
        let ours = api.versions();
        // A 4.3.1 broker advertises exactly the schema ranges, except Produce's min (0, a
        // librdkafka workaround) and unstable top versions it hides.
        let expected_max = if api.latest_version_unstable() {
            ours.max - 1
        } else {
            ours.max
        };
        assert_eq!(
            broker.max,
            expected_max,
            "{}: broker max {} vs ours {}",
            api.name(),
            broker.max,
            ours
        );
        assert_eq!(
            c.negotiated(api),
            Some(broker.max.min(ours.max)),
            "{}",
            api.name()
        );
        checked += 1;
    }
    assert!(checked >= 50, "broker advertised only {checked} APIs");
}

#[test]
fn every_version_of_core_apis_round_trips_through_the_broker() {
    let Some(addr) = broker_or_skip("every_version_of_core_apis_round_trips_through_the_broker")
    else {
        return;
    };
    let mut c = RawClient::connect(&addr).expect("connect");
    let range = |c: &RawClient, k: ApiKey| {
        c.broker_range(k)
            .and_then(|r| r.intersect(k.versions()))
            .unwrap()
    };

    for v in range(&c, ApiKey::ApiVersions).min..=range(&c, ApiKey::ApiVersions).max {
        let resp = c
            .call(
                v,
                &ApiVersionsRequest {
                    client_software_name: "t".into(),
                    client_software_version: "1".into(),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(
            KafkaCode(resp.error_code),
            KafkaCode::NONE,
            "ApiVersions v{v}"
        );
        assert!(resp.api_keys.len() >= 50);
    }

    // Create one topic per CreateTopics version, then see it in Metadata at every version.
    let stamp = std::process::id();
    let mut names = Vec::new();
    for v in range(&c, ApiKey::CreateTopics).min..=range(&c, ApiKey::CreateTopics).max {
        let name = format!("proto-v{v}-{stamp}");
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.clone(),
                num_partitions: 2,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        };
        let resp = c.call(v, &req).unwrap();
        assert_eq!(resp.topics.len(), 1);
        assert_eq!(
            KafkaCode(resp.topics[0].error_code),
            KafkaCode::NONE,
            "CreateTopics v{v}: {:?}",
            resp.topics[0].error_message
        );
        names.push(name);
    }
    // CreateTopics answers before every broker's metadata cache has the new topic; wait
    // until the latest Metadata version sees all of them, then check every version.
    let latest = range(&c, ApiKey::Metadata).max;
    let asked: Vec<MetadataRequestTopic> = names
        .iter()
        .map(|n| MetadataRequestTopic {
            name: Some(n.clone()),
            ..Default::default()
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let req = MetadataRequest {
            topics: Some(asked.clone()),
            ..Default::default()
        };
        let resp = c.call(latest, &req).unwrap();
        let ready = resp.topics.len() == names.len()
            && resp
                .topics
                .iter()
                .all(|t| t.error_code == 0 && t.partitions.len() == 2);
        if ready {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "created topics not in Metadata after 30 s: {:?}",
            resp.topics
                .iter()
                .map(|t| (&t.name, t.error_code))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for v in range(&c, ApiKey::Metadata).min..=range(&c, ApiKey::Metadata).max {
        let req = MetadataRequest {
            topics: Some(asked.clone()),
            allow_auto_topic_creation: v < 4, // the field exists from v4; v0-3 imply true
            ..Default::default()
        };
        let resp = c.call(v, &req).unwrap();
        assert!(!resp.brokers.is_empty(), "Metadata v{v}: no brokers");
        assert_eq!(resp.topics.len(), names.len(), "Metadata v{v}");
        for t in &resp.topics {
            assert_eq!(
                KafkaCode(t.error_code),
                KafkaCode::NONE,
                "Metadata v{v} {:?}",
                t.name
            );
            assert_eq!(t.partitions.len(), 2, "Metadata v{v} {:?}", t.name);
        }
    }
    for v in range(&c, ApiKey::DescribeCluster).min..=range(&c, ApiKey::DescribeCluster).max {
        let resp = c.call(v, &DescribeClusterRequest::default()).unwrap();
        assert_eq!(
            KafkaCode(resp.error_code),
            KafkaCode::NONE,
            "DescribeCluster v{v}"
        );
        assert!(!resp.cluster_id.is_empty());
    }
    for v in range(&c, ApiKey::ListGroups).min..=range(&c, ApiKey::ListGroups).max {
        let resp = c.call(v, &ListGroupsRequest::default()).unwrap();
        assert_eq!(
            KafkaCode(resp.error_code),
            KafkaCode::NONE,
            "ListGroups v{v}"
        );
    }
    for v in range(&c, ApiKey::FindCoordinator).min..=range(&c, ApiKey::FindCoordinator).max {
        let mut req = FindCoordinatorRequest::default();
        if v < 4 {
            req.key = "g".into();
        } else {
            req.coordinator_keys = vec!["g".into()];
        }
        let resp = c.call(v, &req).unwrap();
        let code = if v < 4 {
            resp.error_code
        } else {
            resp.coordinators[0].error_code
        };
        let code = KafkaCode(code);
        assert!(
            code == KafkaCode::NONE || code.is_retriable(),
            "FindCoordinator v{v}: {code}"
        );
    }
    let v = range(&c, ApiKey::DeleteTopics).max;
    let req = DeleteTopicsRequest {
        topics: names
            .iter()
            .map(|n| DeleteTopicState {
                name: Some(n.clone()),
                ..Default::default()
            })
            .collect(),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = c.call(v, &req).unwrap();
    assert!(
        resp.responses.iter().all(|r| r.error_code == 0),
        "DeleteTopics: {:?}",
        resp.responses
    );
}
