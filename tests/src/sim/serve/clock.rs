//! The served cluster's clock and its parked answers. Virtual time is the real time
//! since the server started; the clock thread ([`run`]) advances the cluster at its next
//! deadline (at least every [`TICK`]), so deadlines nobody's request reaches (a join
//! phase's end, a session expiring, transaction markers) still happen. Answers the
//! cluster releases for parked requests wait in [`Released`] until their connection's
//! thread takes them.
//!
//! Lock order: the cluster, then `released`; never the other way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::MutexGuard;
use std::thread;
use std::time::{Duration, Instant};

use super::super::cluster::SimCluster;
use super::Shared;

/// The clock thread's longest sleep.
const TICK: Duration = Duration::from_millis(10);
/// How often a waiting connection looks at its reset flag (resets also wake it).
const RECHECK: Duration = Duration::from_millis(50);

/// Answers released for parked requests, by ticket.
#[derive(Default)]
pub(super) struct Released {
    answers: BTreeMap<u64, Vec<u8>>,
    /// Tickets whose connection stopped waiting: their answers are dropped.
    abandoned: BTreeSet<u64>,
}

fn released(shared: &Shared) -> MutexGuard<'_, Released> {
    shared.released.lock().unwrap_or_else(|e| e.into_inner())
}

/// Moves the cluster's virtual time to the real time since the server started.
pub(super) fn advance(shared: &Shared, cluster: &mut SimCluster) {
    cluster.advance(shared.origin.elapsed());
}

/// Hands the answers the cluster released to their waiting connections.
pub(super) fn release_ready(shared: &Shared, cluster: &mut SimCluster) {
    let ready = cluster.classic.take_ready();
    if ready.is_empty() {
        return;
    }
    let mut r = released(shared);
    for (ticket, bytes) in ready {
        if !r.abandoned.remove(&ticket) {
            r.answers.insert(ticket, bytes);
        }
    }
    drop(r);
    shared.wake.notify_all();
}

/// Wakes every waiting connection (to look at its reset flag).
pub(super) fn wake_all(shared: &Shared) {
    drop(released(shared));
    shared.wake.notify_all();
}

/// The clock thread: advances the cluster at its deadlines until the server stops.
pub(super) fn run(shared: &Shared) {
    while !shared.stop.load(Ordering::SeqCst) {
        let next = {
            let mut cluster = shared.cluster();
            advance(shared, &mut cluster);
            release_ready(shared, &mut cluster);
            cluster.next_due()
        };
        let sleep = next
            .map_or(TICK, |d| d.saturating_sub(shared.origin.elapsed()))
            .clamp(Duration::from_millis(1), TICK);
        thread::sleep(sleep);
    }
}

/// Waits for the answer to parked request `ticket`; `None` once the connection is reset
/// or the server stops (the answer, if it comes later, is dropped).
pub(super) fn await_release(shared: &Shared, ticket: u64, open: &AtomicBool) -> Option<Vec<u8>> {
    let mut r = released(shared);
    loop {
        if let Some(bytes) = r.answers.remove(&ticket) {
            return Some(bytes);
        }
        if shared.stop.load(Ordering::SeqCst) || !open.load(Ordering::SeqCst) {
            r.abandoned.insert(ticket);
            return None;
        }
        r = shared
            .wake
            .wait_timeout(r, RECHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Holds an answer until `until` (a long-poll Fetch); false if the connection is reset
/// or the server stops meanwhile.
pub(super) fn hold(shared: &Shared, until: Instant, open: &AtomicBool) -> bool {
    let mut r = released(shared);
    loop {
        if shared.stop.load(Ordering::SeqCst) || !open.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        r = shared
            .wake
            .wait_timeout(r, (until - now).min(RECHECK))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
