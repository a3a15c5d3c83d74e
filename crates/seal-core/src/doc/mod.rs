//! Serde types for every document seal reads or writes (docs/DESIGN.md §3).
//!
//! The JSON Schemas in `src/contracts/schemas` are the authority on shape; these types are how
//! Rust code holds a document once it passed them. Every struct rejects unknown fields, except
//! that playtest/3 carries its `^_` extension fields through unchanged ([`Extensions`]).
//!
//! Reading a DECIDED document is allowed everywhere (verify, replay, export); producing one is
//! not: see [`crate::postguard`].

pub mod common;
pub mod consensus;
pub mod cost;
pub mod decision_tree;
pub mod evidence;
pub mod judge_package;
pub mod judge_result;
pub mod proof_package;
pub mod shadow_report;
pub mod slot_meta;

pub use common::*;
pub use consensus::*;
pub use cost::*;
pub use decision_tree::*;
pub use evidence::*;
pub use judge_package::*;
pub use judge_result::*;
pub use proof_package::*;
pub use slot_meta::*;
