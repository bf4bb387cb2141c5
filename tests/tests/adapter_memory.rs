//! Peak memory per adapter while a (fake) broker streams one huge frame at full speed:
//! each adapter's peak RSS stays near the frame cap (`receive.message.max.bytes`, the
//! core's buffer for the frame being read) plus its bounded read path, never a multiple
//! of it.
//!
//! Each case runs in a child process (this test binary re-executed with
//! `KAFKA_MEM_CHILD` set, running only `memory_child`), so every figure is one adapter's
//! own `VmHWM` from `/proc/self/status`. The fake broker runs in the parent.

use std::process::Command;
use std::time::Duration;

use kafka_core::admin::DescribeCluster;
use kafka_core::config::ClientConfig;
use kafka_tests::fake_broker::{FakeBroker, Mode};

const MIB: usize = 1 << 20;
const ADAPTERS: [&str; 4] = ["blocking", "mio", "tokio", "async-std"];

/// The peak resident set of this process, in KiB.
fn vm_hwm_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn peak_rss_stays_near_the_frame_cap() {
    if std::env::var_os("KAFKA_MEM_CHILD").is_some() || !cfg!(target_os = "linux") {
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let mut failures = Vec::new();
    for cap in [100 * MIB, 16 * MIB] {
        for adapter in ADAPTERS {
            let fake = FakeBroker::start(Mode::Flood(cap));
            let out = Command::new(&exe)
                .args(["--exact", "memory_child", "--nocapture", "--test-threads=1"])
                .env("KAFKA_MEM_CHILD", adapter)
                .env("KAFKA_MEM_ADDR", &fake.addr)
                .env("KAFKA_MEM_CAP", cap.to_string())
                .output()
                .expect("child");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout
                .lines()
                .find_map(|l| l.find("PEAK ").map(|at| &l[at..]));
            let Some(line) = line else {
                panic!(
                    "{adapter}: no figure; stdout {stdout} stderr {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            let field = |name: &str| -> usize {
                line.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                    .and_then(|v| v.parse().ok())
                    .expect("field")
            };
            let (base, peak) = (field("base_kib"), field("peak_kib"));
            println!(
                "{adapter:>9}: cap {:>3} MiB: peak RSS {:>4} MiB (process baseline {} MiB), frame streamed: {}",
                cap / MIB,
                peak / 1024,
                base / 1024,
                fake.flooded()
            );
            assert!(
                fake.flooded(),
                "{adapter}: the frame was not read to its end"
            );
            let limit = (cap + 64 * MIB) / 1024;
            if peak >= limit {
                failures.push(format!("{adapter} cap {cap}: {peak} KiB >= {limit} KiB"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// One case, in the child process.
#[test]
fn memory_child() {
    let Ok(adapter) = std::env::var("KAFKA_MEM_CHILD") else {
        return;
    };
    let addr = std::env::var("KAFKA_MEM_ADDR").expect("addr");
    let cap = std::env::var("KAFKA_MEM_CAP").expect("cap");
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("receive.message.max.bytes", cap.as_str()),
    ])
    .expect("config");
    let op = DescribeCluster::new().timeout(Duration::from_secs(6));
    let base = vm_hwm_kib();
    let outcome = match adapter.as_str() {
        "blocking" => format!(
            "{:?}",
            kafka_blocking::Admin::new(config)
                .expect("admin")
                .run(op)
                .map(|_| ())
        ),
        "mio" => format!(
            "{:?}",
            kafka_mio::Admin::new(config)
                .expect("admin")
                .run(op)
                .map(|_| ())
        ),
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let admin = kafka_tokio::Admin::with_runtime(config, rt.handle()).expect("admin");
            format!("{:?}", rt.block_on(admin.run(op)).map(|_| ()))
        }
        "async-std" => {
            let admin = kafka_async_std::Admin::with_spawner(config, |t| {
                async_std::task::spawn(t);
            })
            .expect("admin");
            format!("{:?}", async_std::task::block_on(admin.run(op)).map(|_| ()))
        }
        other => panic!("unknown adapter {other}"),
    };
    println!(
        "PEAK adapter={adapter} base_kib={base} peak_kib={} outcome={outcome:?}",
        vm_hwm_kib()
    );
}
