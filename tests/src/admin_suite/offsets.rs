//! Suite: offsets operations.

use std::time::Duration;

use bytes::Bytes;
use kafka_core::admin::{
    AdminError, DeleteRecords, IsolationLevel, ListOffsets, ListedOffset, OffsetSpec, RawRequest,
    TopicPartition,
};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::produce::request::{PartitionProduceData, TopicProduceData};
use kafka_core::protocol::messages::produce::ProduceRequest;
use kafka_core::protocol::{KafkaCode, Uuid};
use kafka_core::record::{BatchEncoder, BatchOptions, NewRecord};

use super::topics::{create_topic, eventually};
use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_offsets {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            offsets::list_offsets_every_spec,
            offsets::delete_records_moves_the_earliest_offset,
        );
    };
}

/// Produces one record per timestamp, each in its own batch and request (a produce
/// request takes one batch per partition), with raw ProduceRequests (acks=all) to the
/// partition leader; returns the first record's offset.
fn produce<D: Driver>(admin: &D, topic: &str, id: Uuid, partition: i32, stamps: &[i64]) -> i64 {
    let mut encoder = BatchEncoder::new();
    let mut first = None;
    for (i, &timestamp) in stamps.iter().enumerate() {
        let value = format!("record-{i}");
        let record = NewRecord {
            timestamp,
            key: None,
            value: Some(value.as_bytes()),
            headers: &[],
        };
        let mut batch = Vec::new();
        let _ = encoder
            .encode(&BatchOptions::default(), [record], &mut batch)
            .expect("encode batch");
        let offset = produce_batch(admin, topic, id, partition, Bytes::from(batch));
        first.get_or_insert(offset);
    }
    first.expect("records to produce")
}

/// Sends one batch; returns its base offset.
fn produce_batch<D: Driver>(admin: &D, topic: &str, id: Uuid, partition: i32, batch: Bytes) -> i64 {
    let request = ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.to_string(),
            topic_id: id,
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let route = Route::Leader {
        topic: topic.to_string(),
        partition,
    };
    eventually("produce accepted", || {
        let resp = admin
            .run(RawRequest::new(route.clone(), request.clone()))
            .expect("produce call");
        let p = &resp.responses[0].partition_responses[0];
        if KafkaCode(p.error_code).is_retriable() {
            return None;
        }
        assert_eq!(p.error_code, 0, "produce: {}", KafkaCode(p.error_code));
        Some(p.base_offset)
    })
}

/// Milliseconds since the epoch (the broker refuses timestamps far from its clock).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// One partition's listed offset.
fn listed(
    r: &std::collections::BTreeMap<TopicPartition, Result<ListedOffset, AdminError>>,
    tp: &TopicPartition,
) -> ListedOffset {
    r[tp]
        .clone()
        .unwrap_or_else(|e| panic!("{tp:?}: {e} in {r:?}"))
}

/// ListOffsets right after creation (the leader may not know the topic yet: retried),
/// then after producing 5 records with known timestamps: earliest, latest (both
/// isolation levels), by timestamp, max timestamp; an unknown partition times out alone.
pub fn list_offsets_every_spec<D: Driver>() {
    let Some(admin) = plaintext::<D>("list_offsets_every_spec") else {
        return;
    };
    let name = unique::<D>("offsets");
    let id = create_topic(&admin, &name, 2);
    let p0 = TopicPartition::new(&name, 0);
    let p1 = TopicPartition::new(&name, 1);

    let fresh = admin
        .run(ListOffsets::new([
            (p0.clone(), OffsetSpec::Latest),
            (p1.clone(), OffsetSpec::Earliest),
        ]))
        .expect("list right after creation");
    assert_eq!(listed(&fresh, &p0).offset, 0);
    assert_eq!(listed(&fresh, &p1).offset, 0);

    // Timestamps out of order: the highest one is on offset 2.
    let base = now_ms() - 60_000;
    let stamps = [base, base + 1000, base + 5000, base + 2000, base + 3000];
    assert_eq!(produce(&admin, &name, id, 0, &stamps), 0);

    let r = admin
        .run(ListOffsets::new([
            (p0.clone(), OffsetSpec::Earliest),
            (p1.clone(), OffsetSpec::Latest),
        ]))
        .expect("earliest");
    assert_eq!(listed(&r, &p0).offset, 0);
    assert_eq!(listed(&r, &p1).offset, 0, "nothing produced to partition 1");

    for level in [
        IsolationLevel::ReadUncommitted,
        IsolationLevel::ReadCommitted,
    ] {
        let r = admin
            .run(ListOffsets::new([(p0.clone(), OffsetSpec::Latest)]).isolation_level(level))
            .expect("latest");
        let latest = listed(&r, &p0);
        assert_eq!(latest.offset, 5, "{level:?}");
        assert!(latest.leader_epoch.is_some_and(|e| e >= 0), "{latest:?}");
    }

    let max = admin
        .run(ListOffsets::new([(p0.clone(), OffsetSpec::MaxTimestamp)]))
        .expect("max timestamp");
    let max = listed(&max, &p0);
    assert_eq!((max.offset, max.timestamp), (2, base + 5000), "{max:?}");

    for (at, offset) in [
        (base - 1, 0),
        (base + 500, 1),
        (base + 4000, 2),
        (base + 6000, -1),
    ] {
        let r = admin
            .run(ListOffsets::new([(
                p0.clone(),
                OffsetSpec::ByTimestamp(at),
            )]))
            .expect("by timestamp");
        let found = listed(&r, &p0);
        assert_eq!(
            found.offset, offset,
            "first offset at or after {at}: {found:?}"
        );
        if offset >= 0 {
            assert_eq!(found.timestamp, stamps[offset as usize]);
        }
    }

    // A partition beyond the topic's count fails at once (as Java's ListOffsets does for
    // an unknown topic since KAFKA-15425), not at the deadline.
    let nowhere = TopicPartition::new(&name, 7);
    let started = std::time::Instant::now();
    let r = admin
        .run(
            ListOffsets::new([
                (p0.clone(), OffsetSpec::Latest),
                (nowhere.clone(), OffsetSpec::Latest),
            ])
            .timeout(Duration::from_secs(30)),
        )
        .expect("list with an unknown partition");
    assert_eq!(listed(&r, &p0).offset, 5);
    let code = r[&nowhere].as_ref().err().and_then(AdminError::code);
    assert_eq!(code, Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// DeleteRecords moves the low watermark (and so the earliest offset); deleting past the
/// high watermark fails for that partition alone.
pub fn delete_records_moves_the_earliest_offset<D: Driver>() {
    let Some(admin) = plaintext::<D>("delete_records_moves_the_earliest_offset") else {
        return;
    };
    let name = unique::<D>("delete-records");
    let id = create_topic(&admin, &name, 2);
    let p0 = TopicPartition::new(&name, 0);
    let p1 = TopicPartition::new(&name, 1);
    let t = now_ms();
    produce(&admin, &name, id, 0, &[t, t, t, t, t]);
    produce(&admin, &name, id, 1, &[t, t]);

    let r = admin
        .run(DeleteRecords::new([(p0.clone(), 3), (p1.clone(), 10)]))
        .expect("delete records");
    assert_eq!(r[&p0], Ok(3), "{r:?}");
    assert_eq!(
        r[&p1].as_ref().err().and_then(AdminError::code),
        Some(KafkaCode::OFFSET_OUT_OF_RANGE),
        "{r:?}"
    );

    let offsets = admin
        .run(ListOffsets::new([
            (p0.clone(), OffsetSpec::Earliest),
            (p1.clone(), OffsetSpec::Earliest),
        ]))
        .expect("earliest after delete");
    assert_eq!(listed(&offsets, &p0).offset, 3);
    assert_eq!(listed(&offsets, &p1).offset, 0);
    let latest = admin
        .run(ListOffsets::new([(p0.clone(), OffsetSpec::Latest)]))
        .expect("latest after delete");
    assert_eq!(listed(&latest, &p0).offset, 5);

    // -1: up to the high watermark.
    let r = admin
        .run(DeleteRecords::new([(p1.clone(), -1)]))
        .expect("delete all");
    assert_eq!(r[&p1], Ok(2), "{r:?}");
}
