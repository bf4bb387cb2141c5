//! The tokio share consumer (KIP-932) on the real broker: two members of one share group
//! take every record exactly once and accept it (a later member gets nothing); explicit
//! acknowledgement: a released record comes back with delivery count 2, a rejected one
//! never; explicit mode refuses a poll while records are unacknowledged and the
//! acknowledgement commit callback sees the accepted offsets. Helpers (topic, `share.auto.offset.reset=earliest`) as in `share_blocking`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_tokio::{AcknowledgeType, Error, ShareConsumer, ShareError};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_members_take_every_record_once_and_explicit_release_comes_back() {
    let Some(addr) = kafka_tests::broker_or_skip("share_tokio real broker") else {
        return;
    };
    const N: usize = 100;
    let group = unique("share-t");
    let topic = {
        let (addr, group) = (addr.clone(), group.clone());
        tokio::task::spawn_blocking(move || {
            earliest(&addr, &group);
            topic_with_records(&addr, 2, N as u64)
        })
        .await
        .expect("setup")
    };
    let a = consumer(&addr, &group, &[]);
    let b = consumer(&addr, &group, &[]);
    a.subscribe([topic.as_str()]).await.expect("subscribe");
    b.subscribe([topic.as_str()]).await.expect("subscribe");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < N {
        assert!(Instant::now() < deadline, "only {} records", seen.len());
        let (ra, rb) = tokio::join!(
            a.poll(Duration::from_millis(300)),
            b.poll(Duration::from_millis(300))
        );
        for r in ra.expect("poll").into_iter().chain(rb.expect("poll")) {
            assert_eq!(r.delivery_count, 1);
            seen.push((r.partition, r.offset));
        }
    }
    let unique_seen: BTreeSet<_> = seen.iter().copied().collect();
    assert_eq!(unique_seen.len(), N, "every record");
    assert_eq!(seen.len(), N, "none twice");
    a.close().await.expect("close");
    b.close().await.expect("close");
    let late = consumer(&addr, &group, &[]);
    late.subscribe([topic.as_str()]).await.expect("subscribe");
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        let got = late.poll(Duration::from_millis(500)).await.expect("poll");
        assert!(got.is_empty(), "redelivered after acceptance");
    }
    late.close().await.expect("close");

    // Explicit: release comes back with count 2, reject never.
    let group = unique("share-tx");
    let topic = {
        let (addr, group) = (addr.clone(), group.clone());
        tokio::task::spawn_blocking(move || {
            earliest(&addr, &group);
            topic_with_records(&addr, 1, 2)
        })
        .await
        .expect("setup")
    };
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
    c.acknowledge(&got[0], AcknowledgeType::Release)
        .await
        .expect("release");
    c.acknowledge(&got[1], AcknowledgeType::Reject)
        .await
        .expect("reject");
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
    assert_eq!((again[0].offset, again[0].delivery_count), (0, 2));
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_mode_refuses_a_poll_while_unacknowledged_and_the_callback_sees_accepted_offsets()
{
    let Some(addr) = kafka_tests::broker_or_skip("share_tokio real broker") else {
        return;
    };
    const N: i64 = 4;
    let group = unique("share-tcb");
    let topic = {
        let (addr, group) = (addr.clone(), group.clone());
        tokio::task::spawn_blocking(move || {
            earliest(&addr, &group);
            topic_with_records(&addr, 1, N as u64)
        })
        .await
        .expect("setup")
    };
    let c = consumer(&addr, &group, &[("share.acknowledgement.mode", "explicit")]);
    let seen: std::sync::Arc<std::sync::Mutex<Vec<kafka_tokio::AckCompletion>>> =
        std::sync::Arc::default();
    let theirs = seen.clone();
    c.set_acknowledgement_commit_callback(move |done| theirs.lock().unwrap().push(done.clone()));
    c.subscribe([topic.as_str()]).await.expect("subscribe");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut all = Vec::new();
    while (all.len() as i64) < N {
        assert!(Instant::now() < deadline, "only {all:?}");
        let got = c.poll(Duration::from_millis(500)).await.expect("poll");
        if got.is_empty() {
            continue;
        }
        match c.poll(Duration::from_millis(100)).await {
            Err(Error::Share(ShareError::Unacknowledged { count })) => {
                assert_eq!(count, got.len())
            }
            other => panic!("not refused: {other:?}"),
        }
        for r in &got {
            c.acknowledge(r, AcknowledgeType::Accept)
                .await
                .expect("accept");
        }
        all.extend(got.iter().map(|r| r.offset));
    }
    let results = c
        .commit_sync(Duration::from_secs(30))
        .await
        .expect("commit_sync");
    assert!(results.values().all(Result::is_ok), "{results:?}");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().all(|c| c.result.is_ok()), "{seen:?}");
    let mut accepted: Vec<i64> = seen.iter().flat_map(|c| c.iter_offsets()).collect();
    accepted.sort_unstable();
    assert_eq!(accepted, (0..N).collect::<Vec<_>>(), "{seen:?}");
    c.close().await.expect("close");
}
