//! The clients under test. Each one is a program the runner builds from registry
//! packages and runs once per measurement:
//!
//! - **contract peers** (rust-rdkafka, franz-go, ours) follow `bench/peers/README.md`:
//!   `PROGRAM produce|consume --key value ...`, one JSON result line on stdout;
//! - **Java** is Kafka's own `ProducerPerformance` / `ConsumerPerformance` from the jars
//!   the rig fetches, run through `tests/broker/rig tool` (their text output is parsed),
//!   plus our contract peer `bench/peers/java/ConsumePeer.java` on `KafkaConsumer` for
//!   the consumes the tool cannot do (assign, several members), compiled here with
//!   `javac` against the same jars and run the same way; share groups (KIP-932) are
//!   Kafka's `ShareConsumerPerformance` (`--threads M`).
//!
//! A peer that cannot be built is skipped with its reason, never silently.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::peer_output::{
    parse_contract, parse_java_consume, parse_java_produce, parse_java_share,
};
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
    /// Kafka's perf tools through `rig tool`, and our consume peer when it compiled.
    JavaTools {
        rig: PathBuf,
        rig_dir: PathBuf,
        peer: Option<JavaPeer>,
    },
}

/// `ConsumePeer` compiled against the rig's jars.
#[derive(Debug, Clone)]
struct JavaPeer {
    /// The rig's Kafka jar directory.
    lib: PathBuf,
    classes: PathBuf,
}

/// Which of Java's consume programs a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JavaConsume {
    /// Kafka's `ConsumerPerformance` (one member, always subscribes).
    Tool,
    /// Our `ConsumePeer` on `KafkaConsumer`.
    Peer,
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
            let peer = build_java_peer(ctx, &rig);
            let how = match &peer {
                Ok(_) => concat!(
                    "rig fetch (Kafka's jars), tools run with `rig tool`; ",
                    "javac bench/peers/java/ConsumePeer.java against them"
                ),
                Err(_) => "rig fetch (Kafka's jars), tools run with `rig tool`",
            };
            if let Err(e) = &peer {
                eprintln!("e2e:   java: no ConsumePeer ({e}): Java runs the tools only");
            }
            (
                Program::JavaTools {
                    rig,
                    rig_dir: ctx.rig_dir.clone(),
                    peer: peer.ok(),
                },
                how,
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
        Program::JavaTools { peer, .. } => {
            let java = first_line({
                let mut c = Command::new(std::env::var("JAVA").unwrap_or_else(|_| "java".into()));
                c.arg("-version");
                c
            })
            .unwrap_or_else(|| "java ?".into());
            format!(
                "Kafka 4.3.1 ProducerPerformance/ConsumerPerformance/ShareConsumerPerformance{} on {java}",
                if peer.is_some() {
                    " + ConsumePeer (KafkaConsumer)"
                } else {
                    ""
                }
            )
        }
    };
    Ok(Peer {
        client,
        version,
        build_note: format!("{how}; {:.0} s", t0.elapsed().as_secs_f64()),
        program,
    })
}

/// The rig's Kafka jar directory, as the rig itself puts it on the tool classpath
/// (`java -cp LIB/* -XshowSettings:properties -version` prints the expanded path).
fn rig_lib(rig: &Path, rig_dir: &Path) -> Result<PathBuf, String> {
    let out = Command::new(rig)
        .args(["tool", "-XshowSettings:properties", "-version"])
        .env("RIG_DIR", rig_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("rig tool: {e}"))?;
    let text = String::from_utf8_lossy(&out.stderr);
    let jar = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("java.class.path = "))
        .ok_or("the rig's java printed no java.class.path")?;
    Path::new(jar.trim())
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("unexpected class path {jar}"))
}

/// Compiles `bench/peers/java/ConsumePeer.java` into `target/e2e-peers/java`.
fn build_java_peer(ctx: &BuildCtx, rig: &Path) -> Result<JavaPeer, String> {
    let lib = rig_lib(rig, &ctx.rig_dir)?;
    let classes = ctx.target.join("e2e-peers/java");
    std::fs::create_dir_all(&classes).map_err(|e| e.to_string())?;
    let javac = std::env::var("JAVAC").unwrap_or_else(|_| "javac".into());
    let mut c = Command::new(javac);
    c.arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg("-d")
        .arg(&classes)
        .arg(ctx.repo.join("bench/peers/java/ConsumePeer.java"));
    run_logged(c, &ctx.log_dir.join("build-java-peer.log"))?;
    Ok(JavaPeer { lib, classes })
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
    /// Group members in the one client process (`--members`; 1 without a group).
    pub(crate) members: u32,
    pub(crate) read_committed: bool,
    pub(crate) value_bytes: usize,
    pub(crate) extra: &'a [(String, String)],
}

/// One share group run's parameters: `members` share consumers of the (fresh) share
/// group `group`, set to start at the earliest offset, together reading `records`
/// records of `topic`.
pub(crate) struct ShareSpec<'a> {
    pub(crate) bootstrap: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) records: u64,
    pub(crate) group: &'a str,
    pub(crate) members: u32,
    pub(crate) value_bytes: usize,
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
    /// Consume: the runs of consecutive offsets the members read, `[first, last]`
    /// (empty when the peer reports none).
    pub(crate) runs: Vec<(i64, i64)>,
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
    /// Consume: records each member read (one entry per consumer in the process).
    pub(crate) member_records: Vec<u64>,
    pub(crate) bad_values: u64,
    /// Share groups: records handed out with a delivery count above 1.
    pub(crate) redelivered: u64,
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
            Program::JavaTools { rig, rig_dir, peer } => {
                let rig_tool = |args: &[String]| {
                    let mut c = Cmd::new([rig.display().to_string(), "tool".into()]);
                    c.argv.extend(args.iter().cloned());
                    c.env("RIG_DIR", rig_dir.display().to_string())
                        .env("RIG_TOOL_JAVA_OPTS", JAVA_TOOL_OPTS)
                };
                match (op, peer) {
                    ("produce", _) => {
                        rig_tool(&["org.apache.kafka.tools.ProducerPerformance".into()])
                    }
                    ("share", _) => {
                        rig_tool(&["org.apache.kafka.tools.ShareConsumerPerformance".into()])
                    }
                    (_, None) | ("consume-tool", _) => {
                        rig_tool(&["org.apache.kafka.tools.ConsumerPerformance".into()])
                    }
                    // The rig's `-cp LIB/*` comes first; a later `-cp` replaces it.
                    (_, Some(p)) => rig_tool(&[
                        "-cp".into(),
                        format!("{}/*:{}", p.lib.display(), p.classes.display()),
                        "ConsumePeer".into(),
                        "consume".into(),
                    ]),
                }
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

    /// `java` picks Java's program (the tool when it has no peer); others ignore it.
    pub(crate) fn consume_cmd(&self, s: &ConsumeSpec<'_>, java: JavaConsume) -> Cmd {
        let tool = self.java_tool(java);
        let mut c = self.base(if tool { "consume-tool" } else { "consume" });
        let isolation = if s.read_committed {
            "read_committed"
        } else {
            "read_uncommitted"
        };
        match &self.program {
            Program::JavaTools { .. } if !tool => {
                c = contract_consume_args(c, s, isolation);
            }
            Program::Contract { .. } => {
                c = contract_consume_args(c, s, isolation);
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

    /// Whether this client has a share consumer (KIP-932): ours, Java; rdkafka and
    /// franz-go have none.
    pub(crate) fn can_share(&self) -> bool {
        matches!(self.client, Client::Ours | Client::Java)
    }

    /// A share group run (`can_share` clients): our peer's `share` op, Java's
    /// `ShareConsumerPerformance --threads M`.
    pub(crate) fn share_cmd(&self, s: &ShareSpec<'_>) -> Cmd {
        let java = matches!(self.program, Program::JavaTools { .. });
        let (bootstrap, records) = if java {
            ("--bootstrap-server", "--num-records")
        } else {
            ("--bootstrap", "--records")
        };
        let c = self
            .base("share")
            .arg(bootstrap)
            .arg(s.bootstrap)
            .arg("--topic")
            .arg(s.topic)
            .arg("--group")
            .arg(s.group)
            .arg(records)
            .arg(s.records.to_string());
        if java {
            // The tool's `--fetch-size` default (1 MiB) is max.partition.fetch.bytes.
            c.arg("--threads")
                .arg(s.members.to_string())
                .arg("--show-consumer-stats")
                .arg("--show-detailed-stats")
                .arg("--reporting-interval")
                .arg("1000")
                .arg("--timeout")
                .arg("30000")
        } else {
            c.arg("--members")
                .arg(s.members.to_string())
                .arg("--value-bytes")
                .arg(s.value_bytes.to_string())
        }
    }

    /// Reads a share run's report (`share_cmd`).
    pub(crate) fn parse_share(&self, out: &Outcome) -> Result<PeerResult, String> {
        match &self.program {
            Program::Contract { .. } => parse_contract(&out.stdout),
            Program::JavaTools { .. } => parse_java_share(&out.stdout, &out.stderr),
        }
    }

    /// Whether this client follows the consume contract (assign, `--members`, per-partition
    /// offsets): every contract peer, and Java through `ConsumePeer`.
    pub(crate) fn can_assign(&self) -> bool {
        match &self.program {
            Program::Contract { .. } => true,
            Program::JavaTools { peer, .. } => peer.is_some(),
        }
    }

    /// Whether a consume with `java` runs Kafka's `ConsumerPerformance`.
    pub(crate) fn java_tool(&self, java: JavaConsume) -> bool {
        match &self.program {
            Program::Contract { .. } => false,
            Program::JavaTools { peer, .. } => java == JavaConsume::Tool || peer.is_none(),
        }
    }

    /// Reads the client's own report of a run (`java` as given to `consume_cmd`).
    pub(crate) fn parse(
        &self,
        produce: bool,
        java: JavaConsume,
        out: &Outcome,
    ) -> Result<PeerResult, String> {
        match &self.program {
            Program::Contract { .. } => parse_contract(&out.stdout),
            Program::JavaTools { .. } if produce => parse_java_produce(&out.stdout, &out.stderr),
            Program::JavaTools { .. } if self.java_tool(java) => {
                parse_java_consume(&out.stdout, &out.stderr)
            }
            Program::JavaTools { .. } => parse_contract(&out.stdout),
        }
    }
}

/// The contract's consume arguments (`bench/peers/README.md`).
fn contract_consume_args(c: Cmd, s: &ConsumeSpec<'_>, isolation: &str) -> Cmd {
    let mut c = c
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
        if s.members > 1 {
            c = c.arg("--members").arg(s.members.to_string());
        }
    }
    for (k, v) in s.extra {
        c = c.arg("--set").arg(format!("{k}={v}"));
    }
    c
}
