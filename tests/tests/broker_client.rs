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
        Err(Error::Request(RequestError::Connection(ConnError::Tls(
            kafka_core::conn::TlsFailure::Certificate(msg),
        )))) => assert!(!msg.is_empty()),
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
        // The broker's TLS alert where a frame size should be, or a plain close.
        Err(Error::Request(RequestError::Connection(ConnError::TlsOnPlaintext {
            record_type,
        }))) => assert!(matches!(record_type, 21 | 22)),
        Err(Error::Request(RequestError::Connection(ConnError::Socket { .. }))) => {}
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

/// Creates a one-partition topic and waits until its leader serves it; returns its id.
fn one_partition_topic(c: &BlockingClient, topic: &str) -> kafka_core::protocol::Uuid {
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = c.call(Route::Controller, create).expect("create topics");
    assert_eq!(KafkaCode(resp.topics[0].error_code), KafkaCode::NONE);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = topic.to_string();
        c.with_core(move |core| core.request_metadata(Instant::now(), [t]))
            .expect("driver");
        let t = topic.to_string();
        let known = c
            .with_core(move |core| {
                core.metadata()
                    .topic(&t)
                    .filter(|i| {
                        i.id != kafka_core::protocol::Uuid::ZERO && i.partitions.contains_key(&0)
                    })
                    .map(|i| i.id)
            })
            .expect("driver");
        if let Some(id) = known {
            return id;
        }
        assert!(Instant::now() < deadline, "{topic} never got a leader");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn lanes_a_long_poll_fetch_does_not_delay_other_requests_to_the_same_broker() {
    use kafka_core::protocol::messages::fetch::request::{FetchPartition, FetchTopic};
    use kafka_core::protocol::messages::fetch::FetchRequest;
    let Some(_) =
        broker_or_skip("lanes_a_long_poll_fetch_does_not_delay_other_requests_to_the_same_broker")
    else {
        return;
    };
    let c = client(&[("bootstrap.servers", var("KAFKA_BOOTSTRAP_SERVERS"))]);
    let topic = format!("lanes-{}", std::process::id());
    let topic_id = one_partition_topic(&c, &topic);
    // An empty partition and min_bytes 1: the broker holds the Fetch for max_wait_ms.
    let hold = Duration::from_millis(4000);
    let fetch = FetchRequest {
        max_wait_ms: hold.as_millis() as i32,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: String::new(),
            topic_id,
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let route = Route::Leader {
        topic: topic.clone(),
        partition: 0,
    };
    let c = &c;
    std::thread::scope(|s| {
        let started = Instant::now();
        let long_poll = s.spawn(move || {
            let resp = c.call(route, fetch).expect("fetch");
            (resp, started.elapsed())
        });
        // While the Fetch is held by the broker, requests of the default lane to the
        // same (only) broker answer at once: they travel on another connection.
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..5 {
            let t0 = Instant::now();
            let m = c
                .call(Route::Any, MetadataRequest::default())
                .expect("metadata");
            assert_eq!(m.brokers.len(), 1);
            assert!(
                t0.elapsed() < Duration::from_millis(1500),
                "metadata took {:?} behind a held Fetch",
                t0.elapsed()
            );
        }
        assert!(
            started.elapsed() < hold,
            "the metadata calls must have run while the Fetch was held"
        );
        let conns = c
            .with_core(|core| core.connections().count())
            .expect("driver");
        assert!(conns >= 2, "one broker, two lanes: {conns} connections");
        let (resp, took) = long_poll.join().expect("fetch thread");
        assert_eq!(KafkaCode(resp.error_code), KafkaCode::NONE);
        assert!(
            took >= hold - Duration::from_millis(500),
            "the broker held the Fetch only {took:?}"
        );
    });
}

#[test]
fn reauthentication_keeps_the_connection_past_the_session_lifetime() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let Some(_) = broker_or_skip("reauthentication_keeps_the_connection_past_the_session_lifetime")
    else {
        return;
    };
    // The REAUTH listener ends SASL sessions after KAFKA_REAUTH_MS; a connection that does
    // not re-authenticate (KIP-368) is closed by the broker at its next request.
    let lifetime = Duration::from_millis(var("KAFKA_REAUTH_MS").parse().expect("KAFKA_REAUTH_MS"));
    // The listener does set a session lifetime (so the test below can fail): a bare
    // PLAIN exchange is told it in SaslAuthenticate's answer.
    {
        use kafka_core::protocol::messages::sasl_authenticate::SaslAuthenticateRequest;
        use kafka_core::protocol::messages::sasl_handshake::SaslHandshakeRequest;
        let mut raw =
            kafka_tests::RawClient::connect(&var("KAFKA_REAUTH_BOOTSTRAP")).expect("connect");
        let hs = SaslHandshakeRequest {
            mechanism: "PLAIN".into(),
            ..Default::default()
        };
        let hs = raw.call(1, &hs).expect("SaslHandshake");
        assert_eq!(KafkaCode(hs.error_code), KafkaCode::NONE);
        let token = format!(
            "\0{}\0{}",
            var("KAFKA_SASL_PLAIN_USERNAME"),
            var("KAFKA_SASL_PLAIN_PASSWORD")
        );
        let auth = SaslAuthenticateRequest {
            auth_bytes: token.into_bytes().into(),
            ..Default::default()
        };
        let auth = raw.call(1, &auth).expect("SaslAuthenticate");
        assert_eq!(KafkaCode(auth.error_code), KafkaCode::NONE);
        assert!(
            auth.session_lifetime_ms > 0 && auth.session_lifetime_ms <= lifetime.as_millis() as i64,
            "session lifetime {} ms",
            auth.session_lifetime_ms
        );
    }
    for (mechanism, user) in [
        ("PLAIN", "KAFKA_SASL_PLAIN"),
        ("SCRAM-SHA-256", "KAFKA_SASL_SCRAM_SHA_256"),
        ("SCRAM-SHA-512", "KAFKA_SASL_SCRAM_SHA_512"),
    ] {
        let c = client(&sasl(
            "KAFKA_REAUTH_BOOTSTRAP",
            "SASL_PLAINTEXT",
            mechanism,
            user,
        ));
        let failures = Arc::new(AtomicUsize::new(0));
        let f = failures.clone();
        c.on_notice(move |n| {
            if let kafka_driver::Notice::ConnectionFailed { .. } = n {
                f.fetch_add(1, Ordering::SeqCst);
            }
        })
        .expect("on_notice");
        c.call(Route::Any, MetadataRequest::default())
            .expect("first metadata");
        let before: Vec<_> = c
            .with_core(|core| core.connections().collect::<Vec<_>>())
            .expect("driver");
        // Requests over three session lifetimes, on the same connections.
        let end = Instant::now() + lifetime * 3 + Duration::from_millis(500);
        let mut calls = 0;
        while Instant::now() < end {
            c.call(Route::Any, MetadataRequest::default())
                .unwrap_or_else(|e| panic!("{mechanism}: metadata after {calls} calls: {e}"));
            calls += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        let after: Vec<_> = c
            .with_core(|core| core.connections().collect::<Vec<_>>())
            .expect("driver");
        assert_eq!(
            failures.load(Ordering::SeqCst),
            0,
            "{mechanism}: a connection failed (not re-authenticated in time?)"
        );
        assert_eq!(
            before, after,
            "{mechanism}: the connections changed: the session was not renewed in place"
        );
        assert!(calls > 10, "{mechanism}: only {calls} calls");
    }
}
