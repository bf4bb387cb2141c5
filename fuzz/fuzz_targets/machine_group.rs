//! See kafka_fuzz::group (docs/FUZZING.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafka_fuzz::group::run(data);
});
