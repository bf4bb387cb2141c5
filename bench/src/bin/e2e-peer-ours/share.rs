//! `share`: `--members M` `kafka_blocking::ShareConsumer`s (KIP-932 share group
//! `--group`, one thread each) draining a topic together with implicit acknowledgement
//! (each poll accepts what the previous one handed out; `close` accepts the last), until
//! the members together have been handed `--records` first deliveries. The runner sets
//! the group's `share.auto.offset.reset=earliest` before it starts this.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use kafka_blocking::ShareConsumer;
use kafka_core::config::ClientConfig;

use crate::consume::{result_line, Shared, Tally};
use crate::Args;

/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);

/// One member: subscribes, polls until the members together have every record, closes
/// (which accepts the records the last poll handed out and leaves the group).
fn member(c: ShareConsumer, topic: &str, value_bytes: usize, shared: &Shared) -> Tally {
    let mut tally = Tally::default();
    if let Err(e) = c.subscribe([topic]) {
        tally.fail(format!("subscribe: {e}"));
    }
    while tally.errors == 0 && !shared.done() {
        match c.poll(POLL) {
            Ok(records) if records.is_empty() => {
                if shared.idle_too_long() {
                    tally.fail(format!(
                        "no record for too long after {} first deliveries",
                        shared.total.load(Relaxed)
                    ));
                }
            }
            Ok(records) => {
                tally.saw_records(shared);
                let mut first = 0u64;
                for r in &records {
                    tally.record(r, value_bytes);
                    if r.delivery_count > 1 {
                        tally.redelivered += 1;
                    } else {
                        first += 1;
                    }
                }
                shared.total.fetch_add(first, Relaxed);
            }
            Err(e) => tally.fail(format!("poll: {e}")),
        }
    }
    if let Err(e) = c.close() {
        tally.fail(format!("close: {e}"));
    }
    tally
}

pub(crate) fn share(a: &Args) -> Result<String, String> {
    let topic = a.str("topic")?;
    let n = a.num("records", None)?;
    let value_bytes = a.num("value-bytes", Some(0))? as usize;
    let idle = Duration::from_secs(a.num("idle-timeout-s", Some(30))?);
    let group = a.str("group")?;
    let members = a.num("members", Some(1))?;
    if members == 0 {
        return Err("--members must be at least 1".into());
    }
    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), a.str("bootstrap")?.into()),
        ("group.id".into(), group.into()),
        // Java's share consumer defaults, as ShareConsumerPerformance runs it.
        ("fetch.min.bytes".into(), "1".into()),
        ("fetch.max.wait.ms".into(), "500".into()),
        ("fetch.max.bytes".into(), "52428800".into()),
        ("max.poll.records".into(), "500".into()),
    ];
    pairs.extend(a.set.iter().cloned());
    let config = ClientConfig::from_pairs(pairs).map_err(|e| format!("config: {e}"))?;
    let consumers = (0..members)
        .map(|_| ShareConsumer::new(config.clone()).map_err(|e| format!("share consumer: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    // The timed window starts once the clients exist.
    let shared = Shared::new(n, idle);
    let shared = &shared;
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = consumers
            .into_iter()
            .map(|c| s.spawn(move || member(c, topic, value_bytes, shared)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("member thread"))
            .collect()
    });
    Ok(result_line(tallies))
}
