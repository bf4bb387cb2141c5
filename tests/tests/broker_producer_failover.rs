//! Real 3-node cluster: the idempotent producer keeps writing while the leader of
//! partition 0 is killed (kill -9 through the rig) mid-stream and restarted. Every
//! acknowledged record must then be in the topic exactly once, in send order per
//! partition; with `delivery.timeout.ms` at its default every record is acknowledged.

mod producer_common;

use std::process::Command;
use std::time::{Duration, Instant};

use kafka_tests::cluster_or_skip;
use producer_common::{check_exactly_once, leaders, produce, read_back};

fn rig(args: &[&str]) {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let status = Command::new(rig).args(args).status().expect("run rig");
    assert!(status.success(), "rig {args:?} failed");
}

#[test]
fn killing_a_leader_mid_stream_loses_and_duplicates_nothing() {
    let Some(addr) = cluster_or_skip("killing_a_leader_mid_stream_loses_and_duplicates_nothing")
    else {
        return;
    };
    let topic = format!(
        "producer-failover-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let n = 300_000;
    let mut killed = None;
    let (sent, client) = produce(&addr, &topic, "none", n, 3, |client| {
        let t = topic.clone();
        let node = client
            .with_core(move |c| c.metadata().leader(&t, 0))
            .expect("driver")
            .expect("leader of partition 0");
        eprintln!("killing node {node}, the leader of partition 0");
        rig(&["kill", &node.to_string()]);
        killed = Some(node);
    });
    let node = killed.expect("killed midway");
    rig(&["restart", &node.to_string()]);
    // Read back once every partition has a leader again.
    let start = Instant::now();
    let leaders = loop {
        let t = topic.clone();
        let _ = client.with_core(move |c| c.request_metadata(Instant::now(), [t]));
        std::thread::sleep(Duration::from_millis(500));
        let t = topic.clone();
        let all = client
            .with_core(move |c| (0..6).all(|p| c.metadata().leader(&t, p).is_some()))
            .expect("driver");
        if all {
            break leaders(&client, &topic);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no leaders after restart"
        );
    };
    let logs = read_back(&leaders, &topic, n);
    check_exactly_once(&sent, &logs, n, false);
}
