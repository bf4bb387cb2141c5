//! Our client as an e2e benchmark peer (contract: `bench/peers/README.md`).
//!
//! `produce` drives `kafka_core::producer::Producer` on `kafka-blocking`'s driver
//! thread: each `with_core` command hands it records until `WouldBlock` or a chunk of
//! 20,000, then takes the delivery reports (one per batch). The main thread and the
//! driver share the run's state by moving it into each command and back, so the
//! per-record work is one `send` of a record that borrows its payload line.
//!
//! Not supported yet: `consume` (no consumer) and `--transactional-id` (no
//! transactions); both exit non-zero with a message.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use kafka_blocking::BlockingClient;
use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::producer::{Producer, ProducerRecord, SendError};

/// Records handed over per command at most (the driver does no I/O meanwhile).
const CHUNK: u64 = 20_000;
/// Pause when the producer cannot take a record (metadata unknown, buffer full) and
/// between polls for the last reports.
const IDLE: Duration = Duration::from_micros(200);

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
            .ok_or("usage: e2e-peer-ours produce|version [--key value]...")?;
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
            eprintln!("e2e-peer-ours: {e}");
            return ExitCode::from(2);
        }
    };
    let r = match args.op.as_str() {
        "version" => {
            println!("{}", version());
            return ExitCode::SUCCESS;
        }
        "produce" => produce(&args),
        "consume" => Err("consume is not supported yet: our client has no consumer".into()),
        other => Err(format!("unknown op {other}")),
    };
    match r {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("e2e-peer-ours: {e}");
            ExitCode::FAILURE
        }
    }
}

fn version() -> String {
    format!(
        "ours: kafka-core {} producer on kafka-blocking",
        env!("CARGO_PKG_VERSION")
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

/// The payload lines, for the life of the process (records borrow them from commands
/// that run on the driver thread).
fn read_payloads(path: &str) -> Result<&'static [&'static [u8]], String> {
    let text: &'static [u8] = Vec::leak(std::fs::read(path).map_err(|e| format!("{path}: {e}"))?);
    let pool: Vec<&'static [u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    if pool.is_empty() {
        return Err(format!("{path}: no payload lines"));
    }
    Ok(Vec::leak(pool))
}

/// Java's percentile rule (ProducerPerformance): the value at index floor(q * n) of the
/// sorted list.
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

/// Everything a run counts; moved into each driver command and back.
struct State {
    start: Instant,
    /// Next record to send.
    next: u64,
    /// Index of record `next`'s payload line.
    line: usize,
    acked: u64,
    errors: u64,
    bytes: u64,
    first_error: Option<String>,
    first_ns: Option<u64>,
    warm_ns: Option<u64>,
    last_ns: u64,
    /// Value bytes appended to each batch (by batch id).
    batch_bytes: Vec<u64>,
    /// When each batch was reported (ns since start; by batch id), with `--rate`.
    batch_acked_ns: Vec<u64>,
    /// Send instant (ns since start) and batch of each record, with `--rate`.
    sent_ns: Vec<u64>,
    sent_batch: Vec<u64>,
    /// By partition: acked records and the highest acked offset.
    part_count: Vec<u64>,
    part_last: Vec<i64>,
    outstanding: usize,
}

fn grow<T: Clone>(v: &mut Vec<T>, i: usize, fill: T) -> &mut T {
    if v.len() <= i {
        v.resize(i + 1, fill);
    }
    &mut v[i]
}

impl State {
    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Takes every report the producer has.
    fn drain(&mut self, p: &mut Producer, warmup: u64, rate_mode: bool) {
        let mut now_ns = None;
        while let Some(r) = p.take_report() {
            let now = *now_ns.get_or_insert_with(|| self.ns(Instant::now()));
            let b = r.batch.0 as usize;
            match &r.outcome {
                Ok(d) => {
                    let n = u64::from(r.records);
                    if self.acked == 0 {
                        self.first_ns = Some(now);
                    }
                    if self.acked < warmup && self.acked + n >= warmup {
                        self.warm_ns = Some(now);
                    }
                    self.acked += n;
                    self.last_ns = now;
                    self.bytes += self.batch_bytes.get(b).copied().unwrap_or(0);
                    let part = r.partition.max(0) as usize;
                    *grow(&mut self.part_count, part, 0) += n;
                    let last = grow(&mut self.part_last, part, -1);
                    *last = (*last).max(d.offset(r.records.saturating_sub(1)));
                    if rate_mode {
                        *grow(&mut self.batch_acked_ns, b, u64::MAX) = now;
                    }
                }
                Err(e) => {
                    self.errors += u64::from(r.records);
                    if self.first_error.is_none() {
                        self.first_error = Some(e.to_string());
                    }
                }
            }
        }
        self.outstanding = p.batches_outstanding();
    }
}

/// Runs `f` on the producer inside the driver thread.
fn command<T: Send + 'static>(
    client: &BlockingClient,
    id: OpId<Producer>,
    f: impl FnOnce(&mut Producer, &mut kafka_core::client::OpContext<'_>) -> T + Send + 'static,
) -> Result<T, String> {
    client
        .with_core(move |c| c.command(Instant::now(), id, f))
        .map_err(|e| format!("driver: {e}"))?
        .ok_or_else(|| "the producer has stopped".to_string())
}

fn produce(a: &Args) -> Result<String, String> {
    if a.opt("transactional-id").is_some() {
        return Err(
            "--transactional-id is not supported yet: our producer has no transactions".into(),
        );
    }
    let topic: &'static str = String::leak(a.str("topic")?.to_string());
    let n = a.num("records", None)?;
    let pool = read_payloads(a.str("payload-file")?)?;
    let rate = a.num("rate", Some(0))?;
    let warmup = a.num("warmup-records", Some(n / 10))?.clamp(1, n.max(1));
    let rate_mode = rate > 0;

    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), a.str("bootstrap")?.into()),
        ("acks".into(), "all".into()),
        (
            "enable.idempotence".into(),
            a.opt("idempotent").unwrap_or("true").into(),
        ),
        ("linger.ms".into(), a.opt("linger-ms").unwrap_or("5").into()),
        (
            "batch.size".into(),
            a.opt("batch-bytes").unwrap_or("1000000").into(),
        ),
        (
            "buffer.memory".into(),
            a.opt("buffer-bytes").unwrap_or("134217728").into(),
        ),
        (
            "compression.type".into(),
            a.opt("compression").unwrap_or("none").into(),
        ),
        ("max.in.flight.requests.per.connection".into(), "5".into()),
    ];
    pairs.extend(a.set.iter().cloned());
    let config = ClientConfig::from_pairs(pairs).map_err(|e| format!("config: {e}"))?;
    let client = BlockingClient::new(config.clone()).map_err(|e| format!("client: {e}"))?;
    let producer = Producer::new(&config).map_err(|e| format!("producer: {e}"))?;
    let id: OpId<Producer> = client
        .with_core(move |c| c.start_op(Instant::now(), producer))
        .map_err(|e| format!("driver: {e}"))?;

    let start = Instant::now();
    let mut st = Box::new(State {
        start,
        next: 0,
        line: 0,
        acked: 0,
        errors: 0,
        bytes: 0,
        first_error: None,
        first_ns: None,
        warm_ns: None,
        last_ns: 0,
        batch_bytes: Vec::new(),
        batch_acked_ns: Vec::new(),
        sent_ns: Vec::with_capacity(if rate_mode { n as usize } else { 0 }),
        sent_batch: Vec::with_capacity(if rate_mode { n as usize } else { 0 }),
        part_count: Vec::new(),
        part_last: Vec::new(),
        outstanding: 0,
    });
    let limit = Duration::from_secs(if rate_mode { n / rate + 300 } else { 600 });
    while st.next < n {
        if start.elapsed() > limit {
            return Err(format!("producing stalled at record {}", st.next));
        }
        // Records due now: all of them closed-loop, those whose time has come at --rate.
        let until = if rate_mode {
            let due =
                |i: u64| Duration::from_nanos((i as u128 * 1_000_000_000 / rate as u128) as u64);
            let el = start.elapsed();
            let d = due(st.next);
            if d > el {
                std::thread::sleep(d - el);
            }
            let el = start.elapsed();
            // The last record due by now, + 1.
            let due_n = (el.as_nanos() * rate as u128 / 1_000_000_000) as u64 + 1;
            due_n.clamp(st.next + 1, n)
        } else {
            n
        };
        let (s, taken, failed) = command(&client, id, move |p, cx| {
            let mut s = st;
            let stop = until.min(s.next + CHUNK);
            let now_ns = if rate_mode { s.ns(Instant::now()) } else { 0 };
            let before = s.next;
            let mut failed = None;
            while s.next < stop {
                let value = pool[s.line];
                match p.send(cx, &ProducerRecord::new(topic, value)) {
                    Ok(appended) => {
                        let b = appended.batch.0 as usize;
                        *grow(&mut s.batch_bytes, b, 0) += value.len() as u64;
                        if rate_mode {
                            s.sent_ns.push(now_ns);
                            s.sent_batch.push(appended.batch.0);
                        }
                        s.next += 1;
                        s.line += 1;
                        if s.line == pool.len() {
                            s.line = 0;
                        }
                    }
                    Err(SendError::WouldBlock(_)) => break,
                    Err(e) => {
                        failed = Some(format!("send of record {}: {e}", s.next));
                        break;
                    }
                }
            }
            if s.next == n {
                // As the peers' flush: the last batches go without waiting out linger.
                p.flush();
            }
            s.drain(p, warmup, rate_mode);
            let taken = s.next - before;
            (s, taken, failed)
        })?;
        st = s;
        if let Some(e) = failed {
            return Err(e);
        }
        if taken == 0 {
            std::thread::sleep(IDLE);
        }
    }
    // The last reports.
    loop {
        let s = command(&client, id, move |p, _| {
            let mut s = st;
            s.drain(p, warmup, rate_mode);
            s
        })?;
        st = s;
        if st.outstanding == 0 {
            break;
        }
        if start.elapsed() > limit {
            return Err(format!("{} batches never reported", st.outstanding));
        }
        std::thread::sleep(IDLE);
    }

    let s = &*st;
    let last = s.last_ns as f64 / 1e9;
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
    let lat = if rate_mode {
        let ms: Vec<f64> = s
            .sent_ns
            .iter()
            .zip(&s.sent_batch)
            .filter_map(|(&t, &b)| {
                let acked = *s.batch_acked_ns.get(b as usize)?;
                (acked != u64::MAX).then(|| acked.saturating_sub(t) as f64 / 1e6)
            })
            .collect();
        percentiles(ms)
    } else {
        "null".into()
    };
    Ok(format!(
        "{{\"peer\":\"ours\",\"version\":{},\"op\":\"produce\",\"records\":{},\"bytes\":{},\"errors\":{},\
\"elapsed_s\":{last:.6},\"first_s\":{:.6},\"steady_rps\":{steady:.1},\"txns\":0,\"lat_ms\":{lat},\
\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        s.acked,
        s.bytes,
        s.errors,
        s.first_ns.unwrap_or(0) as f64 / 1e9,
        parts.join(","),
        json_str(s.first_error.as_deref().unwrap_or(""))
    ))
}
