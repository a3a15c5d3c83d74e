//! seal: the trusted part of the `playtest/3` stage. It decides whether a generated game passed
//! its playtest from the judgement of two independent LLM judges, and seals the evidence so that
//! anyone with the public key can re-prove the decision.
//!
//! # Data flow, one module per step
//!
//! ```text
//! run folder / HTTP ─▶ contracts, invariants   documents checked (schema + cross-field rules)
//!                   ─▶ store                   content-addressed, create-only (file, memory, S3)
//!                   ─▶ blinding                ONE blinded JudgePackage/1 per roll (pure)
//!                   ─▶ judge                   A ∥ B over OpenAI-compatible HTTP; raw → parsed → normalized
//!                   ─▶ independence, consensus JudgeConsensus/1 dual-strict/1 (pure)
//!                   ─▶ roll, merge             rolls and first-decisive/1
//!                   ─▶ postguard               the ONLY writer of a DECIDED document
//!                   ─▶ sealing                 in-toto statement in a DSSE envelope, ed25519
//!                   ─▶ transparency, tlog      the seal's entry logged (RFC 6962, C2SP checkpoint), then the seal stored
//!                   ─▶ witness::publish        each checkpoint sent to witnesses, cosignatures stored
//! auditor           ─▶ verify                  re-hash, re-verify, recompute everything
//!                   ─▶ transparency::view      nothing deleted, replaced or rolled back
//!                   ─▶ witness::check          N of M witnesses cosigned the checkpoint relied on
//! witness operator  ─▶ witness                 `seal witness serve`: cosigns only append-only growth
//! operator          ─▶ replay                  historical_replay from stored or live judges
//!                   ─▶ transparency::rebuild   the explicit, logged way past a log that lost a seal
//! ```
//!
//! The pure core (`canonical`, `json`, `blinding`, `consensus`, `independence`, `invariants`,
//! judge `parse` and `normalize`, …) is its own crate, `seal-core`: it does no I/O and reads no
//! clock, and the compiler keeps tokio, HTTP and the object store out of it. The store, HTTP
//! and signing sit at the edges.
//!
//! # The crate split (issue 23), under way
//!
//! The modules of the pure core live in `crates/seal-core`, the store in `crates/seal-store`;
//! both are re-exported below under their old paths (`seal::canonical`, `seal::doc`,
//! `seal::store`, …), and a module split between the core and this crate re-exports its core
//! half (`seal::judge::parse`, `seal::lease::standing`, …), so that the tests, benches and the
//! test kit compile unchanged while the layers move. The re-exports go once every layer has its
//! crate.
//!
//! One decision worth knowing: every JSON document is stored as RFC 8785 canonical bytes and
//! named by its sha256, so "the same document" is a byte comparison, and a 100-line script in
//! another language can re-prove a sealed run (see docs/VERIFYING.md).

#![forbid(unsafe_code)]

// The pure core, under its old paths.
pub use seal_core::{
    adapt, admit, assertions, blinding, canonical, consensus, contracts, decided, derive, doc,
    fault, fsio, html, ids, independence, invariants, json, key, limits, merge, net, prompts, refs,
    sealing, tlog, vocab,
};

pub mod audit;
pub mod bulk;
pub mod cli;
pub mod cli_log;
pub mod cli_witness;
pub mod config;
pub mod engine;
pub mod explain;
pub mod import;
pub mod intake;
pub mod judge;
pub mod judge_run;
pub mod lease;
pub mod metrics;
pub mod postguard;
pub mod receipt;
pub mod replay;
pub mod report;
pub mod resume;
pub mod roll;
pub mod run_state;
pub mod server;
pub mod stats;
pub mod transparency;
pub mod verify;
pub mod witness;

/// The evidence store ([`seal_store`]).
pub mod store {
    pub use seal_store::*;
}

/// Run folders: reading (and writing) them is pure ([`seal_core::runfolder`]); `seal judge`'s
/// use of one is [`crate::judge_run`].
pub mod runfolder {
    pub use crate::judge_run::{judge, JudgeRunError};
    pub use seal_core::runfolder::*;
}

/// Document validation ([`seal_core::validate`]), and reading a file to validate (the CLI's).
pub mod validate {
    pub use crate::cli::validate_file;
    pub use seal_core::validate::*;
}
