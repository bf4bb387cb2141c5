//! The consumer suite every adapter runs (`tests/tests/consumer_<adapter>.rs`) through
//! its [`Adapter`] impl: a fresh topic of [`PARTITIONS`] partitions, [`RECORDS`] keyed
//! records produced with our blocking producer, then consumed by assigning every
//! partition from the beginning: every record exactly once, in offset order per
//! partition, with the key and value it was sent with; then the offset lookups
//! (`beginning_offsets`, `end_offsets`, `offsets_for_times`), `position`, `seek`,
//! `seek_with_epoch` (validated: KIP-320),
//! `seek_to_beginning`, `pause` and `resume`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::TopicPartition;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{ConsumerRecord, OffsetAndTimestamp};
use kafka_core::record::TimestampType;

use crate::producer_suite;

/// Partitions of the suite's topic.
pub const PARTITIONS: i32 = 6;
/// Records the suite produces and consumes.
pub const RECORDS: usize = 20_000;
/// The longest the suite waits for records that must come.
const PATIENCE: Duration = Duration::from_secs(60);

/// What the suite needs from an adapter's consumer (blocking calls; async adapters
/// block on their runtime). Errors are test failures (panics).
pub trait Adapter {
    /// `assign` of these partitions.
    fn assign(&mut self, partitions: &[(String, i32)]);
    /// `seek`.
    fn seek(&mut self, topic: &str, partition: i32, offset: i64);
    /// `seek_with_epoch`.
    fn seek_with_epoch(&mut self, topic: &str, partition: i32, offset: i64, epoch: i32);
    /// The `validations` counter of `metrics`.
    fn validations(&mut self) -> u64;
    /// `seek_to_beginning`.
    fn seek_to_beginning(&mut self, partitions: &[(String, i32)]);
    /// `pause`.
    fn pause(&mut self, partitions: &[(String, i32)]);
    /// `resume`.
    fn resume(&mut self, partitions: &[(String, i32)]);
    /// `position`.
    fn position(&mut self, topic: &str, partition: i32) -> Option<i64>;
    /// `poll` with this timeout (a batch, possibly empty).
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord>;
    /// `close`.
    fn close(&mut self);
    /// `beginning_offsets` of these partitions (within a minute).
    fn beginning_offsets(&mut self, partitions: &[(String, i32)]) -> Lookup<i64>;
    /// `end_offsets` of these partitions (within a minute).
    fn end_offsets(&mut self, partitions: &[(String, i32)]) -> Lookup<i64>;
    /// `offsets_for_times` of these partitions and times (within a minute).
    fn offsets_for_times(
        &mut self,
        times: &[((String, i32), i64)],
    ) -> Lookup<Option<OffsetAndTimestamp>>;
}

/// What an offset lookup answered, per partition.
pub type Lookup<V> = BTreeMap<TopicPartition, V>;

/// The values of `lookup` in the order of `partitions` (each must be answered).
pub fn in_order<V: Clone>(lookup: &Lookup<V>, partitions: &[(String, i32)]) -> Vec<V> {
    partitions
        .iter()
        .map(|(t, p)| {
            let key = TopicPartition::new(t.as_str(), *p);
            lookup
                .get(&key)
                .cloned()
                .unwrap_or_else(|| panic!("{t}-{p} unanswered"))
        })
        .collect()
}

/// A consumer config for the rig at `bootstrap`: from the earliest offset.
pub fn config(bootstrap: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut pairs = vec![
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
    ];
    pairs.extend_from_slice(extra);
    ClientConfig::from_pairs(pairs).expect("consumer test config")
}

/// The topic the suite consumes, and what is in it.
#[derive(Debug)]
pub struct Fixture {
    /// The topic.
    pub topic: String,
    /// Per partition, the record index at each offset.
    pub at: HashMap<i32, Vec<usize>>,
}

impl Fixture {
    /// Every partition of the topic.
    pub fn partitions(&self) -> Vec<(String, i32)> {
        (0..PARTITIONS).map(|p| (self.topic.clone(), p)).collect()
    }

    /// Records in partition `p`.
    pub fn len(&self, p: i32) -> usize {
        self.at.get(&p).map_or(0, Vec::len)
    }
}

/// Creates a fresh topic for `adapter` and produces `n` keyed records into it with the
/// blocking producer; where each landed is the fixture.
pub fn prepare(bootstrap: &str, adapter: &str, n: usize) -> Fixture {
    let topic = producer_suite::unique_topic(&format!("consume-{adapter}"));
    producer_suite::create_topic_with(bootstrap, &topic, PARTITIONS);
    fill(bootstrap, topic, n)
}

/// Produces `n` keyed records into the existing `topic` with the blocking producer;
/// where each landed is the fixture.
fn fill(bootstrap: &str, topic: String, n: usize) -> Fixture {
    let producer =
        kafka_blocking::Producer::new(producer_suite::config(bootstrap, &[])).expect("producer");
    let name: Arc<str> = topic.as_str().into();
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            let r = kafka_blocking::Record::new(name.clone(), producer_suite::value(i))
                .key(producer_suite::key(i))
                .header("index", Some(i.to_string().into_bytes().into()));
            producer.send(r).expect("send")
        })
        .collect();
    let mut at: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, d) in deliveries.into_iter().enumerate() {
        let m = d.wait().unwrap_or_else(|e| panic!("record {i}: {e}"));
        let slots = at.entry(m.partition).or_default();
        assert_eq!(m.offset, slots.len() as i64, "fresh topic: offsets from 0");
        slots.push(i);
    }
    producer.close(Duration::from_secs(30)).expect("close");
    eprintln!("consumer suite: {n} records produced to {topic}");
    assert_eq!(
        at.len(),
        PARTITIONS as usize,
        "keys spread over every partition"
    );
    Fixture { topic, at }
}

/// Checks records against the fixture: each partition's offsets must come in order
/// from where it was (re)started, each record with its key, value and header.
struct Check<'f> {
    fixture: &'f Fixture,
    next: HashMap<i32, i64>,
    seen: usize,
}

impl<'f> Check<'f> {
    fn new(fixture: &'f Fixture) -> Self {
        Check {
            fixture,
            next: HashMap::new(),
            seen: 0,
        }
    }

    fn from(mut self, partition: i32, offset: i64) -> Self {
        self.next.insert(partition, offset);
        self
    }

    fn take(&mut self, r: &ConsumerRecord) {
        let f = self.fixture;
        assert_eq!(&*r.topic, f.topic);
        let next = self.next.entry(r.partition).or_insert(0);
        assert_eq!(
            r.offset, *next,
            "partition {}: offsets in order, once",
            r.partition
        );
        *next += 1;
        let i = f.at[&r.partition][r.offset as usize];
        assert_eq!(r.key.as_deref(), Some(producer_suite::key(i).as_bytes()));
        assert_eq!(r.value.as_deref(), Some(&producer_suite::value(i)[..]));
        let headers: Vec<_> = r.headers.iter().collect();
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].key.as_ref(), b"index");
        assert_eq!(headers[0].value.as_deref(), Some(i.to_string().as_bytes()));
        assert_eq!(r.timestamp_type, TimestampType::CreateTime);
        assert!(r.timestamp > 0 && r.leader_epoch >= 0, "{r:?}");
        self.seen += 1;
    }
}

/// Polls until `want` records came (checked by `check`), failing after [`PATIENCE`];
/// then polls a little more and expects nothing.
fn consume(c: &mut impl Adapter, check: &mut Check<'_>, want: usize) {
    let start = Instant::now();
    let until = check.seen + want;
    while check.seen < until {
        assert!(
            start.elapsed() < PATIENCE,
            "{} of {want} records after {PATIENCE:?}",
            want - (until - check.seen)
        );
        for r in c.poll(Duration::from_millis(500)) {
            check.take(&r);
        }
    }
    assert_eq!(check.seen, until, "more records than produced");
    let extra = c.poll(Duration::from_millis(300));
    assert!(extra.is_empty(), "unexpected records: {:?}", extra.first());
}

/// Records [`under_sim_faults`] consumes.
pub const SIM_RECORDS: usize = 20_000;

/// An adapter's consumer against the simulated cluster on loopback sockets
/// (`sim::serve`): [`SIM_RECORDS`] records are produced into a fresh 3-broker simulated
/// cluster, then consumed from the beginning of every partition, 100 per poll with a
/// short pause between polls, while a seeded fault schedule (`sim::serve::Faults`) moves
/// leaders, resets every connection to a broker and kills and restarts brokers: every
/// record exactly once, in offset order per partition, with its key, value and header.
/// `make` builds the adapter's consumer from the config.
pub fn under_sim_faults<A: Adapter>(adapter: &str, make: impl FnOnce(ClientConfig) -> A) {
    use crate::sim::cluster::SimCluster;
    use crate::sim::serve::{schedule_seed, Faults, SimServer};

    let seed = schedule_seed(adapter);
    let topic = format!("consume-{adapter}");
    let mut cluster = SimCluster::new(3);
    cluster.create_topic(&topic, PARTITIONS);
    let server = Arc::new(SimServer::start(cluster));
    let fixture = fill(&server.bootstrap(), topic.clone(), SIM_RECORDS);
    println!("{adapter}: seed {seed} (SIM_ADAPTER_SEED={seed} replays the schedule)");
    let faults = Faults::start(&server, adapter, seed, &topic);
    let mut c = make(config(
        &server.bootstrap(),
        &[
            ("max.poll.records", "100"),
            ("request.timeout.ms", "2000"),
            ("reconnect.backoff.ms", "20"),
            ("reconnect.backoff.max.ms", "200"),
            ("retry.backoff.ms", "20"),
            ("metadata.max.age.ms", "1000"),
        ],
    ));
    c.assign(&fixture.partitions());
    let mut check = Check::new(&fixture);
    let start = Instant::now();
    while check.seen < SIM_RECORDS {
        assert!(
            start.elapsed() < PATIENCE,
            "{adapter}: {} of {SIM_RECORDS} records after {PATIENCE:?} (seed {seed})",
            check.seen
        );
        for r in c.poll(Duration::from_millis(200)) {
            check.take(&r);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let injected = faults.stop();
    let extra = c.poll(Duration::from_millis(300));
    assert!(extra.is_empty(), "unexpected records: {:?}", extra.first());
    c.close();
    println!(
        "{adapter}: {SIM_RECORDS} records consumed once, in order, in {:?}; {injected:?}",
        start.elapsed()
    );
    assert!(injected.total() > 0, "{adapter}: no fault was injected");
}

/// Waits for a position (resets are answered asynchronously).
fn position(c: &mut impl Adapter, topic: &str, p: i32) -> Option<i64> {
    let start = Instant::now();
    loop {
        let pos = c.position(topic, p);
        if pos.is_some() || start.elapsed() > Duration::from_secs(10) {
            return pos;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The whole suite on `c`, over `fixture`.
pub fn run(c: &mut impl Adapter, fixture: &Fixture) {
    let all = fixture.partitions();
    let topic = fixture.topic.as_str();
    let total: usize = (0..PARTITIONS).map(|p| fixture.len(p)).sum();

    eprintln!("consumer suite: every record");
    // Every record once, in order per partition.
    c.assign(&all);
    let mut check = Check::new(fixture);
    consume(c, &mut check, total);
    for p in 0..PARTITIONS {
        assert_eq!(
            position(c, topic, p),
            Some(fixture.len(p) as i64),
            "position of {p} after everything"
        );
    }

    eprintln!("consumer suite: offset lookups");
    lookups(c, fixture);

    eprintln!("consumer suite: seek");
    // seek: partition 0 again from offset 10.
    c.seek(topic, 0, 10);
    assert_eq!(c.position(topic, 0), Some(10));
    let mut check = Check::new(fixture).from(0, 10);
    consume(c, &mut check, fixture.len(0) - 10);

    eprintln!("consumer suite: seek with an epoch");
    // The same, knowing the record before offset 10 was written in leader epoch 0 (a
    // fresh topic's): the position is validated with OffsetForLeaderEpoch first.
    let validated = c.validations();
    c.seek_with_epoch(topic, 0, 10, 0);
    let mut check = Check::new(fixture).from(0, 10);
    consume(c, &mut check, fixture.len(0) - 10);
    assert!(
        c.validations() > validated,
        "a position sought with its epoch is validated"
    );

    eprintln!("consumer suite: pause");
    // pause 1 and rewind everything: the others come, 1 stays at its start.
    c.seek_to_beginning(&all);
    c.pause(&[(fixture.topic.clone(), 1)]);
    let mut check = Check::new(fixture);
    consume(c, &mut check, total - fixture.len(1));
    assert!(
        !check.next.contains_key(&1),
        "no record of a paused partition"
    );
    assert_eq!(
        position(c, topic, 1),
        Some(0),
        "a paused partition keeps its position"
    );

    eprintln!("consumer suite: resume");
    // resume: partition 1 from its start.
    c.resume(&[(fixture.topic.clone(), 1)]);
    consume(c, &mut check, fixture.len(1));

    eprintln!("consumer suite: pause mid-stream");
    // Pausing mid-stream loses nothing: pause 2 while its records are fetched.
    c.seek_to_beginning(&[(fixture.topic.clone(), 2)]);
    let mut check = Check::new(fixture);
    let start = Instant::now();
    let first = loop {
        assert!(start.elapsed() < PATIENCE, "no record of partition 2 again");
        let batch = c.poll(Duration::from_millis(500));
        if !batch.is_empty() {
            break batch;
        }
    };
    for r in &first {
        check.take(r);
    }
    c.pause(&[(fixture.topic.clone(), 2)]);
    let resumed_at = check.next.get(&2).copied().unwrap_or(0);
    assert_eq!(position(c, topic, 2), Some(resumed_at));
    c.resume(&[(fixture.topic.clone(), 2)]);
    consume(c, &mut check, fixture.len(2) - resumed_at as usize);

    eprintln!("consumer suite: assign subset");
    // assign a subset: only its records come.
    c.assign(&[(fixture.topic.clone(), 3)]);
    c.seek(topic, 3, 0);
    let mut check = Check::new(fixture);
    consume(c, &mut check, fixture.len(3));
    assert_eq!(check.next.keys().copied().collect::<Vec<_>>(), vec![3]);

    c.close();
}

/// The offset lookups against what the fixture holds: log starts at 0, ends after the
/// last record, the first record at or after time 0 is offset 0, and none is an hour
/// in the future.
fn lookups(c: &mut impl Adapter, fixture: &Fixture) {
    let all = fixture.partitions();
    let begins = in_order(&c.beginning_offsets(&all), &all);
    assert_eq!(begins, vec![0; all.len()], "beginning_offsets");
    let ends = in_order(&c.end_offsets(&all), &all);
    let lens: Vec<i64> = (0..PARTITIONS).map(|p| fixture.len(p) as i64).collect();
    assert_eq!(ends, lens, "end_offsets");
    let at =
        |ms: i64| -> Vec<((String, i32), i64)> { all.iter().map(|tp| (tp.clone(), ms)).collect() };
    for (p, first) in in_order(&c.offsets_for_times(&at(0)), &all)
        .into_iter()
        .enumerate()
    {
        let first = first.unwrap_or_else(|| panic!("partition {p}: no record after time 0"));
        assert_eq!(first.offset, 0, "partition {p}");
        assert!(first.timestamp > 0, "partition {p}: {first:?}");
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let later = in_order(&c.offsets_for_times(&at(now_ms + 3_600_000)), &all);
    assert!(
        later.iter().all(Option::is_none),
        "records from the future: {later:?}"
    );
}
