//! Suite: configs operations.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_core::admin::{
    AdminError, AlterConfigOp, AlterConfigs, Config, ConfigResource, ConfigResourceType,
    ConfigSource, DescribeCluster, DescribeConfigs, IncrementalAlterConfigs, ListConfigResources,
};
use kafka_core::protocol::KafkaCode;

use super::topics::{create_topic, eventually};
use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_configs {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            configs::topic_configs_set_appended_and_deleted,
            configs::topic_configs_replaced_whole,
            configs::broker_configs_with_synonyms,
            configs::broker_config_altered_incrementally,
            configs::list_config_resources_by_type,
        );
    };
}

/// The configs of one resource.
fn describe<D: Driver>(admin: &D, resource: &ConfigResource) -> Config {
    let mut r = admin
        .run(DescribeConfigs::new([resource.clone()]).include_synonyms(true))
        .expect("describe configs");
    r.remove(resource)
        .unwrap_or_else(|| panic!("{resource:?} missing"))
        .expect("described")
}

/// Waits until `key` of `resource` has `value` from `source` (a change shows on the
/// broker a moment after the controller confirmed it).
fn wait_for<D: Driver>(
    admin: &D,
    resource: &ConfigResource,
    key: &str,
    value: &str,
    source: ConfigSource,
) {
    eventually(&format!("{key}={value} ({source:?})"), || {
        let config = describe(admin, resource);
        let e = &config[key];
        (e.value.as_deref() == Some(value) && e.source == source).then_some(())
    });
}

/// The first broker's id.
fn broker_id<D: Driver>(admin: &D) -> i32 {
    let cluster = admin.run(DescribeCluster::new()).expect("cluster");
    *cluster.brokers.keys().next().expect("a broker")
}

/// IncrementalAlterConfigs on a topic: validate-only changes nothing; SET and APPEND read
/// back as DYNAMIC_TOPIC_CONFIG; SUBTRACT and DELETE undo them; an unknown topic fails
/// alone, in DescribeConfigs too.
pub fn topic_configs_set_appended_and_deleted<D: Driver>() {
    let Some(admin) = plaintext::<D>("topic_configs_set_appended_and_deleted") else {
        return;
    };
    let name = unique::<D>("configs");
    create_topic(&admin, &name, 1);
    let topic = ConfigResource::topic(&name);
    let missing = ConfigResource::topic(unique::<D>("configs-missing"));

    let dry = admin
        .run(
            IncrementalAlterConfigs::new([(
                topic.clone(),
                vec![AlterConfigOp::set("retention.ms", "123456")],
            )])
            .validate_only(true),
        )
        .expect("validate-only call");
    assert!(dry[&topic].is_ok(), "{dry:?}");
    let before = describe(&admin, &topic);
    assert_eq!(before["retention.ms"].value.as_deref(), Some("604800000"));
    assert_eq!(before["retention.ms"].source, ConfigSource::DefaultConfig);
    assert!(!before["retention.ms"].read_only);

    let r = admin
        .run(IncrementalAlterConfigs::new([(
            topic.clone(),
            vec![
                AlterConfigOp::set("retention.ms", "123456"),
                AlterConfigOp::append("cleanup.policy", "compact"),
            ],
        )]))
        .expect("set and append");
    assert!(r[&topic].is_ok(), "{r:?}");
    wait_for(
        &admin,
        &topic,
        "retention.ms",
        "123456",
        ConfigSource::DynamicTopicConfig,
    );
    let config = describe(&admin, &topic);
    let policy = &config["cleanup.policy"];
    assert_eq!(policy.source, ConfigSource::DynamicTopicConfig);
    assert_eq!(
        policy.value.as_deref(),
        Some("delete,compact"),
        "{policy:?}"
    );
    assert_eq!(policy.synonyms[0].source, ConfigSource::DynamicTopicConfig);

    let r = admin
        .run(IncrementalAlterConfigs::new([
            (
                topic.clone(),
                vec![
                    AlterConfigOp::delete("retention.ms"),
                    AlterConfigOp::subtract("cleanup.policy", "compact"),
                ],
            ),
            (
                missing.clone(),
                vec![AlterConfigOp::set("retention.ms", "1000")],
            ),
        ]))
        .expect("delete and subtract");
    assert!(r[&topic].is_ok(), "{r:?}");
    assert_eq!(
        r[&missing].as_ref().err().and_then(AdminError::code),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{r:?}"
    );
    wait_for(
        &admin,
        &topic,
        "retention.ms",
        "604800000",
        ConfigSource::DefaultConfig,
    );
    let config = describe(&admin, &topic);
    assert_eq!(config["cleanup.policy"].value.as_deref(), Some("delete"));

    let r = admin
        .run(DescribeConfigs::new([topic.clone(), missing.clone()]))
        .expect("describe with a missing topic");
    assert!(r[&topic].is_ok(), "{r:?}");
    assert_eq!(
        r[&missing].as_ref().err().and_then(AdminError::code),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{r:?}"
    );
}

/// AlterConfigs (legacy) replaces a topic's whole dynamic config; validate-only changes
/// nothing.
pub fn topic_configs_replaced_whole<D: Driver>() {
    let Some(admin) = plaintext::<D>("topic_configs_replaced_whole") else {
        return;
    };
    let name = unique::<D>("configs-legacy");
    create_topic(&admin, &name, 1);
    let topic = ConfigResource::topic(&name);
    let first: BTreeMap<String, String> = [
        ("retention.ms".to_string(), "200000".to_string()),
        ("segment.ms".to_string(), "300000".to_string()),
    ]
    .into();
    let r = admin
        .run(AlterConfigs::new([(topic.clone(), first)]))
        .expect("alter");
    assert!(r[&topic].is_ok(), "{r:?}");
    wait_for(
        &admin,
        &topic,
        "segment.ms",
        "300000",
        ConfigSource::DynamicTopicConfig,
    );

    let second: BTreeMap<String, String> =
        [("retention.ms".to_string(), "400000".to_string())].into();
    let dry = admin
        .run(AlterConfigs::new([(topic.clone(), second.clone())]).validate_only(true))
        .expect("validate-only alter");
    assert!(dry[&topic].is_ok(), "{dry:?}");
    let config = describe(&admin, &topic);
    assert_eq!(config["retention.ms"].value.as_deref(), Some("200000"));

    let r = admin
        .run(AlterConfigs::new([(topic.clone(), second)]))
        .expect("replace");
    assert!(r[&topic].is_ok(), "{r:?}");
    wait_for(
        &admin,
        &topic,
        "retention.ms",
        "400000",
        ConfigSource::DynamicTopicConfig,
    );
    // segment.ms was left out of the new whole config: back to its default.
    let config = describe(&admin, &topic);
    assert_ne!(
        config["segment.ms"].source,
        ConfigSource::DynamicTopicConfig
    );
}

/// DescribeConfigs of a broker (sent to that broker): static and default sources, the
/// synonyms of `log.retention.ms`, documentation when asked; an unknown broker id is
/// never sent to another broker (the call times out).
pub fn broker_configs_with_synonyms<D: Driver>() {
    let Some(admin) = plaintext::<D>("broker_configs_with_synonyms") else {
        return;
    };
    let broker = ConfigResource::broker(broker_id(&admin));
    let mut r = admin
        .run(
            DescribeConfigs::new([broker.clone()])
                .include_synonyms(true)
                .include_documentation(true),
        )
        .expect("describe broker");
    let config = r.remove(&broker).expect("broker").expect("described");

    // The rig sets num.partitions in server.properties.
    let partitions = &config["num.partitions"];
    assert_eq!(partitions.source, ConfigSource::StaticBrokerConfig);
    assert_eq!(partitions.value.as_deref(), Some("1"));
    let sources: Vec<ConfigSource> = partitions.synonyms.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [
            ConfigSource::StaticBrokerConfig,
            ConfigSource::DefaultConfig
        ],
        "{partitions:?}"
    );

    // log.retention.hours is unset: its built-in default, which is also its only synonym
    // (log.retention.ms and .minutes, which would take precedence, are unset too).
    let hours = &config["log.retention.hours"];
    assert_eq!(hours.source, ConfigSource::DefaultConfig, "{hours:?}");
    assert_eq!(hours.value.as_deref(), Some("168"));
    let synonym = hours
        .synonyms
        .iter()
        .find(|s| s.name == "log.retention.hours")
        .unwrap_or_else(|| panic!("no log.retention.hours synonym: {hours:?}"));
    assert_eq!(synonym.source, ConfigSource::DefaultConfig);
    assert_eq!(synonym.value.as_deref(), Some("168"));
    assert_eq!(config["log.retention.ms"].value, None);
    assert!(
        config
            .values()
            .any(|e| e.documentation.as_deref().is_some_and(|d| !d.is_empty())),
        "no documentation"
    );
    let passwords = config.values().filter(|e| e.sensitive).count();
    assert!(passwords > 0, "sensitive configs are reported as such");
    assert!(config
        .values()
        .filter(|e| e.sensitive)
        .all(|e| e.value.is_none()));

    let nowhere = ConfigResource::broker(9999);
    let err = admin
        .run(DescribeConfigs::new([nowhere]).timeout(Duration::from_secs(2)))
        .expect_err("no broker 9999");
    // The timeout says why: the broker is not in the metadata.
    assert!(matches!(err, AdminError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("broker 9999"), "{err}");
}

/// IncrementalAlterConfigs of a broker's dynamic config (sent to that broker): read back
/// as DYNAMIC_BROKER_CONFIG, then deleted back to its default.
pub fn broker_config_altered_incrementally<D: Driver>() {
    let Some(admin) = plaintext::<D>("broker_config_altered_incrementally") else {
        return;
    };
    let broker = ConfigResource::broker(broker_id(&admin));
    let key = "log.cleaner.backoff.ms";
    let default = describe(&admin, &broker)[key]
        .value
        .clone()
        .expect("a default");

    let dry = admin
        .run(
            IncrementalAlterConfigs::new([(
                broker.clone(),
                vec![AlterConfigOp::set(key, "16001")],
            )])
            .validate_only(true),
        )
        .expect("validate-only");
    assert!(dry[&broker].is_ok(), "{dry:?}");
    assert_eq!(
        describe(&admin, &broker)[key].value.as_deref(),
        Some(&*default)
    );

    let r = admin
        .run(IncrementalAlterConfigs::new([(
            broker.clone(),
            vec![AlterConfigOp::set(key, "16001")],
        )]))
        .expect("set");
    assert!(r[&broker].is_ok(), "{r:?}");
    wait_for(
        &admin,
        &broker,
        key,
        "16001",
        ConfigSource::DynamicBrokerConfig,
    );
    let entry = &describe(&admin, &broker)[key];
    assert_eq!(entry.synonyms[0].source, ConfigSource::DynamicBrokerConfig);

    let r = admin
        .run(IncrementalAlterConfigs::new([(
            broker.clone(),
            vec![AlterConfigOp::delete(key)],
        )]))
        .expect("delete");
    assert!(r[&broker].is_ok(), "{r:?}");
    wait_for(&admin, &broker, key, &default, ConfigSource::DefaultConfig);
}

/// ListConfigResources (KIP-1142): a client-metrics subscription made with
/// IncrementalAlterConfigs is listed under its type, a new topic under its own; the
/// type filter keeps the others out, and no filter lists both.
pub fn list_config_resources_by_type<D: Driver>() {
    let Some(admin) = plaintext::<D>("list_config_resources_by_type") else {
        return;
    };
    let name = unique::<D>("cfg-res");
    create_topic(&admin, &name, 1);
    let topic = ConfigResource::topic(&name);
    let metrics = ConfigResource::new(ConfigResourceType::ClientMetrics, unique::<D>("cm"));
    let set = admin
        .run(IncrementalAlterConfigs::new([(
            metrics.clone(),
            vec![
                AlterConfigOp::set("metrics", "org.apache.kafka.producer."),
                AlterConfigOp::set("interval.ms", "60000"),
            ],
        )]))
        .expect("create client metrics resource");
    assert_eq!(set[&metrics], Ok(()), "{set:?}");

    let listed = eventually("the client metrics resource listed", || {
        let listed = admin
            .run(ListConfigResources::client_metrics())
            .expect("list client metrics resources");
        listed.contains(&metrics).then_some(listed)
    });
    assert!(
        listed
            .iter()
            .all(|r| r.kind == ConfigResourceType::ClientMetrics),
        "{listed:?}"
    );
    let topics = admin
        .run(ListConfigResources::new().types([ConfigResourceType::Topic]))
        .expect("list topic resources");
    assert!(topics.contains(&topic), "{topics:?}");
    assert!(!topics.contains(&metrics));
    let all = admin
        .run(ListConfigResources::new())
        .expect("list every resource");
    assert!(all.contains(&topic) && all.contains(&metrics), "{all:?}");

    admin
        .run(IncrementalAlterConfigs::new([(
            metrics.clone(),
            vec![
                AlterConfigOp::delete("metrics"),
                AlterConfigOp::delete("interval.ms"),
            ],
        )]))
        .expect("delete client metrics resource");
}
