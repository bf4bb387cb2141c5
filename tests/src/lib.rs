//! Shared helpers for the integration suites (see the `tests/` folder).
