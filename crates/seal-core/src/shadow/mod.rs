//! The pure half of `seal shadow-report` (docs/DESIGN.md §7): does v3's dual-judge outcome
//! agree with the legacy agent-loop Verdict on the same designs, and where does it differ?
//!
//! - [`ledger`]: the agent-loop JSONL folded to the latest Verdict per design.
//! - [`report`]: pairing with the verified `v3_shadow` runs the engine's loader found, the
//!   3 × 4 confusion, accept-vs-not agreement and κ (the bootstrap of `seal stats`), and every
//!   disagreement: `seal.shadow-report/1`.
//! - [`invariants`]: the cross-field rules of that document, which `seal validate` runs.
//! - [`text`]: the terminal table; [`html`]: the page.

pub mod html;
pub mod ledger;
pub mod report;
pub mod text;

pub use ledger::{Ledger, LedgerSummary, LedgerVerdict};
pub use report::{build, RunSet, ShadowReport, ShadowRun, SHADOW_REPORT_SCHEMA};

pub use crate::invariants::shadow::invariants;
