//! The two documents only the postguard writes, as types only the postguard makes.
//!
//! [`Decided`] is a DECIDED playtest/3 document with its canonical bytes; [`Seal`] is the
//! canonical DSSE envelope over it. Their constructors are private: a `Decided` comes only from
//! [`decide`] (the pure JUDGING → DECIDED transition) and a `Seal` only from [`seal`], and the
//! store's writers for the two reserved keys (`Store::put_decided`, `Store::put_seal`) take
//! nothing else. The engine's postguard is the only caller of the two (tests/it/architecture.rs
//! holds that, across the crate boundary). The module sits below the store, so the store names
//! these types without importing the postguard.

use bytes::Bytes;

use crate::canonical::{self, CanonicalError, Hash};
use crate::contracts::Kind;
use crate::derive;
use crate::doc::{Check, Decision, Evidence, FinalPostguard, Phase};
use crate::ids::RunId;
use crate::validate::{validate_as, Report};
use crate::vocab::AuditCheck;

/// Version of the postguard's rules, recorded in every decision ([`derive::Rules`]).
pub const VERSION: &str = derive::Rules::CURRENT.as_str();

/// Why a JUDGING snapshot could not be decided: a bug (the decided document would not pass the
/// gates auditors apply), never a property of the run.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Undecidable {
    pub reason: String,
}

impl Undecidable {
    fn new(reason: impl std::fmt::Display) -> Undecidable {
        Undecidable {
            reason: reason.to_string(),
        }
    }
}

/// The members [`decide`] adds to a JUDGING snapshot; with the phase, all it changes.
pub const DECIDED_MEMBERS: [&str; 4] = ["outcome", "finalPostguard", "decision", "compatibility"];

/// The JUDGING snapshot a DECIDED evidence was decided from, as a document: the evidence
/// without [`DECIDED_MEMBERS`], its phase `JUDGING`. The typed twin of [`snapshot_bytes`]
/// (`tests/it/stored_bytes.rs` holds the two to the same bytes on every sealed run).
pub fn undecided(decided: &Evidence) -> Evidence {
    Evidence {
        outcome: None,
        final_postguard: None,
        decision: None,
        compatibility: None,
        phase: Phase::Judging,
        ..decided.clone()
    }
}

/// The canonical bytes of the JUDGING snapshot a DECIDED evidence was decided from, if it
/// was, cut from the evidence's own canonical bytes: its members without
/// [`DECIDED_MEMBERS`], its phase `JUDGING`. What an auditor hashes to check
/// `judgingSnapshotHash` without parsing the stored snapshot; `None` without a phase.
pub fn snapshot_bytes(decided: &canonical::CanonicalObject<'_>) -> Option<Vec<u8>> {
    decided.members.iter().find(|(k, _)| *k == "phase")?;
    let mut out = Vec::with_capacity(decided.bytes.len());
    out.push(b'{');
    let kept = decided
        .members
        .iter()
        .filter(|(k, _)| !DECIDED_MEMBERS.contains(k));
    for (i, (k, range)) in kept.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if *k == "phase" {
            out.extend_from_slice(br#""phase":"JUDGING""#);
        } else {
            out.extend_from_slice(&decided.bytes[range.clone()]);
        }
    }
    out.push(b'}');
    Some(out)
}

/// A DECIDED evidence document, canonical, ready to be written once.
#[derive(Debug, Clone)]
pub struct Decided {
    run: RunId,
    evidence: Evidence,
    bytes: Bytes,
    hash: Hash,
}

impl Decided {
    /// Wraps the postguard's decided document. Refuses anything not in phase DECIDED.
    /// `value` is `evidence` as a JSON value (the postguard has it already, from validating
    /// the document): its canonical bytes are those of `evidence`, without a second copy.
    fn new(
        run: RunId,
        evidence: Evidence,
        value: &serde_json::Value,
    ) -> Result<Decided, CanonicalError> {
        debug_assert!(evidence.phase == Phase::Decided);
        let bytes = canonical::canonical_value_bytes(value)?;
        let hash = Hash::of(&bytes);
        Ok(Decided {
            run,
            evidence,
            bytes: Bytes::from(bytes),
            hash,
        })
    }
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    pub fn hash(&self) -> &Hash {
        &self.hash
    }
}

/// The canonical bytes of a run's seal envelope, ready to be written once.
#[derive(Debug, Clone)]
pub struct Seal {
    run: RunId,
    bytes: Bytes,
}

impl Seal {
    fn new(run: RunId, canonical_envelope: Vec<u8>) -> Seal {
        Seal {
            run,
            bytes: Bytes::from(canonical_envelope),
        }
    }
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// The seal of `run`: the canonical bytes of its DSSE envelope, as the store's seal writer
/// takes them. Only the engine's postguard calls it, once it has signed a decided run.
pub fn seal(run: RunId, canonical_envelope: Vec<u8>) -> Seal {
    Seal::new(run, canonical_envelope)
}

/// The postguard's transition JUDGING → DECIDED: outcome, reasons, compatibility and the
/// postguard record from the one derivation, then the gates auditors will apply to it. Only
/// the engine's postguard calls it, after its checks (tests/it/architecture.rs).
pub fn decide(
    run: &RunId,
    mut snap: Evidence,
    checks: Vec<Check<AuditCheck>>,
    snapshot_hash: Hash,
    decided_at: String,
) -> Result<Decided, Undecidable> {
    let failed: Vec<AuditCheck> = checks.iter().filter(|c| !c.ok).map(|c| c.id).collect();
    let passed = failed.is_empty();
    let (outcome, reasons) = derive::outcome_and_reasons(&snap, &failed, derive::Rules::CURRENT);
    snap.compatibility = Some(derive::compatibility(
        outcome,
        passed,
        snap.acceptance_mode,
        snap.source_roll_id,
    ));
    snap.decision = Some(Decision {
        action: derive::decision_action(outcome, snap.repair.round),
        reasons,
    });
    snap.final_postguard = Some(FinalPostguard {
        stage: "finalPostguard".into(),
        version: VERSION.into(),
        passed,
        checks,
        judging_snapshot_hash: snapshot_hash,
        decided_at,
    });
    snap.outcome = Some(outcome);
    snap.phase = Phase::Decided;
    // Our own decided document must pass the gates auditors will apply.
    let value = serde_json::to_value(&snap).map_err(Undecidable::new)?;
    if let Report::Invalid(_, findings) = validate_as(Kind::PlaytestV3, &value) {
        let text: Vec<String> = findings.iter().map(|f| f.to_string()).collect();
        return Err(Undecidable::new(format!(
            "decided evidence fails validation (a bug): {}",
            text.join("; ")
        )));
    }
    Decided::new(run.clone(), snap, &value).map_err(Undecidable::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The snapshot cut from the canonical bytes is the canonical bytes of the document with
    /// the decided members removed and the phase set to JUDGING, whatever members it has.
    #[test]
    fn snapshot_bytes_are_the_edited_documents_canonical_bytes() {
        let decided = json!({
            "phase": "DECIDED", "outcome": "pass", "decision": {"action": "accept"},
            "finalPostguard": {"passed": true}, "compatibility": {"x": 1},
            "runId": "r", "costRmb": 0.25, "_ext": [1, 2], "\u{10000}": 1, "\u{E000}": 2, "a": null
        });
        let c = canonical::canonical_object(&decided).unwrap().unwrap();
        let mut edited = decided.clone();
        let map = edited.as_object_mut().unwrap();
        for m in DECIDED_MEMBERS {
            map.remove(m);
        }
        map.insert("phase".into(), Value::from("JUDGING"));
        assert_eq!(
            snapshot_bytes(&c).unwrap(),
            canonical::canonical_value_bytes(&edited).unwrap()
        );
        // Without any decided member (a JUDGING document) only the phase changes.
        let judging = json!({"phase": "JUDGING", "b": 1});
        let c = canonical::canonical_object(&judging).unwrap().unwrap();
        assert_eq!(snapshot_bytes(&c).unwrap(), c.bytes);
        let no_phase = json!({"b": 1});
        let c = canonical::canonical_object(&no_phase).unwrap().unwrap();
        assert!(snapshot_bytes(&c).is_none());
    }
}
