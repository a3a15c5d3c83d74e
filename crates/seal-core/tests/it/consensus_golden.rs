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

use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::consensus::{decide, ConsensusInput};
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::ids::{RollId, Slot};
use seal_core::validate::{validate_as, Report};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/consensus")
}

// ---------------------------------------------------------------------------------------------
// File format
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorFile {
    name: String,
    why: String,
    covers: Vec<String>,
    disagrees_with_code: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    input: VectorInput,
    expected: Expected,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorInput {
    roll_id: RollId,
    package: JudgePackage,
    package_hash: Hash,
    floor_passed: bool,
    judge_a: JudgeResult,
    judge_a_hash: Hash,
    judge_b: JudgeResult,
    judge_b_hash: Hash,
    independence: IndependenceChecks,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    decision: Outcome,
    degraded: bool,
    obligation_statuses: BTreeMap<String, ObligationStatus>,
    conflicts: Vec<String>,
    failure_signature: Option<String>,
    /// sha256 of the canonical consensus bytes; null when the case disagrees with the code (the
    /// DESIGN-correct bytes cannot be produced by it).
    consensus_sha256: Option<Hash>,
    /// The whole expected document, for review and for readable failures.
    consensus: Option<JudgeConsensus>,
}

/// Every behaviour the vectors must cover (the test fails when a tag has no vector).
fn required_coverage() -> Vec<String> {
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

fn load_vectors() -> Vec<(String, Value)> {
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

fn input_of(i: &VectorInput) -> ConsensusInput<'_> {
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

fn observed(c: &JudgeConsensus) -> Expected {
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

fn semantic(e: &Expected) -> Expected {
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

fn hash_of<T: Serialize>(v: &T) -> Hash {
    canonical_with_hash(v).expect("canonical").1
}

fn assert_valid<T: Serialize>(kind: Kind, doc: &T, file: &str) {
    let v = serde_json::to_value(doc).unwrap();
    match validate_as(kind, &v) {
        Report::Valid(_) => {}
        other => panic!("{file}: input {} invalid: {other:?}", kind.name()),
    }
}

// ---------------------------------------------------------------------------------------------
// The generator: hand-written cases → files
// ---------------------------------------------------------------------------------------------

use JudgeStatus::{Failed as F, Missing as M, Satisfied as S};
use ObligationStatus as OS;

fn h(s: &str) -> Hash {
    Hash::of(s.as_bytes())
}

fn frame1() -> String {
    h("frame-1").to_string()
}
fn frame2() -> String {
    h("frame-2").to_string()
}

fn ev(stream: Stream, from: u64, to: u64) -> SequenceRef {
    SequenceRef { stream, from, to }
}
fn events(from: u64, to: u64) -> SequenceRef {
    ev(Stream::Events, from, to)
}

fn all_true() -> IndependenceChecks {
    IndependenceChecks {
        different_logical_client: true,
        different_session: true,
        different_policy_seed: true,
        different_prompt_artifact: true,
        different_evidence_dir: true,
        different_raw_file: true,
        same_judge_package: true,
        same_image_manifest: true,
        same_model: false,
    }
}

/// The package every case shares (only the obligations differ). The `state` events are what
/// checks read: before = seq 1, after = seq 4.
fn package(obligations: Vec<PackageObligation>) -> JudgePackage {
    let mut obligations = obligations;
    obligations.sort_by(|x, y| x.id.cmp(&y.id));
    let event = |seq: u64, name: &str, data: Value| GameEvent {
        seq,
        name: name.into(),
        t_ms: seq * 500,
        data: data.as_object().cloned().unwrap(),
    };
    let action = |v: Value| -> Action { serde_json::from_value(v).unwrap() };
    JudgePackage {
        schema_version: JUDGE_PACKAGE.into(),
        genre: Genre::Puzzle,
        brief: Brief {
            text: "A tile puzzle: clear the board before the lives run out.".into(),
        },
        obligations,
        actions: vec![
            action(json!({"t": "tap", "x": 120, "y": 300, "seq": 0})),
            action(json!({"t": "key", "code": "Space", "seq": 1})),
            action(json!({"t": "wait", "ms": 400, "seq": 2})),
        ],
        events: vec![
            event(0, "game_loaded", json!({"title": "Tiles"})),
            event(
                1,
                "state",
                json!({"phase": "menu", "score": 0, "lives": 3, "mode": "story", "p": {"x": 5}}),
            ),
            event(2, "game_start", json!({})),
            event(
                3,
                "state",
                json!({"phase": "play", "score": 4, "lives": 3, "mode": "story", "p": {"x": 9}}),
            ),
            event(
                4,
                "state",
                json!({"phase": "gameover", "score": 12, "lives": 1, "mode": "story", "p": {"x": 9}}),
            ),
            event(5, "game_end", json!({"completed": true})),
        ],
        frames: vec![
            PackageFrame {
                hash: h("frame-1"),
                at_ms: 500,
            },
            PackageFrame {
                hash: h("frame-2"),
                at_ms: 2000,
            },
        ],
        image_manifest_hash: h("image-manifest"),
    }
}

fn req(id: &str) -> PackageObligation {
    PackageObligation {
        id: id.into(),
        description: format!("Obligation {id} holds."),
        required: true,
        check: None,
    }
}
fn opt(id: &str) -> PackageObligation {
    PackageObligation {
        required: false,
        ..req(id)
    }
}
fn checked(id: &str, path: &str, op: &str, value: Option<Value>) -> PackageObligation {
    PackageObligation {
        check: Some(Assertion {
            path: path.into(),
            op: op.into(),
            value,
            why: None,
        }),
        ..req(id)
    }
}

/// One judge's verdict on one obligation, with its citations.
#[derive(Clone)]
struct Says {
    id: &'static str,
    status: JudgeStatus,
    refs: Vec<SequenceRef>,
    frames: Vec<String>,
}

/// A verdict with the default, valid citations of its status (a claim always cites something).
fn v(id: &'static str, status: JudgeStatus) -> Says {
    let (refs, frames) = match status {
        S => (vec![events(3, 4)], vec![frame1()]),
        F => (vec![events(4, 4)], vec![frame2()]),
        M => (vec![], vec![]),
    };
    Says {
        id,
        status,
        refs,
        frames,
    }
}
fn cite(
    id: &'static str,
    status: JudgeStatus,
    refs: Vec<SequenceRef>,
    frames: Vec<String>,
) -> Says {
    Says {
        id,
        status,
        refs,
        frames,
    }
}

#[derive(Clone)]
enum Judge {
    Answered(Vec<Says>),
    SlotFailed,
}

fn result(slot: Slot, pkg: &JudgePackage, judge: &Judge) -> JudgeResult {
    let pkg_hash = hash_of(pkg);
    let tag = slot.as_str();
    let attempt = |n: u32, accepted: bool| AttemptHashes {
        attempt: n,
        request_hash: Some(h(&format!("request-{tag}-{n}"))),
        raw_hash: h(&format!("raw-{tag}-{n}")),
        meta_hash: h(&format!("meta-{tag}-{n}")),
        accepted,
    };
    let missing = |id: &str| ResultObligation {
        id: id.into(),
        status: M,
        sequence_refs: vec![],
        frame_hashes: vec![],
        rationale: String::new(),
    };
    let ids: Vec<&str> = pkg.obligations.iter().map(|o| o.id.as_str()).collect();
    let (obligations, warnings, slot_failed, attempts) = match judge {
        Judge::SlotFailed => (
            ids.iter().map(|id| missing(id)).collect(),
            vec![],
            Some(SlotFailed {
                error_class: seal_core::vocab::ErrorClass::Timeout,
                attempts: 3,
            }),
            vec![attempt(1, false), attempt(2, false), attempt(3, false)],
        ),
        Judge::Answered(verdicts) => {
            for vd in verdicts {
                assert!(
                    ids.contains(&vd.id),
                    "verdict for unknown obligation {}",
                    vd.id
                );
                assert!(
                    !(vd.status.is_claim() && vd.refs.is_empty() && vd.frames.is_empty()),
                    "a normalized claim cites something"
                );
            }
            let mut warnings = Vec::new();
            let obs = ids
                .iter()
                .map(|id| match verdicts.iter().find(|vd| vd.id == *id) {
                    None => {
                        warnings.push(format!("skipped:{id}"));
                        missing(id)
                    }
                    Some(vd) => ResultObligation {
                        id: id.to_string(),
                        status: vd.status,
                        sequence_refs: seal_core::refs::merge_ranges(&vd.refs),
                        frame_hashes: seal_core::refs::sort_hashes(&vd.frames),
                        rationale: format!("judge {tag}: {} on {id}", vd.status.as_str()),
                    },
                })
                .collect();
            warnings.sort();
            (obs, warnings, None, vec![attempt(1, true)])
        }
    };
    JudgeResult {
        schema_version: JUDGE_RESULT.into(),
        slot,
        package_hash: pkg_hash,
        prompt_artifact_hash: h(&format!("prompt-{tag}")),
        model: Some(format!("judge-model-{tag}")),
        obligations,
        unknown_obligation_ids: vec![],
        warnings,
        slot_failed,
        attempts,
    }
}

/// One hand-written case.
struct Case {
    name: String,
    why: String,
    covers: Vec<String>,
    obligations: Vec<PackageObligation>,
    floor_passed: bool,
    a: Judge,
    b: Judge,
    independence: IndependenceChecks,
    decision: Outcome,
    degraded: bool,
    statuses: Vec<(&'static str, ObligationStatus)>,
    conflicts: Vec<String>,
    failure_signature: Option<String>,
    /// Set when the code is believed to disagree with docs/DESIGN.md §5 on this case.
    disagrees: Option<String>,
}

impl Case {
    fn new(name: impl Into<String>, why: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            why: why.into(),
            covers: vec![],
            obligations: vec![],
            floor_passed: true,
            a: Judge::Answered(vec![]),
            b: Judge::Answered(vec![]),
            independence: all_true(),
            decision: Outcome::Pass,
            degraded: false,
            statuses: vec![],
            conflicts: vec![],
            failure_signature: None,
            disagrees: None,
        }
    }
    fn covers(mut self, tags: &[&str]) -> Case {
        self.covers.extend(tags.iter().map(|t| t.to_string()));
        self
    }
    fn obligations(mut self, o: Vec<PackageObligation>) -> Case {
        self.obligations = o;
        self
    }
    fn judges(mut self, a: Judge, b: Judge) -> Case {
        self.a = a;
        self.b = b;
        self
    }
    fn floor(mut self, passed: bool) -> Case {
        self.floor_passed = passed;
        self
    }
    fn independence(mut self, i: IndependenceChecks) -> Case {
        self.independence = i;
        self
    }
    fn expect(
        mut self,
        decision: Outcome,
        statuses: &[(&'static str, ObligationStatus)],
        conflicts: &[&str],
        failure_signature: Option<&str>,
    ) -> Case {
        self.decision = decision;
        self.statuses = statuses.to_vec();
        self.conflicts = conflicts.iter().map(|c| c.to_string()).collect();
        self.failure_signature = failure_signature.map(str::to_string);
        self
    }
    fn degraded(mut self) -> Case {
        self.degraded = true;
        self
    }
}

fn answered(v: Vec<Says>) -> Judge {
    Judge::Answered(v)
}

fn status_name(s: JudgeStatus) -> &'static str {
    s.as_str()
}

fn cases() -> Vec<Case> {
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

    // 4. Roll decision.
    let two = || vec![req("core.loop"), req("ui.text")];
    cases.push(
        Case::new(
            "decision-both-slots-failed",
            "Both slots failed (slotFailed set, every obligation missing) → infra_error, not \
             inconclusive. Statuses are missing (rule 3: missing/missing); failureSignature lists \
             the required obligations that are not satisfied.",
        )
        .covers(&["decision:both-slots-failed", "decision:failure-signature"])
        .obligations(two())
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Missing), ("ui.text", OS::Missing)],
            &[],
            Some("infra_error:missing:core.loop|missing:ui.text"),
        ),
    );
    cases.push(
        Case::new(
            "decision-both-slots-failed-with-holding-check",
            "Both slots failed → infra_error, even though the only required obligation has a \
             check that holds (satisfied): with no judge at all there is no two-judge decision.",
        )
        .covers(&["decision:both-slots-failed"])
        .obligations(vec![checked(id, "score", "increased", None)])
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::InfraError,
            &[(id, OS::Satisfied)],
            &[],
            Some("infra_error:"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-judges-pass",
            "floor.passed == false → fail whatever the judges said: both judges satisfy every \
             required obligation (which alone would pass). failureSignature is `fail:` with an \
             empty list, since no required obligation is unsatisfied.",
        )
        .covers(&["decision:floor-failed", "decision:failure-signature"])
        .obligations(two())
        .floor(false)
        .judges(
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", S), v("ui.text", S)]),
        )
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            Some("fail:"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-judges-disputed",
            "floor.passed == false → fail, not inconclusive, although the judges dispute a \
             required obligation.",
        )
        .covers(&["decision:floor-failed"])
        .obligations(two())
        .floor(false)
        .judges(
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", F), v("ui.text", S)]),
        )
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Disputed), ("ui.text", OS::Satisfied)],
            &["core.loop: A=satisfied B=failed"],
            Some("fail:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-both-slots-failed",
            "Floor failed AND both slots failed. §5 lists both `both slots failed → infra_error` \
             and `floor.passed == false → fail whatever the judges said`; the floor is \
             deterministic evidence that does not depend on any judge, so the roll is fail \
             (reading: the floor rule overrides everything the judges did or did not say).",
        )
        .covers(&["decision:floor-failed", "decision:both-slots-failed"])
        .obligations(one())
        .floor(false)
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Missing)],
            &[],
            Some("fail:missing:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-required-failed-beats-inconclusive",
            "§5: any required contradicted/disputed/missing → inconclusive, UNLESS some required \
             obligation is failed → fail. Here one required is failed (both judges agree) and one \
             is disputed. failureSignature entries are sorted as whole `<status>:<id>` strings \
             (disputed:z… before failed:a…), not by id.",
        )
        .covers(&[
            "decision:required-failed",
            "decision:required-disputed",
            "decision:failure-signature",
        ])
        .obligations(vec![req("a.first"), req("z.last")])
        .judges(
            answered(vec![v("a.first", F), v("z.last", S)]),
            answered(vec![v("a.first", F), v("z.last", M)]),
        )
        .expect(
            Outcome::Fail,
            &[("a.first", OS::Failed), ("z.last", OS::Disputed)],
            &["z.last: A=satisfied B=missing"],
            Some("fail:disputed:z.last|failed:a.first"),
        ),
    );
    cases.push(
        Case::new(
            "decision-required-failed-with-contradicted-and-missing",
            "Required failed (checked: lives increased does not hold, nobody claims otherwise), \
             another required contradicted (unsupported citation), another missing → fail. \
             The signature lists all three, sorted.",
        )
        .covers(&[
            "decision:required-failed",
            "decision:required-contradicted",
            "decision:required-missing",
            "decision:failure-signature",
        ])
        .obligations(vec![
            checked("b.lives", "lives", "increased", None),
            req("c.claims"),
            req("d.silent"),
        ])
        .judges(
            answered(vec![
                v("b.lives", F),
                cite("c.claims", S, vec![events(8, 8)], vec![]),
                v("d.silent", M),
            ]),
            answered(vec![v("b.lives", M), v("c.claims", S), v("d.silent", M)]),
        )
        .expect(
            Outcome::Fail,
            &[
                ("b.lives", OS::Failed),
                ("c.claims", OS::Contradicted),
                ("d.silent", OS::Missing),
            ],
            &["c.claims: A=satisfied B=satisfied unsupported=A"],
            Some("fail:contradicted:c.claims|failed:b.lives|missing:d.silent"),
        ),
    );
    cases.push(
        Case::new(
            "decision-inconclusive-mixed",
            "No required obligation failed; one is contradicted (check score increased holds, B \
             claims failed), one disputed, one missing, one satisfied → inconclusive; the \
             signature lists the three unsatisfied ones, sorted; conflicts has a line for the \
             contradicted and the disputed obligation only.",
        )
        .covers(&[
            "decision:required-contradicted",
            "decision:required-disputed",
            "decision:required-missing",
            "decision:conflicts",
            "decision:failure-signature",
        ])
        .obligations(vec![
            checked("a.score", "score", "increased", None),
            req("b.disputed"),
            req("c.missing"),
            req("d.agreed"),
        ])
        .judges(
            answered(vec![
                v("a.score", S),
                v("b.disputed", F),
                v("c.missing", M),
                v("d.agreed", S),
            ]),
            answered(vec![
                v("a.score", F),
                v("b.disputed", M),
                v("c.missing", M),
                v("d.agreed", S),
            ]),
        )
        .expect(
            Outcome::Inconclusive,
            &[
                ("a.score", OS::Contradicted),
                ("b.disputed", OS::Disputed),
                ("c.missing", OS::Missing),
                ("d.agreed", OS::Satisfied),
            ],
            &[
                "a.score: A=satisfied B=failed check=satisfied",
                "b.disputed: A=failed B=missing",
            ],
            Some("inconclusive:contradicted:a.score|disputed:b.disputed|missing:c.missing"),
        ),
    );
    cases.push(
        Case::new(
            "decision-optional-obligations-do-not-matter-pass",
            "Both required obligations satisfied → pass, although the optional ones are failed, \
             disputed, contradicted and missing (only required obligations enter the decision and \
             the signature). Conflicts still name every non-agreeing obligation, optional or not.",
        )
        .covers(&[
            "decision:optional-ignored",
            "decision:all-required-satisfied",
            "decision:conflicts",
        ])
        .obligations(vec![
            req("core.loop"),
            req("ui.text"),
            opt("polish.failed"),
            opt("polish.disputed"),
            opt("polish.contradicted"),
            opt("polish.missing"),
        ])
        .judges(
            answered(vec![
                v("core.loop", S),
                v("ui.text", S),
                v("polish.failed", F),
                v("polish.disputed", S),
                cite(
                    "polish.contradicted",
                    F,
                    vec![ev(Stream::Actions, 5, 5)],
                    vec![],
                ),
            ]),
            answered(vec![
                v("core.loop", S),
                v("ui.text", S),
                v("polish.failed", F),
                v("polish.disputed", F),
                v("polish.contradicted", F),
            ]),
        )
        .expect(
            Outcome::Pass,
            &[
                ("core.loop", OS::Satisfied),
                ("polish.contradicted", OS::Contradicted),
                ("polish.disputed", OS::Disputed),
                ("polish.failed", OS::Failed),
                ("polish.missing", OS::Missing),
                ("ui.text", OS::Satisfied),
            ],
            &[
                "polish.contradicted: A=failed B=failed unsupported=A",
                "polish.disputed: A=satisfied B=failed",
            ],
            None,
        ),
    );
    cases.push(
        Case::new(
            "decision-optional-failed-does-not-make-fail",
            "An optional obligation failed by both judges does not trigger `unless some required \
             obligation is failed → fail`: the required one is disputed → inconclusive, and the \
             signature names only the required obligation.",
        )
        .covers(&["decision:optional-ignored", "decision:required-disputed"])
        .obligations(vec![req("core.loop"), opt("polish.sound")])
        .judges(
            answered(vec![v("core.loop", S), v("polish.sound", F)]),
            answered(vec![v("core.loop", F), v("polish.sound", F)]),
        )
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed), ("polish.sound", OS::Failed)],
            &["core.loop: A=satisfied B=failed"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-no-required-obligations-pass",
            "Only optional obligations (one disputed): `all required satisfied` holds vacuously, \
             both judges answered, floor passed, independence holds → pass.",
        )
        .covers(&["decision:optional-ignored"])
        .obligations(vec![opt("polish.sound")])
        .judges(
            answered(vec![v("polish.sound", S)]),
            answered(vec![v("polish.sound", M)]),
        )
        .expect(
            Outcome::Pass,
            &[("polish.sound", OS::Disputed)],
            &["polish.sound: A=satisfied B=missing"],
            None,
        ),
    );

    // Degraded: exactly one slot failed.
    cases.push(
        Case::new(
            "degraded-a-failed-checks-hold-never-pass",
            "Slot A failed, B answered. Every required obligation is checked and its check holds, \
             B agrees → all satisfied, which would pass; but one judge never yields pass \
             (degraded; §9: never a pass from one judge) → inconclusive. Signature `inconclusive:` \
             with no unsatisfied required obligation.",
        )
        .covers(&["decision:degraded-never-passes"])
        .obligations(vec![
            checked("a.score", "score", "increased", None),
            checked("b.phase", "phase", "==", Some(json!("gameover"))),
        ])
        .judges(
            Judge::SlotFailed,
            answered(vec![v("a.score", S), v("b.phase", S)]),
        )
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("a.score", OS::Satisfied), ("b.phase", OS::Satisfied)],
            &[],
            Some("inconclusive:"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-b-failed-single-claim-is-disputed",
            "Slot B failed; A says satisfied on an unchecked obligation. B's statuses are missing, \
             so the pair is satisfied/missing → disputed (rule 3) → inconclusive, degraded.",
        )
        .covers(&["decision:degraded-never-passes", "decision:required-disputed"])
        .obligations(one())
        .judges(answered(vec![v("core.loop", S)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=satisfied B=missing"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-single-failed-claim-is-not-fail",
            "Slot A failed; B says failed on an unchecked obligation: missing/failed → disputed, \
             so one judge cannot fail the game either → inconclusive, degraded.",
        )
        .covers(&["decision:degraded-never-passes"])
        .obligations(one())
        .judges(Judge::SlotFailed, answered(vec![v("core.loop", F)]))
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=missing B=failed"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-failing-check-fails",
            "Slot B failed; the required obligation's check (lives increased) does not hold, so it \
             is failed deterministically → fail (degraded only forbids pass).",
        )
        .covers(&["decision:degraded-never-passes", "decision:required-failed"])
        .obligations(vec![checked("b.lives", "lives", "increased", None)])
        .judges(answered(vec![v("b.lives", F)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::Fail,
            &[("b.lives", OS::Failed)],
            &[],
            Some("fail:failed:b.lives"),
        ),
    );

    // Independence (§4): a failed required check voids the roll.
    let agreeing = || {
        (
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", S), v("ui.text", S)]),
        )
    };
    for (check, _) in all_true().required() {
        let name = check.as_str();
        let mut ind = all_true();
        match name {
            "differentLogicalClient" => ind.different_logical_client = false,
            "differentSession" => ind.different_session = false,
            "differentPolicySeed" => ind.different_policy_seed = false,
            "differentPromptArtifact" => ind.different_prompt_artifact = false,
            "differentEvidenceDir" => ind.different_evidence_dir = false,
            "differentRawFile" => ind.different_raw_file = false,
            "sameJudgePackage" => ind.same_judge_package = false,
            "sameImageManifest" => ind.same_image_manifest = false,
            other => panic!("unknown independence check {other}"),
        }
        let (a, b) = agreeing();
        let slug: String = name
            .chars()
            .flat_map(|c| {
                if c.is_ascii_uppercase() {
                    vec!['-', c.to_ascii_lowercase()]
                } else {
                    vec![c]
                }
            })
            .collect();
        cases.push(
            Case::new(
                format!("independence-{slug}-false"),
                format!(
                    "§4: required independence check {name} is false → the roll is void \
                     (rollOutcome infra_error), although both judges satisfy everything. The \
                     consensus records the false check; statuses are still computed."
                ),
            )
            .covers(&[format!("independence:{name}").as_str()])
            .obligations(two())
            .independence(ind)
            .judges(a, b)
            .expect(
                Outcome::InfraError,
                &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
                &[],
                Some("infra_error:"),
            ),
        );
    }
    let (a, b) = agreeing();
    cases.push(
        Case::new(
            "independence-same-model-is-recorded-not-required",
            "§4: sameModel is recorded, not required. Both judges run the same model and agree on \
             everything → pass, with sameModel true in the document.",
        )
        .obligations(two())
        .independence(IndependenceChecks {
            same_model: true,
            ..all_true()
        })
        .judges(a, b)
        .expect(
            Outcome::Pass,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            None,
        ),
    );
    let (a, b) = agreeing();
    cases.push(
        Case::new(
            "independence-false-and-floor-failed",
            "A required independence check is false AND the floor failed. §4: a failed required \
             check voids the roll (rollOutcome = infra_error, and no projection with a false check \
             ever reaches the evidence), so the void wins over the floor's fail.",
        )
        .covers(&["independence:differentSession", "decision:floor-failed"])
        .obligations(two())
        .floor(false)
        .independence(IndependenceChecks {
            different_session: false,
            ..all_true()
        })
        .judges(a, b)
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            Some("infra_error:"),
        ),
    );
    cases.push(
        Case::new(
            "independence-false-and-one-slot-failed",
            "A required independence check is false and slot B failed: void → infra_error \
             (degraded is still recorded as true: exactly one slot failed).",
        )
        .covers(&["independence:differentRawFile"])
        .obligations(one())
        .independence(IndependenceChecks {
            different_raw_file: false,
            ..all_true()
        })
        .judges(answered(vec![v("core.loop", S)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=satisfied B=missing"],
            Some("infra_error:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "roll-2-everything-agrees-pass",
            "The same rules on roll-2: two required obligations (one checked: reached play at \
             event 3), both judges agree and cite valid events, actions and frames → pass; \
             failureSignature null, no conflicts.",
        )
        .covers(&["decision:all-required-satisfied"])
        .obligations(vec![
            req("core.loop"),
            checked("spec.reached", "phase", "reached", Some(json!(["play"]))),
        ])
        .judges(
            answered(vec![
                cite(
                    "core.loop",
                    S,
                    vec![ev(Stream::Actions, 0, 2), events(0, 5)],
                    vec![frame1(), frame2()],
                ),
                v("spec.reached", S),
            ]),
            answered(vec![v("core.loop", S), v("spec.reached", S)]),
        )
        .expect(
            Outcome::Pass,
            &[
                ("core.loop", OS::Satisfied),
                ("spec.reached", OS::Satisfied),
            ],
            &[],
            None,
        ),
    );
    cases
}

const ROLL_2_CASES: [&str; 1] = ["roll-2-everything-agrees-pass"];

/// Cases in which the code is believed to disagree with docs/DESIGN.md §5: (name, note).
const DISAGREEMENTS: [(&str, &str); 0] = [];

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
