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
//! seal-log     the transparency log of seals: tiles, checkpoints, proofs, witnesses
//!    ↑
//! seal-engine  the use cases: intake, rolls and judges, the postguard, verify, replay
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
//!                   ─▶ seal_log, tlog          the seal's entry logged (RFC 6962, C2SP checkpoint), then the seal stored
//!                   ─▶ seal_log::publish       each checkpoint sent to witnesses, cosignatures stored
//! auditor           ─▶ verify                  re-hash, re-verify, recompute everything
//!                   ─▶ seal_log::view          nothing deleted, replaced or rolled back
//!                   ─▶ seal_log::cosign::check N of M witnesses cosigned the checkpoint relied on
//! witness operator  ─▶ seal_log::cosign       `seal witness serve`: cosigns only append-only growth
//! operator          ─▶ replay                  historical_replay from stored or live judges
//!                   ─▶ seal_log::rebuild       the explicit, logged way past a log that lost a seal
//! ```
//!
//! One decision worth knowing: every JSON document is stored as RFC 8785 canonical bytes and
//! named by its sha256, so "the same document" is a byte comparison, and a 100-line script in
//! another language can re-prove a sealed run (see docs/VERIFYING.md).
//!
//! # Paths
//!
//! Each item has one path, in the crate that holds it (`seal_core::canonical`,
//! `seal_store::Store`, `seal_log::Log`, `seal_engine::roll`, …); this package adds only [`cli`].

#![forbid(unsafe_code)]

pub mod cli;
