//! Hostile servers that break a session after it started, through every adapter's admin
//! client (`kafka_tests::fake_broker`): a TLS listener that completes the handshake and
//! answers ApiVersions, then breaks the TLS stream ([`TlsBreak`]: a fatal alert, or
//! close_notify then garbage); and SASL brokers whose exchange never finishes
//! ([`SaslStall`]: SaslAuthenticate never answered under PLAIN, or SCRAM challenges that
//! never conclude). Each call ends by its deadline with a typed error naming the stage,
//! and the fake sees a bounded number of requests (no busy loop); while the SASL call
//! stalls, another client of the same adapter keeps listing a healthy cluster's topics.

use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster, ListTopics};
use kafka_core::config::ClientConfig;
use kafka_tests::fake_broker::{ca_path, FakeBroker, Mode, SaslStall, TlsBreak};
use kafka_tests::sim::cluster::SimCluster;
use kafka_tests::sim::serve::SimServer;

/// Every call's deadline.
const DEADLINE: Duration = Duration::from_millis(2500);
/// How far past the deadline a call may end.
const SLACK: Duration = Duration::from_secs(2);

/// What a case runs on a fresh admin client.
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// `DescribeCluster` with [`DEADLINE`]: the hostile case.
    Describe,
    /// `ListTopics` (Metadata): the healthy client; the topics listed.
    ListTopics,
}

/// One adapter: runs a probe on a fresh admin client for a config; the topics listed
/// (none for `Describe`). `Sync`: a hostile and a healthy call run at once.
type RunFn<'a> = dyn Fn(ClientConfig, Probe) -> Result<Vec<String>, AdminError> + Sync + 'a;

/// Runs `probe` through an adapter's `run` (`$run`: a closure taking any admin
/// operation; a macro because the operations' types differ).
macro_rules! probe {
    ($probe:expr, $run:expr) => {
        match $probe {
            Probe::Describe => $run(DescribeCluster::new().timeout(DEADLINE)).map(|_| Vec::new()),
            Probe::ListTopics => $run(ListTopics::new().timeout(DEADLINE))
                .map(|t| t.into_keys().collect::<Vec<String>>()),
        }
    };
}

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

/// Runs one case: the call fails by its deadline with an error containing every
/// phrase; `fast`: a cause no retry can fix, which ends the call at once (well before
/// the deadline), else a retriable one the call retries until its deadline names.
fn expect_error(
    name: &str,
    case: &str,
    run: &RunFn<'_>,
    config: ClientConfig,
    phrases: &[&str],
    fast: bool,
) {
    let started = Instant::now();
    let err = run(config, Probe::Describe).expect_err("a hostile server");
    let took = started.elapsed();
    let text = err.to_string();
    println!("{name} {case}: {took:?}: {text}");
    assert!(took < DEADLINE + SLACK, "{name} {case}: {took:?}");
    for phrase in phrases {
        assert!(
            text.contains(phrase),
            "{name} {case}: {phrase:?} not in {text}"
        );
    }
    if fast {
        assert!(took < DEADLINE / 2, "{name} {case}: {took:?}");
        assert!(!err.is_retriable(), "{name} {case}: {err:?}");
    } else {
        assert!(
            matches!(err, AdminError::Timeout { .. }),
            "{name} {case}: {err:?}"
        );
        assert!(text.contains("last cause: "), "{name} {case}: {text}");
    }
}

fn broken_streams(name: &str, run: &RunFn<'_>) {
    let ca = ca_path();
    // A fatal alert in the clear inside the session: a TLS failure, not retried.
    // A clean close_notify: retriable (a broker shutting down does it), named as the
    // last cause when the deadline passes; the garbage after it is never read.
    for (how, phrases, fast) in [
        (TlsBreak::FatalAlert, &["TLS failed"][..], true),
        (
            TlsBreak::CloseNotifyThenGarbage,
            &["closed the TLS session (close_notify)"][..],
            false,
        ),
    ] {
        let fake = FakeBroker::start(Mode::TlsBreak(how));
        let config = config(
            &fake.addr,
            &[("security.protocol", "SSL"), ("ssl.ca.location", &ca)],
        );
        expect_error(name, &format!("{how:?}"), run, config, phrases, fast);
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
    // Meanwhile another client of the same adapter (the same runtime, for the async
    // ones) lists the topics of a healthy cluster, promptly, again and again.
    let mut cluster = SimCluster::new(1);
    cluster.create_topic("healthy", 1);
    let healthy = SimServer::start(cluster);
    let stalled = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let phrase = ["SaslAuthenticate request", "timed out"];
            expect_error(name, "PLAIN unanswered", run, plain, &phrase, false);
            stalled.store(false, std::sync::atomic::Ordering::SeqCst);
        });
        let mut listed = 0;
        while stalled.load(std::sync::atomic::Ordering::SeqCst) {
            let started = Instant::now();
            let topics = run(config(&healthy.bootstrap(), &[]), Probe::ListTopics)
                .expect("the healthy cluster answers");
            assert_eq!(topics, vec!["healthy".to_string()], "{name}");
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{name}: {:?}",
                started.elapsed()
            );
            listed += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
        println!("{name}: {listed} healthy calls while SASL stalled");
        assert!(listed >= 2, "{name}: {listed} healthy calls");
    });
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
    // A second challenge where the server-final message (`v=...`) belongs: the SCRAM
    // exchange fails at that stage, for good.
    let phrase = ["SASL exchange failed", "verifier attribute v="];
    expect_error(name, "SCRAM endless", run, scram, &phrase, true);
    // The client gives up on the first challenge that does not conclude: two
    // SaslAuthenticate per connection, on few connections.
    let (auths, conns) = (fake.sasl_authenticates(), fake.connections());
    println!("{name} SCRAM endless: {auths} SaslAuthenticate on {conns} connections");
    assert!(
        auths <= 2 * conns && conns <= 30,
        "{name}: {auths} on {conns}"
    );
}

#[test]
fn blocking_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("blocking", &|c, p| {
        let admin = kafka_blocking::Admin::new(c).expect("admin");
        probe!(p, |op| admin.run(op))
    });
}

#[test]
fn mio_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("mio", &|c, p| {
        let admin = kafka_mio::Admin::new(c).expect("admin");
        probe!(p, |op| admin.run(op))
    });
}

#[test]
fn tokio_ends_broken_tls_and_sasl_sessions_in_time() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    broken_streams("tokio", &|c, p| {
        let admin = kafka_tokio::Admin::with_runtime(c, rt.handle()).expect("admin");
        probe!(p, |op| rt.block_on(admin.run(op)))
    });
}

#[test]
fn async_std_ends_broken_tls_and_sasl_sessions_in_time() {
    broken_streams("async-std", &|c, p| {
        let admin =
            kafka_async_std::Admin::with_spawner(c, |t| smol::spawn(t).detach()).expect("admin");
        probe!(p, |op| smol::block_on(admin.run(op)))
    });
}
