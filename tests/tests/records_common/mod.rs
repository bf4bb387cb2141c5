//! Shared by the `records_*` suites: the JSON description of a record set (the same
//! shape `vectors/oracle.sh records-generate` writes from Kafka's reading) and the
//! vector directories.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use bytes::Bytes;
use kafka_core::record::{
    Batch, Batches, Compression, ControlRecord, DecodeOptions, Record, TimestampType,
};
use serde_json::{json, Value};

/// Values longer than this are described by length and CRC-32.
pub const INLINE_MAX: usize = 256;

pub fn vectors_dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../vectors/records")
        .join(sub)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn bytes_json(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) if b.len() <= INLINE_MAX => Value::String(hex(b)),
        Some(b) => json!({"len": b.len(), "crc32": crc32fast::hash(b)}),
    }
}

pub fn ts_name(t: Option<TimestampType>) -> &'static str {
    match t {
        None => "NoTimestampType",
        Some(TimestampType::CreateTime) => "CreateTime",
        Some(TimestampType::LogAppendTime) => "LogAppendTime",
    }
}

fn record_json(r: &Record, control: bool) -> Value {
    let headers: Vec<Value> = r
        .headers
        .iter()
        .map(|h| {
            json!([
                h.key_str().expect("utf-8 header key"),
                bytes_json(h.value.as_deref())
            ])
        })
        .collect();
    let mut o = json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "sequence": r.sequence,
        "key": bytes_json(r.key.as_deref()),
        "value": bytes_json(r.value.as_deref()),
        "headers": headers,
    });
    if control {
        let c = ControlRecord::decode(r).expect("control record");
        let mut cj = json!({"type": c.kind().id()});
        if let ControlRecord::EndTransaction {
            coordinator_epoch, ..
        } = c
        {
            cj["coordinatorEpoch"] = json!(coordinator_epoch);
        }
        o["control"] = cj;
    }
    o
}

/// Our decoder's reading of a record set, in the oracle's JSON shape.
pub fn describe(data: Bytes) -> Result<Value, String> {
    let mut out = Vec::new();
    let mut batches = Batches::new(data, DecodeOptions::default());
    for b in &mut batches {
        let b = b.map_err(|e| e.to_string())?;
        match b {
            Batch::V2(b) => {
                let h = *b.header();
                let recs = b
                    .records()
                    .map_err(|e| e.to_string())?
                    .map(|r| r.map(|r| record_json(&r, b.is_control())))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())?;
                out.push(json!({
                    "magic": 2,
                    "baseOffset": h.base_offset,
                    "lastOffset": h.last_offset(),
                    "compression": h.attributes.compression.name(),
                    "timestampType": ts_name(Some(h.attributes.timestamp_type)),
                    "maxTimestamp": h.max_timestamp,
                    "partitionLeaderEpoch": h.partition_leader_epoch,
                    "producerId": h.producer_id,
                    "producerEpoch": h.producer_epoch,
                    "baseSequence": h.base_sequence,
                    "transactional": h.attributes.transactional,
                    "control": h.attributes.control,
                    "records": recs,
                }));
            }
            Batch::Legacy(l) => {
                let recs = l
                    .records()
                    .map_err(|e| e.to_string())?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())?;
                out.push(json!({
                    "magic": l.magic(),
                    "baseOffset": recs.first().map_or(l.last_offset(), |r| r.offset),
                    "lastOffset": l.last_offset(),
                    "compression": l.compression().name(),
                    "timestampType": ts_name(l.timestamp_type()),
                    "maxTimestamp": l.timestamp(),
                    "partitionLeaderEpoch": -1,
                    "producerId": -1,
                    "producerEpoch": -1,
                    "baseSequence": -1,
                    "transactional": false,
                    "control": false,
                    "records": recs.iter().map(|r| record_json(r, false)).collect::<Vec<_>>(),
                }));
            }
        }
    }
    if batches.has_partial_tail() {
        return Err("partial batch at the end".into());
    }
    Ok(Value::Array(out))
}

pub fn codec_by_name(name: &str) -> Compression {
    Compression::ALL
        .into_iter()
        .find(|c| c.name() == name)
        .expect("codec name")
}
