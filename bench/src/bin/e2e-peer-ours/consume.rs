//! `consume`: `kafka_blocking::Consumer` assigned partitions 0..P from the log start, or
//! `kafka_blocking::GroupConsumer` subscribed in `--group` and committing what it consumed
//! once at the end — the public API as an application uses it, `poll` handing out up to
//! `max.poll.records` records that borrow the fetched buffers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, ConsumerRecord, GroupConsumer, Offsets};
use kafka_core::config::ClientConfig;

use crate::{json_str, version, Args};

/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);

/// Offsets seen in one partition.
struct Part {
    count: u64,
    first: i64,
    last: i64,
    backwards: u64,
    gaps: u64,
}

/// Either consumer, polled the same way.
enum Source {
    Assigned(Consumer),
    Group(GroupConsumer),
}

impl Source {
    fn poll(&self) -> Result<Vec<ConsumerRecord>, String> {
        match self {
            Source::Assigned(c) => c.poll(POLL),
            Source::Group(g) => g.poll(POLL),
        }
        .map_err(|e| format!("poll: {e}"))
    }
}

pub(crate) fn consume(a: &Args) -> Result<String, String> {
    let topic = a.str("topic")?;
    let n = a.num("records", None)?;
    let partitions = a.num("partitions", None)? as i32;
    let value_bytes = a.num("value-bytes", Some(0))? as usize;
    let idle = Duration::from_secs(a.num("idle-timeout-s", Some(30))?);
    let group = a.opt("group");

    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), a.str("bootstrap")?.into()),
        ("auto.offset.reset".into(), "earliest".into()),
        (
            "isolation.level".into(),
            a.opt("isolation").unwrap_or("read_uncommitted").into(),
        ),
        // The same fetch settings as the other peers (Java's defaults).
        ("fetch.min.bytes".into(), "1".into()),
        ("fetch.max.wait.ms".into(), "500".into()),
        ("max.partition.fetch.bytes".into(), "1048576".into()),
        ("fetch.max.bytes".into(), "52428800".into()),
    ];
    if let Some(g) = group {
        pairs.push(("group.id".into(), g.into()));
        pairs.push(("enable.auto.commit".into(), "false".into()));
    }
    pairs.extend(a.set.iter().cloned());
    let config = ClientConfig::from_pairs(pairs).map_err(|e| format!("config: {e}"))?;
    let source = match group {
        Some(_) => Source::Group(GroupConsumer::new(config).map_err(|e| format!("consumer: {e}"))?),
        None => Source::Assigned(Consumer::new(config).map_err(|e| format!("consumer: {e}"))?),
    };

    let start = Instant::now();
    match &source {
        Source::Group(g) => g
            .subscribe([topic])
            .map_err(|e| format!("subscribe: {e}"))?,
        Source::Assigned(c) => {
            let all = (0..partitions).map(|p| (topic, p));
            c.assign(all.clone()).map_err(|e| format!("assign: {e}"))?;
            c.seek_to_beginning(all)
                .map_err(|e| format!("seek_to_beginning: {e}"))?;
        }
    }
    let mut parts: BTreeMap<i32, Part> = BTreeMap::new();
    let (mut count, mut bytes, mut errors, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let (mut first_s, mut last_s) = (0.0, 0.0);
    let mut first_error = String::new();
    let mut last_seen = Instant::now();
    while count < n {
        let records = match source.poll() {
            Ok(r) => r,
            Err(e) => {
                errors += 1;
                if first_error.is_empty() {
                    first_error = e;
                }
                if errors > 1000 {
                    break;
                }
                continue;
            }
        };
        if records.is_empty() {
            if last_seen.elapsed() > idle {
                first_error = format!("no record for {idle:?} after {count} records");
                break;
            }
            continue;
        }
        let now = start.elapsed().as_secs_f64();
        if count == 0 {
            first_s = now;
        }
        last_s = now;
        last_seen = Instant::now();
        for r in &records {
            count += 1;
            let len = r.value.as_ref().map_or(0, |v| v.len());
            bytes += len as u64;
            if value_bytes > 0 && len != value_bytes {
                bad += 1;
            }
            let p = parts.entry(r.partition).or_insert(Part {
                count: 0,
                first: -1,
                last: -1,
                backwards: 0,
                gaps: 0,
            });
            if p.count == 0 {
                p.first = r.offset;
            } else if r.offset <= p.last {
                p.backwards += 1;
            } else if r.offset != p.last + 1 {
                p.gaps += 1;
            }
            p.last = p.last.max(r.offset);
            p.count += 1;
        }
    }
    match &source {
        Source::Group(g) => {
            if count > 0 {
                if let Err(e) = g.commit_sync(Offsets::Consumed, Duration::from_secs(30)) {
                    errors += 1;
                    first_error = format!("commit: {e}");
                }
            }
            let _ = g.close();
        }
        Source::Assigned(c) => {
            let _ = c.close();
        }
    }
    let steady = if count > 1 && last_s > first_s {
        (count - 1) as f64 / (last_s - first_s)
    } else {
        0.0
    };
    let plist: Vec<String> = parts
        .iter()
        .map(|(p, s)| {
            format!(
                "{{\"p\":{p},\"count\":{},\"first\":{},\"last\":{},\"backwards\":{},\"gaps\":{}}}",
                s.count, s.first, s.last, s.backwards, s.gaps
            )
        })
        .collect();
    Ok(format!(
        "{{\"peer\":\"ours\",\"version\":{},\"op\":\"consume\",\"records\":{count},\"bytes\":{bytes},\"errors\":{errors},\
\"elapsed_s\":{last_s:.6},\"first_s\":{first_s:.6},\"steady_rps\":{steady:.1},\"bad_values\":{bad},\"partitions\":[{}],\"error\":{}}}",
        json_str(&version()),
        plist.join(","),
        json_str(&first_error)
    ))
}
