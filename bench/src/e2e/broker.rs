//! The broker under test: the rig's single node (started here, in its own run dir and
//! pinned to core 0 from the start) or the one `KAFKA_BOOTSTRAP_SERVERS` names (found by
//! its listening socket and pinned with `taskset -a -p`, restored at the end). Its CPU
//! time comes from `/proc/<pid>/stat`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::sys;

/// JVM flags for a broker this harness starts (the rig's default is tuned for start-up
/// time, not throughput: SerialGC and C1 only).
const BENCH_BROKER_JAVA_OPTS: &str =
    "-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
-XX:+ExplicitGCInvokesConcurrent -XX:ActiveProcessorCount=1";

pub(crate) struct Broker {
    pub(crate) bootstrap: String,
    pub(crate) pid: Option<i32>,
    /// The rig this harness started (stopped again by `shutdown` unless kept).
    started: Option<PathBuf>,
    restore_mask: Option<String>,
    /// How the broker runs: JVM flags, pinning, where it came from.
    pub(crate) notes: Vec<String>,
    ticks: f64,
}

pub(crate) struct BrokerOpts {
    pub(crate) repo: PathBuf,
    pub(crate) rig_dir: PathBuf,
    pub(crate) core: Option<usize>,
    pub(crate) fresh: bool,
}

fn read_env_file(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn port_of(bootstrap: &str) -> Option<u16> {
    bootstrap
        .split(',')
        .next()?
        .rsplit(':')
        .next()?
        .parse()
        .ok()
}

/// The pid listening on `port` (any local address), from /proc/net/tcp{,6} and the fd links.
fn pid_listening_on(port: u16) -> Option<i32> {
    let mut inodes = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && cols[3] == "0A" {
                let lport = cols[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                if lport == Some(port) {
                    inodes.push(format!("socket:[{}]", cols[9]));
                }
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(t) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| t.to_str() == Some(i)) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

fn affinity_mask(pid: i32) -> Option<String> {
    let out = Command::new("taskset")
        .arg("-p")
        .arg(pid.to_string())
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    s.rsplit(':')
        .next()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

fn pin_all_threads(pid: i32, cpu_list: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cpu_list, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn jvm_flags(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .filter(|a| a.starts_with("-X"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Broker {
    /// Attaches to `KAFKA_BOOTSTRAP_SERVERS` if set, else starts (or reuses) the rig's
    /// single node in `opts.rig_dir`.
    pub(crate) fn start_or_attach(opts: &BrokerOpts) -> Result<Broker, String> {
        let ticks = sys::clock_ticks();
        let mut notes = Vec::new();
        let (bootstrap, pid, started) = match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
            Ok(b) if !b.trim().is_empty() => {
                notes.push(format!("broker: external, KAFKA_BOOTSTRAP_SERVERS={b}"));
                let pid = port_of(&b).and_then(pid_listening_on);
                if pid.is_none() {
                    notes.push(
                        "broker pid not found (not local, or not visible): broker CPU not measured"
                            .into(),
                    );
                }
                (b, pid, None)
            }
            _ => {
                let rig = opts.repo.join("tests/broker/rig");
                let mut c = match opts.core {
                    Some(core) => {
                        let mut c = Command::new("taskset");
                        c.arg("-c").arg(core.to_string()).arg(&rig);
                        c
                    }
                    None => Command::new(&rig),
                };
                c.arg("up");
                if opts.fresh {
                    c.arg("--restart");
                }
                let set = |c: &mut Command, k: &str, v: &str| {
                    if std::env::var_os(k).is_none() {
                        c.env(k, v);
                    }
                };
                c.env("RIG_DIR", &opts.rig_dir);
                set(&mut c, "RIG_PORT_BASE", "19292");
                set(&mut c, "RIG_BROKER_JAVA_OPTS", BENCH_BROKER_JAVA_OPTS);
                set(&mut c, "RIG_SINGLE_HEAP", "1g");
                // Deleted topics' files go soon (the default keeps them 60 s on tmpfs).
                set(&mut c, "RIG_SINGLE_OVERRIDES", "file.delete.delay.ms=1000");
                eprintln!(
                    "e2e: starting the rig's single node (RIG_DIR={})",
                    opts.rig_dir.display()
                );
                let out = c
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("{}: {e}", rig.display()))?;
                if !out.status.success() {
                    return Err(format!(
                        "rig up failed:\n{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                let env = read_env_file(&opts.rig_dir.join("env"));
                let b = env
                    .get("KAFKA_BOOTSTRAP_SERVERS")
                    .cloned()
                    .ok_or("rig env has no KAFKA_BOOTSTRAP_SERVERS")?;
                let pid = std::fs::read_to_string(opts.rig_dir.join("single/pid"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .or_else(|| port_of(&b).and_then(pid_listening_on));
                notes.push(format!(
                    "broker: rig single node, RIG_DIR={}",
                    opts.rig_dir.display()
                ));
                (b, pid, Some(opts.rig_dir.clone()))
            }
        };
        let mut broker = Broker {
            bootstrap,
            pid,
            started,
            restore_mask: None,
            notes,
            ticks,
        };
        if let Some(pid) = broker.pid {
            broker
                .notes
                .push(format!("broker JVM flags: {}", jvm_flags(pid)));
            if let Some(core) = opts.core {
                let before = affinity_mask(pid);
                if pin_all_threads(pid, &core.to_string()) {
                    broker.notes.push(format!(
                        "broker pid {pid}: all threads pinned to core {core}"
                    ));
                    if broker.started.is_none() {
                        broker.restore_mask = before;
                    }
                } else {
                    broker
                        .notes
                        .push(format!("broker pid {pid}: could not pin to core {core}"));
                }
            }
        }
        Ok(broker)
    }

    /// The broker's user+system CPU seconds so far (all threads).
    pub(crate) fn cpu_s(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid?)).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // fields after the comm: state(3) ... utime(14) stime(15) => indices 11, 12 here
        let ut: f64 = f.get(11)?.parse().ok()?;
        let st: f64 = f.get(12)?.parse().ok()?;
        Some((ut + st) / self.ticks)
    }

    /// Restores an external broker's affinity; stops a rig this harness started unless `keep`.
    pub(crate) fn shutdown(self, repo: &Path, keep: bool) {
        if let (Some(pid), Some(mask)) = (self.pid, &self.restore_mask) {
            let _ = Command::new("taskset")
                .args(["-a", "-p", mask, &pid.to_string()])
                .stdout(Stdio::null())
                .status();
        }
        if let Some(dir) = self.started {
            if keep {
                eprintln!(
                    "e2e: broker kept running (RIG_DIR={} tests/broker/rig down stops it)",
                    dir.display()
                );
            } else {
                let _ = Command::new(repo.join("tests/broker/rig"))
                    .arg("down")
                    .env("RIG_DIR", &dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// 1-, 5- and 15-minute load averages.
pub(crate) fn loadavg() -> (f64, f64, f64) {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let v: Vec<f64> = s
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    (
        v.first().copied().unwrap_or(0.0),
        v.get(1).copied().unwrap_or(0.0),
        v.get(2).copied().unwrap_or(0.0),
    )
}
