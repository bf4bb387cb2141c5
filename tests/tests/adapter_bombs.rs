//! Decompression bombs through every adapter's `Consumer`, while another broker stays
//! healthy: the simulated cluster on loopback (`kafka_tests::sim::serve`) with two
//! brokers; partition 0 is led by broker 1, partition 1 by broker 2, and broker 2's log
//! holds, after a few ordinary records, one batch of each codec (gzip, snappy, lz4,
//! zstd) that inflates to 32 MiB, 32 times the configured fetch budget
//! (`fetch.max.bytes` = `max.partition.fetch.bytes` = 1 MiB), from a few KiB on the
//! wire (snappy, whose format caps the ratio near 21:1: 1.5 MiB).
//!
//! Each adapter's consumer hands out the records before the bomb, then
//! `ConsumeError::Corrupt` with `RecordError::DecompressedTooLarge { cap: 1 MiB }` for
//! partition 1 alone; partition 0 (broker 1) keeps being fetched: records appended to it
//! after the error arrive. The heap's peak while consuming stays far below the bomb's
//! size: the bomb is never inflated past the cap.
//!
//! One test function, so the peak-allocation figures are not disturbed by other tests
//! running on parallel threads of this binary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{ConsumeError, ConsumerRecord};
use kafka_core::record::{BatchBuilder, BatchOptions, Compression, RecordError};
use kafka_mio::mio::{Events, Poll};
use kafka_tests::sim::cluster::{SimCluster, StoredBatch};
use kafka_tests::sim::serve::SimServer;
use peak_alloc::PeakAlloc;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

const MIB: usize = 1 << 20;
/// `fetch.max.bytes` and `max.partition.fetch.bytes`.
const BUDGET: usize = MIB;
/// What each bomb inflates to.
const BOMB: usize = 32 * MIB;
/// Most the heap may grow over its level before a case.
const HEAP_BOUND: usize = 16 * MIB;
/// How long a case may take to show what it must.
const PATIENCE: Duration = Duration::from_secs(10);
const TOPIC: &str = "bombs";
const CODECS: [Compression; 4] = [
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// One adapter's consumer, reduced to what the cases need.
trait Reader {
    fn assign(&mut self, partitions: &[(&str, i32)]);
    /// Records, or the next partition error.
    fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError>;
}

struct Blocking(kafka_blocking::Consumer);

impl Reader for Blocking {
    fn assign(&mut self, partitions: &[(&str, i32)]) {
        self.0.assign(partitions.iter().copied()).expect("assign");
    }
    fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        self.0.poll(timeout).map_err(|e| match e {
            kafka_blocking::Error::Consume(c) => c,
            other => panic!("blocking: not a partition error: {other}"),
        })
    }
}

struct Tokio {
    rt: tokio::runtime::Runtime,
    consumer: kafka_tokio::Consumer,
}

impl Reader for Tokio {
    fn assign(&mut self, partitions: &[(&str, i32)]) {
        self.consumer
            .assign(partitions.iter().copied())
            .expect("assign");
    }
    fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        self.rt
            .block_on(self.consumer.poll(timeout))
            .map_err(|e| match e {
                kafka_tokio::Error::Consume(c) => c,
                other => panic!("tokio: not a partition error: {other}"),
            })
    }
}

struct AsyncStd(kafka_async_std::Consumer);

impl Reader for AsyncStd {
    fn assign(&mut self, partitions: &[(&str, i32)]) {
        self.0.assign(partitions.iter().copied()).expect("assign");
    }
    fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        async_std::task::block_on(self.0.poll(timeout)).map_err(|e| match e {
            kafka_async_std::Error::Consume(c) => c,
            other => panic!("async-std: not a partition error: {other}"),
        })
    }
}

/// The mio consumer in a loop this test owns.
struct Mio {
    poll: Poll,
    events: Events,
    driver: kafka_mio::Driver,
    id: OpId<kafka_core::consumer::Consumer>,
}

impl Mio {
    fn new(config: ClientConfig) -> Mio {
        let poll = Poll::new().expect("poll");
        let mut driver = kafka_mio::Driver::new(config, poll.registry(), 0..64).expect("driver");
        let id = driver.start_consumer();
        Mio {
            poll,
            events: Events::with_capacity(256),
            driver,
            id,
        }
    }

    fn turn(&mut self, max: Duration) {
        let wait = self.driver.timeout().map_or(max, |t| t.min(max));
        self.poll.poll(&mut self.events, Some(wait)).expect("poll");
        for event in self.events.iter() {
            if self.driver.owns(event.token()) {
                self.driver.handle_event(self.poll.registry(), event);
            }
        }
        self.driver.handle_timeout(self.poll.registry());
        self.driver.poll(self.poll.registry());
        // Events only wake the loop; `poll` below reads the consumer's state itself.
        while self.driver.poll_event().is_some() {}
    }
}

impl Reader for Mio {
    fn assign(&mut self, partitions: &[(&str, i32)]) {
        self.driver
            .consumer(self.id)
            .assign(partitions.iter().copied());
    }
    fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        let until = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let mut view = self.driver.consumer(self.id);
            if let Some(e) = view.take_error() {
                return Err(e);
            }
            if view.poll(&mut out) > 0 {
                self.driver.poll(self.poll.registry());
                return Ok(out);
            }
            let now = Instant::now();
            if now >= until {
                return Ok(out);
            }
            self.turn(until - now);
        }
    }
}

impl Drop for Mio {
    fn drop(&mut self) {
        self.driver.shutdown(self.poll.registry());
    }
}

const ADAPTERS: [&str; 4] = ["blocking", "tokio", "mio", "async-std"];

fn reader(adapter: &str, config: ClientConfig) -> Box<dyn Reader> {
    match adapter {
        "blocking" => Box::new(Blocking(
            kafka_blocking::Consumer::new(config).expect("consumer"),
        )),
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let consumer = rt
                .block_on(async { kafka_tokio::Consumer::new(config) })
                .expect("consumer");
            Box::new(Tokio { rt, consumer })
        }
        "mio" => Box::new(Mio::new(config)),
        "async-std" => Box::new(AsyncStd(
            kafka_async_std::Consumer::new(config).expect("consumer"),
        )),
        other => panic!("unknown adapter {other}"),
    }
}

/// One batch of `values` under `codec` at `base` (leader epoch 0).
fn batch(codec: Compression, base: i64, values: &[&[u8]]) -> Bytes {
    let opts = BatchOptions {
        base_offset: base,
        compression: codec,
        ..Default::default()
    };
    let mut b = BatchBuilder::new(opts, usize::MAX).expect("builder");
    for v in values {
        let _ = b.append(1, None, Some(v), &[]).expect("append");
    }
    b.seal().expect("seal").bytes.freeze()
}

/// Appends `values` to `partition`'s log as one batch.
fn append(server: &SimServer, partition: usize, codec: Compression, values: &[&[u8]]) {
    server.with_cluster(|c| {
        let p = &mut c.topics.get_mut(TOPIC).expect("topic").partitions[partition];
        let base = p.next_offset;
        let bytes = batch(codec, base, values);
        let last = base + values.len() as i64 - 1;
        p.log.push(StoredBatch { base, last, bytes });
        p.next_offset = last + 1;
    });
}

/// Appends a ready bomb (one record, built at offset 0) at the end of `partition`.
fn append_bomb(server: &SimServer, partition: usize, bomb: &Bytes) {
    server.with_cluster(|c| {
        let p = &mut c.topics.get_mut(TOPIC).expect("topic").partitions[partition];
        let base = p.next_offset;
        let mut bytes = bomb.to_vec();
        bytes[..8].copy_from_slice(&base.to_be_bytes());
        p.log.push(StoredBatch {
            base,
            last: base,
            bytes: Bytes::from(bytes),
        });
        p.next_offset = base + 1;
    });
}

fn config(bootstrap: &str) -> ClientConfig {
    let budget = BUDGET.to_string();
    ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
        ("fetch.max.bytes", budget.as_str()),
        ("max.partition.fetch.bytes", budget.as_str()),
        ("fetch.max.wait.ms", "50"),
        ("request.timeout.ms", "2000"),
    ])
    .expect("config")
}

/// What one case saw.
#[derive(Default)]
struct Seen {
    /// Values per partition, in order.
    values: [Vec<String>; 2],
    errors: Vec<ConsumeError>,
}

impl Seen {
    fn take(&mut self, out: Result<Vec<ConsumerRecord>, ConsumeError>) {
        match out {
            Ok(records) => {
                for r in records {
                    assert_eq!(r.topic.as_ref(), TOPIC);
                    let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or(b""));
                    self.values[r.partition as usize].push(value.into_owned());
                }
            }
            Err(e) => self.errors.push(e),
        }
    }
}

fn words(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// One adapter against one codec's bomb; returns the heap growth over the case.
fn case(adapter: &str, codec: Compression, bomb: &Bytes) -> usize {
    let mut cluster = SimCluster::new(2);
    cluster.create_topic(TOPIC, 2);
    let server = Arc::new(SimServer::start(cluster));
    let (healthy, before) = (words("p0", 5), words("p1", 5));
    let as_bytes = |v: &[String]| -> Vec<Vec<u8>> { v.iter().map(|s| s.clone().into()).collect() };
    let (h, b) = (as_bytes(&healthy), as_bytes(&before));
    append(
        &server,
        0,
        codec,
        &h.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    append(
        &server,
        1,
        codec,
        &b.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    append_bomb(&server, 1, bomb);
    append(&server, 1, codec, &[b"after the bomb"]);
    PEAK.reset_peak_usage();
    let base = PEAK.current_usage();
    let mut c = reader(adapter, config(&server.bootstrap()));
    c.assign(&[(TOPIC, 0), (TOPIC, 1)]);
    let mut seen = Seen::default();
    let start = Instant::now();
    while seen.errors.is_empty() || seen.values[0].len() < healthy.len() {
        assert!(
            start.elapsed() < PATIENCE,
            "{adapter} {codec:?}: values {:?}, errors {:?}",
            seen.values,
            seen.errors
        );
        seen.take(c.poll(Duration::from_millis(100)));
    }
    // Broker 1 keeps answering while broker 2's partition failed.
    let later = words("p0-later", 3);
    let l = as_bytes(&later);
    append(
        &server,
        0,
        codec,
        &l.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    let mut want0 = healthy.clone();
    want0.extend(later);
    while seen.values[0].len() < want0.len() {
        assert!(
            start.elapsed() < PATIENCE,
            "{adapter} {codec:?}: broker 1 stopped: {:?}",
            seen.values[0]
        );
        seen.take(c.poll(Duration::from_millis(100)));
    }
    seen.take(c.poll(Duration::from_millis(200)));
    drop(c);
    let grew = PEAK.peak_usage().saturating_sub(base);
    println!(
        "{adapter:>9} {codec:?}: {:?}; heap peak +{} KiB; {:?}",
        start.elapsed(),
        grew / 1024,
        seen.errors
    );
    assert_eq!(seen.values[0], want0, "{adapter} {codec:?}: partition 0");
    assert_eq!(
        seen.values[1], before,
        "{adapter} {codec:?}: before the bomb"
    );
    assert!(
        matches!(
            &seen.errors[..],
            [ConsumeError::Corrupt {
                partition: 1,
                offset: 5,
                error: RecordError::DecompressedTooLarge { cap: BUDGET },
                ..
            }]
        ),
        "{adapter} {codec:?}: {:?}",
        seen.errors
    );
    grew
}

#[test]
fn every_adapter_stops_every_codec_bomb_at_the_fetch_budget_while_another_broker_answers() {
    let bombs: Vec<(Compression, Bytes)> = CODECS
        .iter()
        .map(|&codec| {
            let zeros = vec![0u8; BOMB];
            let bomb = batch(codec, 0, &[&zeros]);
            // Snappy's format caps its ratio near 21:1; the others reach thousands.
            assert!(bomb.len() * 16 < BOMB, "{codec:?}: {} bytes", bomb.len());
            (codec, bomb)
        })
        .collect();
    let mut failures = Vec::new();
    for adapter in ADAPTERS {
        for (codec, bomb) in &bombs {
            let grew = case(adapter, *codec, bomb);
            if grew >= HEAP_BOUND {
                failures.push(format!("{adapter} {codec:?}: heap grew {grew} bytes"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
