//! End-to-end benchmark: our client against rust-rdkafka, franz-go and Kafka's Java
//! client on one single-node broker, in one run. See `bench/RESULTS.md`.
//!
//! `cargo run --release -p kafka-bench --bin e2e -- [--quick] [--help]`

#[path = "../e2e/mod.rs"]
mod e2e;

fn main() -> std::process::ExitCode {
    e2e::main()
}
