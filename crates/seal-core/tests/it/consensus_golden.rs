//! Golden vectors for `JudgeConsensus/1`, strategy `dual-strict/1` (docs/DESIGN.md §5).
//!
//! Each file in `tests/data/consensus/*.json` holds one case: the inputs of
//! `seal_core::consensus::decide` (a judge package, `floorPassed`, the `JudgeResult/1` of A and B with
//! their hashes, the independence facts) and what docs/DESIGN.md §5 says must come out: the decision,
//! `degraded`, the status of every obligation, `conflicts`, `failureSignature`, and the sha256 of
//! the canonical consensus bytes (the whole document is kept next to it for review).
//!
//! The expectations were written by hand from docs/DESIGN.md §5 (each case says `why`); the generator
//! only fills in the hashes and the full document, and refuses to write a case whose hand-written
//! expectation the code does not meet unless that case is declared to disagree with the code
//! (`disagrees_with_code: true` plus a `note`). Such cases are skipped here with a message.
//!
//! Regenerate (after a deliberate strategy change, which must also bump the strategy version):
//! `cargo test --test consensus_golden -- --ignored regenerate_golden_vectors`

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::consensus_builders::*;
use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::consensus::{decide, ConsensusInput};
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::ids::{RollId, Slot};
use seal_core::validate::{validate_as, Report};

pub(crate) fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/consensus")
}

// ---------------------------------------------------------------------------------------------
// File format
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VectorFile {
    pub(crate) name: String,
    pub(crate) why: String,
    pub(crate) covers: Vec<String>,
    pub(crate) disagrees_with_code: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    pub(crate) input: VectorInput,
    pub(crate) expected: Expected,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VectorInput {
    pub(crate) roll_id: RollId,
    pub(crate) package: JudgePackage,
    pub(crate) package_hash: Hash,
    pub(crate) floor_passed: bool,
    pub(crate) judge_a: JudgeResult,
    pub(crate) judge_a_hash: Hash,
    pub(crate) judge_b: JudgeResult,
    pub(crate) judge_b_hash: Hash,
    pub(crate) independence: IndependenceChecks,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expected {
    pub(crate) decision: Outcome,
    pub(crate) degraded: bool,
    pub(crate) obligation_statuses: BTreeMap<String, ObligationStatus>,
    pub(crate) conflicts: Vec<String>,
    pub(crate) failure_signature: Option<String>,
    /// sha256 of the canonical consensus bytes; null when the case disagrees with the code (the
    /// DESIGN-correct bytes cannot be produced by it).
    pub(crate) consensus_sha256: Option<Hash>,
    /// The whole expected document, for review and for readable failures.
    pub(crate) consensus: Option<JudgeConsensus>,
}

/// Every behaviour the vectors must cover (the test fails when a tag has no vector).
pub(crate) fn required_coverage() -> Vec<String> {
    let mut tags = Vec::new();
    for a in ["satisfied", "failed", "missing"] {
        for b in ["satisfied", "failed", "missing"] {
            tags.push(format!("cell:{a}/{b}"));
        }
    }
    for u in ["event-seq", "action-seq", "frame-hash", "from-gt-to"] {
        tags.push(format!("unsupported:{u}"));
    }
    for op in seal_core::assertions::OPS {
        for w in ["holds", "fails", "against-holds", "against-fails"] {
            tags.push(format!("check:{op}:{w}"));
        }
    }
    for d in [
        "both-slots-failed",
        "floor-failed",
        "required-failed",
        "required-disputed",
        "required-missing",
        "required-contradicted",
        "all-required-satisfied",
        "optional-ignored",
        "degraded-never-passes",
        "failure-signature",
        "conflicts",
    ] {
        tags.push(format!("decision:{d}"));
    }
    for (name, _) in all_true().required() {
        tags.push(format!("independence:{name}"));
    }
    tags
}

// ---------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------

pub(crate) fn load_vectors() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(data_dir()).expect("tests/data/consensus exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((name, v));
    }
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

pub(crate) fn input_of(i: &VectorInput) -> ConsensusInput<'_> {
    ConsensusInput {
        roll_id: i.roll_id,
        package: &i.package,
        package_hash: &i.package_hash,
        floor_passed: i.floor_passed,
        a: &i.judge_a,
        a_hash: &i.judge_a_hash,
        b: &i.judge_b,
        b_hash: &i.judge_b_hash,
        independence: i.independence,
    }
}

pub(crate) fn observed(c: &JudgeConsensus) -> Expected {
    Expected {
        decision: c.decision,
        degraded: c.degraded,
        obligation_statuses: c
            .obligation_results
            .iter()
            .map(|o| (o.id.clone(), o.status))
            .collect(),
        conflicts: c.conflicts.clone(),
        failure_signature: c.failure_signature.clone(),
        consensus_sha256: None,
        consensus: None,
    }
}

pub(crate) fn semantic(e: &Expected) -> Expected {
    Expected {
        consensus_sha256: None,
        consensus: None,
        ..e.clone()
    }
}

#[test]
fn golden_vectors() {
    let files = load_vectors();
    assert!(
        files.len() >= 80,
        "expected the full vector set in {}, found {} files",
        data_dir().display(),
        files.len()
    );
    let mut covered = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut checked = 0;
    let mut skipped = Vec::new();
    for (file, raw) in &files {
        let v: VectorFile =
            serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            format!("{}.json", v.name),
            *file,
            "file name is the case name"
        );
        assert!(names.insert(v.name.clone()));
        assert!(!v.why.trim().is_empty(), "{file}: every case says why");
        covered.extend(v.covers.iter().cloned());

        // The inputs are what they claim to be: hashes are the canonical hashes, documents valid.
        let i = &v.input;
        assert_eq!(hash_of(&i.package), i.package_hash, "{file}: packageHash");
        assert_eq!(hash_of(&i.judge_a), i.judge_a_hash, "{file}: judge A hash");
        assert_eq!(hash_of(&i.judge_b), i.judge_b_hash, "{file}: judge B hash");
        assert_eq!(i.judge_a.slot, Slot::A, "{file}");
        assert_eq!(i.judge_b.slot, Slot::B, "{file}");
        assert_valid(Kind::JudgePackage, &i.package, file);
        assert_valid(Kind::JudgeResult, &i.judge_a, file);
        assert_valid(Kind::JudgeResult, &i.judge_b, file);

        if v.disagrees_with_code {
            let note = v.note.as_deref().unwrap_or("(no note)");
            eprintln!(
                "SKIPPED golden vector {}: the code disagrees with docs/DESIGN.md §5 here: {note}",
                v.name
            );
            skipped.push(v.name.clone());
            continue;
        }

        let got = decide(&input_of(i));
        let (bytes, hash) = canonical_with_hash(&got).expect("canonical consensus");
        let want_hash = v
            .expected
            .consensus_sha256
            .clone()
            .unwrap_or_else(|| panic!("{file}: consensus_sha256 is required"));
        assert_eq!(
            semantic(&v.expected),
            observed(&got),
            "{file}: {}\ngot document: {}",
            v.why,
            String::from_utf8_lossy(&bytes)
        );
        if let Some(doc) = &v.expected.consensus {
            assert_eq!(
                doc,
                &got,
                "{file}: consensus document differs\ngot: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        assert_eq!(
            want_hash,
            hash,
            "{file}: canonical consensus bytes differ\ngot: {}",
            String::from_utf8_lossy(&bytes)
        );
        // Deterministic, and a valid JudgeConsensus/1.
        assert_eq!(canonical_with_hash(&decide(&input_of(i))).unwrap().1, hash);
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        match validate_as(Kind::JudgeConsensus, &value) {
            Report::Valid(_) => {}
            other => panic!("{file}: consensus does not validate: {other:?}"),
        }
        checked += 1;
    }
    let missing: Vec<String> = required_coverage()
        .into_iter()
        .filter(|t| !covered.contains(t))
        .collect();
    assert!(missing.is_empty(), "no golden vector covers {missing:?}");
    eprintln!(
        "golden consensus vectors: {checked} checked, {} skipped {skipped:?}",
        skipped.len()
    );
}

pub(crate) fn hash_of<T: Serialize>(v: &T) -> Hash {
    canonical_with_hash(v).expect("canonical").1
}

pub(crate) fn assert_valid<T: Serialize>(kind: Kind, doc: &T, file: &str) {
    let v = serde_json::to_value(doc).unwrap();
    match validate_as(kind, &v) {
        Report::Valid(_) => {}
        other => panic!("{file}: input {} invalid: {other:?}", kind.name()),
    }
}

pub(crate) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let one = || vec![req("core.loop")];

    // 1. The agreement table for an obligation without a check (rule 3), 9 cells.
    for a in [S, F, M] {
        for b in [S, F, M] {
            let (st, decision, sig) = match (a, b) {
                (S, S) => (OS::Satisfied, Outcome::Pass, None),
                (F, F) => (OS::Failed, Outcome::Fail, Some("fail:failed:core.loop")),
                (M, M) => (
                    OS::Missing,
                    Outcome::Inconclusive,
                    Some("inconclusive:missing:core.loop"),
                ),
                _ => (
                    OS::Disputed,
                    Outcome::Inconclusive,
                    Some("inconclusive:disputed:core.loop"),
                ),
            };
            let conflict = format!("core.loop: A={} B={}", status_name(a), status_name(b));
            let conflicts: Vec<&str> = if st == OS::Disputed {
                vec![conflict.as_str()]
            } else {
                vec![]
            };
            let why = format!(
                "docs/DESIGN.md §5 rule 3 (no check): A={} B={} → {}; the only obligation is required, so the \
                 roll is {} (§5 decision: all required satisfied → pass; required failed → fail; \
                 disputed/missing → inconclusive). Both judges cite only what is in the package.",
                status_name(a),
                status_name(b),
                st.as_str(),
                decision.as_str()
            );
            let mut tags = vec![format!("cell:{}/{}", status_name(a), status_name(b))];
            tags.push(
                match st {
                    OS::Satisfied => "decision:all-required-satisfied",
                    OS::Failed => "decision:required-failed",
                    OS::Missing => "decision:required-missing",
                    _ => "decision:required-disputed",
                }
                .to_string(),
            );
            if st == OS::Disputed {
                tags.push("decision:conflicts".into());
            }
            let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
            cases.push(
                Case::new(
                    format!("table-a-{}-b-{}", status_name(a), status_name(b)),
                    why,
                )
                .covers(&tag_refs)
                .obligations(one())
                .judges(
                    answered(vec![v("core.loop", a)]),
                    answered(vec![v("core.loop", b)]),
                )
                .expect(decision, &[("core.loop", st)], &conflicts, sig),
            );
        }
    }

    // 2. Unsupported citations (rule 1).
    let unsupported = |name: &str, tag: &str, why: &str, a: Says, b: Says, who: &str| -> Case {
        let conflict = format!(
            "core.loop: A={} B={} unsupported={who}",
            a.status.as_str(),
            b.status.as_str()
        );
        Case::new(name, why)
            .covers(&[tag, "decision:required-contradicted", "decision:conflicts"])
            .obligations(one())
            .judges(answered(vec![a]), answered(vec![b]))
            .expect(
                Outcome::Inconclusive,
                &[("core.loop", OS::Contradicted)],
                &[conflict.as_str()],
                Some("inconclusive:contradicted:core.loop"),
            )
    };
    cases.push(unsupported(
        "unsupported-event-seq-not-in-package",
        "unsupported:event-seq",
        "Rule 1: A claims satisfied citing events 7..7; the package's events are seq 0..5, so the \
         claim is unsupported and the obligation contradicted, although B agrees with a valid \
         citation. Required contradicted → inconclusive.",
        cite("core.loop", S, vec![events(7, 7)], vec![]),
        v("core.loop", S),
        "A",
    ));
    cases.push(unsupported(
        "unsupported-event-range-runs-past-package",
        "unsupported:event-seq",
        "Rule 1: A cites events 4..9 but the package ends at seq 5 (6..9 are not in it): \
         unsupported → contradicted → inconclusive.",
        cite("core.loop", S, vec![events(4, 9)], vec![frame1()]),
        v("core.loop", S),
        "A",
    ));
    cases.push(unsupported(
        "unsupported-action-seq-out-of-range",
        "unsupported:action-seq",
        "Rule 1: B claims failed citing actions 3..3; the package has 3 actions (seq 0..2), so \
         the claim is unsupported → contradicted, even though A also says failed (a plain \
         agreement would have been fail). Required contradicted → inconclusive.",
        v("core.loop", F),
        cite("core.loop", F, vec![ev(Stream::Actions, 3, 3)], vec![]),
        "B",
    ));
    cases.push(unsupported(
        "unsupported-frame-hash-not-in-package",
        "unsupported:frame-hash",
        "Rule 1: B claims satisfied citing a frame hash that is not one of the package's frames \
         (valid events otherwise): unsupported → contradicted → inconclusive.",
        v("core.loop", S),
        cite(
            "core.loop",
            S,
            vec![events(3, 4)],
            vec![h("a frame nobody showed").to_string()],
        ),
        "B",
    ));
    cases.push(unsupported(
        "unsupported-from-greater-than-to",
        "unsupported:from-gt-to",
        "Rule 1 with §3.2 sequenceRef (from ≤ to): A cites events 4..2, a malformed range, which \
         cannot be in the package → contradicted → inconclusive.",
        cite("core.loop", S, vec![events(4, 2)], vec![]),
        v("core.loop", S),
        "A",
    ));
    cases.push(unsupported(
        "unsupported-both-judges",
        "unsupported:event-seq",
        "Rule 1: both claims cite something not in the package (A an event past the end, B an \
         action out of range) → contradicted; both are named.",
        cite("core.loop", S, vec![events(40, 41)], vec![]),
        cite("core.loop", S, vec![ev(Stream::Actions, 0, 9)], vec![]),
        "A,B",
    ));
    cases.push(unsupported(
        "unsupported-claim-beats-disagreement",
        "unsupported:frame-hash",
        "Rule 1 comes before rule 3: A=satisfied with an unknown frame, B=failed. The pair would be \
         disputed, but an unsupported claim makes it contradicted.",
        cite("core.loop", S, vec![], vec![h("unknown").to_string()]),
        v("core.loop", F),
        "A",
    ));
    cases.push(
        Case::new(
            "unsupported-citation-on-missing-is-not-a-claim",
            "Rule 1 is about claims (satisfied/failed). A not_observed answer (missing) that \
             cites events 99..99 claims nothing, so it is not unsupported: both missing → missing \
             (rule 3), required missing → inconclusive, and no conflict line.",
        )
        .covers(&["decision:required-missing"])
        .obligations(one())
        .judges(
            answered(vec![cite("core.loop", M, vec![events(99, 99)], vec![])]),
            answered(vec![v("core.loop", M)]),
        )
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Missing)],
            &[],
            Some("inconclusive:missing:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "unsupported-citation-overrides-check",
            "Rule 1 before rule 2: the check (score increased 0 → 12) holds and A agrees, but A \
             also cites events 6..6, which is not in the package: contradicted → inconclusive.",
        )
        .covers(&["unsupported:event-seq", "decision:required-contradicted"])
        .obligations(vec![checked("progress.score", "score", "increased", None)])
        .judges(
            answered(vec![cite(
                "progress.score",
                S,
                vec![events(1, 1), events(6, 6)],
                vec![],
            )]),
            answered(vec![v("progress.score", M)]),
        )
        .expect(
            Outcome::Inconclusive,
            &[("progress.score", OS::Contradicted)],
            &["progress.score: A=satisfied B=missing check=satisfied unsupported=A"],
            Some("inconclusive:contradicted:progress.score"),
        ),
    );

    // 3. Checked obligations (rule 2): every op, holding and not, agreed with and claimed against.
    // before (seq 1): phase menu, score 0, lives 3, mode story, p.x 5
    // after  (seq 4): phase gameover, score 12, lives 1, mode story, p.x 9; seq 3 has phase play.
    type OpCase = (
        &'static str,
        &'static str,
        Option<Value>,
        bool,
        &'static str,
    );
    let op_cases: Vec<OpCase> = vec![
        ("increased", "score", None, true, "score 0 → 12 increased"),
        ("increased", "lives", None, false, "lives 3 → 1 did not increase"),
        ("decreased", "lives", None, true, "lives 3 → 1 decreased"),
        ("decreased", "score", None, false, "score 0 → 12 did not decrease"),
        ("changed", "phase", None, true, "phase menu → gameover changed"),
        ("changed", "mode", None, false, "mode story → story did not change"),
        (">", "score", Some(json!(11)), true, "after score 12 > 11"),
        (">", "score", Some(json!(12)), false, "after score 12 is not > 12"),
        (">=", "score", Some(json!(12)), true, "after score 12 >= 12"),
        (">=", "score", Some(json!(13)), false, "after score 12 is not >= 13"),
        ("<", "lives", Some(json!(2)), true, "after lives 1 < 2"),
        ("<", "lives", Some(json!(1)), false, "after lives 1 is not < 1"),
        ("<=", "lives", Some(json!(1)), true, "after lives 1 <= 1"),
        ("<=", "lives", Some(json!(0)), false, "after lives 1 is not <= 0"),
        ("==", "phase", Some(json!("gameover")), true, "after phase == gameover"),
        ("==", "phase", Some(json!("win")), false, "after phase gameover != win"),
        (
            "in",
            "phase",
            Some(json!(["gameover", "win"])),
            true,
            "after phase gameover is in {gameover, win}",
        ),
        (
            "in",
            "phase",
            Some(json!(["menu", "play"])),
            false,
            "after phase gameover is not in {menu, play} (earlier states do not count for in)",
        ),
        (
            "reached",
            "phase",
            Some(json!(["play"])),
            true,
            "phase play is reached at event 3 (not the last state: reached looks at every state event)",
        ),
        (
            "reached",
            "phase",
            Some(json!(["win", "lose"])),
            false,
            "no state event has phase win or lose",
        ),
    ];
    let id = "spec.check";
    for (op, path, value, holds, fact) in op_cases {
        let slug = match op {
            ">" => "gt",
            ">=" => "ge",
            "<" => "lt",
            "<=" => "le",
            "==" => "eq",
            other => other,
        };
        let w = if holds { "holds" } else { "fails" };
        let check_status = if holds { S } else { F };
        let st = if holds { OS::Satisfied } else { OS::Failed };
        let decision = if holds { Outcome::Pass } else { Outcome::Fail };
        let sig = (!holds).then_some("fail:failed:spec.check");
        let obligation = || vec![checked(id, path, op, value.clone())];
        // Agreeing judges: the check decides (A agrees with a claim, B says nothing).
        cases.push(
            Case::new(
                format!("check-{slug}-{w}"),
                format!(
                    "Rule 2, op {op:?} on {path:?}: {fact}, so the check {w} and the status is {}. \
                     A claims the same ({}), B answered not_observed (missing, not a claim, so not \
                     against the check). Only required obligation → {}.",
                    st.as_str(),
                    check_status.as_str(),
                    decision.as_str()
                ),
            )
            .covers(&[
                format!("check:{op}:{w}").as_str(),
                if holds {
                    "decision:all-required-satisfied"
                } else {
                    "decision:required-failed"
                },
            ])
            .obligations(obligation())
            .judges(
                answered(vec![v(id, check_status)]),
                answered(vec![v(id, M)]),
            )
            .expect(decision, &[(id, st)], &[], sig),
        );
        // A judge claiming against the check: contradicted.
        let against = if holds { F } else { S };
        let (a, b) = if holds {
            (v(id, check_status), v(id, against))
        } else {
            (v(id, against), v(id, M))
        };
        let line = format!(
            "{id}: A={} B={} check={}",
            a.status.as_str(),
            b.status.as_str(),
            check_status.as_str()
        );
        cases.push(
            Case::new(
                format!("check-{slug}-{w}-claimed-against"),
                format!(
                    "Rule 2, op {op:?} on {path:?}: {fact}, so the check {w} ({}). A={}, B={}: a \
                     judge claims {} against the check → contradicted → inconclusive (required \
                     contradicted, nothing required failed).",
                    check_status.as_str(),
                    a.status.as_str(),
                    b.status.as_str(),
                    against.as_str()
                ),
            )
            .covers(&[
                format!("check:{op}:against-{w}").as_str(),
                "decision:required-contradicted",
                "decision:conflicts",
            ])
            .obligations(obligation())
            .judges(answered(vec![a]), answered(vec![b]))
            .expect(
                Outcome::Inconclusive,
                &[(id, OS::Contradicted)],
                &[line.as_str()],
                Some("inconclusive:contradicted:spec.check"),
            ),
        );
    }
    cases.push(
        Case::new(
            "check-state-not-exposed-fails",
            "Rule 2 with a path no state event exposes (\"timer\"): the assertion cannot hold, so \
             it fails (assertions.rs: a state the game does not expose fails; the play-spec makes \
             exporting it the game's obligation). Both judges silent → failed → fail.",
        )
        .covers(&["decision:required-failed"])
        .obligations(vec![checked(id, "timer", "decreased", None)])
        .judges(answered(vec![v(id, M)]), answered(vec![v(id, M)]))
        .expect(
            Outcome::Fail,
            &[(id, OS::Failed)],
            &[],
            Some("fail:failed:spec.check"),
        ),
    );
    cases.push(
        Case::new(
            "check-judges-agree-with-check-citing-differently",
            "Rule 2: the check (score > 11) holds; A=satisfied, B=satisfied with different valid \
             citations: nobody claims against the check → satisfied → pass.",
        )
        .covers(&["decision:all-required-satisfied"])
        .obligations(vec![checked(id, "score", ">", Some(json!(11)))])
        .judges(
            answered(vec![cite(
                id,
                S,
                vec![ev(Stream::Actions, 0, 1)],
                vec![frame2()],
            )]),
            answered(vec![v(id, S)]),
        )
        .expect(Outcome::Pass, &[(id, OS::Satisfied)], &[], None),
    );

    cases.extend(super::consensus_decisions::decision_cases());
    cases
}

pub(crate) const ROLL_2_CASES: [&str; 1] = ["roll-2-everything-agrees-pass"];

/// Cases in which the code is believed to disagree with docs/DESIGN.md §5: (name, note).
pub(crate) const DISAGREEMENTS: [(&str, &str); 0] = [];

#[test]
#[ignore = "writes tests/data/consensus; run by hand after a reviewed strategy change"]
fn regenerate_golden_vectors() {
    let dir = data_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let mut written = BTreeSet::new();
    let mut problems = Vec::new();
    for mut case in cases() {
        if let Some((_, note)) = DISAGREEMENTS.iter().find(|(n, _)| *n == case.name) {
            case.disagrees = Some(note.to_string());
        }
        let pkg = package(case.obligations.clone());
        let package_hash = hash_of(&pkg);
        let a = result(Slot::A, &pkg, &case.a);
        let b = result(Slot::B, &pkg, &case.b);
        let input = VectorInput {
            roll_id: if ROLL_2_CASES.contains(&case.name.as_str()) {
                RollId::R2
            } else {
                RollId::R1
            },
            judge_a_hash: hash_of(&a),
            judge_b_hash: hash_of(&b),
            package: pkg,
            package_hash,
            floor_passed: case.floor_passed,
            judge_a: a,
            judge_b: b,
            independence: case.independence,
        };
        let got = decide(&input_of(&input));
        let (_, hash) = canonical_with_hash(&got).unwrap();
        let mut expected = Expected {
            decision: case.decision,
            degraded: case.degraded,
            obligation_statuses: case
                .statuses
                .iter()
                .map(|(id, s)| (id.to_string(), *s))
                .collect(),
            conflicts: case.conflicts.clone(),
            failure_signature: case.failure_signature.clone(),
            consensus_sha256: None,
            consensus: None,
        };
        let agrees = observed(&got) == expected;
        match (&case.disagrees, agrees) {
            (None, true) => {
                expected.consensus_sha256 = Some(hash);
                expected.consensus = Some(got);
            }
            (None, false) => problems.push(format!(
                "{}: the code does not meet the hand-written expectation\n  want {:?}\n  got  {:?}",
                case.name,
                expected,
                observed(&got)
            )),
            (Some(_), true) => problems.push(format!(
                "{}: declared to disagree with the code, but the code now agrees: remove it from \
                 DISAGREEMENTS",
                case.name
            )),
            (Some(_), false) => {}
        }
        let file = VectorFile {
            name: case.name.clone(),
            why: case.why.clone(),
            covers: case.covers.clone(),
            disagrees_with_code: case.disagrees.is_some(),
            note: case.disagrees.clone(),
            input,
            expected,
        };
        assert!(
            written.insert(case.name.clone()),
            "duplicate case {}",
            case.name
        );
        let mut text = serde_json::to_string_pretty(&file).unwrap();
        text.push('\n');
        std::fs::write(dir.join(format!("{}.json", case.name)), text).unwrap();
    }
    // Remove vectors no case produces any more.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().and_then(|e| e.to_str()) == Some("json") && !written.contains(&stem) {
            std::fs::remove_file(&path).unwrap();
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
