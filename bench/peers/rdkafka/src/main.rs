//! rust-rdkafka peer for the e2e benchmark (contract: bench/peers/README.md).
//!
//! `produce` drives a `BaseProducer` from one thread: send, serve delivery reports
//! (`poll(0)`) every 64 sends and whenever librdkafka's queue is full; at a commit and at
//! the end, flush (see `flush_all`).
//! `consume` is a `BaseConsumer` (assign), or `--members M` of them (one thread each)
//! subscribed in `--group`, committing on revocation and at the end. Prints one
//! JSON result line on stdout; diagnostics go to stderr.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

struct Args {
    op: String,
    kv: BTreeMap<String, String>,
    set: Vec<(String, String)>,
}

impl Args {
    fn parse() -> Result<Self, String> {
        let mut it = std::env::args().skip(1);
        let op = it
            .next()
            .ok_or("usage: e2e-peer-rdkafka produce|consume|version [--key value]...")?;
        let mut kv = BTreeMap::new();
        let mut set = Vec::new();
        while let Some(k) = it.next() {
            let key = k
                .strip_prefix("--")
                .ok_or(format!("unexpected argument {k}"))?
                .to_string();
            let v = it.next().ok_or(format!("--{key} needs a value"))?;
            if key == "set" {
                let (a, b) = v
                    .split_once('=')
                    .ok_or(format!("--set {v}: expected key=value"))?;
                set.push((a.to_string(), b.to_string()));
            } else {
                kv.insert(key, v);
            }
        }
        Ok(Args { op, kv, set })
    }
    fn str(&self, k: &str) -> Result<&str, String> {
        self.kv
            .get(k)
            .map(String::as_str)
            .ok_or(format!("--{k} is required"))
    }
    fn opt(&self, k: &str) -> Option<&str> {
        self.kv.get(k).map(String::as_str)
    }
    fn num(&self, k: &str, default: Option<u64>) -> Result<u64, String> {
        match self.kv.get(k) {
            Some(v) => v.parse().map_err(|_| format!("--{k} {v}: not a number")),
            None => default.ok_or(format!("--{k} is required")),
        }
    }
}

fn main() -> ExitCode {
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("e2e-peer-rdkafka: {e}");
            return ExitCode::from(2);
        }
    };
    let r = match args.op.as_str() {
        "version" => {
            println!("{}", version());
            return ExitCode::SUCCESS;
        }
        "produce" => produce(&args),
        "consume" => consume(&args),
        other => Err(format!("unknown op {other}")),
    };
    match r {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("e2e-peer-rdkafka: {e}");
            ExitCode::FAILURE
        }
    }
}

fn version() -> String {
    format!(
        "rust-rdkafka 0.39 / librdkafka {}",
        rdkafka::util::get_rdkafka_version().1
    )
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn read_payloads(path: &str) -> Result<Vec<Vec<u8>>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let pool: Vec<Vec<u8>> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    if pool.is_empty() {
        return Err(format!("{path}: no payload lines"));
    }
    Ok(pool)
}

/// Java's percentile rule (ProducerPerformance): the value at index floor(q * n) of the sorted list.
fn percentiles(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "null".into();
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((q * v.len() as f64) as usize).min(v.len() - 1)];
    format!(
        "{{\"n\":{},\"p50\":{:.3},\"p99\":{:.3},\"p999\":{:.3},\"max\":{:.3}}}",
        v.len(),
        at(0.5),
        at(0.99),
        at(0.999),
        v[v.len() - 1]
    )
}

// ------------------------------------------------------------------ produce

struct ProdCtx {
    start: OnceLock<Instant>,
    warmup: u64,
    acked: AtomicU64,
    errors: AtomicU64,
    bytes: AtomicU64,
    first_ns: AtomicU64,
    warm_ns: AtomicU64,
    last_ns: AtomicU64,
    /// Send instants (ns since start) by record index; only with `--rate`.
    sent_ns: Mutex<Vec<u64>>,
    lat_ms: Mutex<Vec<f64>>,
    rate_mode: bool,
    /// By partition (first 64): acked count and highest offset.
    part_acked: Vec<AtomicU64>,
    part_last: Vec<AtomicI64>,
    first_error: Mutex<Option<String>>,
}

impl ProdCtx {
    fn now_ns(&self) -> u64 {
        self.start
            .get()
            .map_or(0, |s| s.elapsed().as_nanos() as u64)
    }
}

impl ClientContext for ProdCtx {}

impl ProducerContext for ProdCtx {
    type DeliveryOpaque = usize;
    fn delivery(&self, result: &DeliveryResult<'_>, index: usize) {
        let now = self.now_ns();
        match result {
            Ok(m) => {
                let n = self.acked.fetch_add(1, Relaxed) + 1;
                self.bytes.fetch_add(m.payload_len() as u64, Relaxed);
                if n == 1 {
                    self.first_ns.store(now, Relaxed);
                }
                if n == self.warmup {
                    self.warm_ns.store(now, Relaxed);
                }
                self.last_ns.store(now, Relaxed);
                if let Some(c) = self.part_acked.get(m.partition() as usize) {
                    c.fetch_add(1, Relaxed);
                    self.part_last[m.partition() as usize].fetch_max(m.offset(), Relaxed);
                }
                if self.rate_mode {
                    let sent = self.sent_ns.lock().unwrap();
                    if let Some(t) = sent.get(index) {
                        self.lat_ms
                            .lock()
                            .unwrap()
                            .push(now.saturating_sub(*t) as f64 / 1e6);
                    }
                }
            }
            Err((e, _)) => {
                self.errors.fetch_add(1, Relaxed);
                let mut first = self.first_error.lock().unwrap();
                if first.is_none() {
                    *first = Some(e.to_string());
                }
            }
        }
    }
}

fn produce(a: &Args) -> Result<String, String> {
    let topic = a.str("topic")?;
    let n = a.num("records", None)?;
    let pool = read_payloads(a.str("payload-file")?)?;
    let rate = a.num("rate", Some(0))?;
    let txn_records = a.num("txn-records", Some(10_000))?.max(1);
    let txn_id = a.opt("transactional-id");
    let warmup = a.num("warmup-records", Some(n / 10))?.clamp(1, n.max(1));
    let buffer_kb = a.num("buffer-bytes", Some(134_217_728))? / 1024;

    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", a.str("bootstrap")?)
        .set("acks", "all")
        .set("enable.idempotence", a.opt("idempotent").unwrap_or("true"))
        .set("linger.ms", a.opt("linger-ms").unwrap_or("5"))
        .set("batch.size", a.opt("batch-bytes").unwrap_or("1000000"))
        .set("batch.num.messages", "1000000")
        .set("compression.codec", a.opt("compression").unwrap_or("none"))
        .set("max.in.flight.requests.per.connection", "5")
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", buffer_kb.to_string());
    if let Some(id) = txn_id {
        cfg.set("transactional.id", id);
    }
    for (k, v) in &a.set {
        cfg.set(k, v);
    }
    let ctx = ProdCtx {
        start: OnceLock::new(),
        warmup,
        acked: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        first_ns: AtomicU64::new(0),
        warm_ns: AtomicU64::new(0),
        last_ns: AtomicU64::new(0),
        sent_ns: Mutex::new(if rate > 0 {
            Vec::with_capacity(n as usize)
        } else {
            Vec::new()
        }),
        lat_ms: Mutex::new(Vec::new()),
        rate_mode: rate > 0,
        part_acked: (0..64).map(|_| AtomicU64::new(0)).collect(),
        part_last: (0..64).map(|_| AtomicI64::new(-1)).collect(),
        first_error: Mutex::new(None),
    };
    let producer: BaseProducer<ProdCtx> = cfg
        .create_with_context(ctx)
        .map_err(|e| format!("create producer: {e}"))?;
    let timeout = Duration::from_secs(60);
    if txn_id.is_some() {
        producer
            .init_transactions(timeout)
            .map_err(|e| format!("init_transactions: {e}"))?;
    }
    let ctx = producer.context().clone();
    let start = Instant::now();
    ctx.start.set(start).ok();
    let mut txns = 0u64;
    let mut in_txn = 0u64;
    // Commit latency: flush + commit_transaction, per transaction.
    let mut commit_ms: Vec<f64> = Vec::new();
    for i in 0..n {
        if txn_id.is_some() && in_txn == 0 {
            producer
                .begin_transaction()
                .map_err(|e| format!("begin_transaction: {e}"))?;
        }
        if rate > 0 {
            let due = Duration::from_secs_f64(i as f64 / rate as f64);
            let el = start.elapsed();
            if due > el {
                // At least 1 ms, as every peer paces (franz-go's Go timers wait in whole
                // milliseconds): the harness's wake-ups cost each client the same.
                std::thread::sleep((due - el).max(Duration::from_millis(1)));
            }
            ctx.sent_ns.lock().unwrap().push(ctx.now_ns());
        }
        let payload = &pool[(i % pool.len() as u64) as usize];
        let mut rec = BaseRecord::<(), [u8], usize>::with_opaque_to(topic, i as usize)
            .payload(payload.as_slice());
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    rec = back;
                    if !serve(&producer) {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                Err((e, _)) => return Err(format!("send: {e}")),
            }
        }
        if i % 64 == 63 || rate > 0 {
            serve(&producer);
        }
        in_txn += 1;
        if txn_id.is_some() && (in_txn == txn_records || i + 1 == n) {
            let t0 = Instant::now();
            flush_all(&producer, timeout)?;
            producer
                .commit_transaction(timeout)
                .map_err(|e| format!("commit_transaction: {e}"))?;
            commit_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            txns += 1;
            in_txn = 0;
        }
    }
    flush_all(&producer, Duration::from_secs(120))?;
    let acked = ctx.acked.load(Relaxed);
    let last = ctx.last_ns.load(Relaxed) as f64 / 1e9;
    let warm = ctx.warm_ns.load(Relaxed) as f64 / 1e9;
    let steady = if acked > warmup && last > warm {
        (acked - warmup) as f64 / (last - warm)
    } else {
        0.0
    };
    let parts: Vec<String> = (0..64)
        .filter(|&p| ctx.part_acked[p].load(Relaxed) > 0)
        .map(|p| {
            let (c, o) = (
                ctx.part_acked[p].load(Relaxed),
                ctx.part_last[p].load(Relaxed),
            );
            format!("{{\"p\":{p},\"count\":{c},\"last\":{o}}}")
        })
        .collect();
    let lat = if rate > 0 {
        percentiles(std::mem::take(&mut *ctx.lat_ms.lock().unwrap()))
    } else {
        "null".into()
    };
    let err = ctx.first_error.lock().unwrap().clone().unwrap_or_default();
    Ok(format!(
        "{{\"peer\":\"rdkafka\",\"version\":{},\"op\":\"produce\",\"records\":{acked},\"bytes\":{},\"errors\":{},\
\"elapsed_s\":{last:.6},\"first_s\":{:.6},\"steady_rps\":{steady:.1},\"txns\":{txns},\"lat_ms\":{lat},\
\"commit_ms\":{},\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        ctx.bytes.load(Relaxed),
        ctx.errors.load(Relaxed),
        ctx.first_ns.load(Relaxed) as f64 / 1e9,
        if txn_id.is_some() {
            percentiles(commit_ms)
        } else {
            "null".into()
        },
        parts.join(","),
        json_str(&err)
    ))
}

/// Serves the delivery reports that are ready, without blocking; true if any was served.
///
/// Not `BaseProducer::poll(timeout)`: it busy-polls the sub-millisecond rest of every
/// timeout (its deadline is converted to whole milliseconds, rounding down to 0).
fn serve(producer: &BaseProducer<ProdCtx>) -> bool {
    let ctx = producer.context();
    let done = || ctx.acked.load(Relaxed) + ctx.errors.load(Relaxed);
    let before = done();
    loop {
        let n = done();
        producer.poll(Duration::ZERO);
        if done() == n {
            return done() != before;
        }
    }
}

/// Waits until every queued record is delivered and its report served, with
/// librdkafka's flush semantics (linger.ms counts as elapsed meanwhile): `rd_kafka_flush`
/// on this thread while a helper thread serves the event queue. `BaseProducer::flush`
/// (also inside `commit_transaction`) instead polls in 100 ms steps that do not end
/// early, which would add up to 100 ms to every flush and commit.
fn flush_all(producer: &BaseProducer<ProdCtx>, timeout: Duration) -> Result<(), String> {
    let stop = AtomicBool::new(false);
    let rc = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Relaxed) {
                if !serve(producer) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        // SAFETY: the handle is the live producer's; rd_kafka_flush is thread-safe.
        let rc = unsafe {
            rdkafka::bindings::rd_kafka_flush(
                producer.client().native_ptr(),
                timeout.as_millis() as i32,
            )
        };
        stop.store(true, Relaxed);
        rc
    });
    serve(producer);
    if rc == rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
        Ok(())
    } else {
        Err(format!("flush: {:?}", rc))
    }
}

// ------------------------------------------------------------------ consume

/// Commits what was consumed when partitions are revoked (before they move to another
/// member); failures are kept for the result line.
#[derive(Default)]
struct ConsCtx {
    errors: Mutex<Vec<String>>,
}
impl ClientContext for ConsCtx {}
impl ConsumerContext for ConsCtx {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let failure = match rebalance {
            Rebalance::Revoke(tpl) if tpl.count() > 0 => {
                match consumer.commit_consumer_state(CommitMode::Sync) {
                    Err(e) if !nothing_to_commit(&e) => Some(format!("commit on revoke: {e}")),
                    _ => None,
                }
            }
            Rebalance::Error(e) => Some(format!("rebalance: {e}")),
            _ => None,
        };
        if let Some(f) = failure {
            self.errors.lock().expect("errors").push(f);
        }
    }
}

/// librdkafka's "no offset stored": the member consumed nothing it still owns.
fn nothing_to_commit(e: &KafkaError) -> bool {
    matches!(e, KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset))
}

/// What the members share: the stop condition and the idle clock.
struct Shared {
    want: u64,
    start: Instant,
    total: AtomicU64,
    /// Milliseconds from `start` to the latest record any member saw.
    last_seen_ms: AtomicU64,
    idle: Duration,
}

impl Shared {
    fn done(&self) -> bool {
        self.total.load(Relaxed) >= self.want
    }
    fn idle_too_long(&self) -> bool {
        let last = Duration::from_millis(self.last_seen_ms.load(Relaxed));
        self.start.elapsed().saturating_sub(last) > self.idle
    }
}

/// What one member read: per partition, the runs of consecutive offsets.
#[derive(Default)]
struct Tally {
    count: u64,
    bytes: u64,
    bad: u64,
    errors: u64,
    error: String,
    first_s: Option<f64>,
    last_s: f64,
    runs: BTreeMap<i32, Vec<(i64, i64)>>,
}

impl Tally {
    fn fail(&mut self, e: String) {
        self.errors += 1;
        if self.error.is_empty() {
            self.error = e;
        }
    }

    fn take(&mut self, m: &BorrowedMessage<'_>, value_bytes: usize, shared: &Shared) {
        let now = shared.start.elapsed();
        self.first_s.get_or_insert(secs(now));
        self.last_s = secs(now);
        shared
            .last_seen_ms
            .fetch_max(now.as_millis() as u64, Relaxed);
        let len = m.payload_len();
        self.bytes += len as u64;
        if value_bytes > 0 && len != value_bytes {
            self.bad += 1;
        }
        let off = m.offset();
        let runs = self.runs.entry(m.partition()).or_default();
        match runs.last_mut() {
            Some(run) if run.1 + 1 == off => run.1 = off,
            _ => runs.push((off, off)),
        }
        self.count += 1;
        shared.total.fetch_add(1, Relaxed);
    }
}

/// One consumer: polls until the members together have `want` records; in a group,
/// commits at the end (polling through a rebalance in the way), waits for the others.
fn member(
    consumer: BaseConsumer<ConsCtx>,
    group: bool,
    value_bytes: usize,
    shared: &Shared,
    done: &Barrier,
) -> Tally {
    let mut t = Tally::default();
    while !shared.done() {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => t.take(&m, value_bytes, shared),
            Some(Err(e)) => {
                t.fail(e.to_string());
                if t.errors > 1000 {
                    break;
                }
            }
            None => {
                if shared.idle_too_long() {
                    t.fail(format!(
                        "no record for {:?} after {} records",
                        shared.idle,
                        shared.total.load(Relaxed)
                    ));
                    break;
                }
            }
        }
    }
    if group {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match consumer.commit_consumer_state(CommitMode::Sync) {
                Ok(()) => break,
                Err(e) if nothing_to_commit(&e) => break,
                Err(e) if Instant::now() > deadline => {
                    t.fail(format!("commit: {e}"));
                    break;
                }
                // Records now would be duplicates, and are counted as such.
                Err(_) => match consumer.poll(Duration::from_millis(100)) {
                    Some(Ok(m)) => t.take(&m, value_bytes, shared),
                    Some(Err(e)) => t.fail(e.to_string()),
                    None => {}
                },
            }
        }
    }
    // Every member has committed before any leaves.
    done.wait();
    for e in consumer.context().errors.lock().expect("errors").drain(..) {
        t.fail(e);
    }
    drop(consumer);
    t
}

fn consume(a: &Args) -> Result<String, String> {
    let topic = a.str("topic")?;
    let n = a.num("records", None)?;
    let partitions = a.num("partitions", None)? as i32;
    let value_bytes = a.num("value-bytes", Some(0))? as usize;
    let idle = Duration::from_secs(a.num("idle-timeout-s", Some(30))?);
    let group = a.opt("group");
    let members = a.num("members", Some(1))?;
    if members == 0 || (group.is_none() && members != 1) {
        return Err("--members needs --group and must be at least 1".into());
    }

    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", a.str("bootstrap")?)
        .set("group.id", group.unwrap_or("e2e-assign-rdkafka"))
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set(
            "isolation.level",
            a.opt("isolation").unwrap_or("read_uncommitted"),
        )
        .set("fetch.min.bytes", "1")
        .set("fetch.wait.max.ms", "500")
        .set("max.partition.fetch.bytes", "1048576")
        .set("fetch.max.bytes", "52428800");
    for (k, v) in &a.set {
        cfg.set(k, v);
    }
    let consumers = (0..members)
        .map(|_| {
            cfg.create_with_context::<_, BaseConsumer<ConsCtx>>(ConsCtx::default())
                .map_err(|e| format!("create consumer: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The timed window starts once the clients exist.
    let shared = Shared {
        want: n,
        start: Instant::now(),
        total: AtomicU64::new(0),
        last_seen_ms: AtomicU64::new(0),
        idle,
    };
    for c in &consumers {
        if group.is_some() {
            c.subscribe(&[topic])
                .map_err(|e| format!("subscribe: {e}"))?;
        } else {
            let mut tpl = TopicPartitionList::new();
            for p in 0..partitions {
                tpl.add_partition_offset(topic, p, Offset::Beginning)
                    .map_err(|e| format!("assign list: {e}"))?;
            }
            c.assign(&tpl).map_err(|e| format!("assign: {e}"))?;
        }
    }
    let done = Barrier::new(consumers.len());
    let (shared_ref, done) = (&shared, &done);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = consumers
            .into_iter()
            .map(|c| s.spawn(move || member(c, group.is_some(), value_bytes, shared_ref, done)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("member thread"))
            .collect()
    });

    let (mut count, mut bytes, mut errors, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let (mut first_s, mut last_s) = (f64::INFINITY, 0.0f64);
    let mut first_error = String::new();
    let mut runs: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    let per_member: Vec<String> = tallies.iter().map(|t| t.count.to_string()).collect();
    for t in tallies {
        count += t.count;
        bytes += t.bytes;
        errors += t.errors;
        bad += t.bad;
        if first_error.is_empty() {
            first_error = t.error;
        }
        if let Some(f) = t.first_s {
            first_s = first_s.min(f);
            last_s = last_s.max(t.last_s);
        }
        for (p, r) in t.runs {
            runs.entry(p).or_default().extend(r);
        }
    }
    if !first_s.is_finite() {
        first_s = 0.0;
    }
    let steady = if count > 1 && last_s > first_s {
        (count - 1) as f64 / (last_s - first_s)
    } else {
        0.0
    };
    let plist: Vec<String> = runs
        .iter()
        .map(|(p, r)| {
            let n: i64 = r.iter().map(|(f, l)| l - f + 1).sum();
            let first = r.iter().map(|x| x.0).min().unwrap_or(-1);
            let last = r.iter().map(|x| x.1).max().unwrap_or(-1);
            let list: Vec<String> = r.iter().map(|(f, l)| format!("[{f},{l}]")).collect();
            format!(
                "{{\"p\":{p},\"count\":{n},\"first\":{first},\"last\":{last},\"runs\":[{}]}}",
                list.join(",")
            )
        })
        .collect();
    Ok(format!(
        "{{\"peer\":\"rdkafka\",\"version\":{},\"op\":\"consume\",\"records\":{count},\"bytes\":{bytes},\"errors\":{errors},\
\"elapsed_s\":{last_s:.6},\"first_s\":{first_s:.6},\"steady_rps\":{steady:.1},\"bad_values\":{bad},\"member_records\":[{}],\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        per_member.join(","),
        plist.join(","),
        json_str(&first_error)
    ))
}
