//! A group member in a simulated world: [`GroupRun`] is a `GroupConsumer` (the core's
//! group consumer, KIP-848 or classic) on its own client, subscribed to topics, polled
//! by the scenario like an application; every record it hands out and every event is
//! kept for the scenario's judgement.

use std::collections::BTreeSet;

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::{GroupConsumer, GroupEvent};

use super::world::World;

/// One group member.
pub struct GroupRun {
    /// Its name (client id).
    pub name: String,
    /// The client index.
    pub client: usize,
    /// The group consumer machine.
    pub op: OpId<GroupConsumer>,
    /// Every event it reported, in order.
    pub events: Vec<GroupEvent>,
    /// Records handed out: `(topic, partition, offset, value)`.
    pub read: Vec<(String, i32, i64, Vec<u8>)>,
    /// Closed and finished (its machine ended).
    pub done: bool,
    /// Killed (the world stopped driving its client).
    pub killed: bool,
    batch: Vec<ConsumerRecord>,
}

impl GroupRun {
    /// A member named `name` of `group` on a new client (extra settings in `pairs`),
    /// subscribed to `topics`.
    pub fn start(
        world: &mut World,
        name: &str,
        group: &str,
        topics: &[&str],
        pairs: &[(&str, &str)],
    ) -> GroupRun {
        let mut all = vec![
            ("bootstrap.servers", "b1:9092"),
            ("client.id", name),
            ("group.id", group),
            ("auto.offset.reset", "earliest"),
        ];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("group consumer config");
        let consumer = GroupConsumer::new(&config).expect("group consumer settings");
        let client = world.add_client_with(config);
        let now = world.now();
        let op = world.clients[client].start_op(now, consumer);
        world.clients[client].command(now, op, |g, cx| g.subscribe(cx, topics.iter().copied()));
        GroupRun {
            name: name.to_string(),
            client,
            op,
            events: Vec::new(),
            read: Vec::new(),
            done: false,
            killed: false,
            batch: Vec::new(),
        }
    }

    /// The application's poll: takes its events and records. Panics (naming the seed)
    /// on a consumer error or a `Failed` event, which no scenario expects.
    pub fn poll(&mut self, world: &mut World) {
        if self.done || self.killed {
            return;
        }
        let now = world.now();
        let seed = world.seed;
        let name = &self.name;
        self.batch.clear();
        let batch = &mut self.batch;
        let events = &mut self.events;
        let polled = world.clients[self.client].command(now, self.op, |g, cx| {
            while let Some(e) = g.take_event() {
                if let GroupEvent::Failed(f) = &e {
                    panic!("seed {seed}: member {name} failed: {f}");
                }
                events.push(e);
            }
            g.poll(cx, batch);
            if let Some(e) = g.take_error() {
                panic!("seed {seed}: member {name}: consumer error: {e}");
            }
        });
        if polled.is_none() {
            // The machine ended (closed).
            let _ = world.clients[self.client].take_op_output(self.op);
            self.done = true;
            return;
        }
        for r in &self.batch {
            let value = r.value.as_deref().unwrap_or_default().to_vec();
            self.read
                .push((r.topic.to_string(), r.partition, r.offset, value));
        }
    }

    /// The partitions its application owns now (none once closed or killed: a killed
    /// process hands nothing out).
    pub fn owned(&self, world: &mut World) -> BTreeSet<(String, i32)> {
        if self.done || self.killed {
            return BTreeSet::new();
        }
        let now = world.now();
        world.clients[self.client]
            .command(now, self.op, |g, _| {
                g.assignment()
                    .into_iter()
                    .map(|(t, p)| (t.to_string(), p))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Closes it: final commit, then it leaves the group (epoch -1).
    pub fn close(&mut self, world: &mut World) {
        let now = world.now();
        world.clients[self.client].command(now, self.op, |g, cx| g.close(cx));
    }

    /// Kills its process: it stops heartbeating, its connections vanish; the coordinator
    /// removes it after the session timeout.
    pub fn kill(&mut self, world: &mut World) {
        world.kill_client(self.client);
        self.killed = true;
    }
}
