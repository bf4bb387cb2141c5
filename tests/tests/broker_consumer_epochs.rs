//! Real broker, leader epochs of committed offsets (KIP-320): a group member's commit
//! carries the leader epoch of the record before the offset (OffsetCommit
//! `committed_leader_epoch`, read back with the admin client), and a member restoring a
//! committed offset validates it with OffsetForLeaderEpoch. A committed offset past the
//! end of its epoch on the leader — what an unclean election leaves behind — is log
//! truncation: `ConsumeError::LogTruncation` with `auto.offset.reset=none`, the
//! divergent offset (the epoch's end) with a reset policy: nothing skipped, nothing read
//! twice.

use std::time::{Duration, Instant};

use kafka_blocking::{Admin, Error, GroupConsumer, Offsets, Producer, Record};
use kafka_core::admin::{NewTopic, OffsetAndMetadata, TopicPartition};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{ConsumeError, ConsumerRecord};
use kafka_tests::broker_or_skip;

fn produce(addr: &str, topic: &str, from: u64, to: u64) {
    let producer = Producer::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr), ("linger.ms", "1")])
            .expect("config"),
    )
    .expect("producer");
    let sent: Vec<_> = (from..to)
        .map(|i| {
            let record = Record::new(topic.to_string(), i.to_be_bytes().to_vec()).partition(0);
            producer.send(record).expect("send")
        })
        .collect();
    for d in sent {
        d.wait().expect("delivered");
    }
    producer.close(Duration::from_secs(10)).expect("close");
}

fn member(addr: &str, group: &str, reset: &str) -> GroupConsumer {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("group.id", group),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", reset),
    ])
    .expect("config");
    GroupConsumer::new(config).expect("group consumer")
}

/// Polls until `n` records arrived or a consume error (returned) ends it.
fn read(c: &GroupConsumer, n: usize) -> (Vec<ConsumerRecord>, Option<ConsumeError>) {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} of {n} records after 60 s",
            got.len()
        );
        match c.poll(Duration::from_millis(500)) {
            Ok(records) => got.extend(records),
            Err(Error::Consume(e)) => return (got, Some(e)),
            Err(e) => panic!("poll: {e}"),
        }
    }
    (got, None)
}

fn counters(records: &[ConsumerRecord]) -> Vec<u64> {
    records
        .iter()
        .map(|r| u64::from_be_bytes(r.value.as_deref().unwrap().try_into().unwrap()))
        .collect()
}

#[test]
fn committed_offsets_carry_their_epoch_and_are_validated_when_restored() {
    let Some(addr) = broker_or_skip("committed_offsets_carry_their_epoch") else {
        return;
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let topic = format!("epochs-{stamp}");
    let admin = Admin::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr.as_str())]).expect("config"),
    )
    .expect("admin");
    let created = admin
        .create_topics([NewTopic::new(&topic, 1, 1)])
        .expect("create");
    assert!(created[&topic].is_ok(), "{:?}", created[&topic]);
    produce(&addr, &topic, 0, 50);

    // 1. A member reads everything and commits what it consumed: with the epoch.
    let group = format!("epochs-{stamp}");
    let a = member(&addr, &group, "earliest");
    a.subscribe([topic.as_str()]).expect("subscribe");
    let (records, error) = read(&a, 50);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(counters(&records), (0..50).collect::<Vec<u64>>());
    let epoch = records[49].leader_epoch;
    assert!(epoch >= 0, "the broker writes leader epochs into batches");
    a.commit_sync(Offsets::Consumed, Duration::from_secs(30))
        .expect("commit");
    a.close().expect("close");
    let tp = TopicPartition::new(&topic, 0);
    let listed = admin
        .list_consumer_group_offsets(group.clone())
        .expect("list group offsets");
    let committed = listed[&group].as_ref().expect("group offsets")[&tp]
        .as_ref()
        .expect("partition")
        .clone()
        .expect("committed");
    assert_eq!(
        (committed.offset, committed.leader_epoch),
        (50, Some(epoch)),
        "OffsetCommit carried the epoch of the record before the offset"
    );

    // 2. Restored and validated: nothing new, then exactly the new records.
    let b = member(&addr, &group, "none");
    b.subscribe([topic.as_str()]).expect("subscribe");
    produce(&addr, &topic, 50, 55);
    let (records, error) = read(&b, 5);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(counters(&records), (50..55).collect::<Vec<u64>>());
    let m = b.metrics().expect("metrics");
    assert!(
        m.validations >= 1,
        "the committed position was validated: {m:?}"
    );
    assert_eq!(m.truncations, 0, "{m:?}");
    b.close().expect("close");

    // 3. A committed offset past the end of its epoch (the records after 55 were lost,
    // as in an unclean election): truncation.
    let lost = format!("{group}-lost");
    let set = admin
        .alter_consumer_group_offsets(
            lost.clone(),
            [(
                tp.clone(),
                OffsetAndMetadata {
                    offset: 70,
                    leader_epoch: Some(epoch),
                    metadata: String::new(),
                },
            )],
        )
        .expect("alter offsets");
    assert!(set.values().all(Result::is_ok), "{set:?}");
    let c = member(&addr, &lost, "none");
    c.subscribe([topic.as_str()]).expect("subscribe");
    let (records, error) = read(&c, 1);
    assert!(records.is_empty(), "nothing read past a truncation");
    match error {
        Some(ConsumeError::LogTruncation {
            offset: 70,
            divergent_offset: Some(55),
            ..
        }) => {}
        other => panic!("expected LogTruncation at 70 diverging from 55, got {other:?}"),
    }
    c.close().expect("close");

    // 4. The same with a reset policy: back to the divergent offset, not to the start.
    let reset = format!("{group}-reset");
    let set = admin
        .alter_consumer_group_offsets(
            reset.clone(),
            [(
                tp,
                OffsetAndMetadata {
                    offset: 70,
                    leader_epoch: Some(epoch),
                    metadata: String::new(),
                },
            )],
        )
        .expect("alter offsets");
    assert!(set.values().all(Result::is_ok), "{set:?}");
    let d = member(&addr, &reset, "earliest");
    d.subscribe([topic.as_str()]).expect("subscribe");
    let start = Instant::now();
    while d.position(&topic, 0).expect("position") != Some(55) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "position {:?}, not the divergent offset 55",
            d.position(&topic, 0)
        );
        assert!(d.poll(Duration::from_millis(100)).expect("poll").is_empty());
    }
    produce(&addr, &topic, 55, 58);
    let (records, error) = read(&d, 3);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(counters(&records), vec![55, 56, 57]);
    let m = d.metrics().expect("metrics");
    assert_eq!((m.truncations, m.resets), (1, 0), "{m:?}");
    d.close().expect("close");
    eprintln!("epoch {epoch}: committed, restored, validated; truncation detected and repositioned: {m:?}");
}
