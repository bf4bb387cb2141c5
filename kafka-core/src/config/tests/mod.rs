//! Config tests: every key, defaults, unknown keys, pairs vs typed. Security in `security.rs`.

mod security;

use std::time::Duration;

use super::*;
use crate::conn::sasl::Mechanism;
use crate::secret::Secret;

pub(super) const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
pub(super) const KEY: &str =
    "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEY\n-----END PRIVATE KEY-----\n";

/// (key, a valid value, an invalid value) for every string key.
const CASES: &[(&str, &str, &str)] = &[
    ("bootstrap.servers", "a:1,[::1]:2", "a"),
    ("client.id", "app-1", "a\nb"),
    ("client.rack", "rack-a", "r\u{7}"),
    ("request.timeout.ms", "5000", "-1"),
    ("default.api.timeout.ms", "15000", "2147483648"),
    ("metadata.max.age.ms", "1000", "abc"),
    ("metadata.max.idle.ms", "5000", "x"),
    ("reconnect.backoff.ms", "10", "-5"),
    ("reconnect.backoff.max.ms", "2000", "1e3"),
    ("retry.backoff.ms", "10", ""),
    ("retry.backoff.max.ms", "2000", "9223372036854775808"),
    ("retries", "3", "2147483648"),
    ("connections.max.idle.ms", "60000", "-1"),
    ("socket.connection.setup.timeout.ms", "100", "x"),
    ("socket.connection.setup.timeout.max.ms", "200", "-200"),
    ("max.in.flight.requests.per.connection", "1", "0"),
    ("receive.message.max.bytes", "1000", "999"),
    (
        "client.dns.lookup",
        "RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY",
        "default",
    ),
    ("security.protocol", "sasl_ssl", "TLS"),
    ("sasl.mechanism", "SCRAM-SHA-512", "GSSAPI"),
    ("sasl.username", "alice", "al\0ice"),
    ("sasl.password", "pa55", "pa\0ss"),
    ("ssl.ca.location", "/etc/ca.pem", ""),
    ("ssl.ca.pem", CERT, "not pem"),
    ("ssl.certificate.location", "client.pem", " "),
    ("ssl.certificate.pem", CERT, KEY),
    ("ssl.key.location", "client.key", ""),
    ("ssl.key.pem", KEY, CERT),
    ("ssl.key.password", "kp", "k\0p"),
    ("ssl.endpoint.identification.algorithm", "", "sha256"),
    ("acks", "1", "2"),
    ("batch.size", "32768", "-1"),
    ("linger.ms", "20", "x"),
    ("buffer.memory", "1048576", "-5"),
    ("compression.type", "lz4", "brotli"),
    ("compression.gzip.level", "6", "0"),
    ("compression.lz4.level", "3", "18"),
    ("compression.zstd.level", "10", "23"),
    ("max.request.size", "2097152", "0"),
    ("enable.idempotence", "false", "yes"),
    ("delivery.timeout.ms", "200000", "-1"),
    ("max.block.ms", "1000", "soon"),
    ("partitioner.ignore.keys", "true", "1"),
    ("transactional.id", "tx-1", "tx\0id"),
    ("transaction.timeout.ms", "30000", "-5"),
    ("auto.offset.reset", "earliest", "oldest"),
    ("fetch.min.bytes", "1024", "-1"),
    ("fetch.max.bytes", "1048576", "x"),
    ("fetch.max.wait.ms", "100", "-3"),
    ("max.partition.fetch.bytes", "65536", "big"),
    ("max.poll.records", "10", "0"),
    ("isolation.level", "read_committed", "serializable"),
    ("queued.max.messages.kbytes", "1024", "0"),
    ("group.id", "g", "a\nb"),
    ("group.instance.id", "i", "a\nb"),
    ("group.protocol", "consumer", "streams"),
    ("share.acknowledgement.mode", "explicit", "manual"),
    ("group.remote.assignor", "range", "r\u{7}"),
    ("session.timeout.ms", "10000", "-1"),
    ("heartbeat.interval.ms", "1000", "-1"),
    ("max.poll.interval.ms", "60000", "-1"),
    (
        "partition.assignment.strategy",
        "roundrobin",
        "com.example.Mine",
    ),
    ("enable.auto.commit", "false", "maybe"),
    ("auto.commit.interval.ms", "1000", "-1"),
    ("exclude.internal.topics", "false", "maybe"),
];

pub(super) fn base() -> ClientConfigBuilder {
    let mut b = ClientConfig::builder();
    b.bootstrap_servers("localhost:9092");
    b
}

#[test]
fn defaults_match_the_java_client() {
    let c = base().build().unwrap();
    let common = c.common();
    assert_eq!(
        c.bootstrap_servers(),
        &[BrokerAddress::new("localhost", 9092)]
    );
    assert_eq!(common.client_id, "kafka-rs");
    assert_eq!(common.client_rack, None);
    assert_eq!(common.client_software_name, "kafka-rs");
    assert_eq!(common.client_software_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(common.request_timeout, Duration::from_millis(30_000));
    assert_eq!(common.metadata_max_age, Duration::from_millis(300_000));
    assert_eq!(common.metadata_max_idle, Duration::from_millis(300_000));
    assert_eq!(common.reconnect_backoff, Duration::from_millis(50));
    assert_eq!(common.reconnect_backoff_max, Duration::from_millis(1_000));
    assert_eq!(common.retry_backoff, Duration::from_millis(100));
    assert_eq!(common.retry_backoff_max, Duration::from_millis(1_000));
    assert_eq!(common.retries, 2_147_483_647);
    assert_eq!(common.connections_max_idle, Duration::from_millis(540_000));
    assert_eq!(
        common.socket_connection_setup_timeout,
        Duration::from_millis(10_000)
    );
    assert_eq!(
        common.socket_connection_setup_timeout_max,
        Duration::from_millis(30_000)
    );
    assert_eq!(common.max_in_flight_requests_per_connection, 5);
    assert_eq!(common.receive_message_max_bytes, 104_857_600);
    assert_eq!(common.client_dns_lookup, ClientDnsLookup::UseAllDnsIps);
    let sec = c.security();
    assert_eq!(sec.protocol, SecurityProtocol::Plaintext);
    assert_eq!(sec.sasl.mechanism, Mechanism::Plain);
    assert_eq!(sec.ssl, SslConfig::default());
    assert_eq!(
        sec.ssl.endpoint_identification,
        EndpointIdentification::Https
    );
    assert!(!sec.ssl.danger_accept_invalid_certs);
}

#[test]
fn documented_defaults_parse_to_the_typed_defaults() {
    let mut b = base();
    for key in ClientConfig::keys() {
        if let Some(default) = key.default() {
            b.set(key.name(), default).unwrap();
        }
    }
    assert_eq!(
        b.build().unwrap().common(),
        base().build().unwrap().common()
    );
}

#[test]
fn every_key_parses_a_valid_value_and_rejects_an_invalid_one() {
    let names: Vec<_> = ClientConfig::keys().map(KeyInfo::name).collect();
    let tested: Vec<_> = CASES.iter().map(|c| c.0).collect();
    assert_eq!(names, tested, "CASES must cover every key, in table order");
    for &(key, good, bad) in CASES {
        let mut b = base();
        b.set(key, good)
            .unwrap_or_else(|e| panic!("{key}={good:?}: {e}"));
        let before = format!("{:?}", b);
        match b.set(key, bad) {
            Err(ConfigError::InvalidValue { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}={bad:?} gave {other:?}"),
        }
        assert_eq!(
            format!("{:?}", b),
            before,
            "{key}: failed set changed the builder"
        );
    }
}

#[test]
fn parsed_values_land_in_the_config() {
    let c = ClientConfig::from_pairs([
        ("bootstrap.servers", "b1:9092, b2:9093"),
        ("client.rack", "use1-az1"),
        ("receive.message.max.bytes", "1048576"),
        (
            "client.dns.lookup",
            "resolve_canonical_bootstrap_servers_only",
        ),
        ("security.protocol", "Ssl"),
        ("ssl.ca.location", "/etc/kafka/ca.pem"),
        ("ssl.endpoint.identification.algorithm", ""),
    ])
    .unwrap();
    assert_eq!(c.bootstrap_servers().len(), 2);
    assert_eq!(c.common().client_rack.as_deref(), Some("use1-az1"));
    assert_eq!(c.common().receive_message_max_bytes, 1 << 20);
    assert_eq!(
        c.common().client_dns_lookup,
        ClientDnsLookup::ResolveCanonicalBootstrapServersOnly
    );
    assert_eq!(c.security().protocol, SecurityProtocol::Ssl);
    let tls = &c.security().ssl;
    assert_eq!(
        tls.ca_location.as_deref(),
        Some(std::path::Path::new("/etc/kafka/ca.pem"))
    );
    assert_eq!(tls.endpoint_identification, EndpointIdentification::None);
}

#[test]
fn unknown_keys_get_a_suggestion_when_close() {
    let err = base().set("bootstrap.server", "a:1").unwrap_err();
    assert_eq!(
        err,
        ConfigError::UnknownKey {
            key: "bootstrap.server".into(),
            suggestion: Some("bootstrap.servers".into()),
        }
    );
    assert!(err
        .to_string()
        .contains("did you mean `bootstrap.servers`?"));
    let err = base().set("reqest.timeout.ms", "1").unwrap_err();
    assert!(
        matches!(err, ConfigError::UnknownKey { suggestion: Some(s), .. } if s == "request.timeout.ms")
    );
    // JAAS text is never supported.
    let err = base().set("sasl.jaas.config", "1").unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
    let err = base().set("totally.unrelated", "1").unwrap_err();
    assert!(matches!(
        err,
        ConfigError::UnknownKey {
            suggestion: None,
            ..
        }
    ));
}

#[test]
fn from_pairs_equals_the_typed_builder() {
    let typed = base()
        .client_id("orders")
        .client_rack("r1")
        .request_timeout(Duration::from_secs(10))
        .metadata_max_age(Duration::from_secs(60))
        .reconnect_backoff(Duration::from_millis(20), Duration::from_secs(2))
        .retry_backoff(Duration::from_millis(30), Duration::from_secs(3))
        .retries(7)
        .connections_max_idle(Duration::from_secs(90))
        .socket_connection_setup_timeout(Duration::from_secs(1), Duration::from_secs(5))
        .max_in_flight_requests_per_connection(1)
        .receive_message_max_bytes(1 << 20)
        .client_dns_lookup(ClientDnsLookup::ResolveCanonicalBootstrapServersOnly)
        .security_protocol(SecurityProtocol::SaslSsl)
        .sasl_scram(Mechanism::ScramSha256, "alice", "pw")
        .ssl_ca_pem(CERT)
        .ssl_client_cert_pem(CERT, KEY)
        .ssl_endpoint_identification(EndpointIdentification::None)
        .build()
        .unwrap();
    let pairs = ClientConfig::from_pairs(vec![
        ("bootstrap.servers".to_owned(), "localhost:9092".to_owned()),
        ("client.id".into(), "orders".into()),
        ("client.rack".into(), "r1".into()),
        ("request.timeout.ms".into(), "10000".into()),
        ("metadata.max.age.ms".into(), "60000".into()),
        ("reconnect.backoff.ms".into(), "20".into()),
        ("reconnect.backoff.max.ms".into(), "2000".into()),
        ("retry.backoff.ms".into(), "30".into()),
        ("retry.backoff.max.ms".into(), "3000".into()),
        ("retries".into(), "7".into()),
        ("connections.max.idle.ms".into(), "90000".into()),
        ("socket.connection.setup.timeout.ms".into(), "1000".into()),
        (
            "socket.connection.setup.timeout.max.ms".into(),
            "5000".into(),
        ),
        ("max.in.flight.requests.per.connection".into(), "1".into()),
        ("receive.message.max.bytes".into(), "1048576".into()),
        (
            "client.dns.lookup".into(),
            "resolve_canonical_bootstrap_servers_only".into(),
        ),
        ("security.protocol".into(), "SASL_SSL".into()),
        ("sasl.mechanism".into(), "SCRAM-SHA-256".into()),
        ("sasl.username".into(), "alice".into()),
        ("sasl.password".into(), "pw".into()),
        ("ssl.ca.pem".into(), CERT.into()),
        ("ssl.certificate.pem".into(), CERT.into()),
        ("ssl.key.pem".into(), KEY.into()),
        ("ssl.endpoint.identification.algorithm".into(), "".into()),
    ])
    .unwrap();
    assert_eq!(typed.common(), pairs.common());
    assert_eq!(typed.security().protocol, pairs.security().protocol);
    assert_eq!(typed.security().ssl, pairs.security().ssl);
    assert_eq!(
        format!("{:?}", typed.security().sasl),
        format!("{:?}", pairs.security().sasl)
    );
    assert_eq!(typed.security().sasl.password, Some(Secret::new("pw")));
}

#[test]
fn bootstrap_is_required_and_parsed() {
    assert_eq!(
        ClientConfig::builder().build().unwrap_err(),
        ConfigError::Missing {
            key: "bootstrap.servers".into()
        }
    );
    let c = ClientConfig::from_pairs([("bootstrap.servers", "[::1]:9092,[fe80::1%eth0]:9093")])
        .unwrap();
    assert_eq!(
        c.bootstrap_servers(),
        &[
            BrokerAddress::new("::1", 9092),
            BrokerAddress::new("fe80::1%eth0", 9093)
        ]
    );
    for bad in ["", ",", "::1:9092", "host"] {
        let err = ClientConfig::from_pairs([("bootstrap.servers", bad)]).unwrap_err();
        assert!(
            matches!(err, ConfigError::InvalidValue { .. }),
            "{bad:?}: {err:?}"
        );
    }
    // The typed setter defers the check to `build`.
    let mut b = ClientConfig::builder();
    b.bootstrap_servers("nope");
    assert!(matches!(b.build(), Err(ConfigError::InvalidValue { .. })));
}

#[test]
fn typed_values_are_range_checked_by_build() {
    let invalid_key = |b: &ClientConfigBuilder| match b.build() {
        Err(ConfigError::InvalidValue { key, .. }) => key,
        other => panic!("expected InvalidValue, got {other:?}"),
    };
    assert_eq!(
        invalid_key(base().max_in_flight_requests_per_connection(0)),
        "max.in.flight.requests.per.connection"
    );
    assert_eq!(
        invalid_key(base().receive_message_max_bytes(10)),
        "receive.message.max.bytes"
    );
    assert_eq!(
        invalid_key(base().request_timeout(Duration::from_secs(1 << 40))),
        "request.timeout.ms"
    );
    assert_eq!(invalid_key(base().client_id("bad\nid")), "client.id");
    assert!(invalid_key(base().client_software("my app", "1.0")).contains("client_software"));
    base()
        .client_software("my-app", "1.2.3-rc.1")
        .build()
        .unwrap();
}

#[test]
fn errors_read_well() {
    let err = ConfigError::InvalidValue {
        key: "retries".into(),
        value: "x".into(),
        reason: "bad".into(),
    };
    assert_eq!(err.to_string(), "invalid value `x` for `retries`: bad");
    assert_eq!(
        ConfigError::missing("a").to_string(),
        "missing required setting `a`"
    );
    assert_eq!(
        ConfigError::conflict("c").to_string(),
        "conflicting settings: c"
    );
}

#[test]
fn a_transactional_id_implies_idempotence_and_refuses_it_off() {
    let c = base()
        .set("transactional.id", "tx")
        .unwrap()
        .build()
        .unwrap();
    assert!(c.producer().idempotent(c.common()));
    assert_eq!(c.producer().transactional_id.as_deref(), Some("tx"));
    // acks=1 would silently turn idempotence off; with a transactional id it is an error.
    let err = base()
        .set("transactional.id", "tx")
        .unwrap()
        .set("acks", "1")
        .unwrap()
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("acks"), "{err}");
    let err = base()
        .set("transactional.id", "tx")
        .unwrap()
        .set("enable.idempotence", "false")
        .unwrap()
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("enable.idempotence"), "{err}");
}

#[test]
fn auto_offset_reset_by_duration_reads_iso_durations_as_java_does() {
    let reset = |v: &str| {
        base()
            .set("auto.offset.reset", v)
            .map(|b| b.build().unwrap().consumer().auto_offset_reset)
    };
    let by = |secs: u64, nanos: u32| Ok(OffsetReset::ByDuration(Duration::new(secs, nanos)));
    assert_eq!(reset("by_duration:PT1H"), by(3_600, 0));
    assert_eq!(reset("by_duration:P1DT2H3M4.5S"), by(93_784, 500_000_000));
    assert_eq!(reset("by_duration:pt30m"), by(1_800, 0));
    assert_eq!(reset("by_duration:P2D"), by(172_800, 0));
    assert_eq!(reset("by_duration:PT0.000000001S"), by(0, 1));
    assert_eq!(reset("by_duration:PT0S"), by(0, 0));
    for bad in [
        "by_duration",
        "by_duration:",
        "by_duration:P",
        "by_duration:PT",
        "by_duration:1H",
        "by_duration:-PT1H",
        "by_duration:PT-1H",
        "by_duration:P1W",
        "by_duration:PT1S5M",
        "by_duration:PT1.0000000001S",
        "by_duration:P99999999999999999999D",
    ] {
        assert!(reset(bad).is_err(), "{bad} was accepted");
    }
}
