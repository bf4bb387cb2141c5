//! Hostile servers that break a session after it started, through every adapter's admin
//! client (`kafka_tests::fake_broker`): a TLS listener that completes the handshake and
//! answers ApiVersions, then breaks the TLS stream ([`TlsBreak`]: a fatal alert, or
//! close_notify then garbage); and SASL brokers whose exchange never finishes
//! ([`SaslStall`]: SaslAuthenticate never answered under PLAIN, or SCRAM challenges that
//! never conclude). Each call ends by its deadline with a typed error naming the stage,
//! and the fake sees a bounded number of requests (no busy loop).

use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster};
use kafka_core::config::ClientConfig;
use kafka_tests::fake_broker::{ca_path, FakeBroker, Mode, SaslStall, TlsBreak};

/// Every call's deadline.
const DEADLINE: Duration = Duration::from_millis(2500);
/// How far past the deadline a call may end.
const SLACK: Duration = Duration::from_secs(2);

/// One adapter: runs a DescribeCluster on a fresh admin client for a config.
type RunFn<'a> = dyn Fn(ClientConfig) -> Result<(), AdminError> + 'a;

fn config(addr: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut pairs = vec![
        ("bootstrap.servers", addr),
        ("request.timeout.ms", "1000"),
        ("reconnect.backoff.ms", "50"),
        ("reconnect.backoff.max.ms", "200"),
    ];
    pairs.extend_from_slice(extra);
    ClientConfig::from_pairs(pairs).expect("config")
}

/// Runs one case: the call fails by its deadline, its error contains every phrase.
fn expect_error(name: &str, case: &str, run: &RunFn<'_>, config: ClientConfig, phrases: &[&str]) {
    let started = Instant::now();
    let err = run(config).expect_err("a hostile server");
    let took = started.elapsed();
    let text = err.to_string();
    println!("{name} {case}: {took:?}: {text}");
    assert!(took < DEADLINE + SLACK, "{name} {case}: {took:?}");
    for phrase in phrases {
        assert!(text.contains(phrase), "{name} {case}: {phrase:?} not in {text}");
    }
}

fn broken_streams(name: &str, run: &RunFn<'_>) {
    let ca = ca_path();
    for how in [TlsBreak::FatalAlert, TlsBreak::CloseNotifyThenGarbage] {
        let fake = FakeBroker::start(Mode::TlsBreak(how));
        let config = config(
            &fake.addr,
            &[("security.protocol", "SSL"), ("ssl.ca.location", &ca)],
        );
        expect_error(name, &format!("{how:?}"), run, config, &["TLS"]);
    }

    let fake = FakeBroker::start(Mode::SaslStall(SaslStall::NoAuthenticateAnswer));
    let plain = config(
        &fake.addr,
        &[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "secret"),
        ],
    );
    expect_error(name, "PLAIN unanswered", run, plain, &["SaslAuthenticate"]);
    // One SaslAuthenticate per connection, each timed out by request.timeout.ms.
    assert!(
        fake.sasl_authenticates() <= fake.connections(),
        "{name}: {} SaslAuthenticate on {} connections",
        fake.sasl_authenticates(),
        fake.connections()
    );
    assert!(fake.connections() <= 4, "{name}: {}", fake.connections());

    let fake = FakeBroker::start(Mode::SaslStall(SaslStall::EndlessChallenges));
    let scram = config(
        &fake.addr,
        &[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.username", "alice"),
            ("sasl.password", "secret"),
        ],
    );
    expect_error(name, "SCRAM endless", run, scram, &["SCRAM"]);
    // The client gives up on the first challenge that does not conclude: at most two
    // SaslAuthenticate per connection, and few connections.
    let (auths, conns) = (fake.sasl_authenticates(), fake.connections());
    println!("{name} SCRAM endless: {auths} SaslAuthenticate on {conns} connections");
    assert!(auths <= 2 * conns && conns <= 30, "{name}: {auths} on {conns}");
}

#[test]
fn blocking_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("blocking", &|c| {
        let admin = kafka_blocking::Admin::new(c).expect("admin");
        admin.run(DescribeCluster::new().timeout(DEADLINE)).map(|_| ())
    });
}

#[test]
fn mio_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("mio", &|c| {
        let admin = kafka_mio::Admin::new(c).expect("admin");
        admin.run(DescribeCluster::new().timeout(DEADLINE)).map(|_| ())
    });
}

#[test]
fn tokio_ends_broken_tls_and_sasl_sessions_in_time() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    broken_streams("tokio", &|c| {
        let admin = kafka_tokio::Admin::with_runtime(c, rt.handle()).expect("admin");
        rt.block_on(admin.run(DescribeCluster::new().timeout(DEADLINE)))
            .map(|_| ())
    });
}

#[test]
fn async_std_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("async-std", &|c| {
        let admin =
            kafka_async_std::Admin::with_spawner(c, |t| smol::spawn(t).detach()).expect("admin");
        smol::block_on(admin.run(DescribeCluster::new().timeout(DEADLINE))).map(|_| ())
    });
}
