//! See kafka_fuzz::share (docs/FUZZING.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafka_fuzz::share::run(data);
});
