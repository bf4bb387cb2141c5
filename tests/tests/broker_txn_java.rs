//! Real broker: our transactions and Apache Kafka's Java clients (the rig's Kafka,
//! `KAFKA_RIG_LIB`).
//!
//! - Kafka's Java console consumer with `--isolation-level read_committed` reads our
//!   committed transactions whole and nothing of an aborted one;
//! - our `read_committed` consumer reads the Java producer's transactions whole and
//!   never a record of its aborted ones (its `read_uncommitted` view has them).

mod txn_common;

use std::path::PathBuf;
use std::process::Command;

use kafka_blocking::Record;
use kafka_tests::broker_or_skip;
use txn_common::{counts, read_all, topic, txn_producer, unique, T};

fn lib() -> String {
    kafka_tests::rig_var("KAFKA_RIG_LIB").expect("KAFKA_RIG_LIB in the rig's env file")
}

#[test]
fn java_read_committed_sees_our_transactions_atomically() {
    let Some(addr) = broker_or_skip("broker_txn_java ours to java") else {
        return;
    };
    let topic = topic(&addr, "txn-to-java", 3);
    let p = txn_producer(&addr, &unique("tx-java"));
    for (tag, n, commit) in [("a", 200, true), ("b", 150, false), ("c", 50, true)] {
        p.begin_transaction().expect("begin");
        for i in 0..n {
            drop(
                p.send(Record::new(topic.as_str(), format!("{tag}-{i}")))
                    .expect("send"),
            );
        }
        if commit {
            p.commit_transaction(T).expect("commit");
        } else {
            p.abort_transaction(T).expect("abort");
        }
    }
    p.close(T).expect("close");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", lib()))
        .arg("org.apache.kafka.tools.consumer.ConsoleConsumer")
        .args(["--bootstrap-server", &addr, "--topic", &topic])
        .args(["--from-beginning", "--timeout-ms", "10000"])
        .args(["--isolation-level", "read_committed"])
        .output()
        .expect("java console consumer");
    // Records only (the tool may print log lines too).
    let is_record = |l: &&str| {
        l.split_once('-')
            .is_some_and(|(t, i)| t.len() == 1 && i.parse::<u32>().is_ok())
    };
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(is_record)
        .map(str::to_string)
        .collect();
    let c = counts(&lines);
    assert_eq!(lines.len(), 250, "a and c, once each: {:?}", c.len());
    assert!(c.values().all(|&n| n == 1));
    assert!(lines
        .iter()
        .all(|v| v.starts_with("a-") || v.starts_with("c-")));
}

#[test]
fn our_read_committed_sees_java_transactions_atomically() {
    let Some(addr) = broker_or_skip("broker_txn_java java to ours") else {
        return;
    };
    let classes = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("txn-java");
    std::fs::create_dir_all(&classes).expect("dir");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/java/TxnProducer.java");
    let status = Command::new("javac")
        .arg("-cp")
        .arg(format!("{}/*", lib()))
        .arg("-d")
        .arg(&classes)
        .arg(src)
        .status()
        .expect("javac");
    assert!(status.success(), "javac TxnProducer.java");
    let topic = topic(&addr, "txn-from-java", 3);
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*:{}", lib(), classes.display()))
        .arg("TxnProducer")
        .args([&addr, &topic, &unique("tx-from-java")])
        .args(["commit:300", "abort:200", "commit:100", "abort:50"])
        .output()
        .expect("java producer");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("done"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = read_all(&addr, &topic, 3, "read_committed");
    let c = counts(&committed);
    assert_eq!(committed.len(), 400, "t0 and t2 only");
    assert!(c.values().all(|&n| n == 1));
    assert!(committed
        .iter()
        .all(|v| v.starts_with("t0-") || v.starts_with("t2-")));
    let everything = read_all(&addr, &topic, 3, "read_uncommitted");
    assert_eq!(everything.len(), 650, "the aborted records are in the log");
}
