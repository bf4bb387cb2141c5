//! Producer scenarios on a virtual clock against the scripted cluster of `cluster.rs`.
//! Each ends by checking the guarantees: every delivered record is in its partition's
//! log once, at the reported offset; no value is written twice; each partition's log
//! keeps send order; every batch is reported exactly once.

mod bounds;
mod cluster;
mod linger;
mod split;
mod txn;
mod txn_broker;

use std::time::Duration;

use cluster::{Cluster, PARTITIONS};

use super::{Blocked, ProduceError, SendError};
use crate::client::Cause;
use crate::config::ClientConfig;
use crate::protocol::messages::produce::response::PartitionProduceResponse;
use crate::protocol::KafkaCode;

/// A record value: a big-endian counter (the order check reads it) and padding.
fn value(n: u64) -> Vec<u8> {
    let mut v = n.to_be_bytes().to_vec();
    v.extend_from_slice(&[b'x'; 92]);
    v
}

/// Sends `count` records from counter `from`, spread over the partitions in turn.
fn send_many(c: &mut Cluster, from: u64, count: u64) {
    for n in from..from + count {
        c.send_ok((n % PARTITIONS as u64) as i32, &value(n));
    }
}

/// The common prologue: a cluster and its producer (with these extra settings) that has
/// its producer id and a connection to broker 1, six records (one per partition)
/// delivered.
fn warmed(extra: &[(&str, &str)]) -> Cluster {
    let mut c = Cluster::new(extra);
    send_many(&mut c, 0, 6);
    flush(&mut c);
    assert!(c.run_until(Duration::from_secs(2), all_reported), "warm-up");
    c
}

/// Seals every open batch now (linger cut short).
fn flush(c: &mut Cluster) {
    c.client
        .command(c.now, c.producer, |p, _| {
            p.flush();
        })
        .expect("running");
}

fn all_reported(c: &mut Cluster) -> bool {
    c.client
        .command(c.now, c.producer, |p, _| p.batches_outstanding())
        .is_some_and(|n| n == 0)
}

fn metrics(c: &mut Cluster) -> super::ProducerMetrics {
    c.client
        .command(c.now, c.producer, |p, _| p.metrics())
        .expect("running")
}

#[test]
fn records_are_batched_per_partition_and_all_delivered_in_order() {
    let mut c = Cluster::new(&[]);
    send_many(&mut c, 0, 3000);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 3000);
    let m = metrics(&mut c);
    assert_eq!(m.records_delivered, 3000);
    assert!(
        c.produce_requests < 60,
        "3000 records in {} requests: batching",
        c.produce_requests
    );
    assert_eq!(m.buffer_used, 0, "every batch released its memory");
    assert_eq!(m.epoch_bumps, 0);
}

#[test]
fn a_lost_answer_is_retried_and_the_broker_dedups_it() {
    let mut c = Cluster::new(&[]);
    send_many(&mut c, 0, 60);
    c.faults.lose_answers = 1;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 60);
    let m = metrics(&mut c);
    assert!(m.retries >= 1 && m.duplicates >= 1, "{m:?}");
}

#[test]
fn a_connection_reset_before_the_broker_reads_is_retried() {
    let mut c = Cluster::new(&[]);
    send_many(&mut c, 0, 60);
    c.faults.reset_before = 2;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 60);
    assert!(c.reports.iter().all(|r| r.outcome.is_ok()));
}

#[test]
fn a_reset_with_requests_in_flight_resends_them_in_order() {
    let mut c = warmed(&[("linger.ms", "0"), ("batch.size", "1000")]);
    c.faults.hold = true;
    for round in 0..4 {
        send_many(&mut c, 6 + round * 30, 30);
        c.step(Duration::from_millis(1));
    }
    c.reset_node(1);
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), 126);
}

#[test]
fn a_leader_change_with_five_requests_in_flight_keeps_order_and_loses_nothing() {
    let mut c = warmed(&[("linger.ms", "0"), ("batch.size", "1000")]);
    c.faults.hold = true;
    let mut n = 6;
    for _ in 0..8 {
        send_many(&mut c, n, 60);
        n += 60;
        c.step(Duration::from_millis(1));
    }
    let m = metrics(&mut c);
    assert_eq!(m.requests_in_flight, 5, "the in-flight cap holds");
    for p in 0..PARTITIONS {
        c.move_leader(p, 2);
    }
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(10), all_reported));
    assert_eq!(c.check_guarantees(), n as usize);
    for p in 0..PARTITIONS as usize {
        assert!(!c.parts[p].values.is_empty());
    }
    let m = metrics(&mut c);
    assert!(m.errors.contains_key(&KafkaCode::NOT_LEADER_OR_FOLLOWER.0));
}

/// A partition's batches go to one broker at a time: while its earlier batches wait at
/// the old leader, nothing of it goes to the new one (it would arrive there first and be
/// refused OUT_OF_ORDER_SEQUENCE_NUMBER); once they resolve, everything is delivered in
/// order.
#[test]
fn a_partition_waits_for_its_batches_at_the_old_leader_before_the_new_one() {
    let mut c = warmed(&[("linger.ms", "5"), ("metadata.max.age.ms", "100")]);
    let warm: Vec<usize> = c.parts.iter().map(|p| p.values.len()).collect();
    c.faults.hold_node = Some(1);
    // One batch per partition, lingered into one request that broker 1 holds.
    send_many(&mut c, 6, 6);
    c.run(Duration::from_millis(20));
    assert_eq!(metrics(&mut c).requests_in_flight, 1);
    for p in 0..PARTITIONS {
        c.move_leader(p, 2);
    }
    // The client learns the new leaders from a metadata refresh, then sends more.
    c.run(Duration::from_millis(500));
    send_many(&mut c, 12, 18);
    c.run(Duration::from_millis(500));
    let now: Vec<usize> = c.parts.iter().map(|p| p.values.len()).collect();
    assert_eq!(
        now, warm,
        "nothing appended while the old leader holds earlier batches"
    );
    c.faults.hold_node = None;
    assert!(c.run_until(Duration::from_secs(10), all_reported));
    assert_eq!(c.check_guarantees(), 30);
    let m = metrics(&mut c);
    assert!(
        !m.errors
            .contains_key(&KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0),
        "{m:?}"
    );
}

#[test]
fn a_leader_named_in_the_answer_is_used_without_a_metadata_round_trip() {
    let mut c = warmed(&[]);
    c.faults.hints = true;
    for p in 0..PARTITIONS {
        c.move_leader(p, 2);
    }
    let before = c.metadata_requests;
    send_many(&mut c, 6, 60);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert_eq!(c.check_guarantees(), 66);
    let m = metrics(&mut c);
    assert_eq!(m.leader_hints, PARTITIONS as u64, "{m:?}");
    assert_eq!(c.metadata_requests, before, "no metadata request needed");
    assert!(c.parts.iter().all(|p| p.values.len() == 11));
}

#[test]
fn out_of_order_at_the_head_fails_that_batch_alone_and_bumps_the_epoch() {
    let mut c = warmed(&[]);
    c.faults
        .codes
        .push_back(KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0);
    send_many(&mut c, 6, 6);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    send_many(&mut c, 12, 60);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    let failed: Vec<_> = c.reports.iter().filter(|r| r.outcome.is_err()).collect();
    assert_eq!(failed.len(), 1, "only the batch the broker refused fails");
    assert!(matches!(
        failed[0].outcome,
        Err(ProduceError::Broker { code, .. }) if code == KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER
    ));
    assert_eq!(c.check_guarantees(), 71);
    assert_eq!(metrics(&mut c).epoch_bumps, 1);
}

#[test]
fn out_of_order_for_a_retry_that_may_have_been_written_is_unresolved() {
    // As the simulation found it: a batch was appended but its answer lost (the
    // connection reset), later batches of its partition were appended after it, and its
    // retry, out of the broker's five-batch duplicate window by then, was refused
    // OUT_OF_ORDER_SEQUENCE_NUMBER. That refusal does not prove the batch was not
    // written (here it was): it is reported Unresolved (possibly delivered), not as the
    // broker's error. The scripted broker answers in order, so here the retry is
    // refused (injected) at the head of the line, with later batches queued behind it.
    let mut c = warmed(&[("linger.ms", "0"), ("batch.size", "300")]);
    c.faults.lose_answers = 1;
    let first = c.send_ok(0, &value(6));
    let requests = c.produce_requests;
    assert!(c.run_until(Duration::from_secs(1), |c| c.faults.lose_answers == 0));
    assert_eq!(c.produce_requests, requests + 1, "one attempt, answer lost");
    assert_eq!(c.parts[0].values.len(), 2, "the broker appended it");
    // Later batches queue behind the retry; the retry is refused out of order.
    for n in 7..17 {
        c.send_ok(0, &value(n));
    }
    c.faults
        .codes
        .push_back(KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert!(c.faults.codes.is_empty(), "the retry was refused");
    let report = c
        .reports
        .iter()
        .find(|r| r.batch == first.batch)
        .expect("the first batch is reported");
    assert!(
        matches!(report.outcome, Err(ProduceError::Unresolved)),
        "{:?}",
        report.outcome
    );
    let others: Vec<_> = c
        .reports
        .iter()
        .filter(|r| r.batch != first.batch)
        .collect();
    assert!(others.iter().all(|r| r.outcome.is_ok()), "{others:?}");
    // Every other record delivered once, in order; the first one is in the log once.
    assert_eq!(c.check_guarantees(), 6 + 10);
    assert_eq!(c.parts[0].values.len(), 12);
    assert_eq!(&c.parts[0].values[1][..], &value(6)[..]);
    assert_eq!(metrics(&mut c).epoch_bumps, 1);
}

#[test]
fn out_of_order_behind_a_retried_batch_is_retried_in_order() {
    let mut c = warmed(&[("linger.ms", "0"), ("batch.size", "300")]);
    // Three requests for partition 0 in flight; the first gets a retriable error, so
    // the broker answers the next two OUT_OF_ORDER_SEQUENCE_NUMBER by itself.
    c.faults.hold = true;
    let mut n = 6;
    for _ in 0..3 {
        for _ in 0..2 {
            c.send_ok(0, &value(n));
            n += 1;
        }
        c.step(Duration::from_millis(1));
    }
    c.faults.codes.push_back(KafkaCode::NOT_ENOUGH_REPLICAS.0);
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), n as usize);
    let m = metrics(&mut c);
    assert!(
        m.errors
            .contains_key(&KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0),
        "{m:?}"
    );
    assert_eq!(m.epoch_bumps, 0);
}

#[test]
fn unknown_producer_id_after_retention_bumps_the_epoch_and_resends() {
    let mut c = Cluster::new(&[]);
    c.faults.unknown_producer_id = true;
    send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    c.forget_producers();
    send_many(&mut c, 12, 12);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), 24);
    let m = metrics(&mut c);
    assert_eq!(m.epoch_bumps, 1);
    assert!(m.errors.contains_key(&KafkaCode::UNKNOWN_PRODUCER_ID.0));
}

/// A partition that answers a retriable code until the delivery timeout: the timeout
/// names that code.
#[test]
fn a_delivery_timeout_names_the_last_retriable_code() {
    let mut c = warmed(&[
        ("linger.ms", "0"),
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "1500"),
    ]);
    c.faults.codes = std::iter::repeat_n(KafkaCode::NOT_ENOUGH_REPLICAS.0, 1_000).collect();
    let warm = c.reports.len();
    send_many(&mut c, 100, 3);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.reports.len(), warm + 3);
    for r in &c.reports[warm..] {
        let Err(e @ ProduceError::TimedOut { last_cause, .. }) = &r.outcome else {
            panic!("{:?}", r.outcome);
        };
        assert_eq!(
            last_cause.as_deref(),
            Some(&Cause::code(KafkaCode::NOT_ENOUGH_REPLICAS.0, None)),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("last cause: NOT_ENOUGH_REPLICAS (19)"),
            "{e}"
        );
    }
}

#[test]
fn batches_expire_honestly_while_later_ones_are_in_flight() {
    let mut c = warmed(&[
        ("linger.ms", "0"),
        ("request.timeout.ms", "1000"),
        ("delivery.timeout.ms", "1500"),
    ]);
    c.faults.hold = true;
    send_many(&mut c, 6, 6);
    c.step(Duration::from_millis(1));
    // Later batches while the first are stuck.
    c.run(Duration::from_millis(600));
    send_many(&mut c, 12, 6);
    c.run(Duration::from_millis(1200));
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    let timed_out = c
        .reports
        .iter()
        .filter(|r| matches!(r.outcome, Err(ProduceError::TimedOut { .. })))
        .count();
    // Batches still in a request when their time ran out end with that request's
    // outcome (delivered if it was answered); the others time out, naming why.
    assert!(timed_out >= 1, "{:?}", c.reports);
    for r in &c.reports {
        if let Err(e @ ProduceError::TimedOut { last_cause, .. }) = &r.outcome {
            assert!(
                last_cause
                    .as_ref()
                    .is_some_and(|c| c.to_string().contains("Produce request")),
                "{e}"
            );
            assert!(e.to_string().contains("; last cause: "), "{e}");
        }
    }
    for r in &c.reports {
        if let Err(e) = &r.outcome {
            assert!(
                e.possibly_delivered(),
                "written requests are possibly delivered: {e}"
            );
        }
    }
    // The producer goes on under a new epoch.
    send_many(&mut c, 100, 12);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    c.check_guarantees();
    let tail = &c.reports[c.reports.len() - 6..];
    assert!(tail.iter().all(|r| r.outcome.is_ok()), "{tail:?}");
    assert!(metrics(&mut c).epoch_bumps >= 1);
}

#[test]
fn a_full_buffer_is_reported_at_once_and_never_exceeded() {
    let mut c = Cluster::new(&[("buffer.memory", "40000"), ("batch.size", "16384")]);
    send_many(&mut c, 0, 1);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    c.faults.hold = true;
    let mut refused = None;
    for n in 1..10_000u64 {
        match c.send((n % PARTITIONS as u64) as i32, &value(n)) {
            Ok(_) => {}
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
        let m = metrics(&mut c);
        assert!(m.buffer_used <= m.buffer_limit);
    }
    assert_eq!(refused, Some(SendError::WouldBlock(Blocked::BufferFull)));
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert!(
        c.send(0, &value(20_000)).is_ok(),
        "room again once answered"
    );
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    c.check_guarantees();
}

#[test]
fn acks_zero_reports_delivered_without_offsets() {
    let mut c = Cluster::new(&[("acks", "0")]);
    assert!(!c
        .client
        .command(c.now, c.producer, |p, _| p.is_idempotent())
        .unwrap());
    send_many(&mut c, 0, 30);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert_eq!(c.reported_records(), 30);
    for r in &c.reports {
        let d = r.outcome.as_ref().expect("delivered");
        assert_eq!(d.base_offset, -1);
    }
    let logged: usize = c.parts.iter().map(|p| p.values.len()).sum();
    assert_eq!(logged, 30);
}

#[test]
fn an_oversize_record_fails_alone() {
    let mut c = Cluster::new(&[("max.request.size", "2000")]);
    c.send_ok(0, &value(0));
    let big = vec![0u8; 5000];
    assert!(matches!(
        c.send(0, &big),
        Err(SendError::RecordTooLarge {
            key: "max.request.size",
            ..
        })
    ));
    c.send_ok(0, &value(1));
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert_eq!(c.check_guarantees(), 2);
}

#[test]
fn unknown_error_codes_fail_the_batch_with_a_typed_error() {
    let mut c = Cluster::new(&[]);
    c.faults.codes.push_back(30_000);
    c.send_ok(0, &value(0));
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert!(matches!(
        c.reports[0].outcome,
        Err(ProduceError::Broker {
            code: KafkaCode(30_000),
            ..
        })
    ));
    c.send_ok(0, &value(1));
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert!(c.reports[1].outcome.is_ok());
    c.check_guarantees();
}

fn drop_partitions(resp: &mut crate::protocol::messages::produce::ProduceResponse) {
    for t in &mut resp.responses {
        t.partition_responses.clear();
    }
}

fn add_strangers(resp: &mut crate::protocol::messages::produce::ProduceResponse) {
    for t in &mut resp.responses {
        t.partition_responses.push(PartitionProduceResponse {
            index: 99,
            base_offset: 5,
            ..Default::default()
        });
    }
}

#[test]
fn answers_that_leave_out_a_partition_are_retried_without_duplicates() {
    let mut c = Cluster::new(&[]);
    send_many(&mut c, 0, 12);
    c.faults.mangle = Some(drop_partitions);
    c.run(Duration::from_millis(50));
    c.faults.mangle = None;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 12);
    let m = metrics(&mut c);
    assert!(m.unexpected_responses >= 1 && m.duplicates >= 1, "{m:?}");
}

#[test]
fn answers_naming_partitions_we_did_not_send_are_ignored() {
    let mut c = Cluster::new(&[]);
    c.faults.mangle = Some(add_strangers);
    send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert_eq!(c.check_guarantees(), 12);
    assert_eq!(
        c.reports.len(),
        6,
        "one report per batch, none for strangers"
    );
}

fn negative_offsets(resp: &mut crate::protocol::messages::produce::ProduceResponse) {
    for t in &mut resp.responses {
        for p in &mut t.partition_responses {
            p.base_offset = -5;
        }
    }
}

#[test]
fn negative_offsets_are_reported_as_unknown_not_trusted() {
    let mut c = Cluster::new(&[]);
    c.faults.mangle = Some(negative_offsets);
    send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert_eq!(c.reported_records(), 12);
    for r in &c.reports {
        let d = r.outcome.as_ref().expect("delivered");
        assert_eq!(d.base_offset, -1);
        assert_eq!(d.offset(3), -1);
    }
}

#[test]
fn close_reports_every_pending_record_and_finishes() {
    let mut c = Cluster::new(&[("linger.ms", "60000")]);
    send_many(&mut c, 0, 30);
    c.client
        .command(c.now, c.producer, |p, _| p.close())
        .unwrap();
    assert!(matches!(c.send(0, &value(99)), Err(SendError::Closed)));
    c.run(Duration::from_millis(100));
    assert_eq!(c.reported_records(), 30);
    assert_eq!(c.check_guarantees(), 30);
    assert_eq!(c.client.ops_running(), 0, "the machine finished");
}

#[test]
fn abort_reports_unsent_and_in_flight_records_as_closed() {
    let mut c = warmed(&[]);
    c.faults.hold = true;
    send_many(&mut c, 6, 12);
    c.run(Duration::from_millis(20));
    c.client
        .command(c.now, c.producer, |p, cx| p.abort(cx))
        .unwrap();
    c.run(Duration::from_millis(5));
    assert_eq!(c.reported_records(), 18);
    for r in &c.reports[6..] {
        assert!(matches!(r.outcome, Err(ProduceError::Closed { .. })));
    }
    assert_eq!(c.client.ops_running(), 0);
}

#[test]
fn flush_cuts_linger_short() {
    let mut c = Cluster::new(&[("linger.ms", "60000")]);
    send_many(&mut c, 0, 12);
    c.run(Duration::from_millis(50));
    assert!(c.reports.is_empty(), "lingering");
    let token = c
        .client
        .command(c.now, c.producer, |p, _| p.flush())
        .unwrap();
    assert!(c.run_until(Duration::from_secs(1), |c| c
        .client
        .command(c.now, c.producer, |p, _| p.is_flushed(token))
        .unwrap()));
    assert_eq!(c.check_guarantees(), 12);
}

#[test]
fn conflicting_settings_with_explicit_idempotence_are_refused() {
    for (key, value) in [
        ("acks", "1"),
        ("retries", "0"),
        ("max.in.flight.requests.per.connection", "6"),
    ] {
        let err = ClientConfig::from_pairs([
            ("bootstrap.servers", "b:9092"),
            ("enable.idempotence", "true"),
            (key, value),
        ])
        .unwrap_err();
        assert!(err.to_string().contains(key), "{err}");
        // Without the explicit setting, idempotence is off instead, as in Java.
        let config =
            ClientConfig::from_pairs([("bootstrap.servers", "b:9092"), (key, value)]).unwrap();
        assert!(!config.producer().idempotent(config.common()));
    }
    let config = ClientConfig::from_pairs([("bootstrap.servers", "b:9092")]).unwrap();
    assert!(
        config.producer().idempotent(config.common()),
        "on by default"
    );
    let err = ClientConfig::from_pairs([
        ("bootstrap.servers", "b:9092"),
        ("delivery.timeout.ms", "1000"),
    ])
    .unwrap_err();
    assert!(err.to_string().contains("delivery.timeout.ms"), "{err}");
    let err =
        ClientConfig::from_pairs([("bootstrap.servers", "b:9092"), ("lingr.ms", "5")]).unwrap_err();
    assert!(
        err.to_string().contains("linger.ms"),
        "typo suggestion: {err}"
    );
}

#[test]
fn a_fresh_topic_whose_leader_refuses_at_first_still_gets_everything() {
    // As on a just-created topic: the broker named leader answers NOT_LEADER for a
    // while, with several requests of each partition in flight.
    let mut c = Cluster::new(&[("linger.ms", "0"), ("batch.size", "500")]);
    for _ in 0..40 {
        c.faults
            .codes
            .push_back(KafkaCode::NOT_LEADER_OR_FOLLOWER.0);
    }
    send_many(&mut c, 0, 600);
    assert!(
        c.run_until(Duration::from_secs(20), all_reported),
        "{:?}",
        metrics(&mut c)
    );
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), 600);
}

#[test]
fn a_topic_unknown_at_first_is_asked_for_once_per_answer_until_it_appears() {
    // Right after creation the broker answers UNKNOWN_TOPIC_OR_PARTITION for a while. A
    // blocked send may retry once per metadata answer, never in a loop of its own (a
    // driver that retried on every notification spun and starved its sockets).
    let mut c = Cluster::new(&[("linger.ms", "0")]);
    c.faults.unknown_topic = 5;
    let mut notifies = 0;
    let mut refusals = 0;
    let appended = loop {
        match c.send(0, &value(0)) {
            Ok(a) => break a,
            Err(SendError::WouldBlock(Blocked::Metadata)) => refusals += 1,
            Err(e) => panic!("refused: {e}"),
        }
        // The send is retried only when the producer says it may now succeed.
        let seen = c.notifies;
        assert!(
            c.run_until(Duration::from_secs(2), |c| c.notifies > seen),
            "a blocked send is told when to retry"
        );
        notifies += 1;
        assert!(notifies < 50, "retries are paced by metadata answers");
    };
    assert_eq!(appended.partition, 0);
    assert!(
        refusals <= c.metadata_requests,
        "{refusals} refusals for {} metadata answers",
        c.metadata_requests
    );
    assert!(c.metadata_requests >= 6, "{}", c.metadata_requests);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 1);
}

#[test]
fn a_first_batch_refused_by_a_fresh_leader_is_not_overtaken_by_its_successors() {
    // Seen on a just-created topic: the first batch is answered NOT_LEADER_OR_FOLLOWER,
    // then the broker becomes leader. It keeps no sequence for a producer it has not
    // seen, so it would append a later batch first (any first sequence is accepted) and
    // refuse the retried first one as out of order forever. Until a partition's first
    // batch is acknowledged, no other batch of it may be in flight.
    let mut c = Cluster::new(&[("linger.ms", "0"), ("batch.size", "300")]);
    c.faults
        .codes
        .push_back(KafkaCode::NOT_LEADER_OR_FOLLOWER.0);
    for n in 0..40 {
        c.send_ok(0, &value(n));
    }
    assert!(
        c.run_until(Duration::from_secs(10), all_reported),
        "{:?}",
        metrics(&mut c)
    );
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), 40);
    let m = metrics(&mut c);
    assert!(
        !m.errors
            .contains_key(&KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0),
        "{m:?}"
    );
}
