//! Deterministic simulation harness: scenarios drive clients against a simulated cluster
//! with injected faults, record what the clients saw in a [`history::History`], and judge
//! it afterwards.

pub mod history;
