//! Record batches against Apache Kafka, both directions.
//!
//! - `kafka_built_batches_decode_to_kafkas_records`: every batch in
//!   `vectors/records/kafka/` was built by Kafka's `MemoryRecordsBuilder`
//!   (`vectors/oracle.sh records-generate vectors/records/kafka`); our decoder must
//!   read each to exactly the records Kafka's `MemoryRecords` reads.
//! - `our_batches_match_the_committed_vectors`: our encoder's batches for every codec
//!   are committed in `vectors/records/ours/` with the records they hold; Kafka checks
//!   them with `vectors/oracle.sh records-verify vectors/records/ours`. This test keeps
//!   the committed files equal to what the encoder writes today (set
//!   `KAFKA_RS_WRITE_RECORD_VECTORS=1` to rewrite them, or
//!   `KAFKA_RS_RECORD_VECTORS_OUT=<dir>` to write them elsewhere).

mod records_common;

use std::fs;

use bytes::Bytes;
use kafka_core::record::{
    BatchEncoder, BatchOptions, Compression, ControlRecord, NewHeader, NewRecord, TimestampType,
};
use records_common::{bytes_json, describe, ts_name, vectors_dir};
use serde_json::{json, Value};

#[test]
fn kafka_built_batches_decode_to_kafkas_records() {
    let dir = vectors_dir("kafka");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .expect("vectors/records/kafka")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".bin").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 70,
        "expected the full vector set, found {}",
        names.len()
    );
    let mut failures = Vec::new();
    for name in &names {
        let bin = fs::read(dir.join(format!("{name}.bin"))).unwrap();
        let want: Value =
            serde_json::from_slice(&fs::read(dir.join(format!("{name}.json"))).unwrap()).unwrap();
        match describe(Bytes::from(bin)) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{name}: got {got:#}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
    // Every codec and magic is covered.
    for magic in 0..=2 {
        for codec in Compression::ALL {
            if magic < 2 && codec == Compression::Zstd {
                continue;
            }
            let prefix = format!("v{magic}-{}-", codec.name());
            assert!(
                names.iter().any(|n| n.starts_with(&prefix)),
                "missing {prefix}"
            );
        }
    }
}

const T0: i64 = 1_700_000_000_000;
const APPEND_TIME: i64 = 1_700_000_999_000;

struct OwnedRecord {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn small_records() -> Vec<OwnedRecord> {
    let some = vec![
        ("trace".to_owned(), Some(b"abc".to_vec())),
        ("null-value".to_owned(), None),
        (String::new(), Some(Vec::new())),
    ];
    let r =
        |ts, k: Option<&[u8]>, v: Option<&[u8]>, h: &Vec<(String, Option<Vec<u8>>)>| OwnedRecord {
            timestamp: ts,
            key: k.map(<[u8]>::to_vec),
            value: v.map(<[u8]>::to_vec),
            headers: h.clone(),
        };
    vec![
        r(T0, Some(b"key-1"), Some(b"value-1"), &vec![]),
        r(T0 + 5, None, Some(b"null key"), &some),
        r(T0 - 1000, Some(b""), Some(b"empty key"), &vec![]),
        r(T0 + 2, Some(b"tombstone"), None, &vec![]),
        r(T0 + 3, Some(b"empty value"), Some(b""), &some),
        r(T0 + 4, None, None, &vec![]),
    ]
}

/// Over 1 MiB: 1100 records of 1000-byte JSON-like values (deterministic).
fn large_records() -> Vec<OwnedRecord> {
    let mut x: u64 = 42;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..1100)
        .map(|i| {
            let mut v = String::new();
            while v.len() < 1000 {
                v.push_str(&format!(
                    "{{\"id\":{},\"name\":\"user{}\",\"active\":{}}}",
                    next() % 1_000_000,
                    next() % 5000,
                    next() & 1 == 0
                ));
            }
            v.truncate(1000);
            OwnedRecord {
                timestamp: T0 + i,
                key: Some(format!("key-{i}").into_bytes()),
                value: Some(v.into_bytes()),
                headers: vec![],
            }
        })
        .collect()
}

/// Encodes one batch and returns the JSON Kafka should read from it, computed from
/// the inputs (not from our decoder).
fn encode(opts: &BatchOptions, recs: &[OwnedRecord], out: &mut Vec<u8>) -> Value {
    let headers: Vec<Vec<NewHeader<'_>>> = recs
        .iter()
        .map(|r| {
            r.headers
                .iter()
                .map(|(k, v)| NewHeader {
                    key: k,
                    value: v.as_deref(),
                })
                .collect()
        })
        .collect();
    let _ = BatchEncoder::new()
        .encode(
            opts,
            recs.iter().zip(&headers).map(|(r, h)| NewRecord {
                timestamp: r.timestamp,
                key: r.key.as_deref(),
                value: r.value.as_deref(),
                headers: h,
            }),
            out,
        )
        .expect("encode");
    let log_append = opts.timestamp_type == TimestampType::LogAppendTime;
    let max_ts = if log_append {
        APPEND_TIME
    } else {
        recs.iter().map(|r| r.timestamp).max().unwrap()
    };
    let records: Vec<Value> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let seq = if opts.base_sequence < 0 {
                -1
            } else {
                ((i64::from(opts.base_sequence) + i as i64) % (1i64 << 31)) as i32
            };
            json!({
                "offset": opts.base_offset + i as i64,
                "timestamp": if log_append { APPEND_TIME } else { r.timestamp },
                "sequence": seq,
                "key": bytes_json(r.key.as_deref()),
                "value": bytes_json(r.value.as_deref()),
                "headers": r.headers.iter().map(|(k, v)| json!([k, bytes_json(v.as_deref())])).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "magic": 2,
        "baseOffset": opts.base_offset,
        "lastOffset": opts.base_offset + recs.len() as i64 - 1,
        "compression": opts.compression.name(),
        "timestampType": ts_name(Some(opts.timestamp_type)),
        "maxTimestamp": max_ts,
        "partitionLeaderEpoch": opts.partition_leader_epoch,
        "producerId": opts.producer_id,
        "producerEpoch": opts.producer_epoch,
        "baseSequence": opts.base_sequence,
        "transactional": opts.transactional,
        "control": false,
        "records": records,
    })
}

/// Our cases: (name, bytes, expected JSON).
fn our_cases() -> Vec<(String, Vec<u8>, Value)> {
    let mut cases = Vec::new();
    for codec in Compression::ALL {
        let base = BatchOptions {
            compression: codec,
            log_append_time: APPEND_TIME,
            ..BatchOptions::default()
        };
        let variants: Vec<(&str, BatchOptions, Vec<OwnedRecord>)> = vec![
            ("basic", base, small_records()),
            (
                "offset",
                BatchOptions {
                    base_offset: 1000,
                    partition_leader_epoch: 7,
                    ..base
                },
                small_records(),
            ),
            (
                "logappend",
                BatchOptions {
                    timestamp_type: TimestampType::LogAppendTime,
                    ..base
                },
                small_records(),
            ),
            (
                "idempotent",
                BatchOptions {
                    producer_id: 1234,
                    producer_epoch: 5,
                    base_sequence: 100,
                    ..base
                },
                small_records(),
            ),
            (
                "transactional",
                BatchOptions {
                    producer_id: 1234,
                    producer_epoch: 5,
                    base_sequence: 0,
                    transactional: true,
                    ..base
                },
                small_records(),
            ),
            (
                "seq-wrap",
                BatchOptions {
                    producer_id: 99,
                    producer_epoch: 0,
                    base_sequence: i32::MAX - 2,
                    ..base
                },
                small_records(),
            ),
            ("large", base, large_records()),
        ];
        for (kind, opts, recs) in variants {
            let mut out = Vec::new();
            let want = encode(&opts, &recs, &mut out);
            cases.push((format!("v2-{}-{kind}", codec.name()), out, json!([want])));
        }
        // Two batches back to back.
        let mut out = Vec::new();
        let a = encode(&base, &small_records(), &mut out);
        let b = encode(
            &BatchOptions {
                base_offset: 6,
                ..base
            },
            &small_records(),
            &mut out,
        );
        cases.push((
            format!("v2-{}-two-batches", codec.name()),
            out,
            json!([a, b]),
        ));
    }
    for (name, commit, offset, epoch) in [("commit", true, 500, 17), ("abort", false, 501, 0)] {
        let marker = ControlRecord::EndTransaction {
            commit,
            coordinator_epoch: epoch,
        };
        let opts = BatchOptions {
            base_offset: offset,
            partition_leader_epoch: 4,
            producer_id: 1234,
            producer_epoch: 5,
            ..BatchOptions::default()
        };
        let mut out = Vec::new();
        let _ = marker.encode_batch(&opts, T0, &mut out).unwrap();
        let want = json!([{
            "magic": 2, "baseOffset": offset, "lastOffset": offset, "compression": "none",
            "timestampType": "CreateTime", "maxTimestamp": T0, "partitionLeaderEpoch": 4,
            "producerId": 1234, "producerEpoch": 5, "baseSequence": -1,
            "transactional": true, "control": true,
            "records": [{
                "offset": offset, "timestamp": T0, "sequence": -1,
                "key": if commit { "00000001" } else { "00000000" },
                "value": format!("0000{:08x}", epoch),
                "headers": [],
                "control": {"type": i32::from(commit), "coordinatorEpoch": epoch},
            }],
        }]);
        cases.push((format!("v2-control-{name}"), out, want));
    }
    cases
}

#[test]
fn our_batches_match_the_committed_vectors() {
    // KAFKA_RS_RECORD_VECTORS_OUT=<dir> writes today's encoder output there (for
    // `vectors/oracle.sh records-verify <dir>`) and leaves the committed files alone.
    let out_dir = std::env::var_os("KAFKA_RS_RECORD_VECTORS_OUT").map(std::path::PathBuf::from);
    let write = out_dir.is_some() || std::env::var_os("KAFKA_RS_WRITE_RECORD_VECTORS").is_some();
    let dir = out_dir.unwrap_or_else(|| vectors_dir("ours"));
    if write {
        fs::create_dir_all(&dir).unwrap();
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if matches!(p.extension().and_then(|x| x.to_str()), Some("bin" | "json")) {
                fs::remove_file(p).unwrap();
            }
        }
    }
    let cases = our_cases();
    assert!(cases.len() >= 40);
    for (name, bytes, want) in &cases {
        // Our own decoder agrees with the inputs.
        let got = describe(Bytes::from(bytes.clone())).unwrap();
        assert_eq!(
            &got, want,
            "{name}: our decoder disagrees with the encoder's inputs"
        );
        let bin = dir.join(format!("{name}.bin"));
        let json_path = dir.join(format!("{name}.json"));
        if write {
            fs::write(&bin, bytes).unwrap();
            let text = if name.ends_with("-large") {
                serde_json::to_string(want).unwrap()
            } else {
                serde_json::to_string_pretty(want).unwrap()
            };
            fs::write(&json_path, text + "\n").unwrap();
            continue;
        }
        let committed = fs::read(&bin).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run with KAFKA_RS_WRITE_RECORD_VECTORS=1",
                bin.display()
            )
        });
        assert!(
            committed == *bytes,
            "{name}: encoder output differs from the committed vector"
        );
        let committed_json: Value = serde_json::from_slice(&fs::read(&json_path).unwrap()).unwrap();
        assert_eq!(&committed_json, want, "{name}.json");
    }
}
