//! The judge's request builder and answer normalizer against the sealed fixtures: every stored
//! request is the one [`request::build`] makes from the slot's recorded model, seed, session and
//! prompt, and every stored `normalized.json` is what [`normalize::normalize`] makes of the
//! slot's parsed answer (or failure). The rules no fixture separates (an uncited claim, a claim
//! citing only frames or only the sequence, an unknown or skipped obligation) are pinned by
//! tests named after them (docs/TESTING.md, mutation testing).

use std::path::{Path, PathBuf};

use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::doc::*;
use seal_core::ids::Slot;
use seal_core::judge::normalize::{self, SlotAnswer};
use seal_core::judge::request::{self, RequestSpec};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

fn store() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/store")
}

fn read<T: DeserializeOwned>(path: &Path) -> T {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every judge slot folder of the fixture store: (label, roll folder, slot).
fn fixture_slots() -> Vec<(String, PathBuf, Slot)> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(store().join("runs"))
        .expect("the fixture store")
        .map(|e| e.expect("entry").path())
        .collect();
    runs.sort();
    let mut out = Vec::new();
    for run in runs {
        for roll in ["roll-1", "roll-2"] {
            for (name, slot) in [("a", Slot::A), ("b", Slot::B)] {
                let dir = run.join(roll);
                if dir.join(format!("judge-{name}/normalized.json")).exists() {
                    let label = format!(
                        "{}/{roll}/judge-{name}",
                        run.file_name().unwrap_or_default().to_string_lossy()
                    );
                    out.push((label, dir, slot));
                }
            }
        }
    }
    out
}

fn canonical_hash<T: serde::Serialize>(v: &T) -> Hash {
    canonical_with_hash(v).expect("canonical").1
}

#[test]
fn every_stored_request_is_the_one_its_slot_builds() {
    let mut requests = 0;
    for (label, roll, slot) in fixture_slots() {
        let package_bytes = std::fs::read(roll.join("judge-package.json")).expect("package");
        let package_hash = Hash::of(&package_bytes);
        let manifest: ImageManifest = read(&roll.join("image-manifest.json"));
        let dir = roll.join(format!("judge-{slot}"));
        let result: JudgeResult = read(&dir.join("normalized.json"));
        for a in &result.attempts {
            let attempt = dir.join(format!("attempt-{}", a.attempt));
            if !attempt.join("request.json").exists() {
                continue;
            }
            let meta: SlotMeta = read(&attempt.join("meta.json"));
            let stored: Value = read(&attempt.join("request.json"));
            assert_eq!(meta.package_hash, package_hash, "{label}: package");
            let prompt = seal_core::prompts::get(&meta.prompt_artifact.id).expect("a prompt");
            assert_eq!(prompt.hash, meta.prompt_artifact.hash, "{label}: prompt");
            let built = request::build(&RequestSpec {
                slot,
                model: &meta.model_requested,
                prompt: &prompt,
                package_bytes: &package_bytes,
                package_hash: &package_hash,
                manifest: &manifest,
                seed: meta.policy_seed,
                session_id: &meta.session_id,
                max_tokens: stored["max_tokens"].as_u64().expect("max_tokens"),
                temperature: stored["temperature"].as_f64().expect("temperature"),
                structured_output: stored.get("response_format").is_some(),
            });
            assert_eq!(
                canonical_hash(&built),
                canonical_hash(&stored),
                "{label}/attempt-{}: request",
                a.attempt
            );
            assert_eq!(
                request::embedded_package_hash(&stored),
                Some(package_hash.clone()),
                "{label}"
            );
            let frames: Vec<String> = manifest.frames.iter().map(|f| f.hash.to_string()).collect();
            assert_eq!(request::placeholders(&stored), frames, "{label}");
            requests += 1;
        }
    }
    assert!(requests >= 20, "only {requests} stored requests");
}

#[test]
fn every_stored_normalized_result_is_the_normalized_parsed_answer() {
    let (mut answered, mut failed) = (0, 0);
    for (label, roll, slot) in fixture_slots() {
        let package: JudgePackage = read(&roll.join("judge-package.json"));
        let package_hash = Hash::of(&std::fs::read(roll.join("judge-package.json")).expect("p"));
        let dir = roll.join(format!("judge-{slot}"));
        let stored: JudgeResult = read(&dir.join("normalized.json"));
        let parsed: Value = read(&dir.join("parsed.json"));
        let output: Option<JudgeOutput> = serde_json::from_value(parsed).ok();
        let answer = match (&output, &stored.slot_failed) {
            (Some(output), None) => {
                answered += 1;
                SlotAnswer::Answered {
                    output,
                    model: stored.model.clone(),
                }
            }
            (_, Some(f)) => {
                failed += 1;
                SlotAnswer::Failed {
                    error_class: f.error_class,
                    attempts: f.attempts,
                    model: stored.model.clone(),
                }
            }
            (None, None) => panic!("{label}: no answer and no failure"),
        };
        let got = normalize::normalize(
            slot,
            &package,
            &package_hash,
            &stored.prompt_artifact_hash,
            answer,
            stored.attempts.clone(),
        );
        assert_eq!(got, stored, "{label}");
    }
    assert!(
        answered >= 10 && failed >= 1,
        "{answered} answered, {failed} failed"
    );
}

// ---------------------------------------------------------------------------------------------
// Normalization rules the fixtures do not separate.

/// A fixture package and a JudgeOutput over its obligations.
fn package() -> (JudgePackage, Hash, Vec<String>) {
    let path = store().join("runs/run-narrative-0011-inconclusive/roll-1/judge-package.json");
    let package: JudgePackage = read(&path);
    let hash = Hash::of(&std::fs::read(&path).expect("package"));
    let mut ids: Vec<String> = package.obligations.iter().map(|o| o.id.clone()).collect();
    ids.sort();
    assert!(ids.len() >= 3);
    (package, hash, ids)
}

fn frame() -> String {
    Hash::of(b"frame").to_string()
}

fn cited(id: &str, verdict: &str, seq: bool, frame_cited: bool) -> Value {
    json!({
        "id": id,
        "verdict": verdict,
        "sequenceRefs": if seq { json!([{"stream": "events", "from": 2, "to": 3}]) } else { json!([]) },
        "frameHashes": if frame_cited { json!([frame()]) } else { json!([]) },
        "rationale": "why",
    })
}

fn normalized(obligations: Vec<Value>) -> JudgeResult {
    let (package, hash, _) = package();
    let output: JudgeOutput =
        serde_json::from_value(json!({ "obligations": obligations })).expect("JudgeOutput");
    normalize::normalize(
        Slot::A,
        &package,
        &hash,
        &Hash::of(b"prompt"),
        SlotAnswer::Answered {
            output: &output,
            model: Some("m".into()),
        },
        Vec::new(),
    )
}

fn status(r: &JudgeResult, id: &str) -> JudgeStatus {
    r.obligations
        .iter()
        .find(|o| o.id == id)
        .map(|o| o.status)
        .expect("an entry per obligation")
}

/// A claim stands on either citation: the sequence alone, or a frame alone.
#[test]
fn a_claim_citing_only_the_sequence_or_only_a_frame_stands() {
    let (_, _, ids) = package();
    let r = normalized(vec![
        cited(&ids[0], "satisfied", true, false),
        cited(&ids[1], "failed", false, true),
        cited(&ids[2], "satisfied", true, true),
    ]);
    assert_eq!(status(&r, &ids[0]), JudgeStatus::Satisfied);
    assert_eq!(status(&r, &ids[1]), JudgeStatus::Failed);
    assert_eq!(status(&r, &ids[2]), JudgeStatus::Satisfied);
    assert!(
        r.warnings.iter().all(|w| !w.starts_with("uncited_claim")),
        "{:?}",
        r.warnings
    );
}

/// A satisfied or failed verdict that cites nothing is `missing`, with an `uncited_claim`
/// warning; `not_observed` citing nothing is `missing` and claims nothing, so no warning.
#[test]
fn an_uncited_claim_is_missing_with_a_warning_and_not_observed_is_not_a_claim() {
    let (_, _, ids) = package();
    let r = normalized(vec![
        cited(&ids[0], "satisfied", false, false),
        cited(&ids[1], "failed", false, false),
        cited(&ids[2], "not_observed", false, false),
    ]);
    for id in &ids[..3] {
        assert_eq!(status(&r, id), JudgeStatus::Missing, "{id}");
    }
    let uncited: Vec<&String> = r
        .warnings
        .iter()
        .filter(|w| w.starts_with("uncited_claim"))
        .collect();
    assert_eq!(
        uncited,
        [
            &format!("uncited_claim:{}", ids[0]),
            &format!("uncited_claim:{}", ids[1])
        ]
    );
}

/// Ids the package does not have are listed and warned about, never used; obligations the
/// answer skipped are `missing` with a `skipped` warning; one entry per package obligation.
#[test]
fn unknown_ids_are_listed_never_used_and_skipped_obligations_are_missing() {
    let (_, _, ids) = package();
    let r = normalized(vec![
        cited(&ids[0], "satisfied", true, true),
        cited("not.in-package", "satisfied", true, true),
    ]);
    assert_eq!(r.unknown_obligation_ids, ["not.in-package"]);
    let got: Vec<&str> = r.obligations.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(status(&r, &ids[0]), JudgeStatus::Satisfied);
    let mut want: Vec<String> = ids[1..].iter().map(|id| format!("skipped:{id}")).collect();
    want.push("unknown_obligation:not.in-package".into());
    want.sort();
    assert_eq!(r.warnings, want);
    assert!(r.slot_failed.is_none());
}
