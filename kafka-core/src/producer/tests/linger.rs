//! Linger from the application's send time (`send_at`) and the next linger deadline an
//! adapter plans its hand-overs by (`next_linger_deadline`).

use std::time::Duration;

use super::cluster::{Cluster, TOPIC};
use super::{all_reported, value, warmed};
use crate::producer::{Appended, ProducerRecord};

/// Sends `value` to `partition` as handed over `ago` before now.
fn send_ago(c: &mut Cluster, partition: i32, n: u64, ago: Duration) -> Appended {
    let v = value(n);
    let rec = ProducerRecord::new(TOPIC, &v)
        .partition(partition)
        .timestamp(1);
    let sent = c.now - ago;
    let a = c
        .client
        .command(c.now, c.producer, |p, cx| p.send_at(cx, &rec, sent))
        .expect("running")
        .expect("appended");
    c.sent.insert((a.batch.0, a.index), v.into());
    a
}

fn next_deadline(c: &mut Cluster) -> Option<std::time::Instant> {
    let now = c.now;
    c.client
        .command(now, c.producer, |p, _| p.next_linger_deadline(now))
        .expect("running")
}

#[test]
fn a_record_staged_earlier_lingers_from_its_send_not_from_its_append() {
    let mut c = warmed(&[("linger.ms", "100")]);
    assert_eq!(next_deadline(&mut c), None, "no batch open");

    // Partition 0 opens a batch now: due in 100 ms.
    let t0 = c.now;
    let first = send_ago(&mut c, 0, 10, Duration::ZERO);
    assert_eq!(next_deadline(&mut c), Some(t0 + Duration::from_millis(100)));

    // 60 ms later a record handed over 50 ms ago opens partition 1's batch: due at
    // 110 ms (its send + linger), not at 160 ms (its append + linger).
    c.run(Duration::from_millis(60));
    let second = send_ago(&mut c, 1, 11, Duration::from_millis(50));
    assert_eq!(
        next_deadline(&mut c),
        Some(t0 + Duration::from_millis(100)),
        "partition 0 is due first"
    );

    let reported = |c: &Cluster, a: &Appended| c.reports.iter().any(|r| r.batch == a.batch);
    assert!(c.run_until(Duration::from_secs(1), |c| reported(c, &first)));
    let at = c.now - t0;
    assert!(
        at >= Duration::from_millis(100) && at < Duration::from_millis(108),
        "{at:?}"
    );
    assert_eq!(next_deadline(&mut c), Some(t0 + Duration::from_millis(110)));

    assert!(c.run_until(Duration::from_secs(1), |c| reported(c, &second)));
    let at = c.now - t0;
    assert!(
        at >= Duration::from_millis(110) && at < Duration::from_millis(118),
        "{at:?}"
    );
    assert_eq!(next_deadline(&mut c), None);
    assert!(c.run_until(Duration::from_secs(1), all_reported));
    assert_eq!(c.check_guarantees(), 6 + 2);
}

#[test]
fn a_flush_or_a_long_wait_leaves_nothing_to_plan_for() {
    let mut c = warmed(&[("linger.ms", "100")]);
    // Handed over longer ago than linger.ms: due at once, sealed at this poll.
    let late = send_ago(&mut c, 2, 20, Duration::from_millis(300));
    assert_eq!(next_deadline(&mut c), None);
    c.run(Duration::from_millis(5));
    assert!(c.reports.iter().any(|r| r.batch == late.batch));

    send_ago(&mut c, 3, 21, Duration::ZERO);
    assert!(next_deadline(&mut c).is_some());
    let now = c.now;
    let planned = c
        .client
        .command(now, c.producer, |p, _| {
            p.flush();
            p.next_linger_deadline(now)
        })
        .expect("running");
    assert_eq!(planned, None, "a flush seals every open batch");
    assert!(c.run_until(Duration::from_secs(1), all_reported));
    assert_eq!(c.check_guarantees(), 6 + 2);
}
