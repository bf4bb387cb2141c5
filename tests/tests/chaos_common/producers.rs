//! The chaos run's idempotent producers, one per adapter, all alike: every 20 ms a
//! burst of records (value and key `adapter.value(i)`, partition `i % 6`) to the input
//! topic through the proxy, every send's outcome kept by send index, until told to stop;
//! then a close that waits for every outcome.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_core::producer::{Appended, ProducerRecord, Report, SendError};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use tokio::runtime::Runtime;

use super::{config, Adapter, Sent, PARTITIONS};

/// Records per burst, one burst every [`PACE`] per producer.
const BURST: u64 = 5;
const PACE: Duration = Duration::from_millis(20);
/// How long a close may wait for the last outcomes.
const CLOSE: Duration = Duration::from_secs(150);

/// One adapter's producer: what it was told per send, in send order.
pub(crate) struct Produced {
    pub(crate) adapter: Adapter,
    pub(crate) sent: Vec<Option<Sent>>,
}

/// Runs `adapter`'s producer until `stop` (tokio's on `rt`).
pub(crate) fn produce(
    adapter: Adapter,
    via: &str,
    topic: &str,
    stop: &AtomicBool,
    rt: &Runtime,
) -> Produced {
    let sent = match adapter {
        Adapter::Blocking => blocking(via, topic, stop),
        Adapter::Tokio => rt.block_on(tokio(via, topic, stop)),
        Adapter::AsyncStd => async_std::task::block_on(async_std(via, topic, stop)),
        Adapter::Mio => mio(via, topic, stop),
    };
    Produced { adapter, sent }
}

fn settings(via: &str) -> kafka_core::config::ClientConfig {
    config(&[
        ("bootstrap.servers", via),
        ("acks", "all"),
        ("enable.idempotence", "true"),
        ("linger.ms", "5"),
        ("request.timeout.ms", "5000"),
        ("delivery.timeout.ms", "120000"),
        ("max.block.ms", "120000"),
        ("reconnect.backoff.max.ms", "500"),
    ])
}

fn partition(i: u64) -> i32 {
    (i % PARTITIONS as u64) as i32
}

/// The outcomes of one producer's sends by send index, filled in by delivery callbacks.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<Option<Sent>>>>);

impl Outcomes {
    /// A slot for the next send.
    fn slot(&self) -> usize {
        let mut o = self.0.lock().unwrap();
        o.push(None);
        o.len() - 1
    }

    fn set(&self, slot: usize, sent: Sent) {
        self.0.lock().unwrap()[slot] = Some(sent);
    }

    fn take(&self) -> Vec<Option<Sent>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn blocking(via: &str, topic: &str, stop: &AtomicBool) -> Vec<Option<Sent>> {
    use kafka_blocking::{Producer, Record};
    let producer = Producer::new(settings(via)).expect("producer");
    let outcomes = Outcomes::default();
    let mut i: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        for _ in 0..BURST {
            let slot = outcomes.slot();
            let v = Adapter::Blocking.value(i).to_string();
            let record = Record::new(topic, v.clone()).key(v).partition(partition(i));
            let o = outcomes.clone();
            let sent = producer.send_with(record, move |r| {
                o.set(
                    slot,
                    r.map(|m| (m.partition, m.offset))
                        .map_err(|e| (e.possibly_delivered(), e.to_string())),
                );
            });
            if let Err(e) = sent {
                // Never staged: never written.
                outcomes.set(slot, Err((false, format!("send: {e}"))));
            }
            i += 1;
        }
        std::thread::sleep(PACE);
    }
    let metrics = producer.close(CLOSE);
    println!("kafka-blocking producer closed: {metrics:?}");
    outcomes.take()
}

/// The tokio and async-std producers (one shared front, their own sleep).
macro_rules! async_producer {
    ($name:ident, $krate:ident, $adapter:expr, $sleep:path) => {
        async fn $name(via: &str, topic: &str, stop: &AtomicBool) -> Vec<Option<Sent>> {
            use $krate::{Producer, Record};
            let producer = Producer::new(settings(via)).expect("producer");
            let outcomes = Outcomes::default();
            let mut i: u64 = 0;
            while !stop.load(Ordering::SeqCst) {
                for _ in 0..BURST {
                    let slot = outcomes.slot();
                    let v = $adapter.value(i).to_string();
                    let record = Record::new(topic, v.clone()).key(v).partition(partition(i));
                    let o = outcomes.clone();
                    let sent = producer
                        .send_with(record, move |r| {
                            o.set(
                                slot,
                                r.map(|m| (m.partition, m.offset))
                                    .map_err(|e| (e.possibly_delivered(), e.to_string())),
                            );
                        })
                        .await;
                    if let Err(e) = sent {
                        outcomes.set(slot, Err((false, format!("send: {e}"))));
                    }
                    i += 1;
                }
                $sleep(PACE).await;
            }
            let metrics = producer.close(CLOSE).await;
            println!("{} producer closed: {metrics:?}", $adapter.name());
            outcomes.take()
        }
    };
}

async_producer!(tokio, kafka_tokio, Adapter::Tokio, ::tokio::time::sleep);
async_producer!(
    async_std,
    kafka_async_std,
    Adapter::AsyncStd,
    ::async_std::task::sleep
);

/// The mio producer in a caller-owned loop: a record the buffer has no room for
/// (`WouldBlock`) is tried again on the next turn, so send order is kept.
fn mio(via: &str, topic: &str, stop: &AtomicBool) -> Vec<Option<Sent>> {
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(256);
    let mut driver = Driver::new(settings(via), poll.registry(), 0..64).expect("driver");
    let id = driver.start_producer().expect("producer");
    // Per send: where it was appended, or its outcome when it was refused.
    let mut sends: Vec<Result<Appended, Sent>> = Vec::new();
    let mut reports: HashMap<u64, Vec<Report>> = HashMap::new();
    let mut next_burst = Instant::now();
    let mut closing: Option<Instant> = None;
    let mut i: u64 = 0;
    // Turns, bursts, and sends refused `WouldBlock` (tried again at the next burst) by
    // what they wait for, for the summary.
    let (mut turns, mut bursts) = (0u64, 0u64);
    let mut would_block: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        let now = Instant::now();
        if closing.is_none() && stop.load(Ordering::SeqCst) {
            driver.producer(id).close();
            closing = Some(now);
        }
        if closing.is_none() && now >= next_burst {
            bursts += 1;
            let until = i + BURST;
            while i < until {
                let v = Adapter::Mio.value(i).to_string();
                let record = ProducerRecord::new(topic, v.as_bytes())
                    .key(v.as_bytes())
                    .partition(partition(i));
                match driver.producer(id).send(&record) {
                    Ok(a) => sends.push(Ok(a)),
                    Err(SendError::WouldBlock(why)) => {
                        *would_block.entry(why.to_string()).or_default() += 1;
                        break;
                    }
                    Err(e) => sends.push(Err(Err((false, format!("send: {e}"))))),
                }
                i += 1;
            }
            next_burst = now + PACE;
        }
        let wait = match closing {
            // Only the driver's own work is left.
            Some(_) => PACE,
            None => next_burst.saturating_duration_since(Instant::now()),
        };
        turn(&mut poll, &mut events, &mut driver, wait);
        turns += 1;
        while let Some(report) = driver.producer(id).take_report() {
            reports.entry(report.batch.0).or_default().push(report);
        }
        if let Some(since) = closing {
            if driver.take_output(id).is_some() {
                break;
            }
            if since.elapsed() > CLOSE {
                println!("kafka-mio producer: close not done within {CLOSE:?}");
                break;
            }
        }
    }
    driver.shutdown(poll.registry());
    println!(
        "kafka-mio producer closed: {turns} turns, {bursts} bursts; sends refused WouldBlock \
         and tried again at the next burst: {would_block:?}"
    );
    sends
        .into_iter()
        .map(|s| match s {
            Err(refused) => Some(refused),
            Ok(a) => {
                let report = reports
                    .get(&a.batch.0)?
                    .iter()
                    .find(|r| r.indexes().contains(&a.index))?;
                Some(match &report.outcome {
                    Ok(d) => Ok((a.partition, d.offset(a.index))),
                    Err(e) => Err((e.possibly_delivered(), e.to_string())),
                })
            }
        })
        .collect()
}

/// One turn of the mio caller's loop (at most `max`).
fn turn(poll: &mut Poll, events: &mut Events, driver: &mut Driver, max: Duration) {
    // What the view's calls (sends, taken reports) queued goes out first: until then the
    // driver's timeout is zero.
    driver.poll(poll.registry());
    let wait = driver.timeout().map_or(max, |t| t.min(max));
    poll.poll(events, Some(wait)).expect("poll");
    for event in events.iter() {
        if driver.owns(event.token()) {
            driver.handle_event(poll.registry(), event);
        }
    }
    driver.handle_timeout(poll.registry());
    driver.poll(poll.registry());
    // The reports are taken after every turn; the notifications say nothing more.
    while driver.poll_event().is_some() {}
}
