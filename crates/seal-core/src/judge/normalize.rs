//! Normalization of a judge's answer into JudgeResult/1 (docs/DESIGN.md §4). Pure.
//!
//! One entry per package obligation, sorted by id; `not_observed` and skipped obligations are
//! `missing`; a satisfied/failed verdict that cites nothing is `missing` with a warning
//! (`uncited_claim`); ids the package does not have are listed, never used. A failed slot has
//! every obligation `missing` and says why in `slotFailed`.

use std::collections::BTreeSet;

use crate::canonical::Hash;
use crate::doc::*;
use crate::ids::Slot;
use crate::refs::{merge_ranges, sort_hashes};

/// Longest rationale kept (characters); the raw answer keeps the whole text.
pub const MAX_RATIONALE: usize = 4000;

/// What the slot produced: an answer, or the reason it has none.
pub enum SlotAnswer<'a> {
    Answered {
        output: &'a JudgeOutput,
        model: Option<String>,
    },
    Failed {
        error_class: crate::vocab::ErrorClass,
        attempts: u32,
        model: Option<String>,
    },
}

pub fn normalize(
    slot: Slot,
    package: &JudgePackage,
    package_hash: &Hash,
    prompt_hash: &Hash,
    answer: SlotAnswer<'_>,
    attempts: Vec<AttemptHashes>,
) -> JudgeResult {
    let attempt_hashes = attempts;
    let mut ids: Vec<&str> = package.obligations.iter().map(|o| o.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    let judged = match answer {
        SlotAnswer::Failed {
            error_class,
            attempts: made,
            model,
        } => Judged {
            model,
            obligations: ids.iter().map(|id| missing(id)).collect(),
            unknown_obligation_ids: Vec::new(),
            warnings: Vec::new(),
            slot_failed: Some(SlotFailed {
                error_class,
                attempts: made,
            }),
        },
        SlotAnswer::Answered { output, model } => judged_answer(&ids, output, model),
    };
    JudgeResult {
        schema_version: JUDGE_RESULT.into(),
        slot,
        package_hash: package_hash.clone(),
        prompt_artifact_hash: prompt_hash.clone(),
        model: judged.model,
        obligations: judged.obligations,
        unknown_obligation_ids: judged.unknown_obligation_ids,
        warnings: judged.warnings,
        slot_failed: judged.slot_failed,
        attempts: attempt_hashes,
    }
}

/// The part of a JudgeResult that depends on what the slot answered.
struct Judged {
    model: Option<String>,
    obligations: Vec<ResultObligation>,
    unknown_obligation_ids: Vec<String>,
    warnings: Vec<String>,
    slot_failed: Option<SlotFailed>,
}

fn missing(id: &str) -> ResultObligation {
    ResultObligation {
        id: id.to_string(),
        status: JudgeStatus::Missing,
        sequence_refs: Vec::new(),
        frame_hashes: Vec::new(),
        rationale: String::new(),
    }
}

/// An answer over the package's sorted obligation `ids`: one entry per id, unknown ids
/// listed, warnings sorted.
fn judged_answer(ids: &[&str], output: &JudgeOutput, model: Option<String>) -> Judged {
    let known: BTreeSet<&str> = ids.iter().copied().collect();
    let mut warnings = Vec::new();
    let unknown: BTreeSet<String> = output
        .obligations
        .iter()
        .filter(|o| !known.contains(o.id.as_str()))
        .map(|o| o.id.clone())
        .collect();
    for id in &unknown {
        warnings.push(format!("unknown_obligation:{id}"));
    }
    let obligations = ids
        .iter()
        .map(|id| judged_obligation(id, output, &mut warnings))
        .collect();
    warnings.sort();
    Judged {
        model,
        obligations,
        unknown_obligation_ids: unknown.into_iter().collect(),
        warnings,
        slot_failed: None,
    }
}

/// The judge's verdict on obligation `id`: skipped, not observed and uncited claims are
/// `missing` (the first and last with a warning).
fn judged_obligation(
    id: &str,
    output: &JudgeOutput,
    warnings: &mut Vec<String>,
) -> ResultObligation {
    let Some(o) = output.obligations.iter().find(|o| o.id == id) else {
        warnings.push(format!("skipped:{id}"));
        return missing(id);
    };
    let sequence_refs = merge_ranges(&o.sequence_refs);
    let frame_hashes = sort_hashes(&o.frame_hashes);
    let mut status = match o.verdict {
        Verdict::Satisfied => JudgeStatus::Satisfied,
        Verdict::Failed => JudgeStatus::Failed,
        Verdict::NotObserved => JudgeStatus::Missing,
    };
    if status.is_claim() && sequence_refs.is_empty() && frame_hashes.is_empty() {
        warnings.push(format!("uncited_claim:{id}"));
        status = JudgeStatus::Missing;
    }
    ResultObligation {
        id: id.to_string(),
        status,
        sequence_refs,
        frame_hashes,
        rationale: o.rationale.chars().take(MAX_RATIONALE).collect(),
    }
}
