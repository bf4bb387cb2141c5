//! A scripted cluster for operation tests: brokers `b1` (node 1) and `b2` (node 2)
//! behind bootstrap `boot`, answering from a closure on a virtual clock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::admin::Operation;
use crate::client::{Client, ConnId, IoCommand};
use crate::config::ClientConfig;
use crate::protocol::messages::find_coordinator::response::Coordinator;
use crate::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use crate::protocol::messages::metadata::response::MetadataResponseBroker;
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::{ApiKey, Message};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

/// Brokers `b1` (node 1) and `b2` (node 2) behind bootstrap `boot`, scripted by a closure
/// that answers every request but ApiVersions; time moves when nothing is written.
pub(crate) struct Cluster {
    pub(crate) client: Client,
    pub(crate) now: Instant,
    open: BTreeMap<ConnId, String>,
}

impl Cluster {
    pub(crate) fn new() -> Self {
        Self::with(&[])
    }

    /// With extra config keys (they override the defaults here).
    pub(crate) fn with(extra: &[(&str, &str)]) -> Self {
        let base = [
            ("bootstrap.servers", "boot:9092"),
            ("default.api.timeout.ms", "5000"),
        ];
        let config = ClientConfig::from_pairs(base.iter().chain(extra).copied()).unwrap();
        Cluster {
            client: Client::new(config, [7; 32]).unwrap(),
            now: origin(),
            open: BTreeMap::new(),
        }
    }

    pub(crate) fn run<O: Operation>(
        &mut self,
        op: O,
        mut answer: impl FnMut(&str, &Seen) -> Vec<u8>,
    ) -> O::Output {
        let id = self.client.start_op(self.now, op);
        for _ in 0..500 {
            if let Some(out) = self.client.take_op_output(id) {
                return out;
            }
            while let Some(cmd) = self.client.poll_io() {
                match cmd {
                    IoCommand::Connect { conn, host, .. } => {
                        self.open.insert(conn, host);
                        self.client.handle_connected(self.now, conn);
                    }
                    IoCommand::Close { conn } => {
                        self.open.remove(&conn);
                    }
                }
            }
            let mut wrote = false;
            let conns: Vec<(ConnId, String)> =
                self.open.iter().map(|(c, h)| (*c, h.clone())).collect();
            for (conn, host) in conns {
                let mut out = Vec::new();
                self.client.poll_transmit(self.now, conn, &mut out);
                for seen in parse_requests(out) {
                    wrote = true;
                    let frame = if seen.api() == ApiKey::ApiVersions {
                        reply(&seen, &broker_versions())
                    } else {
                        answer(&host, &seen)
                    };
                    self.client.handle_received(self.now, conn, &frame);
                }
            }
            // Time moves on every round, slowly while requests flow.
            self.now += Duration::from_millis(if wrote { 1 } else { 50 });
            self.client.handle_timeout(self.now);
        }
        panic!("operation did not finish");
    }
}

pub(crate) fn reply<M: Message>(to: &Seen, body: &M) -> Vec<u8> {
    response_frame(to, body, to.version())
}

pub(crate) fn two_brokers() -> MetadataResponse {
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
        ..Default::default()
    }
}

/// FindCoordinator answer: every key on node 1.
pub(crate) fn coordinator_b1(seen: &Seen) -> Vec<u8> {
    coordinator_on(seen, 1, "b1")
}

/// FindCoordinator answer: every key on `node` at `host`.
pub(crate) fn coordinator_on(seen: &Seen, node: i32, host: &str) -> Vec<u8> {
    let req: FindCoordinatorRequest = seen.decode();
    reply(
        seen,
        &FindCoordinatorResponse {
            coordinators: req
                .coordinator_keys
                .iter()
                .map(|k| Coordinator {
                    key: k.clone(),
                    node_id: node,
                    host: host.into(),
                    port: 9092,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
    )
}
