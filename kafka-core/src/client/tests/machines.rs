//! Machines and the owner rule, per-request shapes and the timer table, on a virtual
//! clock with scripted brokers.

use std::time::Duration;

use super::*;
use crate::protocol::messages::produce::{ProduceRequest, ProduceResponse};

/// Answers everything written with a default (successful) response; ApiVersions and
/// Metadata with the scripted cluster. Returns how many requests of `api` it answered.
fn serve(h: &mut Harness, api: ApiKey) -> usize {
    let mut answered = 0;
    for _ in 0..8 {
        h.accept();
        let written = h.written();
        if written.is_empty() {
            break;
        }
        for (conn, _, seen) in written {
            if seen.api() == api {
                answered += 1;
            }
            match seen.api() {
                ApiKey::ApiVersions => h.reply(conn, &seen, &broker_versions()),
                ApiKey::Metadata => h.reply(conn, &seen, &cluster_metadata()),
                ApiKey::Heartbeat => h.reply(conn, &seen, &HeartbeatResponse::default()),
                ApiKey::ListOffsets => h.reply(conn, &seen, &ListOffsetsResponse::default()),
                ApiKey::Produce => h.reply(conn, &seen, &ProduceResponse::default()),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    answered
}

/// A group member's heartbeat loop: one Heartbeat to broker 1 every 3 s, for ever.
#[derive(Default)]
struct Heartbeats {
    next: Option<Instant>,
    in_flight: Option<RequestId<HeartbeatRequest>>,
    beats: u64,
    polls: u64,
}

impl Operation for Heartbeats {
    type Output = u64;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<u64> {
        self.polls += 1;
        if let Some(id) = self.in_flight {
            match cx.take_response(id) {
                Some(Ok(_)) => {
                    self.beats += 1;
                    self.in_flight = None;
                }
                Some(Err(e)) => panic!("heartbeat failed: {e}"),
                None => {}
            }
        }
        let now = cx.now();
        let next = *self.next.get_or_insert(now);
        if self.in_flight.is_none() && next <= now {
            self.in_flight = Some(cx.send(Route::Broker(1), HeartbeatRequest::default()));
            self.next = Some(now + Duration::from_secs(3));
        }
        if let Some(next) = self.next {
            cx.wake_at(next);
        }
        None
    }
}

#[test]
fn a_machine_lives_ten_thousand_seconds_polled_only_for_its_own_reasons() {
    let mut h = Harness::new();
    let id = h.client.start_op(h.now, Heartbeats::default());
    let end = h.now + Duration::from_secs(10_000);
    let mut answered = 0;
    while h.now < end {
        answered += serve(&mut h, ApiKey::Heartbeat);
        let next = h
            .client
            .poll_timeout()
            .expect("the machine's timer is armed");
        assert!(
            next > h.now,
            "no busy loop: the next deadline is in the future"
        );
        h.now = next;
        h.client.handle_timeout(h.now);
        while h.client.poll_event().is_some() {}
    }
    let (beats, polls) = h
        .client
        .command(h.now, id, |m, _| (m.beats, m.polls))
        .unwrap();
    assert!((3_330..=3_335).contains(&beats), "{beats} heartbeats");
    assert_eq!(answered as u64, beats);
    // One poll per timer, one per response, plus metadata notices and commands.
    assert!(polls <= 2 * beats + 100, "{polls} polls for {beats} beats");
    assert!(h.client.requests_pending() <= 1, "nothing accumulates");
    assert!(
        h.client.timers_armed() <= 6,
        "{} timers",
        h.client.timers_armed()
    );
    assert!(h.client.done.is_empty() && h.client.parked.values().all(|q| q.len() <= 1));
}

/// Sends `n` ListOffsets to partition leaders at start, then waits for all of them.
struct Many {
    n: usize,
    sent: Vec<RequestId<ListOffsetsRequest>>,
    got: usize,
}

impl Operation for Many {
    type Output = usize;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<usize> {
        if self.sent.is_empty() {
            let route = Route::Leader {
                topic: "t".into(),
                partition: 0,
            };
            self.sent = (0..self.n)
                .map(|_| cx.send(route.clone(), list_offsets()))
                .collect();
        }
        let mut left = Vec::new();
        for id in std::mem::take(&mut self.sent) {
            match cx.take_response(id) {
                Some(r) => {
                    r.expect("answered");
                    self.got += 1;
                }
                None => left.push(id),
            }
        }
        self.sent = left;
        (self.got == self.n).then_some(self.got)
    }
}

#[test]
fn a_users_request_completes_among_a_thousand_machine_owned_ones() {
    let mut h = Harness::new();
    let op = h.client.start_op(
        h.now,
        Many {
            n: 1_000,
            sent: Vec::new(),
            got: 0,
        },
    );
    let mine = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let mut events = Vec::new();
    for _ in 0..400 {
        serve(&mut h, ApiKey::ListOffsets);
        while let Some(e) = h.client.poll_event() {
            events.push(e);
        }
        if events.contains(&Event::OperationDone(op.untyped())) {
            break;
        }
    }
    assert_eq!(h.client.take_op_output(op), Some(1_000));
    let responses: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Response(_)))
        .collect();
    assert_eq!(
        responses,
        vec![&Event::Response(ResponseReady(mine.raw))],
        "only the application's own completion surfaces"
    );
    assert_eq!(
        h.client.take_response(mine).unwrap().unwrap().brokers.len(),
        2
    );
    assert_eq!(h.client.requests_pending(), 0);
}

#[test]
fn a_cancelled_machines_completions_never_surface() {
    let mut h = Harness::new();
    let op = h.client.start_op(
        h.now,
        Many {
            n: 20,
            sent: Vec::new(),
            got: 0,
        },
    );
    // Metadata arrives; 5 ListOffsets are written to the leader, 15 wait in its queue.
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    h.reply(*conn, seen, &cluster_metadata());
    let written: Vec<_> = h
        .negotiate()
        .into_iter()
        .filter(|(_, _, s)| s.api() == ApiKey::ListOffsets)
        .collect();
    assert_eq!(written.len(), 5, "max.in.flight.requests.per.connection");
    h.client.cancel_op(op.untyped());
    assert_eq!(h.client.requests_pending(), 0, "queued requests withdrawn");
    for (conn, _, seen) in &written {
        h.reply(*conn, seen, &ListOffsetsResponse::default());
    }
    assert!(
        h.written().is_empty(),
        "withdrawn requests are never written"
    );
    while let Some(e) = h.client.poll_event() {
        assert!(
            !matches!(e, Event::Response(_) | Event::OperationDone(_)),
            "{e:?}"
        );
    }
    assert!(
        h.client.done.is_empty(),
        "late responses are dropped, not kept"
    );
    // The connection is healthy: the application's request on it works.
    let mine = h.client.send(
        h.now,
        Route::Leader {
            topic: "t".into(),
            partition: 0,
        },
        list_offsets(),
    );
    serve(&mut h, ApiKey::ListOffsets);
    assert!(h.client.take_response(mine).unwrap().is_ok());
}

#[test]
fn a_request_without_response_leaves_the_connection_healthy() {
    let mut h = Harness::new();
    let leader = || Route::Leader {
        topic: "t".into(),
        partition: 0,
    };
    let acks0 = ProduceRequest {
        acks: 0,
        ..Default::default()
    };
    let id = h.client.send_with(
        h.now,
        leader(),
        acks0,
        RequestOptions::default().no_response(),
    );
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    h.reply(*conn, seen, &cluster_metadata());
    let rest = h.negotiate();
    assert_eq!(rest[0].2.api(), ApiKey::Produce);
    assert!(
        h.client.take_response(id).unwrap().is_ok(),
        "done once written"
    );
    // Nothing is awaited on it: no request timeout fires, the next request is matched.
    h.advance(Duration::from_secs(31));
    let next = h.client.send(h.now, leader(), ProduceRequest::default());
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    assert_eq!(seen.api(), ApiKey::Produce);
    h.reply(*conn, seen, &ProduceResponse::default());
    assert!(h.client.take_response(next).unwrap().is_ok());
    while let Some(e) = h.client.poll_event() {
        assert!(!matches!(e, Event::ConnectionFailed { .. }), "{e:?}");
    }
}

#[test]
fn a_request_with_a_ninety_second_timeout_outlives_request_timeout_ms() {
    let mut h = Harness::new();
    let long = RequestOptions::default().timeout(Duration::from_secs(90));
    let id = h.client.send_with(
        h.now,
        Route::GroupCoordinator("g".into()),
        HeartbeatRequest::default(),
        long,
    );
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    h.reply(
        *conn,
        seen,
        &FindCoordinatorResponse {
            coordinators: vec![Coordinator {
                key: "g".into(),
                node_id: 1,
                host: "b1".into(),
                port: 9092,
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let rest = h.negotiate();
    let (conn, _, seen) = rest.into_iter().next().unwrap();
    assert_eq!(seen.api(), ApiKey::Heartbeat);
    h.advance(Duration::from_secs(60)); // past request.timeout.ms (30 s)
    assert!(h.client.take_response(id).is_none(), "still waiting");
    h.reply(conn, &seen, &HeartbeatResponse::default());
    assert!(h.client.take_response(id).unwrap().is_ok());
    // A 90 s limit still holds: a second one unanswered fails at 90 s, not before.
    let id = h
        .client
        .send_with(h.now, Route::Broker(1), HeartbeatRequest::default(), long);
    h.written();
    h.advance(Duration::from_secs(89));
    assert!(h.client.take_response(id).is_none());
    h.advance(Duration::from_secs(2));
    assert!(matches!(h.client.take_response(id), Some(Err(_))));
}

#[test]
fn a_recreated_topic_routes_to_its_new_leader() {
    let mut h = Harness::new();
    let leader = || Route::Leader {
        topic: "t".into(),
        partition: 0,
    };
    let id = h.client.send(h.now, leader(), list_offsets());
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    let mut old = cluster_metadata();
    old.topics[0].topic_id = crate::protocol::Uuid::from_bytes([1; 16]);
    old.topics[0].partitions[0].leader_epoch = 9;
    h.reply(*conn, seen, &old);
    let rest = h.negotiate();
    assert_eq!(rest[0].1, "b2");
    h.reply(rest[0].0, &rest[0].2, &ListOffsetsResponse::default());
    assert!(h.client.take_response(id).unwrap().is_ok());
    // Deleted and re-created: a new id, leader 1, the epoch restarts at 0.
    let mut new = cluster_metadata();
    new.topics[0].topic_id = crate::protocol::Uuid::from_bytes([2; 16]);
    new.topics[0].partitions[0].leader_id = 1;
    new.topics[0].partitions[0].leader_epoch = 0;
    h.client.request_metadata(h.now, ["t".to_string()]);
    h.advance(Duration::from_millis(200));
    let rest = h.negotiate();
    let (conn, _, seen) = rest
        .iter()
        .find(|(_, _, s)| s.api() == ApiKey::Metadata)
        .unwrap();
    h.reply(*conn, seen, &new);
    let id = h.client.send(h.now, leader(), list_offsets());
    let rest = h.negotiate();
    assert_eq!(
        (rest[0].1.as_str(), rest[0].2.api()),
        ("b1", ApiKey::ListOffsets)
    );
    h.reply(rest[0].0, &rest[0].2, &ListOffsetsResponse::default());
    assert!(h.client.take_response(id).unwrap().is_ok());
}

#[test]
fn the_next_deadline_comes_from_the_timer_table_not_a_scan() {
    let mut h = Harness::new();
    // 10,000 parked requests (no metadata yet) arm one give-up timer each.
    for _ in 0..10_000 {
        h.client.send(
            h.now,
            Route::Leader {
                topic: "t".into(),
                partition: 0,
            },
            list_offsets(),
        );
    }
    assert!(h.client.timers_armed() >= 10_000);
    let first = h.client.poll_timeout().unwrap();
    assert!(first <= h.now + Duration::from_secs(30));
    // Metadata arrives: they are routed in arrival order, the give-up timers disarmed.
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    h.reply(*conn, seen, &cluster_metadata());
    assert!(h.client.timers_armed() < 10, "{}", h.client.timers_armed());
    assert_eq!(
        h.client.parked.values().map(VecDeque::len).sum::<usize>(),
        0
    );
}

struct NeverCalled;

impl crate::config::TokenProvider for NeverCalled {
    fn token(&self) -> Result<crate::config::OAuthToken, String> {
        panic!("the core never calls the token provider")
    }
}

#[test]
fn oauthbearer_tokens_are_asked_of_the_adapter_and_reused_until_they_expire() {
    let mut b = ClientConfig::builder();
    b.bootstrap_servers("boot:9092")
        .security_protocol(crate::config::SecurityProtocol::SaslPlaintext)
        .sasl_oauthbearer(std::sync::Arc::new(NeverCalled));
    let mut h = Harness::new();
    h.client = Client::new(b.build().unwrap(), [1; 32]).unwrap();
    h.client
        .handle_wall_clock(Duration::from_secs(1_700_000_000));
    let id = h.client.send(h.now, Route::Any, MetadataRequest::default());
    assert!(h.negotiate().is_empty(), "nothing sent before a token");
    let asked: Vec<Event> = std::iter::from_fn(|| h.client.poll_event()).collect();
    assert_eq!(asked, vec![Event::OAuthTokenNeeded], "asked once");
    let token = crate::config::OAuthToken {
        value: crate::secret::Secret::new("eyJ.TOKEN.sig"),
        lifetime_ms: 1_700_000_000_000 + 3_600_000,
        principal: "alice".into(),
        extensions: vec![],
    };
    h.client.handle_oauth_token(h.now, Ok(token));
    let rest = h.negotiate();
    assert_eq!(rest[0].2.api(), ApiKey::SaslHandshake);
    // A second connection (another lane) reuses the cached token without asking.
    let _other = h.client.send_with(
        h.now,
        Route::Any,
        ProduceRequest::default(),
        RequestOptions::default(),
    );
    let more = h.negotiate();
    assert!(more
        .iter()
        .any(|(_, _, s)| s.api() == ApiKey::SaslHandshake));
    assert!(!std::iter::from_fn(|| h.client.poll_event()).any(|e| e == Event::OAuthTokenNeeded));
    // A failed answer fails the waiting connection with the reason.
    let mut h2 = Harness::new();
    let mut b = ClientConfig::builder();
    b.bootstrap_servers("boot:9092")
        .security_protocol(crate::config::SecurityProtocol::SaslPlaintext)
        .sasl_oauthbearer(std::sync::Arc::new(NeverCalled));
    h2.client = Client::new(b.build().unwrap(), [1; 32]).unwrap();
    let failed = h2
        .client
        .send(h2.now, Route::Any, MetadataRequest::default());
    h2.negotiate();
    h2.client.handle_oauth_token(h2.now, Err("idp down".into()));
    let events: Vec<Event> = std::iter::from_fn(|| h2.client.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(e, Event::ConnectionFailed { error, .. } if error.to_string().contains("idp down"))),
        "{events:?}"
    );
    let _ = (id, failed);
}

#[test]
fn topics_nothing_routes_to_expire_after_metadata_max_idle() {
    let mut h = Harness::new();
    let id = h.client.send(
        h.now,
        Route::Leader {
            topic: "t".into(),
            partition: 0,
        },
        list_offsets(),
    );
    serve(&mut h, ApiKey::ListOffsets);
    assert!(h.client.take_response(id).unwrap().is_ok());
    assert!(h.client.metadata().topic("t").is_some());
    // Past metadata.max.idle.ms (5 min) with no request to "t": the next refresh drops it.
    h.advance(Duration::from_secs(301));
    let refresh: Vec<_> = h
        .written()
        .into_iter()
        .filter(|(_, _, s)| s.api() == ApiKey::Metadata)
        .collect();
    let (conn, _, seen) = &refresh[0];
    let asked = seen.decode::<MetadataRequest>().topics.unwrap_or_default();
    assert!(asked.is_empty(), "the idle topic is no longer asked for");
    assert!(
        h.client.metadata().topic("t").is_none(),
        "and left the cache"
    );
    h.reply(*conn, seen, &MetadataResponse::default());
}

/// Sends a Heartbeat; once it is answered (the connection is ready), sends a request
/// that fails to encode at once (LeaveGroup's top-level member id is v0-2 only) and
/// waits for its outcome with no timer armed.
#[derive(Default)]
struct FailsAtOnce {
    beat: Option<RequestId<HeartbeatRequest>>,
    leave: Option<RequestId<crate::protocol::messages::leave_group::LeaveGroupRequest>>,
    outcome: Option<bool>,
}

impl Operation for FailsAtOnce {
    type Output = ();

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<()> {
        if self.beat.is_none() {
            self.beat = Some(cx.send(Route::Broker(1), HeartbeatRequest::default()));
        }
        if let Some(id) = self.beat {
            if cx.take_response(id).is_some() && self.leave.is_none() {
                let req = crate::protocol::messages::leave_group::LeaveGroupRequest {
                    member_id: "m".into(),
                    ..Default::default()
                };
                self.leave = Some(cx.send_version(Route::Broker(1), req, 5));
            }
        }
        if let Some(id) = self.leave {
            if let Some(r) = cx.take_response(id) {
                self.outcome = Some(r.is_ok());
            }
        }
        None
    }
}

#[test]
fn a_request_failing_while_its_machine_is_polled_still_wakes_the_machine() {
    let mut h = Harness::new();
    let id = h.client.start_op(h.now, FailsAtOnce::default());
    for _ in 0..4 {
        serve(&mut h, ApiKey::Heartbeat);
        h.client.handle_timeout(h.now);
        while h.client.poll_event().is_some() {}
    }
    let outcome = h
        .client
        .command(h.now, id, |m, _| (m.leave.is_some(), m.outcome))
        .unwrap();
    assert_eq!(
        outcome,
        (true, Some(false)),
        "the encode failure reached its owner"
    );
}
