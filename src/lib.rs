//! seal: the trusted part of the `playtest/3` stage. It decides whether a generated game passed
//! its playtest from the judgement of two independent LLM judges, and seals the evidence so that
//! anyone with the public key can re-prove the decision.
//!
//! This package is the `seal` binary and its command line ([`cli`]); the work is done by the
//! workspace's crates, one per layer (docs/DESIGN.md §10):
//!
//! ```text
//! seal-core    documents, ids, canonical and strict JSON, vocabulary, faults, every pure rule
//!    ↑
//! seal-fs      local files: operator files, run folders, key files, created without overwriting
//!    ↑
//! seal-store   the write-once, content-addressed evidence store (file, memory, S3)
//!    ↑
//! seal-engine  the use cases: intake, rolls and judges, the postguard, the log, verify, replay
//!    ↑
//! seal-server  `seal serve` (HTTP/JSON) and `seal witness serve`
//!    ↑
//! seal         the CLI: one file per command under src/cli/
//! ```
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
//!                   ─▶ transparency::publish   each checkpoint sent to witnesses, cosignatures stored
//! auditor           ─▶ verify                  re-hash, re-verify, recompute everything
//!                   ─▶ transparency::view      nothing deleted, replaced or rolled back
//!                   ─▶ witness::check          N of M witnesses cosigned the checkpoint relied on
//! witness operator  ─▶ witness                 `seal witness serve`: cosigns only append-only growth
//! operator          ─▶ replay                  historical_replay from stored or live judges
//!                   ─▶ transparency::rebuild   the explicit, logged way past a log that lost a seal
//! ```
//!
//! One decision worth knowing: every JSON document is stored as RFC 8785 canonical bytes and
//! named by its sha256, so "the same document" is a byte comparison, and a 100-line script in
//! another language can re-prove a sealed run (see docs/VERIFYING.md).
//!
//! # The old paths, during the crate split (issue 23)
//!
//! Every module below but [`cli`] is a re-export of the crate that now holds it, under the path
//! it had when this was one crate (`seal::canonical`, `seal::store`, `seal::roll`, …), so that
//! the tests, benches and the test kit compile unchanged while the layers move. The re-exports
//! go once those import the crates themselves.

#![forbid(unsafe_code)]

pub mod cli;

pub use seal_core::{
    adapt, admit, assertions, blinding, canonical, consensus, contracts, decided, derive, doc,
    fault, html, ids, independence, invariants, json, key, limits, merge, net, prompts, refs,
    sealing, tlog, vocab,
};
pub use seal_engine::{
    audit, config, engine, explain, import, intake, judge, judge_run, lease, metrics, postguard,
    receipt, replay, resume, roll, run_state, stats, summary, transparency, verify, witness,
};
pub use seal_fs::fsio;
pub use seal_server as server;

/// Reviews of sealed runs: the pure rules ([`seal_core::review`]) and the use case
/// ([`seal_engine::review`]).
pub mod review {
    pub use seal_core::review::*;
    pub use seal_engine::review::{
        check_run_reviews, facts, list, read_checked, stored_keys, submit, Listed, Stored,
        SubmitError, Trust,
    };
}
pub use seal_store as store;

/// Run folders: reading and writing them is [`seal_fs::runfolder`]; `seal judge`'s
/// use of one is [`seal_engine::judge_run`].
pub mod runfolder {
    pub use seal_engine::judge_run::{judge, JudgeRunError};
    pub use seal_fs::runfolder::*;
}

/// Document validation ([`seal_core::validate`]), and reading a file to validate (the CLI's).
pub mod shadow {
    pub use seal_core::shadow::*;
    pub use seal_engine::shadow::{load, report, Shadow, ShadowError};
}

pub mod validate {
    pub use crate::cli::validate::validate_file;
    pub use seal_core::validate::*;
}

/// The summary of a sealed run ([`seal_engine::summary`]) and its one-screen text (the CLI's).
pub mod report {
    pub use crate::cli::judge::render;
    pub use crate::cli::output::terminal_safe;
    pub use seal_engine::summary::*;
}
