//! The admin suite (`kafka_tests::admin_suite`) through `kafka-mio`, plus the mio driver
//! inside a caller-owned loop against the real broker.

use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, CreateTopics, DescribeCluster, NewTopic, Operation};
use kafka_core::client::Event;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::KafkaCode;
use kafka_mio::mio::net::TcpListener;
use kafka_mio::mio::{Events, Interest, Poll, Token};
use kafka_mio::{Admin, Driver as MioDriver};
use kafka_tests::admin_suite::{config, unique, var, Driver};

struct Mio(Admin);

impl Driver for Mio {
    const NAME: &'static str = "mio";

    fn connect(config: ClientConfig) -> Self {
        Mio(Admin::new(config).expect("mio admin"))
    }

    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.0.run(op)
    }
}

kafka_tests::admin_suite!(Mio);

/// A caller-owned loop: the driver's events go to the driver, the others to `other`.
/// Returns the operation's output and the connection-failure texts seen meanwhile.
fn run_in_loop<O: Operation>(
    poll: &mut Poll,
    driver: &mut MioDriver,
    op: O,
    mut other: impl FnMut(&mut Poll, Token),
) -> (O::Output, Vec<String>) {
    let mut events = Events::with_capacity(64);
    let id = driver.start(op);
    let mut failures = Vec::new();
    let started = Instant::now();
    loop {
        driver.poll(poll.registry());
        while let Some(event) = driver.poll_event() {
            if let Event::ConnectionFailed { error, .. } = event {
                failures.push(error.to_string());
            }
        }
        if let Some(out) = driver.take_output(id) {
            return (out, failures);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "operation hangs"
        );
        poll.poll(&mut events, driver.timeout()).expect("poll");
        for event in events.iter() {
            if driver.owns(event.token()) {
                driver.handle_event(poll.registry(), event);
            } else {
                // A foreign event handed to the driver is ignored.
                driver.handle_event(poll.registry(), event);
                other(poll, event.token());
            }
        }
        let registered: Vec<Token> = driver.tokens().collect();
        assert!(registered.iter().all(|t| driver.owns(*t)), "{registered:?}");
    }
}

/// Against the real broker: the driver shares a caller's poll with a foreign listener,
/// registers only tokens of its range, and runs DescribeCluster and CreateTopics.
#[test]
fn mio_driver_in_a_shared_loop() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("mio_driver_in_a_shared_loop") else {
        return;
    };
    const LISTENER: Token = Token(3);
    let mut poll = Poll::new().expect("poll");
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let local = listener.local_addr().expect("addr");
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .expect("register");
    let cfg = config(&[("bootstrap.servers", &bootstrap)]);
    let mut driver = MioDriver::new(cfg, poll.registry(), 40..44).expect("driver");
    assert!(!driver.owns(LISTENER) && driver.owns(Token(43)) && !driver.owns(Token(44)));

    // A client of the foreign listener, so the loop sees a foreign event.
    let _client = std::net::TcpStream::connect(local).expect("connect listener");
    let mut accepted = Vec::new();
    let mut on_other = |_: &mut Poll, token: Token| {
        assert_eq!(token, LISTENER);
        while let Ok((s, _)) = listener.accept() {
            accepted.push(s);
        }
    };
    let (cluster, _) = run_in_loop(
        &mut poll,
        &mut driver,
        DescribeCluster::new(),
        &mut on_other,
    );
    let cluster = cluster.expect("describe cluster");
    assert_eq!(cluster.brokers.len(), 1, "{cluster:?}");
    let registered: Vec<Token> = driver.tokens().collect();
    assert!(!registered.is_empty());
    assert!(
        registered.iter().all(|t| (40..44).contains(&t.0)),
        "{registered:?}"
    );

    let name = unique::<Mio>("loop");
    let op = CreateTopics::new([NewTopic::new(&name, 1, 1)]);
    let (created, _) = run_in_loop(&mut poll, &mut driver, op, &mut on_other);
    let created = created.expect("create call");
    assert!(created[&name].is_ok(), "{created:?}");
    assert_eq!(
        accepted.len(),
        1,
        "the foreign listener's event reached the caller"
    );
    driver.shutdown(poll.registry());
}

/// Against the real broker with a one-token range: the bootstrap connection takes the
/// only token, so a second connection (to the controller, by node id) cannot open. That
/// is a connection failure the core sees and retries (no panic); the operation ends by
/// its deadline.
#[test]
fn mio_driver_with_one_token() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("mio_driver_with_one_token") else {
        return;
    };
    let mut poll = Poll::new().expect("poll");
    let cfg = config(&[("bootstrap.servers", &bootstrap)]);
    let mut driver = MioDriver::new(cfg, poll.registry(), 7..8).expect("driver");
    let no_foreign = |_: &mut Poll, t: Token| panic!("no foreign sockets here, got {t:?}");
    let (cluster, _) = run_in_loop(&mut poll, &mut driver, DescribeCluster::new(), no_foreign);
    cluster.expect("describe cluster over the bootstrap connection");

    let name = unique::<Mio>("one-token");
    let op = CreateTopics::new([NewTopic::new(&name, 1, 1)])
        .validate_only(true)
        .timeout(Duration::from_secs(2));
    let started = Instant::now();
    let (created, failures) = run_in_loop(&mut poll, &mut driver, op, no_foreign);
    assert!(
        matches!(
            created,
            Err(AdminError::Timeout { .. } | AdminError::Request(_))
        ),
        "{created:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(!failures.is_empty());
    assert!(
        failures
            .iter()
            .all(|f| f.contains("token range 7..8 exhausted")),
        "{failures:?}"
    );
    let registered: Vec<Token> = driver.tokens().collect();
    assert_eq!(registered, [Token(7)]);
    // The connection that has the token still works.
    let (cluster, _) = run_in_loop(&mut poll, &mut driver, DescribeCluster::new(), no_foreign);
    cluster.expect("describe cluster after exhaustion");
}

/// Against the real broker over SASL_SSL (SCRAM-SHA-512): TLS and authentication run in
/// the core; the mio driver only moves their bytes.
#[test]
fn mio_admin_over_sasl_ssl() {
    if kafka_tests::broker_or_skip("mio_admin_over_sasl_ssl").is_none() {
        return;
    }
    let ca = std::fs::read_to_string(var("KAFKA_SSL_CA_PEM")).expect("CA file");
    let admin = Mio::connect(config(&[
        ("bootstrap.servers", &var("KAFKA_SASL_SSL_BOOTSTRAP")),
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.username", &var("KAFKA_SASL_SCRAM_SHA_512_USERNAME")),
        ("sasl.password", &var("KAFKA_SASL_SCRAM_SHA_512_PASSWORD")),
        ("ssl.ca.pem", &ca),
    ]));
    let cluster = admin.0.describe_cluster().expect("describe cluster");
    assert_eq!(cluster.brokers.len(), 1, "{cluster:?}");
    let name = unique::<Mio>("sasl-ssl");
    let created = admin
        .0
        .create_topics([NewTopic::new(&name, 1, 1)])
        .expect("create call");
    assert!(created[&name].is_ok(), "{created:?}");
}

/// A 12 MB request (10,000 validate-only topics, each with a 1,000-byte config value) is
/// more than a socket send buffer takes (4 MB at most on Linux): the driver writes it in
/// parts, resuming on WRITABLE readiness. The broker rejects every value and quotes it
/// back, so each topic's answer shows its bytes arrived intact; the answer is megabytes
/// too, read in many chunks.
#[test]
fn mio_large_request_written_in_parts() {
    let Some(admin) = kafka_tests::admin_suite::plaintext::<Mio>("mio_large_request") else {
        return;
    };
    let base = unique::<Mio>("large");
    let names: Vec<String> = (0..10_000)
        .map(|i| format!("{base}-{i:05}-{}", "x".repeat(200)))
        .collect();
    let value = |i: usize| format!("{i:05}{}", "y".repeat(995));
    let topics = names
        .iter()
        .enumerate()
        .map(|(i, n)| NewTopic::new(n, 1, 1).config("cleanup.policy", value(i)));
    let op = CreateTopics::new(topics).validate_only(true);
    let result = admin.run(op).expect("validate-only create");
    assert_eq!(result.len(), names.len());
    for (i, name) in names.iter().enumerate() {
        match &result[name] {
            Err(AdminError::Kafka { code, message }) => {
                assert_eq!(*code, KafkaCode::INVALID_CONFIG, "{name}");
                let message = message.as_deref().unwrap_or_default();
                assert!(message.contains(&value(i)), "{name}: value not quoted back");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}
