//! The run's report files: `results.md` (machine, clients, workloads, the tables, the
//! neighbourhood, verification) and `results.jsonl`.

use super::report::{self, RunRecord, Summary};
use super::workloads;
use super::{Harness, BROKER_CORE, CLIENT_CORE};

impl Harness {
    /// Writes results.md / results.jsonl (and prints the report unless `partial`); true if
    /// every run verified.
    pub(super) fn write_report(&self, mode: &str, partial: bool) -> bool {
        let n = &self.neighbourhood;
        let load = self.load_start;
        let took = self.t_start.elapsed();
        let mut keys: Vec<(String, String)> = Vec::new();
        for r in &self.records {
            let k = (r.workload.clone(), r.variant.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let rows: Vec<Summary> = keys
            .iter()
            .map(|(w, v)| {
                let runs: Vec<&RunRecord> = self
                    .records
                    .iter()
                    .filter(|r| &r.workload == w && &r.variant == v)
                    .collect();
                Summary::of(&runs)
            })
            .collect();
        let all_ok = self.records.iter().all(|r| r.ok);
        let mut md = String::new();
        md.push_str(&format!(
            "## End-to-end run ({mode} mode, {} round(s), {:.0} s{})\n\n",
            self.opts.rounds,
            took.as_secs_f64(),
            if partial {
                ", PARTIAL: still running or interrupted"
            } else {
                ""
            }
        ));
        md.push_str(&format!(
            "Machine: {} × {}, {}; load average at start {:.2} / {:.2} / {:.2}. Broker on core {BROKER_CORE}, client on core {CLIENT_CORE}{}.\n\n",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model(),
            mem_total(),
            load.0,
            load.1,
            load.2,
            if self.pin.is_some() { "" } else { " (NOT pinned)" }
        ));
        md.push_str("Clients:\n\n");
        let mut notes: Vec<&String> = Vec::new();
        for n in &self.notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        for n in notes {
            md.push_str(&format!("- {n}\n"));
        }
        let start: Vec<String> = self
            .startup
            .iter()
            .map(|((c, k), v)| format!("{} {} {v:.2} s", c.name(), k.name()))
            .collect();
        md.push_str(&format!(
            "- start-up CPU (min of the 1-record runs), subtracted for \"net\": {}\n\n",
            if start.is_empty() {
                "none".into()
            } else {
                start.join(", ")
            }
        ));
        md.push_str("Workloads (6 partitions, RF 1, fresh topic per produce run, acks=all on every producer):\n\n");
        for w in workloads::all(self.opts.quick) {
            if rows.iter().any(|r| r.workload == w.id) {
                md.push_str(&format!(
                    "- {}: {} × {} B — {}\n",
                    w.id, w.records, w.value_bytes, w.title
                ));
            }
        }
        md.push('\n');
        md.push_str(&report::table(&rows));
        md.push_str("\nRatios (same run):\n\n");
        md.push_str(&report::ratios(&rows));
        let groups = report::groups(&rows);
        if !groups.is_empty() {
            md.push_str("\nGroups side by side (medians: time to first record — join latency — / rec/s / net CPU-s per GB):\n\n");
            md.push_str(&groups);
        }
        md.push_str("\nNeighbourhood (same run):\n\n");
        md.push_str(&format!(
            "- loopback TCP, one connection, 256 KiB writes, sender on the client core, receiver on the broker core: {} over {} MiB\n",
            n.loopback_gbps.map_or("not measured".into(), |g| format!("**{g:.2} GB/s**")),
            n.loopback_bytes >> 20
        ));
        let mut wl: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
        wl.dedup();
        for w in wl {
            let best = rows
                .iter()
                .filter(|r| r.workload == w)
                .filter_map(|r| r.broker_ceiling.map(|c| (c, r)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((c, r)) = best {
                md.push_str(&format!(
                    "- {w}: broker ceiling ≈ {:.0}k rec/s on its core (records per broker CPU-second, best: {}); peak MB/s measured {} vs loopback {}\n",
                    c / 1000.0,
                    r.variant,
                    rows.iter().filter(|r| r.workload == w).filter_map(|r| r.mbps).fold(0.0, f64::max).round(),
                    n.loopback_gbps.map_or("–".into(), |g| format!("{:.0} MB/s", g * 1000.0))
                ));
            }
        }
        md.push_str(&format!(
            "\nVerification: {} of {} runs verified{}.\n",
            self.records.iter().filter(|r| r.ok).count(),
            self.records.len(),
            if all_ok { "" } else { " — FAILURES above" }
        ));
        let mut jsonl = String::new();
        for r in &self.records {
            jsonl.push_str(&r.to_json().to_string());
            jsonl.push('\n');
        }
        for s in &rows {
            jsonl.push_str(&s.to_json().to_string());
            jsonl.push('\n');
        }
        let _ = std::fs::write(self.out.join("results.md"), &md);
        let _ = std::fs::write(self.out.join("results.jsonl"), &jsonl);
        if partial {
            return all_ok;
        }
        println!("{md}");
        eprintln!(
            "e2e: wrote {} and {}",
            self.out.join("results.md").display(),
            self.out.join("results.jsonl").display()
        );
        all_ok
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn mem_total() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or("? GiB".into(), |kib| {
            format!("{:.0} GiB RAM", kib / 1_048_576.0)
        })
}
