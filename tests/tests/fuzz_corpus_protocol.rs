//! Replays the checked-in protocol fuzz corpora through the same entry points as the
//! fuzz targets, so every `cargo test` re-checks past findings and seeds.

use std::path::PathBuf;

use kafka_core::protocol::fuzz::{decode_request, decode_response};

fn replay(target: &str, entry: fn(&[u8])) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for e in std::fs::read_dir(&dir)
        .unwrap_or_else(|_| panic!("missing corpus {}", dir.display()))
        .flatten()
    {
        entry(&std::fs::read(e.path()).unwrap());
        n += 1;
    }
    n
}

#[test]
fn request_corpus_replays_without_panics() {
    assert!(replay("decode_request", decode_request) >= 302);
}

#[test]
fn response_corpus_replays_without_panics() {
    assert!(replay("decode_response", decode_response) >= 302);
}

#[test]
fn truncations_and_bit_flips_of_every_seed_fail_cleanly() {
    for (target, entry) in [
        ("decode_request", decode_request as fn(&[u8])),
        ("decode_response", decode_response),
    ] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus")
            .join(target);
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let data = std::fs::read(e.path()).unwrap();
            for cut in 2..data.len().min(64) {
                entry(&data[..cut]);
            }
            for i in 2..data.len().min(48) {
                let mut flipped = data.clone();
                flipped[i] ^= 0xff;
                entry(&flipped);
            }
        }
    }
}
