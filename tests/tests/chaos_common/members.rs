//! The chaos run's group members, one loop per adapter, all feeding the same [`Seen`]
//! (records, owned partitions, events) behind a `group_common::Member`:
//! - `kafka-blocking`: `group_common::member_loop` (the core's `GroupConsumer` on a
//!   `BlockingClient`);
//! - `kafka-tokio`, `kafka-async-std`: the adapter's `GroupConsumer`, its rebalance
//!   listener (run inside `poll`, before a revocation is acknowledged) updating the
//!   owned partitions;
//! - `kafka-mio`: the core's `GroupConsumer` on a mio `Driver` in a caller-owned loop,
//!   events taken before each poll.
//!
//! Auto-commit is on: the adapters commit what was handed out on revocation and close.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::group::GroupEvent;
use kafka_driver::group::Rebalance;
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use tokio::runtime::Runtime;

use super::{seen, Adapter};
use crate::group_common::{member_config, member_loop, Member, Seen};

/// How long a member's close may take.
const CLOSE: Duration = Duration::from_secs(30);

/// A member of `group` on `topic` through `adapter` (tokio's on `rt`).
pub(crate) fn start(
    adapter: Adapter,
    via: &str,
    topic: &str,
    extra: &[(&str, &str)],
    group: &str,
    rt: &Arc<Runtime>,
) -> Member {
    let config = member_config(via, extra, group);
    match adapter {
        Adapter::Blocking => Member::spawn(config, topic, Box::new(member_loop)),
        Adapter::Tokio => {
            let rt = rt.clone();
            Member::spawn(
                config,
                topic,
                Box::new(move |c, t, s, st, cl| rt.block_on(tokio(c, t, s, st, cl))),
            )
        }
        Adapter::AsyncStd => Member::spawn(
            config,
            topic,
            Box::new(|c, t, s, st, cl| async_std::task::block_on(async_std(c, t, s, st, cl))),
        ),
        Adapter::Mio => Member::spawn(config, topic, Box::new(mio)),
    }
}

/// The listener's view of a rebalance as the core's event.
fn event(e: &Rebalance) -> GroupEvent {
    match e {
        Rebalance::Assigned(ps) => GroupEvent::Assigned(ps.clone()),
        Rebalance::Revoked(ps) => GroupEvent::Revoked(ps.clone()),
        Rebalance::Lost(ps) => GroupEvent::Lost(ps.clone()),
        other => panic!("a rebalance event the chaos run does not know: {other:?}"),
    }
}

/// `(partition, offset, value)` of a record whose value is a number.
fn parsed(partition: i32, offset: i64, value: Option<&[u8]>) -> (i32, i64, u64) {
    let v = std::str::from_utf8(value.unwrap_or_default()).expect("utf-8 value");
    (partition, offset, v.parse().expect("a numeric value"))
}

/// The tokio and async-std members (one shared front).
macro_rules! async_member {
    ($name:ident, $krate:ident) => {
        async fn $name(
            config: ClientConfig,
            topic: &str,
            seen_by: Arc<Mutex<Seen>>,
            stop: Arc<AtomicBool>,
            close: Arc<AtomicBool>,
        ) {
            use $krate::GroupConsumer;
            let c = GroupConsumer::new(config).expect("group consumer");
            let s = seen_by.clone();
            c.subscribe_with([topic], move |_: &GroupConsumer, e: &Rebalance| {
                seen(&s).note(vec![event(e)]);
            })
            .expect("subscribe");
            while !stop.load(Ordering::SeqCst) {
                let records = match c.poll(Duration::from_millis(100)).await {
                    Ok(records) => records,
                    Err(e) => panic!("member failed: {e}"),
                };
                let records = records
                    .iter()
                    .map(|r| parsed(r.partition, r.offset, r.value.as_deref()));
                seen(&seen_by).records.extend(records);
            }
            if close.load(Ordering::SeqCst) {
                c.close().await.expect("close");
                seen(&seen_by).owned.clear();
            }
            // Otherwise the consumer is dropped mid-membership: a killed process.
        }
    };
}

async_member!(tokio, kafka_tokio);
async_member!(async_std, kafka_async_std);

/// The mio member: one `Driver` in a caller-owned loop; events are taken, then records
/// polled (a revocation is released by that poll), as `member_loop` does on the core.
fn mio(
    config: ClientConfig,
    topic: &str,
    seen_by: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    close: Arc<AtomicBool>,
) {
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(256);
    let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
    let id = driver.start_group_consumer([topic]).expect("start");
    let mut turn = |driver: &mut Driver, max: Duration| {
        // What the view's calls queued goes out first.
        driver.poll(poll.registry());
        let wait = driver.timeout().map_or(max, |t| t.min(max));
        poll.poll(&mut events, Some(wait)).expect("poll");
        for event in events.iter() {
            if driver.owns(event.token()) {
                driver.handle_event(poll.registry(), event);
            }
        }
        driver.handle_timeout(poll.registry());
        driver.poll(poll.registry());
        // Events and records are read through the consumer's view after the turn.
        while driver.poll_event().is_some() {}
    };
    while !stop.load(Ordering::SeqCst) {
        let mut view = driver.group_consumer(id);
        let mut got = Vec::new();
        while let Some(e) = view.take_event() {
            got.push(e);
        }
        if let Some(e) = view.take_error() {
            panic!("consume error: {e}");
        }
        let mut out = Vec::new();
        view.poll(&mut out);
        while let Some(e) = view.take_event() {
            got.push(e);
        }
        let idle = out.is_empty() && got.is_empty();
        {
            let mut s = seen(&seen_by);
            s.note(got);
            let records = out
                .iter()
                .map(|r| parsed(r.partition, r.offset, r.value.as_deref()));
            s.records.extend(records);
        }
        turn(
            &mut driver,
            Duration::from_millis(if idle { 20 } else { 0 }),
        );
    }
    if close.load(Ordering::SeqCst) {
        driver.group_consumer(id).close();
        let start = Instant::now();
        while driver.take_output(id).is_none() {
            assert!(start.elapsed() < CLOSE, "close took over {CLOSE:?}");
            turn(&mut driver, Duration::from_millis(20));
        }
        seen(&seen_by).owned.clear();
    }
    driver.shutdown(poll.registry());
}
