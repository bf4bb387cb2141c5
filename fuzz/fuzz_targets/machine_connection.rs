//! One broker connection driven by a scripted peer (kafka_fuzz::connection).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafka_fuzz::connection::run(data);
});
