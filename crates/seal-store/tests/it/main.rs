//! The integration tests of seal-store: one binary, the conformance of every backend and the
//! durable file writes.

mod common;
mod durable_writes;
mod store_conformance;
