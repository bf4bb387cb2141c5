//! Suite: errors that say why, early (issue #11): a wrong SASL password ends a call
//! within a couple of seconds with the broker's message; a broker certificate for
//! another host ends it at once with the TLS failure (no retry, default retries);
//! ListOffsets and DeleteRecords on
//! an unknown topic end with UNKNOWN_TOPIC_OR_PARTITION at once, not at the deadline.

use std::time::{Duration, Instant};

use kafka_core::admin::{
    AdminError, DeleteRecords, DescribeCluster, ListOffsets, OffsetSpec, TopicPartition,
};
use kafka_core::conn::{ConnError, RequestError};
use kafka_core::protocol::KafkaCode;

use super::{config, plaintext, unique, var, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_errors {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            errors::a_wrong_sasl_password_fails_fast_with_the_brokers_message,
            errors::a_certificate_for_another_host_fails_fast,
            errors::offsets_of_an_unknown_topic_fail_fast,
        );
    };
}

/// Well under `default.api.timeout.ms` (60 s): what "at once" means on a loaded machine.
const FAST: Duration = Duration::from_secs(5);

/// A wrong password on the SASL listener: the call ends at once (authentication failures
/// are not retried) and the error carries the broker's message.
pub fn a_wrong_sasl_password_fails_fast_with_the_brokers_message<D: Driver>() {
    if crate::broker_or_skip("a_wrong_sasl_password_fails_fast_with_the_brokers_message").is_none()
    {
        return;
    }
    let admin = D::connect(config(&[
        ("bootstrap.servers", &var("KAFKA_SASL_BOOTSTRAP")),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", &var("KAFKA_SASL_PLAIN_USERNAME")),
        ("sasl.password", "not-the-password"),
    ]));
    let started = Instant::now();
    let err = admin
        .run(DescribeCluster::new())
        .expect_err("a wrong password");
    let took = started.elapsed();
    println!("{}: {took:?}: {err}", D::NAME);
    assert!(took < FAST, "{took:?}: {err}");
    assert!(!err.is_retriable(), "{err:?}");
    match &err {
        AdminError::Request(RequestError::Connection(ConnError::AuthenticationFailed {
            mechanism,
            message,
        })) => {
            assert_eq!(mechanism, "PLAIN");
            // Kafka's PlainServerCallbackHandler: "Authentication failed: Invalid
            // username or password".
            assert!(
                message.contains("Invalid username or password"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.to_string().contains("not-the-password"), "{err}");
}

/// The rig's WRONG_HOST listener serves a certificate for `wrong.example` only: the TLS
/// failure is not retriable, so the call ends at once with it (the default `retries`,
/// not the deadline).
pub fn a_certificate_for_another_host_fails_fast<D: Driver>() {
    if crate::broker_or_skip("a_certificate_for_another_host_fails_fast").is_none() {
        return;
    }
    let ca = std::fs::read_to_string(var("KAFKA_SSL_CA_PEM")).expect("the rig's CA");
    let admin = D::connect(config(&[
        ("bootstrap.servers", &var("KAFKA_SSL_WRONG_HOST_BOOTSTRAP")),
        ("security.protocol", "SSL"),
        ("ssl.ca.pem", &ca),
    ]));
    let started = Instant::now();
    let err = admin
        .run(DescribeCluster::new())
        .expect_err("a certificate for another host");
    let took = started.elapsed();
    println!("{}: {took:?}: {err}", D::NAME);
    assert!(took < FAST, "{took:?}: {err}");
    assert!(!err.is_retriable(), "{err:?}");
    assert!(
        matches!(
            &err,
            AdminError::Request(RequestError::Connection(ConnError::Tls(
                kafka_core::conn::TlsFailure::Certificate(_)
            )))
        ),
        "{err:?}"
    );
}

/// ListOffsets (Java's behaviour since KAFKA-15425) and DeleteRecords on a topic that does
/// not exist end with UNKNOWN_TOPIC_OR_PARTITION at once.
pub fn offsets_of_an_unknown_topic_fail_fast<D: Driver>() {
    let Some(admin) = plaintext::<D>("offsets_of_an_unknown_topic_fail_fast") else {
        return;
    };
    let missing = TopicPartition::new(unique::<D>("never-created"), 0);
    let started = Instant::now();
    let listed = admin
        .run(ListOffsets::new([(missing.clone(), OffsetSpec::Latest)]))
        .expect("per-partition results");
    let deleted = admin
        .run(DeleteRecords::new([(missing.clone(), 0)]))
        .expect("per-partition results");
    let took = started.elapsed();
    println!(
        "{}: {took:?}: {:?} / {:?}",
        D::NAME,
        listed[&missing],
        deleted[&missing]
    );
    assert!(took < FAST, "{took:?}");
    for result in [
        listed[&missing].as_ref().map(|_| ()),
        deleted[&missing].as_ref().map(|_| ()),
    ] {
        let err = result.expect_err("unknown topic");
        assert_eq!(
            err.code(),
            Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
            "{err}"
        );
    }
}
