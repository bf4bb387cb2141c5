//! Real broker: the sans-IO core driven by the blocking adapter, over every listener of
//! the rig — PLAINTEXT, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), SSL with and
//! without a client certificate, SASL_SSL — plus the failure cases.

use std::time::{Duration, Instant};

use kafka_blocking::{BlockingClient, Error};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::{ConnError, RequestError};
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::list_offsets::request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use kafka_core::protocol::messages::list_offsets::ListOffsetsRequest;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::KafkaCode;
use kafka_tests::{broker_or_skip, rig_var};

fn var(name: &str) -> String {
    rig_var(name).unwrap_or_else(|| panic!("rig env lacks {name}"))
}

fn pem(name: &str) -> String {
    std::fs::read_to_string(var(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn client(pairs: &[(&str, String)]) -> BlockingClient {
    BlockingClient::new(
        ClientConfig::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).expect("config"),
    )
    .expect("client")
}

fn metadata_ok(c: &mut BlockingClient) {
    let m = c
        .call(Route::Any, MetadataRequest::default())
        .expect("metadata");
    assert!(!m.brokers.is_empty());
    assert!(m.cluster_id.is_some());
}

fn sasl(
    bootstrap: &str,
    protocol: &str,
    mechanism: &str,
    user_var: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("bootstrap.servers", var(bootstrap)),
        ("security.protocol", protocol.into()),
        ("sasl.mechanism", mechanism.into()),
        ("sasl.username", var(&format!("{user_var}_USERNAME"))),
        ("sasl.password", var(&format!("{user_var}_PASSWORD"))),
    ]
}

#[test]
fn plaintext_metadata_create_topics_and_leader_routing() {
    let Some(_) = broker_or_skip("plaintext_metadata_create_topics_and_leader_routing") else {
        return;
    };
    let mut c = client(&[("bootstrap.servers", var("KAFKA_BOOTSTRAP_SERVERS"))]);
    metadata_ok(&mut c);
    let topic = format!("client-{}", std::process::id());
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.clone(),
            num_partitions: 3,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = c.call(Route::Controller, create).expect("create topics");
    assert_eq!(KafkaCode(resp.topics[0].error_code), KafkaCode::NONE);
    // Route by partition leader: the core looks the leader up in metadata first.
    let list = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.clone(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 2,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Right after creation the leader may not serve the partition yet
    // (NOT_LEADER_OR_FOLLOWER / LEADER_NOT_AVAILABLE): retry until it does.
    let deadline = Instant::now() + Duration::from_secs(30);
    let offsets = loop {
        let route = Route::Leader {
            topic: topic.clone(),
            partition: 2,
        };
        let offsets = c.call(route, list.clone()).expect("list offsets");
        let code = KafkaCode(offsets.topics[0].partitions[0].error_code);
        if code == KafkaCode::NONE {
            break offsets;
        }
        assert!(code.is_retriable() && Instant::now() < deadline, "{code}");
        let t = topic.clone();
        c.with_core(move |core| core.invalidate_leader(Instant::now(), &t, 2))
            .expect("driver");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(offsets.topics[0].partitions[0].offset, 0);
    assert_eq!(
        {
            let t = topic.clone();
            c.with_core(move |core| core.metadata().topic(&t).map(|t| t.partitions.len()))
                .expect("driver")
        },
        Some(3)
    );
}

#[test]
fn sasl_plaintext_with_every_mechanism() {
    let Some(_) = broker_or_skip("sasl_plaintext_with_every_mechanism") else {
        return;
    };
    for (mechanism, user) in [
        ("PLAIN", "KAFKA_SASL_PLAIN"),
        ("SCRAM-SHA-256", "KAFKA_SASL_SCRAM_SHA_256"),
        ("SCRAM-SHA-512", "KAFKA_SASL_SCRAM_SHA_512"),
    ] {
        let mut c = client(&sasl(
            "KAFKA_SASL_BOOTSTRAP",
            "SASL_PLAINTEXT",
            mechanism,
            user,
        ));
        metadata_ok(&mut c);
    }
}

#[test]
fn wrong_password_fails_fast_with_the_brokers_message() {
    let Some(_) = broker_or_skip("wrong_password_fails_fast_with_the_brokers_message") else {
        return;
    };
    for (mechanism, user) in [
        ("PLAIN", "KAFKA_SASL_PLAIN"),
        ("SCRAM-SHA-512", "KAFKA_SASL_SCRAM_SHA_512"),
    ] {
        let mut pairs = sasl("KAFKA_SASL_BOOTSTRAP", "SASL_PLAINTEXT", mechanism, user);
        pairs[4].1 = "not-the-password".into();
        let c = client(&pairs);
        let start = Instant::now();
        let err = c.call(Route::Any, MetadataRequest::default()).unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{mechanism}: took {:?}",
            start.elapsed()
        );
        match err {
            Error::Request(RequestError::Connection(ConnError::AuthenticationFailed {
                message,
                ..
            })) => {
                assert!(
                    message.to_lowercase().contains("authentication"),
                    "{mechanism}: {message}"
                );
            }
            other => panic!("{mechanism}: {other:?}"),
        }
    }
}

#[test]
fn ssl_material_from_location_files() {
    let Some(_) = broker_or_skip("ssl_material_from_location_files") else {
        return;
    };
    // The adapter reads `ssl.*.location` files (the core opens none): mTLS from files.
    let mut c = client(&[
        ("bootstrap.servers", var("KAFKA_SSL_BOOTSTRAP")),
        ("security.protocol", "SSL".into()),
        ("ssl.ca.location", var("KAFKA_SSL_CA_PEM")),
        ("ssl.certificate.location", var("KAFKA_SSL_CLIENT_CERT_PEM")),
        ("ssl.key.location", var("KAFKA_SSL_CLIENT_KEY_PEM")),
    ]);
    metadata_ok(&mut c);
    let missing = BlockingClient::new(
        ClientConfig::from_pairs([
            ("bootstrap.servers", var("KAFKA_SSL_BOOTSTRAP").as_str()),
            ("security.protocol", "SSL"),
            ("ssl.ca.location", "/nonexistent/ca.pem"),
        ])
        .expect("config"),
    );
    let err = missing.expect_err("a missing CA file fails at construction");
    assert!(err.to_string().contains("ssl.ca.location"), "{err}");
}

#[test]
fn ssl_with_and_without_client_certificate_and_sasl_ssl() {
    let Some(_) = broker_or_skip("ssl_with_and_without_client_certificate_and_sasl_ssl") else {
        return;
    };
    let ca = ("ssl.ca.pem", pem("KAFKA_SSL_CA_PEM"));
    let mut c = client(&[
        ("bootstrap.servers", var("KAFKA_SSL_BOOTSTRAP")),
        ("security.protocol", "SSL".into()),
        ca.clone(),
    ]);
    metadata_ok(&mut c);
    let mut c = client(&[
        ("bootstrap.servers", var("KAFKA_SSL_BOOTSTRAP")),
        ("security.protocol", "SSL".into()),
        ca.clone(),
        ("ssl.certificate.pem", pem("KAFKA_SSL_CLIENT_CERT_PEM")),
        ("ssl.key.pem", pem("KAFKA_SSL_CLIENT_KEY_PEM")),
    ]);
    metadata_ok(&mut c);
    let mut pairs = sasl(
        "KAFKA_SASL_SSL_BOOTSTRAP",
        "SASL_SSL",
        "SCRAM-SHA-512",
        "KAFKA_SASL_SCRAM_SHA_512",
    );
    pairs.push(ca);
    let mut c = client(&pairs);
    metadata_ok(&mut c);
}

#[test]
fn certificate_for_the_wrong_host_is_rejected() {
    let Some(_) = broker_or_skip("certificate_for_the_wrong_host_is_rejected") else {
        return;
    };
    let c = client(&[
        ("bootstrap.servers", var("KAFKA_SSL_WRONG_HOST_BOOTSTRAP")),
        ("security.protocol", "SSL".into()),
        ("ssl.ca.pem", pem("KAFKA_SSL_CA_PEM")),
        ("retries", "0".into()),
    ]);
    match c.call(Route::Broker(-1), MetadataRequest::default()) {
        Err(Error::Request(RequestError::Connection(ConnError::Tls(msg)))) => {
            assert!(msg.contains("ertificate"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn plaintext_client_on_the_tls_port_gets_a_typed_error() {
    let Some(_) = broker_or_skip("plaintext_client_on_the_tls_port_gets_a_typed_error") else {
        return;
    };
    let c = client(&[
        ("bootstrap.servers", var("KAFKA_SSL_BOOTSTRAP")),
        ("retries", "0".into()),
    ]);
    match c.call(Route::Broker(-1), MetadataRequest::default()) {
        Err(Error::Request(RequestError::Connection(ConnError::FrameTooLarge {
            size, ..
        }))) => assert!(size > 100 << 20),
        Err(Error::Request(RequestError::Connection(ConnError::Closed(_)))) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn group_coordinator_route_finds_the_coordinator() {
    use kafka_core::protocol::messages::describe_groups::DescribeGroupsRequest;
    let Some(_) = broker_or_skip("group_coordinator_route_finds_the_coordinator") else {
        return;
    };
    let c = client(&[("bootstrap.servers", var("KAFKA_BOOTSTRAP_SERVERS"))]);
    let group = format!("kafka-rs-group-{}", std::process::id());
    // Right after the broker starts, the group's coordinator may still be loading:
    // NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS inside the response; look up again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = DescribeGroupsRequest {
            groups: vec![group.clone()],
            ..Default::default()
        };
        let resp = c
            .call(Route::GroupCoordinator(group.clone()), req)
            .expect("describe groups via the coordinator");
        assert_eq!(resp.groups.len(), 1);
        assert_eq!(resp.groups[0].group_id, group);
        let code = KafkaCode(resp.groups[0].error_code);
        if code.is_retriable() && Instant::now() < deadline {
            let g = group.clone();
            c.with_core(move |core| core.invalidate_coordinator(&g))
                .expect("driver");
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        // The coordinator answered: an unknown group is GROUP_ID_NOT_FOUND on 4.x brokers.
        assert!(
            code == KafkaCode::NONE || code == KafkaCode::GROUP_ID_NOT_FOUND,
            "{code}"
        );
        break;
    }
}
