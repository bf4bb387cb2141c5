//! The fault proxy by hand (`kafka_tests::fault_proxy`): one loopback listener per
//! broker node, Metadata/FindCoordinator/DescribeCluster answers rewritten to point at
//! them, and an optional fault from the start.
//!
//! Usage: `fault-proxy --node 1=127.0.0.1:9092 [--node 2=...] [--fault SPEC]`, SPEC one
//! of `delay:50ms`, `bandwidth:1000000`, `blackhole`, `halfopen`,
//! `reset-after:produce:10`, `reset-before:fetch:5` (`any` for every API). Prints the
//! listeners, then reads commands from stdin: `set SPEC`, `set NODE SPEC`, `clear`,
//! `reset` (cuts every connection), `stats`, `log`, `record` (start recording every
//! exchange), `save FILE` (write what was recorded since `record` as JSON lines: `seq`,
//! `atMs`, `conn`, `node`, `requestHex`, `responseHex` — the raw frames of the
//! transcripts in `vectors/transcripts/`, which `transcripts_capture.rs` writes decoded),
//! `quit`. Without stdin it runs until killed.

use std::io::BufRead;

use kafka_tests::fault_proxy::{Exchange, Fault, FaultProxy};

const USAGE: &str = "usage: fault-proxy --node ID=HOST:PORT [--node ...] [--fault SPEC]\n  \
    SPEC: delay:50ms | bandwidth:1000000 | blackhole | halfopen | \
    reset-after:API:N | reset-before:API:N";

fn main() {
    let (nodes, fault) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("fault-proxy: {e}\n{USAGE}");
            std::process::exit(64);
        }
    };
    let proxy = match FaultProxy::start(&nodes) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fault-proxy: {e}");
            std::process::exit(1);
        }
    };
    for (node, addr) in proxy.listeners() {
        let upstream = nodes.iter().find(|(n, _)| n == node).map(|(_, u)| u);
        println!("node {node}: {addr} -> {}", upstream.map_or("?", |u| u));
    }
    println!("bootstrap.servers={}", proxy.bootstrap());
    if let Some(f) = fault {
        proxy.set(f);
        println!("fault: {f}");
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["set", spec] => match spec.parse::<Fault>() {
                Ok(f) => proxy.set(f),
                Err(e) => eprintln!("{e}"),
            },
            ["set", node, spec] => match (node.parse::<i32>(), spec.parse::<Fault>()) {
                (Ok(n), Ok(f)) => proxy.set_for(n, f),
                (Err(e), _) => eprintln!("node {node:?}: {e}"),
                (_, Err(e)) => eprintln!("{e}"),
            },
            ["clear"] => proxy.clear(),
            ["reset"] => proxy.reset_all(),
            ["stats"] => println!("{:?}", proxy.stats()),
            ["log"] => proxy.log().iter().for_each(|e| println!("{e}")),
            ["record"] => proxy.start_recording(),
            ["save", file] => match std::fs::write(file, json_lines(&proxy.take_recording())) {
                Ok(()) => println!("saved {file}"),
                Err(e) => eprintln!("{file}: {e}"),
            },
            ["quit"] => return,
            [] => {}
            _ => eprintln!(
                "commands: set [NODE] SPEC | clear | reset | stats | log | record | save FILE | quit"
            ),
        }
    }
    // Stdin closed (e.g. started in the background): serve until killed.
    loop {
        std::thread::park();
    }
}

/// A recording as JSON lines, one exchange a line.
fn json_lines(exchanges: &[Exchange]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    exchanges
        .iter()
        .map(|x| {
            let response = x
                .response
                .as_deref()
                .map_or("null".to_string(), |r| format!("\"{}\"", hex(r)));
            format!(
                "{{\"seq\":{},\"atMs\":{},\"conn\":{},\"node\":{},\"requestHex\":\"{}\",\"responseHex\":{}}}\n",
                x.seq,
                x.at.as_millis(),
                x.conn,
                x.node,
                hex(&x.request),
                response
            )
        })
        .collect()
}

/// The `--node` upstreams and the `--fault`, if given.
type Args = (Vec<(i32, String)>, Option<Fault>);

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut nodes = Vec::new();
    let mut fault = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--node" => {
                let v = value()?;
                let (id, addr) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--node {v:?}: expected ID=HOST:PORT"))?;
                let id = id
                    .parse::<i32>()
                    .map_err(|e| format!("--node {v:?}: {e}"))?;
                nodes.push((id, addr.to_string()));
            }
            "--fault" => fault = Some(value()?.parse::<Fault>()?),
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if nodes.is_empty() {
        return Err("no --node given".into());
    }
    Ok((nodes, fault))
}
