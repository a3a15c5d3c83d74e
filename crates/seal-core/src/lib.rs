//! seal-core: the words and the rules of seal, with no I/O, no clock, no randomness and no
//! network (clippy's `disallowed-methods`/`disallowed-types` in this crate's `clippy.toml` hold
//! that; files are read and written by `seal-fs`, keys made from an RNG the caller passes). Same
//! inputs, same bytes: everything the daemon decides is decided here, and an auditor's
//! re-derivation runs the very same functions.
//!
//! # Words → rules
//!
//! ```text
//! words      ids, key, vocab, fault           names of runs, rolls, slots, stored objects; faults
//!            canonical, json                   RFC 8785 bytes and sha256; the strict parser
//!            contracts, doc                    the JSON Schemas and the typed documents
//! checks     validate, invariants, limits      schema + cross-field rules; streaming size counts
//!            submission                        what a submitter may claim (provenance, play-spec)
//!            bound                             a stored document's identity fields equal its key's
//! judging    blinding                          ONE blinded JudgePackage/1 per roll
//!            judge::{request, parse, normalize, slot, redact, seeds, mac}
//!                                              what is sent to a judge and what is made of its answer
//!            independence, consensus, assertions, refs   JudgeConsensus/1 dual-strict/1
//!            merge, derive                     rolls, first-decisive/1, the JUDGING snapshot
//!            decided                           the JUDGING → DECIDED transition, Decided and Seal
//! sealing    sealing, tlog                     DSSE/in-toto seal, ed25519; the RFC 6962 log, checkpoints
//!            review                            a person's signed review of a sealed run (own key)
//!            receipt, lease, witness           receipt MACs, lease standing, C2SP witness formats
//! reading    explain, stats, html              the decision tree and stats pages (pure renderers)
//!            shadow                            legacy Verdicts against v3_shadow runs (`seal shadow-report`)
//! legacy     adapt                             legacy Verdicts to run folders and back (pure)
//! ```
//!
//! Documents (`doc`, the stored and printed reports) keep `pub` fields: they are data, and
//! their serde form is their contract (tests/it/stored_bytes.rs pins it). What reads the store,
//! calls a judge or serves HTTP lives in the crates above this one.

#![forbid(unsafe_code)]
// Unit tests read the vendored fixtures from disk; the library itself is checked without this
// (clippy builds it as its own target), so the allow cannot hide I/O in the core.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod adapt;
pub mod assertions;
pub mod blinding;
pub mod bound;
pub mod canonical;
pub mod consensus;
pub mod contracts;
pub mod decided;
pub mod derive;
pub mod doc;
pub mod explain;
pub mod fault;
pub mod html;
pub mod ids;
pub mod independence;
pub mod invariants;
pub mod json;
pub mod judge;
pub mod key;
pub mod lease;
pub mod limits;
pub mod merge;
pub mod net;
pub mod policy;
pub mod prompts;
pub mod receipt;
pub mod refs;
pub mod review;
pub mod sealing;
pub mod shadow;
pub mod stats;
pub mod submission;
pub mod tlog;
pub mod validate;
pub mod vocab;
pub mod witness;
