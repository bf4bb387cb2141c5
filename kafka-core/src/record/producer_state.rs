//! The producer fields of a v2 batch header, and rewriting them in a sealed batch
//! (a retry after an epoch bump, KIP-360) without touching the records.
//!
//! The CRC is updated, not recomputed: CRC-32C is linear, so changing bytes in the
//! covered region changes the CRC by the CRC of the change shifted past the bytes that
//! follow it. That costs the same for any batch size and keeps a batch damaged
//! elsewhere detectably damaged (a full recomputation would bless the damage).

use super::header::{
    ATTRIBUTES_OFFSET, BATCH_HEADER_LEN, CRC_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET,
    RECORDS_COUNT_OFFSET,
};
use super::RecordError;

/// Offset of the producer id in a v2 header (producer epoch and base sequence follow;
/// the record count after them ends the rewritten fields).
const PRODUCER_ID_OFFSET: usize = 43;
/// The transactional attribute bit.
const TRANSACTIONAL_BIT: u8 = 0x10;

/// What an idempotent or transactional producer writes into a batch when it drains it:
/// its id and epoch, the sequence of the batch's first record, and whether the batch
/// belongs to a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerState {
    /// Producer id, -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence of the batch's first record, -1 if none.
    pub base_sequence: i32,
    /// The transactional attribute.
    pub transactional: bool,
}

impl ProducerState {
    /// A producer that is neither idempotent nor transactional: -1, -1, -1, no flag.
    pub const NONE: Self = Self {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
    };
}

impl Default for ProducerState {
    fn default() -> Self {
        Self::NONE
    }
}

/// Rewrites the producer id, epoch, base sequence and transactional flag of `batch`,
/// which must be exactly one v2 batch (as [`SealedBatch::bytes`](super::SealedBatch)),
/// and updates its CRC-32C in place. The records, whether compressed or not, are not
/// read.
///
/// Fails, changing nothing, if `batch` is shorter than a header
/// ([`RecordError::Truncated`]), is not magic 2 ([`RecordError::UnknownMagic`]), or its
/// length field does not span exactly `batch` ([`RecordError::InvalidLength`]). The CRC
/// is not checked first: a batch whose CRC was wrong stays wrong.
pub fn rewrite_producer_state(batch: &mut [u8], state: &ProducerState) -> Result<(), RecordError> {
    if batch.len() < BATCH_HEADER_LEN {
        return Err(RecordError::truncated(
            "batch header",
            BATCH_HEADER_LEN,
            batch.len(),
        ));
    }
    let magic = batch[MAGIC_OFFSET] as i8;
    if magic != 2 {
        return Err(RecordError::UnknownMagic(magic));
    }
    let length = i32::from_be_bytes([batch[8], batch[9], batch[10], batch[11]]);
    if i64::from(length) != (batch.len() - LOG_OVERHEAD) as i64 {
        return Err(RecordError::InvalidLength {
            what: "batch",
            length: i64::from(length),
        });
    }
    let mut fields = [0u8; RECORDS_COUNT_OFFSET - ATTRIBUTES_OFFSET];
    fields.copy_from_slice(&batch[ATTRIBUTES_OFFSET..RECORDS_COUNT_OFFSET]);
    let old = fields;
    // Attributes: the low byte of the big-endian int16 holds the transactional bit.
    if state.transactional {
        fields[1] |= TRANSACTIONAL_BIT;
    } else {
        fields[1] &= !TRANSACTIONAL_BIT;
    }
    let at = PRODUCER_ID_OFFSET - ATTRIBUTES_OFFSET;
    fields[at..at + 8].copy_from_slice(&state.producer_id.to_be_bytes());
    fields[at + 8..at + 10].copy_from_slice(&state.producer_epoch.to_be_bytes());
    fields[at + 10..at + 14].copy_from_slice(&state.base_sequence.to_be_bytes());
    let mut diff = fields;
    for (d, o) in diff.iter_mut().zip(old) {
        *d ^= o;
    }
    let after = batch.len() - RECORDS_COUNT_OFFSET;
    let stored = u32::from_be_bytes([
        batch[CRC_OFFSET],
        batch[CRC_OFFSET + 1],
        batch[CRC_OFFSET + 2],
        batch[CRC_OFFSET + 3],
    ]);
    let crc = stored ^ crc_of_change(&diff, after);
    batch[ATTRIBUTES_OFFSET..RECORDS_COUNT_OFFSET].copy_from_slice(&fields);
    batch[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// The CRC-32C polynomial, bit-reflected (bit 31 holds the coefficient of x^0).
const POLY: u32 = 0x82F6_3B78;

/// How the CRC-32C of a message changes when the bytes `diff` (old XOR new) are
/// XORed into it, `after` bytes before its end.
///
/// For messages of equal length `crc(a) ^ crc(b)` is the raw CRC register (initial 0,
/// no final inversion) run over `a ^ b`; zero bytes at the end of that multiply the
/// register by x^8 each, modulo the polynomial.
fn crc_of_change(diff: &[u8], after: usize) -> u32 {
    // `crc32c_append(!0, d)` runs the register from 0 and inverts at the end.
    let raw = !crc32c::crc32c_append(!0, diff);
    gf_mul(raw, x_pow_8n(after))
}

/// `x * b` modulo the polynomial, reflected.
const fn times_x(b: u32) -> u32 {
    if b & 1 == 0 {
        b >> 1
    } else {
        (b >> 1) ^ POLY
    }
}

/// `a * b` modulo the polynomial, both reflected.
const fn gf_mul(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    let mut i = 0;
    while i < 32 {
        // Bit 31 - i of `a` is its coefficient of x^i; `b` holds b * x^i here.
        if a & (0x8000_0000 >> i) != 0 {
            product ^= b;
        }
        b = times_x(b);
        i += 1;
    }
    product
}

/// `X8_POW2[k]` is x^(8 * 2^k) modulo the polynomial.
const X8_POW2: [u32; 64] = {
    let mut t = [0u32; 64];
    // x^8: bit 31 - 8.
    t[0] = 0x8000_0000 >> 8;
    let mut k = 1;
    while k < 64 {
        t[k] = gf_mul(t[k - 1], t[k - 1]);
        k += 1;
    }
    t
};

/// x^(8n) modulo the polynomial: the effect of `n` zero bytes on the register.
fn x_pow_8n(n: usize) -> u32 {
    let mut acc = 0x8000_0000; // x^0
    let mut k = 0;
    let mut n = n as u64;
    while n != 0 {
        if n & 1 == 1 {
            acc = gf_mul(acc, X8_POW2[k]);
        }
        n >>= 1;
        k += 1;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_update_matches_recomputation() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for len in [0usize, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 4096, 70_001] {
            let mut msg: Vec<u8> = (0..36 + len).map(|_| next() as u8).collect();
            let before = crc32c::crc32c(&msg);
            let diff: Vec<u8> = (0..36).map(|_| next() as u8).collect();
            for (m, d) in msg.iter_mut().zip(&diff) {
                *m ^= d;
            }
            assert_eq!(
                before ^ crc_of_change(&diff, len),
                crc32c::crc32c(&msg),
                "{len}"
            );
        }
    }

    #[test]
    fn powers_of_x() {
        // x^32 = the polynomial's low terms; x^8 * x^8 * x^8 * x^8 = x^32.
        assert_eq!(gf_mul(X8_POW2[1], X8_POW2[1]), POLY);
        assert_eq!(x_pow_8n(4), POLY);
        assert_eq!(x_pow_8n(0), 0x8000_0000);
        assert_eq!(x_pow_8n(3), 0x80);
    }
}
