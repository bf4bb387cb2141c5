//! Corrupted answers (F19), while the world's faults are on: a seeded fraction of the
//! brokers' answers is damaged on its way to the client — cut short (the size prefix
//! matching the shorter body), a byte flipped inside a fetched record batch (its CRC no
//! longer matches), a huge array count, another correlation id, or text instead of a
//! frame (its first four bytes read as a ~1.2 GB size).

use bytes::Bytes;
use kafka_core::protocol::messages::fetch::FetchResponse;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Decodable, Message};

use super::rng::Rng;

/// How answers are corrupted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Corruption {
    /// Per mille of answers (of the faulty APIs) damaged.
    pub per_mille: u32,
}

/// What was damaged, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorruptCounters {
    /// Answers cut short.
    pub truncated: u64,
    /// Fetch answers with a byte flipped inside a record batch.
    pub flipped_records: u64,
    /// Answers replaced by a huge array count.
    pub huge_counts: u64,
    /// Answers under another correlation id.
    pub wrong_ids: u64,
    /// Answers replaced by text.
    pub garbage: u64,
}

impl CorruptCounters {
    /// Answers damaged of every kind.
    pub fn total(&self) -> u64 {
        self.truncated + self.flipped_records + self.huge_counts + self.wrong_ids + self.garbage
    }
}

/// Damages `bytes` (one framed answer to `api` at `version`) in one of the five ways.
/// A Fetch answer carrying records gets its record bytes flipped half the time.
pub fn corrupt(
    rng: &mut Rng,
    api: ApiKey,
    version: i16,
    bytes: &mut Vec<u8>,
    counters: &mut CorruptCounters,
) {
    if api == ApiKey::Fetch && rng.chance(500) && flip_record_byte(rng, version, bytes) {
        counters.flipped_records += 1;
        return;
    }
    let correlation = bytes
        .get(4..8)
        .map_or(0, |b| i32::from_be_bytes(b.try_into().expect("four bytes")));
    match rng.below(4) {
        0 if bytes.len() > 9 => {
            // Keep the correlation id and at least one byte; the size says the rest.
            let keep = 9 + rng.below(bytes.len() as u64 - 9) as usize;
            bytes.truncate(keep);
            let size = (keep - 4) as i32;
            bytes[..4].copy_from_slice(&size.to_be_bytes());
            counters.truncated += 1;
        }
        1 => {
            // Error code 0, then a compact array count (uvarint) of i32::MAX + 1; the
            // same bytes read as a header's tag buffer then a count under non-flexible
            // versions claim as much.
            let body = [0u8, 0, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0, 0];
            *bytes = frame(correlation, &body);
            counters.huge_counts += 1;
        }
        2 if bytes.len() >= 8 => {
            let other = correlation.wrapping_add(1 + rng.below(1000) as i32);
            bytes[4..8].copy_from_slice(&other.to_be_bytes());
            counters.wrong_ids += 1;
        }
        _ => {
            *bytes = b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n".to_vec();
            counters.garbage += 1;
        }
    }
}

fn frame(correlation: i32, body: &[u8]) -> Vec<u8> {
    let mut f = ((4 + body.len()) as i32).to_be_bytes().to_vec();
    f.extend_from_slice(&correlation.to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// Flips one byte inside the first record batch of a partition of a Fetch answer, in
/// the part the batch CRC covers; `false` if the answer carries no batch.
fn flip_record_byte(rng: &mut Rng, version: i16, bytes: &mut Vec<u8>) -> bool {
    let header_version = ApiKey::Fetch.response_header_version(version);
    let mut body = Bytes::copy_from_slice(&bytes[4..]);
    let before = body.len();
    if ResponseHeader::decode(&mut body, header_version).is_err() {
        return false;
    }
    let header_len = before - body.len();
    let Ok(mut resp) = FetchResponse::decode_from(body, version) else {
        return false;
    };
    let mut targets = Vec::new();
    for (t, topic) in resp.responses.iter().enumerate() {
        for (p, part) in topic.partitions.iter().enumerate() {
            // A v2 batch header is 61 bytes; the CRC covers from byte 21 on.
            if part.records.as_ref().is_some_and(|r| r.len() > 61) {
                targets.push((t, p));
            }
        }
    }
    if targets.is_empty() {
        return false;
    }
    let (t, p) = targets[rng.below(targets.len() as u64) as usize];
    let part = &mut resp.responses[t].partitions[p];
    let mut records = part.records.take().expect("checked").to_vec();
    let batch_len = i32::from_be_bytes(records[8..12].try_into().expect("four bytes"));
    let end = (12 + batch_len.max(0) as usize).min(records.len());
    if end <= 21 {
        part.records = Some(Bytes::from(records));
        return false;
    }
    let at = 21 + rng.below((end - 21) as u64) as usize;
    records[at] ^= 1 + rng.below(255) as u8;
    part.records = Some(Bytes::from(records));
    let mut out = bytes[..4 + header_len].to_vec();
    if resp.encode_to(&mut out, version).is_err() {
        return false;
    }
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    *bytes = out;
    true
}
