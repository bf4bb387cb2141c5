//! Deterministic simulation harness (T1 of `PERF-AND-FAULTS.md`): the production
//! `kafka_core` client runs against a simulated cluster (`cluster`, `handlers/`) over a
//! simulated network on a virtual clock (`world`), every choice drawn from one seed
//! (`rng`); the bytes exchanged are the real wire format (`wire`). The transaction
//! coordinator's state is `txn_state`, the group coordinator's (KIP-848 membership)
//! `group_state`, the classic groups' `classic_state`. Scenario helpers (`producing`, `transacting`,
//! `draining`, `pipeline`, `grouping`) log every send and read into a history that the checker
//! (`history`) judges. `serve` puts the same cluster on loopback sockets for the real
//! adapters.

pub mod classic_state;
pub mod cluster;
pub mod corrupt;
pub mod draining;
pub mod forget;
pub mod group_state;
pub mod grouping;
pub mod handlers;
pub mod history;
pub mod links;
pub mod lost_batches;
pub mod pipeline;
pub mod producing;
pub mod rng;
pub mod seeds;
pub mod serve;
pub mod story;
pub mod throttle;
pub mod topics;
pub mod transacting;
pub mod txn_state;
pub mod wire;
pub mod world;
