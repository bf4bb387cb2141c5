//! Routing: turning a [`Route`] into a connection, parking requests that wait for
//! metadata or a coordinator, retrying, and handling the router's own requests.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use super::failures::REQUEST_VIOLATIONS;
use super::timers::Timer;
use super::{Cause, Client, ConnId, Event, IoCommand, Notice, Owner, Phase, RequestOptions, Slot};
use crate::cluster::{Lane, Route};
use crate::config::SecurityProtocol;
use crate::conn::{Completion, ConnState, Connection, RequestError, Token};
use crate::protocol::messages::find_coordinator::FindCoordinatorResponse;
use crate::protocol::messages::metadata::request::MetadataRequestTopic;
use crate::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use crate::protocol::{ApiKey, KafkaCode};

/// Requests the router sends for itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Internal {
    Metadata,
    FindCoordinator { key_type: i8, keys: Vec<String> },
}

/// Where a route resolves right now.
pub(super) enum Target {
    Node(i32),
    /// Wait (for metadata or a coordinator); the reason is reported on give-up.
    Wait(String),
}

/// APIs that are safe to resend after the connection failed mid-flight.
/// Counts `error` against `p`'s protocol violations in a row; once a request that asked
/// for it ([`RequestOptions::end_on_repeated_violation`]) reaches
/// [`REQUEST_VIOLATIONS`], the error that ends it instead of a retry. Only violations
/// after the request was written count: one during connection setup is the bootstrap
/// rule's (`failures.rs`).
fn repeated_violation(
    p: &mut super::Pending,
    error: &RequestError,
    sent: bool,
) -> Option<RequestError> {
    match error {
        RequestError::Connection(e) if e.is_protocol_violation() && !sent => None,
        RequestError::Connection(e) if e.is_protocol_violation() => {
            p.violations += 1;
            (p.opts.violations_end && p.violations >= REQUEST_VIOLATIONS)
                .then(|| RequestError::RepeatedViolation(e.clone()))
        }
        _ => {
            p.violations = 0;
            None
        }
    }
}

fn resend_safe(api: ApiKey) -> bool {
    use ApiKey as K;
    matches!(
        api,
        K::Metadata
            | K::ApiVersions
            | K::FindCoordinator
            | K::ListOffsets
            | K::OffsetFetch
            | K::DescribeGroups
            | K::ListGroups
            | K::DescribeConfigs
            | K::DescribeCluster
            | K::DescribeAcls
            | K::DescribeLogDirs
            | K::DescribeProducers
            | K::DescribeTransactions
            | K::ListTransactions
            | K::DescribeTopicPartitions
            | K::Fetch
            | K::ConsumerGroupDescribe
            | K::DescribeClientQuotas
            | K::DescribeUserScramCredentials
            | K::ListPartitionReassignments
            | K::DescribeDelegationToken
            | K::DescribeQuorum
    )
}

impl Client {
    /// Sends (or parks) pending request `id`; a no-op for one already submitted.
    pub(crate) fn route(&mut self, now: Instant, id: u64) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        if p.at.is_some() {
            return;
        }
        p.parked = false;
        let api = p.request.0.api_key();
        let wait = p
            .opts
            .shape
            .timeout
            .unwrap_or(self.conn_config.request_timeout);
        let route = p.route.clone();
        let target = self.resolve(now, &route);
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        match target {
            Target::Wait(reason) => {
                if p.give_up_at.is_some_and(|t| t <= now) {
                    self.finish(id, Err(RequestError::NoRoute(reason)));
                    return;
                }
                if p.last_cause.as_ref().is_none_or(Cause::is_no_route) {
                    p.last_cause = Some(Cause::Request(RequestError::NoRoute(reason)));
                }
                let give_up = *p.give_up_at.get_or_insert(now + wait);
                p.retry_at = None;
                p.parked = true;
                self.timers.set(Timer::Parked(id), Some(give_up));
                self.parked.entry(route).or_default().push_back(id);
            }
            Target::Node(node) => {
                if let Some(&(_, until)) = self.node_failures.get(&node) {
                    if until > now {
                        // Waiting out the backoff is waiting for a route: it ends at the
                        // request's give-up time like any other (a give-up time left in
                        // the past would re-arm its timer forever).
                        if p.give_up_at.is_some_and(|t| t <= now) {
                            let reason = format!("broker {node} is in its reconnect backoff");
                            if let Some(q) = self.node_waiters.get_mut(&node) {
                                q.retain(|&w| w != id);
                            }
                            self.finish(id, Err(RequestError::NoRoute(reason)));
                            return;
                        }
                        p.retry_at = Some(until);
                        let give_up = *p.give_up_at.get_or_insert(now + wait);
                        self.timers.set(Timer::Parked(id), Some(until.min(give_up)));
                        let queue = self.node_waiters.entry(node).or_default();
                        if !queue.contains(&id) {
                            queue.push_back(id);
                        }
                        return;
                    }
                }
                // Requests that waited out this node's backoff and came before this one
                // go first, in arrival order; those after it stay queued behind it.
                if let Some(mut before) = self.node_waiters.remove(&node) {
                    let after = match before.iter().position(|&w| w == id) {
                        Some(i) => {
                            let after = before.split_off(i + 1);
                            before.pop_back();
                            after
                        }
                        None => VecDeque::new(),
                    };
                    for w in before {
                        self.route(now, w);
                    }
                    if !after.is_empty() {
                        self.node_waiters.insert(node, after);
                    }
                }
                let Some(conn) = self.connection_to(node, Lane::of(api)) else {
                    self.finish(
                        id,
                        Err(RequestError::NoRoute(format!(
                            "no address for broker {node}"
                        ))),
                    );
                    return;
                };
                let token = self.new_token();
                let Some(p) = self.pending.get_mut(&id) else {
                    return;
                };
                p.at = Some((conn, token));
                p.retry_at = None;
                p.give_up_at = None;
                let (req, shape) = (p.request.clone(), p.opts.shape);
                self.timers.set(Timer::Parked(id), None);
                self.by_token.insert(token, id);
                match self.slots.get_mut(&conn).map(|s| &mut s.phase) {
                    Some(Phase::Open(c)) => {
                        c.submit_shaped(now, token, Box::new(req), shape);
                        self.drain(now, conn);
                    }
                    Some(Phase::Connecting) => {
                        if let Some(s) = self.slots.get_mut(&conn) {
                            s.waiting.push((token, req, shape));
                        }
                    }
                    None => {}
                }
            }
        }
    }

    fn resolve(&mut self, now: Instant, route: &Route) -> Target {
        match route {
            Route::Any => self
                .any_node()
                .map_or(Target::Wait("no broker known".into()), Target::Node),
            Route::Broker(n) => {
                let known = *n < 0
                    || self.metadata.broker(*n).is_some()
                    || self.extra_brokers.contains_key(n);
                if known {
                    Target::Node(*n)
                } else {
                    // Not in metadata yet (e.g. a fresh client): learn the brokers first.
                    self.request_metadata(now, []);
                    Target::Wait(format!("broker {n} not in metadata"))
                }
            }
            Route::Leader { topic, partition } => match self.metadata.leader(topic, *partition) {
                Some(n) => {
                    if let Some(used) = self.wanted_topics.get_mut(topic.as_str()) {
                        *used = now;
                    }
                    Target::Node(n)
                }
                None => {
                    self.request_metadata(now, [topic.clone()]);
                    Target::Wait(format!("no leader known for {topic}-{partition}"))
                }
            },
            Route::Controller => match self.metadata.controller() {
                Some(n) => Target::Node(n),
                None => {
                    self.request_metadata(now, []);
                    Target::Wait("no controller known".into())
                }
            },
            Route::GroupCoordinator(g) => self.coordinator(now, 0, g),
            Route::TxnCoordinator(t) => self.coordinator(now, 1, t),
        }
    }

    /// A node with an open, ready connection, else any known broker, else a bootstrap server.
    fn any_node(&self) -> Option<i32> {
        let ready = self
            .slots
            .values()
            .find(|s| matches!(&s.phase, Phase::Open(c) if *c.state() == ConnState::Ready));
        if let Some(s) = ready {
            return Some(s.node);
        }
        let usable = |n: &i32| !self.node_failures.contains_key(n);
        let known = self.metadata.brokers().keys().copied().find(usable);
        let boot = (0..self.bootstrap.len() as i32)
            .map(|i| -(i + 1))
            .find(usable);
        known.or(boot).or_else(|| {
            // Everything failed recently: the one whose backoff ends first, among those
            // that still have an address (a broker gone from the metadata keeps its
            // failure record; picked, it would fail every request with "no address",
            // the metadata refresh that would drop it included, forever).
            self.node_failures
                .iter()
                .filter(|(n, _)| self.has_address(**n))
                .min_by_key(|(_, (_, until))| *until)
                .map(|(n, _)| *n)
        })
    }

    /// Whether `node` can be connected to: a bootstrap server, a broker in the metadata
    /// or one learnt from a response's endpoints.
    fn has_address(&self, node: i32) -> bool {
        self.address_of(node).is_some()
    }

    /// Where `node` is: a bootstrap entry (negative ids), a broker of the metadata, or
    /// one a response named outside it (KIP-951 endpoints).
    fn address_of(&self, node: i32) -> Option<(&str, u16)> {
        let (host, port) = if node < 0 {
            self.bootstrap.get((-node - 1) as usize)?
        } else if let Some(b) = self.metadata.broker(node) {
            return Some((b.host.as_str(), b.port));
        } else {
            self.extra_brokers.get(&node)?
        };
        Some((host.as_str(), *port))
    }

    /// The connection to `node` on `lane`, opening one if needed.
    fn connection_to(&mut self, node: i32, lane: Lane) -> Option<ConnId> {
        if let Some(&c) = self.by_node.get(&(node, lane)) {
            return Some(c);
        }
        let (host, port) = self.address_of(node).map(|(h, p)| (h.to_string(), p))?;
        let conn = ConnId(self.next_conn);
        self.next_conn += 1;
        let setup_timeout = self.next_setup_timeout(node);
        self.slots.insert(
            conn,
            Slot {
                node,
                host: host.clone(),
                port,
                lane,
                phase: Phase::Connecting,
                setup_timeout,
                was_ready: false,
                waiting: Vec::new(),
            },
        );
        self.by_node.insert((node, lane), conn);
        crate::trace::debug!(
            node,
            addr = %format_args!("{host}:{port}"),
            setup_timeout_ms = setup_timeout.as_millis() as u64,
            "kafka connecting"
        );
        self.io.push_back(IoCommand::Connect {
            conn,
            host,
            port,
            setup_timeout,
        });
        Some(conn)
    }

    /// Processes everything connection `conn` completed.
    pub(crate) fn drain(&mut self, now: Instant, conn: ConnId) {
        loop {
            let Some(Slot {
                phase: Phase::Open(c),
                ..
            }) = self.slots.get_mut(&conn)
            else {
                return;
            };
            let Some(completion) = c.poll_completion() else {
                break;
            };
            match completion {
                Completion::Response {
                    token,
                    version,
                    frame,
                    ..
                } => self.response(now, conn, token, version, frame),
                Completion::Failed { token, error, sent } => {
                    self.request_failed(now, token, error, sent)
                }
                Completion::Sent { token } => {
                    if let Some(id) = self.by_token.remove(&token) {
                        let empty = self.pending.get(&id).map(|p| p.request.0.empty_response());
                        if let Some(empty) = empty {
                            self.finish(id, Ok(empty));
                        }
                    }
                }
            }
        }
        if let Some(Slot {
            phase: Phase::Open(c),
            node,
            was_ready,
            ..
        }) = self.slots.get_mut(&conn)
        {
            // The responses' throttles are applied: what waited for a slot may go.
            c.resume(now);
            match c.state() {
                ConnState::Failed(e) => {
                    let e = e.clone();
                    self.connection_failed(now, conn, e);
                    return;
                }
                ConnState::Ready => {
                    if !*was_ready {
                        connection_ready(*node, c, self.config.security());
                    }
                    *was_ready = true;
                    self.node_failures.remove(node);
                    self.setup_failures.remove(node);
                    // The bootstrap rule counts violations with no ready connection.
                    self.bootstrap_violations.clear();
                }
                ConnState::Setup => {
                    if c.needs_credentials() && !self.awaiting_token.contains(&conn) {
                        self.credentials_wanted(now, conn);
                        // A cached token may have moved it on (or failed it).
                        return self.drain(now, conn);
                    }
                }
            }
            let next = c.poll_timeout();
            self.timers.set(Timer::Conn(conn), next);
        }
    }

    fn response(
        &mut self,
        now: Instant,
        conn: ConnId,
        token: Token,
        version: i16,
        frame: bytes::Bytes,
    ) {
        let Some(id) = self.by_token.remove(&token) else {
            return;
        };
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        p.at = None;
        let api = p.request.0.api_key();
        let decoded = match p.request.0.decode(frame, version) {
            Ok(d) => d,
            Err(source) => {
                // A body that does not decode is remote misbehaviour: the connection
                // fails for good (its other requests with it), and this request fails
                // as one that was written.
                let e = crate::conn::ConnError::Decode {
                    api,
                    version,
                    source,
                };
                if let Some(Slot {
                    phase: Phase::Open(c),
                    ..
                }) = self.slots.get_mut(&conn)
                {
                    c.handle_violation(e.clone());
                }
                self.by_token.insert(token, id);
                self.request_failed(now, token, RequestError::Connection(e), true);
                return;
            }
        };
        if let (
            Some(ms),
            Some(Slot {
                phase: Phase::Open(c),
                ..
            }),
        ) = (decoded.throttle_ms, self.slots.get_mut(&conn))
        {
            c.apply_throttle(now, ms);
        }
        let internal = self.pending.get(&id).and_then(|p| p.internal().cloned());
        match internal {
            Some(Internal::Metadata) => {
                self.metadata_in_flight = false;
                if let Some(resp) = decoded.value.downcast_ref::<MetadataResponse>() {
                    let before = super::observe::Before::of(&self.metadata, resp);
                    self.apply_metadata(resp);
                    before.log_changes(&self.metadata, resp);
                    self.metadata_at = Some(now);
                    // A refresh asked for while this one was in flight (a topic the
                    // request did not name, a leader lost since) may not be answered
                    // by it: it stays due, one backoff from now, not `metadata.max.age.ms`.
                    let common = self.config.common();
                    let next = match self.metadata_due {
                        Some(_) => common.retry_backoff,
                        None => common.metadata_max_age,
                    };
                    self.metadata_due = Some(now + next);
                    self.events.push_back(Event::MetadataUpdated);
                    self.notice_ops(&Notice::MetadataUpdated);
                }
                self.sync_metadata_timer();
                self.finish(id, Ok(decoded.value));
                self.reroute_parked(now);
            }
            Some(Internal::FindCoordinator { key_type, keys }) => {
                if let Some(resp) = decoded.value.downcast_ref::<FindCoordinatorResponse>() {
                    self.coordinators_found(now, id, key_type, &keys, resp, version);
                }
            }
            None => {
                // A coordinator that moved: look it up again and retry.
                let code = decoded.error_code.map(KafkaCode).unwrap_or(KafkaCode::NONE);
                let route = self
                    .pending
                    .get(&id)
                    .filter(|p| !p.opts.no_retry)
                    .map(|p| p.route.clone());
                let coordinator_moved = code == KafkaCode::NOT_COORDINATOR
                    || code == KafkaCode::COORDINATOR_NOT_AVAILABLE;
                if let Some(Route::GroupCoordinator(k) | Route::TxnCoordinator(k)) = &route {
                    if coordinator_moved && self.retry_later(now, id) {
                        self.coordinators.retain(|(_, key), _| key != k);
                        if let Some(p) = self.pending.get_mut(&id) {
                            p.last_cause = Some(Cause::code(code.0, None));
                        }
                        return;
                    }
                }
                self.finish(id, Ok(decoded.value));
            }
        }
    }

    /// Parks `id` for a retry after the retry backoff; false when out of retries.
    fn retry_later(&mut self, now: Instant, id: u64) -> bool {
        let retries = self.config.common().retries;
        let Some(p) = self.pending.get_mut(&id) else {
            return false;
        };
        if p.attempts >= retries || p.opts.no_retry {
            return false;
        }
        p.attempts += 1;
        p.at = None;
        let attempts = p.attempts;
        let delay = self.retry_delay(attempts);
        if let Some(p) = self.pending.get_mut(&id) {
            p.retry_at = Some(now + delay);
            p.give_up_at = None;
        }
        self.timers.set(Timer::Parked(id), Some(now + delay));
        true
    }

    /// Re-routes the requests parked on routes that wait for metadata (after it
    /// arrived), in arrival order per route. Coordinator routes wait for their lookup.
    fn reroute_parked(&mut self, now: Instant) {
        let routes: Vec<Route> = self
            .parked
            .keys()
            .filter(|r| !matches!(r, Route::GroupCoordinator(_) | Route::TxnCoordinator(_)))
            .cloned()
            .collect();
        for route in routes {
            self.reroute(now, &route);
        }
    }

    /// Re-routes the requests parked on `route`, oldest first.
    pub(super) fn reroute(&mut self, now: Instant, route: &Route) {
        let Some(queue) = self.parked.remove(route) else {
            return;
        };
        for id in queue {
            if self.pending.get(&id).is_some_and(|p| p.parked) {
                self.route(now, id);
            }
        }
    }

    pub(crate) fn request_failed(
        &mut self,
        now: Instant,
        token: Token,
        error: RequestError,
        sent: bool,
    ) {
        let Some(id) = self.by_token.remove(&token) else {
            return;
        };
        let Some(p) = self.pending.get(&id) else {
            return;
        };
        let api = p.request.0.api_key();
        let connection_error = matches!(&error, RequestError::Connection(e) if e.is_retriable());
        let internal = p.internal().cloned();
        let mut error = error;
        if let Some(p) = self.pending.get_mut(&id) {
            p.last_cause = Some(Cause::from(&error));
            if let Some(violation) = repeated_violation(p, &error, sent) {
                error = violation;
            }
        }
        let connection_error =
            connection_error && !matches!(error, RequestError::RepeatedViolation(_));
        if internal == Some(Internal::Metadata) {
            self.metadata_in_flight = false;
            self.sync_metadata_timer();
        }
        if connection_error
            && (!sent || resend_safe(api) || internal.is_some())
            && self.retry_later(now, id)
        {
            crate::trace::debug!(
                ?api,
                attempt = self.pending.get(&id).map_or(0, |p| p.attempts),
                cause = %error,
                "kafka request retried after a connection failure"
            );
            return;
        }
        if let Some(Internal::FindCoordinator { key_type, keys }) = internal {
            self.pending.remove(&id);
            self.lookups_ended(key_type, &keys);
            if matches!(error, RequestError::Encode(_)) && keys.len() > 1 {
                // The broker only takes one key per FindCoordinator (below v4): split.
                for key in keys {
                    self.lookup(now, key_type, vec![key], 0, None);
                }
                return;
            }
            for key in &keys {
                self.fail_coordinator_waiters(key, &format!("FindCoordinator for {key}: {error}"));
            }
        }
        self.finish(id, Err(error));
    }

    pub(crate) fn maybe_refresh_metadata(&mut self, now: Instant) {
        if self.metadata_in_flight || self.metadata_due.is_none_or(|t| t > now) {
            return;
        }
        self.metadata_in_flight = true;
        self.metadata_due = None;
        self.sync_metadata_timer();
        // Topics nothing routed to for `metadata.max.idle.ms` are dropped (Java's rule).
        let idle = self.config.common().metadata_max_idle;
        let expired: Vec<String> = self
            .wanted_topics
            .iter()
            .filter(|(_, used)| now.saturating_duration_since(**used) > idle)
            .map(|(t, _)| t.clone())
            .collect();
        for t in expired {
            self.wanted_topics.remove(&t);
            self.metadata.forget_topic(&t);
        }
        let topics = self
            .wanted_topics
            .keys()
            .map(|t| MetadataRequestTopic {
                name: Some(t.clone()),
                ..Default::default()
            })
            .collect();
        // A pattern subscription wants every topic (topics = null).
        self.metadata_all_in_flight = !self.all_topics_wanted.is_empty();
        let req = MetadataRequest {
            topics: (!self.metadata_all_in_flight).then_some(topics),
            allow_auto_topic_creation: self.auto_create_topics,
            ..Default::default()
        };
        let id = self.next_request_id();
        let owner = Owner::Internal(Internal::Metadata);
        let opts = RequestOptions::default();
        self.submit_as(now, id, Route::Any, Arc::new(req), opts, owner);
    }
}

/// Logs a connection that just got ready: the negotiation's summary, and the SASL
/// mechanism it authenticated with (never a credential).
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))] // only logged
fn connection_ready(node: i32, c: &Connection, security: &crate::config::SecurityConfig) {
    let apis = c.api_versions().map_or(0, |v| v.iter().count());
    crate::trace::info!(node, apis, "kafka connection ready: versions negotiated");
    if matches!(
        security.protocol,
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
    ) {
        crate::trace::info!(node, mechanism = %security.sasl.mechanism, "kafka connection authenticated");
    }
}
