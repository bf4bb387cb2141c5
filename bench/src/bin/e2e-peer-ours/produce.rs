//! `produce`: the core producer on `kafka-blocking`'s driver thread. Each `with_core`
//! command hands it records until `WouldBlock`, a chunk of 20,000 or the end of the
//! transaction, then takes the delivery reports (one per batch). The main thread and the
//! driver share the run's state by moving it into each command and back, so the
//! per-record work is one `send` of a record that borrows its payload line.
//!
//! With `--rate` or `--api adapter`: `kafka_blocking::Producer` instead (`adapter.rs`),
//! as an application sends.
//!
//! With `--transactional-id`: `init_transactions` before the timed window, then
//! `begin_transaction`, `--txn-records` sends, `commit_transaction` (which flushes) and a
//! wait for its result; `commit_ms` is commit call → result.

use std::time::{Duration, Instant};

use kafka_blocking::BlockingClient;
use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::producer::{Producer, ProducerRecord, SendError, TxnOp};

use crate::{json_str, percentiles, read_payloads, version, Args};

/// Records handed over per command at most (the driver does no I/O meanwhile).
const CHUNK: u64 = 20_000;
/// Pause when the producer cannot take a record (metadata unknown, buffer full) and
/// between polls for the last reports or a transaction's result.
const IDLE: Duration = Duration::from_micros(200);
/// Consecutive pauses double up to this (a full `buffer.memory` drains for a while:
/// polling it every 200 µs cost more CPU than the records did with 10 KB values).
const IDLE_MAX: Duration = Duration::from_millis(2);

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
    /// By partition: acked records and the highest acked offset.
    part_count: Vec<u64>,
    part_last: Vec<i64>,
    outstanding: usize,
    /// The transaction step that finished, with its result (transactional runs).
    txn_done: Option<(TxnOp, Result<(), String>)>,
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
    fn drain(&mut self, p: &mut Producer, warmup: u64) {
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
        if let Some((op, r)) = p.take_transaction_result() {
            self.txn_done = Some((op, r.map_err(|e| e.to_string())));
        }
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

pub(crate) fn produce(a: &Args) -> Result<String, String> {
    let topic: &'static str = String::leak(a.str("topic")?.to_string());
    let n = a.num("records", None)?;
    let pool = read_payloads(a.str("payload-file")?)?;
    let rate = a.num("rate", Some(0))?;
    let warmup = a.num("warmup-records", Some(n / 10))?.clamp(1, n.max(1));
    let txn_id = a.opt("transactional-id");
    let transactional = txn_id.is_some();
    let txn_records = a.num("txn-records", Some(10_000))?.max(1);

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
    if let Some(t) = txn_id {
        pairs.push(("transactional.id".into(), t.into()));
    }
    // `--set ours.api=…` is the runner's way to pick the API (a variant's settings).
    let mut api = a.opt("api");
    for (k, v) in &a.set {
        match k.as_str() {
            "ours.api" => api = Some(v.as_str()),
            _ => pairs.push((k.clone(), v.clone())),
        }
    }
    let config = ClientConfig::from_pairs(pairs).map_err(|e| format!("config: {e}"))?;
    let adapter = match api {
        None | Some("core") => rate > 0,
        Some("adapter") => true,
        Some(other) => return Err(format!("--api {other}: core or adapter")),
    };
    if adapter {
        if transactional {
            return Err("ours runs transactions on the core producer only".into());
        }
        return crate::adapter::produce_with_adapter(config, topic, n, pool, rate, warmup);
    }
    let client = BlockingClient::new(config.clone()).map_err(|e| format!("client: {e}"))?;
    let producer = Producer::new(&config).map_err(|e| format!("producer: {e}"))?;
    let id: OpId<Producer> = client
        .with_core(move |c| c.start_op(Instant::now(), producer))
        .map_err(|e| format!("driver: {e}"))?;

    let mut st = Box::new(State {
        start: Instant::now(),
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
        part_count: Vec::new(),
        part_last: Vec::new(),
        outstanding: 0,
        txn_done: None,
    });
    if transactional {
        command(&client, id, |p, _| p.init_transactions())?
            .map_err(|e| format!("init_transactions: {e}"))?;
        st = wait_txn(&client, id, st, TxnOp::Init, warmup)?;
    }
    // The timed window starts here, as the peers' (after initTransactions).
    let start = Instant::now();
    st.start = start;
    let mut txns = 0u64;
    let mut commit_ms: Vec<f64> = Vec::new();
    // The first record not in the open transaction (0: none open).
    let mut txn_end = 0u64;
    let limit = Duration::from_secs(600);
    let mut idle = IDLE;
    while st.next < n {
        if start.elapsed() > limit {
            return Err(format!("producing stalled at record {}", st.next));
        }
        let until = n;
        let begin = transactional && txn_end <= st.next;
        if begin {
            txn_end = (st.next + txn_records).min(n);
        }
        let until = if transactional {
            until.min(txn_end)
        } else {
            until
        };
        let (s, taken, failed) = command(&client, id, move |p, cx| {
            let mut s = st;
            if begin {
                if let Err(e) = p.begin_transaction(cx) {
                    return (s, 0, Some(format!("begin_transaction: {e}")));
                }
            }
            let stop = until.min(s.next + CHUNK);
            let before = s.next;
            let mut failed = None;
            while s.next < stop {
                let value = pool[s.line];
                match p.send(cx, &ProducerRecord::new(topic, value)) {
                    Ok(appended) => {
                        let b = appended.batch.0 as usize;
                        *grow(&mut s.batch_bytes, b, 0) += value.len() as u64;
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
            if s.next == n && !transactional {
                // As the peers' flush: the last batches go without waiting out linger.
                p.flush();
            }
            s.drain(p, warmup);
            let taken = s.next - before;
            (s, taken, failed)
        })?;
        st = s;
        if let Some(e) = failed {
            return Err(e);
        }
        if transactional && st.next == txn_end {
            // Commit: flush, then EndTxn; the next transaction begins once it is known.
            let t0 = Instant::now();
            command(&client, id, |p, _| p.commit_transaction())?
                .map_err(|e| format!("commit_transaction: {e}"))?;
            st = wait_txn(&client, id, st, TxnOp::Commit, warmup)?;
            commit_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            txns += 1;
        } else if taken == 0 {
            std::thread::sleep(idle);
            idle = (idle * 2).min(IDLE_MAX);
        } else {
            idle = IDLE;
        }
    }
    // The last reports.
    loop {
        let s = command(&client, id, move |p, _| {
            let mut s = st;
            s.drain(p, warmup);
            s
        })?;
        st = s;
        if st.outstanding == 0 {
            break;
        }
        if start.elapsed() > limit {
            return Err(format!("{} batches never reported", st.outstanding));
        }
        std::thread::sleep(idle);
        idle = (idle * 2).min(IDLE_MAX);
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
    Ok(format!(
        "{{\"peer\":\"ours\",\"version\":{},\"op\":\"produce\",\"records\":{},\"bytes\":{},\"errors\":{},\
\"elapsed_s\":{last:.6},\"first_s\":{:.6},\"steady_rps\":{steady:.1},\"txns\":{txns},\"lat_ms\":null,\
\"commit_ms\":{},\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        s.acked,
        s.bytes,
        s.errors,
        s.first_ns.unwrap_or(0) as f64 / 1e9,
        if transactional {
            percentiles(commit_ms)
        } else {
            "null".into()
        },
        parts.join(","),
        json_str(s.first_error.as_deref().unwrap_or(""))
    ))
}

/// Polls (draining reports) until the transaction step `op` has its result.
fn wait_txn(
    client: &BlockingClient,
    id: OpId<Producer>,
    mut st: Box<State>,
    op: TxnOp,
    warmup: u64,
) -> Result<Box<State>, String> {
    let limit = Duration::from_secs(120);
    let t0 = Instant::now();
    loop {
        st = command(client, id, move |p, _| {
            let mut s = st;
            s.drain(p, warmup);
            s
        })?;
        match st.txn_done.take() {
            Some((done, Ok(()))) if done == op => return Ok(st),
            Some((done, Err(e))) => return Err(format!("{done:?}: {e}")),
            Some(_) => {}
            None if t0.elapsed() > limit => return Err(format!("{op:?}: no result in {limit:?}")),
            None => std::thread::sleep(IDLE),
        }
    }
}
