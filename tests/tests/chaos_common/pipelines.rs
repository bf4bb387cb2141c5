//! The chaos run's transactional consume-transform-produce pipelines (`TxnPipeline`,
//! read_committed, offsets in the transaction): `kafka-blocking`'s and `kafka-tokio`'s,
//! each on its own group, `transactional.id` and output topic. An instance that hits a
//! non-abortable error is dropped and a new one takes the `transactional.id` over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use tokio::runtime::Runtime;

use super::{config, out_value, Adapter, PARTITIONS};

/// How long a pipeline may go without input before it reports its consumer's state
/// (again every such span): what a stalled pipeline looked like.
const STALL: Duration = Duration::from_secs(15);

/// Time since the last committed transaction, and the last stall report.
struct Idle {
    since: Instant,
    reported: Instant,
}

impl Default for Idle {
    fn default() -> Self {
        let now = Instant::now();
        Idle {
            since: now,
            reported: now,
        }
    }
}

impl Idle {
    fn report_due(&mut self) -> bool {
        let due = self.reported.elapsed() >= STALL;
        if due {
            self.reported = Instant::now();
        }
        due
    }

    fn since(&self) -> Duration {
        self.since.elapsed()
    }
}

/// What one pipeline did.
#[derive(Debug, Default)]
pub(crate) struct PipeStats {
    pub(crate) instances: u32,
    pub(crate) transactions: u64,
    pub(crate) records: u64,
    pub(crate) aborted: u64,
    pub(crate) errors: Vec<String>,
}

impl PipeStats {
    fn note(&mut self, adapter: Adapter, what: String) {
        println!("{} pipeline: {what}", adapter.name());
        if self.errors.len() < 50 {
            self.errors.push(what);
        }
    }
}

/// Where a pipeline reads, writes and commits.
#[derive(Debug, Clone)]
pub(crate) struct Pipe {
    pub(crate) adapter: Adapter,
    pub(crate) input: String,
    pub(crate) output: String,
    pub(crate) group: String,
}

impl Pipe {
    fn consumer(&self, via: &str) -> ClientConfig {
        config(&[
            ("bootstrap.servers", via),
            ("group.id", &self.group),
            ("isolation.level", "read_committed"),
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "10000"),
            ("heartbeat.interval.ms", "1000"),
            ("max.poll.records", "500"),
            ("reconnect.backoff.max.ms", "500"),
        ])
    }

    fn producer(&self, via: &str) -> ClientConfig {
        config(&[
            ("bootstrap.servers", via),
            ("transactional.id", &format!("{}-tx", self.group)),
            ("linger.ms", "5"),
            ("transaction.timeout.ms", "30000"),
            ("request.timeout.ms", "5000"),
            ("reconnect.backoff.max.ms", "500"),
        ])
    }
}

/// Runs `pipe` until `stop` (a tokio pipeline on `rt`).
pub(crate) fn run(pipe: &Pipe, via: &str, stop: &AtomicBool, rt: &Runtime) -> PipeStats {
    match pipe.adapter {
        Adapter::Blocking => blocking(pipe, via, stop),
        Adapter::Tokio => rt.block_on(tokio(pipe, via, stop)),
        other => unimplemented!("no {} pipeline in the chaos run", other.name()),
    }
}

fn blocking(pipe: &Pipe, via: &str, stop: &AtomicBool) -> PipeStats {
    use kafka_blocking::{Error, Record, TxnPipeline};
    let mut stats = PipeStats::default();
    while !stop.load(Ordering::SeqCst) {
        let p = match TxnPipeline::new(pipe.consumer(via), pipe.producer(via), [&pipe.input]) {
            Ok(p) => p,
            Err(e) => {
                stats.note(pipe.adapter, format!("new instance failed: {e}"));
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        stats.instances += 1;
        let mut idle = Idle::default();
        while !stop.load(Ordering::SeqCst) {
            if idle.report_due() {
                let c = p.consumer();
                let at: Vec<_> = (0..PARTITIONS)
                    .map(|q| c.position(&pipe.input, q).ok().flatten())
                    .collect();
                let what = format!(
                    "no input for {:?}: assignment {:?}, positions {at:?}, {:?}",
                    idle.since(),
                    c.assignment(),
                    c.metrics()
                );
                stats.note(pipe.adapter, what);
            }
            let r = p.run_once(Duration::from_millis(200), |r, out| {
                let v = r.value.as_deref().unwrap_or_default();
                let record = Record::new(pipe.output.as_str(), out_value(v));
                out.push(record.key(r.key.clone().unwrap_or_default()));
            });
            match r {
                Ok(0) => {}
                Ok(n) => {
                    idle = Idle::default();
                    stats.transactions += 1;
                    stats.records += n as u64;
                }
                Err(Error::Transaction(e)) if e.is_abortable() => {
                    stats.aborted += 1;
                    stats.note(pipe.adapter, format!("aborted and rewound: {e}"));
                }
                Err(e) => {
                    stats.note(pipe.adapter, format!("instance dropped: {e}"));
                    break;
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            if let Err(e) = p.close() {
                stats.note(pipe.adapter, format!("close: {e}"));
            }
        }
    }
    stats
}

async fn tokio(pipe: &Pipe, via: &str, stop: &AtomicBool) -> PipeStats {
    use kafka_tokio::{Error, Record, TxnPipeline};
    let mut stats = PipeStats::default();
    while !stop.load(Ordering::SeqCst) {
        let made = TxnPipeline::new(pipe.consumer(via), pipe.producer(via), [&pipe.input]).await;
        let p = match made {
            Ok(p) => p,
            Err(e) => {
                stats.note(pipe.adapter, format!("new instance failed: {e}"));
                ::tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        stats.instances += 1;
        let mut idle = Idle::default();
        while !stop.load(Ordering::SeqCst) {
            if idle.report_due() {
                let c = p.consumer();
                let mut at = Vec::new();
                for q in 0..PARTITIONS {
                    at.push(c.position(&pipe.input, q).await.ok().flatten());
                }
                let what = format!(
                    "no input for {:?}: positions {at:?}, {:?}",
                    idle.since(),
                    c.metrics().await
                );
                stats.note(pipe.adapter, what);
            }
            let r = p
                .run_once(Duration::from_millis(200), |r, out| {
                    let v = r.value.as_deref().unwrap_or_default();
                    let record = Record::new(pipe.output.as_str(), out_value(v));
                    out.push(record.key(r.key.clone().unwrap_or_default()));
                })
                .await;
            match r {
                Ok(0) => {}
                Ok(n) => {
                    idle = Idle::default();
                    stats.transactions += 1;
                    stats.records += n as u64;
                }
                Err(Error::Transaction(e)) if e.is_abortable() => {
                    stats.aborted += 1;
                    stats.note(pipe.adapter, format!("aborted and rewound: {e}"));
                }
                Err(e) => {
                    stats.note(pipe.adapter, format!("instance dropped: {e}"));
                    break;
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            if let Err(e) = p.close().await {
                stats.note(pipe.adapter, format!("close: {e}"));
            }
        }
    }
    stats
}
