//! Seeded group chaos on the scripted coordinators: answers delayed by a seeded amount
//! (in order per connection), coordinator failovers (NOT_COORDINATOR for a while, then a
//! coordinator that loads the group as last persisted), members joining late, closing,
//! stalling and being killed, connections reset with an answer on its way — for the eager and cooperative classic assignors and for
//! KIP-848. After every millisecond no two members hold one partition (owned, revoking
//! or being taken over); at the end every record was read, the last commits are the log
//! ends, and a run without a lost membership, a failed commit or a kill read every
//! record exactly once.
//!
//! `GROUP_CHAOS_SEEDS=N` runs N seeds per protocol (default 100; a failing seed is
//! printed and replays alone with `GROUP_CHAOS_SEED=s`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::World;
use crate::client::ConnId;
use crate::group::GroupEvent;
use crate::protocol::messages::join_group::JoinGroupResponse;
use crate::protocol::messages::leave_group::LeaveGroupResponse;
use crate::protocol::messages::offset_fetch::OffsetFetchResponse;
use crate::protocol::messages::sync_group::SyncGroupResponse;
use crate::protocol::{ApiKey, KafkaCode};
use crate::test_support::Seen;

const S: Duration = Duration::from_secs(1);

/// The seeded network between the clients and the one scripted broker.
pub(crate) struct Net {
    rng: Rng,
    max_delay_ms: u64,
    /// Answers on their way: release time, node, connection, frame.
    frames: Vec<(Instant, usize, ConnId, Vec<u8>)>,
    /// The last release time per connection: answers on one stay in order.
    last: BTreeMap<(usize, ConnId), Instant>,
    /// The coordinator is moving until then: group requests get NOT_COORDINATOR.
    moving_until: Option<Instant>,
    /// One answer in this many is lost with its connection (reset after the broker
    /// applied the request); `None`: never.
    reset_one_in: Option<u64>,
    /// Connections reset so far.
    resets: u64,
}

/// The assignor tests' SplitMix64, with the draws this file needs.
pub(crate) struct Rng(crate::group::assignor::tests::Rng);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(crate::group::assignor::tests::Rng::new(seed))
    }

    /// Uniform in `0..=max`.
    pub(crate) fn upto(&mut self, max: u64) -> u64 {
        self.0.below(max as usize + 1) as u64
    }

    pub(crate) fn chance(&mut self, one_in: u64) -> bool {
        self.0.below(one_in as usize) == 0
    }
}

impl World {
    /// Sends an answer frame: at once, or after a seeded delay with `net`.
    pub(super) fn send_frame(&mut self, i: usize, conn: ConnId, frame: Vec<u8>) {
        let now = self.now;
        let Some(net) = &mut self.net else {
            self.nodes[i].client.handle_received(now, conn, &frame);
            return;
        };
        let mut at = now + Duration::from_millis(net.rng.upto(net.max_delay_ms));
        if let Some(last) = net.last.get(&(i, conn)) {
            at = at.max(*last);
        }
        net.last.insert((i, conn), at);
        net.frames.push((at, i, conn, frame));
    }

    /// Hands over the delayed answers that are due (to connections still open).
    pub(super) fn deliver_due(&mut self) {
        let Some(net) = &mut self.net else { return };
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut net.frames)
            .into_iter()
            .partition(|(at, ..)| *at <= now);
        net.frames = later;
        for (_, i, conn, frame) in due {
            let n = &mut self.nodes[i];
            if n.dead || !n.open.contains(&conn) {
                continue;
            }
            let net = self.net.as_mut().expect("net");
            if net.reset_one_in.is_some_and(|k| net.rng.chance(k)) {
                net.frames.retain(|(_, fi, fc, _)| (*fi, *fc) != (i, conn));
                n.open.remove(&conn);
                n.client
                    .handle_closed(now, conn, "reset by the chaos network");
                net.resets += 1;
                continue;
            }
            n.client.handle_received(now, conn, &frame);
        }
    }

    /// While the coordinator moves, group requests get NOT_COORDINATOR; `true` when
    /// `seen` was answered so.
    pub(super) fn answer_while_moving(&mut self, i: usize, conn: ConnId, seen: &Seen) -> bool {
        let moving = self
            .net
            .as_ref()
            .and_then(|n| n.moving_until)
            .is_some_and(|until| self.now < until);
        if !moving {
            return false;
        }
        let code = KafkaCode::NOT_COORDINATOR;
        match seen.api() {
            ApiKey::JoinGroup => {
                let r = JoinGroupResponse {
                    error_code: code.0,
                    generation_id: -1,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            ApiKey::SyncGroup => {
                let r = SyncGroupResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            ApiKey::Heartbeat => {
                let r = crate::protocol::messages::heartbeat::HeartbeatResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            ApiKey::LeaveGroup => {
                let r = LeaveGroupResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            ApiKey::OffsetCommit => {
                let r = self.coordinator.respond_commit(&seen.decode(), code);
                self.reply(i, conn, seen, &r);
            }
            ApiKey::OffsetFetch => {
                let r = OffsetFetchResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            ApiKey::ConsumerGroupHeartbeat => {
                let r = crate::protocol::messages::consumer_group_heartbeat::ConsumerGroupHeartbeatResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, seen, &r);
            }
            _ => return false,
        }
        true
    }

    /// The classic coordinator fails over now and is unreachable for `d`.
    fn fail_over(&mut self, d: Duration) {
        let now = self.now;
        if let Some(net) = &mut self.net {
            net.moving_until = Some(now + d);
        }
        self.coordinator.fail_over(now);
        self.coordinator848.restart_sessions(now + d);
    }

    /// Panics if two live members hold one partition now (by their own state, not
    /// their events: revoking partitions and ones being taken over count).
    fn assert_held_disjoint(&mut self, seed: u64) {
        let mut seen: BTreeMap<i32, usize> = BTreeMap::new();
        for i in 0..self.nodes.len() {
            let n = &mut self.nodes[i];
            if n.dead || n.done {
                continue;
            }
            let held = n
                .client
                .command(self.now, n.id, |g, _| g.held())
                .unwrap_or_default();
            for (_, p) in held {
                if let Some(other) = seen.insert(p, i) {
                    panic!(
                        "seed {seed}: partition {p} held by members {other} and {i} at {:?}",
                        self.now - crate::test_support::origin()
                    );
                }
            }
        }
    }
}

/// What one run went through.
#[derive(Default, Debug)]
struct Stats {
    runs: u64,
    rebalances: u64,
    resets: u64,
    failovers: u64,
    kills: u64,
    lost: u64,
    failed_commits: u64,
    records: u64,
}

/// One seeded run; panics (naming the seed) on any violation.
fn run(seed: u64, protocol: &'static str, stats: &mut Stats) {
    let mut rng = Rng::new(seed ^ 0x05ee_d0fc_4a05);
    let strategy = ["range", "cooperative-sticky", "roundrobin", "sticky"][rng.upto(3) as usize];
    // One record per poll (a poll every virtual ms): consumption lasts most of the run,
    // so the faults land while partitions are being read and handed over.
    let mut settings: Vec<(&str, &str)> = vec![
        ("partition.assignment.strategy", strategy),
        ("max.poll.records", "1"),
    ];
    if protocol == "consumer" {
        settings[0] = ("group.protocol", "consumer");
    }
    let partitions = 6;
    let per_partition = 4_000;
    let mut w = World::new(partitions, per_partition);
    w.net = Some(Net {
        rng: Rng::new(seed),
        max_delay_ms: [0, 20, 80, 200][rng.upto(3) as usize],
        frames: Vec::new(),
        last: BTreeMap::new(),
        moving_until: None,
        reset_one_in: [None, Some(40), Some(150)][rng.upto(2) as usize],
        resets: 0,
    });
    // The schedule, in ms of virtual time.
    let third_joins = 500 + rng.upto(6_000);
    let closes = rng.chance(2).then(|| 2_000 + rng.upto(8_000));
    let stall = rng
        .chance(2)
        .then(|| (1_000 + rng.upto(8_000), 200 + rng.upto(3_000)));
    let kill = rng.chance(4).then(|| 3_000 + rng.upto(8_000));
    let failovers: Vec<(u64, u64)> = (0..rng.upto(2))
        .map(|_| (500 + rng.upto(10_000), 100 + rng.upto(2_500)))
        .collect();
    let trace = std::env::var("GROUP_CHAOS_TRACE").is_ok();
    if trace {
        eprintln!(
            "seed {seed} {protocol} {strategy}: third joins {third_joins}, b closes {closes:?}, \
             a stalls {stall:?}, c killed {kill:?}, failovers {failovers:?}"
        );
    }
    let a = w.add(&settings);
    let b = w.add(&settings);
    let mut c = None;
    let end = 14_000;
    let mut shown = [0usize; 3];
    let mut last_state = String::new();
    let mut last_member: Vec<String> = Vec::new();
    for ms in 0..end {
        if trace {
            let c = &w.coordinator;
            let state = format!(
                "{:?} gen {} members {:?}",
                c.state,
                c.generation,
                c.members.keys().collect::<Vec<_>>()
            );
            if state != last_state {
                eprintln!("{ms:>6} coordinator: {state}");
                last_state = state;
            }
            for i in 0..w.nodes.len() {
                let now = w.now;
                let n = &mut w.nodes[i];
                let d = n
                    .client
                    .command(now, n.id, |g, _| format!("{g:?} held {:?}", g.held()))
                    .unwrap_or_default();
                if last_member.get(i) != Some(&d) {
                    eprintln!("{ms:>6} member {i}: {d}");
                    last_member.resize(w.nodes.len(), String::new());
                    last_member[i] = d;
                }
            }
            for (i, n) in w.nodes.iter().enumerate() {
                for e in &n.events[shown[i]..] {
                    if !matches!(e, GroupEvent::Committed { result: Ok(()), .. }) {
                        eprintln!("{ms:>6} node {i}: {e:?}");
                    }
                }
                shown[i] = n.events.len();
            }
        }
        if ms == third_joins {
            c = Some(w.add(&settings));
        }
        if Some(ms) == closes {
            let id = w.nodes[b].id;
            w.nodes[b]
                .client
                .command(w.now, id, |g, cx| g.close(cx))
                .unwrap();
        }
        if let Some((at, d)) = stall {
            if ms == at {
                w.nodes[a].polling = false;
            }
            if ms == at + d {
                w.nodes[a].polling = true;
            }
        }
        if let (Some(at), Some(c)) = (kill, c) {
            if ms == at {
                w.kill(c);
            }
        }
        for &(at, d) in &failovers {
            if ms == at {
                w.fail_over(Duration::from_millis(d));
            }
        }
        w.step();
        w.assert_held_disjoint(seed);
    }
    // Calm: everyone left polls until every partition's last commit is its log end.
    for n in &mut w.nodes {
        n.polling = true;
    }
    let limit = w.now + 60 * S;
    while !w.committed_all() {
        assert!(
            w.now < limit,
            "seed {seed} ({protocol}, {strategy}): commits never reached the log ends: {:?}",
            w.coordinator.offsets
        );
        w.step();
        w.assert_held_disjoint(seed);
    }
    // Every record read; exactly once unless a membership was lost, a commit failed or
    // a member was killed (then at least once).
    let mut per: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for &(_, p, o) in &w.log {
        per.entry(p).or_default().push(o);
    }
    let troubled = kill.is_some()
        || w.nodes.iter().any(|n| {
            n.events.iter().any(|e| {
                matches!(
                    e,
                    GroupEvent::Lost(_) | GroupEvent::Committed { result: Err(_), .. }
                )
            })
        });
    if trace {
        for (m, g, _, p, o) in &w.coordinator.commit_log {
            eprintln!("commit {m} gen {g} p{p} {o}");
        }
        let mut segs: Vec<(usize, i32, i64, i64)> = Vec::new();
        for &(n, p, o) in &w.log {
            match segs.iter_mut().rev().find(|s| s.1 == p) {
                Some(s) if s.0 == n && s.3 + 1 == o => s.3 = o,
                _ => segs.push((n, p, o, o)),
            }
        }
        for (n, p, a, b) in segs {
            eprintln!("node {n} read p{p} {a}..={b}");
        }
    }
    stats.runs += 1;
    stats.rebalances += u64::from(w.coordinator.rebalances) + w.coordinator848.group_epoch as u64;
    stats.resets += w.net.as_ref().map_or(0, |n| n.resets);
    stats.failovers += failovers.len() as u64;
    stats.kills += u64::from(kill.is_some());
    stats.records += w.log.len() as u64;
    for e in w.nodes.iter().flat_map(|n| &n.events) {
        match e {
            GroupEvent::Lost(_) => stats.lost += 1,
            GroupEvent::Committed { result: Err(_), .. } => stats.failed_commits += 1,
            _ => {}
        }
    }
    for p in 0..partitions {
        let got = per.remove(&p).unwrap_or_default();
        let mut count: BTreeMap<i64, u32> = BTreeMap::new();
        for o in got {
            *count.entry(o).or_default() += 1;
        }
        let missing: Vec<i64> = (0..per_partition as i64)
            .filter(|o| !count.contains_key(o))
            .collect();
        let twice: Vec<i64> = count
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(o, _)| *o)
            .collect();
        assert!(
            missing.is_empty() && count.len() == per_partition,
            "seed {seed} ({protocol}, {strategy}): partition {p} never read {} records, from {:?}",
            missing.len(),
            missing.first()
        );
        assert!(
            troubled || twice.is_empty(),
            "seed {seed} ({protocol}, {strategy}): partition {p} read {} records twice ({:?}..={:?}) \
             with no membership lost, commit failed or member killed",
            twice.len(),
            twice.first(),
            twice.last()
        );
    }
}

fn seeds() -> Vec<u64> {
    if let Ok(s) = std::env::var("GROUP_CHAOS_SEED") {
        return vec![s.parse().expect("GROUP_CHAOS_SEED")];
    }
    let n = std::env::var("GROUP_CHAOS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    (1..=n).collect()
}

fn sweep(protocol: &'static str) -> Stats {
    let mut stats = Stats::default();
    for seed in seeds() {
        run(seed, protocol, &mut stats);
    }
    eprintln!("group chaos ({protocol}): {stats:?}");
    stats
}

#[test]
fn classic_groups_under_delays_failovers_resets_stalls_and_kills_never_share_a_partition() {
    let stats = sweep("classic");
    // The sweep went through what it claims (with 40 seeds or more).
    if stats.runs >= 40 {
        assert!(
            stats.resets > 0 && stats.failovers > 0 && stats.kills > 0,
            "{stats:?}"
        );
        assert!(stats.rebalances > 3 * stats.runs, "{stats:?}");
    }
}

#[test]
fn kip848_groups_under_delays_failovers_resets_stalls_and_kills_never_share_a_partition() {
    let stats = sweep("consumer");
    if stats.runs >= 40 {
        assert!(
            stats.resets > 0 && stats.failovers > 0 && stats.kills > 0,
            "{stats:?}"
        );
        assert!(stats.rebalances > 3 * stats.runs, "{stats:?}");
    }
}
