//! Seeded fault schedules against a [`SimServer`]: leader moves, connection resets,
//! broker kills and restarts, optionally aimed at a group's coordinator.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use super::super::rng::Rng;
use super::SimServer;

/// The seed of a fault schedule: `SIM_ADAPTER_SEED`, else from the clock (print it).
pub fn schedule_seed(label: &str) -> u64 {
    std::env::var("SIM_ADAPTER_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ label.len() as u64
        })
}

/// What a [`Faults`] schedule injected, by kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct Injected {
    /// Partition leaders moved.
    pub leader_moves: u64,
    /// Times every connection to a broker was reset.
    pub resets: u64,
    /// Brokers killed (each restarted 100–300 ms later).
    pub kills: u64,
}

impl Injected {
    /// Faults of every kind.
    pub fn total(&self) -> u64 {
        self.leader_moves + self.resets + self.kills
    }
}

/// What a [`Faults`] schedule aims at.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    /// The topic whose partition leaders move.
    pub topic: String,
    /// A group whose coordinator is the target of half the resets and kills (`None`:
    /// every broker alike).
    pub coordinator_of: Option<String>,
    /// The range of the pause between two faults, in ms.
    pub every_ms: (u64, u64),
}

impl FaultPlan {
    /// Faults on `topic`'s brokers every 10–40 ms.
    pub fn new(topic: &str) -> FaultPlan {
        FaultPlan {
            topic: topic.to_string(),
            coordinator_of: None,
            every_ms: (10, 40),
        }
    }
}

/// A seeded fault schedule running on its own thread against a [`SimServer`]: every
/// 10–40 ms (or [`FaultPlan::every_ms`]) one of a leader move of a partition of the
/// topic (half the time), a reset of every connection to a broker, or a broker killed
/// and restarted 100–300 ms later (one down at a time); with
/// [`FaultPlan::coordinator_of`], half the resets and kills hit the group's
/// coordinator (a kill or a restart moves it). Each fault is printed with its time, so
/// a seed's schedule can be read and replayed.
pub struct Faults {
    done: Arc<AtomicBool>,
    thread: thread::JoinHandle<Injected>,
}

impl Faults {
    /// Starts the schedule of `seed` on `topic`, labelled `label` in its output.
    pub fn start(server: &Arc<SimServer>, label: &str, seed: u64, topic: &str) -> Faults {
        Faults::start_plan(server, label, seed, FaultPlan::new(topic))
    }

    /// Starts the schedule of `seed` following `plan`.
    pub fn start_plan(server: &Arc<SimServer>, label: &str, seed: u64, plan: FaultPlan) -> Faults {
        let done = Arc::new(AtomicBool::new(false));
        let (server, stop) = (server.clone(), done.clone());
        let label = label.to_string();
        let thread = thread::spawn(move || inject(&label, seed, &server, &plan, &stop));
        Faults { done, thread }
    }

    /// Stops the schedule (a killed broker is restarted) and says what it injected.
    pub fn stop(self) -> Injected {
        self.done.store(true, Ordering::SeqCst);
        self.thread.join().expect("fault thread")
    }
}

fn inject(
    label: &str,
    seed: u64,
    server: &SimServer,
    plan: &FaultPlan,
    done: &AtomicBool,
) -> Injected {
    let mut rng = Rng::new(seed);
    let mut injected = Injected::default();
    let mut down: Option<(i32, Instant)> = None;
    let began = Instant::now();
    let brokers = server.with_cluster(|c| c.brokers.len() as u64);
    let topic = plan.topic.as_str();
    while !done.load(Ordering::SeqCst) {
        thread::sleep(rng.millis(plan.every_ms.0, plan.every_ms.1));
        let at = began.elapsed().as_millis();
        if let Some((node, until)) = down {
            if Instant::now() >= until {
                server.restart(node);
                println!("{label} fault @{at} ms: restart broker {node}");
                down = None;
            }
            continue;
        }
        let mut node = rng.below(brokers) as i32 + 1;
        if let Some(group) = &plan.coordinator_of {
            if rng.chance(500) {
                node = server
                    .with_cluster(|c| c.coordinator_of(group))
                    .unwrap_or(node);
            }
        }
        match rng.below(10) {
            0..=4 => {
                let moved = server.with_cluster(|c| {
                    let partitions = c.topics[topic].partitions.len() as u64;
                    let partition = rng.below(partitions) as i32;
                    let p = &c.topics[topic].partitions[partition as usize];
                    let to = p
                        .replicas
                        .iter()
                        .copied()
                        .find(|r| *r != p.leader && c.broker(*r).is_some_and(|b| b.up))?;
                    c.move_leader(topic, partition, to)
                        .then_some((partition, to))
                });
                if let Some((partition, to)) = moved {
                    injected.leader_moves += 1;
                    println!("{label} fault @{at} ms: leader of {topic}-{partition} to {to}");
                }
            }
            5..=7 => {
                let n = server.reset_connections(node);
                injected.resets += 1;
                println!("{label} fault @{at} ms: reset {n} connections to broker {node}");
            }
            _ => {
                server.kill(node);
                injected.kills += 1;
                down = Some((node, Instant::now() + rng.millis(100, 300)));
                println!("{label} fault @{at} ms: kill broker {node}");
            }
        }
    }
    if let Some((node, _)) = down {
        server.restart(node);
    }
    injected
}
