//! Our client as an e2e benchmark peer (contract: `bench/peers/README.md`).
//!
//! `produce` ([`produce`]) drives `kafka_core::producer::Producer` on `kafka-blocking`'s
//! driver thread, transactional with `--transactional-id`; with `--rate` it is
//! `kafka_blocking::Producer` ([`adapter`]), as an application uses it (also closed
//! loop with `--api adapter`); `consume` ([`consume`]) is
//! `kafka_blocking::Consumer` (assign) or `kafka_blocking::GroupConsumer` (`--group`), as
//! an application would use them; `share` ([`share`]) is `kafka_blocking::ShareConsumer`
//! members of a share group (KIP-932).

mod adapter;
mod consume;
mod produce;
mod share;

use std::collections::BTreeMap;
use std::process::ExitCode;

pub(crate) struct Args {
    op: String,
    kv: BTreeMap<String, String>,
    pub(crate) set: Vec<(String, String)>,
}

impl Args {
    fn parse() -> Result<Self, String> {
        let mut it = std::env::args().skip(1);
        let op = it
            .next()
            .ok_or("usage: e2e-peer-ours produce|consume|share|version [--key value]...")?;
        let mut kv = BTreeMap::new();
        let mut set = Vec::new();
        while let Some(k) = it.next() {
            let key = k
                .strip_prefix("--")
                .ok_or(format!("unexpected argument {k}"))?
                .to_string();
            let v = it.next().ok_or(format!("--{key} needs a value"))?;
            if key == "set" {
                let (a, b) = v
                    .split_once('=')
                    .ok_or(format!("--set {v}: expected key=value"))?;
                set.push((a.to_string(), b.to_string()));
            } else {
                kv.insert(key, v);
            }
        }
        Ok(Args { op, kv, set })
    }
    pub(crate) fn str(&self, k: &str) -> Result<&str, String> {
        self.kv
            .get(k)
            .map(String::as_str)
            .ok_or(format!("--{k} is required"))
    }
    pub(crate) fn opt(&self, k: &str) -> Option<&str> {
        self.kv.get(k).map(String::as_str)
    }
    pub(crate) fn num(&self, k: &str, default: Option<u64>) -> Result<u64, String> {
        match self.kv.get(k) {
            Some(v) => v.parse().map_err(|_| format!("--{k} {v}: not a number")),
            None => default.ok_or(format!("--{k} is required")),
        }
    }
}

fn main() -> ExitCode {
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("e2e-peer-ours: {e}");
            return ExitCode::from(2);
        }
    };
    let r = match args.op.as_str() {
        "version" => {
            println!("{}", version());
            return ExitCode::SUCCESS;
        }
        "produce" => produce::produce(&args),
        "consume" => consume::consume(&args),
        "share" => share::share(&args),
        other => Err(format!("unknown op {other}")),
    };
    match r {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("e2e-peer-ours: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn version() -> String {
    format!(
        "ours: kafka-core {} on kafka-blocking",
        env!("CARGO_PKG_VERSION")
    )
}

/// A JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The payload lines, for the life of the process (records borrow them from commands
/// that run on the driver thread).
pub(crate) fn read_payloads(path: &str) -> Result<&'static [&'static [u8]], String> {
    let text: &'static [u8] = Vec::leak(std::fs::read(path).map_err(|e| format!("{path}: {e}"))?);
    let pool: Vec<&'static [u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    if pool.is_empty() {
        return Err(format!("{path}: no payload lines"));
    }
    Ok(Vec::leak(pool))
}

/// Java's percentile rule (ProducerPerformance): the value at index floor(q * n) of the
/// sorted list.
pub(crate) fn percentiles(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "null".into();
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((q * v.len() as f64) as usize).min(v.len() - 1)];
    format!(
        "{{\"n\":{},\"p50\":{:.3},\"p99\":{:.3},\"p999\":{:.3},\"max\":{:.3}}}",
        v.len(),
        at(0.5),
        at(0.99),
        at(0.999),
        v[v.len() - 1]
    )
}
