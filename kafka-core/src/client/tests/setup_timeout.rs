//! `socket.connection.setup.timeout.max.ms`: the per-attempt connection setup timeout
//! (`IoCommand::Connect::setup_timeout`) doubles per consecutive attempt to a node that
//! failed before getting ready, is capped at the max, jittered ±20%, and starts over once
//! a connection got ready (Java's `ClusterConnectionStates`).

use std::time::Duration;

use super::super::*;
use crate::protocol::messages::metadata::MetadataRequest;
use crate::protocol::ApiKey;
use crate::test_support::{broker_versions, origin, parse_requests, response_frame};

const INITIAL: u64 = 1_000;
const MAX: u64 = 8_000;

fn client() -> Client {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "boot:9092"),
        ("socket.connection.setup.timeout.ms", "1000"),
        ("socket.connection.setup.timeout.max.ms", "8000"),
        ("reconnect.backoff.ms", "10"),
        ("reconnect.backoff.max.ms", "10"),
        ("default.api.timeout.ms", "3600000"),
        ("request.timeout.ms", "3600000"),
        ("delivery.timeout.ms", "7200000"),
    ])
    .unwrap();
    Client::new(config, [3; 32]).unwrap()
}

/// The next connect the client asks for, moving the clock to its backoff if needed.
fn next_connect(client: &mut Client, now: &mut Instant) -> (ConnId, Duration) {
    for _ in 0..10 {
        while let Some(cmd) = client.poll_io() {
            if let IoCommand::Connect {
                conn,
                setup_timeout,
                ..
            } = cmd
            {
                return (conn, setup_timeout);
            }
        }
        *now = client.poll_timeout().expect("a reconnect is scheduled");
        client.handle_timeout(*now);
    }
    panic!("no connect");
}

fn assert_near(got: Duration, base_ms: u64, what: &str) {
    let ms = got.as_secs_f64() * 1000.0;
    let base = base_ms as f64;
    assert!(
        ms >= base * 0.8 - 1e-6 && ms <= base * 1.2 + 1e-6,
        "{what}: {ms} ms is not {base_ms} ms ± 20%"
    );
}

/// Fails `n` attempts in a row (connect timed out) and returns each attempt's timeout.
fn fail_attempts(client: &mut Client, now: &mut Instant, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let (conn, timeout) = next_connect(client, now);
            *now += timeout;
            client.handle_closed(*now, conn, SocketError::ConnectTimedOut);
            timeout
        })
        .collect()
}

#[test]
fn setup_timeout_doubles_per_failed_attempt_up_to_the_max() {
    let (mut client, mut now) = (client(), origin());
    client.send(now, Route::Any, MetadataRequest::default());
    let timeouts = fail_attempts(&mut client, &mut now, 7);
    for (i, (t, base)) in timeouts
        .iter()
        .zip([INITIAL, 2_000, 4_000, MAX, MAX, MAX, MAX])
        .enumerate()
    {
        assert_near(*t, base, &format!("attempt {i}"));
    }
    assert!(timeouts[4..]
        .iter()
        .all(|t| *t <= Duration::from_millis(MAX * 6 / 5)));
    // Jittered: the capped attempts do not all take the same time.
    assert!(
        timeouts[3..].windows(2).any(|w| w[0] != w[1]),
        "{timeouts:?}"
    );
}

#[test]
fn a_connection_that_got_ready_resets_the_setup_timeout() {
    let (mut client, mut now) = (client(), origin());
    client.send(now, Route::Any, MetadataRequest::default());
    fail_attempts(&mut client, &mut now, 3);
    let (conn, timeout) = next_connect(&mut client, &mut now);
    assert_near(timeout, MAX, "after three failures");
    // This one connects and negotiates: ready.
    client.handle_connected(now, conn);
    let mut out = Vec::new();
    client.poll_transmit(now, conn, &mut out);
    let seen = parse_requests(out).remove(0);
    assert_eq!(seen.api(), ApiKey::ApiVersions);
    client.handle_received(now, conn, &response_frame(&seen, &broker_versions(), 0));
    let mut out = Vec::new();
    client.poll_transmit(now, conn, &mut out);
    assert_eq!(parse_requests(out).remove(0).api(), ApiKey::Metadata);
    // The broker goes away; the next attempt starts from the initial timeout again.
    client.handle_closed(now, conn, SocketError::ClosedByPeer);
    let (_, timeout) = next_connect(&mut client, &mut now);
    assert_near(timeout, INITIAL, "after a ready connection");
}

#[test]
fn the_connection_setup_after_connect_uses_the_attempts_timeout() {
    let (mut client, mut now) = (client(), origin());
    client.send(now, Route::Any, MetadataRequest::default());
    fail_attempts(&mut client, &mut now, 2);
    let (conn, timeout) = next_connect(&mut client, &mut now);
    assert_near(timeout, 4_000, "third attempt");
    // Connected, but the broker never answers ApiVersions: the setup fails after this
    // attempt's timeout, not the initial one.
    client.handle_connected(now, conn);
    while client.poll_event().is_some() {}
    let deadline = client.poll_timeout().expect("the setup deadline");
    assert_eq!(deadline, now + timeout);
    client.handle_timeout(deadline);
    let failed = std::iter::from_fn(|| client.poll_event()).find_map(|e| match e {
        Event::ConnectionFailed { error, .. } => Some(error),
        _ => None,
    });
    assert_eq!(failed, Some(ConnError::SetupTimedOut));
    let (_, timeout) = next_connect(&mut client, &mut now);
    assert_near(timeout, MAX, "fourth attempt");
}
