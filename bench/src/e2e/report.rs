//! Per-run records, their per-(workload, client) summaries (median and min–max over
//! the rounds), the Markdown report and the JSON lines.

use serde_json::{json, Value};

use super::peers::{Client, Latency};

/// One measured run of one client.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunRecord {
    pub(crate) workload: String,
    pub(crate) variant: String,
    pub(crate) client: Option<Client>,
    pub(crate) round: u32,
    pub(crate) ok: bool,
    pub(crate) reason: String,
    pub(crate) records: u64,
    /// Value payload bytes.
    pub(crate) bytes: u64,
    pub(crate) elapsed_s: f64,
    pub(crate) steady_rps: Option<f64>,
    /// Time to the first ack / first record.
    pub(crate) first_s: Option<f64>,
    pub(crate) cpu_s: f64,
    pub(crate) startup_cpu_s: Option<f64>,
    pub(crate) rss_mib: f64,
    pub(crate) broker_cpu_s: Option<f64>,
    pub(crate) load1: f64,
    pub(crate) lat: Option<Latency>,
    /// Transactional produce: commit latency over the run's transactions.
    pub(crate) commit: Option<Latency>,
    pub(crate) txns: Option<u64>,
    pub(crate) markers: Option<u64>,
    pub(crate) log_bytes: Option<u64>,
    /// Group consumes: records each member read.
    pub(crate) member_records: Vec<u64>,
    /// Share groups: records handed out more than once, and with a delivery count
    /// above 1 (`None`: the client does not say).
    pub(crate) duplicates: Option<u64>,
    pub(crate) redelivered: Option<u64>,
    pub(crate) wall_s: f64,
    pub(crate) cmd: String,
}

impl RunRecord {
    pub(crate) fn rps(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.records as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
    pub(crate) fn mbps(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.bytes as f64 / self.elapsed_s / 1e6
        } else {
            0.0
        }
    }
    /// Client CPU less its own start-up cost (a 1-record run of the same client).
    pub(crate) fn net_cpu_s(&self) -> f64 {
        (self.cpu_s - self.startup_cpu_s.unwrap_or(0.0)).max(0.0)
    }
    pub(crate) fn net_cpu_per_gb(&self) -> Option<f64> {
        (self.bytes > 0).then(|| self.net_cpu_s() / (self.bytes as f64 / 1e9))
    }
    pub(crate) fn broker_util(&self) -> Option<f64> {
        self.broker_cpu_s
            .filter(|_| self.elapsed_s > 0.0)
            .map(|b| b / self.elapsed_s)
    }
    pub(crate) fn client_util(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.net_cpu_s() / self.elapsed_s
        } else {
            0.0
        }
    }
    /// Records the broker handles per CPU-second: its ceiling on one core.
    /// With several members: the share of the records the busiest member read.
    pub(crate) fn top_member_share(&self) -> Option<f64> {
        let total: u64 = self.member_records.iter().sum();
        (self.member_records.len() > 1 && total > 0)
            .then(|| *self.member_records.iter().max().unwrap_or(&0) as f64 / total as f64)
    }
    pub(crate) fn broker_ceiling_rps(&self) -> Option<f64> {
        self.broker_cpu_s
            .filter(|b| *b > 0.0)
            .map(|b| self.records as f64 / b)
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "type": "run",
            "workload": self.workload,
            "client": self.variant,
            "round": self.round,
            "ok": self.ok,
            "reason": self.reason,
            "records": self.records,
            "bytes": self.bytes,
            "elapsed_s": self.elapsed_s,
            "records_per_s": self.rps(),
            "steady_records_per_s": self.steady_rps,
            "mb_per_s": self.mbps(),
            "first_ack_or_record_s": self.first_s,
            "client_cpu_s": self.cpu_s,
            "startup_cpu_s": self.startup_cpu_s,
            "net_cpu_s": self.net_cpu_s(),
            "net_cpu_s_per_gb": self.net_cpu_per_gb(),
            "peak_rss_mib": self.rss_mib,
            "broker_cpu_s": self.broker_cpu_s,
            "broker_util": self.broker_util(),
            "client_util": self.client_util(),
            "broker_ceiling_records_per_s": self.broker_ceiling_rps(),
            "load1_at_start": self.load1,
            "latency_ms": self.lat.map(|l| json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "max": l.max})),
            "commit_ms": self.commit.map(|l| json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "max": l.max})),
            "txns": self.txns,
            "txn_markers": self.markers,
            "log_bytes": self.log_bytes,
            "member_records": self.member_records,
            "duplicates": self.duplicates,
            "redelivered": self.redelivered,
            "process_wall_s": self.wall_s,
            "command": self.cmd,
        })
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn min_max(v: &[f64]) -> Option<(f64, f64)> {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    Some((
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    ))
}

/// Median (and spread) over the verified runs of one client on one workload.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    pub(crate) workload: String,
    pub(crate) variant: String,
    pub(crate) client: Option<Client>,
    pub(crate) runs: usize,
    pub(crate) ok: usize,
    pub(crate) failures: Vec<String>,
    pub(crate) rps: Option<f64>,
    pub(crate) rps_range: Option<(f64, f64)>,
    pub(crate) steady_rps: Option<f64>,
    pub(crate) first_s: Option<f64>,
    pub(crate) mbps: Option<f64>,
    pub(crate) cpu_s: Option<f64>,
    pub(crate) net_cpu_s: Option<f64>,
    pub(crate) net_cpu_per_gb: Option<f64>,
    pub(crate) rss_mib: Option<f64>,
    pub(crate) broker_cpu_s: Option<f64>,
    pub(crate) broker_util: Option<f64>,
    pub(crate) client_util: Option<f64>,
    pub(crate) broker_ceiling: Option<f64>,
    pub(crate) load1: Option<f64>,
    pub(crate) lat: Option<Latency>,
    pub(crate) commit: Option<Latency>,
    pub(crate) txns: Option<f64>,
    pub(crate) markers: Option<f64>,
    pub(crate) log_bytes_per_record: Option<f64>,
    /// The busiest member's share of the records, least and most over the rounds.
    pub(crate) top_member_share: Option<(f64, f64)>,
    /// Share groups, most over the verified rounds: records handed out more than once,
    /// and with a delivery count above 1.
    pub(crate) duplicates: Option<u64>,
    pub(crate) redelivered: Option<u64>,
}

impl Summary {
    pub(crate) fn of(runs: &[&RunRecord]) -> Summary {
        let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.ok).collect();
        let m = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
            median(ok.iter().filter_map(|r| f(r)).collect())
        };
        let rps: Vec<f64> = ok.iter().map(|r| r.rps()).collect();
        // Each percentile's median over the rounds, when every verified round has one.
        let latency = |get: &dyn Fn(&RunRecord) -> Option<Latency>| {
            (!ok.is_empty() && ok.iter().all(|r| get(r).is_some())).then(|| Latency {
                p50: m(&|r| get(r).map(|l| l.p50)).unwrap_or(f64::NAN),
                p99: m(&|r| get(r).map(|l| l.p99)).unwrap_or(f64::NAN),
                p999: m(&|r| get(r).map(|l| l.p999)).unwrap_or(f64::NAN),
                max: m(&|r| get(r).map(|l| l.max)).unwrap_or(f64::NAN),
            })
        };
        let lat = latency(&|r| r.lat);
        let commit = latency(&|r| r.commit);
        let shares: Vec<f64> = ok.iter().filter_map(|r| r.top_member_share()).collect();
        let first = runs[0];
        Summary {
            workload: first.workload.clone(),
            variant: first.variant.clone(),
            client: first.client,
            runs: runs.len(),
            ok: ok.len(),
            failures: runs
                .iter()
                .filter(|r| !r.ok)
                .map(|r| format!("round {}: {}", r.round, r.reason))
                .collect(),
            rps: median(rps.clone()),
            rps_range: min_max(&rps),
            steady_rps: m(&|r| r.steady_rps),
            first_s: m(&|r| r.first_s),
            mbps: m(&|r| Some(r.mbps())),
            cpu_s: m(&|r| Some(r.cpu_s)),
            net_cpu_s: m(&|r| Some(r.net_cpu_s())),
            net_cpu_per_gb: m(&|r| r.net_cpu_per_gb()),
            rss_mib: m(&|r| Some(r.rss_mib)),
            broker_cpu_s: m(&|r| r.broker_cpu_s),
            broker_util: m(&|r| r.broker_util()),
            client_util: m(&|r| Some(r.client_util())),
            broker_ceiling: m(&|r| r.broker_ceiling_rps()),
            load1: m(&|r| Some(r.load1)),
            lat,
            commit,
            txns: m(&|r| r.txns.filter(|t| *t > 0).map(|t| t as f64)),
            markers: m(&|r| r.markers.map(|t| t as f64)),
            log_bytes_per_record: m(&|r| {
                r.log_bytes
                    .filter(|_| r.records > 0)
                    .map(|b| b as f64 / r.records as f64)
            }),
            top_member_share: min_max(&shares),
            duplicates: ok.iter().filter_map(|r| r.duplicates).max(),
            redelivered: ok.iter().filter_map(|r| r.redelivered).max(),
        }
    }

    /// Which side limits the run: a core (the broker's or the client's) busy ≥ 85 %.
    pub(crate) fn bound(&self) -> &'static str {
        match (self.broker_util, self.client_util) {
            (Some(b), _) if b >= 0.85 => "broker",
            (_, Some(c)) if c >= 0.85 => "client",
            (None, _) => "?",
            _ => "neither",
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "type": "summary",
            "workload": self.workload,
            "client": self.variant,
            "runs": self.runs,
            "verified_runs": self.ok,
            "failures": self.failures,
            "records_per_s_median": self.rps,
            "records_per_s_min": self.rps_range.map(|r| r.0),
            "records_per_s_max": self.rps_range.map(|r| r.1),
            "steady_records_per_s_median": self.steady_rps,
            "mb_per_s_median": self.mbps,
            "first_ack_or_record_s_median": self.first_s,
            "client_cpu_s_median": self.cpu_s,
            "net_cpu_s_median": self.net_cpu_s,
            "net_cpu_s_per_gb_median": self.net_cpu_per_gb,
            "peak_rss_mib_median": self.rss_mib,
            "broker_cpu_s_median": self.broker_cpu_s,
            "broker_util_median": self.broker_util,
            "client_util_median": self.client_util,
            "broker_ceiling_records_per_s_median": self.broker_ceiling,
            "bound": self.bound(),
            "load1_median": self.load1,
            "latency_ms_median": self.lat.map(|l| json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "max": l.max})),
            "commit_ms_median": self.commit.map(|l| json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "max": l.max})),
            "txns_median": self.txns,
            "txn_markers_median": self.markers,
            "log_bytes_per_record_median": self.log_bytes_per_record,
            "top_member_share_min": self.top_member_share.map(|s| s.0),
            "top_member_share_max": self.top_member_share.map(|s| s.1),
            "duplicates_max": self.duplicates,
            "redelivered_max": self.redelivered,
        })
    }
}

fn n0(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.0}"))
}
fn n1(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.1}"))
}
fn n2(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.2}"))
}
fn kilo(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{:.0}k", x / 1000.0))
}

/// The main table: one row per (workload, client).
pub(crate) fn table(rows: &[Summary]) -> String {
    let mut s = String::from(
        "| workload | client | verified | rec/s median (min–max) | steady rec/s | MB/s | client CPU-s | net CPU-s | net CPU-s/GB | peak RSS MiB | broker CPU-s | broker util | client util | bound | broker ceiling rec/s | load1 | more |\n\
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|\n",
    );
    for r in rows {
        let mut more = Vec::new();
        if let Some(f) = r.first_s {
            more.push(format!("first after {f:.2} s"));
        }
        if let Some(l) = r.lat {
            more.push(format!(
                "ack latency p50/p99/p99.9 {:.1}/{:.1}/{:.1} ms",
                l.p50, l.p99, l.p999
            ));
        }
        if let Some(t) = r.txns {
            more.push(format!("{t:.0} txns"));
        }
        if let Some(c) = r.commit {
            more.push(format!("commit p50/p99 {:.1}/{:.1} ms", c.p50, c.p99));
        }
        if let Some(m) = r.markers {
            more.push(format!("{m:.0} txn markers"));
        }
        if let Some(b) = r.log_bytes_per_record {
            more.push(format!("log {b:.1} B/rec"));
        }
        if let Some((lo, hi)) = r.top_member_share {
            more.push(format!(
                "busiest member read {:.0}–{:.0} %",
                lo * 100.0,
                hi * 100.0
            ));
        }
        if let (Some(d), Some(x)) = (r.duplicates, r.redelivered) {
            more.push(format!("handed out again ≤ {d}, delivery count > 1 ≤ {x}"));
        }
        if !r.failures.is_empty() {
            more.push(format!("FAILED: {}", r.failures.join("; ")));
        }
        let range = r.rps_range.map_or("–".into(), |(a, b)| {
            format!("{} ({}–{})", kilo(r.rps), kilo(Some(a)), kilo(Some(b)))
        });
        s.push_str(&format!(
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.workload,
            r.variant,
            r.ok,
            r.runs,
            range,
            kilo(r.steady_rps),
            n1(r.mbps),
            n2(r.cpu_s),
            n2(r.net_cpu_s),
            n1(r.net_cpu_per_gb),
            n0(r.rss_mib),
            n2(r.broker_cpu_s),
            n2(r.broker_util),
            n2(r.client_util),
            r.bound(),
            kilo(r.broker_ceiling),
            n1(r.load1),
            more.join("; ")
        ));
    }
    s
}

/// Ratios per workload: ours / each peer once ours has rows; until then each peer
/// against the best peer (rate) and the leanest peer (net CPU-s/GB).
pub(crate) fn ratios(rows: &[Summary]) -> String {
    let mut s = String::from(
        "| workload | client | rec/s ÷ best | net CPU-s/GB ÷ leanest | ours rec/s ÷ this | ours CPU-s/GB ÷ this |\n|---|---|---:|---:|---:|---:|\n",
    );
    let mut workloads: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    workloads.dedup();
    for w in workloads {
        let in_w: Vec<&Summary> = rows
            .iter()
            .filter(|r| r.workload == w && r.ok > 0)
            .collect();
        let best = in_w.iter().filter_map(|r| r.rps).fold(0.0, f64::max);
        let lean = in_w
            .iter()
            .filter_map(|r| r.net_cpu_per_gb)
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let ours = in_w.iter().find(|r| r.client == Some(Client::Ours));
        for r in &in_w {
            let (or, oc) = match (ours, r.client == Some(Client::Ours)) {
                (Some(o), false) => (
                    o.rps.zip(r.rps).map(|(a, b)| format!("{:.2}×", a / b)),
                    o.net_cpu_per_gb
                        .zip(r.net_cpu_per_gb)
                        .map(|(a, b)| format!("{:.2}×", a / b)),
                ),
                (None, _) => (Some("no ours rows".into()), Some("no ours rows".into())),
                _ => (None, None),
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                w,
                r.variant,
                r.rps.map_or("–".into(), |x| format!("{:.2}", x / best)),
                r.net_cpu_per_gb
                    .filter(|_| lean.is_finite())
                    .map_or("–".into(), |x| format!("{:.2}", x / lean)),
                or.unwrap_or_else(|| "–".into()),
                oc.unwrap_or_else(|| "–".into()),
            ));
        }
    }
    s
}

/// The group workloads (W6…) pivoted: one row per client, one column per workload, each
/// cell the time to the first record, the rate and the net CPU per GB; empty without
/// group rows.
pub(crate) fn groups(rows: &[Summary]) -> String {
    let mut workloads: Vec<&str> = rows
        .iter()
        .map(|r| r.workload.as_str())
        .filter(|w| *w == "W6" || w.starts_with("W6-"))
        .collect();
    workloads.dedup();
    if workloads.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "| client | {} |\n|---|{}\n",
        workloads.join(" | "),
        "---:|".repeat(workloads.len())
    );
    let mut variants: Vec<&str> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| workloads.contains(&r.workload.as_str()))
    {
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
    }
    for v in variants {
        let cells: Vec<String> = workloads
            .iter()
            .map(
                |w| match rows.iter().find(|r| r.workload == *w && r.variant == v) {
                    Some(r) if r.ok > 0 => format!(
                        "{} s / {} / {}",
                        n2(r.first_s),
                        kilo(r.rps),
                        n1(r.net_cpu_per_gb)
                    ),
                    Some(r) => format!("FAILED {}/{}", r.runs - r.ok, r.runs),
                    None => "–".into(),
                },
            )
            .collect();
        s.push_str(&format!("| {v} | {} |\n", cells.join(" | ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_bounds() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let run = |round, elapsed_s, ok| RunRecord {
            workload: "W1".into(),
            variant: "x".into(),
            round,
            ok,
            records: 1000,
            bytes: 100_000,
            elapsed_s,
            cpu_s: 0.5,
            startup_cpu_s: Some(0.1),
            broker_cpu_s: Some(0.95 * elapsed_s),
            ..RunRecord::default()
        };
        let (a, b, c) = (run(1, 1.0, true), run(2, 2.0, true), run(3, 0.1, false));
        let s = Summary::of(&[&a, &b, &c]);
        assert_eq!((s.runs, s.ok, s.failures.len()), (3, 2, 1));
        assert_eq!(s.rps, Some(750.0));
        assert_eq!(s.rps_range, Some((500.0, 1000.0)));
        assert!((s.net_cpu_s.unwrap() - 0.4).abs() < 1e-9);
        assert_eq!(s.bound(), "broker");
        assert!(table(std::slice::from_ref(&s)).contains("| W1 | x | 2/3 |"));
        assert!(ratios(std::slice::from_ref(&s)).contains("no ours rows"));
        assert_eq!(groups(std::slice::from_ref(&s)), "");
    }

    #[test]
    fn group_rows_are_pivoted_by_workload() {
        let run = |workload: &str, variant: &str, first_s| RunRecord {
            workload: workload.into(),
            variant: variant.into(),
            round: 1,
            ok: true,
            records: 2_000_000,
            bytes: 200_000_000,
            elapsed_s: 2.0,
            first_s: Some(first_s),
            cpu_s: 0.8,
            ..RunRecord::default()
        };
        let rows: Vec<Summary> = [
            run("W5", "ours", 0.01),
            run("W6", "ours", 0.1),
            run("W6", "java (ConsumerPerformance)", 3.0),
            run("W6-3", "ours", 0.5),
        ]
        .iter()
        .map(|r| Summary::of(&[r]))
        .collect();
        let t = groups(&rows);
        assert!(t.starts_with("| client | W6 | W6-3 |"), "{t}");
        assert!(
            t.contains("| ours | 0.10 s / 1000k / 4.0 | 0.50 s / 1000k / 4.0 |"),
            "{t}"
        );
        assert!(
            t.contains("| java (ConsumerPerformance) | 3.00 s / 1000k / 4.0 | – |"),
            "{t}"
        );
        // Three members: the report says how evenly they shared the records.
        let three = |round, split: [u64; 3]| RunRecord {
            round,
            member_records: split.to_vec(),
            ..run("W6-3", "ours", 0.5)
        };
        let s = Summary::of(&[&three(1, [50, 30, 20]), &three(2, [100, 0, 0])]);
        assert_eq!(s.top_member_share, Some((0.5, 1.0)));
        assert!(table(&[s]).contains("busiest member read 50–100 %"));
        assert_eq!(run("W6", "ours", 0.1).top_member_share(), None);
    }
}
