//! A consume-transform-produce pipeline, exactly once: a group member reads the input
//! topic `read_committed`; per poll a transaction holds the transformed records (values
//! upper-cased, keys kept) on the output topic and the positions consumed, so a record's
//! output and its consumed offset commit together or not at all. An abortable error
//! aborts the batch and reads it again.
//!
//! ```sh
//! txn_pipeline BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID [--max-records N] [--idle-secs S]
//! ```
//!
//! It runs until at least `N` input records went through (whole polls), or until no
//! input came for `S` seconds (without either: until killed). With no positional
//! arguments it is a demo against `KAFKA_BOOTSTRAP_SERVERS` (default `127.0.0.1:9092`):
//! fresh input and output topics, 300 input records, `--max-records 300 --idle-secs
//! 30`, and at the end a check that a `read_committed` reader finds each input record's
//! output exactly once.
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-blocking --example txn_pipeline`

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_blocking::{Admin, Consumer, ConsumerRecord, Error, GroupConsumer, Producer, Record};
use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;

const T: Duration = Duration::from_secs(30);
const DEMO_RECORDS: usize = 300;
const PARTITIONS: i32 = 3;

struct Args {
    bootstrap: String,
    input: String,
    output: String,
    group: String,
    transactional_id: String,
    max_records: Option<usize>,
    idle: Option<Duration>,
    demo: bool,
}

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    let args = parse(std::env::args().skip(1))?;
    if args.demo {
        demo_input(&args)?;
    }
    let done = run(&args)?;
    println!("{done} records through the pipeline");
    if args.demo {
        check_output(&args)?;
    }
    Ok(())
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, Failure> {
    let (mut positional, mut max_records, mut idle) = (Vec::new(), None, None);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--max-records" => max_records = Some(value("--max-records")?.parse()?),
            "--idle-secs" => idle = Some(Duration::from_secs(value("--idle-secs")?.parse()?)),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}").into()),
            _ => positional.push(a),
        }
    }
    if let [bootstrap, input, output, group, transactional_id] = &positional[..] {
        return Ok(Args {
            bootstrap: bootstrap.clone(),
            input: input.clone(),
            output: output.clone(),
            group: group.clone(),
            transactional_id: transactional_id.clone(),
            max_records,
            idle,
            demo: false,
        });
    }
    if !positional.is_empty() {
        return Err(
            "usage: txn_pipeline BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID \
                    [--max-records N] [--idle-secs S] (or no arguments: a demo)"
                .into(),
        );
    }
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let name = format!("kafka-rs-example-txn-{stamp}");
    Ok(Args {
        bootstrap,
        input: format!("{name}-in"),
        output: format!("{name}-out"),
        group: format!("{name}-group"),
        transactional_id: format!("{name}-tx"),
        max_records: max_records.or(Some(DEMO_RECORDS)),
        idle: idle.or(Some(Duration::from_secs(30))),
        demo: true,
    })
}

/// The pipeline; returns how many input records went through.
fn run(args: &Args) -> Result<usize, Failure> {
    let consumer = GroupConsumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("group.id", args.group.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
    ])?)?;
    consumer.subscribe([args.input.as_str()])?;
    let producer = Producer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("transactional.id", args.transactional_id.as_str()),
    ])?)?;
    producer.init_transactions(T)?;
    let (mut done, mut transactions, mut last_input) = (0, 0, Instant::now());
    while args.max_records.is_none_or(|max| done < max) {
        if args.idle.is_some_and(|idle| last_input.elapsed() >= idle) {
            println!("no input for {:?}: stopping", last_input.elapsed());
            break;
        }
        let records = consumer.poll(Duration::from_millis(500))?;
        if records.is_empty() {
            continue;
        }
        last_input = Instant::now();
        match transact(&producer, &consumer, &args.output, &records) {
            Ok(()) => {
                done += records.len();
                transactions += 1;
                println!("transaction {transactions}: {} records", records.len());
            }
            Err(Error::Transaction(e)) if e.is_abortable() => {
                println!("aborting a batch of {}: {e}", records.len());
                producer.abort_transaction(T)?;
                rewind(&consumer, &records)?;
            }
            // Fatal (e.g. fenced by a newer instance): this producer is done.
            Err(e) => return Err(e.into()),
        }
    }
    producer.close(T)?;
    consumer.close()?;
    Ok(done)
}

/// One batch in one transaction: its output, then the positions consumed.
fn transact(
    producer: &Producer,
    consumer: &GroupConsumer,
    output: &str,
    records: &[ConsumerRecord],
) -> Result<(), Error> {
    producer.begin_transaction()?;
    for r in records {
        let value = r.value.as_deref().unwrap_or_default().to_ascii_uppercase();
        let mut out = Record::new(output, value);
        if let Some(key) = &r.key {
            out = out.key(key.clone());
        }
        // Not waited for: a record that fails makes the commit fail (abortable).
        drop(producer.send(out)?);
    }
    let (group, offsets) = consumer.transaction_offsets()?;
    producer.send_offsets_to_transaction(offsets, &group, T)?;
    producer.commit_transaction(T)
}

/// Reads an aborted batch again: each partition from its first record in it.
fn rewind(consumer: &GroupConsumer, records: &[ConsumerRecord]) -> Result<(), Error> {
    let mut firsts = BTreeMap::new();
    for r in records {
        firsts
            .entry((r.topic.clone(), r.partition))
            .or_insert(r.offset);
    }
    for ((topic, partition), offset) in firsts {
        consumer.seek(&topic, partition, offset)?;
    }
    Ok(())
}

/// The demo's topics and input records.
fn demo_input(args: &Args) -> Result<(), Failure> {
    let config = ClientConfig::from_pairs([("bootstrap.servers", args.bootstrap.as_str())])?;
    let admin = Admin::new(config.clone())?;
    let topics = [args.input.as_str(), args.output.as_str()];
    let created = admin.create_topics(topics.map(|t| NewTopic::new(t, PARTITIONS, 1)))?;
    for t in topics {
        created[t]
            .as_ref()
            .map_err(|e| format!("create {t}: {e}"))?;
    }
    let producer = Producer::new(config)?;
    let sent: Vec<_> = (0..DEMO_RECORDS)
        .map(|i| producer.send(Record::new(args.input.as_str(), format!("record {i}"))))
        .collect::<Result<_, _>>()?;
    for d in sent {
        d.wait()?;
    }
    producer.close(T)?;
    println!("demo: {DEMO_RECORDS} records in {}", args.input);
    Ok(())
}

/// The demo's check: each input record's output exactly once, read `read_committed`.
fn check_output(args: &Args) -> Result<(), Failure> {
    let reader = Consumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
    ])?)?;
    reader.assign((0..PARTITIONS).map(|p| (args.output.as_str(), p)))?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let (start, mut quiet_since, mut read) = (Instant::now(), Instant::now(), 0);
    // Until every record came and then nothing more for 2 s (so duplicates would show).
    while read < DEMO_RECORDS || quiet_since.elapsed() < Duration::from_secs(2) {
        if start.elapsed() > T {
            return Err(format!("{read} of {DEMO_RECORDS} outputs after {T:?}").into());
        }
        let got = reader.poll(Duration::from_millis(200))?;
        read += got.len();
        if !got.is_empty() {
            quiet_since = Instant::now();
        }
        for r in got {
            let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
            *seen.entry(value.into_owned()).or_default() += 1;
        }
    }
    reader.close()?;
    for i in 0..DEMO_RECORDS {
        let want = format!("RECORD {i}");
        if seen.remove(&want) != Some(1) {
            return Err(format!("{want} is not in the output exactly once").into());
        }
    }
    if !seen.is_empty() {
        return Err(format!("unexpected output: {seen:?}").into());
    }
    println!("demo: each record's output exactly once in {}", args.output);
    Ok(())
}
