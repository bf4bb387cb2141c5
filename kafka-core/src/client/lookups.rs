//! The router's coordinator lookups: FindCoordinator batched per key type, retried
//! while the coordinator loads, its answer turned into routes; and the bookkeeping of
//! the router's own requests when they end.

use std::sync::Arc;
use std::time::Instant;

use super::erased::CoordinatorLookup;
use super::router::{Internal, Target};
use super::timers::Timer;
use super::{Client, Owner, RequestOptions};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::find_coordinator::FindCoordinatorResponse;
use crate::protocol::KafkaCode;

impl Client {
    pub(super) fn coordinator(&mut self, _now: Instant, key_type: i8, key: &str) -> Target {
        if let Some(&n) = self.coordinators.get(&(key_type, key.to_string())) {
            return Target::Node(n);
        }
        let wanted = (key_type, key.to_string());
        if !self.lookups_in_flight.contains(&wanted) {
            // Looked up in one batched FindCoordinator with every other key wanted before
            // the adapter's next `poll_io` (see `flush_lookups`).
            self.lookups_wanted.insert(wanted);
        }
        Target::Wait(format!("no coordinator known for {key}"))
    }

    /// Sends one FindCoordinator per key type for the coordinators wanted since the last
    /// call; `delay` parks it for a retry instead.
    pub(crate) fn flush_lookups(&mut self, now: Instant) {
        let wanted = std::mem::take(&mut self.lookups_wanted);
        let mut by_type: std::collections::BTreeMap<i8, Vec<String>> = Default::default();
        for (t, k) in wanted {
            by_type.entry(t).or_default().push(k);
        }
        for (key_type, keys) in by_type {
            self.lookup(now, key_type, keys, 0, None);
        }
    }

    pub(super) fn lookup(
        &mut self,
        now: Instant,
        key_type: i8,
        keys: Vec<String>,
        attempts: u32,
        retry_at: Option<Instant>,
    ) {
        for k in &keys {
            self.lookups_in_flight.insert((key_type, k.clone()));
        }
        let req = CoordinatorLookup {
            key_type,
            keys: keys.clone(),
        };
        let owner = Owner::Internal(Internal::FindCoordinator { key_type, keys });
        let id = self.next_request_id();
        match retry_at {
            None => {
                let opts = RequestOptions::default();
                self.submit_as(now, id, Route::Any, Arc::new(req), opts, owner);
            }
            Some(at) => {
                let mut pending = super::Pending::new(
                    Route::Any,
                    super::Shared(Arc::new(req)),
                    RequestOptions::default(),
                    owner,
                    now,
                );
                pending.attempts = attempts;
                pending.retry_at = Some(at);
                self.pending.insert(id, pending);
                self.timers.set(Timer::Parked(id), Some(at));
            }
        }
    }

    /// One of the router's own requests ended by a path that does not handle its answer
    /// (given up while waiting for a route, no address, discarded): its bookkeeping is
    /// released so the next need sends a new one. A lookup left marked in flight would
    /// leave every request for that coordinator waiting until it gives up, forever.
    pub(crate) fn internal_ended(&mut self, internal: &Internal, error: Option<&str>) {
        match internal {
            Internal::Metadata => {
                self.metadata_in_flight = false;
                self.sync_metadata_timer();
            }
            Internal::FindCoordinator { key_type, keys } => {
                self.lookups_ended(*key_type, keys);
                if let Some(error) = error {
                    for key in keys {
                        let reason = format!("FindCoordinator for {key}: {error}");
                        self.fail_coordinator_waiters(key, &reason);
                    }
                }
            }
        }
    }

    /// The lookup for `keys` ended (found, failed or given up).
    pub(super) fn lookups_ended(&mut self, key_type: i8, keys: &[String]) {
        for k in keys {
            self.lookups_in_flight.remove(&(key_type, k.clone()));
        }
    }

    pub(super) fn coordinators_found(
        &mut self,
        now: Instant,
        id: u64,
        key_type: i8,
        keys: &[String],
        resp: &FindCoordinatorResponse,
        version: i16,
    ) {
        let attempts = self.pending.remove(&id).map_or(0, |p| p.attempts);
        self.timers.set(Timer::Parked(id), None);
        self.lookups_ended(key_type, keys);
        let mut retry = Vec::new();
        for key in keys {
            let (code, node, host, port) = if version >= 4 {
                match resp.coordinators.iter().find(|c| &c.key == key) {
                    Some(c) => (c.error_code, c.node_id, c.host.clone(), c.port),
                    None => (KafkaCode::COORDINATOR_NOT_AVAILABLE.0, -1, String::new(), 0),
                }
            } else {
                (resp.error_code, resp.node_id, resp.host.clone(), resp.port)
            };
            if code == 0 && node >= 0 {
                self.coordinators.insert((key_type, key.clone()), node);
                if self.metadata.broker(node).is_none() {
                    self.extra_brokers
                        .insert(node, (host, u16::try_from(port).unwrap_or(0)));
                }
            } else if KafkaCode(code).is_retriable() && attempts < self.config.common().retries {
                // COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE: ask again after a backoff.
                retry.push(key.clone());
            } else {
                let reason = format!("FindCoordinator for {key}: {}", KafkaCode(code));
                self.fail_coordinator_waiters(key, &reason);
            }
        }
        if !retry.is_empty() {
            let delay = self.retry_delay(attempts + 1);
            self.lookup(now, key_type, retry, attempts + 1, Some(now + delay));
        }
        let route = |k: &String| match key_type {
            0 => Route::GroupCoordinator(k.clone()),
            _ => Route::TxnCoordinator(k.clone()),
        };
        for key in keys {
            self.reroute(now, &route(key));
        }
    }

    /// Fails the requests parked for the coordinator of `key`.
    pub(super) fn fail_coordinator_waiters(&mut self, key: &str, reason: &str) {
        for route in [
            Route::GroupCoordinator(key.to_string()),
            Route::TxnCoordinator(key.to_string()),
        ] {
            for w in self.parked.remove(&route).unwrap_or_default() {
                if self.pending.get(&w).is_some_and(|p| p.parked) {
                    self.finish(w, Err(RequestError::NoRoute(reason.to_string())));
                }
            }
        }
    }
}
