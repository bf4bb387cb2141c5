//! A consumer group in the program's own mio loop: create a fresh topic with the blocking
//! [`kafka_mio::Admin`], put 300 records in it with a producer on the driver, then
//! consume them as a group member: events (rebalances, commit results) and records are
//! taken after the consumer's `Event::Notify`; a `Revoked` event is answered by a commit
//! before the next poll; at the end the loop commits what it consumed and, once that
//! commit's result is in, closes.
//!
//! ```sh
//! KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092 cargo run -p kafka-mio --example mio_group
//! ```

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;
use kafka_core::group::GroupEvent;
use kafka_core::producer::{ProducerRecord, SendError};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::{Admin, Driver};

const RECORDS: usize = 300;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap =
        std::env::var("KAFKA_BOOTSTRAP_SERVERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("kafka-rs-example-group-mio-{stamp}");
    let group = format!("kafka-rs-example-{stamp}");
    let admin_config = ClientConfig::from_pairs([("bootstrap.servers", bootstrap.as_str())])?;
    Admin::new(admin_config)?.create_topics([NewTopic::new(topic.clone(), 3, 1)])?[&topic]
        .as_ref()
        .map_err(|e| e.to_string())?;

    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(128);
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ])?;
    let mut driver = Driver::new(config, poll.registry(), 0..64)?;
    let producer = driver.start_producer()?;
    let consumer = driver.start_group_consumer([topic.as_str()])?;
    let (mut sent, mut got) = (0, 0);
    let mut final_commit = None;
    let start = Instant::now();
    loop {
        // Produce until every record is appended (WouldBlock: metadata not there yet).
        while sent < RECORDS {
            let value = format!("record {sent}");
            let record = ProducerRecord::new(&topic, value.as_bytes());
            match driver.producer(producer).send(&record) {
                Ok(_) => sent += 1,
                Err(SendError::WouldBlock(_)) => break,
                Err(e) => return Err(e.into()),
            }
        }
        while driver.producer(producer).take_report().is_some() {}
        // Consume: events first (a revocation is answered by a commit), then records.
        let mut view = driver.group_consumer(consumer);
        while let Some(event) = view.take_event() {
            match event {
                GroupEvent::Revoked(_) => {
                    view.commit_consumed();
                }
                GroupEvent::Committed { id, result } if Some(id) == final_commit => {
                    result?;
                    println!("committed");
                    view.close();
                }
                GroupEvent::Failed(e) => return Err(e.into()),
                other => println!("group: {other:?}"),
            }
        }
        let mut records = Vec::new();
        got += view.poll(&mut records);
        if got >= RECORDS && final_commit.is_none() {
            println!("consumed {got} records; owned: {:?}", view.assignment());
            // Close once this commit's result is in (its `Committed` event).
            final_commit = view.commit_consumed();
        }
        if let Some(metrics) = driver.take_output(consumer) {
            println!("left the group ({} fetches)", metrics.fetches);
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!("only {got} of {RECORDS} records").into());
        }
        driver.poll(poll.registry());
        poll.poll(
            &mut events,
            driver.timeout().or(Some(Duration::from_millis(100))),
        )?;
        for event in events.iter() {
            if driver.owns(event.token()) {
                driver.handle_event(poll.registry(), event);
            }
        }
        driver.handle_timeout(poll.registry());
        while driver.poll_event().is_some() {}
    }
    driver.shutdown(poll.registry());
    Ok(())
}
