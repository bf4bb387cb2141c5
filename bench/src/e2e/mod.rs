//! End-to-end benchmark runner: our client against rust-rdkafka, franz-go and Kafka's
//! Java client on the same single-node broker, in one run (`bench/RESULTS.md`).
//!
//! Flow: build the peers (skipping visibly what cannot be built), start or attach to
//! the broker and pin it to core 0, measure loopback TCP, measure each client's
//! start-up CPU (1-record runs), then run every workload for every client in
//! interleaved rounds (A B C D A B C D …) on core 1, each on a fresh topic (produce,
//! `produce.rs`) or reading a source topic filled once per codec, in a fresh group when
//! it is a group workload (consume, `consume.rs`), or in a fresh share group (`share.rs`),
//! verifying every run independently
//! through our admin client. Writes `results.md` and `results.jsonl` (`output.rs`); exits
//! 1 if a built client's run failed its verification.

mod admin;
mod broker;
mod consume;
mod neighbourhood;
mod output;
mod peer_output;
mod peers;
mod proc;
mod produce;
mod report;
mod share;
mod sys;
mod workloads;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use admin::Admin;
use broker::{Broker, BrokerOpts};
use consume::Source;
use peers::{Client, ConsumeSpec, JavaConsume, Peer, PeerResult, ProduceSpec};
use proc::Outcome;
use report::{RunRecord, Summary};
use workloads::{Compression, Kind, Workload};

const PARTITIONS: i32 = 6;
const BROKER_CORE: usize = 0;
const CLIENT_CORE: usize = 1;

const USAGE: &str = "usage: e2e [--quick] [--rounds N] [--clients ours,rdkafka,franz-go,java] \
[--workloads W1,W2,...] [--out DIR] [--keep-broker] [--fresh-broker] [--no-pin]

  --quick          fewer records and one round (CI smoke run, ~3 minutes)
  --rounds N       interleaved rounds per workload (default 3; quick: 1)
  --clients LIST   clients to build and run (default: all four)
  --require LIST   fail (exit 1) if one of these clients cannot be built (CI)
  --workloads LIST ids or prefixes: W1 (= W1-none,W1-lz4,W1-zstd), W2, W3, W4,
                   W5 (= W5,W5-lz4,W5-zstd), W6 (= W6,W6-3,W6-848,W6-848-3),
                   S3 (share group, KIP-932: ours and Java only)
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
/// default `fetch.queue.backoff.ms` and 10 ms; Java's consumer as our `ConsumePeer` and,
/// in one-member groups, as Kafka's `ConsumerPerformance`).
#[derive(Debug, Clone)]
struct Variant {
    peer: usize,
    label: String,
    /// Distinguishes the variants of one client in group ids and log names.
    slug: &'static str,
    extra: Vec<(String, String)>,
    java: JavaConsume,
}

/// Which 1-record run gives a client's start-up CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Startup {
    Produce,
    /// The contract consume (assign); Java: `ConsumePeer`.
    Consume,
    /// Java's `ConsumerPerformance` (in a group).
    ConsumeTool,
    /// A share group of three (ours: the peer's `share`; Java: `ShareConsumerPerformance`).
    Share,
}

impl Startup {
    fn name(self) -> &'static str {
        match self {
            Startup::Produce => "produce",
            Startup::Consume => "consume",
            Startup::ConsumeTool => "consume (ConsumerPerformance)",
            Startup::Share => "share group of 3",
        }
    }
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
    startup: BTreeMap<(Client, Startup), f64>,
    records: Vec<RunRecord>,
    notes: Vec<String>,
    timeout: Duration,
    /// The 1-record topic start-up runs use.
    startup_topic: String,
    /// The consume workloads' source topics, by the codec they were written with.
    sources: BTreeMap<(Compression, u64), Source>,
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
        sources: BTreeMap::new(),
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
        let need_consume = wls.iter().any(|w| matches!(w.kind, Kind::Consume { .. }));
        let need_share = wls.iter().any(|w| matches!(w.kind, Kind::Share { .. }));
        let need_tool = wls.iter().any(|w| {
            matches!(w.kind, Kind::Consume { .. })
                && self
                    .variants(w)
                    .iter()
                    .any(|v| self.peers[v.peer].java_tool(v.java))
        });

        // ---- start-up CPU of each client (1-record runs), interleaved over the rounds
        self.admin.create_topic(&self.startup_topic, PARTITIONS)?;
        for round in 1..=self.opts.rounds {
            for i in 0..self.peers.len() {
                self.startup_run(i, Startup::Produce, round, &p100);
            }
            for i in 0..self.peers.len() {
                let (client, assign) = (self.peers[i].client, self.peers[i].can_assign());
                if need_consume && assign {
                    self.startup_run(i, Startup::Consume, round, &p100);
                }
                if client == Client::Java && need_tool {
                    self.startup_run(i, Startup::ConsumeTool, round, &p100);
                }
                if need_share && self.peers[i].can_share() {
                    self.startup_run(i, Startup::Share, round, &p100);
                }
            }
        }

        for w in &wls {
            if let Some(source) = w.source() {
                self.source(source, w, &p100)?;
            }
            if let Kind::Share { .. } = w.kind {
                for p in self.peers.iter().filter(|p| !p.can_share()) {
                    let why = format!(
                        "{}: {} has no share consumer (KIP-932): not run",
                        w.id,
                        p.client.name()
                    );
                    eprintln!("e2e: {why}");
                    self.notes.push(why);
                }
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

    /// Every client's runs of `w` (a client that cannot run it has none).
    fn variants(&self, w: &Workload) -> Vec<Variant> {
        let mut out = Vec::new();
        let plain = |i: usize, label: &str| Variant {
            peer: i,
            label: label.into(),
            slug: "",
            extra: Vec::new(),
            java: JavaConsume::Peer,
        };
        if let Kind::Share { .. } = w.kind {
            for (i, p) in self.peers.iter().enumerate() {
                match p.client {
                    Client::Ours => out.push(plain(i, "ours (ShareConsumer)")),
                    Client::Java => out.push(plain(i, "java (ShareConsumerPerformance)")),
                    _ => {}
                }
            }
            return out;
        }
        let Kind::Consume { group, .. } = w.kind else {
            // Closed-loop produce also through the application's producer
            // (`kafka_blocking::Producer`); the core producer's row stays "ours".
            let closed_loop = matches!(
                w.kind,
                Kind::Produce {
                    rate: None,
                    txn_records: None,
                    ..
                }
            );
            for (i, p) in self.peers.iter().enumerate() {
                out.push(plain(i, p.client.name()));
                if p.client == Client::Ours && closed_loop {
                    out.push(Variant {
                        slug: "-adapter",
                        extra: vec![("ours.api".into(), "adapter".into())],
                        ..plain(i, "ours (kafka_blocking::Producer)")
                    });
                }
            }
            return out;
        };
        let one_member = group.is_some_and(|g| g.members == 1);
        for (i, p) in self.peers.iter().enumerate() {
            match p.client {
                Client::Rdkafka => {
                    out.push(plain(i, "rdkafka (fetch.queue.backoff.ms default)"));
                    out.push(Variant {
                        slug: "-b10",
                        extra: vec![("fetch.queue.backoff.ms".into(), "10".into())],
                        ..plain(i, "rdkafka (fetch.queue.backoff.ms=10)")
                    });
                }
                Client::Java => {
                    if p.can_assign() && (!self.opts.quick || workloads::java_peer_in_quick(w.id)) {
                        out.push(plain(i, "java (KafkaConsumer)"));
                    }
                    if one_member {
                        out.push(Variant {
                            slug: "-tool",
                            java: JavaConsume::Tool,
                            ..plain(i, "java (ConsumerPerformance)")
                        });
                    }
                }
                _ => out.push(plain(i, p.client.name())),
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

    fn startup_run(&mut self, i: usize, kind: Startup, round: u32, pool: &Path) {
        let p = &self.peers[i];
        let java = if kind == Startup::ConsumeTool {
            JavaConsume::Tool
        } else {
            JavaConsume::Peer
        };
        let cmd = if kind == Startup::Share {
            let group = format!("e2e-{}-startup-share-{}-{round}", self.tag, p.client.name());
            match self.share_cmd(p, &group, &self.startup_topic, 1, 3, 0) {
                Ok(c) => c,
                Err(e) => {
                    let why = format!("start-up run of {} (share) failed: {e}", p.client.name());
                    self.notes.push(why);
                    return;
                }
            }
        } else if kind == Startup::Produce {
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
            let group = p
                .java_tool(java)
                .then(|| format!("e2e-{}-startup-{}-{round}", self.tag, p.client.name()));
            p.consume_cmd(
                &ConsumeSpec {
                    bootstrap: &self.broker.bootstrap,
                    topic: &self.startup_topic,
                    records: 1,
                    partitions: PARTITIONS,
                    group,
                    members: 1,
                    read_committed: false,
                    value_bytes: 0,
                    extra: &[],
                },
                java,
            )
        };
        let op = match kind {
            Startup::Produce => "produce",
            Startup::Consume => "consume",
            Startup::ConsumeTool => "consume-tool",
            Startup::Share => "share",
        };
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
                    .get(&(client, kind))
                    .map_or(cpu, |p| p.min(cpu));
                self.startup.insert((client, kind), v);
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

    fn name(&self, w: &Workload, v: &Variant, round: u32) -> String {
        let client = self.peers[v.peer].client.name();
        format!(
            "e2e-{}-{}-{client}{}-r{round}",
            self.tag,
            w.id.to_lowercase(),
            v.slug
        )
    }

    fn measure(&mut self, w: &Workload, v: &Variant, round: u32, pool: &Path) -> RunRecord {
        let peer = self.peers[v.peer].clone();
        let name = self.name(w, v, round);
        let startup = if w.is_produce() {
            Startup::Produce
        } else if let Kind::Share { .. } = w.kind {
            Startup::Share
        } else if peer.java_tool(v.java) {
            Startup::ConsumeTool
        } else {
            Startup::Consume
        };
        let mut rec = RunRecord {
            workload: w.id.into(),
            variant: v.label.clone(),
            client: Some(peer.client),
            round,
            startup_cpu_s: self.startup.get(&(peer.client, startup)).copied(),
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
            Kind::Consume { source, group } => {
                self.measure_consume(&peer, w, &name, *source, *group, v, pool, &mut rec)
            }
            Kind::Share { members } => {
                self.measure_share(&peer, w, &name, *members, pool, &mut rec)
            }
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
        rec.member_records = res.member_records.clone();
        rec.wall_s = out.wall_s;
    }

    fn cleanup(&mut self) {
        self.admin.delete_topic(&self.startup_topic);
        for s in self.sources.values() {
            self.admin.delete_topic(&s.topic);
        }
    }
}
