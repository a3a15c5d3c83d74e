//! The audit of a run's stored objects, shared by the finalPostguard (on the JUDGING snapshot,
//! before it decides) and `seal verify` (on the sealed evidence, years later): every ref
//! re-hashed, every project document schema-checked, normalization, independence and consensus
//! recomputed from what is stored, the judge package rebuilt from its inputs (blinding), costs
//! re-added, and the top level compared with the source roll.
//!
//! Each problem names its check, the object key, and the expected and actual values.

use serde_json::Value;

use crate::blinding;
use crate::canonical::{canonical_with_hash, Hash};
use crate::consensus::{self, ConsensusInput};
use crate::contracts::Kind;
use crate::doc::*;
use crate::ids::{RollId, RunId, Slot};
use crate::independence::{self, SlotRecord};
use crate::invariants::source_roll_index;
use crate::judge::client::evaluate_raw;
use crate::judge::{AttemptRecord, SlotRun};
use crate::roll::slot_documents;
use crate::store::{Key, Store, StoreError, Stored};
use crate::validate::{validate_as, Report};

/// Check ids (also the postguard's `finalPostguard.checks[].id` and `postguard_<id>` reasons).
pub mod check {
    pub const REFS: &str = "refs_resolve";
    pub const SCHEMA: &str = "schema_valid";
    pub const NORMALIZATION: &str = "normalization_recomputes";
    pub const CONSENSUS: &str = "consensus_recomputes";
    pub const INDEPENDENCE: &str = "independence";
    pub const BLINDING: &str = "blinding";
    pub const COST: &str = "cost_within_budget";
    pub const MIRROR: &str = "source_roll_mirrored";
    pub const INVARIANTS: &str = "invariants";
    pub const ALL: [&str; 9] = [
        REFS,
        SCHEMA,
        NORMALIZATION,
        CONSENSUS,
        INDEPENDENCE,
        BLINDING,
        COST,
        MIRROR,
        INVARIANTS,
    ];
}

/// One thing wrong, with the object at fault. `expected` is what the sealed records say,
/// `actual` what is stored or recomputed now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub check: &'static str,
    pub object: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    pub detail: String,
}

impl Problem {
    pub fn new(
        check: &'static str,
        object: impl Into<String>,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            check,
            object: object.into(),
            expected: None,
            actual: None,
            detail: detail.into(),
        }
    }

    /// A problem with the sealed (`expected`) and the found or recomputed (`actual`) value.
    pub fn mismatch(
        check: &'static str,
        object: impl Into<String>,
        expected: impl ToString,
        actual: impl ToString,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            check,
            object: object.into(),
            expected: Some(expected.to_string()),
            actual: Some(actual.to_string()),
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}: {}", self.check, self.object, self.detail)?;
        if let (Some(e), Some(a)) = (&self.expected, &self.actual) {
            write!(f, " (expected {e}, actual {a})")?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Audit {
    problems: Vec<Problem>,
}

impl Audit {
    fn push(&mut self, check: &'static str, object: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(Problem::new(check, object, detail));
    }
    fn mismatch(
        &mut self,
        check: &'static str,
        object: impl Into<String>,
        expected: impl ToString,
        actual: impl ToString,
        detail: impl Into<String>,
    ) {
        self.problems
            .push(Problem::mismatch(check, object, expected, actual, detail));
    }
    fn store_error(&mut self, e: StoreError) {
        match e {
            StoreError::HashMismatch {
                key,
                expected,
                actual,
            } => self.mismatch(
                check::REFS,
                key.as_str(),
                expected,
                actual,
                "stored bytes do not hash to the recorded sha256",
            ),
            StoreError::NotFound { key } => {
                self.push(check::REFS, key.as_str(), "object is missing")
            }
            other => self.push(check::REFS, other.to_string(), "cannot read the object"),
        }
    }
    /// Reads, verifies and schema-checks a JSON document; None (with a problem) if unusable.
    async fn doc<T: serde::de::DeserializeOwned>(
        &mut self,
        store: &Store,
        reference: &str,
        hash: &Hash,
        kind: Option<Kind>,
    ) -> Option<(T, Vec<u8>)> {
        let key = match Key::parse(reference) {
            Ok(k) => k,
            Err(e) => {
                self.push(check::REFS, reference, e.to_string());
                return None;
            }
        };
        let bytes = match store.get_verified(&key, hash).await {
            Ok(b) => b,
            Err(e) => {
                self.store_error(e);
                return None;
            }
        };
        let value = match crate::json::parse(&bytes, store.doc_limit()) {
            Ok(v) => v,
            Err(e) => {
                self.push(check::SCHEMA, key.as_str(), format!("not JSON: {e}"));
                return None;
            }
        };
        if let Some(kind) = kind {
            if let Report::Invalid(_, findings) = validate_as(kind, &value) {
                let first = findings.first().map(|f| f.to_string()).unwrap_or_default();
                self.push(
                    check::SCHEMA,
                    key.as_str(),
                    format!(
                        "invalid {}: {} problems, first: {first}",
                        kind.name(),
                        findings.len()
                    ),
                );
                return None;
            }
        }
        match serde_json::from_value::<T>(value) {
            Ok(t) => Some((t, bytes.to_vec())),
            Err(e) => {
                self.push(check::SCHEMA, key.as_str(), e.to_string());
                None
            }
        }
    }
}

/// Everything audited about one roll, for callers that need the documents.
pub struct RollDocs {
    pub roll: Roll,
    pub proof: ProofPackage,
    pub consensus: JudgeConsensus,
}

/// Audits every roll of `doc` against the store. `brief` is the stored brief bytes, if any.
pub async fn audit(
    store: &Store,
    doc: &Evidence,
    brief: Option<&[u8]>,
) -> (Vec<Problem>, Vec<RollDocs>) {
    let mut a = Audit::default();
    let run = match RunId::parse(&doc.run_id) {
        Ok(r) => r,
        Err(e) => {
            a.push(check::INVARIANTS, "runId", e.to_string());
            return (a.problems, Vec::new());
        }
    };
    match brief {
        Some(b) if Hash::of(b) == doc.brief_hash => {}
        Some(b) => a.mismatch(
            check::REFS,
            Key::brief(&run).as_str(),
            &doc.brief_hash,
            Hash::of(b),
            "brief does not hash to briefHash",
        ),
        None => a.push(check::REFS, Key::brief(&run).as_str(), "brief is missing"),
    }
    let brief_text = brief
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    let mut docs = Vec::new();
    for r in &doc.rolls {
        if let Some(d) = audit_roll(&mut a, store, doc, &run, r, &brief_text).await {
            docs.push(d);
        }
    }

    // The top level mirrors the source roll, and judge is its projection (or null if void).
    let outcomes: Vec<Outcome> = doc.rolls.iter().map(|r| r.roll_outcome).collect();
    if let Some(i) = source_roll_index(&outcomes) {
        if let Some(d) = docs.iter().find(|d| d.roll.roll_id == doc.rolls[i].roll_id) {
            let p = &d.proof;
            let pairs: [(&str, bool); 5] = [
                ("actions", doc.actions == p.actions),
                ("events", doc.events == p.events),
                ("floor", doc.floor == p.floor),
                ("firstPlay", doc.first_play == p.first_play),
                (
                    "briefRuleMatches",
                    doc.brief_rule_matches == p.brief_rule_matches,
                ),
            ];
            for (field, ok) in pairs {
                if !ok {
                    a.push(
                        check::MIRROR,
                        format!("runs/{run} {field}"),
                        format!("top-level {field} differs from the source roll's proof package"),
                    );
                }
            }
            let r = &doc.rolls[i];
            let voided = !d.consensus.independence_checks.all_required_hold()
                || r.roll_guard.status == GuardStatus::Blocked;
            let want = if voided {
                None
            } else {
                Some(
                    d.consensus
                        .project(&r.judge_consensus_ref, &r.judge_consensus_hash),
                )
            };
            if doc.judge != want {
                a.push(
                    check::MIRROR,
                    format!("runs/{run} judge"),
                    if voided {
                        "the source roll is void (failed independence or guard): judge must be null"
                            .to_string()
                    } else {
                        "judge is not the source roll's consensus projection".to_string()
                    },
                );
            }
        }
    }
    (a.problems, docs)
}

async fn audit_roll(
    a: &mut Audit,
    store: &Store,
    doc: &Evidence,
    run: &RunId,
    r: &Roll,
    brief_text: &str,
) -> Option<RollDocs> {
    let roll = r.roll_id;
    let label = format!("runs/{run}/{roll}");
    // The roll record as stored must be this roll (a swapped roll folder is caught here).
    let roll_key = Key::roll_file(run, roll, "roll.json");
    match store.get_json::<Roll>(&roll_key).await {
        Ok(Some((stored, _))) if &stored == r => {}
        Ok(Some(_)) => a.push(
            check::REFS,
            roll_key.as_str(),
            "the stored roll record differs from the evidence's roll",
        ),
        Ok(None) => a.push(check::REFS, roll_key.as_str(), "the roll record is missing"),
        Err(e) => a.push(
            check::REFS,
            roll_key.as_str(),
            format!("unreadable roll record: {e}"),
        ),
    }
    let (proof, _) = a
        .doc::<ProofPackage>(
            store,
            &r.proof_package_ref,
            &r.proof_package_hash,
            Some(Kind::ProofPackage),
        )
        .await?;
    if proof.roll_id != roll {
        a.mismatch(
            check::REFS,
            &r.proof_package_ref,
            roll,
            proof.roll_id,
            "proof package belongs to another roll",
        );
    }
    for (field, want, got) in [
        (
            "requestedGameSeed",
            r.requested_game_seed,
            proof.requested_game_seed,
        ),
        ("actualGameSeed", r.actual_game_seed, proof.actual_game_seed),
        ("policySeed", r.policy_seed, proof.policy_seed),
    ] {
        if want != got {
            a.mismatch(
                check::REFS,
                format!("{label} {field}"),
                want,
                got,
                "roll does not match its proof package",
            );
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in &proof.frames {
        if seen.insert(f.hash.clone()) {
            if let Err(e) = store.verify(&Key::cas(&f.hash), &f.hash).await {
                a.store_error(e);
            }
        }
    }
    let (package, package_bytes) = a
        .doc::<JudgePackage>(
            store,
            &r.judge_package_ref,
            &r.judge_package_hash,
            Some(Kind::JudgePackage),
        )
        .await?;
    let manifest_key = Key::roll_file(run, roll, "image-manifest.json");
    let (manifest, _) = a
        .doc::<ImageManifest>(
            store,
            manifest_key.as_str(),
            &package.image_manifest_hash,
            Some(Kind::ImageManifest),
        )
        .await?;
    let rebuilt = blinding::judge_package(doc, brief_text, &proof, &package.image_manifest_hash);
    match canonical_with_hash(&rebuilt) {
        Ok((_, h)) if h == r.judge_package_hash => {}
        Ok((_, h)) => a.mismatch(
            check::BLINDING,
            &r.judge_package_ref,
            &r.judge_package_hash,
            h,
            "the judge package is not the blinded package of this header, brief and proof package",
        ),
        Err(e) => a.push(check::BLINDING, &r.judge_package_ref, e.to_string()),
    }
    let leaks = blinding::leaks(&package_bytes, doc, &proof);
    if !leaks.is_empty() {
        a.push(
            check::BLINDING,
            &r.judge_package_ref,
            format!(
                "forbidden values in the judge package: {}",
                leaks.join(", ")
            ),
        );
    }
    let want_manifest: Vec<&Hash> = {
        let mut v: Vec<&Hash> = proof.frames.iter().map(|f| &f.hash).collect();
        v.sort();
        v.dedup();
        v
    };
    if manifest.frames.iter().map(|f| &f.hash).collect::<Vec<_>>() != want_manifest {
        a.push(
            check::BLINDING,
            manifest_key.as_str(),
            "the image manifest does not list exactly the roll's frames",
        );
    }
    let (reservation, _) = a
        .doc::<CostReservation>(
            store,
            &r.cost_reservation_ref,
            &r.cost_reservation_hash,
            Some(Kind::CostReservation),
        )
        .await?;

    // Slots: raw, parsed, normalized, every attempt; normalization recomputed from raw answers.
    let mut slots = Vec::new();
    let mut judge_micro = 0u64;
    for slot in Slot::BOTH {
        let sref = r.slot_ref(slot);
        let slot_label = format!("{label}/judge-{slot}");
        let (result, _) = a
            .doc::<JudgeResult>(
                store,
                &sref.normalized_ref,
                &sref.result_hash,
                Some(Kind::JudgeResult),
            )
            .await?;
        if result.slot != slot {
            a.mismatch(
                check::REFS,
                &sref.normalized_ref,
                slot,
                result.slot,
                "normalized result of the other judge",
            );
        }
        let parsed_bytes = match store
            .get_verified(&Key::parse(&sref.parsed_ref).ok()?, &sref.parsed_hash)
            .await
        {
            Ok(b) => b,
            Err(e) => {
                a.store_error(e);
                return None;
            }
        };
        // rawRef is not read on its own: it must be one of the attempts below (each re-hashed),
        // which the final-attempt check requires.
        let mut attempts = Vec::new();
        for h in &result.attempts {
            let key = |f: &str| Key::attempt_file(run, roll, slot, h.attempt, f);
            let raw = match store.get_verified(&key("raw.json"), &h.raw_hash).await {
                Ok(b) => b,
                Err(e) => {
                    a.store_error(e);
                    continue;
                }
            };
            let (meta, _) = match a
                .doc::<SlotMeta>(
                    store,
                    key("meta.json").as_str(),
                    &h.meta_hash,
                    Some(Kind::SlotMeta),
                )
                .await
            {
                Some(m) => m,
                None => continue,
            };
            meta_checks(
                a,
                &meta,
                slot,
                h.attempt,
                &key("raw.json"),
                &h.raw_hash,
                &package,
            );
            let request = match &h.request_hash {
                Some(rh) => a
                    .doc::<Value>(store, key("request.json").as_str(), rh, None)
                    .await
                    .map(|(v, bytes)| {
                        let stored = Stored {
                            key: key("request.json"),
                            hash: rh.clone(),
                            size: bytes.len() as u64,
                        };
                        (v, stored)
                    }),
                None => None,
            };
            judge_micro += rmb_to_micro(meta.cost_rmb);
            attempts.push((
                AttemptRecord {
                    attempt: h.attempt,
                    request: request.as_ref().map(|(_, s)| s.clone()),
                    raw: Stored {
                        key: key("raw.json"),
                        hash: h.raw_hash.clone(),
                        size: raw.len() as u64,
                    },
                    outcome: evaluate_raw(&raw, meta.http_status),
                    meta,
                    meta_hash: h.meta_hash.clone(),
                },
                request.map(|(v, _)| v),
            ));
        }
        // Every attempt folder of the slot is bound by the sealed result; an extra one is not
        // evidence anybody vouched for.
        let listed: std::collections::BTreeSet<u32> =
            result.attempts.iter().map(|h| h.attempt).collect();
        if let Ok(keys) = store.list(&format!("runs/{run}/{roll}/judge-{slot}")).await {
            for key in keys {
                let attempt = key
                    .as_str()
                    .split('/')
                    .find_map(|seg| seg.strip_prefix("attempt-"))
                    .and_then(|n| n.parse::<u32>().ok());
                if let Some(n) = attempt.filter(|n| !listed.contains(n)) {
                    a.push(
                        check::REFS,
                        key.as_str(),
                        format!("attempt {n} is not listed in the sealed result: unbound object"),
                    );
                }
            }
        }
        let slot_run = SlotRun {
            slot,
            attempts: attempts.iter().map(|(rec, _)| rec.clone()).collect(),
        };
        let final_attempt = slot_run.final_attempt().cloned();
        match &final_attempt {
            Some(f) if f.raw.key.as_str() == sref.raw_ref && f.raw.hash == sref.raw_hash => {}
            _ => a.push(
                check::NORMALIZATION,
                &sref.raw_ref,
                "rawRef is not the slot's accepted (or last) attempt",
            ),
        }
        let (parsed, renormalized) =
            slot_documents(slot, &slot_run, &package, &r.judge_package_hash);
        match (
            canonical_with_hash(&parsed),
            canonical_with_hash(&renormalized),
        ) {
            (Ok((_, ph)), Ok((_, nh))) => {
                if ph != Hash::of(&parsed_bytes) {
                    a.mismatch(
                        check::NORMALIZATION,
                        &sref.parsed_ref,
                        &sref.parsed_hash,
                        ph,
                        "re-parsing the raw answers gives another parsed document",
                    );
                }
                if nh != sref.result_hash {
                    a.mismatch(
                        check::NORMALIZATION,
                        &sref.normalized_ref,
                        &sref.result_hash,
                        nh,
                        "re-normalizing the raw answers gives another JudgeResult",
                    );
                }
            }
            _ => a.push(
                check::NORMALIZATION,
                &slot_label,
                "cannot canonicalize the recomputed documents",
            ),
        }
        let final_request = final_attempt.as_ref().and_then(|f| {
            attempts
                .iter()
                .find(|(rec, _)| rec.attempt == f.attempt)
                .and_then(|(_, v)| v.clone())
        });
        slots.push((result, final_attempt.map(|f| f.meta), final_request));
    }
    let (ra, rb) = (&slots[0], &slots[1]);
    let independence = independence::checks(
        SlotRecord {
            meta: ra.1.as_ref(),
            raw_ref: &r.judge_a_ref.raw_ref,
            raw_hash: &r.judge_a_ref.raw_hash,
            request: ra.2.as_ref(),
        },
        SlotRecord {
            meta: rb.1.as_ref(),
            raw_ref: &r.judge_b_ref.raw_ref,
            raw_hash: &r.judge_b_ref.raw_hash,
            request: rb.2.as_ref(),
        },
        &r.judge_package_hash,
        &manifest,
    );
    let (stored_consensus, _) = a
        .doc::<JudgeConsensus>(
            store,
            &r.judge_consensus_ref,
            &r.judge_consensus_hash,
            Some(Kind::JudgeConsensus),
        )
        .await?;
    if stored_consensus.independence_checks != independence {
        a.push(check::INDEPENDENCE, &r.judge_consensus_ref, format!(
            "recorded independence checks differ from those recomputed from the stored metas and requests (recomputed failures: {:?})",
            independence.failed()
        ));
    }
    let recomputed = consensus::decide(&ConsensusInput {
        roll_id: roll,
        package: &package,
        package_hash: &r.judge_package_hash,
        floor_passed: proof.floor.passed,
        a: &ra.0,
        a_hash: &r.judge_a_ref.result_hash,
        b: &rb.0,
        b_hash: &r.judge_b_ref.result_hash,
        independence,
    });
    match canonical_with_hash(&recomputed) {
        Ok((_, h)) if h == r.judge_consensus_hash => {}
        Ok((_, h)) => a.mismatch(
            check::CONSENSUS,
            &r.judge_consensus_ref,
            &r.judge_consensus_hash,
            h,
            "the consensus does not recompute byte-identically",
        ),
        Err(e) => a.push(check::CONSENSUS, &r.judge_consensus_ref, e.to_string()),
    }
    let want_outcome = if r.roll_guard.status == GuardStatus::Blocked {
        Outcome::InfraError
    } else {
        recomputed.decision
    };
    if r.roll_outcome != want_outcome {
        a.mismatch(
            check::CONSENSUS,
            format!("{label} rollOutcome"),
            r.roll_outcome,
            want_outcome,
            "rollOutcome does not follow the recomputed consensus",
        );
    }
    // Cost: judges spent no more than reserved; the roll costs actor + judges.
    if judge_micro > rmb_to_micro(reservation.reserved_rmb) {
        a.mismatch(
            check::COST,
            &r.cost_reservation_ref,
            reservation.reserved_rmb,
            micro_to_rmb(judge_micro),
            "judges cost more than was reserved",
        );
    }
    let roll_micro = rmb_to_micro(proof.actor_cost_rmb) + judge_micro;
    if roll_micro != rmb_to_micro(r.cost_rmb) {
        a.mismatch(
            check::COST,
            format!("{label} costRmb"),
            r.cost_rmb,
            micro_to_rmb(roll_micro),
            "roll cost is not actor cost plus judge cost",
        );
    }
    Some(RollDocs {
        roll: r.clone(),
        proof,
        consensus: stored_consensus,
    })
}

fn meta_checks(
    a: &mut Audit,
    meta: &SlotMeta,
    slot: Slot,
    attempt: u32,
    raw_key: &Key,
    raw_hash: &Hash,
    _package: &JudgePackage,
) {
    if meta.slot != slot || meta.attempt != attempt {
        a.push(
            check::REFS,
            raw_key.dir(),
            format!(
                "meta.json is for judge-{} attempt {}",
                meta.slot, meta.attempt
            ),
        );
    }
    if &meta.raw_hash != raw_hash {
        a.mismatch(
            check::REFS,
            format!("{}/meta.json", raw_key.dir()),
            raw_hash,
            &meta.raw_hash,
            "meta names another raw answer",
        );
    }
}

/// Rolls as stored in their folders (`roll.json`), in order.
pub async fn stored_rolls(store: &Store, run: &RunId) -> Result<Vec<Roll>, StoreError> {
    let mut rolls = Vec::new();
    for roll in RollId::ALL {
        match store
            .get_json::<Roll>(&Key::roll_file(run, roll, "roll.json"))
            .await?
        {
            Some((r, _)) => rolls.push(r),
            None => break,
        }
    }
    Ok(rolls)
}
