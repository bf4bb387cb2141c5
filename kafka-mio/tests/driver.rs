//! Driver behaviour that needs no broker: tokens, foreign events, failures.

use std::io::Read;
use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster};
use kafka_core::client::Event;
use kafka_core::config::ClientConfig;
use kafka_mio::{Admin, Driver};
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};

fn config(bootstrap: &str) -> ClientConfig {
    ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "100"),
    ])
    .expect("config")
}

/// An unreachable bootstrap server makes an operation with a short timeout finish with
/// an error instead of hanging.
#[test]
fn unreachable_bootstrap_finishes_with_an_error() {
    let admin = Admin::new(config("127.0.0.1:1")).expect("admin");
    let started = Instant::now();
    let result = admin.run(DescribeCluster::new().timeout(Duration::from_millis(1500)));
    assert!(result.is_err(), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// With no token to register a socket with, every connect fails as a connection failure
/// the core sees (and retries), the operation ends at its deadline, nothing panics.
#[test]
fn exhausted_token_range_is_a_connection_failure() {
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(64);
    let mut driver = Driver::new(config("127.0.0.1:9"), poll.registry(), 5..5).expect("driver");
    let id = driver.start(DescribeCluster::new().timeout(Duration::from_millis(800)));
    let mut failures = Vec::new();
    let started = Instant::now();
    let result = loop {
        driver.poll(poll.registry());
        while let Some(event) = driver.poll_event() {
            if let Event::ConnectionFailed { error, .. } = event {
                failures.push(error.to_string());
            }
        }
        if let Some(out) = driver.take_output(id) {
            break out;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "operation hangs"
        );
        poll.poll(&mut events, driver.timeout()).expect("poll");
        for event in events.iter() {
            driver.handle_event(poll.registry(), event);
        }
        assert_eq!(driver.tokens().count(), 0);
    };
    assert!(
        matches!(
            result,
            Err(AdminError::Timeout { .. } | AdminError::Request(_))
        ),
        "{result:?}"
    );
    assert!(!failures.is_empty());
    assert!(
        failures
            .iter()
            .all(|f| f.contains("token range 5..5 exhausted")),
        "{failures:?}"
    );
}

/// The driver registers only tokens of its range, ignores events with other tokens
/// (here a listener acting as a silent "broker"), and writes its first request.
#[test]
fn tokens_stay_in_range_and_foreign_events_are_ignored() {
    const FOREIGN: Token = Token(1);
    const PEER: Token = Token(2);
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(64);
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    poll.registry()
        .register(&mut listener, FOREIGN, Interest::READABLE)
        .expect("register listener");
    let range = 10..12;
    let mut driver = Driver::new(config(&addr), poll.registry(), range.clone()).expect("driver");
    assert!(!driver.owns(FOREIGN) && !driver.owns(PEER) && driver.owns(Token(11)));

    let id = driver.start(DescribeCluster::new().timeout(Duration::from_millis(1500)));
    let mut peer = None;
    let mut received = Vec::new();
    let mut seen = Vec::new();
    let started = Instant::now();
    let result = loop {
        driver.poll(poll.registry());
        seen.extend(driver.tokens());
        if let Some(out) = driver.take_output(id) {
            break out;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "operation hangs"
        );
        poll.poll(&mut events, driver.timeout()).expect("poll");
        for event in events.iter() {
            if driver.owns(event.token()) {
                driver.handle_event(poll.registry(), event);
                continue;
            }
            // Handing the driver a foreign event must do nothing.
            driver.handle_event(poll.registry(), event);
            match event.token() {
                FOREIGN => {
                    let (mut s, _) = listener.accept().expect("accept");
                    poll.registry()
                        .register(&mut s, PEER, Interest::READABLE)
                        .expect("register peer");
                    peer = Some(s);
                }
                PEER => {
                    let mut buf = [0u8; 4096];
                    while let Some(Ok(n @ 1..)) = peer.as_mut().map(|s| s.read(&mut buf)) {
                        received.extend_from_slice(&buf[..n]);
                    }
                }
                other => panic!("unexpected token {other:?}"),
            }
        }
        seen.extend(driver.tokens());
    };
    assert!(result.is_err(), "a silent broker cannot answer: {result:?}");
    assert!(!seen.is_empty(), "the driver never registered a socket");
    assert!(seen.iter().all(|t| range.contains(&t.0)), "{seen:?}");
    // The first request (ApiVersions) arrived: a 4-byte size, then api key 18.
    assert!(received.len() > 6, "{received:?}");
    assert_eq!(&received[4..6], &[0, 18]);
    driver.shutdown(poll.registry());
    assert_eq!(driver.tokens().count(), 0);
}

/// A connect that never completes (the listener's accept queue is full, so the kernel
/// drops our SYNs) fails after the attempt's setup timeout (300 ms ± 20%), enforced by the
/// driver, and the core sees a connection failure.
#[test]
fn stalled_connect_times_out() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Fill the accept queue (nobody accepts).
    let fillers: Vec<_> = (0..512)
        .filter_map(|_| mio::net::TcpStream::connect(addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(64);
    let cfg = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.to_string().as_str()),
        ("socket.connection.setup.timeout.ms", "300"),
        ("socket.connection.setup.timeout.max.ms", "300"),
    ])
    .expect("config");
    let mut driver = Driver::new(cfg, poll.registry(), 0..4).expect("driver");
    let id = driver.start(DescribeCluster::new().timeout(Duration::from_millis(1500)));
    let mut failures = Vec::new();
    let started = Instant::now();
    let result = loop {
        driver.poll(poll.registry());
        while let Some(event) = driver.poll_event() {
            if let Event::ConnectionFailed { error, .. } = event {
                failures.push(error.to_string());
            }
        }
        if let Some(out) = driver.take_output(id) {
            break out;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "operation hangs"
        );
        poll.poll(&mut events, driver.timeout()).expect("poll");
        for event in events.iter() {
            driver.handle_event(poll.registry(), event);
        }
    };
    drop(fillers);
    assert!(result.is_err(), "{result:?}");
    assert!(
        failures
            .iter()
            .any(|f| f.contains("connecting to") && f.ends_with("timed out")),
        "{failures:?}"
    );
}
