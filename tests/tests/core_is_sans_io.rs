//! kafka-core must do no I/O: no sockets, files, threads, processes or clock reads in its
//! source. (Clippy's `disallowed-methods`/`disallowed-types` in `kafka-core/clippy.toml`
//! enforce the same at the type level; this test also catches imports and paths.)

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "std::net",
    "std::fs",
    "std::thread",
    "std::process",
    "std::io::stdin",
    "std::io::stdout",
    "std::env",
    "Instant::now",
    "SystemTime::now",
    "UNIX_EPOCH",
    "tokio",
    "mio::",
    "async_std",
];

fn scan(dir: &Path, hits: &mut Vec<String>, files: &mut usize) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // Test code may read the clock to set a virtual clock's origin.
        if matches!(name, "tests" | "tests.rs" | "test_support.rs" | "testdata") {
            continue;
        }
        if path.is_dir() {
            scan(&path, hits, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            *files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (n, line) in lines.iter().enumerate() {
                // An inline `#[cfg(test)] mod tests` ends the production code of a file.
                if line.trim() == "#[cfg(test)]"
                    && lines
                        .get(n + 1)
                        .is_some_and(|l| l.trim_start().starts_with("mod tests"))
                {
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                for f in FORBIDDEN {
                    if code.contains(f) {
                        hits.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
}

#[test]
fn kafka_core_source_has_no_io_clock_or_threads() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kafka-core/src");
    let (mut hits, mut files) = (Vec::new(), 0);
    scan(&src, &mut hits, &mut files);
    assert!(files > 100, "scanned only {files} files");
    assert!(
        hits.is_empty(),
        "I/O or clock use in kafka-core:\n{}",
        hits.join("\n")
    );
}

#[test]
fn kafka_core_depends_on_no_runtime() {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kafka-core/Cargo.toml"),
    )
    .unwrap();
    for dep in ["tokio", "mio", "async-std", "async-io", "socket2"] {
        assert!(
            !manifest.contains(&format!("\n{dep} ")) && !manifest.contains(&format!("\n{dep}=")),
            "kafka-core depends on {dep}"
        );
    }
}
