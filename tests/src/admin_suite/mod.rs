//! The admin suite: one body of real-broker tests, run once per runtime adapter.
//!
//! Each adapter's test file implements [`Driver`] over its public API and expands
//! [`admin_suite!`](crate::admin_suite) to get one `#[test]` per suite function. Every
//! function connects on its own (`D::connect`), names its resources uniquely per adapter
//! and run, and asserts per-item results against the real broker.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use kafka_core::admin::{AdminError, Operation};
use kafka_core::config::ClientConfig;

use crate::rig_var;

pub mod cluster;
pub mod configs;
pub mod errors;
pub mod group_types;
pub mod groups;
pub mod offsets;
pub mod quorum;
pub mod security;
pub mod topics;
pub mod txns;

/// An adapter under test: how to build its admin client and run one operation to
/// completion (async adapters block on their runtime here).
pub trait Driver: Sized {
    /// Short adapter name, used in resource names (`tokio`, `mio`, ...).
    const NAME: &'static str;

    /// Builds the adapter's admin client for `config`.
    fn connect(config: ClientConfig) -> Self;

    /// Runs `op` through the adapter's public `run` method.
    fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>;
}

/// The admin client on the rig's PLAINTEXT listener, or `None` (skip, with a message)
/// when no broker is up and `KAFKA_REQUIRE_BROKER` is not set.
pub fn plaintext<D: Driver>(test: &str) -> Option<D> {
    let bootstrap = crate::broker_or_skip(test)?;
    Some(D::connect(config(&[("bootstrap.servers", &bootstrap)])))
}

/// A config from key/value pairs (panics on a bad key: test setup error).
pub fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied()).expect("test config")
}

/// A rig env variable that must exist.
pub fn var(name: &str) -> String {
    rig_var(name).unwrap_or_else(|| panic!("rig env lacks {name}"))
}

/// A name unique to this adapter, process and call: `<what>-<adapter>-<n>`.
pub fn unique<D: Driver>(what: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() % 100_000_000)
        .unwrap_or_default();
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{what}-{}-{stamp}-{n}", D::NAME)
}

/// Expands to one `#[test]` per listed suite function, for driver type `$d`.
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_tests {
    ($d:ty; $($group:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::admin_suite::$group::$name::<$d>();
            }
        )*
    };
}

/// The whole admin suite for driver type `$d` (one `#[test]` per operation group test).
#[macro_export]
macro_rules! admin_suite {
    ($d:ty) => {
        $crate::__suite_topics!($d);
        $crate::__suite_configs!($d);
        $crate::__suite_offsets!($d);
        $crate::__suite_groups!($d);
        $crate::__suite_txns!($d);
        $crate::__suite_security!($d);
        $crate::__suite_cluster!($d);
        $crate::__suite_errors!($d);
        $crate::__suite_quorum!($d);
        $crate::__suite_group_types!($d);
    };
}
