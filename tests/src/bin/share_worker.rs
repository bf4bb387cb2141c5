//! A share-group member for the real-broker share soak (`tests/tests/share_soak.rs`),
//! which runs three of them on one partition and kills one with SIGKILL mid-way.
//!
//! Usage: `share_worker BOOTSTRAP GROUP TOPIC POLICY`, POLICY one of `accept` (accept
//! everything), `slow` (accept everything after 300 ms of "processing" per poll, so a
//! kill likely finds it holding records), `release` (release a record at offset ≡ 0 mod 7 on its first delivery,
//! accept the rest) or `reject` (reject offsets ≡ 999 mod 1000, accept the rest).
//! Explicit acknowledgement, one `commit_sync` per poll. Prints one line per record to
//! stdout: `h OFFSET COUNT` when handed out, `s -1 0` before acknowledging them, then, once its acknowledgement completed
//! (`ShareEvent::Acknowledged`, riding on a fetch or the commit), `a`/`l`/`x OFFSET COUNT`
//! (accepted, released, rejected) if the broker took it, else `e OFFSET COUNT`.
//! Runs until killed; exits 2 on an error.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use kafka_blocking::{AcknowledgeType, Error, ShareConsumer, ShareEvent};
use kafka_core::config::ClientConfig;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, group, topic, policy] = &args[..] else {
        eprintln!("usage: share_worker BOOTSTRAP GROUP TOPIC accept|slow|release|reject");
        std::process::exit(64);
    };
    if let Err(e) = run(bootstrap, group, topic, policy) {
        eprintln!("share_worker: {e}");
        std::process::exit(2);
    }
}

fn decide(policy: &str, offset: i64, delivery_count: i16) -> (AcknowledgeType, char) {
    match policy {
        "release" if offset % 7 == 0 && delivery_count == 1 => (AcknowledgeType::Release, 'l'),
        "reject" if offset % 1000 == 999 => (AcknowledgeType::Reject, 'x'),
        _ => (AcknowledgeType::Accept, 'a'),
    }
}

fn run(bootstrap: &str, group: &str, topic: &str, policy: &str) -> Result<(), Error> {
    let consumer = ShareConsumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("share.acknowledgement.mode", "explicit"),
        ("max.poll.records", "500"),
        ("fetch.max.wait.ms", "200"),
    ])?)?;
    consumer.subscribe([topic])?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Decided, not yet reported complete: offset → (tag, delivery count).
    let mut decided: HashMap<i64, (char, i16)> = HashMap::new();
    loop {
        let records = consumer.poll(Duration::from_millis(200))?;
        for r in &records {
            let _ = writeln!(out, "h {} {}", r.offset, r.delivery_count);
        }
        // The handed-out lines are out before the acknowledgements go.
        let _ = out.flush();
        if !records.is_empty() && policy == "slow" {
            std::thread::sleep(Duration::from_millis(300));
        }
        if !records.is_empty() {
            // From here on the acknowledgements may reach the broker.
            let _ = writeln!(out, "s -1 0");
            let _ = out.flush();
        }
        for r in &records {
            let (kind, tag) = decide(policy, r.offset, r.delivery_count);
            consumer.acknowledge(r, kind)?;
            decided.insert(r.offset, (tag, r.delivery_count));
        }
        if !records.is_empty() {
            consumer.commit_sync(Duration::from_secs(30))?;
        }
        // Completed acknowledgements (on a fetch or the commit), with their outcome.
        for event in consumer.take_events() {
            let ShareEvent::Acknowledged(completions) = event else {
                continue;
            };
            for c in completions {
                if c.omitted > 0 {
                    eprintln!(
                        "share_worker {policy}: {} completions not listed",
                        c.omitted
                    );
                }
                for offset in c.iter_offsets() {
                    let Some((tag, count)) = decided.remove(&offset) else {
                        continue;
                    };
                    let tag = if c.result.is_ok() { tag } else { 'e' };
                    if let Err(e) = &c.result {
                        eprintln!("share_worker {policy}: offset {offset}: {e}");
                    }
                    let _ = writeln!(out, "{tag} {offset} {count}");
                }
            }
        }
        let _ = out.flush();
    }
}
