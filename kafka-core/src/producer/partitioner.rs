//! Choosing a record's partition, as the Java client does: an explicit partition wins;
//! a custom [`Partitioner`] is asked next; keyed records go to
//! `murmur2(key) & 0x7fffffff % partitions`; keyless records (and every record under
//! `partitioner.ignore.keys`) stick to one partition per topic until `batch.size` bytes
//! went to it, then move to another partition with a leader (KIP-794's uniform sticky
//! partitioner).

use super::accumulator::TopicEntry;
use super::delivery::{ProducerRecord, SendError};
use crate::client::OpContext;

/// A custom partitioner, asked before the built-in rules for records without an
/// explicit partition. `None` falls back to the built-in choice.
pub trait Partitioner: Send + 'static {
    /// The partition for a record of `topic` (which has `partitions` partitions, at
    /// least one), or `None` for the built-in choice. A value outside
    /// `0..partitions` fails the send with `UnknownPartition`.
    fn partition(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partitions: i32,
    ) -> Option<i32>;
}

/// Kafka's 32-bit murmur2 hash (seed `0x9747b28c`), as `Utils.murmur2` computes it.
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = 0x9747_b28c ^ (data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        if tail.len() == 3 {
            h ^= u32::from(tail[2]) << 16;
        }
        if tail.len() >= 2 {
            h ^= u32::from(tail[1]) << 8;
        }
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition the Java client's default partitioner gives a keyed record.
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    debug_assert!(partitions > 0);
    (murmur2(key) & 0x7fff_ffff) % partitions.max(1)
}

/// How a producer chooses partitions: its custom partitioner, `partitioner.ignore.keys`
/// and the random source of the sticky partitioner.
pub(super) struct Routing {
    pub(super) custom: Option<Box<dyn Partitioner>>,
    ignore_keys: bool,
    rng: Option<Rng>,
}

impl Routing {
    pub(super) fn new(ignore_keys: bool) -> Self {
        Routing {
            custom: None,
            ignore_keys,
            rng: None,
        }
    }

    /// The partition for `record` (of at most `size` bytes) in `topic`, checked to exist.
    pub(super) fn choose(
        &mut self,
        cx: &OpContext<'_>,
        topic: &mut TopicEntry,
        record: &ProducerRecord<'_>,
        size: usize,
        batch_size: usize,
    ) -> Result<i32, SendError> {
        let n = topic.partitions;
        let chosen = match record.partition {
            Some(p) => p,
            None => {
                let custom = self
                    .custom
                    .as_mut()
                    .and_then(|c| c.partition(record.topic, record.key, record.value, n));
                match (custom, record.key) {
                    (Some(p), _) => p,
                    (None, Some(key)) if !self.ignore_keys => partition_for_key(key, n),
                    _ => {
                        let rng = self.rng.get_or_insert_with(|| Rng::new(cx.seed()));
                        topic
                            .sticky
                            .next(size, batch_size, n, &topic.available, rng)
                    }
                }
            }
        };
        if chosen < 0 || chosen >= n {
            return Err(SendError::UnknownPartition {
                topic: record.topic.to_string(),
                partition: chosen,
            });
        }
        Ok(chosen)
    }
}

/// Per-topic state of the uniform sticky partitioner.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sticky {
    /// The current partition, `None` until the first keyless record.
    current: Option<i32>,
    /// Bytes sent to `current` since it was chosen.
    produced: usize,
}

impl Sticky {
    /// The partition for the next keyless record of `size` bytes. `available` lists the
    /// partitions with a leader (may be empty: then any of `0..partitions`).
    pub(crate) fn next(
        &mut self,
        size: usize,
        batch_size: usize,
        partitions: i32,
        available: &[i32],
        rng: &mut Rng,
    ) -> i32 {
        let stale = self
            .current
            .is_none_or(|p| p >= partitions || self.produced >= batch_size.max(1));
        if stale {
            let previous = self.current;
            self.current = Some(pick(previous, partitions, available, rng));
            self.produced = 0;
        }
        self.produced += size;
        self.current.unwrap_or(0)
    }
}

/// A partition other than `previous` when there is a choice: uniform over `available`
/// (or over all partitions when none has a known leader).
fn pick(previous: Option<i32>, partitions: i32, available: &[i32], rng: &mut Rng) -> i32 {
    let n = if available.is_empty() {
        partitions.max(1) as usize
    } else {
        available.len()
    };
    let at = |i: usize| {
        if available.is_empty() {
            i as i32
        } else {
            available[i]
        }
    };
    if n == 1 {
        return at(0);
    }
    let mut i = rng.below(n);
    if Some(at(i)) == previous {
        // Skip the previous partition: move to a uniformly chosen other one.
        i = (i + 1 + rng.below(n - 1)) % n;
    }
    at(i)
}

/// A small deterministic generator (xorshift64*), seeded by the client so that a
/// simulation replays the same choices.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafka_reference_values() {
        // Values from Kafka's own UtilsTest (murmur2 of these strings' UTF-8 bytes).
        let cases: [(&str, i32); 7] = [
            ("21", -973932308),
            ("foobar", -790332482),
            ("a-little-bit-long-string", -985981536),
            ("a-little-bit-longer-string", -1486304829),
            (
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            ("abc", 479470107),
            ("", 275646681),
        ];
        for (s, want) in cases {
            assert_eq!(murmur2(s.as_bytes()), want, "murmur2({s:?})");
        }
    }

    #[test]
    fn keyed_partition_is_positive_modulo() {
        for n in 1..50 {
            for k in 0..200u32 {
                let p = partition_for_key(&k.to_be_bytes(), n);
                assert!((0..n).contains(&p));
            }
        }
    }

    #[test]
    fn sticky_switches_after_batch_size_and_spreads() {
        let mut rng = Rng::new(7);
        let mut s = Sticky::default();
        let avail = [0, 1, 2, 3, 4, 5];
        let first = s.next(100, 1000, 6, &avail, &mut rng);
        for _ in 0..9 {
            assert_eq!(s.next(100, 1000, 6, &avail, &mut rng), first);
        }
        let second = s.next(100, 1000, 6, &avail, &mut rng);
        assert_ne!(second, first, "switches once batch.size bytes went to it");
        let mut counts = [0usize; 6];
        for _ in 0..60_000 {
            counts[s.next(100, 1000, 6, &avail, &mut rng) as usize] += 1;
        }
        for c in counts {
            assert!((8_000..12_000).contains(&c), "uniform spread: {counts:?}");
        }
    }

    #[test]
    fn sticky_only_picks_available_partitions() {
        let mut rng = Rng::new(3);
        let mut s = Sticky::default();
        for _ in 0..1000 {
            let p = s.next(1, 1, 6, &[2, 5], &mut rng);
            assert!(p == 2 || p == 5);
        }
    }
}
