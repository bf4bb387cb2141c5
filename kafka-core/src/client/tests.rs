//! Router tests (scripted brokers, virtual clock).
