//! The parts of the real-broker chaos run (`tests/tests/broker_chaos.rs`): the adapters
//! taking part and the values each writes, the producers (`producers`), the pipelines
//! (`pipelines`), the group members (`members`), the owner watch (`owners`), and the
//! drains and offset look-ups the checks use.

pub(crate) mod members;
pub(crate) mod owners;
pub(crate) mod pipelines;
pub(crate) mod producers;

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use kafka_blocking::{Admin, Consumer};
use kafka_core::admin::ListConsumerGroupOffsets;
use kafka_core::config::ClientConfig;

use crate::group_common::Seen;

/// Partitions of the input and output topics.
pub(crate) const PARTITIONS: i32 = 6;
/// The longest any catch-up after the faults may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(180);

/// A client adapter taking part in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Adapter {
    Blocking,
    Tokio,
    AsyncStd,
    Mio,
}

impl Adapter {
    /// Every adapter, each with an idempotent producer in the run.
    pub(crate) const ALL: [Adapter; 4] = [
        Adapter::Blocking,
        Adapter::Tokio,
        Adapter::AsyncStd,
        Adapter::Mio,
    ];

    /// The crate's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Adapter::Blocking => "kafka-blocking",
            Adapter::Tokio => "kafka-tokio",
            Adapter::AsyncStd => "kafka-async-std",
            Adapter::Mio => "kafka-mio",
        }
    }

    /// The value of this adapter's `i`th record: its own billion, so every value in
    /// the logs names the producer that wrote it (and stays a number the group members
    /// parse).
    pub(crate) fn value(self, i: u64) -> u64 {
        self as u64 * 1_000_000_000 + i
    }

    /// The adapter whose producer wrote `value`.
    pub(crate) fn of_value(value: u64) -> Option<Adapter> {
        Adapter::ALL.get((value / 1_000_000_000) as usize).copied()
    }
}

/// A drained topic: the value at each `(partition, offset)`.
pub(crate) type Log = BTreeMap<(i32, i64), Vec<u8>>;

/// What a producer was told about its record `i` (partition `i % 6`): `Ok((partition,
/// offset))`, or `Err((possibly delivered, why))`; `None`: no outcome (the checker
/// reports it).
pub(crate) type Sent = Result<(i32, i64), (bool, String)>;

pub(crate) fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

pub(crate) fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied()).expect("config")
}

/// The pipelines' output value for input value `v`.
pub(crate) fn out_value(v: &[u8]) -> Vec<u8> {
    [b"out-".as_slice(), v].concat()
}

/// The group's committed offsets of `topic` (empty while unknown).
pub(crate) fn committed(admin: &Admin, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let Ok(mut all) = admin.run(ListConsumerGroupOffsets::new(group)) else {
        return BTreeMap::new();
    };
    let Some(Ok(offsets)) = all.remove(group) else {
        return BTreeMap::new();
    };
    offsets
        .into_iter()
        .filter(|(tp, _)| tp.topic == topic)
        .filter_map(|(tp, r)| Some((tp.partition, r.ok()??.offset)))
        .collect()
}

/// Every record of `topic` as a consumer with `isolation` reads it to the end offsets
/// (high watermark or last stable offset): `(partition, offset, value)`.
pub(crate) fn drain(bootstrap: &str, topic: &str, isolation: &str) -> Vec<(i32, i64, Vec<u8>)> {
    let c = Consumer::new(config(&[
        ("bootstrap.servers", bootstrap),
        ("isolation.level", isolation),
        ("auto.offset.reset", "earliest"),
    ]))
    .expect("reader");
    let parts: Vec<(&str, i32)> = (0..PARTITIONS).map(|p| (topic, p)).collect();
    c.assign(parts.iter().copied()).expect("assign");
    let ends = c
        .end_offsets(parts.iter().copied(), Duration::from_secs(60))
        .expect("end offsets");
    let start = Instant::now();
    let mut out = Vec::new();
    loop {
        for r in c.poll(Duration::from_millis(200)).expect("poll") {
            out.push((r.partition, r.offset, r.value.unwrap_or_default().to_vec()));
        }
        let done = ends.iter().all(|(tp, end)| {
            c.position(topic, tp.partition)
                .expect("position")
                .is_some_and(|p| p >= *end)
        });
        if done {
            break;
        }
        assert!(start.elapsed() < PATIENCE, "{isolation} drain of {topic}");
    }
    c.close().expect("close the reader");
    out
}

/// A member's record, also after its thread panicked holding the lock (the panic is
/// reported on its own).
pub(crate) fn seen(m: &Mutex<Seen>) -> MutexGuard<'_, Seen> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
