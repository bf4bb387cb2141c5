//! Seed scripts for the machine targets (happy exchanges a fuzzer mutates from), and
//! the smoke test that runs every seed and a few thousand pseudo-random inputs through
//! each driver. `cd fuzz && WRITE_FUZZ_SEEDS=1 cargo test --lib seeds` rewrites
//! `corpus/machine_*/seed-*`.

use crate::input::STEP;
use crate::{client, connection, consumer, group, net::net_op, producer, share};

/// A script: the settings chunk, then one chunk per action (see [`STEP`]).
#[derive(Debug, Default, Clone)]
pub struct Script(pub Vec<u8>);

impl Script {
    /// A script whose settings chunk starts with `settings`.
    pub fn new(settings: &[u8]) -> Self {
        Script(Vec::new()).chunk(settings)
    }
    fn chunk(mut self, bytes: &[u8]) -> Self {
        let mut c = bytes.to_vec();
        c.resize(STEP, 0);
        self.0.extend_from_slice(&c);
        self
    }
    /// One action: its opcode, then its argument bytes (zeros after).
    pub fn step(self, code: u8, args: &[u8]) -> Self {
        let mut c = vec![code];
        c.extend_from_slice(args);
        self.chunk(&c)
    }
    /// `n` times the same action.
    pub fn rep(mut self, n: usize, code: u8, args: &[u8]) -> Self {
        for _ in 0..n {
            self = self.step(code, args);
        }
        self
    }
}

/// Answers to the oldest request on the first socket, built from zeros (no errors,
/// leaders on broker 1, offsets from 0, one record per partition).
fn answers(s: Script, n: usize) -> Script {
    s.rep(n, net_op::ANSWER, &[])
}

/// A time jump to the next deadline.
fn next(s: Script) -> Script {
    s.step(net_op::TIME, &[2])
}

/// The connection seeds: a plain and a SASL handshake with requests answered whole,
/// in chunks, in a burst; one negotiating with a Kafka-encoded ApiVersions v3 sample
/// from `vectors/messages` delivered raw (its error code 1 refuses the negotiation).
pub fn connection_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use connection::op;
    let plain = Script::new(&[3, 0]) // max.in.flight 4, no SASL
        .step(op::ANSWER, &[])
        .rep(3, op::SUBMIT, &[0, 0, 0])
        .rep(3, op::ANSWER, &[])
        .step(op::SUBMIT, &[0, 0, 1])
        .step(op::ANSWER_HELD, &[])
        .step(op::DELIVER, &[7])
        .step(op::DELIVER, &[255])
        .step(op::TIME, &[2])
        .step(op::SUBMIT, &[0, 0, 2]);
    let sasl = Script::new(&[3, 3])
        .rep(3, op::ANSWER, &[])
        .rep(2, op::SUBMIT, &[0, 0, 0])
        .rep(2, op::ANSWER, &[])
        .step(op::SUBMIT, &[])
        .step(op::TIME, &[2]);
    // ApiVersionsResponse v3 (case 0 of vectors/messages/018-ApiVersions.jsonl),
    // framed with correlation id 0.
    let body = [0x00u8, 0x01, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00];
    let mut raw = vec![(body.len() + 8) as u8];
    raw.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    raw.extend_from_slice(&0i32.to_be_bytes());
    raw.extend_from_slice(&body);
    let vector = Script::new(&[0, 0])
        .step(op::RAW, &raw)
        .step(op::TIME, &[2]);
    vec![("plain", plain.0), ("sasl", sasl.0), ("vector", vector.0)]
}

/// Seeds of the router: metadata learned, requests on each kind of route answered,
/// a socket closed.
pub fn client_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use client::app_op;
    let mut s = Script::new(&[2]);
    for send in [&[0][..], &[1, 2], &[2, 1], &[3], &[4]] {
        s = answers(s.step(app_op::SEND, send), 3);
    }
    let s = next(s).step(net_op::CLOSE, &[]).step(app_op::SEND, &[0]);
    vec![("routes", answers(s, 3).0)]
}

/// Producer settings: linger 5 ms, batch.size 200 + 1000, buffer.memory 4096 + 2560,
/// max.in.flight 3, max.request.size 1000 + 2560, idempotent.
const PRODUCER: &[u8] = &[5, 3, 232, 10, 0, 2, 10, 0, 0];

fn records(mut s: Script, n: u8) -> Script {
    for p in 0..n {
        // Topic t, 20 bytes of 'v', explicit partition p.
        s = answers(
            s.step(producer::app_op::SEND, &[2, 0, 20, b'v', 0, 1, p % 3]),
            2,
        );
    }
    s
}

/// Seeds of the producer: records sent to each partition and acknowledged, a flush, a
/// close.
pub fn producer_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use producer::app_op;
    let s = records(Script::new(PRODUCER), 1);
    let s = answers(next(answers(s, 3)), 2);
    let s = records(s, 6);
    let s = next(answers(s.step(app_op::FLUSH, &[]), 6));
    vec![("acked", answers(s.step(app_op::CLOSE, &[]), 3).0)]
}

/// A transaction: init, begin, records, offsets, commit.
pub fn transaction_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use producer::app_op;
    let s = answers(Script::new(PRODUCER).step(app_op::TXN, &[0]), 4);
    let s = records(s.step(app_op::TXN, &[1]), 3);
    let s = answers(next(answers(s, 3)), 3);
    let s = answers(s.step(app_op::TXN, &[2]), 4);
    let s = next(answers(s.step(app_op::TXN, &[3]), 8));
    vec![("commit", s.0)]
}

/// The consumer: partitions assigned, offsets reset, records fetched and polled.
pub fn consumer_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use consumer::app_op;
    // 9 KiB buffered, five records a poll, earliest, read_uncommitted; t-0..2 and u-0.
    let mut s = Script::new(&[8, 4, 0, 0]).step(app_op::ASSIGN, &[0, 0, 0, 0, 1]);
    s = answers(s, 4);
    for _ in 0..3 {
        s = next(answers(s, 3).step(app_op::POLL, &[]));
    }
    vec![("fetched", s.step(app_op::CLOSE, &[]).0)]
}

/// Answers spread over the first three sockets with requests waiting, `n` rounds.
fn spread(mut s: Script, n: usize) -> Script {
    for i in 0..n {
        s = s.step(net_op::ANSWER, &[(i % 3) as u8]);
    }
    s
}

/// A member's life: subscribed, joined, assigned, records polled and committed.
fn member(settings: &[u8], subscribe: &[u8]) -> Vec<u8> {
    use group::app_op;
    let mut s = spread(Script::new(settings).step(app_op::SUBSCRIBE, subscribe), 12);
    for _ in 0..6 {
        s = spread(next(s), 6).step(app_op::POLL, &[]);
    }
    let s = spread(s.step(app_op::COMMIT, &[0]), 4);
    spread(s.step(app_op::CLOSE, &[]), 4).0
}

/// The group member: classic (range, then cooperative-sticky as a static member) and
/// KIP-848, each joined, assigned, polling and committing; one by a pattern.
pub fn group_seeds() -> Vec<(&'static str, Vec<u8>)> {
    // kbytes 9, protocol, assignor, heartbeat 100 ms, session 3 s, max.poll 9 s,
    // auto-commit on, interval 200 ms, 5 records a poll, earliest, read_uncommitted,
    // static membership.
    let classic = [8, 0, 0, 0, 0, 7, 0, 0, 4, 0, 0, 0];
    let cooperative = [8, 0, 3, 0, 0, 7, 0, 0, 4, 0, 0, 1];
    let kip848 = [8, 1, 0, 0, 0, 7, 0, 0, 4, 0, 0, 0];
    vec![
        ("classic", member(&classic, &[0, 0, 0, 1])),
        ("cooperative-static", member(&cooperative, &[0, 0, 0, 1])),
        ("kip848", member(&kip848, &[0, 0, 0, 1])),
        ("kip848-pattern", member(&kip848, &[3, 0])),
    ]
}

/// The share consumer: subscribed, assigned, records handed out and acknowledged
/// (implicitly; explicitly with accept, release, reject and renew), committed, closed.
pub fn share_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use share::app_op;
    let base = |settings: &[u8]| {
        spread(
            Script::new(settings).step(app_op::SUBSCRIBE, &[0, 0, 1]),
            10,
        )
    };
    let mut implicit = base(&[0, 4]);
    for _ in 0..4 {
        implicit = spread(next(implicit), 4).step(app_op::POLL, &[]);
    }
    let implicit = spread(implicit.step(app_op::COMMIT, &[]), 4).step(app_op::CLOSE, &[]);
    let mut explicit = base(&[1, 4]);
    for round in 0..4u8 {
        explicit = spread(next(explicit), 4).step(app_op::POLL, &[]);
        for i in 0..5u8 {
            explicit = explicit.step(app_op::ACK, &[round % 4, 0, i]);
        }
    }
    let explicit = spread(explicit.step(app_op::COMMIT, &[]), 4).step(app_op::CLOSE, &[]);
    vec![
        ("implicit", spread(implicit, 4).0),
        ("explicit", spread(explicit, 4).0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    type Seeds = fn() -> Vec<(&'static str, Vec<u8>)>;
    fn producer(data: &[u8]) -> usize {
        producer::run(data) as usize
    }
    fn transactions(data: &[u8]) -> usize {
        producer::run_transactional(data) as usize
    }
    fn group(data: &[u8]) -> usize {
        let d = group::run(data);
        usize::from(d.assigned > 0 && d.polled > 0 && d.committed > 0)
    }
    fn share(data: &[u8]) -> usize {
        let d = share::run(data);
        usize::from(d.assigned > 0 && d.polled > 0 && d.acknowledged > 0)
    }
    type Driver = fn(&[u8]) -> usize;
    const TARGETS: [(&str, Seeds, Driver); 7] = [
        ("machine_connection", connection_seeds, connection::run),
        ("machine_client", client_seeds, client::run),
        ("machine_producer", producer_seeds, producer),
        ("machine_transactions", transaction_seeds, transactions),
        ("machine_consumer", consumer_seeds, consumer::run),
        ("machine_group", group_seeds, group),
        ("machine_share", share_seeds, share),
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
                let depth = run(&data);
                eprintln!("{name} seed {seed}: depth {depth}");
                // The vector seed's Kafka sample answer refuses negotiation (error 1).
                assert!(
                    depth > 0 || seed == "vector",
                    "{name} seed {seed} reached nothing"
                );
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
                let result = std::panic::catch_unwind(|| {
                    run(&data);
                });
                if result.is_err() {
                    let path = format!("/tmp/{name}-smoke-{i}");
                    std::fs::write(&path, &data).expect("write failing input");
                    panic!("{name}: random input {i} failed, saved to {path}");
                }
            }
        }
    }
}
/// Replays one input with the trace on: `FUZZ_TRACE=1 FUZZ_TARGET=machine_producer
/// FUZZ_REPLAY=path cargo test --lib replay -- --ignored --nocapture` (the driver's
/// invariants are the assertions).
#[cfg(test)]
mod replay {
    #[test]
    #[ignore]
    fn replay() {
        let path = std::env::var("FUZZ_REPLAY").expect("FUZZ_REPLAY=<input file>");
        let data = std::fs::read(&path).expect("input");
        let depth = match std::env::var("FUZZ_TARGET").as_deref() {
            Ok("machine_connection") => crate::connection::run(&data),
            Ok("machine_producer") => crate::producer::run(&data) as usize,
            Ok("machine_transactions") => crate::producer::run_transactional(&data) as usize,
            Ok("machine_consumer") => crate::consumer::run(&data),
            Ok("machine_group") => {
                let d = crate::group::run(&data);
                eprintln!("{d:?}");
                d.polled
            }
            Ok("machine_share") => {
                let d = crate::share::run(&data);
                eprintln!("{d:?}");
                d.polled
            }
            _ => crate::client::run(&data),
        };
        eprintln!("depth {depth}");
    }
}
