//! The lz4 decompressor under the fuzz output cap, plus a re-compress round trip.
#![no_main]

use kafka_core::record::{fuzz, Compression};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::decompressor(Compression::Lz4, data);
});
