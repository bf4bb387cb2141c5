//! Every config key `ClientConfig` accepts is real: set to a non-default value it
//! changes its field of the built config, and some code outside `config/` reads that
//! field. Keys parsed but not acted on would be listed in [`KNOWN_UNUSED`] with the
//! reason; the list is empty and stays so: a new accepted-but-unused key fails this test.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kafka_core::config::{
    Acks, ClientConfig, ClientDnsLookup, EndpointIdentification, GroupProtocol, IsolationLevel,
    OffsetReset, SecurityProtocol, ShareAcknowledgementMode,
};
use kafka_core::conn::sasl::Mechanism;
use kafka_core::record::Compression;

/// Keys accepted and parsed, but read by nothing yet: (key, why). Empty: every key is
/// read (`socket.connection.setup.timeout.max.ms` caps the core's per-attempt setup
/// timeout since it grows per failed attempt).
const KNOWN_UNUSED: &[(&str, &str)] = &[];

const CA_PEM: &str = include_str!("../../kafka-core/src/conn/tls/testdata/ca.pem");
const CLIENT_PEM: &str = include_str!("../../kafka-core/src/conn/tls/testdata/client.pem");
const CLIENT_KEY: &str = include_str!("../../kafka-core/src/conn/tls/testdata/client.key");
const ENCRYPTED_KEY: &str =
    include_str!("../../kafka-core/src/conn/tls/testdata/client-encrypted.key");

/// How one key is exercised.
struct Effect {
    key: &'static str,
    /// A valid, non-default value.
    value: &'static str,
    /// Other pairs the value needs to build (a certificate needs its key, ...).
    with: &'static [(&'static str, &'static str)],
    /// Whether the built config shows the value (compared with the defaults).
    shows: fn(&ClientConfig) -> bool,
    /// The field a consumer outside `config/` reads (`.name` in its source), or `None`
    /// with the reason when the config consumes the key itself.
    read_as: Result<&'static str, &'static str>,
}

const fn e(
    key: &'static str,
    value: &'static str,
    shows: fn(&ClientConfig) -> bool,
    read_as: &'static str,
) -> Effect {
    Effect {
        key,
        value,
        with: &[],
        shows,
        read_as: Ok(read_as),
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn effects() -> Vec<Effect> {
    vec![
        e(
            "bootstrap.servers",
            "other:1234",
            |c| c.bootstrap_servers()[0].host == "other" && c.bootstrap_servers()[0].port == 1234,
            "bootstrap_servers",
        ),
        e(
            "client.id",
            "app-7",
            |c| c.common().client_id == "app-7",
            "client_id",
        ),
        e(
            "client.rack",
            "rack-a",
            |c| c.common().client_rack.as_deref() == Some("rack-a"),
            "client_rack",
        ),
        e(
            "request.timeout.ms",
            "1234",
            |c| c.common().request_timeout == ms(1234),
            "request_timeout",
        ),
        e(
            "default.api.timeout.ms",
            "1234",
            |c| c.common().default_api_timeout == ms(1234),
            "default_api_timeout",
        ),
        e(
            "metadata.max.age.ms",
            "1234",
            |c| c.common().metadata_max_age == ms(1234),
            "metadata_max_age",
        ),
        e(
            "metadata.max.idle.ms",
            "4321",
            |c| c.common().metadata_max_idle == ms(4321),
            "metadata_max_idle",
        ),
        e(
            "reconnect.backoff.ms",
            "7",
            |c| c.common().reconnect_backoff == ms(7),
            "reconnect_backoff",
        ),
        e(
            "reconnect.backoff.max.ms",
            "7777",
            |c| c.common().reconnect_backoff_max == ms(7777),
            "reconnect_backoff_max",
        ),
        e(
            "retry.backoff.ms",
            "7",
            |c| c.common().retry_backoff == ms(7),
            "retry_backoff",
        ),
        e(
            "retry.backoff.max.ms",
            "7777",
            |c| c.common().retry_backoff_max == ms(7777),
            "retry_backoff_max",
        ),
        e("retries", "3", |c| c.common().retries == 3, "retries"),
        e(
            "connections.max.idle.ms",
            "1234",
            |c| c.common().connections_max_idle == ms(1234),
            "connections_max_idle",
        ),
        e(
            "socket.connection.setup.timeout.ms",
            "1234",
            |c| c.common().socket_connection_setup_timeout == ms(1234),
            "socket_connection_setup_timeout",
        ),
        e(
            "socket.connection.setup.timeout.max.ms",
            "4321",
            |c| c.common().socket_connection_setup_timeout_max == ms(4321),
            "socket_connection_setup_timeout_max",
        ),
        e(
            "max.in.flight.requests.per.connection",
            "2",
            |c| c.common().max_in_flight_requests_per_connection == 2,
            "max_in_flight_requests_per_connection",
        ),
        e(
            "receive.message.max.bytes",
            "1000000",
            |c| c.common().receive_message_max_bytes == 1_000_000,
            "receive_message_max_bytes",
        ),
        e(
            "client.dns.lookup",
            "resolve_canonical_bootstrap_servers_only",
            |c| {
                c.common().client_dns_lookup
                    == ClientDnsLookup::ResolveCanonicalBootstrapServersOnly
            },
            "client_dns_lookup",
        ),
        e(
            "security.protocol",
            "SSL",
            |c| c.security().protocol == SecurityProtocol::Ssl,
            "protocol",
        ),
        e(
            "sasl.mechanism",
            "SCRAM-SHA-512",
            |c| c.security().sasl.mechanism == Mechanism::ScramSha512,
            "mechanism",
        ),
        e(
            "sasl.username",
            "alice",
            |c| c.security().sasl.username.as_deref() == Some("alice"),
            "username",
        ),
        e(
            "sasl.password",
            "pa55",
            |c| c.security().sasl.password.as_ref().map(|p| p.expose()) == Some("pa55"),
            "password",
        ),
        e(
            "ssl.ca.location",
            "/etc/ca.pem",
            |c| c.security().ssl.ca_location == Some(PathBuf::from("/etc/ca.pem")),
            "ca_location",
        ),
        e(
            "ssl.ca.pem",
            CA_PEM,
            |c| c.security().ssl.ca_pem.as_deref() == Some(CA_PEM),
            "ca_pem",
        ),
        Effect {
            key: "ssl.certificate.location",
            value: "/etc/client.pem",
            with: &[("ssl.key.location", "/etc/client.key")],
            shows: |c| {
                c.security().ssl.certificate_location == Some(PathBuf::from("/etc/client.pem"))
            },
            read_as: Ok("certificate_location"),
        },
        Effect {
            key: "ssl.certificate.pem",
            value: CLIENT_PEM,
            with: &[("ssl.key.pem", CLIENT_KEY)],
            shows: |c| c.security().ssl.certificate_pem.as_deref() == Some(CLIENT_PEM),
            read_as: Ok("certificate_pem"),
        },
        Effect {
            key: "ssl.key.location",
            value: "/etc/client.key",
            with: &[("ssl.certificate.location", "/etc/client.pem")],
            shows: |c| c.security().ssl.key_location == Some(PathBuf::from("/etc/client.key")),
            read_as: Ok("key_location"),
        },
        Effect {
            key: "ssl.key.pem",
            value: CLIENT_KEY,
            with: &[("ssl.certificate.pem", CLIENT_PEM)],
            shows: |c| c.security().ssl.key_pem.as_ref().map(|k| k.expose()) == Some(CLIENT_KEY),
            read_as: Ok("key_pem"),
        },
        Effect {
            key: "ssl.key.password",
            value: "kafka-rs-test",
            with: &[
                ("ssl.certificate.pem", CLIENT_PEM),
                ("ssl.key.pem", ENCRYPTED_KEY),
            ],
            // The key arrives decrypted.
            shows: |c| {
                let key = c.security().ssl.key_pem.as_ref().map(|k| k.expose());
                key.is_some_and(|k| k.starts_with("-----BEGIN PRIVATE KEY-----"))
            },
            read_as: Err("consumed by the config itself: the key is decrypted at build/load"),
        },
        e(
            "ssl.endpoint.identification.algorithm",
            "",
            |c| c.security().ssl.endpoint_identification == EndpointIdentification::None,
            "endpoint_identification",
        ),
        e("acks", "1", |c| c.producer().acks == Acks::Leader, "acks"),
        e(
            "batch.size",
            "1000",
            |c| c.producer().batch_size == 1000,
            "batch_size",
        ),
        e(
            "linger.ms",
            "77",
            |c| c.producer().linger == ms(77),
            "linger",
        ),
        e(
            "buffer.memory",
            "2000000",
            |c| c.producer().buffer_memory == 2_000_000,
            "buffer_memory",
        ),
        e(
            "compression.type",
            "zstd",
            |c| c.producer().compression == Compression::Zstd,
            "compression",
        ),
        Effect {
            key: "compression.gzip.level",
            value: "4",
            with: &[("compression.type", "gzip")],
            shows: |c| c.producer().compression_level() == Some(4),
            read_as: Ok("compression_level"),
        },
        Effect {
            key: "compression.lz4.level",
            value: "4",
            with: &[("compression.type", "lz4")],
            shows: |c| c.producer().compression_level() == Some(4),
            read_as: Ok("compression_level"),
        },
        Effect {
            key: "compression.zstd.level",
            value: "7",
            with: &[("compression.type", "zstd")],
            shows: |c| c.producer().compression_level() == Some(7),
            read_as: Ok("compression_level"),
        },
        e(
            "max.request.size",
            "5000000",
            |c| c.producer().max_request_size == 5_000_000,
            "max_request_size",
        ),
        e(
            "enable.idempotence",
            "false",
            |c| !c.producer().idempotent(c.common()),
            "idempotent",
        ),
        e(
            "delivery.timeout.ms",
            "300000",
            |c| c.producer().delivery_timeout == ms(300_000),
            "delivery_timeout",
        ),
        e(
            "max.block.ms",
            "1234",
            |c| c.producer().max_block == ms(1234),
            "max_block",
        ),
        e(
            "partitioner.ignore.keys",
            "true",
            |c| c.producer().partitioner_ignore_keys,
            "partitioner_ignore_keys",
        ),
        e(
            "transactional.id",
            "tx-1",
            |c| c.producer().transactional_id.as_deref() == Some("tx-1"),
            "transactional_id",
        ),
        e(
            "transaction.timeout.ms",
            "30000",
            |c| c.producer().transaction_timeout == Duration::from_secs(30),
            "transaction_timeout",
        ),
        e(
            "auto.offset.reset",
            "earliest",
            |c| c.consumer().auto_offset_reset == OffsetReset::Earliest,
            "auto_offset_reset",
        ),
        e(
            "fetch.min.bytes",
            "1024",
            |c| c.consumer().fetch_min_bytes == 1024,
            "fetch_min_bytes",
        ),
        e(
            "fetch.max.bytes",
            "1048576",
            |c| c.consumer().fetch_max_bytes == 1_048_576,
            "fetch_max_bytes",
        ),
        e(
            "fetch.max.wait.ms",
            "100",
            |c| c.consumer().fetch_max_wait == ms(100),
            "fetch_max_wait",
        ),
        e(
            "max.partition.fetch.bytes",
            "65536",
            |c| c.consumer().max_partition_fetch_bytes == 65_536,
            "max_partition_fetch_bytes",
        ),
        e(
            "max.poll.records",
            "10",
            |c| c.consumer().max_poll_records == 10,
            "max_poll_records",
        ),
        e(
            "isolation.level",
            "read_committed",
            |c| c.consumer().isolation_level == IsolationLevel::ReadCommitted,
            "isolation_level",
        ),
        e(
            "queued.max.messages.kbytes",
            "1024",
            |c| c.consumer().queued_max_kbytes == 1024,
            "queued_max_kbytes",
        ),
        e(
            "group.id",
            "g",
            |c| c.group().group_id.as_deref() == Some("g"),
            "group_id",
        ),
        e(
            "group.instance.id",
            "i",
            |c| c.group().group_instance_id.as_deref() == Some("i"),
            "group_instance_id",
        ),
        e(
            "group.protocol",
            "consumer",
            |c| c.group().group_protocol == GroupProtocol::Consumer,
            "group_protocol",
        ),
        e(
            "share.acknowledgement.mode",
            "explicit",
            |c| c.group().share_acknowledgement_mode == ShareAcknowledgementMode::Explicit,
            "share_acknowledgement_mode",
        ),
        e(
            "group.remote.assignor",
            "range",
            |c| c.group().remote_assignor.as_deref() == Some("range"),
            "remote_assignor",
        ),
        e(
            "session.timeout.ms",
            "10000",
            |c| c.group().session_timeout == Duration::from_secs(10),
            "session_timeout",
        ),
        e(
            "heartbeat.interval.ms",
            "1000",
            |c| c.group().heartbeat_interval == Duration::from_secs(1),
            "heartbeat_interval",
        ),
        e(
            "max.poll.interval.ms",
            "60000",
            |c| c.group().max_poll_interval == Duration::from_secs(60),
            "max_poll_interval",
        ),
        e(
            "partition.assignment.strategy",
            "roundrobin",
            |c| c.group().assignment_strategy == ["roundrobin"],
            "assignment_strategy",
        ),
        e(
            "enable.auto.commit",
            "false",
            |c| !c.group().enable_auto_commit,
            "enable_auto_commit",
        ),
        e(
            "auto.commit.interval.ms",
            "1000",
            |c| c.group().auto_commit_interval == Duration::from_secs(1),
            "auto_commit_interval",
        ),
        e(
            "exclude.internal.topics",
            "false",
            |c| !c.group().exclude_internal_topics,
            "exclude_internal_topics",
        ),
    ]
}

/// Rust sources outside `kafka-core/src/config/` that act on the config: the core and
/// every adapter, without test code.
fn consumer_sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if matches!(
                name,
                "tests" | "tests.rs" | "test_support.rs" | "testdata" | "config"
            ) {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for krate in [
        "kafka-core",
        "kafka-driver",
        "kafka-blocking",
        "kafka-tokio",
        "kafka-async-std",
        "kafka-mio",
    ] {
        walk(&root.join(krate).join("src"), &mut out);
    }
    out
}

/// Whether `.field` (not a longer name) appears in `text`.
fn reads_field(text: &str, field: &str) -> bool {
    let needle = format!(".{field}");
    text.match_indices(&needle).any(|(at, _)| {
        let next = text[at + needle.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn every_accepted_key_has_an_effect_and_a_reader() {
    let effects = effects();
    let keys: Vec<&str> = ClientConfig::keys().map(|k| k.name()).collect();
    let covered: Vec<&str> = effects.iter().map(|e| e.key).collect();
    assert_eq!(
        keys, covered,
        "effects() must cover every key, in table order"
    );

    let base = ClientConfig::from_pairs([("bootstrap.servers", "localhost:9092")]).unwrap();
    let sources = consumer_sources();
    assert!(
        sources.len() > 50,
        "found only {} source files",
        sources.len()
    );
    let mut problems = Vec::new();
    for e in &effects {
        // The value changes the config, and the default does not show it.
        let mut pairs = vec![("bootstrap.servers", "localhost:9092")];
        pairs.extend_from_slice(e.with);
        pairs.push((e.key, e.value));
        match ClientConfig::from_pairs(pairs) {
            Ok(c) if (e.shows)(&c) && !(e.shows)(&base) => {}
            Ok(_) => problems.push(format!("{}: no visible effect", e.key)),
            Err(err) => problems.push(format!("{}: refused: {err}", e.key)),
        }
        // Something outside config/ reads it, unless it is known not to be.
        let unused_reason = KNOWN_UNUSED.iter().find(|u| u.0 == e.key).map(|u| u.1);
        match (e.read_as, unused_reason) {
            (Ok(field), reason) => {
                let readers: Vec<_> = sources
                    .iter()
                    .filter(|(_, text)| reads_field(text, field))
                    .map(|(path, _)| path.display().to_string())
                    .collect();
                match (readers.is_empty(), reason) {
                    (true, None) => problems.push(format!(
                        "{}: accepted, but nothing outside config/ reads `.{field}`: wire it \
                         or list it in KNOWN_UNUSED with the reason",
                        e.key
                    )),
                    (false, Some(_)) => problems.push(format!(
                        "{}: now read by {readers:?}: take it off KNOWN_UNUSED",
                        e.key
                    )),
                    _ => {}
                }
            }
            (Err(_), Some(_)) => problems.push(format!(
                "{}: consumed by the config itself, so not unused",
                e.key
            )),
            (Err(_), None) => {}
        }
    }
    for (key, _) in KNOWN_UNUSED {
        if !keys.contains(key) {
            problems.push(format!("KNOWN_UNUSED lists `{key}`, which is not a key"));
        }
    }
    // It was emptied when the last key got wired: it stays empty.
    assert!(KNOWN_UNUSED.is_empty(), "KNOWN_UNUSED may only shrink");
    for (key, reason) in KNOWN_UNUSED {
        eprintln!("known unused: {key}: {reason}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn unknown_and_malformed_keys_are_refused_with_the_key_named() {
    // Keys whose section does not exist (or never will) are refused.
    for key in ["ssl.keystore.location", "sasl.jaas.config"] {
        let err = ClientConfig::from_pairs([("bootstrap.servers", "b:1"), (key, "x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains(key) && err.contains("unknown"), "{err}");
    }
}
