//! The signed reliability report (`seal report reliability`): the people-calibrated figures
//! of `seal stats` as an in-toto Statement (predicate `seal.reliability/1`) whose subjects are
//! the seals and trusted reviews the figures were computed from, by digest. Signed with the
//! seal key in a DSSE envelope ([`crate::sealing::envelope`]), so anyone holding the public key
//! can check who computed what from which runs, and recompute every figure from those runs
//! with the formulas of docs/DESIGN.md §14 (docs/VERIFYING.md §10). Pure: the time is given.

use serde::Serialize;

use super::aggregate::{Query, StatsReport};
use super::drift::DriftGroup;
use super::human::HumanSection;
use super::reliability::ReliabilitySection;
use crate::sealing::{Digest, Subject, STATEMENT_TYPE};

/// The predicate type of a reliability report.
pub const PREDICATE_TYPE: &str = "https://wanxiang.ai/seal/reliability/v1";
/// The predicate's `schemaVersion`.
pub const SCHEMA_VERSION: &str = "seal.reliability/1";
/// Where the formulas are written down, as the report names it.
pub const FORMULAS: &str =
    "docs/DESIGN.md §14 (How far the judges can be trusted); docs/VERIFYING.md §10";

/// What the report states.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReliabilityPredicate {
    pub schema_version: String,
    /// When the report was made (RFC 3339, UTC): given by the caller.
    pub generated_at: String,
    pub query: Query,
    /// The bootstrap seed (sha256 of the used run ids) and resamples of every interval.
    pub seed: String,
    pub bootstrap_resamples: u64,
    /// The judge policies the runs used were judged under: each one's log leaf and sha256
    /// (the policy's bytes are a subject).
    pub policies: Vec<crate::doc::PolicyRef>,
    /// Original runs used, and of them reviewed.
    pub runs_used: u64,
    pub reviewed_runs: u64,
    /// κ of each judge and of the consensus against people.
    pub human: HumanSection,
    pub reliability: ReliabilitySection,
    pub served_models: Vec<DriftGroup>,
    pub formulas: String,
}

/// The statement a report envelope carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilityStatement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: ReliabilityPredicate,
}

/// The statement of a stats report made at `generated_at`.
pub fn statement(r: &StatsReport, generated_at: &str) -> ReliabilityStatement {
    ReliabilityStatement {
        statement_type: STATEMENT_TYPE.into(),
        subject: r
            .policies
            .iter()
            .map(|p| {
                let name = crate::key::Key::policy(&p.sha256).to_string();
                (name, p.sha256.to_string())
            })
            .chain(r.reviewed_subjects.iter().cloned())
            .map(|(name, sha256)| Subject {
                name,
                digest: Digest { sha256 },
            })
            .collect(),
        predicate_type: PREDICATE_TYPE.into(),
        predicate: ReliabilityPredicate {
            schema_version: SCHEMA_VERSION.into(),
            generated_at: generated_at.into(),
            query: r.query.clone(),
            seed: r.seed.clone(),
            bootstrap_resamples: r.bootstrap_resamples,
            policies: r.policies.clone(),
            runs_used: r.runs.used,
            reviewed_runs: r.human.reviewed_runs,
            human: r.human.clone(),
            reliability: r.reliability.clone(),
            served_models: r.served_models.clone(),
            formulas: FORMULAS.into(),
        },
    }
}
