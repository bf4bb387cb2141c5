//! Seed scripts for the machine targets (happy exchanges a fuzzer mutates from), and
//! the smoke test that runs every seed and a few thousand pseudo-random inputs through
//! each driver. `cd fuzz && WRITE_FUZZ_SEEDS=1 cargo test --lib seeds` rewrites
//! `corpus/machine_*/seed-*`.

use crate::{client, connection, consumer, net::net_op, producer};

/// A script of action bytes.
#[derive(Debug, Default, Clone)]
pub struct Script(pub Vec<u8>);

impl Script {
    /// Appends raw bytes.
    pub fn b(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
    /// Appends `n` copies of `code` followed by `args` each.
    pub fn rep(mut self, n: usize, code: u8, args: &[u8]) -> Self {
        for _ in 0..n {
            self.0.push(code);
            self.0.extend_from_slice(args);
        }
        self
    }
}

/// Network actions with their argument bytes: answer (socket 0, built, defaults).
const ANSWER: &[u8] = &[net_op::ANSWER, 0, 0];
/// A time jump to the next deadline.
const NEXT: &[u8] = &[net_op::TIME, 2];

fn answers(s: Script, n: usize) -> Script {
    let mut s = s;
    for _ in 0..n {
        s = s.b(ANSWER).b(&[0; 8]);
    }
    s
}

/// The connection seeds: a plain and a SASL handshake with requests answered whole,
/// in chunks and out of order; one negotiating with a Kafka-encoded ApiVersions v3
/// answer from `vectors/messages` (delivered raw).
pub fn connection_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use connection::op;
    let plain = Script::default()
        .b(&[3, 0]) // max.in.flight 4, no SASL
        .b(&[op::ANSWER, 0])
        .b(&[0; 8])
        .rep(3, op::SUBMIT, &[0, 0, 0])
        .rep(3, op::ANSWER, &[0, 0, 0, 0, 0])
        .b(&[op::SUBMIT, 0, 0, 1, op::ANSWER_HELD, 0, 0, 0, 0])
        .b(&[op::DELIVER, 7, op::DELIVER, 255])
        .b(&[op::TIME, 2, op::SUBMIT, 0, 0, 2]);
    let sasl = Script::default()
        .b(&[3, 3])
        .rep(3, op::ANSWER, &[0, 0, 0, 0, 0, 0, 0, 0])
        .rep(2, op::SUBMIT, &[0, 0, 0])
        .b(&[op::LOSE, op::ANSWER, 0, 0, 0, 0, op::TIME, 2]);
    let mut vector = Script::default().b(&[0, 0, op::RAW]);
    // ApiVersionsResponse v3 (Kafka's encoding), framed with correlation id 0.
    let body = [0x00u8, 0x01, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00];
    let mut frame = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&0i32.to_be_bytes());
    frame.extend_from_slice(&body);
    vector.0.push(frame.len() as u8);
    vector = vector.b(&frame).b(&[op::TIME, 2]);
    vec![("plain", plain.0), ("sasl", sasl.0), ("vector", vector.0)]
}

/// Seeds of the router: metadata learned, requests on each kind of route answered.
pub fn client_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use client::app_op;
    let mut s = Script::default().b(&[2]);
    for kind in 0..5u8 {
        s = s.b(&[app_op::SEND, kind, 1, 1]);
        s = answers(s, 3);
    }
    let s = s.b(NEXT).b(&[net_op::CLOSE, 0, 0]).b(&[app_op::SEND, 0]);
    vec![("routes", answers(s, 3).0)]
}

/// Seeds of the producer: records sent to each partition and acknowledged, a flush, a
/// close.
pub fn producer_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use producer::app_op;
    let mut s = Script::default().b(&[5, 0, 0, 10, 0, 0, 2, 0, 0, 0]);
    for p in 0..3u8 {
        s = s.b(&[app_op::SEND, 2, 20, b'v', 0, 1, p]);
        s = answers(s, 2);
    }
    s = s.b(NEXT);
    s = answers(s, 4).b(&[app_op::FLUSH]).b(NEXT);
    s = answers(s, 3).b(&[app_op::CLOSE, 0]);
    vec![("acked", answers(s, 3).0)]
}

/// A transaction: init, begin, records, offsets, commit.
pub fn transaction_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use producer::app_op;
    let mut s = Script::default().b(&[5, 0, 0, 10, 0, 0, 2, 0, 0, 0]);
    s = answers(s.b(&[app_op::TXN, 0]), 4);
    s = s.b(&[app_op::TXN, 1]);
    for p in 0..2u8 {
        s = s.b(&[app_op::SEND, 2, 20, b'v', 0, 1, p]);
        s = answers(s, 3);
    }
    s = answers(s.b(&[app_op::TXN, 2]), 4);
    s = answers(s.b(&[app_op::TXN, 3]).b(NEXT), 6);
    vec![("commit", s.0)]
}

/// The consumer: partitions assigned, offsets reset, records fetched and polled.
pub fn consumer_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use consumer::app_op;
    let mut s = Script::default().b(&[8, 4, 0, 0]).b(&[app_op::ASSIGN, 0, 0, 0, 0, 1]);
    s = answers(s, 4);
    for _ in 0..3 {
        s = s.b(&[net_op::ANSWER, 0, 0, 0, 0, 0, 2, 3, 3, 1, 1, 1, 1]);
        s = answers(s, 2).b(&[app_op::POLL]).b(NEXT);
    }
    vec![("fetched", s.b(&[app_op::CLOSE]).0)]
}

#[cfg(test)]
mod tests {
    use super::*;

    type Seeds = fn() -> Vec<(&'static str, Vec<u8>)>;
    const TARGETS: [(&str, Seeds, fn(&[u8])); 5] = [
        ("machine_connection", connection_seeds, connection::run),
        ("machine_client", client_seeds, client::run),
        ("machine_producer", producer_seeds, producer::run),
        ("machine_transactions", transaction_seeds, producer::run_transactional),
        ("machine_consumer", consumer_seeds, consumer::run),
    ];

    #[test]
    fn seeds_and_random_inputs_keep_every_invariant() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let runs: usize = std::env::var("FUZZ_SMOKE_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300);
        for (name, seeds, run) in TARGETS {
            for (seed, data) in seeds() {
                if std::env::var("WRITE_FUZZ_SEEDS").is_ok() {
                    let dir = format!("corpus/{name}");
                    std::fs::create_dir_all(&dir).expect("corpus dir");
                    std::fs::write(format!("{dir}/seed-{seed}"), &data).expect("seed");
                }
                run(&data);
            }
            for i in 0..runs {
                let len = 16 + (i * 37) % 2000;
                let data: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                let result = std::panic::catch_unwind(|| run(&data));
                if result.is_err() {
                    let path = format!("/tmp/{name}-smoke-{i}");
                    std::fs::write(&path, &data).expect("write failing input");
                    panic!("{name}: random input {i} failed, saved to {path}");
                }
            }
        }
    }
}
