//! Which seeds a simulation test runs: `SIM_SEED=<n>` replays one seed, otherwise
//! `SIM_SEEDS` seeds (default given by the test) from `SIM_SEED_BASE` (default 0).

/// The seeds to run, `default` of them unless the environment says otherwise.
pub fn seeds(default: u64) -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(one) = var("SIM_SEED") {
        return vec![one];
    }
    let base = var("SIM_SEED_BASE").unwrap_or(0);
    let count = var("SIM_SEEDS").unwrap_or(default);
    (base..base + count).collect()
}

/// Runs `run` for every seed, reporting the first failing seed with how to replay it.
pub fn for_each_seed(name: &str, default: u64, mut run: impl FnMut(u64)) {
    let seeds = seeds(default);
    for &seed in &seeds {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(seed)));
        if let Err(e) = outcome {
            eprintln!("{name}: seed {seed} failed; replay with SIM_SEED={seed} cargo test -p kafka-tests --test {} {name}", test_file());
            std::panic::resume_unwind(e);
        }
    }
    eprintln!("{name}: {} seeds passed", seeds.len());
}

/// The running test file's name (`sim_txn` from the binary `sim_txn-<hash>`).
fn test_file() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .and_then(|s| s.rsplit_once('-').map(|(name, _)| name.to_string()))
        .unwrap_or_else(|| "<file>".to_string())
}
