//! Degraded links between the clients and one broker (F20), active while the world's
//! faults are on: latency with jitter, a bandwidth cap (bytes take time to cross, one
//! after another), and half-open connections (the broker's host is unreachable: bytes
//! written vanish, answers on their way are lost, no reset is ever heard and connects
//! hang), so only the client's own timeouts can notice.

use std::time::Duration;

/// How one broker's link is degraded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkFaults {
    /// One-way latency range in ms (instead of the world's), drawn per message.
    pub latency_ms: Option<(u64, u64)>,
    /// Bytes per ms each way (`None`: unbounded).
    pub bytes_per_ms: Option<u64>,
    /// Half-open: nothing crosses, nothing is reset.
    pub half_open: bool,
}

impl LinkFaults {
    /// How long `len` bytes take to cross at the cap.
    pub fn transfer(&self, len: usize) -> Duration {
        match self.bytes_per_ms {
            Some(b) if b > 0 => Duration::from_micros(len as u64 * 1_000 / b),
            _ => Duration::ZERO,
        }
    }
}

/// Counts of what degraded links did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Messages that crossed a slowed link (latency or bandwidth).
    pub slowed: u64,
    /// Requests that vanished into a half-open link.
    pub requests_vanished: u64,
    /// Answers lost in a half-open link.
    pub answers_vanished: u64,
    /// Connects that hung on a half-open link.
    pub connects_hung: u64,
}
