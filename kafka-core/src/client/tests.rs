//! Router tests with no sockets: scripted brokers answer what the client writes, on a
//! virtual clock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;
use crate::protocol::messages::find_coordinator::response::Coordinator;
use crate::protocol::messages::find_coordinator::FindCoordinatorResponse;
use crate::protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use crate::protocol::messages::list_offsets::request::{ListOffsetsPartition, ListOffsetsTopic};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use crate::protocol::{ApiKey, Message};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

struct Harness {
    client: Client,
    now: Instant,
    /// Open sockets and the address each was opened to.
    open: BTreeMap<ConnId, (String, u16)>,
    /// Connect commands not yet answered.
    connecting: Vec<(ConnId, String, u16)>,
}

impl Harness {
    fn new() -> Self {
        Self::with(&[])
    }

    fn with(extra: &[(&str, &str)]) -> Self {
        let mut pairs = vec![("bootstrap.servers", "boot:9092"), ("client.id", "t")];
        pairs.extend_from_slice(extra);
        let config = ClientConfig::from_pairs(pairs).unwrap();
        Harness {
            client: Client::new(config, [1; 32]).unwrap(),
            now: origin(),
            open: BTreeMap::new(),
            connecting: Vec::new(),
        }
    }

    fn io(&mut self) {
        while let Some(cmd) = self.client.poll_io() {
            match cmd {
                IoCommand::Connect {
                    conn, host, port, ..
                } => self.connecting.push((conn, host, port)),
                IoCommand::Close { conn } => {
                    self.open.remove(&conn);
                }
            }
        }
    }

    /// Accepts every pending connect.
    fn accept(&mut self) {
        self.io();
        for (conn, host, port) in std::mem::take(&mut self.connecting) {
            self.open.insert(conn, (host, port));
            self.client.handle_connected(self.now, conn);
        }
    }

    /// Requests written since the last call, with the address they went to.
    fn written(&mut self) -> Vec<(ConnId, String, Seen)> {
        self.io();
        let mut all = Vec::new();
        for (&conn, (host, _)) in &self.open {
            let mut out = Vec::new();
            self.client.poll_transmit(self.now, conn, &mut out);
            all.extend(
                parse_requests(out)
                    .into_iter()
                    .map(|s| (conn, host.clone(), s)),
            );
        }
        all
    }

    fn reply<M: Message>(&mut self, conn: ConnId, to: &Seen, body: &M) {
        let frame = response_frame(to, body, to.version());
        self.client.handle_received(self.now, conn, &frame);
    }

    /// Accepts connections and answers ApiVersions until only other requests remain.
    fn negotiate(&mut self) -> Vec<(ConnId, String, Seen)> {
        let mut rest = Vec::new();
        for _ in 0..4 {
            self.accept();
            for (conn, host, seen) in self.written() {
                if seen.api() == ApiKey::ApiVersions {
                    self.reply(conn, &seen, &broker_versions());
                } else {
                    rest.push((conn, host, seen));
                }
            }
        }
        rest
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.client.handle_timeout(self.now);
    }
}

fn cluster_metadata() -> MetadataResponse {
    MetadataResponse {
        brokers: [(1, "b1"), (2, "b2")]
            .into_iter()
            .map(|(id, host)| MetadataResponseBroker {
                node_id: id,
                host: host.into(),
                port: 9092,
                ..Default::default()
            })
            .collect(),
        controller_id: 1,
        cluster_id: Some("c".into()),
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            partitions: vec![MetadataResponsePartition {
                partition_index: 0,
                leader_id: 2,
                leader_epoch: 3,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn list_offsets() -> ListOffsetsRequest {
    ListOffsetsRequest {
        topics: vec![ListOffsetsTopic {
            name: "t".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn any_route_bootstraps_negotiates_and_returns_a_typed_response() {
    let mut h = Harness::new();
    let id = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let rest = h.negotiate();
    assert_eq!(rest.len(), 1);
    let (conn, host, seen) = &rest[0];
    assert_eq!(
        (host.as_str(), seen.api(), seen.version()),
        ("boot", ApiKey::Metadata, 13)
    );
    h.reply(*conn, seen, &cluster_metadata());
    assert_eq!(
        h.client.poll_event(),
        Some(Event::Response(ResponseReady(id.raw)))
    );
    let resp = h.client.take_response(id).unwrap().unwrap();
    assert_eq!(resp.brokers.len(), 2);
    assert!(
        h.client.take_response(id).is_none(),
        "a response is taken once"
    );
}

#[test]
fn leader_route_waits_for_metadata_then_goes_to_the_leader() {
    let mut h = Harness::new();
    let id = h.client.send(
        h.now,
        Route::Leader {
            topic: "t".into(),
            partition: 0,
        },
        list_offsets(),
    );
    let rest = h.negotiate();
    let (conn, host, seen) = &rest[0];
    assert_eq!(
        (host.as_str(), seen.api()),
        ("boot", ApiKey::Metadata),
        "metadata first"
    );
    let topics = seen.decode::<MetadataRequest>().topics.unwrap();
    assert_eq!(topics[0].name.as_deref(), Some("t"));
    h.reply(*conn, seen, &cluster_metadata());
    let rest = h.negotiate();
    let (conn, host, seen) = &rest[0];
    assert_eq!(
        (host.as_str(), seen.api()),
        ("b2", ApiKey::ListOffsets),
        "then the leader, broker 2"
    );
    h.reply(*conn, seen, &ListOffsetsResponse::default());
    assert!(h.client.take_response(id).unwrap().is_ok());
}

#[test]
fn refused_connection_backs_off_then_retries_the_unsent_request() {
    let mut h = Harness::new();
    let id = h.client.send(h.now, Route::Any, MetadataRequest::default());
    h.io();
    let (conn, _, _) = h.connecting.remove(0);
    h.client.handle_closed(h.now, conn, "connection refused");
    assert!(matches!(
        h.client.poll_event(),
        Some(Event::ConnectionFailed { node: -1, .. })
    ));
    h.io();
    assert!(h.connecting.is_empty(), "no reconnect before the backoff");
    let wake = h.client.poll_timeout().expect("a retry is scheduled");
    let delay = wake - h.now;
    assert!(
        delay >= Duration::from_millis(40) && delay <= Duration::from_millis(130),
        "{delay:?}"
    );
    h.advance(delay);
    let rest = h.negotiate();
    assert_eq!(rest[0].2.api(), ApiKey::Metadata);
    let (conn, _, seen) = &rest[0];
    h.reply(*conn, seen, &MetadataResponse::default());
    assert!(h.client.take_response(id).unwrap().is_ok());
}

/// Requests that wait out a node's reconnect backoff leave in arrival order: one routed
/// the moment the backoff ends, before the parked ones' timers are handled, goes out
/// after them, not first (an idempotent producer's batches would reach the broker out of
/// order).
#[test]
fn requests_waiting_out_a_reconnect_backoff_leave_in_arrival_order() {
    use crate::protocol::messages::describe_cluster::DescribeClusterRequest;
    use crate::protocol::messages::describe_configs::DescribeConfigsRequest;
    use crate::protocol::messages::list_groups::ListGroupsRequest;

    let mut h = Harness::with(&[
        ("reconnect.backoff.ms", "1000"),
        ("reconnect.backoff.max.ms", "1000"),
        ("retry.backoff.ms", "10"),
    ]);
    let first = h
        .client
        .send(h.now, Route::Broker(-1), DescribeClusterRequest::default());
    h.io();
    let (conn, _, _) = h.connecting.remove(0);
    h.client.handle_closed(h.now, conn, "connection refused");
    // The first request's own retry, then a second request: both wait for the backoff.
    h.advance(Duration::from_millis(20));
    let second = h
        .client
        .send(h.now, Route::Broker(-1), ListGroupsRequest::default());
    h.io();
    assert!(h.connecting.is_empty(), "no reconnect before the backoff");
    // The backoff ends; a third request is routed before the timers are handled.
    h.now = h.client.poll_timeout().expect("the backoff's end");
    let third = h
        .client
        .send(h.now, Route::Broker(-1), DescribeConfigsRequest::default());
    h.client.handle_timeout(h.now);
    let order: Vec<ApiKey> = h.negotiate().iter().map(|(_, _, s)| s.api()).collect();
    assert_eq!(
        order,
        [
            ApiKey::DescribeCluster,
            ApiKey::ListGroups,
            ApiKey::DescribeConfigs
        ],
        "{first:?} {second:?} {third:?}"
    );
}

#[test]
fn group_coordinator_lookups_are_batched_and_retried_while_loading() {
    let mut h = Harness::new();
    let hb = |g: &str| HeartbeatRequest {
        group_id: g.into(),
        ..Default::default()
    };
    let g = h
        .client
        .send(h.now, Route::GroupCoordinator("g".into()), hb("g"));
    let k = h
        .client
        .send(h.now, Route::GroupCoordinator("k".into()), hb("k"));
    let rest = h.negotiate();
    assert_eq!(rest.len(), 1, "one FindCoordinator for both groups");
    let (conn, _, seen) = &rest[0];
    assert_eq!(seen.api(), ApiKey::FindCoordinator);
    let lookup =
        seen.decode::<crate::protocol::messages::find_coordinator::FindCoordinatorRequest>();
    assert_eq!(
        (seen.version(), lookup.coordinator_keys),
        (6, vec!["g".to_string(), "k".to_string()])
    );
    let coordinator = |key: &str, error_code: i16, node_id: i32| Coordinator {
        key: key.into(),
        error_code,
        node_id,
        host: "coord".into(),
        port: 9093,
        ..Default::default()
    };
    // "g" is found at once; "k" is still loading (COORDINATOR_LOAD_IN_PROGRESS).
    let partial = FindCoordinatorResponse {
        coordinators: vec![coordinator("g", 0, 7), coordinator("k", 14, -1)],
        ..Default::default()
    };
    h.reply(*conn, seen, &partial);
    let rest = h.negotiate();
    assert_eq!(rest.len(), 1, "only the found group's request goes out");
    let (conn, host, seen) = &rest[0];
    assert_eq!(
        (
            host.as_str(),
            seen.api(),
            seen.decode::<HeartbeatRequest>().group_id
        ),
        ("coord", ApiKey::Heartbeat, "g".to_string())
    );
    h.reply(*conn, seen, &HeartbeatResponse::default());
    assert!(h.client.take_response(g).unwrap().is_ok());
    h.advance(Duration::from_millis(200));
    let again = h.written();
    let (conn, _, seen) = &again[0];
    let lookup =
        seen.decode::<crate::protocol::messages::find_coordinator::FindCoordinatorRequest>();
    assert_eq!(
        lookup.coordinator_keys,
        vec!["k".to_string()],
        "the loading key is asked again after a backoff"
    );
    h.reply(
        *conn,
        seen,
        &FindCoordinatorResponse {
            coordinators: vec![coordinator("k", 0, 7)],
            ..Default::default()
        },
    );
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    assert_eq!(seen.decode::<HeartbeatRequest>().group_id, "k");
    h.reply(*conn, seen, &HeartbeatResponse::default());
    assert_eq!(h.client.take_response(k).unwrap().unwrap().error_code, 0);
}

/// A coordinator lookup that gave up waiting for a route (its only broker in a reconnect
/// backoff longer than the request timeout) ends, and so do the requests waiting for it:
/// the next request for that coordinator starts a new lookup. The lookup used to stay
/// marked in flight, so every later request for the group waited for a lookup that never
/// came (found by `sim_adapters_groups`: a KIP-848 member answered "no coordinator known"
/// on every heartbeat for 40 s after the faults healed).
#[test]
fn a_coordinator_lookup_given_up_waiting_for_a_route_is_asked_again() {
    let mut h = Harness::with(&[
        ("request.timeout.ms", "1000"),
        ("reconnect.backoff.ms", "5000"),
        ("reconnect.backoff.max.ms", "5000"),
    ]);
    let hb = || HeartbeatRequest {
        group_id: "g".into(),
        ..Default::default()
    };
    let first = h
        .client
        .send(h.now, Route::GroupCoordinator("g".into()), hb());
    h.io();
    let (conn, _, _) = h.connecting.remove(0);
    h.client.handle_closed(h.now, conn, "connection refused");
    // The lookup waits out the bootstrap server's backoff until its give-up time.
    for _ in 0..4 {
        h.advance(Duration::from_millis(500));
    }
    let ended = h.client.take_response(first).expect("the heartbeat ended");
    assert!(ended.is_err(), "{ended:?}");
    // Past the backoff, a new request for the group asks for its coordinator again.
    h.advance(Duration::from_secs(5));
    let _second = h
        .client
        .send(h.now, Route::GroupCoordinator("g".into()), hb());
    let rest = h.negotiate();
    let apis: Vec<ApiKey> = rest.iter().map(|(_, _, s)| s.api()).collect();
    assert!(
        apis.contains(&ApiKey::FindCoordinator),
        "no new lookup, only {apis:?}"
    );
}

/// Found by sim_adapters_groups with 5 s of faults: every node had failed recently and
/// the one whose backoff ended first was a broker the metadata no longer listed. Each
/// request with any route went to it and failed at once with "no address", the
/// metadata refresh that would have cured it included: two members heartbeated into
/// that error for 40 s.
#[test]
fn any_route_skips_a_failed_broker_that_left_the_metadata() {
    let mut h = Harness::with(&[
        ("reconnect.backoff.ms", "1000"),
        ("reconnect.backoff.max.ms", "1000"),
    ]);
    let leader = Route::Leader {
        topic: "t".into(),
        partition: 0,
    };
    let _offsets = h.client.send(h.now, leader, list_offsets());
    let (boot, _, seen) = h.negotiate().remove(0);
    h.reply(boot, &seen, &cluster_metadata());
    h.io();
    let (to_2, host, _) = h.connecting.remove(0);
    assert_eq!(host, "b2", "the leader");
    // Broker 1, the controller, refuses a connection: the first to fail ...
    let _to_1 = h.client.send(h.now, Route::Broker(1), list_offsets());
    h.io();
    let (conn, host, _) = h.connecting.remove(0);
    assert_eq!(host, "b1");
    h.client.handle_closed(h.now, conn, "connection refused");
    // ... and the refresh that follows says the cluster has forgotten it.
    h.advance(Duration::from_millis(150));
    let (conn, _, seen) = h.written().remove(0);
    assert_eq!((conn, seen.api()), (boot, ApiKey::Metadata));
    let mut metadata = cluster_metadata();
    metadata.brokers.retain(|b| b.node_id != 1);
    metadata.controller_id = 2;
    h.reply(conn, &seen, &metadata);
    // Broker 2 and the bootstrap server fail too, later than broker 1 did (by more
    // than the backoff's jitter).
    h.advance(Duration::from_millis(400));
    h.client.handle_closed(h.now, to_2, "connection refused");
    h.advance(Duration::from_millis(10));
    h.client.handle_closed(h.now, boot, "connection reset");
    // Past the backoffs a request for any broker goes to one that has an address.
    h.advance(Duration::from_millis(1500));
    let again = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let ended = h.client.take_response(again);
    assert!(ended.is_none(), "failed instead of connecting: {ended:?}");
    let sent: Vec<(String, ApiKey)> = h
        .negotiate()
        .into_iter()
        .map(|(_, host, seen)| (host, seen.api()))
        .collect();
    assert!(
        sent.iter()
            .any(|(h, api)| h != "b1" && *api == ApiKey::Metadata),
        "the request was not sent: {sent:?}"
    );
}

#[test]
fn throttle_time_in_a_response_delays_the_next_request_on_that_connection() {
    let mut h = Harness::new();
    let first = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let rest = h.negotiate();
    let (conn, _, seen) = &rest[0];
    h.reply(
        *conn,
        seen,
        &MetadataResponse {
            throttle_time_ms: 500,
            ..cluster_metadata()
        },
    );
    assert!(h.client.take_response(first).is_some());
    let _second = h.client.send(h.now, Route::Any, MetadataRequest::default());
    assert!(h.written().is_empty(), "throttled");
    h.advance(Duration::from_millis(500));
    assert_eq!(h.written().len(), 1);
}

/// KIP-219: a request waiting for a free in-flight slot was written the instant the
/// throttled response that freed the slot arrived, before its throttle was applied
/// (found while checking throttles on the simulator, `sim_faults` F17).
#[test]
fn a_throttled_response_holds_back_the_request_queued_behind_it() {
    let mut h = Harness::with(&[("max.in.flight.requests.per.connection", "1")]);
    let first = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let second = h.client.send(h.now, Route::Any, MetadataRequest::default());
    let rest = h.negotiate();
    assert_eq!(rest.len(), 1, "one request in flight");
    let (conn, _, seen) = &rest[0];
    h.reply(
        *conn,
        seen,
        &MetadataResponse {
            throttle_time_ms: 500,
            ..cluster_metadata()
        },
    );
    assert!(h.client.take_response(first).is_some());
    assert!(
        h.written().is_empty(),
        "the queued request waits out the throttle"
    );
    h.advance(Duration::from_millis(499));
    assert!(h.written().is_empty(), "still throttled");
    h.advance(Duration::from_millis(1));
    let rest = h.written();
    assert_eq!(rest.len(), 1);
    let (conn, _, seen) = &rest[0];
    h.reply(*conn, seen, &cluster_metadata());
    assert!(h.client.take_response(second).is_some());
}

mod operations {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::admin::{AdminError, CreateTopics, DescribeCluster, NewTopic};
    use crate::protocol::messages::create_topics::response::CreatableTopicResult;
    use crate::protocol::messages::create_topics::{CreateTopicsRequest, CreateTopicsResponse};
    use crate::protocol::KafkaCode;

    fn topic_result(name: &str, code: KafkaCode) -> CreatableTopicResult {
        CreatableTopicResult {
            name: name.into(),
            error_code: code.0,
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }
    }

    #[test]
    fn create_topics_retries_only_the_topics_refused_with_not_controller() {
        let mut h = Harness::new();
        let id = h.client.start_op(
            h.now,
            CreateTopics::new([NewTopic::new("a", 1, 1), NewTopic::new("b", 1, 1)]),
        );
        let rest = h.negotiate();
        let (conn, _, seen) = &rest[0];
        assert_eq!(
            seen.api(),
            ApiKey::Metadata,
            "the controller is looked up first"
        );
        h.reply(*conn, seen, &cluster_metadata());
        let rest = h.negotiate();
        let (conn, host, seen) = &rest[0];
        assert_eq!((host.as_str(), seen.api()), ("b1", ApiKey::CreateTopics));
        assert_eq!(seen.decode::<CreateTopicsRequest>().topics.len(), 2);
        let first = CreateTopicsResponse {
            topics: vec![
                topic_result("a", KafkaCode::NONE),
                topic_result("b", KafkaCode::NOT_CONTROLLER),
            ],
            ..Default::default()
        };
        h.reply(*conn, seen, &first);
        assert!(h.client.take_op_output(id).is_none(), "b is still pending");
        assert!(h.written().is_empty(), "the retry waits for the backoff");
        h.advance(Duration::from_secs(2));
        let rest = h.negotiate();
        let (conn, _, seen) = &rest[0];
        let retried = seen.decode::<CreateTopicsRequest>();
        let names: Vec<&str> = retried.topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["b"], "only the refused topic is sent again");
        let second = CreateTopicsResponse {
            topics: vec![topic_result("b", KafkaCode::TOPIC_ALREADY_EXISTS)],
            ..Default::default()
        };
        h.reply(*conn, seen, &second);
        let events: Vec<Event> = std::iter::from_fn(|| h.client.poll_event()).collect();
        assert!(
            events.contains(&Event::OperationDone(id.untyped())),
            "{events:?}"
        );
        let out = h.client.take_op_output(id).unwrap().unwrap();
        assert!(out["a"].is_ok());
        assert_eq!(
            out["b"].as_ref().unwrap_err().code(),
            Some(KafkaCode::TOPIC_ALREADY_EXISTS)
        );
        assert_eq!(h.client.ops_running(), 0);
    }

    #[test]
    fn an_unanswered_operation_ends_at_its_deadline_and_its_late_response_is_dropped() {
        let mut h = Harness::new();
        let done = Arc::new(Mutex::new(None));
        let sink = done.clone();
        h.client.start_op_then(
            h.now,
            DescribeCluster::new().timeout(Duration::from_secs(5)),
            move |out| *sink.lock().unwrap() = Some(out),
        );
        let rest = h.negotiate();
        let (conn, _, seen) = &rest[0];
        assert_eq!(seen.api(), ApiKey::DescribeCluster);
        let deadline = h.now + Duration::from_secs(5);
        assert!(h.client.poll_timeout().is_some_and(|t| t <= deadline));
        h.advance(Duration::from_secs(5));
        assert_eq!(
            *done.lock().unwrap(),
            Some(Err(AdminError::Timeout {
                after: Duration::from_secs(5),
                last_cause: None
            }))
        );
        assert_eq!(h.client.ops_running(), 0);
        let late = crate::protocol::messages::describe_cluster::DescribeClusterResponse::default();
        h.reply(*conn, seen, &late);
        assert!(
            h.client.done.is_empty(),
            "nobody will take the late response"
        );
    }
}

#[test]
fn a_route_that_keeps_waiting_refreshes_metadata_at_most_once_per_retry_backoff() {
    let mut h = Harness::new();
    let id = h
        .client
        .send(h.now, Route::Broker(9), MetadataRequest::default());
    for round in 0..3 {
        let rest = h.negotiate();
        assert_eq!(rest.len(), 1, "round {round}: one metadata request");
        let (conn, _, seen) = &rest[0];
        assert_eq!(seen.api(), ApiKey::Metadata);
        h.reply(*conn, seen, &cluster_metadata()); // still no broker 9
        assert!(
            h.written().is_empty(),
            "round {round}: no refresh before the backoff"
        );
        h.advance(Duration::from_millis(1_100));
    }
    assert!(
        h.client.take_response(id).is_none(),
        "still waiting for broker 9"
    );
}

#[test]
fn a_refresh_asked_for_while_one_is_in_flight_is_sent_after_it_not_lost() {
    let mut h = Harness::new();
    h.client.request_metadata(h.now, ["a".to_string()]);
    let rest = h.negotiate();
    assert_eq!(rest.len(), 1);
    let (conn, _, first) = &rest[0];
    let names = |seen: &Seen| -> Vec<String> {
        let req: MetadataRequest = seen.decode();
        let mut n: Vec<String> = req
            .topics
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| t.name)
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(first), ["a"]);
    // A new topic is wanted while the first refresh is in flight: the answer to that
    // one cannot name it, so another refresh follows one backoff later.
    h.client.request_metadata(h.now, ["b".to_string()]);
    assert!(h.written().is_empty(), "one metadata request at a time");
    h.reply(*conn, first, &cluster_metadata());
    assert!(h.written().is_empty(), "not before the backoff");
    h.advance(Duration::from_millis(150));
    let again = h.written();
    assert_eq!(again.len(), 1, "the refresh asked for in flight is sent");
    assert_eq!(names(&again[0].2), ["a", "b"]);
    // Once answered with nothing more wanted, the next refresh is metadata.max.age away.
    h.reply(again[0].0, &again[0].2, &cluster_metadata());
    h.advance(Duration::from_secs(60));
    assert!(
        h.written().is_empty(),
        "no refresh before metadata.max.age.ms"
    );
}

mod failures;
mod machines;
mod setup_timeout;

/// A request routed to a node in its reconnect backoff waits at most its own timeout:
/// past it, it ends (naming the backoff). Before the fix its give-up time was re-armed
/// in the past on every pass while the backoff (longer than the request's timeout)
/// lasted, and `handle_timeout` popped and re-armed that timer forever.
#[test]
fn a_request_waiting_out_a_longer_reconnect_backoff_ends_at_its_timeout() {
    use crate::protocol::messages::describe_cluster::DescribeClusterRequest;

    let mut h = Harness::with(&[
        ("reconnect.backoff.ms", "5000"),
        ("reconnect.backoff.max.ms", "5000"),
        ("retries", "0"),
    ]);
    let first = h
        .client
        .send(h.now, Route::Broker(-1), DescribeClusterRequest::default());
    h.io();
    let (conn, _, _) = h.connecting.remove(0);
    h.client.handle_closed(h.now, conn, "connection refused");
    assert!(
        h.client.take_response(first).is_some(),
        "no retries: it failed"
    );
    let opts = RequestOptions::default().timeout(Duration::from_millis(1000));
    let id = h.client.send_with(
        h.now,
        Route::Broker(-1),
        DescribeClusterRequest::default(),
        opts,
    );
    let mut client = h.client;
    let at = h.now + Duration::from_millis(1500);
    // Before the fix this call never returned (a timer re-armed in the past forever): a
    // regression hangs the test run here. The core spawns nothing, so no watchdog.
    client.handle_timeout(at);
    match client.take_response(id) {
        Some(Err(RequestError::NoRoute(why))) => assert!(why.contains("backoff"), "{why}"),
        other => panic!("the request should end at its timeout: {other:?}"),
    }
    assert!(
        client.poll_timeout().is_none_or(|t| t > at),
        "no timer left in the past"
    );
}
