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
        "producer-{codec}-{}",
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
