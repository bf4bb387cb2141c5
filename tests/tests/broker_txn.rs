//! Real broker: transactions through the blocking adapter, under the protocol version
//! the cluster finalized and then, in the same test (the feature is cluster-wide),
//! under the other one (`transaction.version` 2, KIP-890, and 1):
//!
//! - committed transactions are read whole by a `read_committed` consumer, an aborted
//!   one never (a `read_uncommitted` consumer proves its records were written);
//! - a second instance with the same `transactional.id` fences the first: the first's
//!   commit fails and its pending records never become visible; the second commits;
//! - offsets sent into a transaction are the group's committed offsets only once the
//!   transaction commits;
//! - a `TxnPipeline` round whose output is refused aborts and rewinds; the next round
//!   commits the same records once.

mod txn_common;

use kafka_blocking::{BlockingClient, Error, GroupMetadata, Record, TxnPipeline};
use kafka_core::admin::ListConsumerGroupOffsets;
use kafka_core::config::ClientConfig;
use kafka_tests::broker_or_skip;
use txn_common::{
    client, counts, read_all, topic, txn_producer, under_both_transaction_versions, unique, T,
};

fn send(p: &kafka_blocking::Producer, topic: &str, values: impl IntoIterator<Item = String>) {
    let deliveries: Vec<_> = values
        .into_iter()
        .map(|v| p.send(Record::new(topic, v)).expect("send"))
        .collect();
    for d in deliveries {
        d.wait().expect("delivered");
    }
}

fn commit_and_abort(addr: &str, level: i16) {
    let topic = topic(addr, &format!("txn-v{level}"), 3);
    let p = txn_producer(addr, &unique("tx-commit"));
    let batch = |tag: &'static str, n: usize| (0..n).map(move |i| format!("{tag}-{i}"));
    p.begin_transaction().expect("begin");
    send(&p, &topic, batch("one", 300));
    p.commit_transaction(T).expect("commit one");
    p.begin_transaction().expect("begin");
    send(&p, &topic, batch("two", 200));
    p.abort_transaction(T).expect("abort two");
    p.begin_transaction().expect("begin");
    // Not waited for: the commit flushes them.
    for v in batch("three", 100) {
        drop(p.send(Record::new(topic.as_str(), v)).expect("send"));
    }
    p.commit_transaction(T).expect("commit three");
    let m = p.close(T).expect("close");
    assert_eq!(
        m.transaction_version, level,
        "the producer used the cluster's protocol"
    );
    assert_eq!((m.transactions_committed, m.transactions_aborted), (2, 1));

    let committed = read_all(addr, &topic, 3, "read_committed");
    let c = counts(&committed);
    assert_eq!(
        committed.len(),
        400,
        "v{level}: one and three, nothing else"
    );
    assert!(c.values().all(|&n| n == 1), "v{level}: each record once");
    assert!(
        c.keys().all(|v| !v.starts_with("two")),
        "v{level}: aborted visible"
    );
    let everything = read_all(addr, &topic, 3, "read_uncommitted");
    assert_eq!(
        everything.len(),
        600,
        "v{level}: the aborted records were written"
    );
}

fn second_instance_fences_the_first(addr: &str, level: i16) {
    let topic = topic(addr, &format!("fence-v{level}"), 2);
    let id = unique("tx-fence");
    let zombie = txn_producer(addr, &id);
    zombie.begin_transaction().expect("begin");
    send(&zombie, &topic, (0..50).map(|i| format!("zombie-{i}")));
    let fresh = txn_producer(addr, &id);
    let err = zombie
        .commit_transaction(T)
        .expect_err("the fenced instance cannot commit");
    match &err {
        Error::Transaction(e) if e.is_fatal() => {}
        Error::Transaction(e) if e.is_abortable() => {
            let again = zombie.abort_transaction(T).expect_err("fenced");
            assert!(
                matches!(&again, Error::Transaction(e) if e.is_fatal()),
                "v{level}: {again}"
            );
        }
        other => panic!("v{level}: {other}"),
    }
    fresh.begin_transaction().expect("begin");
    send(&fresh, &topic, (0..10).map(|i| format!("fresh-{i}")));
    fresh
        .commit_transaction(T)
        .expect("the new instance commits");
    let committed = read_all(addr, &topic, 2, "read_committed");
    assert_eq!(committed.len(), 10, "v{level}: {committed:?}");
    assert!(committed.iter().all(|v| v.starts_with("fresh")));
}

fn offsets_commit_with_the_transaction(addr: &str, level: i16) {
    let topic = topic(addr, &format!("offs-v{level}"), 2);
    let group = unique("g-txn");
    let meta = GroupMetadata {
        group_id: group.clone(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
    };
    let p = txn_producer(addr, &unique("tx-offsets"));
    let committed = |c: &BlockingClient| {
        let mut all = c
            .run_op(ListConsumerGroupOffsets::new(group.as_str()))
            .expect("driver")
            .expect("list offsets");
        let offsets = all.remove(&group).expect("the group").expect("its offsets");
        offsets
            .into_iter()
            .filter(|(tp, _)| tp.topic == topic)
            .filter_map(|(tp, o)| Some((tp.partition, o.expect("offset")?.offset)))
            .collect::<Vec<_>>()
    };
    let admin = client(addr);
    p.begin_transaction().expect("begin");
    send(&p, &topic, ["x".to_string()]);
    p.send_offsets_to_transaction([(topic.as_str(), 0, 7), (topic.as_str(), 1, 9)], &meta, T)
        .expect("offsets into the transaction");
    p.abort_transaction(T).expect("abort");
    assert!(
        committed(&admin).is_empty(),
        "v{level}: aborted offsets committed"
    );
    p.begin_transaction().expect("begin");
    p.send_offsets_to_transaction([(topic.as_str(), 0, 11), (topic.as_str(), 1, 13)], &meta, T)
        .expect("offsets into the transaction");
    p.commit_transaction(T).expect("commit");
    // The coordinator writes the commit markers just after EndTxn answers.
    let deadline = std::time::Instant::now() + T;
    while committed(&admin).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(committed(&admin), vec![(0, 11), (1, 13)], "v{level}");
}

/// `TxnPipeline`: a batch whose output cannot be written is aborted and the consumer
/// rewound, so the next round commits the same records. (Runs inside the one test:
/// the other changes the cluster-wide `transaction.version`.)
fn a_pipeline_round_that_fails_is_aborted_and_retried(addr: &str) {
    let addr = addr.to_string();
    let input = topic(&addr, "pipe-in", 2);
    let output = topic(&addr, "pipe-out", 2);
    let plain = kafka_blocking::Producer::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr.as_str())]).expect("config"),
    )
    .expect("producer");
    send(&plain, &input, (0..20).map(|i| format!("in-{i}")));
    let group = unique("g-pipe");
    let consumer = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("group.id", group.as_str()),
        ("isolation.level", "read_committed"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
    ])
    .expect("config");
    let producer = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("transactional.id", unique("tx-pipe").as_str()),
    ])
    .expect("config");
    let pipeline = TxnPipeline::new(consumer, producer, [input.as_str()]).expect("pipeline");
    // The first round that gets records writes one of them to a topic that cannot exist.
    let mut failed = None;
    let deadline = std::time::Instant::now() + T;
    while failed.is_none() {
        assert!(std::time::Instant::now() < deadline, "no records");
        let r = pipeline.run_once(std::time::Duration::from_millis(500), |r, out| {
            out.push(Record::new(
                "not a topic!",
                r.value.clone().unwrap_or_default(),
            ));
        });
        match r {
            Ok(0) => {}
            Ok(n) => panic!("{n} records committed despite a refused record"),
            Err(e) => failed = Some(e),
        }
    }
    let err = failed.expect("failed");
    assert!(
        matches!(&err, Error::Transaction(e) if e.is_abortable()),
        "{err}"
    );
    let mut done = 0;
    while done < 20 {
        assert!(std::time::Instant::now() < deadline, "only {done} of 20");
        done += pipeline
            .run_once(std::time::Duration::from_millis(500), |r, out| {
                out.push(Record::new(
                    output.as_str(),
                    r.value.clone().unwrap_or_default(),
                ));
            })
            .expect("round");
    }
    assert_eq!(done, 20, "the rewound records came again, once");
    pipeline.close().expect("close");
    let out = read_all(&addr, &output, 2, "read_committed");
    let c = counts(&out);
    assert_eq!(out.len(), 20);
    assert!(c.values().all(|&n| n == 1));
}

#[test]
fn transactions_under_both_protocol_versions() {
    let Some(addr) = broker_or_skip("broker_txn") else {
        return;
    };
    under_both_transaction_versions(&addr, |level| {
        commit_and_abort(&addr, level);
        second_instance_fences_the_first(&addr, level);
        offsets_commit_with_the_transaction(&addr, level);
        a_pipeline_round_that_fails_is_aborted_and_retried(&addr);
    });
}
