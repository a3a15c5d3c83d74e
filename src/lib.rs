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
//! judge `parse` and `normalize`) does no I/O and reads no clock: same inputs, same bytes.
//! The store, HTTP and signing sit at the edges.
//!
//! One decision worth knowing: every JSON document is stored as RFC 8785 canonical bytes and
//! named by its sha256, so "the same document" is a byte comparison, and a 100-line script in
//! another language can re-prove a sealed run (see docs/VERIFYING.md).

#![forbid(unsafe_code)]

pub mod adapt;
pub mod assertions;
pub mod audit;
pub mod blinding;
pub mod bulk;
pub mod canonical;
pub mod cli;
pub mod cli_log;
pub mod cli_witness;
pub mod config;
pub mod consensus;
pub mod contracts;
pub mod derive;
pub mod doc;
pub mod engine;
pub mod explain;
pub mod fault;
pub mod fsio;
pub mod ids;
pub mod import;
pub mod independence;
pub mod intake;
pub mod invariants;
pub mod json;
pub mod judge;
pub mod key;
pub mod lease;
pub mod limits;
pub mod merge;
pub mod metrics;
pub mod postguard;
pub mod prompts;
pub mod receipt;
pub mod refs;
pub mod replay;
pub mod report;
pub mod resume;
pub mod roll;
pub mod run_state;
pub mod runfolder;
pub mod sealing;
pub mod server;
pub mod stats;
pub mod store;
pub mod tlog;
pub mod transparency;
pub mod validate;
pub mod verify;
pub mod vocab;
pub mod witness;
