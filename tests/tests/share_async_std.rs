//! The async-std share consumer (KIP-932) on the real broker: one member takes every
//! record once and accepts it (a later member gets nothing); explicit acknowledgement: a
//! released record comes back with delivery count 2, a rejected one never. Helpers as in
//! `share_blocking`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use async_std::task::block_on;
use kafka_async_std::{AcknowledgeType, ShareConsumer};
use kafka_core::config::ClientConfig;
use share_common::{earliest, topic_with_records, unique};

mod share_common;

fn consumer(addr: &str, group: &str, extra: &[(&str, &str)]) -> ShareConsumer {
    let mut pairs = vec![
        ("bootstrap.servers", addr),
        ("group.id", group),
        ("fetch.max.wait.ms", "200"),
    ];
    pairs.extend_from_slice(extra);
    ShareConsumer::new(ClientConfig::from_pairs(pairs).expect("config")).expect("share consumer")
}

#[test]
fn a_member_takes_every_record_once_and_explicit_release_comes_back() {
    let Some(addr) = kafka_tests::broker_or_skip("share_async_std real broker") else {
        return;
    };
    const N: usize = 50;
    let group = unique("share-a");
    earliest(&addr, &group);
    let topic = topic_with_records(&addr, 2, N as u64);
    block_on(async {
        let a = consumer(&addr, &group, &[]);
        a.subscribe([topic.as_str()]).await.expect("subscribe");
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.len() < N {
            assert!(Instant::now() < deadline, "only {} records", seen.len());
            for r in a.poll(Duration::from_millis(300)).await.expect("poll") {
                assert_eq!(r.delivery_count, 1);
                seen.push((r.partition, r.offset));
            }
        }
        assert_eq!(
            seen.iter().collect::<BTreeSet<_>>().len(),
            N,
            "every record"
        );
        assert_eq!(seen.len(), N, "none twice");
        a.close().await.expect("close");
        let late = consumer(&addr, &group, &[]);
        late.subscribe([topic.as_str()]).await.expect("subscribe");
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            let got = late.poll(Duration::from_millis(500)).await.expect("poll");
            assert!(got.is_empty(), "redelivered after acceptance");
        }
        late.close().await.expect("close");
    });

    let group = unique("share-ax");
    earliest(&addr, &group);
    let topic = topic_with_records(&addr, 1, 2);
    block_on(async {
        let c = consumer(&addr, &group, &[("share.acknowledgement.mode", "explicit")]);
        c.subscribe([topic.as_str()]).await.expect("subscribe");
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while got.len() < 2 {
            assert!(Instant::now() < deadline, "only {} records", got.len());
            got.extend(c.poll(Duration::from_millis(500)).await.expect("poll"));
        }
        // The broker's default acquisition lock (the rig keeps Kafka's 30 s).
        let lock = c.acquisition_lock_timeout().await.expect("lock timeout");
        assert_eq!(lock, Some(Duration::from_secs(30)));
        c.acknowledge(&got[0], AcknowledgeType::Reject)
            .await
            .expect("reject");
        c.acknowledge(&got[1], AcknowledgeType::Release)
            .await
            .expect("release");
        let results = c
            .commit_sync(Duration::from_secs(30))
            .await
            .expect("commit");
        assert!(results.values().all(Result::is_ok), "{results:?}");
        let mut again = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while again.is_empty() {
            assert!(
                Instant::now() < deadline,
                "the released record did not come back"
            );
            again = c.poll(Duration::from_millis(500)).await.expect("poll");
        }
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].offset, again[0].delivery_count), (1, 2));
        c.close().await.expect("close");
    });
}
