//! The fault side of the real-broker chaos run (`tests/tests/broker_chaos.rs`): a fault
//! schedule drawn from one seed, and the injector that plays it against the 3-node
//! cluster (`tests/broker/rig kill|restart|pause|resume`) and the fault proxy in front
//! of it.
//!
//! The schedule is one lane: a fault, its duration, a gap, the next fault. At most one
//! node is ever down (killed or paused); before a node fault the injector waits until the
//! metadata quorum is caught up and every partition of the watched topics has its full
//! ISR, so taking a node never leaves a partition below `min.insync.replicas` for long
//! (a fault is skipped, and says so, if the cluster is not healthy within
//! [`HEALTH_WAIT`]). Planned times are "not before" times: a node restart or a health
//! wait pushes the rest of the schedule back; the injector prints each fault as it is
//! carried out, with its actual time.

use std::collections::BTreeMap;
use std::fmt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_blocking::Admin;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::ApiKey;

use crate::fault_proxy::{Fault, FaultProxy};
use crate::sim::rng::Rng;

/// How long the injector waits for a healthy cluster before a node fault.
pub const HEALTH_WAIT: Duration = Duration::from_secs(90);

/// One fault of the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chaos {
    /// `kill -9` of the node, `rig restart` after `down`.
    Kill { node: i32, down: Duration },
    /// SIGSTOP of the node, SIGCONT after `paused` (over 6 s: the controller fences it).
    Pause { node: i32, paused: Duration },
    /// A proxy fault on every node for `lasting` (resets before/after requests, delays,
    /// a bandwidth cap).
    Proxy { fault: Fault, lasting: Duration },
    /// A proxy black hole on one node for `lasting` (kept under the session timeout).
    BlackHole { node: i32, lasting: Duration },
    /// A half-open connection to one node for `lasting`: requests reach the broker and
    /// are applied, every answer is dropped, so each request sent meanwhile is answered
    /// only by the client's `request.timeout.ms` (the write applied, the ack lost).
    HalfOpen { node: i32, lasting: Duration },
    /// Every proxied connection cut at once.
    ResetAll,
}

impl Chaos {
    /// The kind, for the summary's counts.
    pub fn kind(&self) -> &'static str {
        match self {
            Chaos::Kill { .. } => "kill+restart",
            Chaos::Pause { .. } => "pause+resume",
            Chaos::Proxy {
                fault: Fault::Delay(_),
                ..
            } => "proxy delay",
            Chaos::Proxy {
                fault: Fault::Bandwidth { .. },
                ..
            } => "proxy bandwidth",
            Chaos::Proxy { .. } => "proxy resets",
            Chaos::BlackHole { .. } => "proxy black hole",
            Chaos::HalfOpen { .. } => "proxy half-open",
            Chaos::ResetAll => "proxy reset-all",
        }
    }

    fn is_node_fault(&self) -> bool {
        matches!(self, Chaos::Kill { .. } | Chaos::Pause { .. })
    }
}

impl fmt::Display for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |d: &Duration| d.as_secs_f64();
        match self {
            Chaos::Kill { node, down } => {
                write!(f, "kill -9 node {node}, restart after {:.1}s", s(down))
            }
            Chaos::Pause { node, paused } => write!(f, "SIGSTOP node {node} for {:.1}s", s(paused)),
            Chaos::Proxy { fault, lasting } => write!(f, "proxy {fault} for {:.1}s", s(lasting)),
            Chaos::BlackHole { node, lasting } => {
                write!(f, "proxy blackhole node {node} for {:.1}s", s(lasting))
            }
            Chaos::HalfOpen { node, lasting } => {
                write!(f, "proxy halfopen node {node} for {:.1}s", s(lasting))
            }
            Chaos::ResetAll => f.write_str("proxy reset-all"),
        }
    }
}

/// The faults of a run: `(planned start since the run began, fault)`.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The faults, in order.
    pub steps: Vec<(Duration, Chaos)>,
}

impl Schedule {
    /// Faults from 5 s to `secs` (the last one starts before `secs`).
    pub fn draw(seed: u64, secs: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let mut t = Duration::from_secs(5);
        let mut steps = Vec::new();
        let end = Duration::from_secs(secs);
        let apis = [
            None,
            Some(ApiKey::Produce),
            Some(ApiKey::Fetch),
            Some(ApiKey::AddPartitionsToTxn),
            Some(ApiKey::EndTxn),
            Some(ApiKey::TxnOffsetCommit),
            Some(ApiKey::Heartbeat),
            Some(ApiKey::ConsumerGroupHeartbeat),
            Some(ApiKey::OffsetCommit),
        ];
        while t < end {
            let node = 1 + rng.below(3) as i32;
            let chaos = match rng.below(100) {
                0..=21 => Chaos::Kill {
                    node,
                    down: rng.millis(1_000, 8_000),
                },
                22..=43 => Chaos::Pause {
                    node,
                    paused: rng.millis(2_000, 10_000),
                },
                44..=61 => {
                    let every = 2 + rng.below(12) as u32;
                    let api = apis[rng.below(apis.len() as u64) as usize];
                    let fault = if rng.chance(500) {
                        Fault::ResetAfterRequest { every, api }
                    } else {
                        Fault::ResetBeforeRequest { every, api }
                    };
                    Chaos::Proxy {
                        fault,
                        lasting: rng.millis(3_000, 8_000),
                    }
                }
                62..=73 => Chaos::Proxy {
                    fault: Fault::Delay(rng.millis(20, 250)),
                    lasting: rng.millis(3_000, 8_000),
                },
                74..=80 => Chaos::Proxy {
                    // 256 KiB/s to 4 MiB/s per direction of each connection: a 1 MiB
                    // produce request takes up to 4 s, near the clients' request timeout.
                    fault: Fault::Bandwidth {
                        bytes_per_sec: (256 << 10) + rng.below(15 * (256 << 10)),
                    },
                    lasting: rng.millis(3_000, 8_000),
                },
                81..=88 => Chaos::BlackHole {
                    node,
                    lasting: rng.millis(1_000, 2_500),
                },
                89..=96 => Chaos::HalfOpen {
                    node,
                    lasting: rng.millis(1_000, 2_500),
                },
                _ => Chaos::ResetAll,
            };
            steps.push((t, chaos));
            t += rng.millis(6_000, 14_000);
        }
        Schedule { seed, steps }
    }

    /// Prints the schedule (one line per fault).
    pub fn print(&self) {
        println!(
            "chaos fault schedule (CHAOS_SEED={}, {} faults):",
            self.seed,
            self.steps.len()
        );
        for (at, c) in &self.steps {
            println!("  planned {:>7.1}s  {c}", at.as_secs_f64());
        }
    }
}

fn rig(args: &[&str]) -> bool {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    match Command::new(rig).args(args).status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("chaos: rig {args:?}: {e}");
            false
        }
    }
}

/// Which nodes are down, so everything can be healed whatever happens.
#[derive(Debug, Default)]
pub struct NodeState {
    killed: Mutex<Vec<i32>>,
    paused: Mutex<Vec<i32>>,
}

impl NodeState {
    /// Resumes paused nodes and restarts killed ones.
    pub fn heal(&self) {
        for n in std::mem::take(&mut *self.paused.lock().unwrap()) {
            println!("chaos: heal: resume node {n}");
            rig(&["resume", &n.to_string()]);
        }
        for n in std::mem::take(&mut *self.killed.lock().unwrap()) {
            println!("chaos: heal: restart node {n}");
            rig(&["restart", &n.to_string()]);
        }
    }
}

/// Heals the cluster when dropped (also on a panic), so later suites find it whole.
pub struct HealOnDrop(pub Arc<NodeState>);

impl Drop for HealOnDrop {
    fn drop(&mut self) {
        self.0.heal();
    }
}

/// What the injector did.
#[derive(Debug, Default, Clone)]
pub struct Injected {
    /// Faults carried out, by kind.
    pub by_kind: BTreeMap<&'static str, u32>,
    /// Node faults skipped because the cluster was not healthy in time.
    pub skipped: u32,
    /// The log: actual time since the run began, and what was done.
    pub log: Vec<(Duration, String)>,
}

/// Plays `schedule` from `start` until it ends or `stop` is set; then clears the proxy
/// and heals every node. `watched`: topics whose ISRs must be full before a node fault.
pub fn inject(
    schedule: &Schedule,
    start: Instant,
    stop: &AtomicBool,
    proxy: &FaultProxy,
    nodes: &Arc<NodeState>,
    bootstrap: &str,
    watched: &[String],
) -> Injected {
    let mut done = Injected::default();
    let note = |done: &mut Injected, what: String| {
        let at = start.elapsed();
        println!("chaos: {:>7.1}s  {what}", at.as_secs_f64());
        done.log.push((at, what));
    };
    let sleep = |d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for (at, chaos) in &schedule.steps {
        if let Some(wait) = at.checked_sub(start.elapsed()) {
            sleep(wait);
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if chaos.is_node_fault() {
            if let Err(why) = wait_healthy(bootstrap, watched) {
                note(&mut done, format!("SKIPPED {chaos}: {why}"));
                done.skipped += 1;
                continue;
            }
        }
        note(&mut done, format!("begin {chaos}"));
        match chaos {
            Chaos::Kill { node, down } => {
                let n = node.to_string();
                nodes.killed.lock().unwrap().push(*node);
                assert!(rig(&["kill", &n]), "rig kill {n}");
                sleep(*down);
                nodes.killed.lock().unwrap().retain(|k| k != node);
                let ok = rig(&["restart", &n]);
                note(&mut done, format!("end {chaos}: restarted (ok: {ok})"));
                assert!(ok, "rig restart {n}");
            }
            Chaos::Pause { node, paused } => {
                let n = node.to_string();
                nodes.paused.lock().unwrap().push(*node);
                assert!(rig(&["pause", &n]), "rig pause {n}");
                sleep(*paused);
                nodes.paused.lock().unwrap().retain(|k| k != node);
                assert!(rig(&["resume", &n]), "rig resume {n}");
                note(&mut done, format!("end {chaos}: resumed"));
            }
            Chaos::Proxy { fault, lasting } => {
                proxy.set(*fault);
                sleep(*lasting);
                proxy.clear();
                note(&mut done, format!("end {chaos}"));
            }
            Chaos::BlackHole { node, lasting } | Chaos::HalfOpen { node, lasting } => {
                let fault = match chaos {
                    Chaos::HalfOpen { .. } => Fault::HalfOpen,
                    _ => Fault::BlackHole,
                };
                proxy.set_for(*node, fault);
                sleep(*lasting);
                proxy.clear_for(*node);
                note(&mut done, format!("end {chaos}"));
            }
            Chaos::ResetAll => proxy.reset_all(),
        }
        *done.by_kind.entry(chaos.kind()).or_default() += 1;
    }
    proxy.clear();
    nodes.heal();
    note(
        &mut done,
        "healed: proxy cleared, every node running".into(),
    );
    done
}

/// Waits until the metadata quorum's voters are caught up and every partition of
/// `topics` has 3 in-sync replicas; `Err` with the last state after [`HEALTH_WAIT`].
pub fn wait_healthy(bootstrap: &str, topics: &[String]) -> Result<(), String> {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("request.timeout.ms", "5000"),
        ("default.api.timeout.ms", "15000"),
        ("reconnect.backoff.max.ms", "500"),
    ])
    .map_err(|e| e.to_string())?;
    let admin = Admin::new(config).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + HEALTH_WAIT;
    loop {
        let why = match health(&admin, topics) {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        if Instant::now() > deadline {
            return Err(format!("not healthy after {HEALTH_WAIT:?}: {why}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn health(admin: &Admin, topics: &[String]) -> Result<(), String> {
    let quorum = admin
        .describe_metadata_quorum()
        .map_err(|e| format!("quorum: {e}"))?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    let lagging: Vec<i32> = quorum
        .voters
        .iter()
        .filter(|v| {
            v.replica_id != quorum.leader_id
                && v.last_caught_up_timestamp
                    .is_none_or(|t| now_ms - t >= 2_000)
        })
        .map(|v| v.replica_id)
        .collect();
    if !lagging.is_empty() {
        return Err(format!("quorum voters {lagging:?} lagging"));
    }
    let described = admin
        .describe_topics(topics.iter().cloned())
        .map_err(|e| format!("describe: {e}"))?;
    for (name, d) in described {
        let d = d.map_err(|e| format!("{name}: {e}"))?;
        for p in &d.partitions {
            if p.isr.len() < 3 || p.leader.is_none() {
                return Err(format!(
                    "{name}/{}: leader {:?} isr {:?}",
                    p.partition, p.leader, p.isr
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_schedule_and_the_seeds_cover_every_kind() {
        let a = Schedule::draw(7, 600);
        let b = Schedule::draw(7, 600);
        assert_eq!(a.steps, b.steps, "the same seed replays the same schedule");
        assert_ne!(a.steps, Schedule::draw(8, 600).steps);

        let mut kinds = BTreeMap::new();
        for seed in 0..50 {
            for (_, c) in Schedule::draw(seed, 60).steps {
                *kinds.entry(c.kind()).or_insert(0u32) += 1;
                // A node cut off (black hole) or deaf (half-open) comes back before the
                // group members' 6 s session timeout.
                if let Chaos::BlackHole { lasting, .. } | Chaos::HalfOpen { lasting, .. } = c {
                    assert!(lasting <= Duration::from_millis(2_500), "{c}");
                }
                if let Chaos::Proxy {
                    fault: Fault::Bandwidth { bytes_per_sec },
                    ..
                } = c
                {
                    assert!((256 << 10..=4 << 20).contains(&bytes_per_sec), "{c}");
                }
            }
        }
        let all = [
            "kill+restart",
            "pause+resume",
            "proxy resets",
            "proxy delay",
            "proxy bandwidth",
            "proxy black hole",
            "proxy half-open",
            "proxy reset-all",
        ];
        for kind in all {
            assert!(kinds.contains_key(kind), "{kind} never drawn: {kinds:?}");
        }
        assert_eq!(kinds.len(), all.len(), "{kinds:?}");
    }
}
