//! Unit tests of the group operations.
