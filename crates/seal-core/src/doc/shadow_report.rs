//! `seal.shadow-report/1`, the document `seal shadow-report` writes (docs/DESIGN.md §7): the
//! types only, so that `invariants` can check a report without importing the code that builds
//! one (which reads legacy ledgers through `adapt` and `validate`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const SHADOW_REPORT_SCHEMA: &str = "seal.shadow-report/1";
/// The legacy decisions, in matrix row order.
pub const LEGACY_DECISIONS: [&str; 3] = ["accept", "fix", "kill"];
/// The v3 outcomes, in matrix column order.
pub const V3_OUTCOMES: [&str; 4] = ["pass", "fail", "inconclusive", "infra_error"];
/// Decimals of every rate and κ.
pub const DECIMALS: i32 = 6;
/// `seal.shadow-report/1` (schema `contracts/schemas/shadow-report.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShadowReport {
    pub schema_version: String,
    pub ledger_sha256: String,
    pub seed: String,
    pub bootstrap_resamples: u64,
    pub legacy_decisions: Vec<String>,
    pub v3_outcomes: Vec<String>,
    pub ledger: LedgerSection,
    pub runs: RunsSection,
    pub unmatched: Unmatched,
    pub all: Section,
    pub by_genre: BTreeMap<String, Section>,
    pub by_evidence_mode: BTreeMap<String, Section>,
    pub disagreements: Vec<Disagreement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LedgerSection {
    pub lines: u64,
    pub verdict_rows: u64,
    pub designs: u64,
    pub superseded: u64,
    pub skipped_by_type: BTreeMap<String, u64>,
    pub rejected: Vec<RejectedLine>,
    pub rejected_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RejectedLine {
    pub line: u64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunsSection {
    pub listed: u64,
    pub v3_shadow: u64,
    pub paired: u64,
    pub verdict_changed: u64,
    pub not_verified: Vec<NotVerifiedRun>,
    pub without_ids: Vec<String>,
    pub superseded: Vec<SupersededRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NotVerifiedRun {
    pub run_id: String,
    pub problems: u64,
    pub first_problem: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SupersededRun {
    pub run_id: String,
    pub by: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Unmatched {
    pub runs_without_verdict: Vec<RunWithoutVerdict>,
    pub verdicts_without_run: Vec<VerdictWithoutRun>,
    pub task_mismatch: Vec<TaskMismatch>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunWithoutVerdict {
    pub run_id: String,
    pub design_id: String,
    pub task_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerdictWithoutRun {
    pub design_id: String,
    pub task_id: String,
    pub line: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskMismatch {
    pub run_id: String,
    pub design_id: String,
    pub run_task_id: String,
    pub verdict_task_id: String,
}

/// The figures over a set of pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Section {
    pub pairs: u64,
    /// `confusion[legacy][v3]`, rows [`LEGACY_DECISIONS`], columns [`V3_OUTCOMES`].
    pub confusion: [[u64; 4]; 3],
    /// Legacy accept (row 0) or not, against v3 pass (column 0) or not.
    pub accept_vs_not: Agreement,
    /// The same over the pairs v3 decided (pass or fail): v3's retries left out.
    pub decided: Agreement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Agreement {
    pub n: u64,
    pub matrix: [[u64; 2]; 2],
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
    pub kappa_ci95: Option<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Disagreement {
    /// `legacy_accept_v3_not` or `v3_pass_legacy_not`.
    pub direction: String,
    pub design_id: String,
    pub task_id: String,
    pub run_id: String,
    pub genre: String,
    pub evidence_mode: String,
    pub decided_at: String,
    pub verdict_changed: bool,
    pub legacy: LegacySide,
    pub v3: V3Side,
    pub explain: ExplainLink,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LegacySide {
    pub decision: String,
    pub reasons: Vec<String>,
    pub round: u8,
    pub line: u64,
    pub findings: Vec<FindingRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FindingRow {
    pub severity: String,
    pub issue: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct V3Side {
    pub outcome: String,
    pub action: String,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExplainLink {
    /// The daemon's route of the run's explanation.
    pub path: String,
    /// The command that writes the same page from a store.
    pub command: String,
}
