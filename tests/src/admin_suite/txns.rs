//! Suite: producers and transactions. Producers are made with raw requests (no producer
//! client yet): InitProducerId, AddPartitionsToTxn v3 (the client form), Produce, EndTxn.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_blocking::{Error as BlockingError, Producer, Record};
use kafka_core::admin::{
    AbortTransaction, AbortTransactionSpec, CreateTopics, DescribeCluster, DescribeProducers,
    DescribeTransactions, FenceProducers, IsolationLevel, ListOffsets, ListTransactions, NewTopic,
    OffsetSpec, RawRequest, TopicPartition,
};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::add_partitions_to_txn::request::AddPartitionsToTxnTopic;
use kafka_core::protocol::messages::add_partitions_to_txn::AddPartitionsToTxnRequest;
use kafka_core::protocol::messages::end_txn::EndTxnRequest;
use kafka_core::protocol::messages::init_producer_id::{
    InitProducerIdRequest, InitProducerIdResponse,
};
use kafka_core::protocol::messages::produce::request::{PartitionProduceData, TopicProduceData};
use kafka_core::protocol::messages::produce::ProduceRequest;
use kafka_core::protocol::{KafkaCode, Uuid};
use kafka_core::record::{BatchEncoder, BatchOptions, NewRecord};

use super::{config, plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_txns {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            txns::describe_producers_of_idempotent_producer,
            txns::describe_and_list_open_transaction,
            txns::abort_a_hanging_transaction,
            txns::fence_a_live_transactional_producer,
        );
    };
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// A one-partition topic and its id.
fn topic<D: Driver>(admin: &D, what: &str) -> (String, Uuid) {
    let name = unique::<D>(what);
    let created = admin
        .run(CreateTopics::new([NewTopic::new(&name, 1, 1)]))
        .expect("create topic");
    let id = created[&name].as_ref().expect("topic created").topic_id;
    (name, id)
}

/// Calls `f` until it returns `Some` (retriable broker states right after start-up).
fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: gave up");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn init_producer<D: Driver>(admin: &D, txn: Option<&str>) -> InitProducerIdResponse {
    let route = match txn {
        Some(t) => Route::TxnCoordinator(t.to_string()),
        None => Route::Any,
    };
    let request = InitProducerIdRequest {
        transactional_id: txn.map(str::to_string),
        transaction_timeout_ms: 60_000,
        ..Default::default()
    };
    until("init producer id", || {
        let resp = admin
            .run(RawRequest::new(route.clone(), request.clone()))
            .expect("init producer id");
        match KafkaCode(resp.error_code) {
            KafkaCode::NONE => Some(resp),
            c if c.is_retriable() || c == KafkaCode::CONCURRENT_TRANSACTIONS => None,
            c => panic!("init producer id: {c}"),
        }
    })
}

/// Produces `count` records (sequence 0..count) to partition 0 of `topic`; `txn` makes the
/// batch transactional. Returns the base offset.
#[allow(clippy::too_many_arguments)]
fn produce<D: Driver>(
    admin: &D,
    topic: &str,
    topic_id: Uuid,
    pid: &InitProducerIdResponse,
    txn: Option<&str>,
    count: usize,
    version: Option<i16>,
) -> i64 {
    let opts = BatchOptions {
        producer_id: pid.producer_id,
        producer_epoch: pid.producer_epoch,
        base_sequence: 0,
        transactional: txn.is_some(),
        ..BatchOptions::default()
    };
    let ts = now_ms();
    let mut out = Vec::new();
    let records = (0..count).map(|_| NewRecord {
        timestamp: ts,
        key: None,
        value: Some(b"v"),
        headers: &[],
    });
    let _ = BatchEncoder::new()
        .encode(&opts, records, &mut out)
        .expect("encode batch");
    let request = ProduceRequest {
        transactional_id: txn.map(str::to_string),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.to_string(),
            topic_id,
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(out)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let route = Route::Leader {
        topic: topic.to_string(),
        partition: 0,
    };
    until("produce", || {
        let mut op = RawRequest::new(route.clone(), request.clone());
        if let Some(v) = version {
            op = op.version(v);
        }
        let resp = admin.run(op).expect("produce");
        let p = resp
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .expect("partition response");
        match KafkaCode(p.error_code) {
            KafkaCode::NONE => Some(p.base_offset),
            c if c.is_retriable() => None,
            c => panic!("produce: {c} {:?}", p.error_message),
        }
    })
}

/// DescribeProducers: an idempotent producer's state on the partition leader; a
/// partition the asked broker does not host fails alone.
pub fn describe_producers_of_idempotent_producer<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_producers_of_idempotent_producer") else {
        return;
    };
    let (topic, id) = topic(&admin, "producers");
    let pid = init_producer(&admin, None);
    produce(&admin, &topic, id, &pid, None, 3, None);
    let tp = TopicPartition::new(&topic, 0);
    let described = admin
        .run(DescribeProducers::new([tp.clone()]))
        .expect("describe producers call");
    let active = described[&tp].as_ref().expect("partition described");
    let state = active
        .iter()
        .find(|s| s.producer_id == pid.producer_id)
        .unwrap_or_else(|| panic!("producer missing: {active:?}"));
    assert_eq!(state.producer_epoch, i32::from(pid.producer_epoch));
    assert_eq!(state.last_sequence, 2);
    assert!(state.last_timestamp > 0, "{state:?}");
    assert_eq!(state.current_transaction_start_offset, None);

    let node = *admin
        .run(DescribeCluster::new())
        .expect("describe cluster")
        .brokers
        .keys()
        .next()
        .expect("a broker");
    let absent = TopicPartition::new(&topic, 7);
    let described = admin
        .run(DescribeProducers::new([tp.clone(), absent.clone()]).broker(node))
        .expect("describe producers on a broker");
    assert!(described[&tp].is_ok(), "{described:?}");
    let err = described[&absent].as_ref().expect_err("no such partition");
    assert!(err.code().is_some(), "{err}");
}

/// An open transaction: DescribeTransactions (Ongoing, its partition, start time),
/// ListTransactions with state / producer id / duration filters, DescribeProducers'
/// transaction start offset; after EndTxn the transaction is complete.
pub fn describe_and_list_open_transaction<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_and_list_open_transaction") else {
        return;
    };
    let (topic, topic_id) = topic(&admin, "txn");
    let txn = unique::<D>("txn");
    let pid = init_producer(&admin, Some(&txn));
    let add = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: txn.clone(),
        v3_and_below_producer_id: pid.producer_id,
        v3_and_below_producer_epoch: pid.producer_epoch,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: topic.clone(),
            partitions: vec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    until("add partitions to txn", || {
        let resp = admin
            .run(RawRequest::new(Route::TxnCoordinator(txn.clone()), add.clone()).version(3))
            .expect("add partitions");
        let code = resp
            .results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| &t.results_by_partition)
            .map(|p| KafkaCode(p.partition_error_code))
            .find(|c| *c != KafkaCode::NONE)
            .unwrap_or(KafkaCode::NONE);
        match code {
            KafkaCode::NONE => Some(()),
            c if c.is_retriable() || c == KafkaCode::CONCURRENT_TRANSACTIONS => None,
            c => panic!("add partitions to txn: {c}"),
        }
    });
    let base = produce(&admin, &topic, topic_id, &pid, Some(&txn), 2, Some(11));
    let tp = TopicPartition::new(&topic, 0);

    let missing = unique::<D>("no-such-txn");
    let described = admin
        .run(DescribeTransactions::new([txn.clone(), missing.clone()]))
        .expect("describe transactions call");
    let d = described[&txn].as_ref().expect("described");
    assert_eq!(d.state, "Ongoing");
    assert_eq!(d.producer_id, pid.producer_id);
    assert_eq!(d.transaction_timeout_ms, 60_000);
    assert!(d.transaction_start_time_ms.is_some(), "{d:?}");
    assert!(d.topic_partitions.contains(&tp), "{d:?}");
    assert!(d.coordinator.is_some(), "{d:?}");
    let err = described[&missing]
        .as_ref()
        .expect_err("unknown transactional id");
    assert_eq!(
        err.code(),
        Some(KafkaCode::TRANSACTIONAL_ID_NOT_FOUND),
        "{err}"
    );

    let all = admin
        .run(ListTransactions::new())
        .expect("list transactions");
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let listed = all
        .transactions
        .get(&txn)
        .unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(
        (listed.producer_id, listed.state.as_str()),
        (pid.producer_id, "Ongoing")
    );
    let ongoing = admin
        .run(
            ListTransactions::new()
                .states(["Ongoing"])
                .producer_ids([pid.producer_id]),
        )
        .expect("filtered list");
    assert_eq!(ongoing.transactions.keys().collect::<Vec<_>>(), vec![&txn]);
    let by_pattern = admin
        .run(ListTransactions::new().transactional_id_pattern(format!("^{txn}$")))
        .expect("pattern-filtered list");
    assert_eq!(
        by_pattern.transactions.keys().collect::<Vec<_>>(),
        vec![&txn]
    );
    let aborted = admin
        .run(ListTransactions::new().states(["CompleteAbort"]))
        .expect("filtered list");
    assert!(!aborted.transactions.contains_key(&txn));
    let old = admin
        .run(ListTransactions::new().running_longer_than(Duration::from_secs(3600)))
        .expect("duration-filtered list");
    assert!(!old.transactions.contains_key(&txn), "{old:?}");

    let producers = admin
        .run(DescribeProducers::new([tp.clone()]))
        .expect("describe producers");
    let state = producers[&tp]
        .as_ref()
        .expect("described")
        .iter()
        .find(|s| s.producer_id == pid.producer_id)
        .cloned()
        .expect("transactional producer");
    assert_eq!(state.current_transaction_start_offset, Some(base));

    let end = EndTxnRequest {
        transactional_id: txn.clone(),
        producer_id: pid.producer_id,
        producer_epoch: pid.producer_epoch,
        committed: true,
        ..Default::default()
    };
    let ended = admin
        .run(RawRequest::new(Route::TxnCoordinator(txn.clone()), end).version(4))
        .expect("end txn");
    assert_eq!(ended.error_code, 0, "{}", KafkaCode(ended.error_code));
    until("transaction complete", || {
        let d = admin
            .run(DescribeTransactions::new([txn.clone()]))
            .expect("describe");
        let d = d[&txn].as_ref().expect("described");
        (d.state == "CompleteCommit").then_some(())
    });
}

/// Generous bound for our transactional producer's calls.
const TXN_WAIT: Duration = Duration::from_secs(30);

/// Our transactional producer (`kafka_blocking::Producer`) with `transactional.id` `id`,
/// its transactions initialized, on the rig of `admin`'s test.
fn txn_producer(id: &str) -> Producer {
    let bootstrap = crate::rig_var("KAFKA_BOOTSTRAP_SERVERS").expect("rig bootstrap");
    let config: ClientConfig = config(&[
        ("bootstrap.servers", &bootstrap),
        ("transactional.id", id),
        ("linger.ms", "0"),
    ]);
    let p = Producer::new(config).expect("transactional producer");
    p.init_transactions(TXN_WAIT).expect("init transactions");
    p
}

/// Begins a transaction and writes one record to `topic` (delivered, not committed).
fn open_transaction(p: &Producer, topic: &str) {
    p.begin_transaction().expect("begin");
    p.send(Record::new(topic, "open"))
        .expect("send")
        .wait()
        .expect("delivered");
}

/// The last stable offset of `tp` (ListOffsets latest under read_committed).
fn last_stable_offset<D: Driver>(admin: &D, tp: &TopicPartition) -> i64 {
    let listed = admin
        .run(
            ListOffsets::new([(tp.clone(), OffsetSpec::Latest)])
                .isolation_level(IsolationLevel::ReadCommitted),
        )
        .expect("list offsets");
    listed[tp].as_ref().expect("listed").offset
}

/// AbortTransaction (KIP-664) of a real open transaction of our transactional producer,
/// with the producer id/epoch DescribeProducers reports: the partition's open
/// transaction is gone and the last stable offset moves past it, so `read_committed`
/// readers proceed; the same abort with a stale epoch is refused typed.
pub fn abort_a_hanging_transaction<D: Driver>() {
    let Some(admin) = plaintext::<D>("abort_a_hanging_transaction") else {
        return;
    };
    let (topic, _) = topic(&admin, "hanging");
    let tp = TopicPartition::new(&topic, 0);
    let p = txn_producer(&unique::<D>("hanging-txn"));
    open_transaction(&p, &topic);
    assert_eq!(
        last_stable_offset(&admin, &tp),
        0,
        "the open transaction pins the LSO"
    );

    let producers = admin
        .run(DescribeProducers::new([tp.clone()]))
        .expect("describe producers");
    let state = producers[&tp]
        .as_ref()
        .expect("described")
        .first()
        .cloned()
        .expect("our producer");
    assert_eq!(state.current_transaction_start_offset, Some(0), "{state:?}");
    let spec = AbortTransactionSpec {
        topic_partition: tp.clone(),
        producer_id: state.producer_id,
        producer_epoch: i16::try_from(state.producer_epoch).expect("epoch"),
        coordinator_epoch: state.coordinator_epoch.unwrap_or(0).max(0),
    };
    if spec.producer_epoch > 0 {
        let stale = AbortTransactionSpec {
            producer_epoch: spec.producer_epoch - 1,
            ..spec.clone()
        };
        let err = admin
            .run(AbortTransaction::new(stale))
            .expect_err("an older epoch is fenced");
        assert!(err.code().is_some(), "typed: {err}");
    }
    admin
        .run(AbortTransaction::new(spec))
        .expect("abort transaction");

    let after = admin
        .run(DescribeProducers::new([tp.clone()]))
        .expect("describe producers");
    let state = after[&tp]
        .as_ref()
        .expect("described")
        .first()
        .cloned()
        .expect("our producer");
    assert_eq!(state.current_transaction_start_offset, None, "{state:?}");
    assert_eq!(
        last_stable_offset(&admin, &tp),
        2,
        "past the record and the abort marker"
    );
    drop(p);
}

/// FenceProducers (KIP-730) of a live transactional producer of ours: the id's epoch is
/// bumped past the producer's, and the producer's commit then fails fenced.
pub fn fence_a_live_transactional_producer<D: Driver>() {
    let Some(admin) = plaintext::<D>("fence_a_live_transactional_producer") else {
        return;
    };
    let (topic, _) = topic(&admin, "fenced");
    let id = unique::<D>("fenced-txn");
    let p = txn_producer(&id);
    open_transaction(&p, &topic);
    let tp = TopicPartition::new(&topic, 0);
    let before = admin
        .run(DescribeProducers::new([tp.clone()]))
        .expect("describe producers")[&tp]
        .as_ref()
        .expect("described")
        .first()
        .cloned()
        .expect("our producer");

    let missing = String::new();
    let fenced = admin
        .run(FenceProducers::new([id.clone(), missing.clone()]))
        .expect("fence producers");
    let bumped = fenced[&id].as_ref().expect("fenced");
    assert_eq!(bumped.producer_id, before.producer_id);
    assert!(
        i32::from(bumped.producer_epoch) > before.producer_epoch,
        "{bumped:?} after {before:?}"
    );
    assert!(fenced[&missing].is_err(), "an empty id is refused");

    let err = p
        .commit_transaction(TXN_WAIT)
        .expect_err("the fenced producer cannot commit");
    match &err {
        BlockingError::Transaction(e) if e.is_fatal() => {}
        BlockingError::Transaction(e) if e.is_abortable() => {
            let again = p.abort_transaction(TXN_WAIT).expect_err("fenced");
            assert!(
                matches!(&again, BlockingError::Transaction(e) if e.is_fatal()),
                "{again}"
            );
        }
        other => panic!("{other}"),
    }
    until("the fenced transaction is aborted", || {
        (last_stable_offset(&admin, &tp) >= 2).then_some(())
    });
}
