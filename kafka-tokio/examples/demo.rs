//! The main job, end to end on tokio (what `scripts/demo` runs), with the product's API
//! only: the cluster and the versions we negotiate with it, a topic, 200,000 keyed records
//! produced idempotently, the same records consumed back (assign) and by a consumer group,
//! a committed and an aborted transaction read `read_committed`, and clean-up. Each step
//! ends with a verification line; those lines are the same on every run against the same
//! broker (timings are printed apart, marked `timing`).
//!
//! `KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-tokio --example demo [N]`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::admin::{NewTopic, OffsetSpec, TopicPartition};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::api_versions::ApiVersionsRequest;
use kafka_core::protocol::ApiKey;
use kafka_tokio::{Admin, Consumer, GroupConsumer, Offsets, Producer, Record};

const TOPIC: &str = "kafka-rs-demo";
const TXN_TOPIC: &str = "kafka-rs-demo-txn";
const GROUP: &str = "kafka-rs-demo-group";
const PARTITIONS: i32 = 6;
const KEYS: usize = 1000;

type Error = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let n: usize = std::env::args().nth(1).map_or(Ok(200_000), |a| a.parse())?;
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let client = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    let admin = Admin::new(client.clone())?;

    cluster(&admin).await?;
    // A run that was interrupted may have left these behind.
    clean_up(&admin).await?;
    for topic in [TOPIC, TXN_TOPIC] {
        admin
            .create_topics([NewTopic::new(topic, PARTITIONS, 1)])
            .await?[topic]
            .clone()
            .map_err(|e| format!("create {topic}: {e}"))?;
    }
    println!("created {TOPIC} and {TXN_TOPIC}, {PARTITIONS} partitions each");

    let acked = produce(&client, n).await?;
    consume(&bootstrap, n, &acked).await?;
    group(&admin, &bootstrap, n).await?;
    transactions(&admin, &bootstrap).await?;

    clean_up(&admin).await?;
    println!("deleted {TOPIC}, {TXN_TOPIC} and group {GROUP}");
    Ok(())
}

/// The cluster and, for a few APIs, the version range the broker offers, ours, and the
/// version the client uses (the highest both sides know).
async fn cluster(admin: &Admin) -> Result<(), Error> {
    let cluster = admin.describe_cluster().await?;
    println!(
        "cluster {}: {} broker(s), controller {}",
        cluster.cluster_id,
        cluster.brokers.len(),
        cluster.controller_id
    );
    // v3+ brokers refuse an ApiVersions request without a valid software name/version.
    let ask = ApiVersionsRequest {
        client_software_name: "kafka-rs-demo".into(),
        client_software_version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    let versions = admin.call(Route::Any, ask).await?;
    if versions.error_code != 0 {
        return Err(format!("ApiVersions failed with error code {}", versions.error_code).into());
    }
    for key in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::Metadata,
        ApiKey::ConsumerGroupHeartbeat,
        ApiKey::EndTxn,
    ] {
        let ours = key.versions();
        let Some(broker) = versions.api_keys.iter().find(|k| k.api_key == key as i16) else {
            println!("  {:<24} broker: none", key.name());
            continue;
        };
        let used = broker.max_version.min(ours.max);
        println!(
            "  {:<24} broker v{}..={}, ours v{ours}: uses v{used}",
            key.name(),
            broker.min_version,
            broker.max_version
        );
    }
    Ok(())
}

/// Deletes the demo's topics and group if they exist.
async fn clean_up(admin: &Admin) -> Result<(), Error> {
    // Unknown groups and topics are fine here: there is nothing to delete.
    drop(admin.delete_consumer_groups([GROUP]).await?);
    drop(admin.delete_topics([TOPIC, TXN_TOPIC]).await?);
    // Deletion is asynchronous on the broker: wait until the names are free again.
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin
        .list_topics()
        .await?
        .keys()
        .any(|t| t == TOPIC || t == TXN_TOPIC)
    {
        if Instant::now() > deadline {
            return Err("the demo topics were not deleted within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

fn key(i: usize) -> String {
    format!("key-{:04}", i % KEYS)
}

/// Produces `n` keyed records (idempotence is on by default: acks=all, no duplicate on
/// retry) and returns the acknowledged offsets per partition, in send order.
async fn produce(client: &ClientConfig, n: usize) -> Result<BTreeMap<i32, Vec<i64>>, Error> {
    let producer = Producer::new(client.clone())?;
    let topic: Arc<str> = TOPIC.into();
    let start = Instant::now();
    let mut deliveries = Vec::with_capacity(n);
    for i in 0..n {
        let record = Record::new(topic.clone(), format!("record {i:08}")).key(key(i));
        deliveries.push(producer.send(record).await?);
    }
    let mut acked: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for d in deliveries {
        let written = d.await?;
        acked
            .entry(written.partition)
            .or_default()
            .push(written.offset);
    }
    let took = start.elapsed();
    producer.close(Duration::from_secs(30)).await?;
    // Same key, same partition; offsets acknowledged in send order, with no hole.
    let in_order = acked
        .values()
        .all(|offs| offs.iter().enumerate().all(|(i, &o)| o == i as i64));
    let counts: Vec<usize> = (0..PARTITIONS)
        .map(|p| acked.get(&p).map_or(0, Vec::len))
        .collect();
    println!(
        "produced {n} records with {KEYS} keys: every record acknowledged, offsets 0.. in send \
         order per partition: {in_order}; records per partition {counts:?}"
    );
    println!("  timing: {}", rate(n, took));
    if !in_order || counts.iter().sum::<usize>() != n {
        return Err("the acknowledgements do not add up".into());
    }
    Ok(acked)
}

/// Reads every partition from the beginning and checks each record arrived exactly once,
/// in offset order, with its key's records in send order.
async fn consume(bootstrap: &str, n: usize, acked: &BTreeMap<i32, Vec<i64>>) -> Result<(), Error> {
    let consumer = Consumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
    ])?)?;
    consumer.assign((0..PARTITIONS).map(|p| (TOPIC, p)))?;
    let start = Instant::now();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut last_of_key: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    let (mut got, mut bad) = (0usize, 0usize);
    while got < n && start.elapsed() < Duration::from_secs(120) {
        for r in consumer.poll(Duration::from_millis(500)).await? {
            let expect = next.entry(r.partition).or_insert(0);
            bad += usize::from(r.offset != *expect);
            *expect = r.offset + 1;
            let index: usize = r
                .value
                .as_deref()
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.strip_prefix("record "))
                .and_then(|v| v.parse().ok())
                .ok_or("a value the demo did not write")?;
            let k = r.key.as_deref().unwrap_or_default().to_vec();
            bad += usize::from(k != key(index).into_bytes());
            if let Some(prev) = last_of_key.insert(k, index) {
                bad += usize::from(prev >= index);
            }
            got += 1;
        }
    }
    let took = start.elapsed();
    consumer.close().await?;
    let complete = (0..PARTITIONS)
        .all(|p| next.get(&p).copied().unwrap_or(0) == acked.get(&p).map_or(0, |o| o.len() as i64));
    println!(
        "consumed {got} records (assign, from the beginning): each exactly once, in order per \
         partition and per key: {}",
        complete && bad == 0 && got == n
    );
    println!("  timing: {}", rate(got, took));
    if !complete || bad != 0 || got != n {
        return Err(format!("{got} of {n} records read, {bad} out of place").into());
    }
    Ok(())
}

/// One group member reads the topic, commits, and leaves; the group's committed offsets
/// are then the log end of every partition.
async fn group(admin: &Admin, bootstrap: &str, n: usize) -> Result<(), Error> {
    let consumer = GroupConsumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("group.id", GROUP),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ])?)?;
    consumer.subscribe([TOPIC])?;
    let start = Instant::now();
    let mut got = 0;
    while got < n && start.elapsed() < Duration::from_secs(120) {
        got += consumer.poll(Duration::from_millis(500)).await?.len();
    }
    let took = start.elapsed();
    consumer
        .commit_sync(Offsets::Consumed, Duration::from_secs(30))
        .await?;
    consumer.close().await?;
    let ends = admin
        .list_offsets((0..PARTITIONS).map(|p| (TopicPartition::new(TOPIC, p), OffsetSpec::Latest)))
        .await?;
    let committed = admin.list_consumer_group_offsets(GROUP).await?;
    let committed = committed[GROUP].clone()?;
    let at_end = ends.iter().all(|(tp, end)| {
        let end = end.as_ref().map(|e| e.offset).ok();
        let done = committed
            .get(tp)
            .and_then(|c| c.as_ref().ok().cloned().flatten());
        end.is_some() && done.map(|c| c.offset) == end
    });
    println!(
        "group {GROUP}: one member read {got} records, committed, and left; committed offsets \
         are the log end of all {PARTITIONS} partitions: {at_end}"
    );
    println!("  timing: {} (including the join)", rate(got, took));
    if !at_end || got != n {
        return Err("the group did not commit the log end".into());
    }
    Ok(())
}

/// A committed and an aborted transaction; `read_committed` sees the committed one only.
async fn transactions(admin: &Admin, bootstrap: &str) -> Result<(), Error> {
    let t = Duration::from_secs(30);
    let producer = Producer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", "kafka-rs-demo-txn"),
    ])?)?;
    producer.init_transactions(t).await?;
    for (outcome, commit) in [("committed", true), ("aborted", false)] {
        producer.begin_transaction().await?;
        for i in 0..10 {
            let record = Record::new(TXN_TOPIC, format!("{outcome} {i}")).key(format!("k{i}"));
            drop(producer.send(record).await?);
        }
        if commit {
            producer.commit_transaction(t).await?;
        } else {
            producer.flush().await?;
            producer.abort_transaction(t).await?;
        }
    }
    producer.close(t).await?;

    let consumer = Consumer::new(ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
    ])?)?;
    consumer.assign((0..PARTITIONS).map(|p| (TXN_TOPIC, p)))?;
    // The log ends: past both transactions and their markers.
    let ends: Vec<(i32, i64)> = admin
        .list_offsets(
            (0..PARTITIONS).map(|p| (TopicPartition::new(TXN_TOPIC, p), OffsetSpec::Latest)),
        )
        .await?
        .into_iter()
        .map(|(tp, end)| Ok((tp.partition, end?.offset)))
        .collect::<Result<_, kafka_core::admin::AdminError>>()?;
    let (mut committed, mut aborted) = (0, 0);
    let start = Instant::now();
    loop {
        for r in consumer.poll(Duration::from_millis(200)).await? {
            match r.value.as_deref() {
                Some(v) if v.starts_with(b"committed") => committed += 1,
                _ => aborted += 1,
            }
        }
        // Done once every partition's position has passed its log end.
        let mut read_all = true;
        for &(p, end) in &ends {
            read_all &= consumer
                .position(TXN_TOPIC, p)
                .await?
                .is_some_and(|pos| pos >= end);
        }
        if read_all || start.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    consumer.close().await?;
    println!(
        "transactions: read_committed saw {committed} of the 10 committed records and {aborted} \
         of the 10 aborted ones"
    );
    if committed != 10 || aborted != 0 {
        return Err("read_committed did not see exactly the committed transaction".into());
    }
    Ok(())
}

fn rate(n: usize, took: Duration) -> String {
    format!(
        "{n} records in {:.2} s, {:.0} records/s",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64().max(1e-9)
    )
}
