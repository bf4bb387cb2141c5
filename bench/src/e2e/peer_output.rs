//! What the clients say about their runs: the contract peers' JSON result line
//! (`bench/peers/README.md`) and the text of Kafka's `ProducerPerformance` /
//! `ConsumerPerformance` / `ShareConsumerPerformance`.

use serde_json::Value;

use super::peers::{Latency, PartResult, PeerResult};

pub(crate) fn parse_contract(stdout: &str) -> Result<PeerResult, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or("no JSON result line on stdout")?;
    let v: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON result line: {e}"))?;
    let u = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let f = |k: &str| v.get(k).and_then(Value::as_f64);
    let latency = |key: &str| {
        v.get(key).filter(|l| l.is_object()).map(|l| {
            let g = |k: &str| l.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            Latency {
                p50: g("p50"),
                p99: g("p99"),
                p999: g("p999"),
                max: g("max"),
            }
        })
    };
    let lat = latency("lat_ms");
    let commit = latency("commit_ms");
    let partitions = v
        .get("partitions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|p| {
                    let i = |k: &str, d: i64| p.get(k).and_then(Value::as_i64).unwrap_or(d);
                    PartResult {
                        partition: i("p", -1) as i32,
                        count: i("count", 0).max(0) as u64,
                        first: i("first", -1),
                        last: i("last", -1),
                        backwards: i("backwards", 0).max(0) as u64,
                        gaps: i("gaps", 0).max(0) as u64,
                        runs: p
                            .get("runs")
                            .and_then(Value::as_array)
                            .map(|runs| {
                                runs.iter()
                                    .map(|r| {
                                        let at = |k: usize| {
                                            r.get(k).and_then(Value::as_i64).unwrap_or(-1)
                                        };
                                        (at(0), at(1))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(PeerResult {
        records: u("records"),
        bytes: u("bytes"),
        errors: u("errors"),
        elapsed_s: f("elapsed_s").unwrap_or(0.0),
        first_s: f("first_s"),
        steady_rps: f("steady_rps").filter(|r| *r > 0.0),
        txns: v.get("txns").and_then(Value::as_u64),
        lat,
        commit,
        partitions,
        member_records: v
            .get("member_records")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
        bad_values: u("bad_values"),
        redelivered: u("redelivered"),
        error: v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// The leading number of each ", "-separated segment of a ProducerPerformance summary line.
fn java_numbers(line: &str) -> Vec<f64> {
    line.split(", ")
        .filter_map(|seg| seg.split_whitespace().next())
        .filter_map(|t| t.trim_end_matches('.').parse().ok())
        .collect()
}

/// Java's stack traces of failed sends (its callback prints them) and other exceptions.
fn java_errors(stderr: &str) -> (u64, String) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            !l.starts_with('\t')
                && !l.starts_with('[')
                && (l.contains("Exception") || l.contains("Error:"))
        })
        .collect();
    (
        lines.len() as u64,
        lines.first().map(|s| s.to_string()).unwrap_or_default(),
    )
}

pub(crate) fn parse_java_produce(stdout: &str, stderr: &str) -> Result<PeerResult, String> {
    let summary = |steady: bool| {
        stdout
            .lines()
            .filter(|l| l.contains(" records sent, ") && l.contains(" 99.9th"))
            .find(|l| l.contains("steady state") == steady)
    };
    let total = summary(false).ok_or("no ProducerPerformance summary line")?;
    let n = java_numbers(total);
    // count, rec/s (the MB/s in brackets has no segment of its own), avg, max, p50, p95, p99, p99.9
    if n.len() < 8 {
        return Err(format!("cannot read the summary line: {total}"));
    }
    let records = n[0] as u64;
    let rps = n[1];
    let steady = summary(true)
        .map(java_numbers)
        .and_then(|s| s.get(1).copied());
    let (errors, error) = java_errors(stderr);
    Ok(PeerResult {
        records,
        bytes: 0,
        errors,
        elapsed_s: if rps > 0.0 { records as f64 / rps } else { 0.0 },
        first_s: None,
        steady_rps: steady,
        txns: None,
        lat: Some(Latency {
            p50: n[4],
            p99: n[6],
            p999: n[7],
            max: n[3],
        }),
        commit: None,
        partitions: Vec::new(),
        member_records: Vec::new(),
        bad_values: 0,
        redelivered: 0,
        error,
    })
}

pub(crate) fn parse_java_consume(stdout: &str, stderr: &str) -> Result<PeerResult, String> {
    if let Some(w) = stdout
        .lines()
        .find(|l| l.starts_with("WARNING: Exiting before"))
    {
        return Err(w.to_string());
    }
    // start, end, MB (2^20), MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
    let row = stdout
        .lines()
        .map(|l| l.split(", ").collect::<Vec<_>>())
        .find(|f| f.len() == 10 && f[4].parse::<u64>().is_ok())
        .ok_or("no ConsumerPerformance result line")?;
    let num = |i: usize| row[i].trim().parse::<f64>().unwrap_or(0.0);
    let records = num(4) as u64;
    let (errors, error) = java_errors(stderr);
    Ok(PeerResult {
        records,
        bytes: (num(2) * 1_048_576.0).round() as u64,
        errors,
        elapsed_s: if num(5) > 0.0 {
            records as f64 / num(5)
        } else {
            0.0
        },
        first_s: Some(num(6) / 1000.0),
        steady_rps: Some(num(9)).filter(|r| *r > 0.0),
        txns: None,
        lat: None,
        commit: None,
        partitions: Vec::new(),
        member_records: Vec::new(),
        bad_values: 0,
        redelivered: 0,
        error,
    })
}

/// `ShareConsumerPerformance --show-consumer-stats --show-detailed-stats`: a line per
/// consumer ("Share consumer N having client id … metrics- " and the fields), the total,
/// and interval lines ("… for share consumer N"). A consumer's first interval line is
/// printed by the first poll that returned records once the reporting interval had
/// passed: with the interval shorter than the join (seconds), at its first record.
pub(crate) fn parse_java_share(stdout: &str, stderr: &str) -> Result<PeerResult, String> {
    if let Some(w) = stdout
        .lines()
        .find(|l| l.starts_with("WARNING: Exiting before"))
    {
        return Err(w.to_string());
    }
    // start, end, MB (2^20), MB/s, nMsg/s, nMsg, fetch ms
    let fields = |l: &str| -> Option<Vec<String>> {
        let l = l.rsplit("metrics- ").next().unwrap_or(l);
        let l = l.split(" for share consumer ").next().unwrap_or(l);
        let f: Vec<String> = l.split(", ").map(|x| x.trim().to_string()).collect();
        (f.len() == 7 && f[5].parse::<u64>().is_ok()).then_some(f)
    };
    let kind = |l: &str| {
        if l.starts_with("Share consumer ") {
            1
        } else if l.contains(" for share consumer ") {
            2
        } else {
            0
        }
    };
    let rows = |k: u8| {
        stdout
            .lines()
            .filter(move |l| kind(l) == k)
            .filter_map(fields)
    };
    let row = rows(0)
        .next_back()
        .ok_or("no ShareConsumerPerformance result line")?;
    let num = |i: usize| row[i].parse::<f64>().unwrap_or(0.0);
    let records = num(5) as u64;
    let elapsed_s = num(6) / 1000.0;
    // The earliest first interval line of any consumer, from the run's start.
    let start = java_time_ms(&row[0]);
    let first_s = rows(2)
        .filter_map(|f| Some((java_time_ms(&f[1])? - start?) as f64 / 1000.0))
        .filter(|s| *s >= 0.0)
        .reduce(f64::min);
    let steady_rps = first_s
        .filter(|f| records > 1 && elapsed_s > *f)
        .map(|f| (records - 1) as f64 / (elapsed_s - f));
    let (errors, error) = java_errors(stderr);
    Ok(PeerResult {
        records,
        bytes: (num(2) * 1_048_576.0).round() as u64,
        errors,
        elapsed_s,
        first_s,
        steady_rps,
        member_records: rows(1).map(|f| f[5].parse().unwrap_or(0)).collect(),
        error,
        ..PeerResult::default()
    })
}

/// Milliseconds since midnight of the Java tools' "yyyy-MM-dd HH:mm:ss:SSS".
fn java_time_ms(t: &str) -> Option<i64> {
    let clock = t.split_whitespace().nth(1)?;
    let p: Vec<i64> = clock
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    match p.as_slice() {
        [h, m, s, ms] => Some(((h * 60 + m) * 60 + s) * 1000 + ms),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_producer_performance_summaries() {
        let out = "Reading payloads from: /x\nNumber of messages read: 1000\n\
200000 records sent, 153846.153846 records/sec (14.67 MB/sec), 120.52 ms avg latency, 560.00 ms max latency, 97 ms 50th, 380 ms 95th, 520 ms 99th, 555 ms 99.9th.\n\
180000 steady state records sent, 171428.571429 records/sec (16.35 MB/sec), 100.00 ms avg latency, 400.00 ms max latency, 90 ms 50th, 300 ms 95th, 390 ms 99th, 399 ms 99.9th.\n";
        let r = parse_java_produce(out, "").unwrap();
        assert_eq!(r.records, 200_000);
        assert!((r.elapsed_s - 1.3).abs() < 1e-6);
        assert_eq!(r.steady_rps, Some(171_428.571_429));
        let l = r.lat.unwrap();
        assert_eq!((l.p50, l.p99, l.p999, l.max), (97.0, 520.0, 555.0, 560.0));
    }

    #[test]
    fn reads_consumer_performance_rows() {
        let out = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n\
2026-12-01 10:00:00:000, 2026-12-01 10:00:02:000, 19.0735, 9.5367, 200000, 100000.0000, 3005, -1005, -18.9786, -199004.9751\n";
        let r = parse_java_consume(out, "").unwrap();
        assert_eq!(r.records, 200_000);
        assert!(r.bytes.abs_diff(20_000_000) < 60);
        assert!((r.elapsed_s - 2.0).abs() < 1e-9);
        assert_eq!(r.steady_rps, None);
        assert!(parse_java_consume(
            "WARNING: Exiting before consuming the expected number of messages",
            ""
        )
        .is_err());
    }

    #[test]
    fn reads_share_consumer_performance_rows() {
        let out = "start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms\n\
Share consumer 1 having client id perf-share-consumer-client-1 consumption metrics- 2026-12-04 04:10:07:523, 2026-12-04 04:10:13:753, 1.7260, 0.2770, 2904.9759, 18098, 6230\n\
Share consumer 2 having client id perf-share-consumer-client-2 consumption metrics- 2026-12-04 04:10:07:523, 2026-12-04 04:10:13:753, 8.8108, 1.4143, 14827.4, 81902, 6230\n\
2026-12-04 04:10:07:900, 2026-12-04 04:10:12:758, 0.0001, 0.0000, 0.1925, 1, 4858 for share consumer 2\n\
2026-12-04 04:10:07:903, 2026-12-04 04:10:12:623, 0.0001, 0.0000, 0.1925, 1, 4720 for share consumer 1\n\
2026-12-04 04:10:07:523, 2026-12-04 04:10:13:758, 9.5367, 1.5295, 16038.4924, 100000, 6235\n";
        let r = parse_java_share(out, "").unwrap();
        assert_eq!(r.records, 100_000);
        assert!(r.bytes.abs_diff(10_000_000) < 60);
        assert!((r.elapsed_s - 6.235).abs() < 1e-9);
        assert_eq!(r.member_records, vec![18_098, 81_902]);
        // First record 5.1 s after the start (consumer 1's first interval line).
        assert_eq!(r.first_s, Some(5.1));
        assert!((r.steady_rps.unwrap() - 99_999.0 / 1.135).abs() < 1e-3);
        assert!(parse_java_share(
            "WARNING: Exiting before consuming the expected number of records: timeout",
            ""
        )
        .is_err());
    }

    #[test]
    fn reads_contract_lines() {
        let out = "noise\n{\"peer\":\"x\",\"op\":\"consume\",\"records\":10,\"bytes\":1000,\"errors\":0,\"elapsed_s\":0.5,\
\"first_s\":0.1,\"steady_rps\":22.5,\"bad_values\":0,\"partitions\":[{\"p\":0,\"count\":10,\"first\":0,\"last\":9,\"backwards\":0,\"gaps\":0}],\"error\":\"\"}\n";
        let r = parse_contract(out).unwrap();
        assert_eq!(
            (r.records, r.bytes, r.partitions.len(), r.partitions[0].last),
            (10, 1000, 1, 9)
        );
        assert_eq!(r.steady_rps, Some(22.5));
        assert!(r.lat.is_none());
        assert!(r.commit.is_none());
        assert!(r.partitions[0].runs.is_empty() && r.member_records.is_empty());
    }

    #[test]
    fn reads_the_runs_and_member_counts_of_group_consumes() {
        let out = "{\"peer\":\"x\",\"op\":\"consume\",\"records\":30,\"bytes\":3000,\"errors\":0,\"elapsed_s\":0.5,\
\"first_s\":0.2,\"steady_rps\":60.0,\"bad_values\":0,\"member_records\":[20,10,0],\
\"partitions\":[{\"p\":0,\"count\":30,\"first\":0,\"last\":29,\"runs\":[[0,9],[20,29],[10,19]]}],\"error\":\"\"}";
        let r = parse_contract(out).unwrap();
        assert_eq!(r.member_records, vec![20, 10, 0]);
        assert_eq!(r.partitions[0].runs, vec![(0, 9), (20, 29), (10, 19)]);
        assert_eq!((r.partitions[0].backwards, r.partitions[0].gaps), (0, 0));
    }

    #[test]
    fn reads_commit_latency_of_transactional_produces() {
        let out = "{\"peer\":\"x\",\"op\":\"produce\",\"records\":20,\"bytes\":2000,\"errors\":0,\"elapsed_s\":0.5,\
\"first_s\":0.1,\"steady_rps\":40.0,\"txns\":2,\"lat_ms\":null,\"commit_ms\":{\"n\":2,\"p50\":7.5,\"p99\":9.25,\"p999\":9.25,\"max\":9.25},\
\"partitions\":[{\"p\":0,\"count\":20,\"last\":21}],\"error\":\"\"}";
        let r = parse_contract(out).unwrap();
        assert_eq!(r.txns, Some(2));
        assert!(r.lat.is_none());
        let c = r.commit.expect("commit_ms");
        assert_eq!((c.p50, c.p99, c.max), (7.5, 9.25, 9.25));
    }
}
