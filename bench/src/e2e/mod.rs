//! End-to-end benchmark runner: our client against rust-rdkafka, franz-go and Kafka's
//! Java client on the same single-node broker, in one run (`bench/RESULTS.md`).
//!
//! Flow: build the peers (skipping visibly what cannot be built), start or attach to
//! the broker and pin it to core 0, measure loopback TCP, measure each client's
//! start-up CPU (1-record runs), then run every workload for every client in
//! interleaved rounds (A B C D A B C D …) on core 1, each on a fresh topic (produce) or
//! a fresh group (consume), verifying every run independently through our admin
//! client. Writes `results.md` and `results.jsonl`; exits 1 if a built client's run
//! failed its verification.

mod admin;
mod broker;
mod neighbourhood;
mod peers;
mod proc;
mod report;
mod sys;
mod workloads;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use admin::{Admin, Watermarks};
use broker::{Broker, BrokerOpts};
use peers::{Client, ConsumeSpec, Peer, PeerResult, ProduceSpec};
use proc::Outcome;
use report::{RunRecord, Summary};
use workloads::{Kind, Workload};

const PARTITIONS: i32 = 6;
const BROKER_CORE: usize = 0;
const CLIENT_CORE: usize = 1;

const USAGE: &str = "usage: e2e [--quick] [--rounds N] [--clients ours,rdkafka,franz-go,java] \
[--workloads W1,W2,...] [--out DIR] [--keep-broker] [--fresh-broker] [--no-pin]

  --quick          fewer records and one round (CI smoke run, ~3 minutes)
  --rounds N       interleaved rounds per workload (default 3; quick: 1)
  --clients LIST   clients to build and run (default: all four)
  --require LIST   fail (exit 1) if one of these clients cannot be built (CI)
  --workloads LIST ids or prefixes: W1 (= W1-none,W1-lz4,W1-zstd), W2 ... W6
  --out DIR        where results.md, results.jsonl and logs/ go (default target/e2e)
  --keep-broker    leave a rig started here running
  --fresh-broker   restart the rig's single node (new, empty data) before the run
  --no-pin         do not pin the broker and the clients to cores

KAFKA_BOOTSTRAP_SERVERS set: that broker is used as is (pinned to core 0 if it is local
and visible, restored afterwards). Otherwise the rig's single node is started in
target/e2e-rig (ports from RIG_PORT_BASE, default 19292).";

struct Opts {
    quick: bool,
    rounds: u32,
    clients: Vec<Client>,
    require: Vec<Client>,
    workloads: Option<Vec<String>>,
    out: Option<PathBuf>,
    keep_broker: bool,
    fresh_broker: bool,
    pin: bool,
}

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts {
        quick: false,
        rounds: 0,
        clients: Client::ALL.to_vec(),
        require: Vec::new(),
        workloads: None,
        out: None,
        keep_broker: false,
        fresh_broker: false,
        pin: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--quick" => o.quick = true,
            "--rounds" => o.rounds = val()?.parse().map_err(|_| "--rounds: not a number")?,
            "--clients" => {
                o.clients = val()?
                    .split(',')
                    .map(|c| Client::parse(c.trim()).ok_or(format!("unknown client {c}")))
                    .collect::<Result<_, _>>()?;
            }
            "--require" => {
                o.require = val()?
                    .split(',')
                    .map(|c| Client::parse(c.trim()).ok_or(format!("unknown client {c}")))
                    .collect::<Result<_, _>>()?;
            }
            "--workloads" => {
                o.workloads = Some(val()?.split(',').map(|w| w.trim().to_uppercase()).collect())
            }
            "--out" => o.out = Some(PathBuf::from(val()?)),
            "--keep-broker" => o.keep_broker = true,
            "--fresh-broker" => o.fresh_broker = true,
            "--no-pin" => o.pin = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.rounds == 0 {
        o.rounds = if o.quick { 1 } else { 3 };
    }
    Ok(o)
}

/// A client as it appears in a workload's rows (rdkafka's consumer twice: librdkafka's
/// default `fetch.queue.backoff.ms` and 10 ms).
#[derive(Debug, Clone)]
struct Variant {
    peer: usize,
    label: String,
    extra: Vec<(String, String)>,
}

struct Harness {
    opts: Opts,
    broker: Broker,
    admin: Admin,
    peers: Vec<Peer>,
    out: PathBuf,
    logs: PathBuf,
    tag: String,
    pin: Option<usize>,
    startup: BTreeMap<(Client, bool), f64>,
    records: Vec<RunRecord>,
    notes: Vec<String>,
    timeout: Duration,
    /// The 1-record topic start-up runs use.
    startup_topic: String,
    /// Consume source: topic, records, watermarks.
    source: Option<(String, u64, Vec<Watermarks>)>,
    java_w1_rps: Option<f64>,
    neighbourhood: Neighbourhood,
    load_start: (f64, f64, f64),
    t_start: Instant,
}

pub(crate) fn main() -> ExitCode {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("e2e: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("e2e: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ has a parent")
        .to_path_buf()
}

fn target_dir(repo: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from)
}

fn selected(opts: &Opts, w: &Workload) -> bool {
    match &opts.workloads {
        None => true,
        Some(list) => {
            let id = w.id.to_uppercase();
            list.iter()
                .any(|s| id == *s || id.starts_with(&format!("{s}-")))
        }
    }
}

fn run(opts: Opts) -> Result<bool, String> {
    let repo = repo_root();
    let target = target_dir(&repo);
    let out = opts.out.clone().unwrap_or_else(|| target.join("e2e"));
    let logs = out.join("logs");
    let _ = std::fs::remove_dir_all(&logs);
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let rig_dir = target.join("e2e-rig");
    let load_start = broker::loadavg();
    let t_start = Instant::now();
    let mode = if opts.quick { "quick" } else { "full" };
    eprintln!(
        "e2e: {mode} mode, {} round(s); results in {}",
        opts.rounds,
        out.display()
    );

    // ---- peers
    let ctx = peers::BuildCtx {
        repo: repo.clone(),
        target: target.clone(),
        rig_dir: rig_dir.clone(),
        log_dir: logs.clone(),
    };
    let mut built = Vec::new();
    let mut notes = Vec::new();
    for &c in &opts.clients {
        eprintln!("e2e: building {} ...", c.name());
        match peers::build(c, &ctx) {
            Ok(p) => {
                eprintln!(
                    "e2e:   built {}: {} ({})",
                    c.name(),
                    p.version,
                    p.build_note
                );
                notes.push(format!(
                    "built **{}**: {} — {}",
                    c.name(),
                    p.version,
                    p.build_note
                ));
                built.push(p);
            }
            Err(why) => {
                eprintln!("e2e:   SKIPPED {}: {why}", c.name());
                notes.push(format!("skipped **{}**: {why}", c.name()));
            }
        }
    }
    let missing: Vec<&str> = opts
        .require
        .iter()
        .filter(|c| !built.iter().any(|p: &Peer| p.client == **c))
        .map(|c| c.name())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "required client(s) not built: {}",
            missing.join(", ")
        ));
    }
    for c in Client::ALL.iter().filter(|c| !opts.clients.contains(c)) {
        eprintln!("e2e:   SKIPPED {}: not selected (--clients)", c.name());
        notes.push(format!("not selected: {} (--clients)", c.name()));
    }

    // ---- broker
    let pin_ok = opts.pin
        && proc::have_taskset()
        && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    if opts.pin && !pin_ok {
        notes.push("no pinning: taskset missing or fewer than 2 cores".into());
    }
    let broker = Broker::start_or_attach(&BrokerOpts {
        repo: repo.clone(),
        rig_dir,
        core: pin_ok.then_some(BROKER_CORE),
        fresh: opts.fresh_broker,
    })?;
    notes.extend(broker.notes.iter().cloned());
    let admin = match Admin::connect(&broker.bootstrap) {
        Ok(a) => a,
        Err(e) => {
            broker.shutdown(&repo, opts.keep_broker);
            return Err(format!("admin client: {e}"));
        }
    };
    let tag = format!(
        "{}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    );
    let mut h = Harness {
        timeout: Duration::from_secs(if opts.quick { 180 } else { 600 }),
        opts,
        broker,
        admin,
        peers: built,
        out,
        logs,
        startup_topic: format!("e2e-{tag}-startup"),
        tag,
        pin: pin_ok.then_some(CLIENT_CORE),
        startup: BTreeMap::new(),
        records: Vec::new(),
        notes,
        source: None,
        java_w1_rps: None,
        neighbourhood: Neighbourhood {
            loopback_gbps: None,
            loopback_bytes: 0,
        },
        load_start,
        t_start,
    };
    let ok = h.suite().map(|()| h.write_report(mode, false));
    h.cleanup();
    let Harness { broker, opts, .. } = h;
    broker.shutdown(&repo, opts.keep_broker);
    ok
}

/// The loopback figure, for the report.
struct Neighbourhood {
    loopback_gbps: Option<f64>,
    loopback_bytes: u64,
}

impl Harness {
    fn suite(&mut self) -> Result<(), String> {
        let quick = self.opts.quick;
        // ---- payload pools (the same bytes for every client)
        let p100 = self.out.join("payload-100.txt");
        let p10k = self.out.join("payload-10000.txt");
        std::fs::write(&p100, workloads::payload_file(100, 1000)).map_err(|e| e.to_string())?;
        std::fs::write(&p10k, workloads::payload_file(10_000, 100)).map_err(|e| e.to_string())?;

        // ---- the physical neighbourhood
        let loopback_bytes: u64 = if quick { 512 << 20 } else { 4 << 30 };
        let loopback =
            neighbourhood::loopback_gbps(loopback_bytes, self.pin, self.pin.map(|_| BROKER_CORE));
        self.neighbourhood.loopback_bytes = loopback_bytes;
        self.neighbourhood.loopback_gbps = match loopback {
            Ok(g) => {
                eprintln!("e2e: loopback TCP {g:.2} GB/s");
                Some(g)
            }
            Err(e) => {
                self.notes.push(format!("loopback measurement failed: {e}"));
                None
            }
        };
        if self.peers.is_empty() {
            self.notes
                .push("no client could be built: nothing measured".into());
            return Ok(());
        }

        let wls: Vec<Workload> = workloads::all(quick)
            .into_iter()
            .filter(|w| selected(&self.opts, w))
            .collect();
        let need_consume = wls.iter().any(|w| !w.is_produce());

        // ---- start-up CPU of each client (1-record runs), interleaved over the rounds
        self.admin.create_topic(&self.startup_topic, PARTITIONS)?;
        for round in 1..=self.opts.rounds {
            for i in 0..self.peers.len() {
                self.startup_run(i, true, round, &p100);
            }
            if need_consume {
                for i in 0..self.peers.len() {
                    self.startup_run(i, false, round, &p100);
                }
            }
        }

        for w in &wls {
            if !w.is_produce() && self.source.is_none() {
                self.fill_source(w, &p100)?;
            }
            let variants = self.variants(w);
            let pool = if w.value_bytes == 100 { &p100 } else { &p10k };
            for round in 1..=self.opts.rounds {
                for v in &variants {
                    let rec = self.measure(w, v, round, pool);
                    let status = if rec.ok {
                        "ok".to_string()
                    } else {
                        format!("FAILED: {}", rec.reason)
                    };
                    eprintln!(
                        "e2e: {} {} round {}: {:.0} rec/s, {:.1} MB/s, cpu {:.2}s, rss {:.0} MiB, broker cpu {} - {status}",
                        w.id,
                        v.label,
                        round,
                        rec.rps(),
                        rec.mbps(),
                        rec.cpu_s,
                        rec.rss_mib,
                        rec.broker_cpu_s.map_or("?".into(), |b| format!("{b:.2}s")),
                    );
                    self.records.push(rec);
                }
            }
            if w.id == "W1-none" {
                let java: Vec<&RunRecord> = self
                    .records
                    .iter()
                    .filter(|r| r.workload == "W1-none" && r.client == Some(Client::Java) && r.ok)
                    .collect();
                if !java.is_empty() {
                    self.java_w1_rps = Summary::of(&java).rps;
                }
            }
            // A partial report after every workload, so an interrupted run leaves figures.
            self.write_report(if quick { "quick" } else { "full" }, true);
        }
        Ok(())
    }

    /// Every client's runs of `w`; a client that cannot run it is skipped with a note.
    fn variants(&mut self, w: &Workload) -> Vec<Variant> {
        let mut out = Vec::new();
        for (i, p) in self.peers.iter().enumerate() {
            let consume = !w.is_produce();
            if consume && matches!(w.kind, Kind::Consume { group: false }) && !p.can_assign() {
                continue;
            }
            if consume && p.client == Client::Rdkafka {
                out.push(Variant {
                    peer: i,
                    label: "rdkafka (fetch.queue.backoff.ms default)".into(),
                    extra: Vec::new(),
                });
                out.push(Variant {
                    peer: i,
                    label: "rdkafka (fetch.queue.backoff.ms=10)".into(),
                    extra: vec![("fetch.queue.backoff.ms".into(), "10".into())],
                });
            } else {
                out.push(Variant {
                    peer: i,
                    label: p.client.name().into(),
                    extra: Vec::new(),
                });
            }
        }
        out
    }

    fn log_base(&self, name: &str) -> PathBuf {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.logs.join(clean)
    }

    /// Runs a client process, with the broker's CPU before and after.
    fn spawn(
        &self,
        cmd: &proc::Cmd,
        log: &str,
        timeout: Duration,
    ) -> Result<(Outcome, Option<f64>, f64), String> {
        let load1 = broker::loadavg().0;
        let b0 = self.broker.cpu_s();
        let out = proc::run(cmd, self.pin, timeout, &self.log_base(log))
            .map_err(|e| format!("spawn: {e}"))?;
        let b1 = self.broker.cpu_s();
        Ok((out, b0.zip(b1).map(|(a, b)| b - a), load1))
    }

    fn startup_run(&mut self, i: usize, produce: bool, round: u32, pool: &Path) {
        let p = &self.peers[i];
        let cmd = if produce {
            p.produce_cmd(&ProduceSpec {
                bootstrap: &self.broker.bootstrap,
                topic: &self.startup_topic,
                records: 1,
                payload_file: pool,
                compression: "none",
                rate: None,
                txn: None,
                java_txn_ms: 0,
                extra: &[],
            })
        } else {
            let group = (!p.can_assign())
                .then(|| format!("e2e-{}-startup-{}-{round}", self.tag, p.client.name()));
            p.consume_cmd(&ConsumeSpec {
                bootstrap: &self.broker.bootstrap,
                topic: &self.startup_topic,
                records: 1,
                partitions: PARTITIONS,
                group,
                read_committed: false,
                value_bytes: 0,
                extra: &[],
            })
        };
        let op = if produce { "produce" } else { "consume" };
        let client = p.client;
        match self.spawn(
            &cmd,
            &format!("startup-{}-{op}-r{round}", client.name()),
            Duration::from_secs(120),
        ) {
            Ok((out, _, _)) if out.success() => {
                // The least CPU over the rounds: the start-up cost without noise.
                let cpu = out.cpu_s();
                let v = self
                    .startup
                    .get(&(client, produce))
                    .map_or(cpu, |p| p.min(cpu));
                self.startup.insert((client, produce), v);
            }
            Ok((out, _, _)) => self.notes.push(format!(
                "start-up run of {} ({op}, round {round}) failed: {}",
                client.name(),
                out.failure()
            )),
            Err(e) => self
                .notes
                .push(format!("start-up run of {} failed: {e}", client.name())),
        }
    }

    /// Fills the consume source topic once, with the first available producer.
    fn fill_source(&mut self, w: &Workload, pool: &Path) -> Result<(), String> {
        let topic = format!("e2e-{}-source", self.tag);
        self.admin.create_topic(&topic, PARTITIONS)?;
        let order = [Client::FranzGo, Client::Rdkafka, Client::Java, Client::Ours];
        let Some(peer) = order
            .iter()
            .find_map(|c| self.peers.iter().find(|p| p.client == *c))
        else {
            return Err("no producer to fill the consume topic".into());
        };
        let cmd = peer.produce_cmd(&ProduceSpec {
            bootstrap: &self.broker.bootstrap,
            topic: &topic,
            records: w.records,
            payload_file: pool,
            compression: "none",
            rate: None,
            txn: None,
            java_txn_ms: 0,
            extra: &[],
        });
        eprintln!(
            "e2e: filling {topic} with {} records ({})",
            w.records,
            peer.client.name()
        );
        let (out, _, _) = self.spawn(&cmd, "fill-source", self.timeout)?;
        if !out.success() {
            return Err(format!(
                "filling the consume topic failed: {}",
                out.failure()
            ));
        }
        let marks = self.admin.watermarks(&topic, PARTITIONS)?;
        let total: i64 = marks.iter().map(|m| m.latest - m.earliest).sum();
        if total != w.records as i64 {
            return Err(format!(
                "consume topic holds {total} records, expected {}",
                w.records
            ));
        }
        self.notes.push(format!(
            "consume workloads read `{topic}`: {} records of {} B written by {} (idempotent, no compression), per partition {:?}",
            w.records,
            w.value_bytes,
            peer.client.name(),
            marks.iter().map(|m| m.latest - m.earliest).collect::<Vec<_>>()
        ));
        self.source = Some((topic, w.records, marks));
        Ok(())
    }

    fn name(&self, w: &Workload, v: &Variant, round: u32) -> String {
        let client = self.peers[v.peer].client.name();
        let suffix = if v.extra.is_empty() { "" } else { "-b10" };
        format!(
            "e2e-{}-{}-{client}{suffix}-r{round}",
            self.tag,
            w.id.to_lowercase()
        )
    }

    fn measure(&mut self, w: &Workload, v: &Variant, round: u32, pool: &Path) -> RunRecord {
        let peer = self.peers[v.peer].clone();
        let name = self.name(w, v, round);
        let mut rec = RunRecord {
            workload: w.id.into(),
            variant: v.label.clone(),
            client: Some(peer.client),
            round,
            startup_cpu_s: self.startup.get(&(peer.client, w.is_produce())).copied(),
            ..RunRecord::default()
        };
        let result = match &w.kind {
            Kind::Produce {
                compression,
                rate,
                txn_records,
            } => self.measure_produce(
                &peer,
                w,
                &name,
                *compression,
                *rate,
                *txn_records,
                v,
                pool,
                &mut rec,
            ),
            Kind::Consume { group } => self.measure_consume(&peer, w, &name, *group, v, &mut rec),
        };
        match result {
            Ok(()) => rec.ok = true,
            Err(e) => {
                rec.ok = false;
                rec.reason = e;
            }
        }
        rec
    }

    fn fill_record(
        rec: &mut RunRecord,
        out: &Outcome,
        res: &PeerResult,
        broker: Option<f64>,
        load1: f64,
    ) {
        rec.records = res.records;
        rec.elapsed_s = res.elapsed_s;
        rec.steady_rps = res.steady_rps;
        rec.first_s = res.first_s;
        rec.cpu_s = out.cpu_s();
        rec.rss_mib = out.usage.maxrss_kib as f64 / 1024.0;
        rec.broker_cpu_s = broker;
        rec.load1 = load1;
        rec.lat = res.lat;
        rec.commit = res.commit;
        rec.txns = res.txns;
        rec.wall_s = out.wall_s;
    }

    #[allow(clippy::too_many_arguments)]
    fn measure_produce(
        &mut self,
        peer: &Peer,
        w: &Workload,
        topic: &str,
        compression: workloads::Compression,
        rate: Option<u64>,
        txn_records: Option<u64>,
        v: &Variant,
        pool: &Path,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        self.admin.create_topic(topic, PARTITIONS)?;
        let java_txn_ms = match self.java_w1_rps {
            Some(r) if r > 0.0 => {
                ((txn_records.unwrap_or(10_000) as f64 / r) * 1000.0).ceil() as u64
            }
            _ => 100,
        };
        let cmd = peer.produce_cmd(&ProduceSpec {
            bootstrap: &self.broker.bootstrap,
            topic,
            records: w.records,
            payload_file: pool,
            compression: compression.name(),
            rate,
            txn: txn_records.map(|k| (format!("{topic}-txn"), k)),
            java_txn_ms,
            extra: &v.extra,
        });
        rec.cmd = cmd.display();
        let timeout = match rate {
            Some(r) => Duration::from_secs(w.records / r.max(1) + 120),
            None => self.timeout,
        };
        let result = self
            .spawn(&cmd, topic, timeout)
            .and_then(|(out, broker, load1)| {
                if !out.success() {
                    return Err(out.failure());
                }
                let res = peer.parse(true, &out)?;
                Self::fill_record(rec, &out, &res, broker, load1);
                // Java's tool prints no byte count: every record is one pool line.
                rec.bytes = if res.bytes > 0 {
                    res.bytes
                } else {
                    res.records * w.value_bytes as u64
                };
                self.verify_produce(peer, w, topic, txn_records.is_some(), &res, rec)
            });
        rec.log_bytes = self.admin.log_bytes(topic);
        if peer.client == Client::Java && txn_records.is_some() {
            self.notes.push(format!(
                "Java W4 commits by time (`--transaction-duration-ms {java_txn_ms}`, ≈10,000 records at its W1-none rate)"
            ));
        }
        self.admin.delete_topic(topic);
        result
    }

    fn verify_produce(
        &self,
        peer: &Peer,
        w: &Workload,
        topic: &str,
        txn: bool,
        res: &PeerResult,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        if res.records != w.records || res.errors > 0 {
            return Err(format!(
                "{} of {} records acknowledged, {} errors {}",
                res.records, w.records, res.errors, res.error
            ));
        }
        let marks = self.admin.watermarks(topic, PARTITIONS)?;
        let total: i64 = marks.iter().map(|m| m.latest - m.earliest).sum();
        if txn {
            let markers = total - w.records as i64;
            if markers < 1 {
                return Err(format!(
                    "transactional topic holds {total} offsets for {} records: no commit marker",
                    w.records
                ));
            }
            rec.markers = Some(markers as u64);
            // Read it back read_committed with another client: exactly the records, in order.
            // (Java's ConsumerPerformance, the last resort, checks the count only.)
            let verifier = [Client::FranzGo, Client::Rdkafka, Client::Java]
                .iter()
                .find_map(|c| self.peers.iter().find(|p| p.client == *c))
                .ok_or("no consumer to read the transactional topic back")?;
            let cmd = verifier.consume_cmd(&ConsumeSpec {
                bootstrap: &self.broker.bootstrap,
                topic,
                records: w.records,
                partitions: PARTITIONS,
                group: (!verifier.can_assign()).then(|| format!("{topic}-verify")),
                read_committed: true,
                value_bytes: w.value_bytes,
                extra: &[],
            });
            let (out, _, _) = self.spawn(&cmd, &format!("{topic}-verify"), self.timeout)?;
            if !out.success() {
                return Err(format!(
                    "read_committed read-back failed: {}",
                    out.failure()
                ));
            }
            let back = verifier.parse(false, &out)?;
            let backwards: u64 = back.partitions.iter().map(|p| p.backwards).sum();
            if back.records != w.records || back.errors > 0 || back.bad_values > 0 || backwards > 0
            {
                return Err(format!(
                    "read_committed read-back ({}): {} records of {}, {} errors, {} bad values, {} out of order {}",
                    verifier.client.name(),
                    back.records,
                    w.records,
                    back.errors,
                    back.bad_values,
                    backwards,
                    back.error
                ));
            }
            return Ok(());
        }
        if total != w.records as i64 {
            return Err(format!(
                "the topic holds {total} records, {} were acknowledged",
                w.records
            ));
        }
        for p in &res.partitions {
            let m = marks
                .get(p.partition as usize)
                .ok_or(format!("ack for unknown partition {}", p.partition))?;
            if p.count as i64 != m.latest - m.earliest || p.last != m.latest - 1 {
                return Err(format!(
                    "partition {}: {} acks up to offset {}, the log holds {}..{}",
                    p.partition, p.count, p.last, m.earliest, m.latest
                ));
            }
        }
        let _ = peer;
        Ok(())
    }

    fn measure_consume(
        &mut self,
        peer: &Peer,
        w: &Workload,
        name: &str,
        group: bool,
        v: &Variant,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        let (topic, n, marks) = self.source.clone().ok_or("no consume topic")?;
        let group_id = group.then(|| name.to_string());
        let cmd = peer.consume_cmd(&ConsumeSpec {
            bootstrap: &self.broker.bootstrap,
            topic: &topic,
            records: n,
            partitions: PARTITIONS,
            group: group_id.clone(),
            read_committed: false,
            value_bytes: w.value_bytes,
            extra: &v.extra,
        });
        rec.cmd = cmd.display();
        let (out, broker, load1) = self.spawn(&cmd, name, self.timeout)?;
        if !out.success() {
            return Err(out.failure());
        }
        let res = peer.parse(false, &out)?;
        Self::fill_record(rec, &out, &res, broker, load1);
        rec.bytes = res.bytes;
        if res.records != n || res.errors > 0 || res.bad_values > 0 {
            return Err(format!(
                "read {} of {n} records, {} errors, {} bad values {}",
                res.records, res.errors, res.bad_values, res.error
            ));
        }
        let want_bytes = n * w.value_bytes as u64;
        if peer.can_assign() {
            if res.bytes != want_bytes {
                return Err(format!(
                    "read {} value bytes, expected {want_bytes}",
                    res.bytes
                ));
            }
            for (p, m) in marks.iter().enumerate() {
                let got = res.partitions.iter().find(|r| r.partition == p as i32);
                let expect = (m.latest - m.earliest) as u64;
                let ok = match got {
                    None => expect == 0,
                    Some(r) => {
                        r.count == expect
                            && r.first == m.earliest
                            && r.last == m.latest - 1
                            && r.backwards == 0
                            && r.gaps == 0
                    }
                };
                if !ok {
                    return Err(format!(
                        "partition {p}: read {got:?}, the log holds {}..{}",
                        m.earliest, m.latest
                    ));
                }
            }
        } else {
            // ConsumerPerformance prints MiB with 4 decimals: ±53 bytes.
            if res.bytes.abs_diff(want_bytes) > 110 {
                return Err(format!(
                    "read {} value bytes, expected {want_bytes}",
                    res.bytes
                ));
            }
            rec.bytes = want_bytes;
        }
        if let Some(g) = &group_id {
            let committed = self.admin.committed(g, &topic, PARTITIONS)?;
            for (p, (c, m)) in committed.iter().zip(&marks).enumerate() {
                if m.latest > m.earliest && *c != Some(m.latest) {
                    return Err(format!(
                        "group {g} partition {p}: committed {c:?}, log end {}",
                        m.latest
                    ));
                }
            }
        }
        Ok(())
    }

    fn cleanup(&mut self) {
        self.admin.delete_topic(&self.startup_topic);
        if let Some((t, _, _)) = &self.source {
            self.admin.delete_topic(t);
        }
    }

    /// Writes results.md / results.jsonl (and prints the report unless `partial`); true if
    /// every run verified.
    fn write_report(&self, mode: &str, partial: bool) -> bool {
        let n = &self.neighbourhood;
        let load = self.load_start;
        let took = self.t_start.elapsed();
        let mut keys: Vec<(String, String)> = Vec::new();
        for r in &self.records {
            let k = (r.workload.clone(), r.variant.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let rows: Vec<Summary> = keys
            .iter()
            .map(|(w, v)| {
                let runs: Vec<&RunRecord> = self
                    .records
                    .iter()
                    .filter(|r| &r.workload == w && &r.variant == v)
                    .collect();
                Summary::of(&runs)
            })
            .collect();
        let all_ok = self.records.iter().all(|r| r.ok);
        let mut md = String::new();
        md.push_str(&format!(
            "## End-to-end run ({mode} mode, {} round(s), {:.0} s{})\n\n",
            self.opts.rounds,
            took.as_secs_f64(),
            if partial {
                ", PARTIAL: still running or interrupted"
            } else {
                ""
            }
        ));
        md.push_str(&format!(
            "Machine: {} × {}, {}; load average at start {:.2} / {:.2} / {:.2}. Broker on core {BROKER_CORE}, client on core {CLIENT_CORE}{}.\n\n",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model(),
            mem_total(),
            load.0,
            load.1,
            load.2,
            if self.pin.is_some() { "" } else { " (NOT pinned)" }
        ));
        md.push_str("Clients:\n\n");
        let mut notes: Vec<&String> = Vec::new();
        for n in &self.notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        for n in notes {
            md.push_str(&format!("- {n}\n"));
        }
        let start: Vec<String> = self
            .startup
            .iter()
            .map(|((c, p), v)| {
                format!(
                    "{} {} {v:.2} s",
                    c.name(),
                    if *p { "produce" } else { "consume" }
                )
            })
            .collect();
        md.push_str(&format!(
            "- start-up CPU (min of the 1-record runs), subtracted for \"net\": {}\n\n",
            if start.is_empty() {
                "none".into()
            } else {
                start.join(", ")
            }
        ));
        md.push_str("Workloads (6 partitions, RF 1, fresh topic per produce run, acks=all on every producer):\n\n");
        for w in workloads::all(self.opts.quick) {
            if rows.iter().any(|r| r.workload == w.id) {
                md.push_str(&format!(
                    "- {}: {} × {} B — {}\n",
                    w.id, w.records, w.value_bytes, w.title
                ));
            }
        }
        md.push('\n');
        md.push_str(&report::table(&rows));
        md.push_str("\nRatios (same run):\n\n");
        md.push_str(&report::ratios(&rows));
        md.push_str("\nNeighbourhood (same run):\n\n");
        md.push_str(&format!(
            "- loopback TCP, one connection, 256 KiB writes, sender on the client core, receiver on the broker core: {} over {} MiB\n",
            n.loopback_gbps.map_or("not measured".into(), |g| format!("**{g:.2} GB/s**")),
            n.loopback_bytes >> 20
        ));
        let mut wl: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
        wl.dedup();
        for w in wl {
            let best = rows
                .iter()
                .filter(|r| r.workload == w)
                .filter_map(|r| r.broker_ceiling.map(|c| (c, r)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((c, r)) = best {
                md.push_str(&format!(
                    "- {w}: broker ceiling ≈ {:.0}k rec/s on its core (records per broker CPU-second, best: {}); peak MB/s measured {} vs loopback {}\n",
                    c / 1000.0,
                    r.variant,
                    rows.iter().filter(|r| r.workload == w).filter_map(|r| r.mbps).fold(0.0, f64::max).round(),
                    n.loopback_gbps.map_or("–".into(), |g| format!("{:.0} MB/s", g * 1000.0))
                ));
            }
        }
        md.push_str(&format!(
            "\nVerification: {} of {} runs verified{}.\n",
            self.records.iter().filter(|r| r.ok).count(),
            self.records.len(),
            if all_ok { "" } else { " — FAILURES above" }
        ));
        let mut jsonl = String::new();
        for r in &self.records {
            jsonl.push_str(&r.to_json().to_string());
            jsonl.push('\n');
        }
        for s in &rows {
            jsonl.push_str(&s.to_json().to_string());
            jsonl.push('\n');
        }
        let _ = std::fs::write(self.out.join("results.md"), &md);
        let _ = std::fs::write(self.out.join("results.jsonl"), &jsonl);
        if partial {
            return all_ok;
        }
        println!("{md}");
        eprintln!(
            "e2e: wrote {} and {}",
            self.out.join("results.md").display(),
            self.out.join("results.jsonl").display()
        );
        all_ok
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn mem_total() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or("? GiB".into(), |kib| {
            format!("{:.0} GiB RAM", kib / 1_048_576.0)
        })
}
