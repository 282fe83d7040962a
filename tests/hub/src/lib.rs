//! End-to-end tests of the example Hub live in `tests/`.
