//! `consume`: `kafka_blocking::Consumer` assigned partitions 0..P from the log start, or
//! `--members M` `kafka_blocking::GroupConsumer`s (one thread each) subscribed in
//! `--group`, each committing what it consumed when partitions are revoked from it and
//! at the end — the public API as an application uses it, `poll` handing out up to
//! `max.poll.records` records that borrow the fetched buffers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, ConsumerRecord, GroupConsumer, Offsets, Rebalance};
use kafka_core::config::ClientConfig;

use crate::{json_str, version, Args};

/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);
/// How long a commit may take (and the final one may be retried).
const COMMIT: Duration = Duration::from_secs(30);

/// What the members share: the stop condition and the idle clock.
pub(crate) struct Shared {
    want: u64,
    pub(crate) start: Instant,
    /// Records counted towards `want` (a share member counts first deliveries only).
    pub(crate) total: AtomicU64,
    /// Milliseconds from `start` to the latest record any member saw.
    last_seen_ms: AtomicU64,
    idle: Duration,
}

impl Shared {
    pub(crate) fn done(&self) -> bool {
        self.total.load(Relaxed) >= self.want
    }
    pub(crate) fn idle_too_long(&self) -> bool {
        let last = Duration::from_millis(self.last_seen_ms.load(Relaxed));
        self.start.elapsed().saturating_sub(last) > self.idle
    }
}

/// What one member read: per partition, the runs of consecutive offsets.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) count: u64,
    bytes: u64,
    bad: u64,
    pub(crate) errors: u64,
    /// Share groups: records handed out with a delivery count above 1.
    pub(crate) redelivered: u64,
    error: String,
    first_s: Option<f64>,
    last_s: f64,
    runs: BTreeMap<i32, Vec<(i64, i64)>>,
}

impl Tally {
    pub(crate) fn fail(&mut self, e: String) {
        self.errors += 1;
        if self.error.is_empty() {
            self.error = e;
        }
    }

    fn take(&mut self, records: &[ConsumerRecord], value_bytes: usize, shared: &Shared) {
        if records.is_empty() {
            return;
        }
        self.saw_records(shared);
        for r in records {
            self.record(r, value_bytes);
        }
        shared.total.fetch_add(records.len() as u64, Relaxed);
    }

    /// A poll returned records now: the member's and the shared clock.
    pub(crate) fn saw_records(&mut self, shared: &Shared) {
        let now = shared.start.elapsed();
        self.first_s.get_or_insert(now.as_secs_f64());
        self.last_s = now.as_secs_f64();
        shared
            .last_seen_ms
            .fetch_max(now.as_millis() as u64, Relaxed);
    }

    /// One record: its value checked, its offset added to its partition's runs.
    pub(crate) fn record(&mut self, r: &ConsumerRecord, value_bytes: usize) {
        let len = r.value.as_ref().map_or(0, |v| v.len());
        self.bytes += len as u64;
        if value_bytes > 0 && len != value_bytes {
            self.bad += 1;
        }
        self.count += 1;
        let runs = self.runs.entry(r.partition).or_default();
        match runs.last_mut() {
            Some(run) if run.1 + 1 == r.offset => run.1 = r.offset,
            _ => runs.push((r.offset, r.offset)),
        }
    }
}

/// Polls until the members together have `want` records (or none came for too long).
fn poll_loop(
    poll: impl Fn() -> Result<Vec<ConsumerRecord>, String>,
    tally: &mut Tally,
    value_bytes: usize,
    shared: &Shared,
) {
    while !shared.done() {
        match poll() {
            Ok(records) if records.is_empty() => {
                if shared.idle_too_long() {
                    tally.fail(format!(
                        "no record for {:?} after {} records",
                        shared.idle,
                        shared.total.load(Relaxed)
                    ));
                    break;
                }
            }
            Ok(records) => tally.take(&records, value_bytes, shared),
            Err(e) => {
                tally.fail(e);
                if tally.errors > 1000 {
                    break;
                }
            }
        }
    }
}

/// One group member: subscribes with a listener that commits on revocation, polls,
/// commits at the end (retrying through a rebalance), waits for the others, closes.
fn member(
    g: GroupConsumer,
    topic: &str,
    value_bytes: usize,
    shared: &Shared,
    done: &Barrier,
) -> Tally {
    let mut tally = Tally::default();
    // The listener runs inside `poll` on this thread; its failures are reported here.
    let listener_errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let errs = listener_errors.clone();
    let subscribed = g.subscribe_with([topic], move |c: &GroupConsumer, e: &Rebalance| {
        let failure = match e {
            Rebalance::Revoked(tps) if !tps.is_empty() => c
                .commit_sync(Offsets::Consumed, COMMIT)
                .err()
                .map(|e| format!("commit on revoke: {e}")),
            Rebalance::Lost(tps) if !tps.is_empty() => Some(format!("partitions lost: {tps:?}")),
            _ => None,
        };
        if let Some(f) = failure {
            errs.lock().expect("listener errors").push(f);
        }
    });
    match subscribed {
        Err(e) => tally.fail(format!("subscribe: {e}")),
        Ok(()) => {
            let poll = || g.poll(POLL).map_err(|e| format!("poll: {e}"));
            poll_loop(poll, &mut tally, value_bytes, shared);
            let deadline = Instant::now() + COMMIT;
            loop {
                match g.commit_sync(Offsets::Consumed, COMMIT) {
                    Ok(()) => break,
                    Err(e) if Instant::now() > deadline => {
                        tally.fail(format!("commit: {e}"));
                        break;
                    }
                    // A rebalance in the way: poll to finish it (records now would be
                    // duplicates, and are counted as such).
                    Err(_) => match g.poll(POLL) {
                        Ok(records) => tally.take(&records, value_bytes, shared),
                        Err(e) => tally.fail(format!("poll: {e}")),
                    },
                }
            }
        }
    }
    // Every member has committed before any leaves.
    done.wait();
    if let Err(e) = g.close() {
        tally.fail(format!("close: {e}"));
    }
    for e in listener_errors.lock().expect("listener errors").drain(..) {
        tally.fail(e);
    }
    tally
}

pub(crate) fn consume(a: &Args) -> Result<String, String> {
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

    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), a.str("bootstrap")?.into()),
        ("auto.offset.reset".into(), "earliest".into()),
        (
            "isolation.level".into(),
            a.opt("isolation").unwrap_or("read_uncommitted").into(),
        ),
        // The same fetch settings as the other peers (Java's defaults).
        ("fetch.min.bytes".into(), "1".into()),
        ("fetch.max.wait.ms".into(), "500".into()),
        ("max.partition.fetch.bytes".into(), "1048576".into()),
        ("fetch.max.bytes".into(), "52428800".into()),
    ];
    if let Some(g) = group {
        pairs.push(("group.id".into(), g.into()));
        pairs.push(("enable.auto.commit".into(), "false".into()));
    }
    pairs.extend(a.set.iter().cloned());
    let config = ClientConfig::from_pairs(pairs).map_err(|e| format!("config: {e}"))?;

    let tallies: Vec<Tally> = match group {
        Some(_) => {
            let consumers = (0..members)
                .map(|_| GroupConsumer::new(config.clone()).map_err(|e| format!("consumer: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            // The timed window starts once the clients exist.
            let shared = Shared::new(n, idle);
            let done = Barrier::new(consumers.len());
            let (shared, done) = (&shared, &done);
            std::thread::scope(|s| {
                let handles: Vec<_> = consumers
                    .into_iter()
                    .map(|g| s.spawn(move || member(g, topic, value_bytes, shared, done)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("member thread"))
                    .collect()
            })
        }
        None => {
            let c = Consumer::new(config).map_err(|e| format!("consumer: {e}"))?;
            let shared = Shared::new(n, idle);
            let all = (0..partitions).map(|p| (topic, p));
            c.assign(all.clone()).map_err(|e| format!("assign: {e}"))?;
            c.seek_to_beginning(all)
                .map_err(|e| format!("seek_to_beginning: {e}"))?;
            let mut tally = Tally::default();
            let poll = || c.poll(POLL).map_err(|e| format!("poll: {e}"));
            poll_loop(poll, &mut tally, value_bytes, &shared);
            let _ = c.close();
            vec![tally]
        }
    };
    Ok(result_line(tallies))
}

impl Shared {
    pub(crate) fn new(want: u64, idle: Duration) -> Shared {
        Shared {
            want,
            start: Instant::now(),
            total: AtomicU64::new(0),
            last_seen_ms: AtomicU64::new(0),
            idle,
        }
    }
}

/// The members' tallies as one contract result line (runs concatenated per partition).
pub(crate) fn result_line(tallies: Vec<Tally>) -> String {
    let (mut count, mut bytes, mut errors, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let mut redelivered = 0u64;
    let (mut first_s, mut last_s) = (f64::INFINITY, 0.0f64);
    let mut error = String::new();
    let mut runs: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    let per_member: Vec<String> = tallies.iter().map(|t| t.count.to_string()).collect();
    for t in tallies {
        count += t.count;
        bytes += t.bytes;
        errors += t.errors;
        bad += t.bad;
        redelivered += t.redelivered;
        if error.is_empty() {
            error = t.error;
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
    format!(
        "{{\"peer\":\"ours\",\"version\":{},\"op\":\"consume\",\"records\":{count},\"bytes\":{bytes},\"errors\":{errors},\
\"elapsed_s\":{last_s:.6},\"first_s\":{first_s:.6},\"steady_rps\":{steady:.1},\"bad_values\":{bad},\"redelivered\":{redelivered},\"member_records\":[{}],\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        per_member.join(","),
        plist.join(","),
        json_str(&error)
    )
}
