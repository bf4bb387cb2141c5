//! What the router remembers about failures: the last cause per call and client-wide
//! (so a timeout can say why), and the rules that end waiting calls at once instead of
//! at their deadline.
//!
//! - **Fatal causes**: a connection failure that retrying cannot fix (authentication,
//!   an unsupported SASL mechanism, any SASL or TLS failure: [`ConnError::is_retriable`]
//!   is false) ends every call waiting for a route or a retry with that error. Calls on
//!   that connection already got it as their outcome.
//! - **The bootstrap rule**: while no connection has become ready, once *every*
//!   bootstrap address has failed with a protocol violation
//!   ([`ConnError::is_protocol_violation`]) at least [`BOOTSTRAP_VIOLATIONS`] times in a
//!   row, the calls waiting end with the last violation
//!   ([`RequestError::BootstrapBroken`], not retried by the calls). A ready connection
//!   resets every count; a bootstrap failure that is no violation resets its address's.
//! - **The request rule**: a request sent with `RequestOptions::end_on_repeated_violation`
//!   (every admin call) whose written attempts broke the protocol [`REQUEST_VIOLATIONS`]
//!   times in a row (a broker that negotiates, then answers it with garbage) ends with
//!   [`RequestError::RepeatedViolation`] instead of retrying until its deadline. Any other
//!   failure in between restarts its count.
//!
//! New calls start afresh either way (nothing is sticky): a broker fixed meanwhile
//! serves them.

use std::time::Instant;

use super::{Cause, Client, Owner};
use crate::conn::{ConnError, RequestError};

/// Protocol violations in a row from every bootstrap address before the calls waiting
/// on them end (see the module docs).
pub const BOOTSTRAP_VIOLATIONS: u32 = 3;

/// Protocol violations in a row on one request's attempts before the router ends it
/// (only requests sent with `RequestOptions::end_on_repeated_violation`: admin calls).
pub const REQUEST_VIOLATIONS: u32 = 3;

impl Client {
    /// A connection to `node` failed (not an idle close): remembers the cause, and
    /// applies the fatal-cause and bootstrap rules.
    pub(super) fn failure_seen(&mut self, now: Instant, node: i32, error: ConnError) {
        self.last_failure = Some((now, Cause::Connection(error.clone())));
        if !error.is_retriable() {
            self.bootstrap_violations.clear();
            self.end_waiting(now, RequestError::Connection(error));
            return;
        }
        if node >= 0 {
            return;
        }
        if !error.is_protocol_violation() {
            self.bootstrap_violations.remove(&node);
            return;
        }
        *self.bootstrap_violations.entry(node).or_default() += 1;
        let every = (1..=self.bootstrap.len() as i32).all(|i| {
            self.bootstrap_violations
                .get(&-i)
                .is_some_and(|n| *n >= BOOTSTRAP_VIOLATIONS)
        });
        if every && !self.bootstrap.is_empty() {
            self.bootstrap_violations.clear();
            self.end_waiting(now, RequestError::BootstrapBroken(error));
        }
    }

    /// Ends every request of the application or a machine that is not on a connection
    /// (parked for a route, or waiting to retry) with `error`.
    fn end_waiting(&mut self, now: Instant, error: RequestError) {
        self.last_fatal = Some((now, error.clone()));
        let waiting: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.at.is_none() && !matches!(p.owner, Owner::Internal(_)))
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.finish(id, Err(error.clone()));
        }
        // Machines waiting on metadata rather than on a request (the fan-outs) look at
        // `fatal_since` when polled: poll them all once (rare, and polls are harmless).
        let running: Vec<u64> = self.ops.keys().copied().collect();
        self.ready_ops.extend(running);
    }

    /// Why request `id` is still pending: the last failure the router retried past for
    /// it; else the last connection failure since it was submitted; else why it waits
    /// for a route.
    pub(crate) fn request_cause(&self, id: u64) -> Option<Cause> {
        let p = self.pending.get(&id)?;
        let own = p.last_cause.as_ref();
        own.filter(|c| !c.is_no_route())
            .cloned()
            .or_else(|| self.last_failure_since(p.since))
            .or_else(|| own.cloned())
    }

    /// The last connection failure at or after `since`.
    pub(crate) fn last_failure_since(&self, since: Instant) -> Option<Cause> {
        self.last_failure
            .as_ref()
            .filter(|(at, _)| *at >= since)
            .map(|(_, c)| c.clone())
    }

    /// The error that last ended the waiting calls (a fatal cause or the bootstrap
    /// rule), if at or after `since`: machines that wait on metadata end with it too.
    pub(crate) fn fatal_since(&self, since: Instant) -> Option<RequestError> {
        self.last_fatal
            .as_ref()
            .filter(|(at, _)| *at >= since)
            .map(|(_, e)| e.clone())
    }
}
