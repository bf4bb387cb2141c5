//! Say why and fail fast: a timeout names the last cause; causes retrying cannot fix end
//! a call at once. Scripted brokers that refuse, break the protocol or reject
//! credentials, on a virtual clock.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::*;
use crate::admin::{AdminError, DescribeCluster, ListOffsets, OffsetSpec, TopicPartition};
use crate::protocol::messages::describe_cluster::DescribeClusterResponse;
use crate::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::messages::sasl_authenticate::SaslAuthenticateResponse;
use crate::protocol::messages::sasl_handshake::SaslHandshakeResponse;
use crate::protocol::{ApiKey, KafkaCode, Message};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

/// What a scripted broker does with one request.
enum Act {
    /// Sends these bytes back.
    Bytes(Vec<u8>),
    /// Says nothing.
    Silent,
}

fn reply<M: Message>(seen: &Seen, body: &M) -> Act {
    Act::Bytes(response_frame(seen, body, seen.version()))
}

/// The normal answer to ApiVersions.
fn versions(seen: &Seen) -> Act {
    reply(seen, &broker_versions())
}

/// A frame with the request's correlation id and `body` after the response header (no
/// valid response: a truncated or garbage body).
fn raw_body(seen: &Seen, body: &[u8]) -> Act {
    let mut frame = ((4 + body.len()) as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&seen.header.correlation_id.to_be_bytes());
    frame.extend_from_slice(body);
    Act::Bytes(frame)
}

/// One broker that knows itself as node 1 at `boot:9092`.
fn one_broker() -> MetadataResponse {
    MetadataResponse {
        brokers: vec![MetadataResponseBroker {
            node_id: 1,
            host: "boot".into(),
            port: 9092,
            ..Default::default()
        }],
        controller_id: 1,
        cluster_id: Some("c".into()),
        ..Default::default()
    }
}

/// What a run saw.
struct Run<T> {
    output: T,
    /// Virtual time from the start to the output.
    took: Duration,
    /// Connect commands, by host.
    connects: BTreeMap<String, u32>,
    /// Connections the client closed.
    closes: u32,
    events: Vec<Event>,
}

/// Runs `op` on a client with `config` until it finishes: `connect(host)` accepts or
/// refuses each socket, `answer(host, request)` scripts every request (ApiVersions
/// included). Time jumps to the client's next timeout whenever nothing is written.
fn run<O: Operation>(
    config: &[(&str, &str)],
    op: O,
    mut connect: impl FnMut(&str) -> Result<(), SocketError>,
    mut answer: impl FnMut(&str, &Seen) -> Act,
) -> Run<O::Output> {
    let config = ClientConfig::from_pairs(config.iter().copied()).expect("config");
    let mut client = Client::new(config, [3; 32]).expect("client");
    let start = origin();
    let mut now = start;
    let id = client.start_op(now, op);
    let mut open: BTreeMap<ConnId, String> = BTreeMap::new();
    let (mut connects, mut closes, mut events) = (BTreeMap::new(), 0, Vec::new());
    for _ in 0..5_000 {
        while let Some(cmd) = client.poll_io() {
            match cmd {
                IoCommand::Connect { conn, host, .. } => {
                    *connects.entry(host.clone()).or_insert(0) += 1;
                    match connect(&host) {
                        Ok(()) => {
                            open.insert(conn, host);
                            client.handle_connected(now, conn);
                        }
                        Err(e) => client.handle_closed(now, conn, e),
                    }
                }
                IoCommand::Close { conn } => {
                    closes += 1;
                    open.remove(&conn);
                }
            }
        }
        let mut wrote = false;
        for (conn, host) in open.clone() {
            let mut out = Vec::new();
            client.poll_transmit(now, conn, &mut out);
            for seen in parse_requests(out) {
                wrote = true;
                if let Act::Bytes(b) = answer(&host, &seen) {
                    client.handle_received(now, conn, &b);
                }
            }
        }
        while let Some(e) = client.poll_event() {
            events.push(e);
        }
        if let Some(output) = client.take_op_output(id) {
            return Run {
                output,
                took: now - start,
                connects,
                closes,
                events,
            };
        }
        if !wrote {
            now = client
                .poll_timeout()
                .expect("a timer while the op runs")
                .max(now);
            client.handle_timeout(now);
        }
    }
    panic!("operation did not finish");
}

/// [`one_broker`] leading partition 0 of topic `t`.
fn topic_t() -> MetadataResponse {
    MetadataResponse {
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            partitions: vec![MetadataResponsePartition {
                partition_index: 0,
                leader_id: 1,
                leader_epoch: 1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..one_broker()
    }
}

/// Every asked partition answered with `error` (offset 42 when none).
fn offsets(req: &ListOffsetsRequest, error: i16) -> ListOffsetsResponse {
    ListOffsetsResponse {
        topics: req
            .topics
            .iter()
            .map(|t| ListOffsetsTopicResponse {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error,
                        offset: 42,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

const BOOT: &[(&str, &str)] = &[("bootstrap.servers", "boot:9092"), ("client.id", "t")];

fn described(seen: &Seen) -> Act {
    match seen.api() {
        ApiKey::ApiVersions => versions(seen),
        ApiKey::DescribeCluster => reply(
            seen,
            &DescribeClusterResponse {
                cluster_id: "c".into(),
                ..Default::default()
            },
        ),
        ApiKey::Metadata => reply(seen, &one_broker()),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_timeout_names_the_refused_connection() {
    let op = DescribeCluster::new().timeout(Duration::from_secs(5));
    let r = run(BOOT, op, |_| Err(SocketError::Refused), |_, _| Act::Silent);
    let err = r.output.expect_err("nothing listens");
    assert_eq!(
        err.to_string(),
        "timed out after 5 s; last cause: connection to boot:9092 refused"
    );
    match err {
        AdminError::Timeout {
            after,
            last_cause: Some(cause),
        } => {
            assert_eq!(after, Duration::from_secs(5));
            assert_eq!(
                *cause,
                Cause::Connection(ConnError::Socket {
                    addr: "boot:9092".into(),
                    error: SocketError::Refused,
                })
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.took, Duration::from_secs(5), "refused is retriable");
    assert!(r.connects["boot"] > 3, "reconnected with backoff meanwhile");
}

#[test]
fn a_timeout_names_the_last_retriable_code() {
    // The leader keeps answering LEADER_NOT_AVAILABLE: the fan-out looks it up again
    // until the deadline, and says why.
    let op = ListOffsets::new([(TopicPartition::new("t", 0), OffsetSpec::Latest)])
        .timeout(Duration::from_secs(3));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => versions(seen),
            ApiKey::Metadata => reply(seen, &topic_t()),
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                reply(seen, &offsets(&req, KafkaCode::LEADER_NOT_AVAILABLE.0))
            }
            other => panic!("unexpected {other:?}"),
        },
    );
    let err = r.output.expect("per partition")[&TopicPartition::new("t", 0)]
        .clone()
        .expect_err("never available");
    assert!(
        err.to_string()
            .starts_with("timed out after 3 s; last cause: LEADER_NOT_AVAILABLE (5)"),
        "{err}"
    );
}

#[test]
fn an_authentication_failure_ends_the_call_at_once_with_the_brokers_message() {
    let sasl = [
        ("bootstrap.servers", "boot:9092"),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "alice"),
        ("sasl.password", "wrong"),
    ];
    let answer = |_: &str, seen: &Seen| match seen.api() {
        ApiKey::ApiVersions => versions(seen),
        ApiKey::SaslHandshake => reply(
            seen,
            &SaslHandshakeResponse {
                mechanisms: vec!["PLAIN".into()],
                ..Default::default()
            },
        ),
        ApiKey::SaslAuthenticate => reply(
            seen,
            &SaslAuthenticateResponse {
                error_code: KafkaCode::SASL_AUTHENTICATION_FAILED.0,
                error_message: Some("Invalid username or password".into()),
                ..Default::default()
            },
        ),
        other => panic!("unexpected {other:?}"),
    };
    let op = DescribeCluster::new().timeout(Duration::from_secs(30));
    let r = run(&sasl, op, |_| Ok(()), answer);
    let err = r.output.expect_err("bad password");
    assert_eq!(r.took, Duration::ZERO, "{err}");
    assert!(!err.is_retriable());
    assert_eq!(
        err.to_string(),
        "connection failed: authentication failed (PLAIN): Invalid username or password"
    );
    // A call waiting on metadata (the fan-out's leader lookup) ends at once too.
    let op = ListOffsets::new([(TopicPartition::new("t", 0), OffsetSpec::Latest)])
        .timeout(Duration::from_secs(30));
    let r = run(&sasl, op, |_| Ok(()), answer);
    let result = r.output.expect("per partition");
    let err = result[&TopicPartition::new("t", 0)]
        .clone()
        .expect_err("bad password");
    assert_eq!(r.took, Duration::ZERO, "{err}");
    assert!(
        err.to_string().contains("Invalid username or password"),
        "{err}"
    );
}

#[test]
fn an_unsupported_version_reaches_the_operation_at_once() {
    let mut old = broker_versions();
    old.api_keys
        .retain(|k| k.api_key != ApiKey::DescribeCluster as i16);
    let op = DescribeCluster::new().timeout(Duration::from_secs(60));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => reply(seen, &old),
            other => panic!("unexpected {other:?}"),
        },
    );
    assert_eq!(r.took, Duration::ZERO);
    assert!(matches!(
        r.output,
        Err(AdminError::Request(RequestError::UnsupportedVersion {
            api: ApiKey::DescribeCluster,
            broker: None,
            ..
        }))
    ));
}

#[test]
fn an_encode_error_at_the_negotiated_version_reaches_the_operation_at_once() {
    // The broker takes DescribeCluster v0 only; EndpointType (v1+) cannot be sent there.
    let mut v0 = broker_versions();
    for k in &mut v0.api_keys {
        if k.api_key == ApiKey::DescribeCluster as i16 {
            k.max_version = 0;
        }
    }
    let request = crate::protocol::messages::describe_cluster::DescribeClusterRequest {
        endpoint_type: 2,
        ..Default::default()
    };
    let op = crate::admin::RawRequest::new(crate::cluster::Route::Any, request)
        .timeout(Duration::from_secs(60));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => reply(seen, &v0),
            other => panic!("unexpected {other:?}"),
        },
    );
    assert_eq!(r.took, Duration::ZERO);
    assert!(
        matches!(r.output, Err(AdminError::Request(RequestError::Encode(_)))),
        "{:?}",
        r.output.map(|_| ())
    );
}

#[test]
fn an_undecodable_response_fails_its_connection_and_the_call_retries_on_a_new_one() {
    let mut garbled = 0;
    let op = DescribeCluster::new().timeout(Duration::from_secs(30));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::DescribeCluster if garbled == 0 => {
                garbled += 1;
                raw_body(seen, &[0, 0, 0]) // truncated: the body ends inside a field
            }
            _ => described(seen),
        },
    );
    assert_eq!(r.output.expect("second attempt").cluster_id, "c");
    assert_eq!(r.connects["boot"], 2, "a new connection for the retry");
    assert_eq!(r.closes, 1, "the connection that sent garbage was closed");
    assert!(r.events.iter().any(|e| matches!(
        e,
        Event::ConnectionFailed {
            node: -1,
            error: ConnError::Decode {
                api: ApiKey::DescribeCluster,
                ..
            }
        }
    )));
}

/// A broker that negotiates normally, then answers the call with garbage on every
/// attempt: the call ends after `REQUEST_VIOLATIONS` attempts, naming the violation,
/// long before its deadline; two violations and a good answer still succeed.
#[test]
fn a_broker_that_garbles_every_answer_after_negotiating_ends_the_call_after_the_rule() {
    let op = DescribeCluster::new().timeout(Duration::from_secs(60));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => versions(seen),
            _ => raw_body(seen, &[0, 0, 0]),
        },
    );
    let err = r.output.expect_err("garbage every time");
    let AdminError::Request(RequestError::RepeatedViolation(e)) = &err else {
        panic!("{err:?}");
    };
    assert!(!err.is_retriable());
    assert!(
        matches!(
            e,
            ConnError::Decode {
                api: ApiKey::DescribeCluster,
                ..
            }
        ),
        "{e}"
    );
    assert!(err.to_string().contains("DescribeCluster"), "{err}");
    assert_eq!(
        r.connects["boot"], REQUEST_VIOLATIONS,
        "one connection per attempt"
    );
    assert!(r.took < Duration::from_secs(5), "{:?}", r.took);

    let mut garbled = 0;
    let op = DescribeCluster::new().timeout(Duration::from_secs(60));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => versions(seen),
            ApiKey::DescribeCluster if garbled + 1 < REQUEST_VIOLATIONS => {
                garbled += 1;
                raw_body(seen, &[0, 0, 0])
            }
            _ => described(seen),
        },
    );
    assert_eq!(r.output.expect("the last attempt").cluster_id, "c");
}

/// Every hostile answer to ApiVersions (on every attempt) ends the call once each
/// bootstrap address broke the protocol `BOOTSTRAP_VIOLATIONS` times in a row.
#[test]
fn a_bootstrap_list_that_always_breaks_the_protocol_ends_the_call_after_the_rule() {
    let two = [("bootstrap.servers", "a:9092,b:9092")];
    type Answer = Box<dyn Fn(&Seen) -> Act>;
    let hostile: Vec<(&str, Answer)> = vec![
        (
            "giant frame",
            Box::new(|_| Act::Bytes(vec![0x7f, 0xff, 0xff, 0xff])),
        ),
        (
            "negative frame",
            Box::new(|_| Act::Bytes((-2i32).to_be_bytes().to_vec())),
        ),
        (
            "TLS alert",
            Box::new(|_| Act::Bytes(vec![0x15, 3, 3, 0, 2, 2, 40])),
        ),
        (
            "wrong correlation id",
            Box::new(|s: &Seen| {
                let mut f = response_frame(s, &broker_versions(), 0);
                f[4..8].copy_from_slice(&(s.header.correlation_id + 7).to_be_bytes());
                Act::Bytes(f)
            }),
        ),
        (
            "truncated body",
            Box::new(|s: &Seen| raw_body(s, &[0, 0, 0, 0, 0x7f])),
        ),
        (
            "huge array count",
            Box::new(|s: &Seen| raw_body(s, &[0, 0, 0x7f, 0xff, 0xff, 0xff])),
        ),
    ];
    for (what, hostile) in hostile {
        let op = DescribeCluster::new().timeout(Duration::from_secs(30));
        let r = run(&two, op, |_| Ok(()), |_, seen| hostile(seen));
        let err = r.output.expect_err(what);
        let AdminError::Request(RequestError::BootstrapBroken(e)) = &err else {
            panic!("{what}: {err:?}");
        };
        assert!(!err.is_retriable(), "{what}");
        assert!(e.is_protocol_violation(), "{what}: {e}");
        assert_eq!(
            (r.connects["a"], r.connects["b"]),
            (BOOTSTRAP_VIOLATIONS, BOOTSTRAP_VIOLATIONS),
            "{what}"
        );
        assert!(r.took < Duration::from_secs(5), "{what}: {:?}", r.took);
    }
}

#[test]
fn one_sane_bootstrap_address_is_enough() {
    let two = [("bootstrap.servers", "a:9092,b:9092")];
    let op = DescribeCluster::new().timeout(Duration::from_secs(30));
    let r = run(
        &two,
        op,
        |_| Ok(()),
        |host, seen| match (host, seen.api()) {
            ("a", _) => Act::Bytes(vec![0x7f, 0xff, 0xff, 0xff]),
            _ => described(seen),
        },
    );
    assert_eq!(r.output.expect("b answers").cluster_id, "c");
}

#[test]
fn a_violation_count_restarts_after_a_failure_that_is_no_violation() {
    // The address alternates between breaking the protocol and refusing: never three
    // violations in a row, so the call runs to its deadline and names the last cause.
    let mut attempt = 0;
    let op = DescribeCluster::new().timeout(Duration::from_secs(4));
    let r = run(
        BOOT,
        op,
        |_| {
            attempt += 1;
            if attempt % 2 == 0 {
                Err(SocketError::Refused)
            } else {
                Ok(())
            }
        },
        |_, _| Act::Bytes(vec![0x7f, 0xff, 0xff, 0xff]),
    );
    assert!(
        matches!(
            r.output,
            Err(AdminError::Timeout {
                last_cause: Some(_),
                ..
            })
        ),
        "{:?}",
        r.output
    );
    assert_eq!(r.took, Duration::from_secs(4));
}

#[test]
fn list_offsets_of_an_unknown_topic_ends_at_once() {
    let op = ListOffsets::new([
        (TopicPartition::new("nope", 0), OffsetSpec::Latest),
        (TopicPartition::new("t", 0), OffsetSpec::Latest),
    ])
    .timeout(Duration::from_secs(60));
    let r = run(
        BOOT,
        op,
        |_| Ok(()),
        |_, seen| match seen.api() {
            ApiKey::ApiVersions => versions(seen),
            ApiKey::Metadata => {
                let mut m = topic_t();
                m.topics.push(MetadataResponseTopic {
                    name: Some("nope".into()),
                    error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                    ..Default::default()
                });
                reply(seen, &m)
            }
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                reply(seen, &offsets(&req, 0))
            }
            other => panic!("unexpected {other:?}"),
        },
    );
    assert_eq!(r.took, Duration::ZERO);
    let r = r.output.expect("per partition");
    let err = r[&TopicPartition::new("nope", 0)]
        .clone()
        .expect_err("unknown");
    assert_eq!(err.code(), Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION));
    assert_eq!(
        err.to_string(),
        "UNKNOWN_TOPIC_OR_PARTITION (3): topic nope does not exist"
    );
    assert!(
        r[&TopicPartition::new("t", 0)].is_ok(),
        "the known topic is answered"
    );
}
