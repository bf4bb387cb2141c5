//! Connection tests with no sockets: a scripted broker reads the frames the connection
//! writes and answers with encoded responses, on a virtual clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::protocol::messages::api_versions::response::ApiVersion;
use crate::protocol::messages::api_versions::ApiVersionsResponse;
use crate::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use crate::protocol::messages::sasl_authenticate::SaslAuthenticateResponse;
use crate::protocol::messages::sasl_handshake::SaslHandshakeResponse;
use crate::protocol::{ApiKey, Decodable};
use crate::secret::Secret;
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

fn written(conn: &mut Connection) -> Vec<Seen> {
    let mut out = Vec::new();
    conn.poll_transmit(&mut out);
    parse_requests(out)
}

fn cfg() -> Arc<ConnConfig> {
    Arc::new(ConnConfig {
        max_in_flight: 2,
        ..Default::default()
    })
}

/// A connection that has finished ApiVersions.
fn ready(now: Instant) -> Connection {
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].api(), ApiKey::ApiVersions);
    assert_eq!(seen[0].version(), 4);
    c.handle_received(now, &response_frame(&seen[0], &broker_versions(), 4));
    assert_eq!(c.state(), &ConnState::Ready);
    c
}

fn metadata() -> Box<MetadataRequest> {
    Box::new(MetadataRequest {
        topics: None,
        ..Default::default()
    })
}

#[test]
fn negotiates_then_sends_at_the_highest_common_version() {
    let now = origin();
    let mut c = ready(now);
    c.submit(now, Token(1), metadata(), None);
    let seen = written(&mut c);
    assert_eq!((seen[0].api(), seen[0].version()), (ApiKey::Metadata, 13));
    assert_eq!(seen[0].header.client_id.as_deref(), Some("kafka-rs"));
    let resp = MetadataResponse {
        cluster_id: Some("c1".into()),
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&seen[0], &resp, 13));
    match c.poll_completion() {
        Some(Completion::Response {
            token: Token(1),
            api: ApiKey::Metadata,
            version: 13,
            frame,
        }) => {
            let (_, decoded) =
                crate::protocol::read_response::<MetadataRequest>(frame, 13).unwrap();
            assert_eq!(decoded.cluster_id.as_deref(), Some("c1"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_submitted_before_negotiation_wait_for_it() {
    let now = origin();
    let mut c = Connection::new(now, cfg(), None);
    c.submit(now, Token(7), metadata(), None);
    let seen = written(&mut c);
    assert_eq!(seen.len(), 1, "only ApiVersions goes out first");
    c.handle_received(now, &response_frame(&seen[0], &broker_versions(), 4));
    assert_eq!(written(&mut c)[0].api(), ApiKey::Metadata);
}

#[test]
fn api_versions_falls_back_to_the_brokers_range() {
    let now = origin();
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    // An older broker answers in v0 with UNSUPPORTED_VERSION and its own range (0-2).
    let refusal = ApiVersionsResponse {
        error_code: 35,
        api_keys: vec![ApiVersion {
            api_key: 18,
            min_version: 0,
            max_version: 2,
            ..Default::default()
        }],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&seen[0], &refusal, 0));
    let retry = written(&mut c);
    assert_eq!(
        (retry[0].api(), retry[0].version()),
        (ApiKey::ApiVersions, 2)
    );
    c.handle_received(now, &response_frame(&retry[0], &broker_versions(), 2));
    assert_eq!(c.state(), &ConnState::Ready);
}

#[test]
fn responses_split_at_every_byte_are_reassembled() {
    let now = origin();
    let mut c = ready(now);
    c.submit(now, Token(1), metadata(), None);
    let seen = written(&mut c);
    let frame = response_frame(&seen[0], &MetadataResponse::default(), 13);
    for b in &frame {
        c.handle_received(now, std::slice::from_ref(b));
    }
    assert!(matches!(
        c.poll_completion(),
        Some(Completion::Response { .. })
    ));
}

#[test]
fn correlation_mismatch_is_fatal_and_sticky() {
    let now = origin();
    let mut c = ready(now);
    c.submit(now, Token(1), metadata(), None);
    let mut seen = written(&mut c);
    seen[0].header.correlation_id += 5;
    c.handle_received(
        now,
        &response_frame(&seen[0], &MetadataResponse::default(), 13),
    );
    assert!(matches!(
        c.state(),
        ConnState::Failed(ConnError::CorrelationMismatch { .. })
    ));
    assert!(matches!(
        c.poll_completion(),
        Some(Completion::Failed {
            token: Token(1),
            sent: true,
            ..
        })
    ));
    c.submit(now, Token(2), metadata(), None);
    assert!(matches!(
        c.poll_completion(),
        Some(Completion::Failed {
            token: Token(2),
            sent: false,
            ..
        })
    ));
    assert!(written(&mut c).is_empty());
}

#[test]
fn oversize_and_negative_frames_fail_the_connection() {
    let now = origin();
    let mut c = ready(now);
    c.handle_received(now, &[0x16, 0x03, 0x03, 0x00, 0x2a, 0x02]);
    assert!(matches!(
        c.state(),
        ConnState::Failed(ConnError::TlsOnPlaintext { record_type: 22 })
    ));
    let mut c = ready(now);
    c.handle_received(now, &[0x40, 0, 0, 0]);
    assert!(matches!(
        c.state(),
        ConnState::Failed(ConnError::FrameTooLarge { .. })
    ));
    let mut c = ready(now);
    c.handle_received(now, &(-1i32).to_be_bytes());
    assert!(matches!(
        c.state(),
        ConnState::Failed(ConnError::NegativeFrameSize(-1))
    ));
}

#[test]
fn in_flight_limit_pipelines_and_queues() {
    let now = origin();
    let mut c = ready(now);
    for t in 1..=3 {
        c.submit(now, Token(t), metadata(), None);
    }
    let seen = written(&mut c);
    assert_eq!(seen.len(), 2, "max_in_flight = 2");
    c.handle_received(
        now,
        &response_frame(&seen[0], &MetadataResponse::default(), 13),
    );
    assert!(
        written(&mut c).is_empty(),
        "nothing goes out before the owner applied the response's throttle"
    );
    c.resume(now);
    assert_eq!(
        written(&mut c).len(),
        1,
        "the third goes out when one completes"
    );
}

#[test]
fn request_timeout_on_a_virtual_clock_fails_in_flight_requests_as_sent() {
    let now = origin();
    let mut c = ready(now);
    c.submit(now, Token(1), metadata(), None);
    let _ = written(&mut c);
    let deadline = c.poll_timeout().unwrap();
    assert_eq!(deadline, now + Duration::from_secs(30));
    c.handle_timeout(deadline - Duration::from_millis(1));
    assert_eq!(c.state(), &ConnState::Ready, "early timeouts are no-ops");
    c.handle_timeout(deadline);
    assert!(matches!(
        c.state(),
        ConnState::Failed(ConnError::RequestTimedOut {
            api: ApiKey::Metadata,
            ..
        })
    ));
    assert!(matches!(
        c.poll_completion(),
        Some(Completion::Failed { sent: true, .. })
    ));
}

#[test]
fn throttle_delays_the_next_request() {
    let now = origin();
    let mut c = ready(now);
    c.apply_throttle(now, 1_000);
    c.submit(now, Token(1), metadata(), None);
    assert!(written(&mut c).is_empty());
    assert_eq!(c.poll_timeout(), Some(now + Duration::from_secs(1)));
    c.handle_timeout(now + Duration::from_secs(1));
    assert_eq!(written(&mut c).len(), 1);
}

#[test]
fn idle_connections_close_after_the_idle_timeout() {
    let now = origin();
    let mut c = ready(now);
    let idle = c.poll_timeout().unwrap();
    assert_eq!(idle, now + Duration::from_millis(540_000));
    c.handle_timeout(idle);
    assert_eq!(c.state(), &ConnState::Failed(ConnError::Idle));
}

#[test]
fn unsupported_version_is_refused_locally_with_both_ranges() {
    let now = origin();
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    let old = ApiVersionsResponse {
        api_keys: vec![
            ApiVersion {
                api_key: 18,
                min_version: 0,
                max_version: 4,
                ..Default::default()
            },
            ApiVersion {
                api_key: 3,
                min_version: 0,
                max_version: 13,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&seen[0], &old, 4));
    c.submit(
        now,
        Token(1),
        Box::new(crate::protocol::messages::produce::ProduceRequest::default()),
        None,
    );
    match c.poll_completion() {
        Some(Completion::Failed {
            error:
                RequestError::UnsupportedVersion {
                    api: ApiKey::Produce,
                    broker: None,
                    ..
                },
            sent: false,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

fn plain_auth() -> Auth {
    let creds = sasl::SaslCredentials::UsernamePassword {
        username: "u".into(),
        password: Secret::new("p"),
    };
    Auth::new(
        sasl::Mechanism::Plain,
        CredentialSource::Static(creds),
        [7; 32],
    )
}

/// Runs negotiation on a SASL connection and returns it with the handshake request.
fn sasl_handshake(now: Instant, auth: Auth) -> (Connection, Seen) {
    let mut c = Connection::new(now, cfg(), Some(auth));
    let seen = written(&mut c);
    c.handle_received(now, &response_frame(&seen[0], &broker_versions(), 4));
    assert_eq!(c.state(), &ConnState::Setup);
    let mut seen = written(&mut c);
    assert_eq!(
        (seen[0].api(), seen[0].version()),
        (ApiKey::SaslHandshake, 1)
    );
    (c, seen.remove(0))
}

#[test]
fn sasl_plain_exchange_then_ready_and_reauthentication() {
    let now = origin();
    let (mut c, hs) = sasl_handshake(now, plain_auth());
    c.submit(now, Token(1), metadata(), None);
    let ok = SaslHandshakeResponse {
        mechanisms: vec!["PLAIN".into()],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&hs, &ok, 1));
    let auth = written(&mut c);
    assert_eq!(
        (auth[0].api(), auth[0].version()),
        (ApiKey::SaslAuthenticate, 2)
    );
    let mut body = auth[0].body.clone();
    let req =
        crate::protocol::messages::sasl_authenticate::SaslAuthenticateRequest::decode(&mut body, 2)
            .unwrap();
    assert_eq!(&req.auth_bytes[..], b"\0u\0p");
    let done = SaslAuthenticateResponse {
        session_lifetime_ms: 10_000,
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&auth[0], &done, 2));
    assert_eq!(c.state(), &ConnState::Ready);
    assert_eq!(
        written(&mut c)[0].api(),
        ApiKey::Metadata,
        "queued request goes out after auth"
    );
    // KIP-368: at 85% of the session lifetime the connection authenticates again — once
    // nothing is in flight (so the deadline is no timer while the Metadata request is:
    // `a_due_reauthentication_waiting_for_in_flight_requests_arms_no_past_timer`).
    c.handle_timeout(now + Duration::from_millis(8_500));
    // The Metadata request is still in flight: nothing new until it completes.
    assert!(written(&mut c).is_empty());
}

/// Found by `machine_connection`: a re-authentication that is due while requests are in
/// flight waits for them, so its deadline is no timer any more; before the fix
/// `poll_timeout` kept answering that past instant and the owner spun until the last
/// response (up to a request timeout of busy loop).
#[test]
fn a_due_reauthentication_waiting_for_in_flight_requests_arms_no_past_timer() {
    let now = origin();
    let (mut c, hs) = sasl_handshake(now, plain_auth());
    let ok = SaslHandshakeResponse {
        mechanisms: vec!["PLAIN".into()],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&hs, &ok, 1));
    let auth = written(&mut c);
    let done = SaslAuthenticateResponse {
        session_lifetime_ms: 10_000,
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&auth[0], &done, 2));
    c.submit(now, Token(1), metadata(), None);
    let sent = written(&mut c);
    assert_eq!(sent[0].api(), ApiKey::Metadata);
    let due = now + Duration::from_millis(8_500);
    c.handle_timeout(due);
    assert!(
        written(&mut c).is_empty(),
        "waits for the request in flight"
    );
    let next = c.poll_timeout().expect("the request's deadline");
    assert!(next > due, "a timer in the past: the owner would spin");
    // The answer arrives: the re-authentication starts at once.
    c.handle_received(
        due,
        &response_frame(&sent[0], &MetadataResponse::default(), sent[0].version()),
    );
    while c.poll_completion().is_some() {}
    c.resume(due);
    assert_eq!(written(&mut c)[0].api(), ApiKey::SaslHandshake);
}

#[test]
fn a_huge_session_lifetime_is_no_overflow_and_no_reauthentication_in_range() {
    // A hostile or confused broker's lifetime of i64::MAX ms: neither the 85 % nor the
    // deadline may overflow (found by the machine_connection fuzz driver's smoke inputs).
    let now = origin();
    let (mut c, hs) = sasl_handshake(now, plain_auth());
    let ok = SaslHandshakeResponse {
        mechanisms: vec!["PLAIN".into()],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&hs, &ok, 1));
    let auth = written(&mut c);
    let done = SaslAuthenticateResponse {
        session_lifetime_ms: i64::MAX,
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&auth[0], &done, 2));
    assert!(matches!(c.state(), ConnState::Ready), "{:?}", c.state());
    c.submit(now, Token(1), metadata(), None);
    assert_eq!(written(&mut c)[0].api(), ApiKey::Metadata);
    // A year later nothing is due but the request's own deadline.
    let later = now + Duration::from_secs(365 * 24 * 3600);
    assert!(c.poll_timeout().is_some_and(|t| t < later));
}

#[test]
fn wrong_password_is_a_clear_non_retriable_error() {
    let now = origin();
    let (mut c, hs) = sasl_handshake(now, plain_auth());
    c.handle_received(
        now,
        &response_frame(&hs, &SaslHandshakeResponse::default(), 1),
    );
    let auth = written(&mut c);
    let refused = SaslAuthenticateResponse {
        error_code: 58,
        error_message: Some("Authentication failed: Invalid username or password".into()),
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&auth[0], &refused, 2));
    match c.state() {
        ConnState::Failed(e @ ConnError::AuthenticationFailed { message, .. }) => {
            assert!(message.contains("Invalid username or password"));
            assert!(!e.is_retriable());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsupported_mechanism_names_the_enabled_ones() {
    let now = origin();
    let (mut c, hs) = sasl_handshake(now, plain_auth());
    let refused = SaslHandshakeResponse {
        error_code: 33,
        mechanisms: vec!["SCRAM-SHA-512".into()],
        ..Default::default()
    };
    c.handle_received(now, &response_frame(&hs, &refused, 1));
    assert!(
        matches!(c.state(), ConnState::Failed(ConnError::UnsupportedSaslMechanism { enabled, .. }) if enabled == &vec!["SCRAM-SHA-512".to_string()])
    );
}

/// Frames recorded from a real Apache Kafka 4.3.1 broker (see `testdata/`), re-addressed
/// to the correlation id the connection used.
fn recorded(name: &str, to: &Seen) -> Vec<u8> {
    let body: &[u8] = match name {
        "v4" => include_bytes!("testdata/api-versions-v4-kafka-4.3.1.bin"),
        _ => include_bytes!("testdata/api-versions-v5-refused-kafka-4.3.1.bin"),
    };
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&to.header.correlation_id.to_be_bytes());
    frame.extend_from_slice(&body[4..]);
    frame
}

#[test]
fn recorded_broker_api_versions_answer_negotiates_every_api() {
    let now = origin();
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    c.handle_received(now, &recorded("v4", &seen[0]));
    assert_eq!(c.state(), &ConnState::Ready);
    let table = c.api_versions().unwrap();
    assert!(table.iter().count() >= 50);
    assert_eq!(
        table.negotiate(ApiKey::Produce),
        Ok(13),
        "Produce: broker says 0-13, we send 3+"
    );
    assert_eq!(table.broker_range(ApiKey::Produce).map(|r| r.min), Some(0));
    assert_eq!(table.negotiate(ApiKey::Fetch), Ok(18));
    assert_eq!(table.negotiate(ApiKey::Metadata), Ok(13));
    assert_eq!(
        table.negotiate(ApiKey::InitProducerId),
        Ok(5),
        "unstable v6 is neither advertised nor sent"
    );
    assert_eq!(table.negotiate(ApiKey::SaslHandshake), Ok(1));
}

#[test]
fn recorded_unsupported_version_answer_triggers_the_fallback() {
    let now = origin();
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    // The broker's v0 refusal (UNSUPPORTED_VERSION, ApiVersions 0-4), with its max
    // lowered to 3 to stand for a broker older than this client.
    let mut refusal = recorded("v5", &seen[0]);
    let last = refusal.len() - 1;
    refusal[last] = 3;
    c.handle_received(now, &refusal);
    let retry = written(&mut c);
    assert_eq!(
        (retry[0].api(), retry[0].version()),
        (ApiKey::ApiVersions, 3)
    );
    // An answer that offers nothing lower fails with the broker's error code.
    let mut c = Connection::new(now, cfg(), None);
    let seen = written(&mut c);
    c.handle_received(now, &recorded("v5", &seen[0]));
    assert_eq!(c.state(), &ConnState::Failed(ConnError::ApiVersions(35)));
}
