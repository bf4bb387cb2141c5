//! Record batch codec benchmark, no broker: encode and decode 1,000,000 records of
//! 100-byte values in batches of 1,000 for every codec and two value pools, for
//! `kafka-core` and, in the same run, the `kafka-protocol` crate; plus memcpy and
//! CRC-32C throughput over the same batches as the physical bound. "build" rows are
//! `kafka-core`'s incremental `BatchBuilder` (append one record at a time, then seal),
//! measured interleaved with the one-shot encoder and the peer.
//!
//! Run: `cargo run --release -p kafka-bench` (prints a markdown table; see
//! `bench/RESULTS.md`). `KAFKA_BENCH_RECORDS=N` shrinks the run for a smoke test;
//! `KAFKA_BENCH_CODECS=none,lz4` limits the codecs.

use std::alloc::System;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_core::record::{
    Append, BatchBuilder, BatchEncoder, BatchOptions, Compression, DecodeOptions, NewRecord,
    RecordBatch,
};
use kafka_protocol::records as kp;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const BATCH: usize = 1000;
const VALUE: usize = 100;
const T0: i64 = 1_700_000_000_000;
/// The builder's `batch.size`: room for the 1,000 records of a batch (about 110 KB).
const BATCH_SIZE: usize = 128 * 1024;

/// 1,000,000 values of 100 bytes, contiguous.
struct Pool {
    name: &'static str,
    data: Bytes,
}

impl Pool {
    fn value(&self, i: usize) -> &[u8] {
        &self.data[i * VALUE..(i + 1) * VALUE]
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn pools(records: usize) -> Vec<Pool> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let random: Vec<u8> = (0..records * VALUE).map(|_| rng.next() as u8).collect();
    let mut json = Vec::with_capacity(records * VALUE);
    for i in 0..records {
        let mut v = format!(
            "{{\"id\":{},\"user\":\"user{}\",\"active\":{},\"score\":{}.{:02},\"tags\":[\"a\",\"b\"],\"region\":\"eu-west-{}\"}}",
            i,
            rng.next() % 10_000,
            rng.next() & 1 == 0,
            rng.next() % 1000,
            rng.next() % 100,
            rng.next() % 3
        )
        .into_bytes();
        v.resize(VALUE, b' ');
        json.extend_from_slice(&v);
    }
    vec![
        Pool {
            name: "incompressible",
            data: Bytes::from(random),
        },
        Pool {
            name: "json-like",
            data: Bytes::from(json),
        },
    ]
}

/// Runs each of `runs` in turn (a, b, c, a, b, c; a third round when a run takes
/// under half a second) and keeps each one's best time, so load changes on the machine
/// hit all alike. Allocations (plus reallocations) are counted on the first run of each.
fn measure<const N: usize>(mut runs: [&mut dyn FnMut(); N]) -> [(Duration, usize); N] {
    let once = |f: &mut dyn FnMut()| {
        let region = Region::new(GLOBAL);
        let start = Instant::now();
        f();
        let t = start.elapsed();
        let s = region.change();
        (t, s.allocations + s.reallocations)
    };
    let mut best = [(Duration::MAX, 0); N];
    for (b, f) in best.iter_mut().zip(runs.iter_mut()) {
        *b = once(&mut **f);
    }
    let rounds = if best.iter().all(|b| b.0 < Duration::from_millis(500)) {
        3
    } else {
        2
    };
    for _ in 1..rounds {
        for (b, f) in best.iter_mut().zip(runs.iter_mut()) {
            b.0 = b.0.min(once(&mut **f).0);
        }
    }
    best
}

/// [`measure`] for two runs: ours and the peer, alternately.
fn measure_pair(
    mut ours: impl FnMut(),
    mut peer: impl FnMut(),
) -> ((Duration, usize), (Duration, usize)) {
    let [a, b] = measure([&mut ours, &mut peer]);
    (a, b)
}

struct Row {
    op: &'static str,
    codec: Compression,
    pool: &'static str,
    ours: (Duration, usize),
    peer: (Duration, usize),
}

#[inline(never)]
fn ours_encode(pool: &Pool, records: usize, codec: Compression, out: &mut Vec<u8>) {
    let mut enc = BatchEncoder::new();
    let opts = BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    };
    for b in 0..records / BATCH {
        out.clear();
        let batch = enc
            .encode(
                &opts,
                (b * BATCH..(b + 1) * BATCH).map(|i| NewRecord {
                    timestamp: T0 + i as i64,
                    key: None,
                    value: Some(pool.value(i)),
                    headers: &[],
                }),
                out,
            )
            .expect("encode");
        let _ = black_box(batch);
        black_box(&out);
    }
}

/// The incremental builder: each record appended as it comes, then the batch sealed
/// (and dropped, as a produce response would, so its buffer is reused).
#[inline(never)]
fn ours_build(pool: &Pool, records: usize, codec: Compression) {
    let opts = BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    };
    let mut builder = BatchBuilder::new(opts, BATCH_SIZE).expect("builder");
    for b in 0..records / BATCH {
        for i in b * BATCH..(b + 1) * BATCH {
            let appended = builder
                .append(T0 + i as i64, None, Some(pool.value(i)), &[])
                .expect("append");
            debug_assert!(matches!(appended, Append::Appended { .. }));
            let _ = black_box(appended);
        }
        let sealed = builder.seal().expect("seal");
        black_box(&sealed);
    }
}

/// The builder's first batch equals the one-shot encoder's, and once warm (second
/// batch, the first one dropped) appending allocates nothing.
fn check_build_matches_encode(pool: &Pool, codec: Compression) {
    let opts = BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    };
    let mut builder = BatchBuilder::new(opts, BATCH_SIZE).expect("builder");
    for i in 0..BATCH {
        let appended = builder
            .append(T0 + i as i64, None, Some(pool.value(i)), &[])
            .expect("append");
        assert!(matches!(appended, Append::Appended { .. }), "batch.size");
    }
    let built = builder.seal().expect("seal");
    let mut encoded = Vec::new();
    ours_encode(pool, BATCH, codec, &mut encoded);
    assert_eq!(
        &built.bytes[..],
        &encoded[..],
        "builder and encoder disagree"
    );
    drop(built);
    let pool_len = pool.data.len() / VALUE;
    let region = Region::new(GLOBAL);
    for i in BATCH..2 * BATCH {
        let appended = builder
            .append(T0 + i as i64, None, Some(pool.value(i % pool_len)), &[])
            .expect("append");
        assert!(matches!(appended, Append::Appended { .. }), "batch.size");
    }
    let s = region.change();
    assert_eq!(
        s.allocations + s.reallocations,
        0,
        "{codec:?}: a warm builder allocated while appending"
    );
}

fn peer_records(pool: &Pool, records: usize) -> Vec<kp::Record> {
    (0..records)
        .map(|i| kp::Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: kp::TimestampType::Creation,
            offset: (i % BATCH) as i64,
            // kafka-protocol starts a new batch when offset - sequence changes.
            sequence: (i % BATCH) as i32,
            timestamp: T0 + i as i64,
            key: None,
            value: Some(pool.data.slice(i * VALUE..(i + 1) * VALUE)),
            headers: indexmap::IndexMap::new(),
        })
        .collect()
}

fn peer_codec(c: Compression) -> kp::Compression {
    match c {
        Compression::None => kp::Compression::None,
        Compression::Gzip => kp::Compression::Gzip,
        Compression::Snappy => kp::Compression::Snappy,
        Compression::Lz4 => kp::Compression::Lz4,
        Compression::Zstd => kp::Compression::Zstd,
    }
}

#[inline(never)]
fn peer_encode(recs: &[kp::Record], codec: Compression, buf: &mut BytesMut) {
    let opts = kp::RecordEncodeOptions {
        version: 2,
        compression: peer_codec(codec),
    };
    for chunk in recs.chunks(BATCH) {
        buf.clear();
        kp::RecordBatchEncoder::encode(buf, chunk.iter(), &opts).expect("peer encode");
        black_box(&buf);
    }
}

/// Our batches for the decode runs: one buffer, one `Bytes` slice per batch.
fn encoded_batches(pool: &Pool, records: usize, codec: Compression) -> Vec<Bytes> {
    let mut all = Vec::new();
    let mut ends = Vec::new();
    let mut enc = BatchEncoder::new();
    let opts = BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    };
    for b in 0..records / BATCH {
        let e = enc
            .encode(
                &opts,
                (b * BATCH..(b + 1) * BATCH).map(|i| NewRecord {
                    timestamp: T0 + i as i64,
                    key: None,
                    value: Some(pool.value(i)),
                    headers: &[],
                }),
                &mut all,
            )
            .expect("encode");
        ends.push((e.start, e.start + e.len));
    }
    let all = Bytes::from(all);
    ends.into_iter().map(|(s, e)| all.slice(s..e)).collect()
}

#[inline]
fn touch(v: &[u8], acc: &mut u64) {
    *acc = acc
        .wrapping_add(v.len() as u64)
        .wrapping_add(u64::from(v[0]) ^ u64::from(v[v.len() - 1]));
}

#[inline(never)]
fn ours_decode(batches: &[Bytes]) -> u64 {
    let opts = DecodeOptions::default();
    let mut acc = 0u64;
    for b in batches {
        let (batch, _) = RecordBatch::decode(b, &opts).expect("decode");
        for r in batch.records().expect("records") {
            let r = r.expect("record");
            touch(r.value.as_deref().expect("value"), &mut acc);
        }
    }
    black_box(acc)
}

#[inline(never)]
fn peer_decode(batches: &[Bytes]) -> u64 {
    let mut acc = 0u64;
    for b in batches {
        let mut buf = b.clone();
        let set = kp::RecordBatchDecoder::decode(&mut buf).expect("peer decode");
        for r in &set.records {
            touch(r.value.as_deref().expect("value"), &mut acc);
        }
    }
    black_box(acc)
}

fn per_record(d: Duration, records: usize) -> f64 {
    d.as_nanos() as f64 / records as f64
}

fn mb_s(d: Duration, records: usize) -> f64 {
    (records * VALUE) as f64 / d.as_secs_f64() / 1e6
}

fn main() {
    let records: usize = std::env::var("KAFKA_BENCH_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
        / BATCH
        * BATCH;
    let only: Option<String> = std::env::var("KAFKA_BENCH_CODECS").ok();
    let started = Instant::now();
    let pools = pools(records);
    let mut rows = Vec::new();
    let mut builds = Vec::new();
    let mut bounds = Vec::new();
    let mut out = Vec::with_capacity(1 << 20);
    let mut peer_buf = BytesMut::with_capacity(1 << 20);
    for pool in &pools {
        let peer_recs = peer_records(pool, records);
        for codec in Compression::ALL {
            if only
                .as_ref()
                .is_some_and(|o| !o.split(',').any(|c| c == codec.name()))
            {
                continue;
            }
            // Encode and build, interleaved: our encoder, the peer, our builder.
            check_build_matches_encode(pool, codec);
            let [ours, peer, build] = measure([
                &mut || ours_encode(pool, records, codec, &mut out),
                &mut || peer_encode(&peer_recs, codec, &mut peer_buf),
                &mut || ours_build(pool, records, codec),
            ]);
            rows.push(Row {
                op: "encode",
                codec,
                pool: pool.name,
                ours,
                peer,
            });
            rows.push(Row {
                op: "build",
                codec,
                pool: pool.name,
                ours: build,
                peer,
            });
            builds.push((codec, pool.name, build, ours));
            // Decode the same bytes with both; check they agree.
            let batches = encoded_batches(pool, records, codec);
            assert_eq!(
                ours_decode(&batches),
                peer_decode(&batches),
                "decoders disagree"
            );
            let (ours, peer) = measure_pair(
                || {
                    ours_decode(&batches);
                },
                || {
                    peer_decode(&batches);
                },
            );
            rows.push(Row {
                op: "decode",
                codec,
                pool: pool.name,
                ours,
                peer,
            });
            if codec == Compression::None {
                // The physical bound over the same batches: one copy and one CRC pass.
                let mut dst = vec![0u8; batches.iter().map(Bytes::len).max().unwrap_or(0)];
                // Interleaved with our decode of the same batches, best of three
                // rounds each, so machine load hits the bound and the decoder alike.
                let (mut memcpy, mut crc, mut dec) = (Duration::MAX, Duration::MAX, Duration::MAX);
                for _ in 0..3 {
                    let start = Instant::now();
                    for b in &batches {
                        dst[..b.len()].copy_from_slice(b);
                        black_box(&dst);
                    }
                    memcpy = memcpy.min(start.elapsed());
                    let start = Instant::now();
                    for b in &batches {
                        black_box(crc32c::crc32c(b));
                    }
                    crc = crc.min(start.elapsed());
                    let start = Instant::now();
                    ours_decode(&batches);
                    dec = dec.min(start.elapsed());
                }
                let bytes: usize = batches.iter().map(Bytes::len).sum();
                bounds.push((pool.name, bytes, memcpy, crc, dec));
            }
        }
    }

    println!("Records: {records} x {VALUE}-byte values, batches of {BATCH}, no keys or headers.");
    println!("ns/rec and MB/s are per record and per MB of value payload; allocs/rec counts allocations + reallocations of one run.\n");
    println!("| op | codec | pool | ours ns/rec | ours MB/s | ours allocs/rec | kafka-protocol ns/rec | kafka-protocol MB/s | kafka-protocol allocs/rec | speedup (peer time / ours) |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.1} | {:.0} | {:.3} | {:.1} | {:.0} | {:.3} | {:.2}x |",
            r.op,
            r.codec.name(),
            r.pool,
            per_record(r.ours.0, records),
            mb_s(r.ours.0, records),
            r.ours.1 as f64 / records as f64,
            per_record(r.peer.0, records),
            mb_s(r.peer.0, records),
            r.peer.1 as f64 / records as f64,
            r.peer.0.as_secs_f64() / r.ours.0.as_secs_f64(),
        );
    }
    println!("\nIncremental builder against the one-shot encoder (interleaved in the same runs as the rows above):\n");
    println!("| codec | pool | build ns/rec | build MB/s | build allocs/rec | encode ns/rec | encode MB/s | encode allocs/rec | encode time / build time |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (codec, pool, build, encode) in &builds {
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.3} | {:.1} | {:.0} | {:.3} | {:.2}x |",
            codec.name(),
            pool,
            per_record(build.0, records),
            mb_s(build.0, records),
            build.1 as f64 / records as f64,
            per_record(encode.0, records),
            mb_s(encode.0, records),
            encode.1 as f64 / records as f64,
            encode.0.as_secs_f64() / build.0.as_secs_f64(),
        );
    }
    println!("\nPhysical bound over the uncompressed batches (same machine, same run):\n");
    println!("| pool | batch bytes | memcpy GB/s | CRC-32C GB/s | memcpy + CRC ns/rec | ours decode ns/rec (interleaved) | ours / bound |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, bytes, memcpy, crc, dec) in &bounds {
        let bound = per_record(*memcpy + *crc, records);
        let ours = per_record(*dec, records);
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2}x |",
            name,
            bytes,
            *bytes as f64 / memcpy.as_secs_f64() / 1e9,
            *bytes as f64 / crc.as_secs_f64() / 1e9,
            bound,
            ours,
            ours / bound,
        );
    }
    println!("\nTotal run time: {:.1} s", started.elapsed().as_secs_f64());
}
