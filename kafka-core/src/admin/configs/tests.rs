//! DescribeConfigs routing against scripted brokers: a broker's own configs go to that
//! broker, the rest to any broker, one result per resource.

use std::collections::BTreeMap;

use super::*;
use crate::admin::offsets::tests::{drive, metadata};
use crate::protocol::messages::describe_configs::response::DescribeConfigsResourceResult;
use crate::protocol::ApiKey;
use crate::test_support::response_frame;

#[test]
fn broker_resources_go_to_their_broker_and_the_rest_to_any() {
    let mut asked: BTreeMap<String, Vec<(i8, String)>> = BTreeMap::new();
    let op = DescribeConfigs::new([
        ConfigResource::broker(2),
        ConfigResource::topic("t"),
        ConfigResource::broker_default(),
        ConfigResource::new(ConfigResourceType::Broker, "x"),
    ])
    .include_synonyms(true);
    let r = drive(op, |host, seen| match seen.api() {
        ApiKey::Metadata => response_frame(seen, &metadata(&[1]), seen.version()),
        ApiKey::DescribeConfigs => {
            let req: DescribeConfigsRequest = seen.decode();
            assert!(req.include_synonyms);
            let names = req
                .resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.clone()))
                .collect();
            asked.insert(host.to_string(), names);
            let resp = DescribeConfigsResponse {
                results: req
                    .resources
                    .iter()
                    .map(|r| DescribeConfigsResult {
                        error_code: if r.resource_name == "t" { 3 } else { 0 },
                        resource_type: r.resource_type,
                        resource_name: r.resource_name.clone(),
                        configs: vec![DescribeConfigsResourceResult {
                            name: "k".into(),
                            value: Some(host.to_string()),
                            config_source: 4,
                            ..Default::default()
                        }],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            response_frame(seen, &resp, seen.version())
        }
        other => panic!("unexpected {other:?}"),
    })
    .expect("describe configs");

    assert_eq!(asked["b2"], vec![(4, "2".to_string())]);
    let (_, rest) = asked
        .iter()
        .find(|(host, _)| *host != "b2")
        .expect("a request to another broker");
    assert_eq!(rest, &vec![(2, "t".to_string()), (4, String::new())]);

    let b2 = r[&ConfigResource::broker(2)].as_ref().expect("broker 2");
    assert_eq!(b2["k"].value.as_deref(), Some("b2"));
    assert_eq!(b2["k"].source, ConfigSource::StaticBrokerConfig);
    assert!(r[&ConfigResource::broker_default()].is_ok());
    assert_eq!(
        r[&ConfigResource::topic("t")]
            .as_ref()
            .err()
            .and_then(AdminError::code),
        Some(crate::protocol::KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert!(matches!(
        r[&ConfigResource::new(ConfigResourceType::Broker, "x")],
        Err(AdminError::Invalid(_))
    ));
}
