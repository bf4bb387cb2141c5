//! Compression codecs with Kafka's framing, each behind its cargo feature.
//!
//! Decompression is always bounded: output stops with
//! [`RecordError::DecompressedTooLarge`] once it would exceed the caller's cap, and no
//! buffer is ever sized from a length the payload claims beyond that cap. The output
//! `Vec` grows geometrically as usual but through `reserve_within`, so its capacity
//! never exceeds what was in it before plus the cap (no doubling to twice the cap).

#[cfg(feature = "gzip")]
mod gzip;
#[cfg(feature = "lz4")]
mod lz4;
#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zstd")]
mod zstd;

use super::RecordError;

/// A record batch compression codec (attribute bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Uncompressed (0).
    #[default]
    None,
    /// gzip, RFC 1952 (1).
    Gzip,
    /// snappy, in the xerial snappy-java stream framing on write (2).
    Snappy,
    /// lz4, in Kafka's subset of the LZ4 frame format (3).
    Lz4,
    /// zstd frames (4); only in v2 batches.
    Zstd,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec with wire id `id`.
    pub fn from_id(id: u8) -> Result<Self, RecordError> {
        Ok(match id {
            0 => Self::None,
            1 => Self::Gzip,
            2 => Self::Snappy,
            3 => Self::Lz4,
            4 => Self::Zstd,
            other => return Err(RecordError::UnknownCompression(other)),
        })
    }

    /// The wire id.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    /// Kafka's name for the codec (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// The codec Kafka calls `name` (`compression.type`), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether this build can encode and decode the codec.
    pub fn is_enabled(self) -> bool {
        match self {
            Self::None => true,
            Self::Gzip => cfg!(feature = "gzip"),
            Self::Snappy => cfg!(feature = "snappy"),
            Self::Lz4 => cfg!(feature = "lz4"),
            Self::Zstd => cfg!(feature = "zstd"),
        }
    }
}

/// Decompresses `input` (a whole compressed records section) and appends the result
/// to `out`, failing once more than `cap` bytes would be produced.
///
/// `magic` is the batch's magic byte: lz4 data in magic 0 messages carries Kafka's
/// old frame-descriptor checksum, which is then not verified (KAFKA-3160). Snappy
/// accepts the xerial stream framing and, like snappy-java, a bare raw block.
pub fn decompress(
    codec: Compression,
    magic: i8,
    input: &[u8],
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let _ = (magic, input, cap, &out);
    match codec {
        Compression::None => {
            if input.len() > cap {
                return Err(RecordError::DecompressedTooLarge { cap });
            }
            out.reserve_exact(input.len());
            out.extend_from_slice(input);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => gzip::decompress(input, cap, out),
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy::decompress(input, cap, out),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => lz4::decompress(input, magic == 0, cap, out),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::decompress(input, cap, out),
        #[allow(unreachable_patterns)]
        other => Err(RecordError::UnsupportedCompression(other)),
    }
}

/// Compresses `input` with Kafka's framing for `codec` and appends it to `out`.
///
/// `level` applies to gzip (1-9, default 6) and zstd (default 3); lz4 and snappy have
/// one level here.
pub fn compress(
    codec: Compression,
    level: Option<i32>,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let _ = (level, input, &out);
    match codec {
        Compression::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => gzip::compress(input, level, out),
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy::compress(input, out),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => lz4::compress(input, out),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::compress(input, level, out),
        #[allow(unreachable_patterns)]
        other => Err(RecordError::UnsupportedCompression(other)),
    }
}

/// Compressor state reused across batches by [`BatchEncoder`](super::BatchEncoder) and
/// [`BatchBuilder`](super::BatchBuilder) (the gzip and zstd contexts).
#[derive(Default)]
pub(crate) struct Contexts {
    #[cfg(feature = "gzip")]
    gzip: Option<gzip::Context>,
    #[cfg(feature = "zstd")]
    zstd: Option<zstd::Context>,
}

impl Clone for Contexts {
    /// Contexts are caches: a clone starts empty.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Contexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contexts").finish_non_exhaustive()
    }
}

impl Contexts {
    /// [`compress`], reusing the contexts kept here.
    pub(crate) fn compress(
        &mut self,
        codec: Compression,
        level: Option<i32>,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), RecordError> {
        match codec {
            #[cfg(feature = "gzip")]
            Compression::Gzip => gzip::compress_reusing(&mut self.gzip, input, level, out),
            #[cfg(feature = "zstd")]
            Compression::Zstd => zstd::compress_reusing(&mut self.zstd, input, level, out),
            other => compress(other, level, input, out),
        }
    }
}

/// Makes room in `out` for `additional` more bytes, growing geometrically (doubling, as
/// `Vec` does) but never to a capacity above `max_len`. The caller keeps
/// `out.len() + additional <= max_len`; should it not, the capacity is exactly
/// `out.len() + additional`.
#[cfg_attr(
    not(any(
        feature = "gzip",
        feature = "snappy",
        feature = "lz4",
        feature = "zstd"
    )),
    allow(dead_code)
)]
pub(super) fn reserve_within(out: &mut Vec<u8>, additional: usize, max_len: usize) {
    let need = out.len().saturating_add(additional);
    if need <= out.capacity() {
        return;
    }
    let target = out
        .capacity()
        .saturating_mul(2)
        .max(4096)
        .min(max_len)
        .max(need);
    out.reserve_exact(target - out.len());
}

/// Reads a decompressing reader to its end into `out`, at most `cap` bytes.
///
/// The buffer starts at `size_hint` (never more than the cap) and grows through
/// [`reserve_within`], so its capacity stays within the cap; one extra byte is read
/// only to tell "exactly the cap" from "more".
#[cfg(any(feature = "gzip", feature = "zstd"))]
fn read_bounded<R: std::io::Read>(
    mut reader: R,
    codec: Compression,
    size_hint: usize,
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    use std::io::ErrorKind;
    let start = out.len();
    let max_len = start.saturating_add(cap);
    let err = |e: std::io::Error| RecordError::Decompress {
        codec,
        reason: e.to_string(),
    };
    reserve_within(out, size_hint.min(cap), max_len);
    // `filled` is the logical length; the bytes between it and `out.len()` are zeroed
    // room for the reader (safe code cannot read into spare capacity).
    let mut filled = start;
    let result = loop {
        if filled == out.len() {
            if filled == max_len {
                // At the cap: anything more is too large.
                let mut probe = [0u8; 1];
                match reader.read(&mut probe) {
                    Ok(0) => break Ok(()),
                    Ok(_) => break Err(RecordError::DecompressedTooLarge { cap }),
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => break Err(err(e)),
                }
            }
            reserve_within(out, (max_len - filled).min(64 * 1024), max_len);
            let room = out.capacity().min(max_len);
            out.resize(room, 0);
        }
        match reader.read(&mut out[filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => break Err(err(e)),
        }
    };
    match result {
        Ok(()) => {
            out.truncate(filled);
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}
