//! The client's timer table: one deadline per reason, the next one in O(log n).
//!
//! Every timed thing in the client (a connection's request/setup/idle deadlines, a parked
//! request's retry or give-up, an operation's wake-up, the next metadata refresh) owns at
//! most one entry, replaced in place when it moves. `poll_timeout` reads the first entry;
//! `handle_timeout` pops only the due ones, so nothing scans every request.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use super::ConnId;

/// Why a deadline exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// The connection's own earliest deadline (request, setup, idle, throttle, re-auth).
    Conn(ConnId),
    /// A request waiting for a route: its retry or its give-up.
    Parked(u64),
    /// An operation asked to be polled at this instant.
    Op(u64),
    /// The next metadata refresh.
    Metadata,
}

/// Deadlines by reason, ordered by time.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    by_time: BTreeSet<(Instant, Timer)>,
    at: HashMap<Timer, Instant>,
}

impl Timers {
    /// Sets (or with `None` removes) the deadline of `timer`.
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Instant>) {
        match at {
            Some(at) => {
                if let Some(old) = self.at.insert(timer, at) {
                    if old == at {
                        return;
                    }
                    self.by_time.remove(&(old, timer));
                }
                self.by_time.insert((at, timer));
            }
            None => {
                if let Some(old) = self.at.remove(&timer) {
                    self.by_time.remove(&(old, timer));
                }
            }
        }
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Removes and returns one timer due at `now`, earliest first.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Timer> {
        let &(at, timer) = self.by_time.first()?;
        if at > now {
            return None;
        }
        self.by_time.remove(&(at, timer));
        self.at.remove(&timer);
        Some(timer)
    }

    /// Number of armed timers.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn replaces_and_pops_in_order() {
        let t0 = crate::test_support::origin();
        let mut t = Timers::default();
        t.set(Timer::Op(1), Some(t0 + Duration::from_secs(5)));
        t.set(Timer::Op(2), Some(t0 + Duration::from_secs(1)));
        t.set(Timer::Op(1), Some(t0 + Duration::from_secs(2)));
        assert_eq!(t.len(), 2);
        assert_eq!(t.next(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(t.pop_due(t0), None);
        let later = t0 + Duration::from_secs(3);
        assert_eq!(t.pop_due(later), Some(Timer::Op(2)));
        assert_eq!(t.pop_due(later), Some(Timer::Op(1)));
        assert_eq!(t.pop_due(later), None);
        t.set(Timer::Metadata, Some(later));
        t.set(Timer::Metadata, None);
        assert_eq!(t.next(), None);
    }
}
