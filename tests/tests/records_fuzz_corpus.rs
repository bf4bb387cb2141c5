//! Replays the checked-in corpora of the record fuzz targets (`fuzz/corpus/<target>/`)
//! through the same entry points the targets call, so every seed and every saved
//! finding runs under plain `cargo test`.

use std::fs;
use std::path::PathBuf;

use kafka_core::record::{fuzz, Compression};

fn replay(target: &str, run: impl Fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_file() {
            run(&fs::read(&path).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "empty corpus {}", dir.display());
}

#[test]
fn record_batch_corpus() {
    replay("record_batch", fuzz::record_batch);
}

#[test]
fn decompress_gzip_corpus() {
    replay("decompress_gzip", |d| {
        fuzz::decompressor(Compression::Gzip, d)
    });
}

#[test]
fn decompress_snappy_corpus() {
    replay("decompress_snappy", |d| {
        fuzz::decompressor(Compression::Snappy, d)
    });
}

#[test]
fn decompress_lz4_corpus() {
    replay("decompress_lz4", |d| {
        fuzz::decompressor(Compression::Lz4, d)
    });
}

#[test]
fn decompress_zstd_corpus() {
    replay("decompress_zstd", |d| {
        fuzz::decompressor(Compression::Zstd, d)
    });
}
