//! Latencies and degraded links (`links.rs`): how long a message takes to a broker,
//! and whether the link to it is half open.

use std::time::Duration;

use super::super::links::LinkFaults;
use super::World;

impl World {
    pub(super) fn latency(&mut self) -> Duration {
        let (lo, hi) = self.latency_ms;
        self.rng.millis(lo, hi)
    }

    /// The degraded link to `node`, if any (while faults are on).
    pub(super) fn link(&self, node: i32) -> Option<LinkFaults> {
        if !self.faults_on {
            return None;
        }
        self.links.get(&node).cloned()
    }

    /// A one-way latency to `node` for a message of `len` bytes (the bandwidth cap's
    /// transfer time included).
    pub(super) fn latency_to(&mut self, node: i32, len: usize) -> Duration {
        match self.link(node) {
            Some(l) => {
                self.link_counters.slowed += 1;
                let base = match l.latency_ms {
                    Some((lo, hi)) => self.rng.millis(lo, hi),
                    None => self.latency(),
                };
                base + l.transfer(len)
            }
            None => self.latency(),
        }
    }

    pub(super) fn half_open(&self, node: i32) -> bool {
        self.link(node).is_some_and(|l| l.half_open)
    }
}
