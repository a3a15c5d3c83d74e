//! The builders of the golden consensus cases: packages, judge answers and expectations.

use super::consensus_golden::*;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::Slot;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// The generator: hand-written cases → files
// ---------------------------------------------------------------------------------------------

pub(crate) use seal_core::doc::JudgeStatus::{Failed as F, Missing as M, Satisfied as S};
pub(crate) use seal_core::doc::ObligationStatus as OS;

pub(crate) fn h(s: &str) -> Hash {
    Hash::of(s.as_bytes())
}

pub(crate) fn frame1() -> String {
    h("frame-1").to_string()
}
pub(crate) fn frame2() -> String {
    h("frame-2").to_string()
}

pub(crate) fn ev(stream: Stream, from: u64, to: u64) -> SequenceRef {
    SequenceRef { stream, from, to }
}
pub(crate) fn events(from: u64, to: u64) -> SequenceRef {
    ev(Stream::Events, from, to)
}

pub(crate) fn all_true() -> IndependenceChecks {
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
pub(crate) fn package(obligations: Vec<PackageObligation>) -> JudgePackage {
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

pub(crate) fn req(id: &str) -> PackageObligation {
    PackageObligation {
        id: id.into(),
        description: format!("Obligation {id} holds."),
        required: true,
        check: None,
    }
}
pub(crate) fn opt(id: &str) -> PackageObligation {
    PackageObligation {
        required: false,
        ..req(id)
    }
}
pub(crate) fn checked(id: &str, path: &str, op: &str, value: Option<Value>) -> PackageObligation {
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
pub(crate) struct Says {
    pub(crate) id: &'static str,
    pub(crate) status: JudgeStatus,
    pub(crate) refs: Vec<SequenceRef>,
    pub(crate) frames: Vec<String>,
}

/// A verdict with the default, valid citations of its status (a claim always cites something).
pub(crate) fn v(id: &'static str, status: JudgeStatus) -> Says {
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
pub(crate) fn cite(
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
pub(crate) enum Judge {
    Answered(Vec<Says>),
    SlotFailed,
}

pub(crate) fn result(slot: Slot, pkg: &JudgePackage, judge: &Judge) -> JudgeResult {
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
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) why: String,
    pub(crate) covers: Vec<String>,
    pub(crate) obligations: Vec<PackageObligation>,
    pub(crate) floor_passed: bool,
    pub(crate) a: Judge,
    pub(crate) b: Judge,
    pub(crate) independence: IndependenceChecks,
    pub(crate) decision: Outcome,
    pub(crate) degraded: bool,
    pub(crate) statuses: Vec<(&'static str, ObligationStatus)>,
    pub(crate) conflicts: Vec<String>,
    pub(crate) failure_signature: Option<String>,
    /// Set when the code is believed to disagree with docs/DESIGN.md §5 on this case.
    pub(crate) disagrees: Option<String>,
}

impl Case {
    pub(crate) fn new(name: impl Into<String>, why: impl Into<String>) -> Case {
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
    pub(crate) fn covers(mut self, tags: &[&str]) -> Case {
        self.covers.extend(tags.iter().map(|t| t.to_string()));
        self
    }
    pub(crate) fn obligations(mut self, o: Vec<PackageObligation>) -> Case {
        self.obligations = o;
        self
    }
    pub(crate) fn judges(mut self, a: Judge, b: Judge) -> Case {
        self.a = a;
        self.b = b;
        self
    }
    pub(crate) fn floor(mut self, passed: bool) -> Case {
        self.floor_passed = passed;
        self
    }
    pub(crate) fn independence(mut self, i: IndependenceChecks) -> Case {
        self.independence = i;
        self
    }
    pub(crate) fn expect(
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
    pub(crate) fn degraded(mut self) -> Case {
        self.degraded = true;
        self
    }
}

pub(crate) fn answered(v: Vec<Says>) -> Judge {
    Judge::Answered(v)
}

pub(crate) fn status_name(s: JudgeStatus) -> &'static str {
    s.as_str()
}
