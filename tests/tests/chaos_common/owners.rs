//! The owner watch of the chaos run: every 20 ms, which members of a group own which
//! partitions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafka_core::group::GroupEvent;

use super::seen;
use crate::group_common::Seen;

/// A watched group: its name, and each member's name and record.
pub(crate) type Watched = (String, Vec<(String, Arc<Mutex<Seen>>)>);

/// Two members of one group owning a partition at once, sampled every 20 ms: each
/// overlap once, with when it was first and last seen since `start`. An overlap that
/// ends with one of the two reporting the partition `Lost` is the protocol's zombie
/// window, not an anomaly: the coordinator had already dropped (fenced) that member
/// while it could not reach it (its commits are refused), and it learnt so late.
/// Returns `(anomalies, zombie windows)`.
pub(crate) fn watch_owners(
    groups: Vec<Watched>,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(Vec<String>, Vec<String>)> {
    std::thread::spawn(move || {
        // (group index, partition, member, member) -> (first seen, last seen, the two
        // members' event counts when it was first seen)
        type Key = (usize, i32, usize, usize);
        let mut open: BTreeMap<Key, (Duration, Duration, usize, usize)> = BTreeMap::new();
        let (mut anomalies, mut zombies) = (Vec::new(), Vec::new());
        let mut close = |k: Key, o: (Duration, Duration, usize, usize), end: bool| {
            let (g, p, j, i) = k;
            let (name, members) = &groups[g];
            let lost_since = |m: usize, from: usize| {
                seen(&members[m].1).events[from..]
                    .iter()
                    .any(|e| matches!(e, GroupEvent::Lost(ps) if ps.iter().any(|(_, q)| *q == p)))
            };
            let what = format!(
                "{name}: partition {p} owned by members {j} ({}) and {i} ({}) at once, seen from {:.2}s to {:.2}s",
                members[j].0,
                members[i].0,
                o.0.as_secs_f64(),
                o.1.as_secs_f64()
            );
            if !end && (lost_since(j, o.2) || lost_since(i, o.3)) {
                zombies.push(format!("{what}, ended by a Lost"));
            } else {
                anomalies.push(what);
            }
        };
        let mut stopping = false;
        loop {
            stopping |= stop.load(Ordering::SeqCst);
            let now = start.elapsed();
            let mut current = BTreeSet::new();
            for (g, (_, members)) in groups.iter().enumerate() {
                let mut owner: BTreeMap<i32, usize> = BTreeMap::new();
                for (i, (_, m)) in members.iter().enumerate() {
                    let owned = seen(m).owned.clone();
                    for p in owned {
                        if let Some(j) = owner.insert(p, i) {
                            let k = (g, p, j, i);
                            current.insert(k);
                            let counts = (seen(&members[j].1).events.len(), seen(m).events.len());
                            let o = open.entry(k).or_insert((now, now, counts.0, counts.1));
                            o.1 = now;
                        }
                    }
                }
            }
            let ended: Vec<Key> = open
                .keys()
                .filter(|k| !current.contains(k))
                .copied()
                .collect();
            for k in ended {
                let o = open.remove(&k).expect("open");
                close(k, o, false);
            }
            if stopping {
                for (k, o) in std::mem::take(&mut open) {
                    close(k, o, true);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (anomalies, zombies)
    })
}
