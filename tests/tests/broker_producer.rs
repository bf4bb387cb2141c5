//! Real broker: the core's idempotent producer, driven through the blocking adapter's
//! driver thread, writes N keyed records to a fresh 6-partition topic with every codec;
//! the log is then read back with raw Fetch requests and must hold every record exactly
//! once, at the offset its delivery report gave, in send order per partition.
//!
//! `PRODUCER_RECORDS` sets N (default 1,000,000 per codec).

mod producer_common;

use kafka_tests::broker_or_skip;
use producer_common::{check_exactly_once, leaders, produce, read_back, records};

fn exactly_once_in_order(codec: &str) {
    let Some(addr) = broker_or_skip(&format!("producer_{codec}")) else {
        return;
    };
    let topic = format!(
        "producer-{codec}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let n = records();
    let (sent, client) = produce(&addr, &topic, codec, n, 1, |_| {});
    assert_eq!(sent.at.len() as u64, n);
    let logs = read_back(&leaders(&client, &topic), &topic, n);
    check_exactly_once(&sent, &logs, n, false);
}

#[test]
fn idempotent_producer_exactly_once_in_order_none() {
    exactly_once_in_order("none");
}

#[test]
fn idempotent_producer_exactly_once_in_order_gzip() {
    exactly_once_in_order("gzip");
}

#[test]
fn idempotent_producer_exactly_once_in_order_snappy() {
    exactly_once_in_order("snappy");
}

#[test]
fn idempotent_producer_exactly_once_in_order_lz4() {
    exactly_once_in_order("lz4");
}

#[test]
fn idempotent_producer_exactly_once_in_order_zstd() {
    exactly_once_in_order("zstd");
}

/// The Kafka jars the rig fetched (`tests/broker/rig fetch`).
fn kafka_lib() -> std::path::PathBuf {
    if let Ok(lib) = std::env::var("RIG_KAFKA_LIB") {
        return lib.into();
    }
    let cache = std::env::var("RIG_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            let base = std::env::var("XDG_CACHE_HOME")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|_| {
                    std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache")
                });
            base.join("kafka-rs-rig")
        });
    cache.join("kafka-4.3.1/lib")
}

/// Java's default partitioner and ours give every key the same partition: 20,000 keys
/// (text and binary, 0 to 40 bytes) against partition counts 1 to 64, computed by
/// Kafka's own `BuiltInPartitioner.partitionForKey` in a JVM.
#[test]
fn keyed_records_go_to_the_same_partition_as_with_the_java_client() {
    if broker_or_skip("keyed_partitioning_matches_java").is_none() {
        return; // the Kafka jars come with the rig
    }
    let dir = std::env::temp_dir().join(format!("kafka-rs-partition-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("KeyPartitions.java");
    std::fs::write(
        &src,
        r#"
import java.io.*;
import java.util.HexFormat;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
public class KeyPartitions {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    StringBuilder out = new StringBuilder();
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.split(" ", -1);
      byte[] key = HexFormat.of().parseHex(f[1]);
      out.append(BuiltInPartitioner.partitionForKey(key, Integer.parseInt(f[0]))).append('\n');
    }
    System.out.print(out);
  }
}
"#,
    )
    .unwrap();
    let mut cases = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key: Vec<u8> = if i % 2 == 0 {
            format!("user-{i}").into_bytes()
        } else {
            (0..(x % 41) as usize)
                .map(|j| (x >> (j % 8 * 8)) as u8 ^ j as u8)
                .collect()
        };
        let n = (i % 64) as i32 + 1;
        cases.push((n, key));
    }
    let input: String = cases
        .iter()
        .map(|(n, k)| {
            let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
            format!("{n} {hex}\n")
        })
        .collect();
    let cp = format!("{}/*", kafka_lib().display());
    let mut child = std::process::Command::new("java")
        .args(["-cp", &cp])
        .arg(&src)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run java");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("java output");
    assert!(out.status.success(), "java failed");
    let java: Vec<i32> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(java.len(), cases.len());
    for ((n, key), want) in cases.iter().zip(java) {
        assert_eq!(
            kafka_core::producer::partition_for_key(key, *n),
            want,
            "key {key:?} over {n}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Kafka's own console consumer reads our keys, values, headers and timestamps unchanged,
/// for every codec.
#[test]
fn the_console_consumer_reads_our_records_unchanged_for_every_codec() {
    use std::time::Instant;

    use kafka_blocking::BlockingClient;
    use kafka_core::config::ClientConfig;
    use kafka_core::producer::{Producer, ProducerRecord, SendError};
    use kafka_core::record::NewHeader;

    let Some(addr) = broker_or_skip("console_consumer_reads_our_records") else {
        return;
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    for codec in codecs {
        let topic = format!("producer-console-{stamp}-{codec}");
        let config = ClientConfig::from_pairs([
            ("bootstrap.servers", addr.as_str()),
            ("compression.type", codec),
        ])
        .unwrap();
        let client = BlockingClient::new(config.clone()).unwrap();
        producer_common::create_topic(&client, &topic, 1);
        let producer = Producer::new(&config).unwrap();
        let id = client
            .with_core(move |c| c.start_op(Instant::now(), producer))
            .unwrap();
        let mut next = 0u64;
        let start = Instant::now();
        while next < 20 {
            let t = topic.clone();
            next = client
                .with_core(move |c| {
                    c.command(Instant::now(), id, |p, cx| {
                        let mut i = next;
                        while i < 20 {
                            let (k, v, h) =
                                (format!("k{i}"), format!("v{i}-{codec}"), format!("x{i}"));
                            let headers = [
                                NewHeader {
                                    key: "h1",
                                    value: Some(h.as_bytes()),
                                },
                                NewHeader {
                                    key: "h2",
                                    value: Some(b"const"),
                                },
                            ];
                            let rec = ProducerRecord::new(&t, v.as_bytes())
                                .key(k.as_bytes())
                                .headers(&headers)
                                .timestamp(1_700_000_000_000 + i as i64);
                            match p.send(cx, &rec) {
                                Ok(_) => i += 1,
                                Err(SendError::WouldBlock(_)) => break,
                                Err(e) => panic!("send: {e}"),
                            }
                        }
                        p.flush();
                        i
                    })
                })
                .unwrap()
                .unwrap();
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "metadata never came"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let start = Instant::now();
        loop {
            let done = client
                .with_core(move |c| c.command(Instant::now(), id, |p, _| p.batches_outstanding()))
                .unwrap()
                .unwrap();
            if done == 0 {
                break;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(30));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let out = std::process::Command::new(rig)
        .args([
            "tool",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            &addr,
            "--include",
            &format!("producer-console-{stamp}-.*"),
            "--from-beginning",
            "--max-messages",
            "100",
            "--timeout-ms",
            "30000",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "print.headers=true",
            "--formatter-property",
            "print.timestamp=true",
            "--formatter-property",
            "key.separator=|",
        ])
        .output()
        .expect("console consumer");
    let text = String::from_utf8_lossy(&out.stdout);
    // The topic has several partitions: the console consumer interleaves them.
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("CreateTime"))
        .collect();
    lines.sort_unstable();
    let mut want: Vec<String> = codecs
        .iter()
        .flat_map(|codec| {
            (0..20u64).map(move |i| {
                let ts = 1_700_000_000_000 + i;
                format!("CreateTime:{ts}|h1:x{i},h2:const|k{i}|v{i}-{codec}")
            })
        })
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want, "{text}");
}

/// Producing to a topic that does not exist yet auto-creates it on a broker that allows
/// it (the rig does), as with Java's producer: the send waits for metadata, then goes.
#[test]
fn a_missing_topic_is_auto_created_by_the_first_send() {
    use std::time::{Duration, Instant};

    use kafka_blocking::BlockingClient;
    use kafka_core::config::ClientConfig;
    use kafka_core::producer::{Producer, ProducerRecord, SendError};

    let Some(addr) = broker_or_skip("a_missing_topic_is_auto_created") else {
        return;
    };
    let topic = format!(
        "producer-auto-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr.as_str())]).unwrap();
    let client = BlockingClient::new(config.clone()).unwrap();
    let producer = Producer::new(&config).unwrap();
    let id = client
        .with_core(move |c| c.start_op(Instant::now(), producer))
        .unwrap();
    let start = Instant::now();
    loop {
        let t = topic.clone();
        let sent = client
            .with_core(move |c| {
                c.command(Instant::now(), id, |p, cx| {
                    match p.send(cx, &ProducerRecord::new(&t, b"first")) {
                        Ok(_) => Ok(true),
                        Err(SendError::WouldBlock(_)) => Ok(false),
                        Err(e) => Err(e),
                    }
                })
            })
            .unwrap()
            .unwrap()
            .expect("send");
        if sent {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "topic never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    loop {
        let report = client
            .with_core(move |c| c.command(Instant::now(), id, |p, _| p.take_report()))
            .unwrap()
            .unwrap();
        if let Some(r) = report {
            let d = r.outcome.expect("delivered");
            assert_eq!(d.base_offset, 0);
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no delivery");
        std::thread::sleep(Duration::from_millis(5));
    }
}
