//! Any request of any API key and version, from arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafka_core::protocol::fuzz::decode_request(data);
});
