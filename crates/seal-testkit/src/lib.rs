//! Test support for seal, kept out of the shipped crate: a loopback judge that speaks the
//! OpenAI chat-completions protocol over real TCP (personas, flavors and every fault of
//! docs/DESIGN.md §4), and the generator of the committed sealed fixtures
//! (`cargo run -p seal-testkit --bin seal-fixtures -- --out sealed-fixtures`), and a generator of
//! run folders with adversarial identity collisions ([`collide`]), and a typed client of the
//! daemon's HTTP API ([`client`]), and scratch buckets on the S3 test server ([`s3`]).
//!
//! The `seal` binary carries no fake judge: only tests, benchmarks and the fixture generator
//! depend on this crate.

#![forbid(unsafe_code)]

pub mod client;
pub mod collide;
pub mod loopback;
pub mod s3;
