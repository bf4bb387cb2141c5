//! The one-shot lookups next to the consumer: `beginning_offsets`, `end_offsets` and
//! `offsets_for_times`, with the consumer's isolation level.

use std::time::Duration;

use super::*;
use crate::admin::{AdminError, TopicPartition};
use crate::consumer::{EdgeOffsets, OffsetsForTimes};

fn config(extra: &[(&str, &str)]) -> ClientConfig {
    let mut pairs = vec![("bootstrap.servers", "b1:9092"), ("client.id", "c")];
    pairs.extend_from_slice(extra);
    ClientConfig::from_pairs(pairs).unwrap()
}

fn all() -> Vec<TopicPartition> {
    (0..PARTITIONS)
        .map(|p| TopicPartition::new(TOPIC, p))
        .collect()
}

#[test]
fn edge_offsets_and_offsets_for_times_answer_every_partition() {
    let extra = [("isolation.level", "read_committed")];
    let mut h = Harness::new(&extra);
    let c = config(&extra);
    h.offsets_by_time.insert(0, 7);
    let begin = h.client.start_op(h.now, EdgeOffsets::beginning(&c, all()));
    let end = h.client.start_op(h.now, EdgeOffsets::end(&c, all()));
    let times = h.client.start_op(
        h.now,
        OffsetsForTimes::new(
            &c,
            [
                (TopicPartition::new(TOPIC, 0), 1_000),
                (TopicPartition::new(TOPIC, 1), 1_000),
            ],
        ),
    );
    h.run(Duration::from_millis(50));
    let begin = h.client.take_op_output(begin).expect("ended").unwrap();
    let end = h.client.take_op_output(end).expect("ended").unwrap();
    let times = h.client.take_op_output(times).expect("ended").unwrap();
    let want = |o: i64| {
        all()
            .into_iter()
            .map(|tp| (tp, o))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(begin, want(0));
    assert_eq!(end, want(20));
    assert_eq!(times.len(), 2);
    let first = times[&TopicPartition::new(TOPIC, 0)].expect("a record that recent");
    assert_eq!(first.offset, 7);
    assert_eq!(times[&TopicPartition::new(TOPIC, 1)], None);
    let asked: Vec<i64> = h.list_offsets_times.iter().map(|&(_, t)| t).collect();
    assert!(asked.contains(&1_000) && asked.contains(&-2) && asked.contains(&-1));
    assert!(!h.list_offsets_isolation.is_empty());
    assert!(
        h.list_offsets_isolation.iter().all(|&l| l == 1),
        "read_committed lookups: {:?}",
        h.list_offsets_isolation
    );
}

#[test]
fn a_lookup_fails_with_its_first_failed_partition_or_a_negative_time() {
    let mut h = Harness::new(&[]);
    let c = config(&[]);
    let negative = h.client.start_op(
        h.now,
        OffsetsForTimes::new(&c, [(TopicPartition::new(TOPIC, 0), -5)]),
    );
    h.step();
    let out = h.client.take_op_output(negative).expect("ended at once");
    assert!(matches!(out, Err(AdminError::Invalid(_))), "{out:?}");
    assert!(h.list_offsets_times.is_empty(), "nothing was sent");

    h.refuse_list_offsets = Some(KafkaCode::TOPIC_AUTHORIZATION_FAILED);
    let end = h.client.start_op(
        h.now,
        EdgeOffsets::end(&c, all()).timeout(Duration::from_secs(1)),
    );
    h.run(Duration::from_millis(50));
    let out = h.client.take_op_output(end).expect("ended");
    assert!(
        matches!(&out, Err(AdminError::Kafka { code, .. }) if *code == KafkaCode::TOPIC_AUTHORIZATION_FAILED),
        "{out:?}"
    );
}
