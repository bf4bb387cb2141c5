//! Router scaling, no broker: the cost of one `handle_received` + drain (poll_io,
//! poll_transmit, poll_event, poll_timeout) while 10, 1,000 or 10,000 requests are in
//! flight on one connection. Each step answers the oldest request and sends one more, so
//! the number in flight stays constant. Requests are owned by the application (events)
//! or by a machine (owner-routed wake-ups). A flat ns/step across the rows shows that
//! nothing on the path scans every request.
//!
//! Run: `cargo run --release -p kafka-bench --bin core_scale` (`KAFKA_BENCH_STEPS=N`).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;

use kafka_core::client::{Client, ConnId, Event, IoCommand, OpContext, Operation, RequestId};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::api_versions::response::ApiVersion;
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;
use kafka_core::protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Encodable};

/// Frames the client wrote: (api key, version, correlation id) of each.
fn written(out: &[u8]) -> Vec<(i16, i16, i32)> {
    let mut seen = Vec::new();
    let mut at = 0;
    while at + 12 <= out.len() {
        let size = i32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        let f = &out[at + 4..];
        let key = i16::from_be_bytes([f[0], f[1]]);
        let version = i16::from_be_bytes([f[2], f[3]]);
        let corr = i32::from_be_bytes([f[4], f[5], f[6], f[7]]);
        seen.push((key, version, corr));
        at += 4 + size;
    }
    seen
}

fn frame<M: Encodable>(api: ApiKey, version: i16, corr: i32, body: &M) -> Vec<u8> {
    let mut f = vec![0; 4];
    let header = ResponseHeader {
        correlation_id: corr,
        ..Default::default()
    };
    header
        .encode(&mut f, api.response_header_version(version))
        .unwrap();
    body.encode(&mut f, version).unwrap();
    let n = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&n.to_be_bytes());
    f
}

fn versions() -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_keys: ApiKey::ALL
            .iter()
            .map(|k| ApiVersion {
                api_key: *k as i16,
                min_version: k.versions().min,
                max_version: k.supported_versions().max,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A machine that keeps `n` heartbeats outstanding.
struct Keeper {
    n: usize,
    out: VecDeque<RequestId<HeartbeatRequest>>,
    answered: u64,
}

impl Operation for Keeper {
    type Output = ();
    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<()> {
        while let Some(&id) = self.out.front() {
            match cx.take_response(id) {
                Some(r) => {
                    r.expect("answered");
                    self.answered += 1;
                    self.out.pop_front();
                }
                None => break,
            }
        }
        while self.out.len() < self.n {
            self.out
                .push_back(cx.send(Route::Broker(-1), HeartbeatRequest::default()));
        }
        None
    }
}

struct Rig {
    client: Client,
    conn: ConnId,
    buf: Vec<u8>,
    /// Correlation ids written and not yet answered, oldest first.
    open: VecDeque<(i16, i32)>,
}

impl Rig {
    fn new(in_flight: usize) -> Rig {
        let config = ClientConfig::from_pairs([
            ("bootstrap.servers", "boot:9092"),
            (
                "max.in.flight.requests.per.connection",
                &in_flight.to_string(),
            ),
        ])
        .unwrap();
        let mut client = Client::new(config, [3; 32]).unwrap();
        let now = Instant::now();
        // Open the bootstrap connection with one request, and negotiate.
        let _ = client.send(now, Route::Broker(-1), HeartbeatRequest::default());
        let conn = match client.poll_io() {
            Some(IoCommand::Connect { conn, .. }) => conn,
            other => panic!("{other:?}"),
        };
        client.handle_connected(now, conn);
        let mut rig = Rig {
            client,
            conn,
            buf: Vec::new(),
            open: VecDeque::new(),
        };
        rig.transmit();
        let (v, corr) = rig.open.pop_front().unwrap();
        let answer = frame(ApiKey::ApiVersions, v, corr, &versions());
        rig.client.handle_received(now, conn, &answer);
        rig.transmit();
        rig
    }

    fn transmit(&mut self) {
        self.buf.clear();
        self.client
            .poll_transmit(Instant::now(), self.conn, &mut self.buf);
        for (_, v, corr) in written(&self.buf) {
            self.open.push_back((v, corr));
        }
    }

    /// Answers the oldest request, then drains as an adapter does.
    fn step(&mut self, now: Instant, answer: &mut Vec<u8>) -> usize {
        let (v, corr) = self.open.pop_front().expect("a request in flight");
        answer.clear();
        answer.extend_from_slice(&frame(
            ApiKey::Heartbeat,
            v,
            corr,
            &HeartbeatResponse::default(),
        ));
        self.client.handle_received(now, self.conn, answer);
        while self.client.poll_io().is_some() {}
        self.transmit();
        let mut events = 0;
        while let Some(e) = self.client.poll_event() {
            if let Event::Response(_) = e {
                events += 1;
            }
        }
        black_box(self.client.poll_timeout());
        events
    }
}

fn measure(in_flight: usize, machine: bool, steps: usize) -> f64 {
    let mut rig = Rig::new(in_flight);
    let now = Instant::now();
    let mut ids = VecDeque::new();
    if machine {
        rig.client.start_op(
            now,
            Keeper {
                n: in_flight,
                out: VecDeque::new(),
                answered: 0,
            },
        );
    } else {
        for _ in 1..in_flight {
            ids.push_back(
                rig.client
                    .send(now, Route::Broker(-1), HeartbeatRequest::default()),
            );
        }
    }
    rig.transmit();
    assert!(
        rig.open.len() >= in_flight - 1,
        "{} in flight",
        rig.open.len()
    );
    let mut answer = Vec::new();
    let start = Instant::now();
    for _ in 0..steps {
        let events = rig.step(now, &mut answer);
        if !machine {
            for _ in 0..events {
                let ready = ids.pop_front().expect("oldest first");
                black_box(rig.client.take_response(ready));
                ids.push_back(
                    rig.client
                        .send(now, Route::Broker(-1), HeartbeatRequest::default()),
                );
            }
            rig.transmit();
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / steps as f64;
    assert!(
        rig.client.requests_pending() >= in_flight - 1,
        "the load stayed constant"
    );
    ns
}

fn main() {
    let steps: usize = std::env::var("KAFKA_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    println!("| owner | in flight | ns per handle_received + drain (best of 3) |");
    println!("|---|---:|---:|");
    for machine in [false, true] {
        for n in [10, 1_000, 10_000] {
            let best = (0..3)
                .map(|_| measure(n, machine, steps))
                .fold(f64::INFINITY, f64::min);
            let owner = if machine { "machine" } else { "application" };
            println!("| {owner} | {n} | {best:.0} |");
        }
    }
}
