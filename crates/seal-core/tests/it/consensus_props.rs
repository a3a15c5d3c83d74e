//! Property tests of `seal_core::consensus::decide` (JudgeConsensus/1, strategy dual-strict/1,
//! docs/DESIGN.md §5) over random judge packages and random normalized judge results.
//!
//! The generator makes well-formed inputs (a valid JudgePackage/1, valid JudgeResult/1 documents
//! as normalization would produce them) whose citations are sometimes in the package and
//! sometimes not (events past the end or in a gap, actions out of range, `from > to`, unknown
//! frames), whose obligations sometimes carry a play-spec check, and whose slots sometimes fail.
//!
//! Properties: determinism (also across a JSON round trip of every input); invariance under
//! permutation of the package's obligations, of each result's obligations and of every citation
//! list; symmetry in A and B; a single judge never passes; pass only with both judges answering
//! and every required obligation satisfied; the output validates as JudgeConsensus/1; and the
//! statuses, decision and failureSignature equal an independent reading of docs/DESIGN.md §5 written
//! here (the oracle).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};

use seal_core::canonical::{canonical_bytes, canonical_with_hash, Hash};
use seal_core::consensus::{decide, ConsensusInput};
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::ids::{RollId, Slot};
use seal_core::validate::{validate_as, Report};

// ---------------------------------------------------------------------------------------------
// Scenario
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Scenario {
    roll_id: RollId,
    package: JudgePackage,
    package_hash: Hash,
    floor_passed: bool,
    a: JudgeResult,
    a_hash: Hash,
    b: JudgeResult,
    b_hash: Hash,
    independence: IndependenceChecks,
}

impl Scenario {
    fn input(&self) -> ConsensusInput<'_> {
        ConsensusInput {
            roll_id: self.roll_id,
            package: &self.package,
            package_hash: &self.package_hash,
            floor_passed: self.floor_passed,
            a: &self.a,
            a_hash: &self.a_hash,
            b: &self.b,
            b_hash: &self.b_hash,
            independence: self.independence,
        }
    }
    fn decide(&self) -> JudgeConsensus {
        decide(&self.input())
    }
    fn bytes(&self) -> Vec<u8> {
        canonical_bytes(&self.decide()).expect("canonical consensus")
    }
    /// The same scenario with slot `slot` failed (every obligation missing, slotFailed set).
    fn with_failed(&self, slot: Slot) -> Scenario {
        let mut s = self.clone();
        let r = failed_result(slot, &s.package, &s.package_hash);
        let h = hash_of(&r);
        match slot {
            Slot::A => {
                s.a = r;
                s.a_hash = h;
            }
            Slot::B => {
                s.b = r;
                s.b_hash = h;
            }
        }
        s
    }
    /// A and B (and their hashes) exchanged.
    fn swapped(&self) -> Scenario {
        let mut s = self.clone();
        std::mem::swap(&mut s.a, &mut s.b);
        std::mem::swap(&mut s.a_hash, &mut s.b_hash);
        s
    }
}

fn hash_of<T: serde::Serialize>(v: &T) -> Hash {
    canonical_with_hash(v).expect("canonical").1
}

fn h(s: &str) -> Hash {
    Hash::of(s.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const PHASES: [&str; 4] = ["menu", "play", "gameover", "win"];
const PATHS: [&str; 5] = ["score", "lives", "phase", "p.x", "absent"];

fn id_strategy() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,5}\\.[a-z][a-z0-9-]{0,5}"
}

fn phase() -> impl Strategy<Value = Value> {
    prop::sample::select(PHASES.to_vec()).prop_map(|p| json!(p))
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![(0i64..20).prop_map(|n| json!(n)), phase()]
}

fn assertion() -> impl Strategy<Value = Assertion> {
    (
        prop::sample::select(seal_core::assertions::OPS.to_vec()),
        prop::sample::select(PATHS.to_vec()),
        (0i64..20),
        scalar(),
        prop::collection::vec(scalar(), 1..4),
    )
        .prop_map(|(op, path, n, s, set)| {
            let value = match op {
                "increased" | "decreased" | "changed" => None,
                ">" | ">=" | "<" | "<=" => Some(json!(n)),
                "==" => Some(s),
                _ => Some(Value::Array(set)),
            };
            Assertion {
                path: path.into(),
                op: op.into(),
                value,
                why: None,
            }
        })
}

fn obligations() -> impl Strategy<Value = Vec<PackageObligation>> {
    prop::collection::btree_set(id_strategy(), 1..7).prop_flat_map(|ids| {
        let n = ids.len();
        (
            Just(ids),
            prop::collection::vec(
                (
                    prop::bool::weighted(0.7),
                    prop::option::weighted(0.35, assertion()),
                ),
                n,
            ),
        )
            .prop_map(|(ids, extra)| {
                ids.into_iter()
                    .zip(extra)
                    .map(|(id, (required, check))| PackageObligation {
                        description: format!("The game shows {id}."),
                        id,
                        required,
                        check,
                    })
                    .collect()
            })
    })
}

fn state_data() -> impl Strategy<Value = Value> {
    (
        prop::option::weighted(0.9, 0i64..20),
        prop::option::weighted(0.9, 0i64..5),
        prop::option::weighted(0.9, phase()),
        prop::option::weighted(0.5, 0i64..10),
    )
        .prop_map(|(score, lives, phase, x)| {
            let mut m = serde_json::Map::new();
            if let Some(s) = score {
                m.insert("score".into(), json!(s));
            }
            if let Some(l) = lives {
                m.insert("lives".into(), json!(l));
            }
            if let Some(p) = phase {
                m.insert("phase".into(), p);
            }
            if let Some(x) = x {
                m.insert("p".into(), json!({ "x": x }));
            }
            Value::Object(m)
        })
}

fn events() -> impl Strategy<Value = Vec<GameEvent>> {
    (
        0u64..3,
        prop::collection::vec(
            (
                1u64..3,
                prop::sample::select(vec!["state", "state", "state", "tap", "game_end"]),
                state_data(),
            ),
            0..9,
        ),
    )
        .prop_map(|(start, items)| {
            let mut seq = start;
            items
                .into_iter()
                .enumerate()
                .map(|(i, (gap, name, data))| {
                    if i > 0 {
                        seq += gap;
                    }
                    GameEvent {
                        seq,
                        name: name.into(),
                        t_ms: seq * 100,
                        data: if name == "state" {
                            data.as_object().cloned().unwrap()
                        } else {
                            serde_json::Map::new()
                        },
                    }
                })
                .collect()
        })
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(0u8..3, 0..5).prop_map(|kinds| {
        kinds
            .into_iter()
            .enumerate()
            .map(|(i, k)| {
                let v = match k {
                    0 => json!({"t": "tap", "x": 10 * i, "y": 20, "seq": i}),
                    1 => json!({"t": "key", "code": "Space", "seq": i}),
                    _ => json!({"t": "wait", "ms": 300, "seq": i}),
                };
                serde_json::from_value(v).unwrap()
            })
            .collect()
    })
}

fn package() -> impl Strategy<Value = JudgePackage> {
    (
        obligations(),
        actions(),
        events(),
        prop::collection::btree_set(0u16..1000, 0..4),
    )
        .prop_map(|(mut obligations, actions, events, frames)| {
            obligations.sort_by(|x, y| x.id.cmp(&y.id));
            JudgePackage {
                schema_version: JUDGE_PACKAGE.into(),
                genre: Genre::Narrative,
                brief: Brief {
                    text: "A short narrative game.".into(),
                },
                obligations,
                actions,
                events,
                frames: frames
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| PackageFrame {
                        hash: h(&format!("frame-{k}")),
                        at_ms: 100 * i as u64,
                    })
                    .collect(),
                image_manifest_hash: h("manifest"),
            }
        })
}

/// One judge's answer before it is fitted to a package: per obligation (by position) a status,
/// citations by small numbers, and frames by index (an index past the package's frames is a
/// frame the package does not have).
#[derive(Debug, Clone)]
struct RawEntry {
    present: bool,
    status: JudgeStatus,
    refs: Vec<RawRef>,
    frames: Vec<RawFrame>,
}

/// A citation: usually of something the package has, sometimes of anything at all.
#[derive(Debug, Clone)]
enum RawRef {
    /// One event of the package, by position.
    Event(usize),
    /// A run of the package's actions, by position and length.
    Actions(usize, u64),
    /// Any range (often not in the package: past the end, in a gap, or from > to).
    Any(bool, u64, u64),
}

#[derive(Debug, Clone)]
enum RawFrame {
    Known(usize),
    Unknown(u8),
}

fn raw_ref() -> impl Strategy<Value = RawRef> {
    prop_oneof![
        4 => any::<usize>().prop_map(RawRef::Event),
        2 => (any::<usize>(), 0u64..3).prop_map(|(i, n)| RawRef::Actions(i, n)),
        1 => (any::<bool>(), 0u64..14, 0u64..14).prop_map(|(a, f, t)| RawRef::Any(a, f, t)),
    ]
}

fn raw_frame() -> impl Strategy<Value = RawFrame> {
    prop_oneof![
        6 => any::<usize>().prop_map(RawFrame::Known),
        1 => any::<u8>().prop_map(RawFrame::Unknown),
    ]
}

#[derive(Debug, Clone)]
struct RawJudge {
    failed: bool,
    entries: Vec<RawEntry>,
    unknown: Vec<String>,
}

fn raw_entry() -> impl Strategy<Value = RawEntry> {
    (
        prop::bool::weighted(0.9),
        prop::sample::select(vec![
            JudgeStatus::Satisfied,
            JudgeStatus::Failed,
            JudgeStatus::Missing,
        ]),
        prop::collection::vec(raw_ref(), 0..3),
        prop::collection::vec(raw_frame(), 0..3),
    )
        .prop_map(|(present, status, refs, frames)| RawEntry {
            present,
            status,
            refs,
            frames,
        })
}

fn raw_judge() -> impl Strategy<Value = RawJudge> {
    (
        prop::bool::weighted(0.15),
        prop::collection::vec(raw_entry(), 7),
        prop::collection::btree_set(id_strategy(), 0..2),
    )
        .prop_map(|(failed, entries, unknown)| RawJudge {
            failed,
            entries,
            unknown: unknown.into_iter().collect(),
        })
}

fn attempt(slot: Slot, n: u32, accepted: bool) -> AttemptHashes {
    AttemptHashes {
        attempt: n,
        request_hash: Some(h(&format!("request-{slot}-{n}"))),
        raw_hash: h(&format!("raw-{slot}-{n}")),
        meta_hash: h(&format!("meta-{slot}-{n}")),
        accepted,
    }
}

fn failed_result(slot: Slot, pkg: &JudgePackage, pkg_hash: &Hash) -> JudgeResult {
    JudgeResult {
        schema_version: JUDGE_RESULT.into(),
        slot,
        package_hash: pkg_hash.clone(),
        prompt_artifact_hash: h(&format!("prompt-{slot}")),
        model: Some(format!("model-{slot}")),
        obligations: pkg
            .obligations
            .iter()
            .map(|o| ResultObligation {
                id: o.id.clone(),
                status: JudgeStatus::Missing,
                sequence_refs: vec![],
                frame_hashes: vec![],
                rationale: String::new(),
            })
            .collect(),
        unknown_obligation_ids: vec![],
        warnings: vec![],
        slot_failed: Some(SlotFailed {
            error_class: seal_core::vocab::ErrorClass::Http5xx,
            attempts: 3,
        }),
        attempts: (1..=3).map(|n| attempt(slot, n, false)).collect(),
    }
}

/// The JudgeResult/1 normalization would produce from `raw` for `pkg`.
fn fit(slot: Slot, raw: &RawJudge, pkg: &JudgePackage, pkg_hash: &Hash) -> JudgeResult {
    if raw.failed {
        return failed_result(slot, pkg, pkg_hash);
    }
    let mut warnings = Vec::new();
    let known: BTreeSet<&str> = pkg.obligations.iter().map(|o| o.id.as_str()).collect();
    let unknown: Vec<String> = raw
        .unknown
        .iter()
        .filter(|u| !known.contains(u.as_str()))
        .cloned()
        .collect();
    for u in &unknown {
        warnings.push(format!("unknown_obligation:{u}"));
    }
    let obligations = pkg
        .obligations
        .iter()
        .zip(&raw.entries)
        .map(|(o, e)| {
            if !e.present {
                warnings.push(format!("skipped:{}", o.id));
                return ResultObligation {
                    id: o.id.clone(),
                    status: JudgeStatus::Missing,
                    sequence_refs: vec![],
                    frame_hashes: vec![],
                    rationale: String::new(),
                };
            }
            let any = |actions: bool, from: u64, to: u64| SequenceRef {
                stream: if actions {
                    Stream::Actions
                } else {
                    Stream::Events
                },
                from,
                to,
            };
            let refs: Vec<SequenceRef> = e
                .refs
                .iter()
                .map(|r| match *r {
                    RawRef::Event(i) if !pkg.events.is_empty() => {
                        let seq = pkg.events[i % pkg.events.len()].seq;
                        any(false, seq, seq)
                    }
                    RawRef::Actions(i, n) if !pkg.actions.is_empty() => {
                        let len = pkg.actions.len() as u64;
                        let from = i as u64 % len;
                        any(true, from, (from + n).min(len - 1))
                    }
                    RawRef::Event(i) => any(false, i as u64 % 5, i as u64 % 5),
                    RawRef::Actions(i, n) => any(true, i as u64 % 5, i as u64 % 5 + n),
                    RawRef::Any(a, from, to) => any(a, from, to),
                })
                .collect();
            let frames: Vec<String> = e
                .frames
                .iter()
                .map(|f| match *f {
                    RawFrame::Known(i) if !pkg.frames.is_empty() => {
                        pkg.frames[i % pkg.frames.len()].hash.to_string()
                    }
                    RawFrame::Known(i) => h(&format!("not-in-package-{}", i % 7)).to_string(),
                    RawFrame::Unknown(i) => h(&format!("not-in-package-{i}")).to_string(),
                })
                .collect();
            let sequence_refs = seal_core::refs::merge_ranges(&refs);
            let frame_hashes = seal_core::refs::sort_hashes(&frames);
            let mut status = e.status;
            if status.is_claim() && sequence_refs.is_empty() && frame_hashes.is_empty() {
                warnings.push(format!("uncited_claim:{}", o.id));
                status = JudgeStatus::Missing;
            }
            ResultObligation {
                id: o.id.clone(),
                status,
                sequence_refs,
                frame_hashes,
                rationale: format!("{slot}: {}", status.as_str()),
            }
        })
        .collect();
    warnings.sort();
    JudgeResult {
        schema_version: JUDGE_RESULT.into(),
        slot,
        package_hash: pkg_hash.clone(),
        prompt_artifact_hash: h(&format!("prompt-{slot}")),
        model: Some(format!("model-{slot}")),
        obligations,
        unknown_obligation_ids: unknown,
        warnings,
        slot_failed: None,
        attempts: vec![attempt(slot, 1, true)],
    }
}

fn independence() -> impl Strategy<Value = IndependenceChecks> {
    let w = || prop::bool::weighted(0.96);
    ((w(), w(), w(), w()), (w(), w(), w(), w()), any::<bool>()).prop_map(
        |((c, s, p, pr), (d, r, jp, im), same_model)| IndependenceChecks {
            different_logical_client: c,
            different_session: s,
            different_policy_seed: p,
            different_prompt_artifact: pr,
            different_evidence_dir: d,
            different_raw_file: r,
            same_judge_package: jp,
            same_image_manifest: im,
            same_model,
        },
    )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        package(),
        raw_judge(),
        raw_judge(),
        prop::bool::weighted(0.85),
        independence(),
        any::<bool>(),
    )
        .prop_map(|(package, ra, rb, floor_passed, independence, second)| {
            let package_hash = hash_of(&package);
            let a = fit(Slot::A, &ra, &package, &package_hash);
            let b = fit(Slot::B, &rb, &package, &package_hash);
            Scenario {
                roll_id: if second { RollId::R2 } else { RollId::R1 },
                a_hash: hash_of(&a),
                b_hash: hash_of(&b),
                package,
                package_hash,
                floor_passed,
                a,
                b,
                independence,
            }
        })
}

// ---------------------------------------------------------------------------------------------
// The oracle: docs/DESIGN.md §5 read independently of crates/seal-core/src/consensus.rs
// ---------------------------------------------------------------------------------------------

struct Oracle {
    statuses: BTreeMap<String, ObligationStatus>,
    decision: Outcome,
    degraded: bool,
    failure_signature: Option<String>,
}

fn in_package(pkg: &JudgePackage, refs: &[SequenceRef], frames: &[String]) -> bool {
    let events: BTreeSet<u64> = pkg.events.iter().map(|e| e.seq).collect();
    let actions: BTreeSet<u64> = pkg.actions.iter().map(|a| a.seq).collect();
    let frame_set: BTreeSet<String> = pkg.frames.iter().map(|f| f.hash.to_string()).collect();
    refs.iter().all(|r| {
        r.from <= r.to
            && (r.from..=r.to).all(|s| match r.stream {
                Stream::Events => events.contains(&s),
                Stream::Actions => actions.contains(&s),
            })
    }) && frames.iter().all(|f| frame_set.contains(f))
}

fn oracle(s: &Scenario) -> Oracle {
    let pkg = &s.package;
    // (status, unsupported) of one judge on one obligation
    let said = |r: &JudgeResult, id: &str| -> (JudgeStatus, bool) {
        if r.slot_failed.is_some() {
            return (JudgeStatus::Missing, false);
        }
        match r.obligations.iter().find(|o| o.id == id) {
            None => (JudgeStatus::Missing, false),
            Some(o) => (
                o.status,
                o.status != JudgeStatus::Missing
                    && !in_package(pkg, &o.sequence_refs, &o.frame_hashes),
            ),
        }
    };
    let mut statuses = BTreeMap::new();
    for ob in &pkg.obligations {
        let (a, a_bad) = said(&s.a, &ob.id);
        let (b, b_bad) = said(&s.b, &ob.id);
        let st = if a_bad || b_bad {
            ObligationStatus::Contradicted
        } else if let Some(check) = &ob.check {
            let holds = seal_core::assertions::evaluate(check, &pkg.events).holds;
            let want = if holds {
                JudgeStatus::Satisfied
            } else {
                JudgeStatus::Failed
            };
            let against = [a, b]
                .iter()
                .any(|x| *x != JudgeStatus::Missing && *x != want);
            match (against, holds) {
                (true, _) => ObligationStatus::Contradicted,
                (false, true) => ObligationStatus::Satisfied,
                (false, false) => ObligationStatus::Failed,
            }
        } else {
            match (a, b) {
                (JudgeStatus::Satisfied, JudgeStatus::Satisfied) => ObligationStatus::Satisfied,
                (JudgeStatus::Failed, JudgeStatus::Failed) => ObligationStatus::Failed,
                (JudgeStatus::Missing, JudgeStatus::Missing) => ObligationStatus::Missing,
                _ => ObligationStatus::Disputed,
            }
        };
        statuses.insert(ob.id.clone(), st);
    }
    let a_failed = s.a.slot_failed.is_some();
    let b_failed = s.b.slot_failed.is_some();
    let degraded = a_failed ^ b_failed;
    let required: Vec<(String, ObligationStatus)> = pkg
        .obligations
        .iter()
        .filter(|o| o.required)
        .map(|o| (o.id.clone(), statuses[&o.id]))
        .collect();
    let ind = &s.independence;
    let independent = ind.different_logical_client
        && ind.different_session
        && ind.different_policy_seed
        && ind.different_prompt_artifact
        && ind.different_evidence_dir
        && ind.different_raw_file
        && ind.same_judge_package
        && ind.same_image_manifest;
    let decision = if !independent {
        Outcome::InfraError
    } else if !s.floor_passed {
        Outcome::Fail
    } else if a_failed && b_failed {
        Outcome::InfraError
    } else if required
        .iter()
        .any(|(_, st)| *st == ObligationStatus::Failed)
    {
        Outcome::Fail
    } else if required
        .iter()
        .all(|(_, st)| *st == ObligationStatus::Satisfied)
        && !degraded
    {
        Outcome::Pass
    } else {
        Outcome::Inconclusive
    };
    let failure_signature = (decision != Outcome::Pass).then(|| {
        let mut parts: Vec<String> = required
            .iter()
            .filter(|(_, st)| *st != ObligationStatus::Satisfied)
            .map(|(id, st)| format!("{}:{id}", st.as_str()))
            .collect();
        parts.sort();
        format!("{}:{}", decision.as_str(), parts.join("|"))
    });
    Oracle {
        statuses,
        decision,
        degraded,
        failure_signature,
    }
}

fn statuses(c: &JudgeConsensus) -> BTreeMap<String, ObligationStatus> {
    c.obligation_results
        .iter()
        .map(|o| (o.id.clone(), o.status))
        .collect()
}

fn conflict_ids(c: &JudgeConsensus) -> BTreeSet<String> {
    c.conflicts
        .iter()
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Shuffling
// ---------------------------------------------------------------------------------------------

fn shuffled(s: &Scenario, seed: u64) -> Scenario {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut t = s.clone();
    t.package.obligations.shuffle(&mut rng);
    for r in [&mut t.a, &mut t.b] {
        r.obligations.shuffle(&mut rng);
        for o in &mut r.obligations {
            o.sequence_refs.shuffle(&mut rng);
            o.frame_hashes.shuffle(&mut rng);
        }
    }
    t
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        // Integration tests have no lib.rs next to them to persist failures by; the minimal
        // failing input is printed instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn valid<T: serde::Serialize>(kind: Kind, doc: &T) -> Result<(), TestCaseError> {
    let v = serde_json::to_value(doc).unwrap();
    match validate_as(kind, &v) {
        Report::Valid(_) => Ok(()),
        other => Err(TestCaseError::fail(format!(
            "{} does not validate: {other:?}\n{v}",
            kind.name()
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// The generator makes well-formed inputs (else the other properties prove little).
    #[test]
    fn inputs_are_well_formed(s in scenario()) {
        valid(Kind::JudgePackage, &s.package)?;
        valid(Kind::JudgeResult, &s.a)?;
        valid(Kind::JudgeResult, &s.b)?;
    }

    /// Same inputs → same bytes, also after every input went through JSON and back.
    #[test]
    fn same_inputs_same_bytes(s in scenario()) {
        let first = s.bytes();
        prop_assert_eq!(&first, &s.bytes());
        let again = Scenario {
            roll_id: serde_json::from_value(json!(s.roll_id)).unwrap(),
            package: serde_json::from_value(serde_json::to_value(&s.package).unwrap()).unwrap(),
            package_hash: serde_json::from_value(json!(s.package_hash)).unwrap(),
            floor_passed: s.floor_passed,
            a: serde_json::from_slice(&canonical_bytes(&s.a).unwrap()).unwrap(),
            a_hash: serde_json::from_value(json!(s.a_hash)).unwrap(),
            b: serde_json::from_slice(&canonical_bytes(&s.b).unwrap()).unwrap(),
            b_hash: serde_json::from_value(json!(s.b_hash)).unwrap(),
            independence: serde_json::from_value(json!(s.independence)).unwrap(),
        };
        prop_assert_eq!(first, again.bytes());
    }

    /// Order carries no meaning: permuting the package's obligations, each result's obligations
    /// and every citation list gives the same bytes.
    #[test]
    fn permutations_change_nothing(s in scenario(), seed in any::<u64>()) {
        let want = s.bytes();
        let t = shuffled(&s, seed);
        prop_assert_eq!(
            String::from_utf8(want).unwrap(),
            String::from_utf8(t.bytes()).unwrap()
        );
    }

    /// A and B are symmetric: swapping them (with their hashes) changes no status, not the
    /// decision, not degraded, not the failureSignature, and not which obligations conflict.
    #[test]
    fn swapping_judges_changes_no_status(s in scenario()) {
        let x = s.decide();
        let y = s.swapped().decide();
        prop_assert_eq!(statuses(&x), statuses(&y));
        prop_assert_eq!(x.decision, y.decision);
        prop_assert_eq!(x.degraded, y.degraded);
        prop_assert_eq!(&x.failure_signature, &y.failure_signature);
        prop_assert_eq!(conflict_ids(&x), conflict_ids(&y));
        prop_assert_eq!(&x.judge_a_result_hash, &y.judge_b_result_hash);
    }

    /// One judge never passes: with exactly one slot failed the roll is degraded and not pass.
    #[test]
    fn single_judge_never_passes(s in scenario(), fail_a in any::<bool>()) {
        let (failed, other) = if fail_a { (Slot::A, Slot::B) } else { (Slot::B, Slot::A) };
        let mut t = s.with_failed(failed);
        // Make the other slot answer (possibly with everything satisfied and well cited).
        let answered = match other { Slot::A => &t.a, Slot::B => &t.b };
        if answered.slot_failed.is_some() {
            let mut r = answered.clone();
            r.slot_failed = None;
            r.attempts = vec![attempt(other, 1, true)];
            let hash = hash_of(&r);
            match other {
                Slot::A => { t.a = r; t.a_hash = hash; }
                Slot::B => { t.b = r; t.b_hash = hash; }
            }
        }
        let c = t.decide();
        prop_assert!(c.degraded);
        prop_assert_ne!(c.decision, Outcome::Pass);
    }

    /// A degraded roll whose every required obligation is satisfied still does not pass.
    #[test]
    fn single_judge_all_satisfied_never_passes(s in scenario(), fail_a in any::<bool>()) {
        let mut t = s.clone();
        t.floor_passed = true;
        t.independence = IndependenceChecks { same_model: t.independence.same_model, ..all_true() };
        // Every obligation becomes optional except those whose check holds (satisfied by rule 2
        // when nobody claims against it): the judge that answers says nothing.
        for o in &mut t.package.obligations {
            o.required = o.check.as_ref().is_some_and(|c| {
                seal_core::assertions::evaluate(c, &t.package.events).holds
            });
        }
        t.package_hash = hash_of(&t.package);
        let quiet = RawEntry { present: true, status: JudgeStatus::Missing, refs: vec![], frames: vec![] };
        let silent = RawJudge { failed: false, entries: vec![quiet; 7], unknown: vec![] };
        let (fa, fb) = if fail_a { (true, false) } else { (false, true) };
        t.a = fit(Slot::A, &RawJudge { failed: fa, ..silent.clone() }, &t.package, &t.package_hash);
        t.b = fit(Slot::B, &RawJudge { failed: fb, ..silent }, &t.package, &t.package_hash);
        t.a_hash = hash_of(&t.a);
        t.b_hash = hash_of(&t.b);
        let c = t.decide();
        let all_required_satisfied = c.obligation_results.iter().all(|o| {
            !t.package.obligations.iter().any(|p| p.id == o.id && p.required)
                || o.status == ObligationStatus::Satisfied
        });
        prop_assert!(all_required_satisfied);
        prop_assert!(c.degraded);
        prop_assert_eq!(c.decision, Outcome::Inconclusive);
    }

    /// pass only if both slots answered and every required obligation is satisfied (and the
    /// floor passed and independence held).
    #[test]
    fn pass_only_with_two_judges_and_all_required_satisfied(s in scenario()) {
        let c = s.decide();
        if c.decision == Outcome::Pass {
            prop_assert!(s.a.slot_failed.is_none() && s.b.slot_failed.is_none());
            for o in s.package.obligations.iter().filter(|o| o.required) {
                let got = c.obligation_results.iter().find(|r| r.id == o.id).map(|r| r.status);
                prop_assert_eq!(got, Some(ObligationStatus::Satisfied), "{}", o.id);
            }
            prop_assert!(s.floor_passed);
            prop_assert!(s.independence.all_required_hold());
            prop_assert!(c.failure_signature.is_none());
        } else {
            prop_assert!(c.failure_signature.is_some());
        }
    }

    /// The output always validates as JudgeConsensus/1 (schema and invariants).
    #[test]
    fn output_validates(s in scenario()) {
        let c = s.decide();
        valid(Kind::JudgeConsensus, &c)?;
        // one result per package obligation, sorted by id
        let ids: Vec<&str> = c.obligation_results.iter().map(|o| o.id.as_str()).collect();
        let mut want: Vec<&str> = s.package.obligations.iter().map(|o| o.id.as_str()).collect();
        want.sort();
        prop_assert_eq!(ids, want);
        prop_assert_eq!(c.strategy_version.as_str(), "dual-strict/1");
        prop_assert_eq!(&c.package_hash, &s.package_hash);
        prop_assert_eq!(&c.judge_a_result_hash, &s.a_hash);
        prop_assert_eq!(&c.judge_b_result_hash, &s.b_hash);
    }

    /// Statuses, decision, degraded and failureSignature are docs/DESIGN.md §5 as read by the oracle;
    /// conflicts name exactly the disputed and contradicted obligations.
    #[test]
    fn agrees_with_design_oracle(s in scenario()) {
        let c = s.decide();
        let o = oracle(&s);
        prop_assert_eq!(statuses(&c), o.statuses.clone());
        prop_assert_eq!(c.decision, o.decision);
        prop_assert_eq!(c.degraded, o.degraded);
        prop_assert_eq!(&c.failure_signature, &o.failure_signature);
        let disagreeing: BTreeSet<String> = o
            .statuses
            .iter()
            .filter(|(_, st)| matches!(st, ObligationStatus::Disputed | ObligationStatus::Contradicted))
            .map(|(id, _)| id.clone())
            .collect();
        prop_assert_eq!(conflict_ids(&c), disagreeing);
        for line in &c.conflicts {
            let id = line.split(':').next().unwrap();
            let a = s.a.obligations.iter().find(|r| r.id == id).map(|r| r.status).unwrap();
            let b = s.b.obligations.iter().find(|r| r.id == id).map(|r| r.status).unwrap();
            let prefix = format!("{id}: A={} B={}", a.as_str(), b.as_str());
            prop_assert!(line.starts_with(&prefix), "{line:?} should start with {prefix:?}");
        }
    }
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

/// The generator reaches every decision and every obligation status, with both supported and
/// unsupported citations and with checks that hold and fail (else the properties are vacuous).
#[test]
fn generator_reaches_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = scenario();
    let mut decisions = BTreeSet::new();
    let mut statuses_seen = BTreeSet::new();
    let (mut unsupported, mut supported, mut checks_hold, mut checks_fail, mut degraded) =
        (0, 0, 0, 0, 0);
    for _ in 0..2000 {
        let s = strategy.new_tree(&mut runner).unwrap().current();
        let c = s.decide();
        decisions.insert(c.decision);
        degraded += usize::from(c.degraded);
        for o in &c.obligation_results {
            statuses_seen.insert(o.status);
        }
        for r in [&s.a, &s.b] {
            for o in r.obligations.iter().filter(|o| o.status.is_claim()) {
                if in_package(&s.package, &o.sequence_refs, &o.frame_hashes) {
                    supported += 1;
                } else {
                    unsupported += 1;
                }
            }
        }
        for o in &s.package.obligations {
            if let Some(check) = &o.check {
                if seal_core::assertions::evaluate(check, &s.package.events).holds {
                    checks_hold += 1;
                } else {
                    checks_fail += 1;
                }
            }
        }
    }
    assert_eq!(decisions.len(), 4, "decisions reached: {decisions:?}");
    assert_eq!(
        statuses_seen.len(),
        5,
        "statuses reached: {statuses_seen:?}"
    );
    for (what, n) in [
        ("supported claims", supported),
        ("unsupported claims", unsupported),
        ("holding checks", checks_hold),
        ("failing checks", checks_fail),
        ("degraded rolls", degraded),
    ] {
        assert!(n >= 50, "only {n} {what} in 2000 scenarios");
    }
    eprintln!(
        "decisions {decisions:?}; claims supported {supported} unsupported {unsupported}; \
         checks hold {checks_hold} fail {checks_fail}; degraded {degraded}"
    );
}
