//! See kafka_fuzz::producer (docs/FUZZING.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafka_fuzz::producer::run_transactional(data);
});
