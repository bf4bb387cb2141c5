//! F20 of `PERF-AND-FAULTS.md` B3 on the simulated cluster (`kafka_tests::sim`): the
//! link to one broker degrades for a while — latency with jitter and a bandwidth cap,
//! or half-open (bytes vanish, no reset) — while an idempotent producer writes every
//! partition and a consumer reads them. Request timeouts fire on the degraded link;
//! partitions led by the healthy brokers keep making progress meanwhile (no
//! head-of-line stall across partitions): their records are acknowledged promptly and
//! read. After healing everything is delivered and the history checker judges the
//! run. Replay one seed with `SIM_SEED=<n>`; run more with `SIM_SEEDS=<count>`.

use std::time::Duration;

use kafka_tests::sim::draining::ConsumeRun;
use kafka_tests::sim::history::{History, Isolation};
use kafka_tests::sim::links::LinkFaults;
use kafka_tests::sim::producing::{ProduceRun, SCENARIO_SETTINGS};
use kafka_tests::sim::seeds::for_each_seed;
use kafka_tests::sim::story::write_heal_and_read;
use kafka_tests::sim::world::World;

const TOPIC: &str = "t";
const PARTITIONS: i32 = 6;
const SEEDS: u64 = 1000;
const RECORDS: usize = 60;
/// How long a record to a healthy broker's partition may wait for its acknowledgement
/// while another broker's link is degraded (normal round trips are 0–6 ms, linger 2).
const HEALTHY_BOUND: Duration = Duration::from_millis(60);

const CONSUMER: &[(&str, &str)] = &[
    ("request.timeout.ms", "300"),
    ("fetch.max.wait.ms", "20"),
    ("max.partition.fetch.bytes", "400"),
    ("retry.backoff.ms", "5"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
    ("socket.connection.setup.timeout.ms", "300"),
];

#[derive(Default, Debug)]
struct Sweep {
    runs: u64,
    records: usize,
    acked: usize,
    /// Records to healthy partitions sent while the link was degraded.
    healthy_during: usize,
    /// The longest such a record waited.
    healthy_longest: Duration,
    /// Records to the degraded broker's partitions sent while it was degraded.
    degraded_during: usize,
    /// The longest such a record waited (timeouts, retries).
    degraded_longest: Duration,
    /// Connections the clients closed (request and setup timeouts among them).
    client_closes: u64,
    links: kafka_tests::sim::links::LinkCounters,
    /// Records the consumer read from healthy partitions while the link was degraded.
    healthy_reads_during: usize,
}

fn degraded_link(seed: u64, link: &LinkFaults, sweep: &mut Sweep) {
    let mut world = World::new(seed, 3);
    world.cluster.create_topic(TOPIC, PARTITIONS);
    let slow = 1 + world.rng().below(3) as i32;
    world.links.insert(slow, link.clone());
    let start = Duration::from_millis(30 + world.rng().below(50));
    let end = start + Duration::from_millis(300 + world.rng().below(300));
    let mut history = History::new();
    let mut settings = SCENARIO_SETTINGS.to_vec();
    settings.push(("socket.connection.setup.timeout.ms", "300"));
    let mut p = ProduceRun::start(&mut world, "p1", &settings);
    let mut c = ConsumeRun::start(
        &mut world,
        &mut history,
        "ru",
        TOPIC,
        Isolation::ReadUncommitted,
        true,
        CONSUMER,
    );
    let leader = |w: &World, part: i32| w.cluster.topics[TOPIC].partitions[part as usize].leader;
    let mut healthy_reads = 0;
    let tick = |w: &mut World, h: &mut History, c: &mut ConsumeRun| {
        w.faults_on = w.elapsed() >= start && w.elapsed() < end;
        c.poll(w, h);
        if w.faults_on {
            healthy_reads += c
                .last_batch()
                .iter()
                .filter(|r| leader(w, r.partition) != slow)
                .count();
        }
    };
    let verdict = write_heal_and_read(
        &mut world,
        &mut history,
        &mut p,
        &mut c,
        TOPIC,
        PARTITIONS,
        RECORDS,
        seed,
        end,
        tick,
    );
    if !verdict.is_clean() || std::env::var("SIM_VERBOSE").is_ok() {
        eprintln!(
            "seed {seed}: slow b{slow} {start:?}..{end:?}, errors {:?}, links {:?}, net {:?}",
            p.errors, world.link_counters, world.net
        );
    }
    verdict.assert_clean(&format!("seed {seed}"));
    assert_eq!(verdict.acked, RECORDS, "seed {seed}: everything delivered");
    let origin = world.now() - world.elapsed();
    for &(part, at, waited, acked) in &p.waits {
        let sent = at - origin;
        // Sent in the window, and answered (or due) before it closed.
        if sent < start || sent + HEALTHY_BOUND > end {
            continue;
        }
        if leader(&world, part) == slow {
            sweep.degraded_during += 1;
            sweep.degraded_longest = sweep.degraded_longest.max(waited);
        } else {
            assert!(
                acked && waited <= HEALTHY_BOUND,
                "seed {seed}: a record to healthy partition {part} sent at {sent:?} waited \
                 {waited:?} while b{slow}'s link was degraded"
            );
            sweep.healthy_during += 1;
            sweep.healthy_longest = sweep.healthy_longest.max(waited);
        }
    }
    sweep.runs += 1;
    sweep.records += verdict.sends;
    sweep.acked += verdict.acked;
    sweep.client_closes += world.net.client_closes;
    sweep.healthy_reads_during += healthy_reads;
    let l = &world.link_counters;
    sweep.links.slowed += l.slowed;
    sweep.links.requests_vanished += l.requests_vanished;
    sweep.links.answers_vanished += l.answers_vanished;
    sweep.links.connects_hung += l.connects_hung;
}

fn sweep(name: &str, link: LinkFaults) -> Sweep {
    let mut s = Sweep::default();
    for_each_seed(name, SEEDS, |seed| degraded_link(seed, &link, &mut s));
    eprintln!("{name}: {s:?}");
    assert!(s.healthy_during > s.runs as usize * 10, "{s:?}");
    assert!(s.healthy_reads_during > s.runs as usize, "{s:?}");
    assert!(s.degraded_during > 0, "{s:?}");
    assert!(s.client_closes > s.runs / 2, "timeouts fired: {s:?}");
    s
}

/// F20: one broker's link turns slow for 0.3–0.6 s — 30–250 ms each way with jitter
/// (round trips up to 500 ms, past the 300 ms request timeout) and 10 bytes per ms —
/// while the producer writes all six partitions and a consumer reads them. Requests to
/// it time out and are retried; the partitions of the two healthy brokers are
/// acknowledged within 60 ms and read throughout; everything is delivered once healed.
#[test]
fn f20_a_slow_jittery_narrow_link_stalls_no_other_broker() {
    let s = sweep(
        "f20_a_slow_jittery_narrow_link_stalls_no_other_broker",
        LinkFaults {
            latency_ms: Some((30, 250)),
            bytes_per_ms: Some(10),
            half_open: false,
        },
    );
    assert!(s.links.slowed > s.runs * 10, "{s:?}");
}

/// F20: one broker's link goes half-open for 0.3–0.6 s — what the clients write
/// vanishes, answers on their way are lost, no reset is heard, connects hang. Only the
/// clients' request and connection-setup timeouts notice; the healthy brokers'
/// partitions go on being acknowledged within 60 ms and read; after healing the
/// records to the cut-off broker are delivered without loss or duplicate.
#[test]
fn f20_a_half_open_link_stalls_no_other_broker() {
    let s = sweep(
        "f20_a_half_open_link_stalls_no_other_broker",
        LinkFaults {
            half_open: true,
            ..Default::default()
        },
    );
    assert!(
        s.links.requests_vanished > s.runs && s.links.answers_vanished > 0,
        "{s:?}"
    );
}
