//! `produce` through `kafka_blocking::Producer`, as an application runs it: with
//! `--rate R` (open loop, record i due at start + i/R; the main thread sleeps until the
//! next record is due, then sends every record due by then) or, with `--api adapter`,
//! closed loop (sends as fast as `send_with` takes them: it blocks while the staging
//! queue is full). Each record's callback (on the driver thread) counts its ack and, at a
//! rate, takes its send→ack time; the last acks come with `flush`. No `with_core`
//! command and no reply per record: the producer's staging queue wakes the driver only
//! when it must (see `kafka-driver`'s `Outbox`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_blocking::{Producer, Record, RecordMetadata};
use kafka_core::config::ClientConfig;
use kafka_core::producer::ProduceError;

use crate::{json_str, percentiles, version};

/// The shortest sleep between sends at a rate.
const PACE: Duration = Duration::from_millis(1);

/// What the callbacks count (locked by one callback at a time, on the driver thread).
struct Tally {
    start: Instant,
    warmup: u64,
    acked: u64,
    errors: u64,
    bytes: u64,
    first_error: Option<String>,
    first_ns: Option<u64>,
    warm_ns: Option<u64>,
    last_ns: u64,
    /// Send→ack per acknowledged record, in ns (at a rate).
    lat_ns: Vec<u64>,
    timed: bool,
    /// By partition: acked records and the highest acked offset.
    part_count: Vec<u64>,
    part_last: Vec<i64>,
}

impl Tally {
    fn ack(&mut self, outcome: Result<RecordMetadata, ProduceError>, sent_ns: u64, len: usize) {
        let now = self.start.elapsed().as_nanos() as u64;
        match outcome {
            Ok(m) => {
                if self.acked == 0 {
                    self.first_ns = Some(now);
                }
                self.acked += 1;
                if self.acked == self.warmup {
                    self.warm_ns = Some(now);
                }
                self.last_ns = now;
                self.bytes += len as u64;
                if self.timed {
                    self.lat_ns.push(now.saturating_sub(sent_ns));
                }
                let p = m.partition.max(0) as usize;
                if self.part_count.len() <= p {
                    self.part_count.resize(p + 1, 0);
                    self.part_last.resize(p + 1, -1);
                }
                self.part_count[p] += 1;
                self.part_last[p] = self.part_last[p].max(m.offset);
            }
            Err(e) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e.to_string());
                }
            }
        }
    }
}

/// Produces `n` records of the payload `pool`, at `rate` records/s if it is not 0.
pub(crate) fn produce_with_adapter(
    config: ClientConfig,
    topic: &str,
    n: u64,
    pool: &'static [&'static [u8]],
    rate: u64,
    warmup: u64,
) -> Result<String, String> {
    let producer = Producer::new(config).map_err(|e| format!("producer: {e}"))?;
    let topic: Arc<str> = topic.into();
    let start = Instant::now();
    let tally = Arc::new(Mutex::new(Tally {
        start,
        warmup,
        acked: 0,
        errors: 0,
        bytes: 0,
        first_error: None,
        first_ns: None,
        warm_ns: None,
        last_ns: 0,
        lat_ns: Vec::with_capacity(if rate > 0 { n as usize } else { 0 }),
        timed: rate > 0,
        part_count: Vec::new(),
        part_last: Vec::new(),
    }));
    let due = |i: u64| Duration::from_nanos((i as u128 * 1_000_000_000 / rate as u128) as u64);
    let mut next = 0u64;
    let mut line = 0usize;
    while next < n {
        let (until, sent_ns) = if rate > 0 {
            let el = start.elapsed();
            let d = due(next);
            if d > el {
                // At least PACE: the pacing of every peer (franz-go's Go timers wait in
                // whole milliseconds), so that the harness's wake-ups cost each client
                // the same.
                std::thread::sleep((d - el).max(PACE));
            }
            let el = start.elapsed();
            // Every record due by now (at least the one we slept for).
            let due_n = (el.as_nanos() * rate as u128 / 1_000_000_000) as u64 + 1;
            (due_n.clamp(next + 1, n), el.as_nanos() as u64)
        } else {
            (n, 0)
        };
        while next < until {
            let value = pool[line];
            line = (line + 1) % pool.len();
            let t = tally.clone();
            let record = Record::new(topic.clone(), Bytes::from_static(value));
            producer
                .send_with(record, move |r| {
                    t.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .ack(r, sent_ns, value.len())
                })
                .map_err(|e| format!("send of record {next}: {e}"))?;
            next += 1;
        }
    }
    let limit = Duration::from_secs(300);
    producer
        .flush(limit)
        .map_err(|e| format!("flush after the last record: {e}"))?;
    // How often the sends woke the driver (the wake rule), for the logs.
    if let Ok(hub) = producer.client().stats() {
        eprintln!(
            "e2e-peer-ours: {n} records, {} driver wakes by sends, {} timed takes",
            hub.producer_wakes, hub.producer_timed_pumps
        );
    }
    producer
        .close(Duration::from_secs(30))
        .map_err(|e| format!("close: {e}"))?;

    let s = tally.lock().unwrap_or_else(PoisonError::into_inner);
    let steady = match s.warm_ns {
        Some(w) if s.acked > warmup && s.last_ns > w => {
            (s.acked - warmup) as f64 / ((s.last_ns - w) as f64 / 1e9)
        }
        _ => 0.0,
    };
    let parts: Vec<String> = (0..s.part_count.len())
        .filter(|&p| s.part_count[p] > 0)
        .map(|p| {
            format!(
                "{{\"p\":{p},\"count\":{},\"last\":{}}}",
                s.part_count[p], s.part_last[p]
            )
        })
        .collect();
    let lat = if rate > 0 {
        percentiles(s.lat_ns.iter().map(|&ns| ns as f64 / 1e6).collect())
    } else {
        "null".into()
    };
    Ok(format!(
        "{{\"peer\":\"ours\",\"version\":{},\"op\":\"produce\",\"records\":{},\"bytes\":{},\"errors\":{},\
\"elapsed_s\":{:.6},\"first_s\":{:.6},\"steady_rps\":{steady:.1},\"txns\":0,\"lat_ms\":{lat},\
\"commit_ms\":null,\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        s.acked,
        s.bytes,
        s.errors,
        s.last_ns as f64 / 1e9,
        s.first_ns.unwrap_or(0) as f64 / 1e9,
        parts.join(","),
        json_str(s.first_error.as_deref().unwrap_or(""))
    ))
}
