//! `seal export labels`: one JSON line per (run, roll, obligation) of the runs that verify, the
//! per-obligation labels an eval set or a prompt change is measured against: judge A, judge B,
//! the consensus, the PlaySpec check and the latest trusted human review (`crate::reviewing`).
//!
//! Replays (`historical_replay`) are left out unless asked for ([`Replays`]); every line names
//! its run's `acceptanceMode` and `parentRunId`.
//!
//! Only runs that verify **with their reviews** ([`crate::verify::Verifier`] with the trusted
//! reviewer keys) give lines, and `human` is the latest of their trusted reviews
//! ([`crate::verify::Verifier::trusted_reviews`]); the others are returned apart, named. The
//! lines are in a fixed order (run id, then the evidence's roll order, then the roll's
//! obligation order), each canonical JSON (docs/DECISIONS.md, "Labels come only from runs that
//! verify with their reviews").

use serde::Serialize;

use crate::stats_load::{Query, StatsError};
use crate::verify;
use seal_core::canonical;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_store::{Key, Store, StoreError};

/// `schemaVersion` of a label line.
pub const SCHEMA_VERSION: &str = "seal.label/1";

/// One line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Label {
    pub schema_version: &'static str,
    pub run_id: String,
    pub roll_id: String,
    pub obligation_id: String,
    pub genre: String,
    pub judge_a: seal_core::doc::JudgeStatus,
    pub judge_b: seal_core::doc::JudgeStatus,
    pub consensus: seal_core::doc::ObligationStatus,
    /// The PlaySpec check of the obligation (null when it has none).
    pub check: Option<bool>,
    /// The latest trusted review's decision (null when no review decides it).
    pub human: Option<seal_core::review::Status>,
    pub outcome: String,
    pub prompt_versions: PromptVersions,
    pub evidence_sha256: String,
    /// The run's `acceptanceMode`: `historical_replay` marks a re-judgment of `parentRunId`.
    pub acceptance_mode: &'static str,
    pub parent_run_id: Option<String>,
}

/// The prompt (`<id>@<version>`) each judge slot of the roll answered under.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptVersions {
    pub a: String,
    pub b: String,
}

/// The export: canonical JSON lines, and the runs left out because they do not verify.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    pub lines: Vec<Vec<u8>>,
    pub runs: usize,
    /// `historical_replay` runs left out (an export without replays).
    pub replays_left_out: usize,
    /// `(run id, first problem)` of every decided run that does not verify.
    pub not_verified: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum LabelsError {
    #[error(transparent)]
    Query(#[from] StatsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("label of run {run}: {detail}")]
    Invalid { run: String, detail: String },
}

impl HasFault for LabelsError {
    fn fault(&self) -> Fault {
        match self {
            LabelsError::Query(e) => e.fault(),
            LabelsError::Store(e) => e.fault(),
            LabelsError::Invalid { .. } => Fault::Corruption,
        }
    }
}

/// Every decided run of the store, in run-id order: verified by `seal verify`'s verdict
/// (`verifier`: its log, its witness policy, its reviews under `trust.reviewers`), then its
/// lines.
/// Which runs give lines: original runs only (the default: a replay re-judges a run whose own
/// labels are there already, and would count its obligations again), or replays too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replays {
    LeftOut,
    Included,
}

pub async fn labels(
    store: &Store,
    verifier: &verify::Verifier,
    query: &Query,
    replays: Replays,
) -> Result<Labels, LabelsError> {
    let mut runs = store.runs().await?.runs;
    runs.sort();
    let mut out = Labels::default();
    for run in runs {
        if !store.exists(&Key::evidence(&run)).await? {
            continue; // not decided
        }
        let proof = match verifier.prove(store, &run).await? {
            Ok(p) => p,
            Err(report) => {
                out.not_verified.push((run.to_string(), report.summary(1)));
                continue;
            }
        };
        let Some(facts) =
            crate::stats_load::proven_facts(store, &run, &proof, verifier, query).await?
        else {
            continue; // outside the window
        };
        let ev = proof.evidence();
        let mode = ev.acceptance_mode;
        if mode == seal_core::doc::AcceptanceMode::HistoricalReplay && replays == Replays::LeftOut {
            out.replays_left_out += 1;
            continue;
        }
        out.runs += 1;
        let human = &facts.human;
        for roll in &facts.rolls {
            for o in &roll.obligations {
                let label = Label {
                    schema_version: SCHEMA_VERSION,
                    run_id: facts.run_id.clone(),
                    roll_id: roll.roll_id.clone(),
                    obligation_id: o.id.clone(),
                    genre: facts.genre.clone(),
                    judge_a: o.a_status,
                    judge_b: o.b_status,
                    consensus: o.consensus,
                    check: o.check,
                    human: human.get(&o.id).copied(),
                    outcome: facts.outcome.clone(),
                    prompt_versions: PromptVersions {
                        a: roll.slots[0].prompt.clone(),
                        b: roll.slots[1].prompt.clone(),
                    },
                    evidence_sha256: proof.evidence_hash().to_string(),
                    acceptance_mode: mode.as_str(),
                    parent_run_id: ev.parent_run_id.clone(),
                };
                out.lines.push(line(&run, &label)?);
            }
        }
    }
    Ok(out)
}

/// A line: schema-checked canonical JSON.
fn line(run: &RunId, label: &Label) -> Result<Vec<u8>, LabelsError> {
    let invalid = |detail: String| LabelsError::Invalid {
        run: run.to_string(),
        detail,
    };
    let value = serde_json::to_value(label).map_err(|e| invalid(e.to_string()))?;
    if let seal_core::validate::Report::Invalid(_, findings) =
        seal_core::validate::validate_as(seal_core::contracts::Kind::Label, &value)
    {
        let shown: Vec<String> = findings.iter().take(3).map(|f| f.to_string()).collect();
        return Err(invalid(shown.join("; ")));
    }
    canonical::canonical_bytes(&value).map_err(|e| invalid(e.to_string()))
}
