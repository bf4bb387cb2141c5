//! Peak heap while decoding compressed batches stays near the decompression cap
//! (`DecodeOptions::max_decompressed_bytes`): legacy (magic 0/1) wrappers are iterated,
//! not collected, and no output buffer grows past the cap by doubling.
//!
//! A counting global allocator (current and peak live bytes; a `realloc` replaces the
//! old block's size by the new one) measures each decode. It is this binary's
//! allocator only, and the file holds one test function, so no other test's
//! allocations land in a measurement.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use bytes::Bytes;
use kafka_core::record::{
    compression, fuzz, Batch, BatchEncoder, BatchOptions, Batches, Compression, DecodeOptions,
    NewRecord,
};

/// Counts live heap bytes and the highest count since the last [`Counting::reset_peak`].
struct Counting {
    current: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    fn add(&self, n: usize) {
        let now = self.current.fetch_add(n, Relaxed) + n;
        self.peak.fetch_max(now, Relaxed);
    }

    fn sub(&self, n: usize) {
        self.current.fetch_sub(n, Relaxed);
    }

    fn current(&self) -> usize {
        self.current.load(Relaxed)
    }

    fn reset_peak(&self) {
        self.peak.store(self.current(), Relaxed);
    }

    fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }
}

// SAFETY: every call forwards to `System` with the caller's layout; the counters are
// bookkeeping only.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            self.add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            self.add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        self.sub(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as the new block replacing the old one: glibc moves large
            // (mmap-ed) blocks with mremap, without a second copy. A copying realloc's
            // brief overlap is not counted.
            self.sub(layout.size());
            self.add(new_size);
        }
        p
    }
}

#[global_allocator]
static HEAP: Counting = Counting {
    current: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

const MIB: usize = 1 << 20;

/// Peak live bytes above the starting point while `f` runs, and its result.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = HEAP.current();
    HEAP.reset_peak();
    let out = f();
    (out, HEAP.peak() - base)
}

/// One legacy message: offset, size, crc, magic, attributes, [timestamp], key, value.
fn legacy_entry(offset: i64, magic: i8, attrs: i8, value: Option<&[u8]>) -> Vec<u8> {
    let mut msg = vec![magic as u8, attrs as u8];
    if magic == 1 {
        msg.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    }
    msg.extend_from_slice(&(-1i32).to_be_bytes()); // null key
    match value {
        None => msg.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(v) => {
            msg.extend_from_slice(&(v.len() as i32).to_be_bytes());
            msg.extend_from_slice(v);
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((msg.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&msg).to_be_bytes());
    out.extend_from_slice(&msg);
    out
}

/// A legacy compressed wrapper whose inner set is as many smallest messages (null key,
/// empty value) as fit in `inner_bytes`: the worst case for per-record memory.
fn legacy_wrapper(magic: i8, codec: Compression, inner_bytes: usize) -> (Bytes, usize) {
    let one = legacy_entry(0, magic, 0, Some(b"")).len();
    let count = inner_bytes / one;
    let mut inner = Vec::with_capacity(count * one);
    for i in 0..count {
        // Magic 1 inner offsets are relative to the wrapper; magic 0 ones absolute.
        inner.extend(legacy_entry(i as i64, magic, 0, Some(b"")));
    }
    let mut z = Vec::new();
    compression::compress(codec, None, &inner, &mut z).unwrap();
    let wrapper = legacy_entry(count as i64 - 1, magic, codec.id() as i8, Some(&z));
    (Bytes::from(wrapper), count)
}

/// Decodes every record of every batch in `set`; the record count.
fn decode_set(set: &Bytes, opts: DecodeOptions) -> usize {
    let mut n = 0;
    for batch in Batches::new(set.clone(), opts) {
        match batch.unwrap() {
            Batch::V2(b) => {
                for r in b.records().unwrap() {
                    std::hint::black_box(r.unwrap());
                    n += 1;
                }
            }
            Batch::Legacy(b) => {
                for r in b.records().unwrap() {
                    std::hint::black_box(r.unwrap());
                    n += 1;
                }
            }
        }
    }
    n
}

/// A v2 batch of one record whose value is `value_len` incompressible-looking but
/// compressible bytes, compressed with `codec`.
fn v2_batch(codec: Compression, value_len: usize) -> Bytes {
    let value: Vec<u8> = (0..value_len).map(|i| (i / 1024 % 251) as u8).collect();
    let mut out = Vec::new();
    let _ = BatchEncoder::new()
        .encode(
            &BatchOptions {
                compression: codec,
                ..BatchOptions::default()
            },
            [NewRecord {
                value: Some(&value),
                ..NewRecord::default()
            }],
            &mut out,
        )
        .unwrap();
    fuzz::fix_crcs(&mut out);
    Bytes::from(out)
}

#[test]
fn peak_heap_while_decoding_stays_near_the_cap() {
    // 1. Legacy wrappers of tiny messages, decompressing to just under the cap. Before
    //    the legacy reader streamed, every inner message was collected twice (parsed
    //    messages, then records): about 10x the cap.
    let cap = 8 * MIB;
    let opts = DecodeOptions {
        max_decompressed_bytes: cap,
        ..DecodeOptions::default()
    };
    for magic in [0i8, 1] {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let (set, count) = legacy_wrapper(magic, codec, cap - 64);
            let (n, peak) = peak_of(|| decode_set(&set, opts));
            assert_eq!(n, count);
            eprintln!(
                "legacy magic {magic} {codec:?}: {} B wrapper, {count} records, cap {cap} B, \
                 peak {peak} B ({:.2}x cap)",
                set.len(),
                peak as f64 / cap as f64
            );
            assert!(
                peak <= cap + cap / 16,
                "legacy magic {magic} {codec:?}: peak {peak} B for a {cap} B cap"
            );
        }
    }

    // 2. The default 50 MiB cap with a gzip wrapper of ~5 MB, the case the issue names.
    let opts = DecodeOptions::default();
    let cap = opts.max_decompressed_bytes;
    let (set, count) = legacy_wrapper(1, Compression::Gzip, cap - 64);
    let (n, peak) = peak_of(|| decode_set(&set, opts));
    assert_eq!(n, count);
    eprintln!(
        "legacy magic 1 Gzip at the default cap: {} B wrapper, {count} records, peak {peak} B \
         ({:.2}x cap)",
        set.len(),
        peak as f64 / cap as f64
    );
    assert!(peak <= cap + cap / 16, "peak {peak} B for a {cap} B cap");
    drop(set);

    // 3. v2 batches decompressing to just under the cap, per codec: output buffers
    //    never double past the cap (6 MiB: not a power of two, so doubling overshoots).
    let cap = 6 * MIB;
    let opts = DecodeOptions {
        max_decompressed_bytes: cap,
        ..DecodeOptions::default()
    };
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        // The records section is the value plus a few bytes of record framing.
        let batch = v2_batch(codec, cap - 256);
        let (n, peak) = peak_of(|| decode_set(&batch, opts));
        assert_eq!(n, 1);
        eprintln!(
            "v2 {codec:?}: {} B batch, cap {cap} B, peak {peak} B ({:.2}x cap)",
            batch.len(),
            peak as f64 / cap as f64
        );
        assert!(
            peak <= cap + cap / 16,
            "v2 {codec:?}: peak {peak} B for a {cap} B cap"
        );
    }
}
