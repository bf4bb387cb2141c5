//! Consumers in a simulated world whose every record read goes into the [`History`]:
//! [`ConsumeRun`] is a consumer assigned every partition of a topic from the earliest
//! offset, polled while other things happen; [`drain`] reads everything back after the
//! faults healed, as one complete read session.

use std::time::Duration;

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::{ConsumeError, Consumer, ConsumerRecord};

use super::history::{History, Isolation, ReadSession};
use super::world::World;

/// One consumer machine (on its own client) reading one topic.
pub struct ConsumeRun {
    /// The client index.
    pub client: usize,
    /// The consumer machine.
    pub consumer: OpId<Consumer>,
    topic: String,
    session: ReadSession,
    batch: Vec<ConsumerRecord>,
    /// Records read so far.
    pub read: usize,
    /// Resume a partition stopped by corrupt data (fetch it again from the record
    /// before), as an application that retries corrupted fetches does; otherwise any
    /// consumer error panics.
    pub resume_corrupt: bool,
    /// Corrupt-data errors resumed.
    pub corrupt_resumed: u64,
}

impl ConsumeRun {
    /// A consumer named `reader` at `isolation` on a new client (extra settings in
    /// `pairs`), assigned every partition of `topic` from the earliest offset. `complete`:
    /// whether its read session will have read every partition to its end (see
    /// [`History::begin_reads`]).
    pub fn start(
        world: &mut World,
        history: &mut History,
        reader: &str,
        topic: &str,
        isolation: Isolation,
        complete: bool,
        pairs: &[(&str, &str)],
    ) -> ConsumeRun {
        let level = match isolation {
            Isolation::ReadUncommitted => "read_uncommitted",
            Isolation::ReadCommitted => "read_committed",
        };
        let mut all = vec![
            ("bootstrap.servers", "b1:9092"),
            ("client.id", reader),
            ("auto.offset.reset", "earliest"),
            ("isolation.level", level),
        ];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("consumer config");
        let consumer = Consumer::new(&config);
        let client = world.add_client_with(config);
        let now = world.now();
        let op = world.clients[client].start_op(now, consumer);
        let partitions = world.cluster.topics[topic].partitions.len() as i32;
        world.clients[client].command(now, op, |c, cx| {
            c.assign(cx, (0..partitions).map(|p| (topic, p)))
        });
        ConsumeRun {
            client,
            consumer: op,
            topic: topic.to_string(),
            session: history.begin_reads_of(reader, isolation, complete, topic),
            batch: Vec::new(),
            read: 0,
            resume_corrupt: false,
            corrupt_resumed: 0,
        }
    }

    /// Takes what the consumer has and logs it; panics (naming the seed) on a consumer
    /// error, which no scenario expects (corrupt data is resumed with
    /// [`resume_corrupt`](Self::resume_corrupt)).
    pub fn poll(&mut self, world: &mut World, history: &mut History) {
        let now = world.now();
        self.batch.clear();
        let batch = &mut self.batch;
        let resume = self.resume_corrupt;
        let resumed = &mut self.corrupt_resumed;
        world.clients[self.client].command(now, self.consumer, |c, _| {
            c.poll(batch);
            while let Some(e) = c.take_error() {
                match e {
                    ConsumeError::Corrupt {
                        topic, partition, ..
                    } if resume => {
                        c.resume([(topic.as_str(), partition)]);
                        *resumed += 1;
                    }
                    e => panic!("consumer error: {e}"),
                }
            }
        });
        for r in &self.batch {
            let value = r.value.as_deref().unwrap_or_default();
            history.read(self.session, &r.topic, r.partition, r.offset, value);
        }
        self.read += self.batch.len();
    }

    /// The records the last [`poll`](Self::poll) took.
    pub fn last_batch(&self) -> &[ConsumerRecord] {
        &self.batch
    }

    /// Whether the consumer's position reached the end of every partition (as the
    /// simulated cluster knows it) with nothing left to hand out.
    pub fn caught_up(&self, world: &mut World) -> bool {
        let topic = self.topic.as_str();
        let ends: Vec<i64> = world.cluster.topics[topic]
            .partitions
            .iter()
            .map(|p| p.next_offset)
            .collect();
        let now = world.now();
        world.clients[self.client]
            .command(now, self.consumer, |c, _| {
                !c.has_pending()
                    && ends
                        .iter()
                        .enumerate()
                        .all(|(p, end)| c.position(topic, p as i32).is_some_and(|pos| pos >= *end))
            })
            .expect("the consumer runs")
    }

    /// Polls until caught up, at most `limit` of virtual time; whether it caught up.
    pub fn run_to_end(
        &mut self,
        world: &mut World,
        history: &mut History,
        limit: Duration,
    ) -> bool {
        world.run_until(limit, |w| {
            self.poll(w, history);
            self.caught_up(w)
        })
    }

    /// Stops the consumer.
    pub fn close(&mut self, world: &mut World) {
        let now = world.now();
        world.clients[self.client].command(now, self.consumer, |c, cx| c.close(cx));
    }
}

/// Drains `topic` (all its partitions) at `isolation` as reader `reader`, as one
/// complete read session; the records read. Panics (naming the seed) when it does not
/// reach the end within `limit` of virtual time.
pub fn drain(
    world: &mut World,
    history: &mut History,
    reader: &str,
    topic: &str,
    isolation: Isolation,
    limit: Duration,
) -> usize {
    let mut run = ConsumeRun::start(world, history, reader, topic, isolation, true, &[]);
    let done = run.run_to_end(world, history, limit);
    assert!(
        done,
        "seed {}: the {isolation:?} drain of {topic} did not reach the end in {limit:?} (read {})",
        world.seed, run.read
    );
    run.close(world);
    run.read
}
