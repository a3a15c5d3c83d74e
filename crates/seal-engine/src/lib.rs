//! seal-engine: seal's use cases, on the pure core ([`seal_core`]), the store ([`seal_store`])
//! and the transparency log ([`seal_log`]): judging rolls, deciding and sealing runs, and
//! proving them again.
//!
//! # Use cases
//!
//! ```text
//! set-up     config, engine                   the checked configuration; one Engine per process
//!                                             (store, judges, key, clock, log, notary)
//! intake     intake, receipt                  documents checked, stored create-only, receipted
//! judging    roll::{submit, guard, package, cost, dispatch, record}
//!                                             a roll: submitted once, guard, ONE blinded package,
//!                                             budget, A ∥ B, records
//!            judge::{walk, attempt, client}   the OpenAI-compatible HTTP client: a slot's attempts,
//!            lease, resume                    one attempt, the clients; one caller per attempt
//!                                             across replicas; only attempts we wrote resume
//!            run_state                        OPEN / FINALIZING / DECIDED, as typed states
//! deciding   postguard                        the ONLY writer of a DECIDED document and its seal
//!            (seal_log)                       the log appended before the seal is stored; cosigners
//! proving    audit, verify                    re-hash, re-verify, re-derive everything
//!            explain, stats, summary, shadow  proven runs, read for people
//!            labels                           per-obligation labels (judges, consensus, check, human)
//!            review                           people's signed reviews of sealed runs: admitted,
//!                                             logged, then stored; checked by `seal verify`
//! operating  replay, import, judge_run        historical replays, archives, `seal judge` on a folder
//! counters   metrics                          what `/metrics` shows
//! ```
//!
//! The engine knows no HTTP framework and no command line: the server and the CLI translate
//! requests and arguments into these calls (docs/DECISIONS.md, "One engine under the server and
//! the CLI").

#![forbid(unsafe_code)]

pub mod audit;
pub mod config;
pub mod engine;
pub mod explain_load;
pub mod import;
pub mod intake;
pub mod judge_http;
pub mod judge_run;
pub mod labels;
pub mod leasing;
pub mod metrics;
pub mod notary;
pub mod policy;
pub mod postguard;
pub mod replay;
pub mod reports;
pub mod resume;
pub mod reviewing;
pub mod roll;
pub mod run_state;
pub mod shadow_load;
pub mod stats_load;
pub mod summary;
pub mod verify;
