//! Resource bounds under load, on the real broker: a `kafka_blocking::Producer` writes as
//! fast as the broker takes it while a `kafka_blocking::Consumer` in the same process
//! reads it back, for `SOAK_SECS` (40 s by default, CI), at `SOAK_RATE` records/s
//! (100,000 by default: ~22 MB/s of log, the topic deleted at the end). Each second's
//! records go out in one burst (more than `buffer.memory` holds, so sends wait for room),
//! and the reader stalls 300 ms every 1.5 s (so its fetch buffer fills to the budget).
//! Every 250 ms the test samples
//! the process's resident set (`VmRSS`), the producer's `buffer.memory` charge and the
//! consumer's buffered fetch bytes. Checked:
//! - at every sample, the producer's charge is within `buffer.memory` and the consumer's
//!   buffer within its budget (`queued.max.messages.kbytes`) plus one fetch answer
//!   (`fetch.max.bytes`: a fetch sent under the budget may land on top of it);
//! - after a warm-up (the first quarter), memory is flat: the peak of the second half of
//!   the samples is at most 10 % + 16 MiB above the first half's peak (a leak of even a
//!   few bytes per record shows: a run moves millions of records);
//! - every acknowledged record is read back exactly once, in order per partition, and no
//!   send failed.
//!
//! Long run: `SOAK_SECS=1800 KAFKA_REQUIRE_BROKER=1 cargo test -p kafka-tests --test
//! broker_soak -- --nocapture` (needs the rig: `tests/broker/rig up`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_blocking::{Consumer, Producer, Record};
use kafka_core::config::ClientConfig;
use kafka_tests::producer_suite::{create_topic_with, unique_topic};

const PARTITIONS: i32 = 3;
const VALUE_BYTES: usize = 200;
const BUFFER_MEMORY: usize = 4 << 20;
const QUEUED_KIB: usize = 512;
const FETCH_MAX: usize = 1 << 20;
const SAMPLE: Duration = Duration::from_millis(250);

/// This process's resident set, in KiB.
fn vm_rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// One sample: when, RSS (KiB), producer charge, consumer buffer.
struct Sample {
    at: Duration,
    rss_kib: usize,
    buffer_used: usize,
    buffered: usize,
}

#[test]
fn producer_and_consumer_stay_within_their_bounds_and_memory_stays_flat() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("broker_soak") else {
        return;
    };
    if !cfg!(target_os = "linux") {
        panic!("broker_soak samples /proc/self/status: Linux only");
    }
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let rate: u64 = std::env::var("SOAK_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
        .max(1);
    let topic = unique_topic("soak");
    create_topic_with(&bootstrap, &topic, PARTITIONS);

    let producer = Producer::new(
        ClientConfig::from_pairs([
            ("bootstrap.servers", bootstrap.as_str()),
            ("buffer.memory", &BUFFER_MEMORY.to_string()),
            ("batch.size", "65536"),
            ("linger.ms", "5"),
        ])
        .expect("producer config"),
    )
    .expect("producer");
    let consumer = Consumer::new(
        ClientConfig::from_pairs([
            ("bootstrap.servers", bootstrap.as_str()),
            ("auto.offset.reset", "earliest"),
            ("fetch.max.bytes", &FETCH_MAX.to_string()),
            ("max.partition.fetch.bytes", "524288"),
            ("queued.max.messages.kbytes", &QUEUED_KIB.to_string()),
        ])
        .expect("consumer config"),
    )
    .expect("consumer");
    consumer
        .assign((0..PARTITIONS).map(|p| (topic.as_str(), p)))
        .expect("assign");

    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));

    // The writer: record i goes to partition i % 3 and carries i in its first 8 bytes.
    let writer = {
        let (producer, stop, acked, failed, sent) = (
            producer.clone(),
            stop.clone(),
            acked.clone(),
            failed.clone(),
            sent.clone(),
        );
        let topic: Arc<str> = topic.as_str().into();
        std::thread::spawn(move || {
            let mut i: u64 = 0;
            let begun = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                // Second k's records (k * rate ..) go out in one burst from k seconds.
                let due = Duration::from_secs(i / rate);
                if let Some(wait) = due.checked_sub(begun.elapsed()) {
                    std::thread::sleep(wait);
                }
                let mut value = vec![b'v'; VALUE_BYTES];
                value[..8].copy_from_slice(&i.to_be_bytes());
                let record = Record::new(topic.clone(), Bytes::from(value))
                    .partition((i % PARTITIONS as u64) as i32);
                let (acked, failed) = (acked.clone(), failed.clone());
                producer
                    .send_with(record, move |r| {
                        let n = if r.is_ok() { &acked } else { &failed };
                        n.fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("send");
                i += 1;
                sent.store(i, Ordering::Relaxed);
            }
        })
    };

    // The reader: offsets contiguous from 0 and sequence numbers rising per partition.
    let reader_stop = Arc::new(AtomicBool::new(false));
    let read = Arc::new(AtomicU64::new(0));
    let reader = {
        let (consumer, stop, read) = (consumer.clone(), reader_stop.clone(), read.clone());
        std::thread::spawn(move || {
            let mut next_offset = [0i64; PARTITIONS as usize];
            let mut last_seq = [None::<u64>; PARTITIONS as usize];
            let mut last_stall = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if last_stall.elapsed() >= Duration::from_millis(1_500) {
                    std::thread::sleep(Duration::from_millis(300));
                    last_stall = Instant::now();
                }
                for r in consumer.poll(Duration::from_millis(100)).expect("poll") {
                    let p = r.partition as usize;
                    assert_eq!(r.offset, next_offset[p], "p{p}: offsets contiguous, once");
                    next_offset[p] += 1;
                    let v = r.value.as_deref().expect("a value");
                    assert_eq!(v.len(), VALUE_BYTES, "p{p} {}: value length", r.offset);
                    let seq = u64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
                    assert_eq!(seq % PARTITIONS as u64, p as u64, "record {seq} on p{p}");
                    assert!(
                        last_seq[p].is_none_or(|l| l < seq),
                        "p{p} {}: record {seq} after {:?}",
                        r.offset,
                        last_seq[p]
                    );
                    last_seq[p] = Some(seq);
                    read.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(SAMPLE);
        let p = producer.metrics().expect("producer metrics");
        let c = consumer.metrics().expect("consumer metrics");
        assert!(
            p.buffer_used + p.buffer_pooled <= p.buffer_limit && p.buffer_limit == BUFFER_MEMORY,
            "at {:?}: producer charge {} and pool {} over buffer.memory {}",
            start.elapsed(),
            p.buffer_used,
            p.buffer_pooled,
            p.buffer_limit
        );
        assert!(
            c.buffered_bytes <= QUEUED_KIB * 1024 + FETCH_MAX,
            "at {:?}: consumer buffers {} bytes, budget {} + one fetch {}",
            start.elapsed(),
            c.buffered_bytes,
            QUEUED_KIB * 1024,
            FETCH_MAX
        );
        samples.push(Sample {
            at: start.elapsed(),
            rss_kib: vm_rss_kib(),
            buffer_used: p.buffer_used,
            buffered: c.buffered_bytes,
        });
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    producer.flush(Duration::from_secs(60)).expect("flush");
    let total = sent.load(Ordering::Relaxed);
    assert_eq!(failed.load(Ordering::Relaxed), 0, "failed sends");
    assert_eq!(
        acked.load(Ordering::Relaxed),
        total,
        "every send acknowledged"
    );

    let drained = Instant::now();
    while read.load(Ordering::Relaxed) < total && drained.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    reader_stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader");
    assert_eq!(
        read.load(Ordering::Relaxed),
        total,
        "every acknowledged record read once"
    );
    producer.close(Duration::from_secs(30)).expect("close");
    consumer.close().expect("consumer close");
    let admin = kafka_blocking::Admin::new(
        ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())]).expect("config"),
    )
    .expect("admin");
    let deleted = admin
        .delete_topics([topic.as_str()])
        .expect("delete_topics");
    assert!(
        deleted[topic.as_str()].is_ok(),
        "delete {topic}: {deleted:?}"
    );

    // Flat after warm-up.
    let warm: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at >= Duration::from_secs(secs) / 4)
        .collect();
    assert!(warm.len() >= 8, "{} samples after warm-up", warm.len());
    let (first, second) = warm.split_at(warm.len() / 2);
    let peak = |s: &[&Sample]| s.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let (p1, p2) = (peak(first), peak(second));
    let max_used = samples.iter().map(|s| s.buffer_used).max().unwrap_or(0);
    let max_buffered = samples.iter().map(|s| s.buffered).max().unwrap_or(0);
    println!(
        "broker_soak: {secs} s, {total} records ({:.0}/s) written and read once; {} samples; \
         RSS peak {} MiB in the first half after warm-up, {} MiB in the second; producer \
         charge max {} KiB of {} KiB; consumer buffer max {} KiB (budget {} KiB + one fetch \
         {} KiB)",
        total as f64 / secs as f64,
        samples.len(),
        p1 / 1024,
        p2 / 1024,
        max_used / 1024,
        BUFFER_MEMORY / 1024,
        max_buffered / 1024,
        QUEUED_KIB,
        FETCH_MAX / 1024
    );
    assert!(
        total >= rate * secs / 2,
        "only {total} records in {secs} s at {rate}/s"
    );
    // The bounds were reached, not only respected.
    assert!(
        max_used >= BUFFER_MEMORY / 2,
        "the producer never used half its buffer.memory ({max_used} bytes)"
    );
    assert!(
        max_buffered >= QUEUED_KIB * 1024 / 2,
        "the consumer never filled half its budget ({max_buffered} bytes)"
    );
    assert!(
        p2 <= p1 + p1 / 10 + 16 * 1024,
        "memory grew after warm-up: peak {p1} KiB then {p2} KiB"
    );
}
