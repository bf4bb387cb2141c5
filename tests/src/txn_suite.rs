//! The transaction suite every adapter runs (`tests/tests/txn_<adapter>.rs`) through
//! its [`Adapter`] impl, on the real broker:
//!
//! 1. [`commit_and_abort`]: begin, send [`COMMITTED`] records, commit; begin, send
//!    [`ABORTED`], abort. A `read_committed` reader (the blocking consumer) sees the
//!    committed records exactly once and none of the aborted; a `read_uncommitted`
//!    one sees the aborted records that were written (the ones reported delivered:
//!    at least the half waited for before the abort);
//! 2. [`consume_transform_produce`]: a group consumer of the adapter
//!    (`read_committed`, auto-commit off) polls an input topic of [`INPUT`] records;
//!    per poll the producer begins, sends each record transformed to an output topic,
//!    sends the consumer's [`TxnMember::transaction_offsets`] into the transaction and
//!    commits. Afterwards the group's committed offsets (admin list group offsets) are
//!    the input's end offsets and the output holds each input record once;
//! 3. [`txn_pipeline`]: the same through the adapter's `TxnPipeline` helper.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{ProducerMetrics, TxnOffset};

use kafka_driver::producer::Record;

use crate::group_suite::{committed, committed_with_metadata};
use crate::producer_suite;

/// Partitions of every topic of the suite.
pub const PARTITIONS: i32 = 3;
/// Records of the committed transaction in [`commit_and_abort`].
pub const COMMITTED: usize = 100;
/// Records of the aborted transaction in [`commit_and_abort`].
pub const ABORTED: usize = 50;
/// Input records of [`consume_transform_produce`].
pub const INPUT: usize = 300;
/// The longest the suite (and an adapter's call) waits for something that must happen.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A transactional producer, as the suite drives it (blocking calls; async adapters
/// block on their runtime, mio turns its loop). Errors the suite does not expect are
/// panics.
pub trait TxnProducer {
    /// `begin_transaction`.
    fn begin(&mut self);
    /// Sends one record (its outcome is kept for [`TxnProducer::outcomes`]).
    fn send(&mut self, topic: &str, key: &str, value: &str);
    /// The outcomes of the records sent since the last call, in send order (waits for
    /// each).
    fn outcomes(&mut self) -> Vec<Result<(), String>>;
    /// `send_offsets_to_transaction`, waiting for its result.
    fn send_offsets(&mut self, offsets: Vec<TxnOffset>, group: &GroupMetadata);
    /// `commit_transaction`, waiting for its result.
    fn commit(&mut self) -> Result<(), String>;
    /// `abort_transaction`, waiting for its result.
    fn abort(&mut self) -> Result<(), String>;
    /// `close`: the final counters.
    fn close(&mut self) -> ProducerMetrics;
}

/// A group consumer feeding a transactional producer.
pub trait TxnMember {
    /// One poll (a batch, possibly empty).
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord>;
    /// The member's group identity and consumed positions (with their leader epochs).
    fn transaction_offsets(&mut self) -> (GroupMetadata, Vec<TxnOffset>);
    /// `close` (leaves the group).
    fn close(&mut self);
}

/// Makes the adapter's producers and group consumers.
pub trait Adapter {
    /// The adapter's producer.
    type Producer: TxnProducer;
    /// The adapter's group consumer.
    type Member: TxnMember;
    /// A producer with `config` (it has a `transactional.id`), `init_transactions` done.
    fn producer(&mut self, config: ClientConfig) -> Self::Producer;
    /// A group consumer with `config`, subscribed to `topic`.
    fn member(&mut self, config: ClientConfig, topic: &str) -> Self::Member;
}

/// A transactional producer config for the rig at `bootstrap`.
pub fn producer_config(bootstrap: &str, transactional_id: &str) -> ClientConfig {
    producer_suite::config(
        bootstrap,
        &[
            ("transactional.id", transactional_id),
            ("transaction.timeout.ms", "60000"),
        ],
    )
}

/// A `read_committed` group consumer config without auto-commit; polls of at most 50
/// records, so the input takes several transactions.
pub fn member_config(bootstrap: &str, group: &str) -> ClientConfig {
    ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
        ("max.poll.records", "50"),
    ])
    .expect("member config")
}

/// A fresh topic of [`PARTITIONS`] partitions named after `tag`.
fn fresh_topic(bootstrap: &str, tag: &str) -> String {
    let topic = producer_suite::unique_topic(tag);
    producer_suite::create_topic_with(bootstrap, &topic, PARTITIONS);
    topic
}

/// Every value in `topic` as a consumer with `isolation` reads it: until at least
/// `expect` came, then until nothing new came for 2 s (so extras would show).
pub fn read_values(bootstrap: &str, topic: &str, isolation: &str, expect: usize) -> Vec<String> {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", isolation),
    ])
    .expect("reader config");
    let reader = kafka_blocking::Consumer::new(config).expect("reader");
    reader
        .assign((0..PARTITIONS).map(|p| (topic, p)))
        .expect("assign");
    let mut values = Vec::new();
    let start = Instant::now();
    let mut quiet_since = Instant::now();
    while values.len() < expect || quiet_since.elapsed() < Duration::from_secs(2) {
        assert!(
            start.elapsed() < PATIENCE,
            "{isolation}: {} of {expect} values of {topic}",
            values.len()
        );
        let got = reader.poll(Duration::from_millis(200)).expect("poll");
        if !got.is_empty() {
            quiet_since = Instant::now();
        }
        for r in got {
            let v = r.value.expect("a value");
            values.push(String::from_utf8(v.to_vec()).expect("utf-8"));
        }
    }
    reader.close().expect("close the reader");
    values
}

/// How many times each value came.
fn counts(values: &[String]) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for v in values {
        *m.entry(v.as_str()).or_insert(0) += 1;
    }
    m
}

/// Begin, [`COMMITTED`] records, commit; begin, [`ABORTED`] records, abort; then what
/// `read_committed` and `read_uncommitted` readers see (`name` names the topic).
pub fn commit_and_abort(adapter: &mut impl Adapter, bootstrap: &str, name: &str) {
    let topic = fresh_topic(bootstrap, &format!("txn-{name}"));
    let mut p = adapter.producer(producer_config(bootstrap, &format!("{topic}-tx")));

    p.begin();
    for i in 0..COMMITTED {
        p.send(&topic, &format!("k{i}"), &format!("committed-{i}"));
    }
    p.commit().expect("commit");
    let outcomes = p.outcomes();
    assert_eq!(outcomes.len(), COMMITTED);
    for (i, o) in outcomes.iter().enumerate() {
        o.as_ref()
            .unwrap_or_else(|e| panic!("committed record {i}: {e}"));
    }

    // Half of them written before the abort (so it needs the abort marker), the other
    // half sent just before it (written, or dropped unsent).
    p.begin();
    for i in 0..ABORTED / 2 {
        p.send(&topic, &format!("k{i}"), &format!("aborted-{i}"));
    }
    let mut outcomes = p.outcomes();
    for (i, o) in outcomes.iter().enumerate() {
        o.as_ref()
            .unwrap_or_else(|e| panic!("record {i}, written before the abort: {e}"));
    }
    for i in ABORTED / 2..ABORTED {
        p.send(&topic, &format!("k{i}"), &format!("aborted-{i}"));
    }
    p.abort().expect("abort");
    outcomes.extend(p.outcomes());
    assert_eq!(
        outcomes.len(),
        ABORTED,
        "every aborted record has an outcome"
    );
    // Written before the abort (reported delivered) or dropped (reported aborted).
    let written = outcomes.iter().filter(|o| o.is_ok()).count();
    for o in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert!(o.contains("abort"), "an aborted record's outcome: {o}");
    }

    eprintln!("txn suite: {written} of {ABORTED} aborted records were written");
    let m = p.close();
    assert_eq!(
        (m.transactions_committed, m.transactions_aborted),
        (1, 1),
        "{m:?}"
    );

    let seen = read_values(bootstrap, &topic, "read_committed", COMMITTED);
    let c = counts(&seen);
    assert_eq!(seen.len(), COMMITTED, "read_committed: {c:?}");
    for i in 0..COMMITTED {
        assert_eq!(c.get(format!("committed-{i}").as_str()), Some(&1), "{i}");
    }
    assert!(c.keys().all(|v| !v.starts_with("aborted")), "{c:?}");
    let everything = read_values(bootstrap, &topic, "read_uncommitted", COMMITTED + written);
    assert_eq!(
        everything.len(),
        COMMITTED + written,
        "read_uncommitted: the committed records and the {written} aborted ones written"
    );
}

/// Puts [`INPUT`] records into a fresh input topic (no transaction); the topic and its
/// end offset per partition.
fn fill_input(bootstrap: &str, name: &str) -> (String, BTreeMap<i32, i64>) {
    let topic = fresh_topic(bootstrap, &format!("ctp-in-{name}"));
    let producer =
        kafka_blocking::Producer::new(producer_suite::config(bootstrap, &[])).expect("producer");
    let deliveries: Vec<_> = (0..INPUT)
        .map(|i| {
            let record = kafka_blocking::Record::new(topic.as_str(), format!("in-{i}"));
            producer.send(record.key(format!("k{i}"))).expect("send")
        })
        .collect();
    let mut ends = BTreeMap::new();
    for d in deliveries {
        let m = d.wait().expect("delivered");
        let end = ends.entry(m.partition).or_insert(0);
        *end = (m.offset + 1).max(*end);
    }
    producer.close(PATIENCE).expect("close");
    (topic, ends)
}

/// The output value for an input value.
pub fn transform(value: &[u8]) -> String {
    format!("out({})", String::from_utf8_lossy(value))
}

/// One consume-transform-produce pipeline over the whole input, one transaction per
/// non-empty poll; then the group's committed offsets and the output.
pub fn consume_transform_produce(adapter: &mut impl Adapter, bootstrap: &str, name: &str) {
    let (input, ends) = fill_input(bootstrap, name);
    let output = fresh_topic(bootstrap, &format!("ctp-out-{name}"));
    let group = format!("{input}-g");
    let mut member = adapter.member(member_config(bootstrap, &group), &input);
    let mut p = adapter.producer(producer_config(bootstrap, &format!("{input}-tx")));

    let (mut consumed, mut transactions) = (0, 0);
    // Per partition, the next offset after the last record taken.
    let mut next = BTreeMap::new();
    let start = Instant::now();
    while consumed < INPUT {
        assert!(
            start.elapsed() < PATIENCE,
            "{consumed} of {INPUT} input records after {transactions} transactions"
        );
        let records = member.poll(Duration::from_millis(200));
        if records.is_empty() {
            continue;
        }
        p.begin();
        for r in &records {
            assert_eq!(&*r.topic, input);
            let key = String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned();
            p.send(
                &output,
                &key,
                &transform(r.value.as_deref().unwrap_or_default()),
            );
        }
        let (meta, offsets) = member.transaction_offsets();
        assert_eq!(meta.group_id, group);
        assert!(meta.generation_id > 0, "inside a generation: {meta:?}");
        assert!(!meta.member_id.is_empty(), "{meta:?}");
        for r in &records {
            next.insert(r.partition, r.offset + 1);
        }
        // Exactly what was handed out: the next offset after the last record taken
        // (a partition nothing was taken from yet may be left out, or be at 0).
        for o in &offsets {
            let part = o.partition;
            assert_eq!(o.topic, input, "{offsets:?}");
            assert_eq!(
                Some(&o.offset),
                next.get(&part).or(Some(&0)),
                "partition {part}: {offsets:?}"
            );
            // A fresh topic on one node: every record was written in leader epoch 0,
            // and the position after a taken record carries it (KIP-320).
            if next.contains_key(&part) {
                assert_eq!(o.leader_epoch, Some(0), "partition {part}: {offsets:?}");
            }
        }
        for part in next.keys() {
            assert!(
                offsets.iter().any(|o| o.partition == *part),
                "partition {part} missing: {offsets:?}"
            );
        }
        p.send_offsets(offsets, &meta);
        p.commit().expect("commit");
        for (i, o) in p.outcomes().into_iter().enumerate() {
            o.unwrap_or_else(|e| panic!("output record {i}: {e}"));
        }
        consumed += records.len();
        transactions += 1;
    }
    assert_eq!(consumed, INPUT, "no input record twice");
    assert_eq!(next, ends, "every input record taken");
    assert!(
        transactions >= 2,
        "the input took {transactions} transaction(s)"
    );
    eprintln!("txn suite: {INPUT} input records in {transactions} transactions");
    for _ in 0..3 {
        let extra = member.poll(Duration::from_millis(200));
        assert!(extra.is_empty(), "input read again: {extra:?}");
    }
    let m = p.close();
    assert_eq!(m.transactions_committed, transactions as u64, "{m:?}");
    member.close();

    offsets_and_output_match(bootstrap, &group, &input, &output, &ends);
}

/// After a pipeline over the whole input: the group's committed offsets are the input's
/// end offsets and the output, read `read_committed`, holds each input record's
/// [`transform`] exactly once.
fn offsets_and_output_match(
    bootstrap: &str,
    group: &str,
    input: &str,
    output: &str,
    ends: &BTreeMap<i32, i64>,
) {
    // The offsets commit with the transaction markers, just after EndTxn answers.
    let mut got = committed(bootstrap, group, input);
    let deadline = Instant::now() + Duration::from_secs(20);
    while &got != ends && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        got = committed(bootstrap, group, input);
    }
    assert_eq!(
        &got, ends,
        "the group's offsets are the input's end offsets"
    );
    // Committed with the leader epoch of the record before each (a fresh topic on one
    // node: epoch 0), so a consumer restarting from them validates them (KIP-320).
    let epochs: BTreeMap<i32, Option<i32>> = committed_with_metadata(bootstrap, group, input)
        .into_iter()
        .map(|(p, o)| (p, o.leader_epoch))
        .collect();
    for (p, end) in ends {
        let want = (*end > 0).then_some(0);
        assert_eq!(
            epochs.get(p).copied().flatten(),
            want,
            "partition {p}: {epochs:?}"
        );
    }

    let out = read_values(bootstrap, output, "read_committed", INPUT);
    let c = counts(&out);
    assert_eq!(out.len(), INPUT, "read_committed output");
    for i in 0..INPUT {
        let want = transform(format!("in-{i}").as_bytes());
        assert_eq!(c.get(want.as_str()), Some(&1), "{want}");
    }
}

/// The `transform` a pipeline test gives `run_once`: each record's [`transform`]ed value,
/// with its key, to `output`.
pub fn to_output(output: &str) -> impl FnMut(&ConsumerRecord, &mut Vec<Record>) + '_ {
    move |r, out| {
        let value = transform(r.value.as_deref().unwrap_or_default());
        out.push(Record::new(output, value).key(r.key.clone().unwrap_or_default()));
    }
}

/// Counts a pipeline test's `run_once` results until [`INPUT`] records committed.
#[derive(Debug)]
pub struct Rounds {
    start: Instant,
    done: usize,
    rounds: usize,
}

impl Default for Rounds {
    fn default() -> Self {
        Rounds {
            start: Instant::now(),
            done: 0,
            rounds: 0,
        }
    }
}

impl Rounds {
    /// Whether records are still to come (panics after [`PATIENCE`]).
    pub fn more(&self) -> bool {
        assert!(
            self.start.elapsed() < PATIENCE,
            "{} records committed",
            self.done
        );
        self.done < INPUT
    }
    /// One `run_once` result: `n` records committed.
    pub fn add(&mut self, n: usize) {
        self.done += n;
        self.rounds += usize::from(n > 0);
    }
    /// The rounds that committed records.
    pub fn rounds(&self) -> usize {
        self.rounds
    }
}

/// The adapter's `TxnPipeline`: `run(consumer config, producer config, input, output)`
/// builds it over `input`, calls `run_once` with [`to_output`] while [`Rounds::more`],
/// closes it and returns [`Rounds::rounds`]. Then the offsets and the output are checked
/// as in [`consume_transform_produce`].
pub fn txn_pipeline(
    bootstrap: &str,
    name: &str,
    run: impl FnOnce(ClientConfig, ClientConfig, &str, &str) -> usize,
) {
    let (input, ends) = fill_input(bootstrap, &format!("pipe-{name}"));
    let output = fresh_topic(bootstrap, &format!("pipe-out-{name}"));
    let group = format!("{input}-g");
    let rounds = run(
        member_config(bootstrap, &group),
        producer_config(bootstrap, &format!("{input}-tx")),
        &input,
        &output,
    );
    assert!(rounds >= 2, "the input took {rounds} round(s)");
    eprintln!("txn suite: {INPUT} input records in {rounds} pipeline rounds");
    offsets_and_output_match(bootstrap, &group, &input, &output, &ends);
}
