//! Record set decode (v2 and legacy), optionally with CRCs fixed up.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafka_core::record::fuzz::record_batch(data);
});
