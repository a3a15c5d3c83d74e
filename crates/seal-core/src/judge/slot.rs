//! A slot's stored attempts and what they amount to (pure): the accepted attempt, the final
//! one, the cost, and the slot's `parsed.json` and `normalized.json` documents. The dispatcher
//! builds these right after the calls; the audit and replay rebuild them from the store with
//! the same functions, so a recomputed document is byte-identical or the store was changed.

use serde_json::Value;

use super::normalize::{self, SlotAnswer};
use super::parse::{ErrorClass, ParseFailure};
use crate::canonical::Hash;
use crate::doc::*;
use crate::ids::Slot;
use crate::key::Stored;

/// Most attempts a slot makes in a roll: `max_retries` is at most 2.
pub const MAX_ATTEMPTS: u32 = 3;

/// One stored attempt and how it ended.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub attempt: u32,
    pub request: Option<Stored>,
    pub raw: Stored,
    pub meta: SlotMeta,
    /// The sha256 of `meta.json` as stored.
    pub meta_hash: Hash,
    pub outcome: Result<JudgeOutput, ParseFailure>,
}

/// All attempts of one slot in one roll.
#[derive(Debug, Clone)]
pub struct SlotRun {
    pub slot: Slot,
    pub attempts: Vec<AttemptRecord>,
}

impl SlotRun {
    pub fn accepted(&self) -> Option<&AttemptRecord> {
        self.attempts.iter().find(|a| a.outcome.is_ok())
    }
    /// The attempt the slot's refs point at: the accepted one, else the last one.
    pub fn final_attempt(&self) -> Option<&AttemptRecord> {
        self.accepted().or_else(|| self.attempts.last())
    }
    /// Why these attempts are not a sequence seal makes, if they are not (pure). seal numbers
    /// attempts 1, 2, … (at most [`MAX_ATTEMPTS`]) and asks again only after a retryable
    /// failure: an attempt after an accepted answer or after a failure no retry can fix (a 4xx,
    /// a blocked roll) was never asked for by seal.
    pub fn retry_rule_violation(&self) -> Option<String> {
        if self.attempts.len() > MAX_ATTEMPTS as usize {
            return Some(format!(
                "{} attempts, at most {MAX_ATTEMPTS} are ever made",
                self.attempts.len()
            ));
        }
        for (i, a) in self.attempts.iter().enumerate() {
            if a.attempt as usize != i + 1 {
                return Some(format!(
                    "attempt {} listed in position {}",
                    a.attempt,
                    i + 1
                ));
            }
            let Some(next) = self.attempts.get(i + 1) else {
                break;
            };
            match &a.outcome {
                Ok(_) => {
                    return Some(format!(
                        "attempt {} follows attempt {}, which was accepted",
                        next.attempt, a.attempt
                    ))
                }
                Err(f) if !f.class.is_retryable() => {
                    return Some(format!(
                        "attempt {} follows attempt {}, which failed with {} (not retryable)",
                        next.attempt, a.attempt, f.class
                    ))
                }
                Err(_) => {}
            }
        }
        None
    }
    pub fn cost_micro(&self) -> u64 {
        self.attempts
            .iter()
            .map(|a| rmb_to_micro(a.meta.cost_rmb))
            .sum()
    }
}

/// The parsed document and normalized result of a slot (pure; replay and verify use it on
/// stored attempts). The prompt hash and session are the recorded ones of the final attempt.
pub fn slot_documents(
    slot: Slot,
    run: &SlotRun,
    package: &JudgePackage,
    package_hash: &Hash,
) -> (Value, JudgeResult) {
    let final_meta = run.final_attempt().map(|a| &a.meta);
    let prompt_hash = &final_meta
        .map(|m| m.prompt_artifact.hash.clone())
        .unwrap_or_else(|| Hash::of(b""));
    let session_id = final_meta.map(|m| m.session_id.as_str()).unwrap_or("");
    let hashes = attempt_hashes(run);
    if let Some(a) = run.accepted() {
        return accepted_documents(slot, a, package, package_hash, prompt_hash, hashes);
    }
    let failure = slot_failure(slot, run, session_id);
    let attempts_made = run.attempts.iter().filter(|a| a.request.is_some()).count() as u32;
    let model = run
        .attempts
        .last()
        .and_then(|a| a.meta.model_answered.clone());
    let result = normalize::normalize(
        slot,
        package,
        package_hash,
        prompt_hash,
        SlotAnswer::Failed {
            error_class: failure.error_class,
            attempts: attempts_made,
            model,
        },
        hashes,
    );
    (
        serde_json::to_value(&failure).unwrap_or(Value::Null),
        result,
    )
}

/// The hashes of every attempt's files, as JudgeResult/1 lists them.
fn attempt_hashes(run: &SlotRun) -> Vec<AttemptHashes> {
    run.attempts
        .iter()
        .map(|a| AttemptHashes {
            attempt: a.attempt,
            request_hash: a.request.as_ref().map(|r| r.hash.clone()),
            raw_hash: a.raw.hash.clone(),
            meta_hash: a.meta_hash.clone(),
            accepted: a.outcome.is_ok(),
        })
        .collect()
}

/// The documents of a slot with an accepted attempt: its JudgeOutput and the normalized
/// answer.
fn accepted_documents(
    slot: Slot,
    a: &AttemptRecord,
    package: &JudgePackage,
    package_hash: &Hash,
    prompt_hash: &Hash,
    hashes: Vec<AttemptHashes>,
) -> (Value, JudgeResult) {
    let output = a.outcome.as_ref().ok().cloned().unwrap_or(JudgeOutput {
        obligations: Vec::new(),
    });
    let model = a.meta.model_answered.clone();
    let result = normalize::normalize(
        slot,
        package,
        package_hash,
        prompt_hash,
        SlotAnswer::Answered {
            output: &output,
            model,
        },
        hashes,
    );
    (serde_json::to_value(&output).unwrap_or(Value::Null), result)
}

/// The `parsed.json` of a slot with no accepted attempt: why its last attempt failed, or
/// that it made none.
fn slot_failure(slot: Slot, run: &SlotRun, session_id: &str) -> AttemptFailure {
    let last = run.attempts.last();
    let (class, detail, attempt) = match last.map(|a| &a.outcome) {
        Some(Err(f)) => (
            f.class,
            f.detail.clone(),
            last.map(|a| a.attempt).unwrap_or(0),
        ),
        _ => (
            ErrorClass::NoAttempt,
            "the slot made no attempt".to_string(),
            0,
        ),
    };
    AttemptFailure {
        schema_version: ATTEMPT_FAILURE.into(),
        slot,
        session_id: session_id.to_string(),
        attempt,
        stage: FailureStage::Parse,
        error_class: class,
        detail,
        started_at: None,
        ended_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(attempt: u32, outcome: Result<JudgeOutput, ParseFailure>) -> AttemptRecord {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../sealed-fixtures/store/runs/run-narrative-0010-pass/roll-1/judge-a/attempt-1/meta.json"
        );
        let bytes = std::fs::read(path).expect("fixture meta");
        let meta: SlotMeta = serde_json::from_slice(&bytes).expect("fixture meta parses");
        let key = crate::key::Key::parse("runs/r/roll-1/judge-a/attempt-1/raw.json").unwrap();
        AttemptRecord {
            attempt,
            request: None,
            raw: Stored::of(key, b"{}"),
            meta_hash: Hash::of(&bytes),
            meta,
            outcome,
        }
    }

    fn run(attempts: Vec<AttemptRecord>) -> SlotRun {
        SlotRun {
            slot: Slot::A,
            attempts,
        }
    }

    fn failed(class: ErrorClass) -> Result<JudgeOutput, ParseFailure> {
        Err(ParseFailure::new(class, "x"))
    }

    fn ok() -> Result<JudgeOutput, ParseFailure> {
        Ok(JudgeOutput {
            obligations: vec![],
        })
    }

    #[test]
    fn retries_follow_only_retryable_failures() {
        let good = run(vec![
            record(1, failed(ErrorClass::Http5xx)),
            record(2, failed(ErrorClass::Timeout)),
            record(3, ok()),
        ]);
        assert_eq!(good.retry_rule_violation(), None);
        assert_eq!(
            run(vec![record(1, failed(ErrorClass::Http4xx))]).retry_rule_violation(),
            None
        );
    }

    #[test]
    fn no_attempt_follows_a_non_retryable_failure() {
        let planted = run(vec![
            record(1, failed(ErrorClass::Http4xx)),
            record(2, ok()),
        ]);
        let why = planted.retry_rule_violation().expect("a violation");
        assert!(why.contains("not retryable"), "{why}");
    }

    #[test]
    fn no_attempt_follows_an_accepted_answer() {
        let planted = run(vec![record(1, ok()), record(2, ok())]);
        let why = planted.retry_rule_violation().expect("a violation");
        assert!(why.contains("accepted"), "{why}");
    }

    #[test]
    fn attempts_are_numbered_from_one_without_gaps_and_at_most_three() {
        let gap = run(vec![
            record(1, failed(ErrorClass::Timeout)),
            record(3, ok()),
        ]);
        assert!(gap.retry_rule_violation().is_some());
        let four = run((1..=4)
            .map(|k| record(k, failed(ErrorClass::Timeout)))
            .collect());
        assert!(four.retry_rule_violation().is_some());
    }
}
