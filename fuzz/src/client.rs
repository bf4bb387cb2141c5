//! `machine_client`: the [`Client`](kafka_core::client::Client) router with three
//! brokers and two bootstrap servers. The application sends requests on every kind of
//! route (any broker, a broker by id, a partition leader, the controller, a group
//! coordinator), discards some, invalidates leaders and coordinators and asks for
//! metadata, between the network actions of [`crate::net`]. Checked: every request
//! ends exactly once (one `Event::Response`, one `take_response`), none after it was
//! discarded, and with a silent cluster all end within their retries' bound.

use std::time::Instant;

use kafka_core::client::{Event, RequestId};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::describe_cluster::DescribeClusterRequest;
use kafka_core::protocol::messages::describe_groups::DescribeGroupsRequest;
use kafka_core::protocol::messages::list_offsets::request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use kafka_core::protocol::messages::list_offsets::ListOffsetsRequest;
use kafka_core::protocol::messages::metadata::MetadataRequest;

use crate::input::{Input, STEP};
use crate::net::{net_op, Net, ATTEMPT_BOUND};

/// The application's opcodes (after the network's).
pub mod app_op {
    use super::net_op;
    /// Send a request.
    pub const SEND: u8 = net_op::COUNT;
    /// Discard a request's response.
    pub const DISCARD: u8 = net_op::COUNT + 1;
    /// Invalidate a leader, a coordinator, or ask for metadata.
    pub const INVALIDATE: u8 = net_op::COUNT + 2;
    /// How many opcodes there are in all.
    pub const COUNT: u8 = net_op::COUNT + 3;
}

const MAX_STEPS: usize = 3000;

#[derive(Clone, Copy)]
enum Id {
    Metadata(RequestId<MetadataRequest>),
    ListOffsets(RequestId<ListOffsetsRequest>),
    Groups(RequestId<DescribeGroupsRequest>),
    Cluster(RequestId<DescribeClusterRequest>),
}

struct Sent {
    id: Id,
    at: Instant,
    done: bool,
    discarded: bool,
    ok: bool,
}

/// Runs one input; returns how many requests ended with a response (a seed's depth).
pub fn run(data: &[u8]) -> usize {
    let mut whole = Input::new(data);
    let mut input = whole.chunk(STEP);
    let in_flight = (1 + input.below(5)).to_string();
    let (mut net, _) = Net::new(&[("max.in.flight.requests.per.connection", in_flight)]);
    let mut sent: Vec<Sent> = Vec::new();
    let mut steps = 0;
    net.drain(&mut input);
    while !whole.is_empty() && steps < MAX_STEPS {
        let mut input = whole.chunk(STEP);
        let code = input.u8() % app_op::COUNT;
        net.trace(&format!("action {code}"));
        match code {
            app_op::SEND => send(&mut net, &mut input, &mut sent),
            app_op::DISCARD => {
                let open: Vec<usize> = (0..sent.len()).filter(|&i| !sent[i].done).collect();
                if !open.is_empty() {
                    let i = open[input.below(open.len())];
                    discard(&mut net, sent[i].id);
                    sent[i].discarded = true;
                    sent[i].done = true;
                }
            }
            app_op::INVALIDATE => match input.u8() % 3 {
                0 => net
                    .client
                    .invalidate_leader(net.now, "t", input.below(3) as i32),
                1 => net.client.invalidate_coordinator("g"),
                _ => net.client.request_metadata(net.now, ["u".to_string()]),
            },
            _ => net.step(code, &mut input),
        }
        net.drain(&mut input);
        collect(&mut net, &mut sent);
        steps += 1;
    }
    net.go_silent();
    let silent_from = net.now.max(net.throttled_until);
    // Each request: its first attempt and two retries, each within the attempt bound.
    let bound = silent_from + ATTEMPT_BOUND * 3;
    for _ in 0..10_000 {
        collect(&mut net, &mut sent);
        if sent.iter().all(|s| s.done) {
            break;
        }
        if !net.jump() {
            break;
        }
        assert!(
            net.now <= bound || sent.iter().all(|s| s.done),
            "requests still running {:?} after the cluster went silent (bound {:?}): {:?}",
            net.now - silent_from,
            bound - silent_from,
            net.client
        );
    }
    collect(&mut net, &mut sent);
    let open: Vec<_> = sent
        .iter()
        .filter(|s| !s.done)
        .map(|s| s.at - net.origin)
        .collect();
    assert!(
        open.is_empty(),
        "requests sent at {open:?} never ended with a silent cluster: {:?}",
        net.client
    );
    sent.iter().filter(|s| s.ok).count()
}

fn send(net: &mut Net, input: &mut Input, sent: &mut Vec<Sent>) {
    let now = net.now;
    let c = &mut net.client;
    let id = match input.u8() % 5 {
        0 => Id::Metadata(c.send(now, Route::Any, MetadataRequest::default())),
        1 => {
            let route = Route::Broker(input.below(5) as i32 - 1);
            Id::Metadata(c.send(now, route, MetadataRequest::default()))
        }
        2 => {
            let partition = input.below(4) as i32;
            let req = ListOffsetsRequest {
                replica_id: -1,
                topics: vec![ListOffsetsTopic {
                    name: "t".into(),
                    partitions: vec![ListOffsetsPartition {
                        partition_index: partition,
                        timestamp: -1,
                        current_leader_epoch: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let route = Route::Leader {
                topic: "t".into(),
                partition,
            };
            Id::ListOffsets(c.send(now, route, req))
        }
        3 => {
            let req = DescribeGroupsRequest {
                groups: vec!["g".into()],
                ..Default::default()
            };
            Id::Groups(c.send(now, Route::GroupCoordinator("g".into()), req))
        }
        _ => Id::Cluster(c.send(now, Route::Controller, DescribeClusterRequest::default())),
    };
    sent.push(Sent {
        id,
        at: now,
        done: false,
        discarded: false,
        ok: false,
    });
}

fn discard(net: &mut Net, id: Id) {
    let c = &mut net.client;
    match id {
        Id::Metadata(id) => c.discard_response(id),
        Id::ListOffsets(id) => c.discard_response(id),
        Id::Groups(id) => c.discard_response(id),
        Id::Cluster(id) => c.discard_response(id),
    }
}

/// Takes every finished response: each exactly once, never one discarded.
fn collect(net: &mut Net, sent: &mut [Sent]) {
    while let Some(e) = net.events.pop_front() {
        let Event::Response(ready) = e else {
            continue;
        };
        let s = sent
            .iter_mut()
            .find(|s| match s.id {
                Id::Metadata(id) => ready.is(id),
                Id::ListOffsets(id) => ready.is(id),
                Id::Groups(id) => ready.is(id),
                Id::Cluster(id) => ready.is(id),
            })
            .expect("a response for a request never sent");
        assert!(!s.discarded, "a response for a discarded request");
        assert!(!s.done, "a request finished twice");
        let c = &mut net.client;
        let (first, second) = match s.id {
            Id::Metadata(id) => taken(c.take_response(id), c.take_response(id)),
            Id::ListOffsets(id) => taken(c.take_response(id), c.take_response(id)),
            Id::Groups(id) => taken(c.take_response(id), c.take_response(id)),
            Id::Cluster(id) => taken(c.take_response(id), c.take_response(id)),
        };
        assert!(
            first.is_some() && !second,
            "take_response gave {first:?}, then {second}"
        );
        s.ok = first == Some(true);
        s.done = true;
    }
}

/// The first `take_response` (whether it was a response), and whether a second gave one.
fn taken<T, E>(first: Option<Result<T, E>>, second: Option<Result<T, E>>) -> (Option<bool>, bool) {
    (first.map(|r| r.is_ok()), second.is_some())
}
