//! The clients under test. Each one is a program the runner builds from registry
//! packages and runs once per measurement:
//!
//! - **contract peers** (rust-rdkafka, franz-go, and ours: producer only so far, no
//!   consumer and no transactions) follow `bench/peers/README.md`: `PROGRAM produce|consume --key value ...`,
//!   one JSON result line on stdout;
//! - **Java** is Kafka's own `ProducerPerformance` / `ConsumerPerformance` from the jars
//!   the rig fetches, run through `tests/broker/rig tool`; their text output is parsed.
//!
//! A peer that cannot be built is skipped with its reason, never silently.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::proc::{Cmd, Outcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Client {
    Ours,
    Rdkafka,
    FranzGo,
    Java,
}

impl Client {
    pub(crate) const ALL: [Client; 4] =
        [Client::Ours, Client::Rdkafka, Client::FranzGo, Client::Java];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Client::Ours => "ours",
            Client::Rdkafka => "rdkafka",
            Client::FranzGo => "franz-go",
            Client::Java => "java",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// Java tool JVM flags: the perf scripts' heap and G1 settings, one processor (the
/// client is pinned to one core).
const JAVA_TOOL_OPTS: &str =
    "-Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
-XX:+ExplicitGCInvokesConcurrent -XX:ActiveProcessorCount=1 -Xshare:auto -Djava.awt.headless=true";

#[derive(Debug, Clone)]
enum Program {
    /// A program that follows the peer contract.
    Contract {
        path: PathBuf,
        env: Vec<(String, String)>,
    },
    /// Kafka's perf tools through `rig tool`.
    JavaTools { rig: PathBuf, rig_dir: PathBuf },
}

/// A built client.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) client: Client,
    pub(crate) version: String,
    /// How it was built or found (for the report).
    pub(crate) build_note: String,
    program: Program,
}

pub(crate) struct BuildCtx {
    pub(crate) repo: PathBuf,
    pub(crate) target: PathBuf,
    pub(crate) rig_dir: PathBuf,
    pub(crate) log_dir: PathBuf,
}

fn run_logged(mut c: Command, log: &Path) -> Result<(), String> {
    let f = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let f2 = f.try_clone().map_err(|e| e.to_string())?;
    let status = c
        .stdin(Stdio::null())
        .stdout(Stdio::from(f))
        .stderr(Stdio::from(f2))
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", c.get_program()))?;
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(6).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "build failed ({status}; log {}): {}",
        log.display(),
        tail.join(" | ")
    ))
}

fn first_line(mut c: Command) -> Option<String> {
    let out = c.stdin(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}

/// Builds (or finds) `client`; `Err` is the reason it is skipped.
pub(crate) fn build(client: Client, ctx: &BuildCtx) -> Result<Peer, String> {
    std::fs::create_dir_all(&ctx.log_dir).map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    let (program, how) = match client {
        Client::Ours => {
            // The workspace's own target dir: shares the runner's dependency builds.
            // E2E_OURS_PROFILE=test (the CI quick step) reuses the test build instead of
            // a release build of every dependency; figures need the default, release.
            let profile = std::env::var("E2E_OURS_PROFILE").unwrap_or_else(|_| "release".into());
            let dir = if profile == "release" {
                "release"
            } else {
                "debug"
            };
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut c = Command::new(cargo);
            // Outside release, with the feature set of `cargo test --workspace` (the
            // examples pull in dev-dependency features): that build's artifacts as they
            // are, where `-p kafka-bench` would rebuild the core.
            let select: &[&str] = if profile == "release" {
                &["-p", "kafka-bench"]
            } else {
                &["--workspace", "--quiet", "--examples"]
            };
            c.args(["build", "--profile", &profile])
                .args(select)
                .args(["--bin", "e2e-peer-ours", "--manifest-path"])
                .arg(ctx.repo.join("Cargo.toml"))
                .arg("--target-dir")
                .arg(&ctx.target);
            run_logged(c, &ctx.log_dir.join("build-ours.log"))?;
            let how = if profile == "release" {
                "cargo build --release -p kafka-bench --bin e2e-peer-ours (kafka-blocking)"
            } else {
                "cargo build --profile test --workspace --examples --bin e2e-peer-ours (kafka-blocking; \
                 CI quick mode: not for figures)"
            };
            (
                Program::Contract {
                    path: ctx.target.join(dir).join("e2e-peer-ours"),
                    env: Vec::new(),
                },
                how,
            )
        }
        Client::Rdkafka => {
            let dir = ctx.target.join("e2e-peers/rdkafka");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut c = Command::new(cargo);
            c.args(["build", "--release", "--locked", "--manifest-path"])
                .arg(ctx.repo.join("bench/peers/rdkafka/Cargo.toml"))
                .arg("--target-dir")
                .arg(&dir);
            run_logged(c, &ctx.log_dir.join("build-rdkafka.log"))?;
            let path = dir.join("release/e2e-peer-rdkafka");
            (
                Program::Contract {
                    path,
                    env: Vec::new(),
                },
                "cargo build --release bench/peers/rdkafka (bundled librdkafka)",
            )
        }
        Client::FranzGo => {
            if first_line({
                let mut c = Command::new("go");
                c.arg("version");
                c
            })
            .is_none()
            {
                return Err("no Go toolchain (`go` not found)".into());
            }
            let out = ctx.target.join("e2e-peers/franz-go/e2e-peer-franz-go");
            let mut c = Command::new("go");
            c.args(["build", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(ctx.repo.join("bench/peers/franz-go"))
                .env("GOFLAGS", "-mod=readonly");
            run_logged(c, &ctx.log_dir.join("build-franz-go.log"))?;
            (
                Program::Contract {
                    path: out,
                    env: vec![("GOMAXPROCS".into(), "1".into())],
                },
                "go build bench/peers/franz-go (GOMAXPROCS=1)",
            )
        }
        Client::Java => {
            let rig = ctx.repo.join("tests/broker/rig");
            let mut c = Command::new(&rig);
            c.arg("fetch").env("RIG_DIR", &ctx.rig_dir);
            run_logged(c, &ctx.log_dir.join("build-java.log"))?;
            (
                Program::JavaTools {
                    rig,
                    rig_dir: ctx.rig_dir.clone(),
                },
                "rig fetch (Kafka's jars), tools run with `rig tool`",
            )
        }
    };
    let version = match &program {
        Program::Contract { path, .. } => first_line({
            let mut c = Command::new(path);
            c.arg("version");
            c
        })
        .ok_or_else(|| format!("{} version failed", path.display()))?,
        Program::JavaTools { .. } => {
            let java = first_line({
                let mut c = Command::new(std::env::var("JAVA").unwrap_or_else(|_| "java".into()));
                c.arg("-version");
                c
            })
            .unwrap_or_else(|| "java ?".into());
            format!("Kafka 4.3.1 ProducerPerformance/ConsumerPerformance on {java}")
        }
    };
    Ok(Peer {
        client,
        version,
        build_note: format!("{how}; {:.0} s", t0.elapsed().as_secs_f64()),
        program,
    })
}

/// One produce run's parameters.
pub(crate) struct ProduceSpec<'a> {
    pub(crate) bootstrap: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) records: u64,
    pub(crate) payload_file: &'a Path,
    pub(crate) compression: &'a str,
    pub(crate) rate: Option<u64>,
    /// Transactional id and records per transaction.
    pub(crate) txn: Option<(String, u64)>,
    /// Java's tool commits by time only: its transaction duration.
    pub(crate) java_txn_ms: u64,
    pub(crate) extra: &'a [(String, String)],
}

/// One consume run's parameters.
pub(crate) struct ConsumeSpec<'a> {
    pub(crate) bootstrap: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) records: u64,
    pub(crate) partitions: i32,
    pub(crate) group: Option<String>,
    pub(crate) read_committed: bool,
    pub(crate) value_bytes: usize,
    pub(crate) extra: &'a [(String, String)],
}

/// Per-partition figures a contract peer reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartResult {
    pub(crate) partition: i32,
    pub(crate) count: u64,
    /// First offset seen (consume), -1 unknown.
    pub(crate) first: i64,
    /// Highest offset acked / seen.
    pub(crate) last: i64,
    pub(crate) backwards: u64,
    pub(crate) gaps: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Latency {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
    pub(crate) max: f64,
}

/// What a client says about its run.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerResult {
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    pub(crate) errors: u64,
    /// Start (after client creation) to last ack / last record.
    pub(crate) elapsed_s: f64,
    pub(crate) first_s: Option<f64>,
    /// Produce: after the first 10 % of acks (Java: of sends); consume: first to last record.
    pub(crate) steady_rps: Option<f64>,
    pub(crate) txns: Option<u64>,
    pub(crate) lat: Option<Latency>,
    /// Transactional produce: commit call (flush + EndTxn) to its result, in ms.
    pub(crate) commit: Option<Latency>,
    pub(crate) partitions: Vec<PartResult>,
    pub(crate) bad_values: u64,
    pub(crate) error: String,
}

impl Peer {
    fn base(&self, op: &str) -> Cmd {
        match &self.program {
            Program::Contract { path, env } => {
                let mut c = Cmd::new([path.display().to_string(), op.to_string()]);
                c.env.extend(env.iter().cloned());
                c
            }
            Program::JavaTools { rig, rig_dir } => {
                let class = if op == "produce" {
                    "org.apache.kafka.tools.ProducerPerformance"
                } else {
                    "org.apache.kafka.tools.ConsumerPerformance"
                };
                Cmd::new([rig.display().to_string(), "tool".into(), class.into()])
                    .env("RIG_DIR", rig_dir.display().to_string())
                    .env("RIG_TOOL_JAVA_OPTS", JAVA_TOOL_OPTS)
            }
        }
    }

    pub(crate) fn produce_cmd(&self, s: &ProduceSpec<'_>) -> Cmd {
        let mut c = self.base("produce");
        let warmup = s.records / 10;
        match &self.program {
            Program::Contract { .. } => {
                c = c
                    .arg("--bootstrap")
                    .arg(s.bootstrap)
                    .arg("--topic")
                    .arg(s.topic)
                    .arg("--records")
                    .arg(s.records.to_string())
                    .arg("--payload-file")
                    .arg(s.payload_file.display().to_string())
                    .arg("--compression")
                    .arg(s.compression)
                    .arg("--linger-ms")
                    .arg("5")
                    .arg("--batch-bytes")
                    .arg("1000000")
                    .arg("--buffer-bytes")
                    .arg("134217728")
                    .arg("--idempotent")
                    .arg("true")
                    .arg("--warmup-records")
                    .arg(warmup.max(1).to_string());
                if let Some(r) = s.rate {
                    c = c.arg("--rate").arg(r.to_string());
                }
                if let Some((id, every)) = &s.txn {
                    c = c
                        .arg("--transactional-id")
                        .arg(id)
                        .arg("--txn-records")
                        .arg(every.to_string());
                }
                for (k, v) in s.extra {
                    c = c.arg("--set").arg(format!("{k}={v}"));
                }
            }
            Program::JavaTools { .. } => {
                c = c
                    .arg("--bootstrap-server")
                    .arg(s.bootstrap)
                    .arg("--topic")
                    .arg(s.topic)
                    .arg("--num-records")
                    .arg(s.records.to_string())
                    .arg("--payload-file")
                    .arg(s.payload_file.display().to_string())
                    .arg("--throughput")
                    .arg(s.rate.map_or("-1".to_string(), |r| r.to_string()));
                if warmup > 0 {
                    c = c.arg("--warmup-records").arg(warmup.to_string());
                }
                if let Some((id, _)) = &s.txn {
                    c = c
                        .arg("--transactional-id")
                        .arg(id)
                        .arg("--transaction-duration-ms")
                        .arg(s.java_txn_ms.max(1).to_string());
                }
                c = c.arg("--command-property");
                for p in [
                    "acks=all".to_string(),
                    "enable.idempotence=true".into(),
                    "linger.ms=5".into(),
                    "batch.size=1000000".into(),
                    format!("compression.type={}", s.compression),
                    "max.in.flight.requests.per.connection=5".into(),
                    "buffer.memory=134217728".into(),
                ] {
                    c = c.arg(p);
                }
                for (k, v) in s.extra {
                    c = c.arg(format!("{k}={v}"));
                }
            }
        }
        c
    }

    pub(crate) fn consume_cmd(&self, s: &ConsumeSpec<'_>) -> Cmd {
        let mut c = self.base("consume");
        let isolation = if s.read_committed {
            "read_committed"
        } else {
            "read_uncommitted"
        };
        match &self.program {
            Program::Contract { .. } => {
                c = c
                    .arg("--bootstrap")
                    .arg(s.bootstrap)
                    .arg("--topic")
                    .arg(s.topic)
                    .arg("--records")
                    .arg(s.records.to_string())
                    .arg("--partitions")
                    .arg(s.partitions.to_string())
                    .arg("--isolation")
                    .arg(isolation)
                    .arg("--value-bytes")
                    .arg(s.value_bytes.to_string());
                if let Some(g) = &s.group {
                    c = c.arg("--group").arg(g);
                }
                for (k, v) in s.extra {
                    c = c.arg("--set").arg(format!("{k}={v}"));
                }
            }
            Program::JavaTools { .. } => {
                // ConsumerPerformance always subscribes; without a group name it makes one up.
                let group = s
                    .group
                    .clone()
                    .unwrap_or_else(|| format!("{}-java-assignless", s.topic));
                c = c
                    .arg("--bootstrap-server")
                    .arg(s.bootstrap)
                    .arg("--topic")
                    .arg(s.topic)
                    .arg("--num-records")
                    .arg(s.records.to_string())
                    .arg("--group")
                    .arg(group)
                    .arg("--timeout")
                    .arg("30000");
                let mut props = vec![
                    "fetch.min.bytes=1".to_string(),
                    "fetch.max.wait.ms=500".into(),
                    "max.partition.fetch.bytes=1048576".into(),
                    "fetch.max.bytes=52428800".into(),
                    format!("isolation.level={isolation}"),
                ];
                props.extend(s.extra.iter().map(|(k, v)| format!("{k}={v}")));
                for p in props {
                    c = c.arg("--command-property").arg(p);
                }
            }
        }
        c
    }

    /// Whether this client can run `group == false` consumes (partition assignment).
    pub(crate) fn can_assign(&self) -> bool {
        !matches!(self.program, Program::JavaTools { .. })
    }

    /// Reads the client's own report of a run.
    pub(crate) fn parse(&self, produce: bool, out: &Outcome) -> Result<PeerResult, String> {
        match &self.program {
            Program::Contract { .. } => parse_contract(&out.stdout),
            Program::JavaTools { .. } if produce => parse_java_produce(&out.stdout, &out.stderr),
            Program::JavaTools { .. } => parse_java_consume(&out.stdout, &out.stderr),
        }
    }
}

fn parse_contract(stdout: &str) -> Result<PeerResult, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or("no JSON result line on stdout")?;
    let v: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON result line: {e}"))?;
    let u = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let f = |k: &str| v.get(k).and_then(Value::as_f64);
    let latency = |key: &str| {
        v.get(key).filter(|l| l.is_object()).map(|l| {
            let g = |k: &str| l.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            Latency {
                p50: g("p50"),
                p99: g("p99"),
                p999: g("p999"),
                max: g("max"),
            }
        })
    };
    let lat = latency("lat_ms");
    let commit = latency("commit_ms");
    let partitions = v
        .get("partitions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|p| {
                    let i = |k: &str, d: i64| p.get(k).and_then(Value::as_i64).unwrap_or(d);
                    PartResult {
                        partition: i("p", -1) as i32,
                        count: i("count", 0).max(0) as u64,
                        first: i("first", -1),
                        last: i("last", -1),
                        backwards: i("backwards", 0).max(0) as u64,
                        gaps: i("gaps", 0).max(0) as u64,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(PeerResult {
        records: u("records"),
        bytes: u("bytes"),
        errors: u("errors"),
        elapsed_s: f("elapsed_s").unwrap_or(0.0),
        first_s: f("first_s"),
        steady_rps: f("steady_rps").filter(|r| *r > 0.0),
        txns: v.get("txns").and_then(Value::as_u64),
        lat,
        commit,
        partitions,
        bad_values: u("bad_values"),
        error: v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// The leading number of each ", "-separated segment of a ProducerPerformance summary line.
fn java_numbers(line: &str) -> Vec<f64> {
    line.split(", ")
        .filter_map(|seg| seg.split_whitespace().next())
        .filter_map(|t| t.trim_end_matches('.').parse().ok())
        .collect()
}

/// Java's stack traces of failed sends (its callback prints them) and other exceptions.
fn java_errors(stderr: &str) -> (u64, String) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            !l.starts_with('\t')
                && !l.starts_with('[')
                && (l.contains("Exception") || l.contains("Error:"))
        })
        .collect();
    (
        lines.len() as u64,
        lines.first().map(|s| s.to_string()).unwrap_or_default(),
    )
}

fn parse_java_produce(stdout: &str, stderr: &str) -> Result<PeerResult, String> {
    let summary = |steady: bool| {
        stdout
            .lines()
            .filter(|l| l.contains(" records sent, ") && l.contains(" 99.9th"))
            .find(|l| l.contains("steady state") == steady)
    };
    let total = summary(false).ok_or("no ProducerPerformance summary line")?;
    let n = java_numbers(total);
    // count, rec/s (the MB/s in brackets has no segment of its own), avg, max, p50, p95, p99, p99.9
    if n.len() < 8 {
        return Err(format!("cannot read the summary line: {total}"));
    }
    let records = n[0] as u64;
    let rps = n[1];
    let steady = summary(true)
        .map(java_numbers)
        .and_then(|s| s.get(1).copied());
    let (errors, error) = java_errors(stderr);
    Ok(PeerResult {
        records,
        bytes: 0,
        errors,
        elapsed_s: if rps > 0.0 { records as f64 / rps } else { 0.0 },
        first_s: None,
        steady_rps: steady,
        txns: None,
        lat: Some(Latency {
            p50: n[4],
            p99: n[6],
            p999: n[7],
            max: n[3],
        }),
        commit: None,
        partitions: Vec::new(),
        bad_values: 0,
        error,
    })
}

fn parse_java_consume(stdout: &str, stderr: &str) -> Result<PeerResult, String> {
    if let Some(w) = stdout
        .lines()
        .find(|l| l.starts_with("WARNING: Exiting before"))
    {
        return Err(w.to_string());
    }
    // start, end, MB (2^20), MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
    let row = stdout
        .lines()
        .map(|l| l.split(", ").collect::<Vec<_>>())
        .find(|f| f.len() == 10 && f[4].parse::<u64>().is_ok())
        .ok_or("no ConsumerPerformance result line")?;
    let num = |i: usize| row[i].trim().parse::<f64>().unwrap_or(0.0);
    let records = num(4) as u64;
    let (errors, error) = java_errors(stderr);
    Ok(PeerResult {
        records,
        bytes: (num(2) * 1_048_576.0).round() as u64,
        errors,
        elapsed_s: if num(5) > 0.0 {
            records as f64 / num(5)
        } else {
            0.0
        },
        first_s: Some(num(6) / 1000.0),
        steady_rps: Some(num(9)).filter(|r| *r > 0.0),
        txns: None,
        lat: None,
        commit: None,
        partitions: Vec::new(),
        bad_values: 0,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_producer_performance_summaries() {
        let out = "Reading payloads from: /x\nNumber of messages read: 1000\n\
200000 records sent, 153846.153846 records/sec (14.67 MB/sec), 120.52 ms avg latency, 560.00 ms max latency, 97 ms 50th, 380 ms 95th, 520 ms 99th, 555 ms 99.9th.\n\
180000 steady state records sent, 171428.571429 records/sec (16.35 MB/sec), 100.00 ms avg latency, 400.00 ms max latency, 90 ms 50th, 300 ms 95th, 390 ms 99th, 399 ms 99.9th.\n";
        let r = parse_java_produce(out, "").unwrap();
        assert_eq!(r.records, 200_000);
        assert!((r.elapsed_s - 1.3).abs() < 1e-6);
        assert_eq!(r.steady_rps, Some(171_428.571_429));
        let l = r.lat.unwrap();
        assert_eq!((l.p50, l.p99, l.p999, l.max), (97.0, 520.0, 555.0, 560.0));
    }

    #[test]
    fn reads_consumer_performance_rows() {
        let out = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n\
2026-12-01 10:00:00:000, 2026-12-01 10:00:02:000, 19.0735, 9.5367, 200000, 100000.0000, 3005, -1005, -18.9786, -199004.9751\n";
        let r = parse_java_consume(out, "").unwrap();
        assert_eq!(r.records, 200_000);
        assert!(r.bytes.abs_diff(20_000_000) < 60);
        assert!((r.elapsed_s - 2.0).abs() < 1e-9);
        assert_eq!(r.steady_rps, None);
        assert!(parse_java_consume(
            "WARNING: Exiting before consuming the expected number of messages",
            ""
        )
        .is_err());
    }

    #[test]
    fn reads_contract_lines() {
        let out = "noise\n{\"peer\":\"x\",\"op\":\"consume\",\"records\":10,\"bytes\":1000,\"errors\":0,\"elapsed_s\":0.5,\
\"first_s\":0.1,\"steady_rps\":22.5,\"bad_values\":0,\"partitions\":[{\"p\":0,\"count\":10,\"first\":0,\"last\":9,\"backwards\":0,\"gaps\":0}],\"error\":\"\"}\n";
        let r = parse_contract(out).unwrap();
        assert_eq!(
            (r.records, r.bytes, r.partitions.len(), r.partitions[0].last),
            (10, 1000, 1, 9)
        );
        assert_eq!(r.steady_rps, Some(22.5));
        assert!(r.lat.is_none());
        assert!(r.commit.is_none());
    }

    #[test]
    fn reads_commit_latency_of_transactional_produces() {
        let out = "{\"peer\":\"x\",\"op\":\"produce\",\"records\":20,\"bytes\":2000,\"errors\":0,\"elapsed_s\":0.5,\
\"first_s\":0.1,\"steady_rps\":40.0,\"txns\":2,\"lat_ms\":null,\"commit_ms\":{\"n\":2,\"p50\":7.5,\"p99\":9.25,\"p999\":9.25,\"max\":9.25},\
\"partitions\":[{\"p\":0,\"count\":20,\"last\":21}],\"error\":\"\"}";
        let r = parse_contract(out).unwrap();
        assert_eq!(r.txns, Some(2));
        assert!(r.lat.is_none());
        let c = r.commit.expect("commit_ms");
        assert_eq!((c.p50, c.p99, c.max), (7.5, 9.25, 9.25));
    }
}
