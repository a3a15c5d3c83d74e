//! The tamper suite (docs/DESIGN.md §9, security): on copies of every sealed fixture run, damage every
//! kind of stored object (flip a byte in the middle, truncate to half, delete) and attack the
//! structure (swap judge A/B, swap rolls, edit the outcome and re-sign with an untrusted key,
//! copy a valid seal onto another run, rename a run folder to another runId, edit any field of
//! the submitted header). `seal verify` must say "not verified", naming the right check and the
//! object at fault. No mutation may pass; an untouched copy must verify.
//!
//! The big matrix calls the library (`seal_engine::verify::verify_run` on a store opened on the
//! copy), in parallel; a representative subset runs the real binary to pin the exit codes and
//! the `--json` report, and checks that the binary and the library report the same problems.
//!
//! A mutation that passes verification is a bug in `src/`, never a reason to weaken this file:
//! the matrix test fails on it, naming the mutation, the run, the object and what verify said.
//!
//! The matrix is printed to stderr on every run (mutation x run -> the check that caught it).

use crate::common;

use common::*;
use seal_core::canonical::{canonical_bytes, Hash};
use seal_core::doc::Evidence;
use seal_core::ids::RunId;
use seal_core::sealing::{self, Envelope, PublicKey};
use seal_core::vocab::AuditCheck;
use seal_engine::audit::Problem;
use seal_engine::verify;
use seal_store::Store;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The object kinds the issue names (and the other objects of a sealed run folder), each of
/// which must be damaged in at least one run.
const REQUIRED_KINDS: [&str; 18] = [
    "frame",
    "proof-package",
    "judge-package",
    "request",
    "raw",
    "meta",
    "parsed",
    "normalized",
    "consensus",
    "cost-reservation",
    "image-manifest",
    "evidence",
    "seal",
    "judging",
    "header",
    "brief",
    "roll-record",
    "play-spec",
];

/// What is done to a copy of the store before verifying.
#[derive(Clone, Debug)]
pub(crate) enum Apply {
    /// Flip one bit of the byte in the middle.
    Flip(String),
    /// Keep the first half.
    Truncate(String),
    Delete(String),
    /// Flip one bit of the byte at this offset.
    FlipAt(String, usize),
    /// Exchange two folders.
    SwapDirs(String, String),
    /// Change `outcome` in evidence.json and re-sign with a fresh (untrusted) key; optionally
    /// keep the original trusted signature in the envelope too.
    ResignOutcome {
        keep_trusted_sig: bool,
    },
    /// Change `outcome` in evidence.json, keep the original seal.
    EditOutcome,
    /// Put another run's seal.dsse.json (and with `evidence`, its evidence.json) in this run.
    CopySeal {
        from: String,
        evidence: bool,
    },
    /// Move the run folder to `runs/<to>`.
    Rename {
        to: String,
    },
    /// Set a JSON pointer of a stored document to a value (written back canonical).
    EditJson(String, String, Value),
    /// Nothing: the control.
    Nothing,
}

#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// Matrix row, e.g. "flip raw".
    pub(crate) row: String,
    /// The fixture run that is damaged.
    pub(crate) run: String,
    /// The object or folder damaged (for messages).
    pub(crate) target: String,
    pub(crate) apply: Apply,
    /// The run id given to verify.
    pub(crate) verify_as: String,
    /// Acceptable checks; a problem with one of them must name `object` (substring).
    pub(crate) checks: Vec<AuditCheck>,
    pub(crate) object: String,
}

#[derive(Clone, Debug)]
enum Verdict {
    /// Not verified, and a problem names an expected check and the object.
    Caught(AuditCheck),
    /// Verified although damaged: a gap.
    Passed,
    /// Not verified, but no problem names the expected check and object.
    Wrong(Vec<Problem>),
    /// The store could not be read at all.
    Error(String),
    /// The control verified.
    Clean,
}

/// One fixture run: its files (store keys) and the frames it references.
pub(crate) struct FixtureRun {
    pub(crate) id: String,
    files: Vec<String>,
    frames: Vec<String>,
    rolls: Vec<String>,
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            list_files(root, &e.path(), out);
        } else {
            let rel = e.path().strip_prefix(root).unwrap().to_owned();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

pub(crate) fn fixture_runs() -> Vec<FixtureRun> {
    let root = fixture_store_dir();
    fixture_run_ids()
        .into_iter()
        .map(|id| {
            let mut files = Vec::new();
            list_files(&root, &root.join("runs").join(&id), &mut files);
            files.sort();
            let mut frames = BTreeSet::new();
            let mut rolls = BTreeSet::new();
            for f in &files {
                if f.ends_with("/proof-package.json") {
                    let v: Value =
                        serde_json::from_slice(&std::fs::read(root.join(f)).unwrap()).unwrap();
                    for fr in v["frames"].as_array().unwrap() {
                        frames.insert(fr["ref"].as_str().unwrap().to_string());
                    }
                }
                if let Some(r) = f.split('/').nth(2).filter(|s| s.starts_with("roll-")) {
                    rolls.insert(r.to_string());
                }
            }
            FixtureRun {
                id,
                files,
                frames: frames.into_iter().collect(),
                rolls: rolls.into_iter().collect(),
            }
        })
        .collect()
}

/// The kind of a stored object, from its key. Unknown objects stop the suite: a new kind of
/// object must be added to the matrix, not skipped.
fn kind_of(key: &str) -> &'static str {
    if key.starts_with("cas/") {
        return "frame";
    }
    match key.rsplit('/').next().unwrap() {
        "proof-package.json" => "proof-package",
        "judge-package.json" => "judge-package",
        "image-manifest.json" => "image-manifest",
        "cost-reservation.json" => "cost-reservation",
        "request.json" => "request",
        "raw.json" => "raw",
        "meta.json" => "meta",
        "parsed.json" => "parsed",
        "normalized.json" => "normalized",
        "consensus.json" => "consensus",
        "roll.json" => "roll-record",
        "evidence.json" => "evidence",
        "seal.dsse.json" => "seal",
        "judging.json" => "judging",
        "header.json" => "header",
        "brief.md" => "brief",
        "play-spec.json" => "play-spec",
        other => panic!("unknown stored object {other} ({key}): add its kind to the tamper suite"),
    }
}

const KIND_ORDER: [&str; 18] = [
    "frame",
    "proof-package",
    "judge-package",
    "image-manifest",
    "cost-reservation",
    "request",
    "raw",
    "meta",
    "parsed",
    "normalized",
    "consensus",
    "roll-record",
    "evidence",
    "seal",
    "judging",
    "header",
    "brief",
    "play-spec",
];

/// The checks that must catch damage to an object of this kind.
fn expected_checks(kind: &str, mutation: &str) -> Vec<AuditCheck> {
    match (kind, mutation) {
        ("evidence", "delete") => vec![AuditCheck::Evidence],
        ("evidence", _) => vec![AuditCheck::SubjectDigest],
        ("seal", _) => vec![AuditCheck::Signature],
        ("judging", _) => vec![AuditCheck::JudgingSnapshot],
        // The header is compared field by field with the evidence.
        ("header", _) => vec![AuditCheck::Refs, AuditCheck::Evidence],
        _ => vec![AuditCheck::Refs],
    }
}

fn short(check: AuditCheck) -> &'static str {
    match check.as_str() {
        "refs_resolve" => "refs",
        "schema_valid" => "schema",
        "normalization_recomputes" => "norm",
        "consensus_recomputes" => "consensus",
        "independence" => "indep",
        "blinding" => "blind",
        "cost_within_budget" => "cost",
        "source_roll_mirrored" => "mirror",
        "invariants" => "invar",
        "signature" => "sig",
        "subject_digest" => "subject",
        "predicate" => "predicate",
        "evidence" => "evidence",
        "run_id" => "run_id",
        "judging_snapshot" => "snapshot",
        other => other,
    }
}

fn other_run(runs: &[FixtureRun], i: usize) -> &str {
    &runs[(i + 1) % runs.len()].id
}

/// Runs whose header gets a flip in every field and a schema-valid edit of every field (the
/// headers of all fixtures have the same shape: these cover one roll, two rolls, a replay).
const HEADER_SWEEP_RUNS: [&str; 3] = [
    "run-heritage-0017-disputed-font",
    "run-narrative-0010-pass",
    "run-narrative-0010-pass.replay-1",
];

/// Every case of the big matrix.
pub(crate) fn matrix(runs: &[FixtureRun]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let run = &r.id;
        cases.push(Case {
            row: "control (untouched copy)".into(),
            run: run.clone(),
            target: "-".into(),
            apply: Apply::Nothing,
            verify_as: run.clone(),
            checks: vec![],
            object: String::new(),
        });
        let mut objects: Vec<&String> = r.frames.iter().chain(&r.files).collect();
        objects.sort_by_key(|k| KIND_ORDER.iter().position(|x| *x == kind_of(k)));
        for key in objects {
            let kind = kind_of(key);
            for (m, apply) in [
                ("flip", Apply::Flip(key.clone())),
                ("truncate", Apply::Truncate(key.clone())),
                ("delete", Apply::Delete(key.clone())),
            ] {
                cases.push(Case {
                    row: format!("{m} {kind}"),
                    run: run.clone(),
                    target: key.clone(),
                    apply,
                    verify_as: run.clone(),
                    checks: expected_checks(kind, m),
                    object: key.clone(),
                });
            }
        }
        for roll in &r.rolls {
            let dir = format!("runs/{run}/{roll}");
            cases.push(Case {
                row: "swap judge-a/judge-b".into(),
                run: run.clone(),
                target: dir.clone(),
                apply: Apply::SwapDirs(format!("{dir}/judge-a"), format!("{dir}/judge-b")),
                verify_as: run.clone(),
                checks: vec![
                    AuditCheck::Refs,
                    AuditCheck::Normalization,
                    AuditCheck::Independence,
                ],
                object: format!("{dir}/judge-"),
            });
        }
        if r.rolls.len() >= 2 {
            cases.push(Case {
                row: "swap roll-1/roll-2".into(),
                run: run.clone(),
                target: format!("runs/{run}/roll-1 <-> roll-2"),
                apply: Apply::SwapDirs(format!("runs/{run}/roll-1"), format!("runs/{run}/roll-2")),
                verify_as: run.clone(),
                checks: vec![AuditCheck::Refs],
                object: format!("runs/{run}/roll-"),
            });
        }
        let seal_key = format!("runs/{run}/seal.dsse.json");
        let ev_key = format!("runs/{run}/evidence.json");
        for (row, keep) in [
            ("edit outcome, re-sign untrusted", false),
            ("edit outcome, re-sign untrusted + old sig", true),
        ] {
            cases.push(Case {
                row: row.into(),
                run: run.clone(),
                target: ev_key.clone(),
                apply: Apply::ResignOutcome {
                    keep_trusted_sig: keep,
                },
                verify_as: run.clone(),
                checks: vec![AuditCheck::Signature],
                object: seal_key.clone(),
            });
        }
        cases.push(Case {
            row: "edit outcome, keep seal".into(),
            run: run.clone(),
            target: ev_key.clone(),
            apply: Apply::EditOutcome,
            verify_as: run.clone(),
            checks: vec![AuditCheck::SubjectDigest],
            object: ev_key.clone(),
        });
        let other = other_run(runs, i).to_string();
        cases.push(Case {
            row: "copy another run's seal".into(),
            run: run.clone(),
            target: format!("{seal_key} <- {other}"),
            apply: Apply::CopySeal {
                from: other.clone(),
                evidence: false,
            },
            verify_as: run.clone(),
            checks: vec![AuditCheck::SubjectDigest],
            object: seal_key.clone(),
        });
        cases.push(Case {
            row: "copy another run's evidence+seal".into(),
            run: run.clone(),
            target: format!("{ev_key} + seal <- {other}"),
            apply: Apply::CopySeal {
                from: other.clone(),
                evidence: true,
            },
            verify_as: run.clone(),
            checks: vec![AuditCheck::SubjectDigest, AuditCheck::RunId],
            object: format!("runs/{run}/"),
        });
        for (row, to) in [
            ("rename folder to a new runId", format!("{run}.renamed")),
            ("rename folder to another run's id", other.clone()),
        ] {
            cases.push(Case {
                row: row.into(),
                run: run.clone(),
                target: format!("runs/{run} -> runs/{to}"),
                apply: Apply::Rename { to: to.clone() },
                verify_as: to.clone(),
                checks: vec![AuditCheck::RunId, AuditCheck::SubjectDigest],
                object: format!("runs/{to}/"),
            });
        }
        if HEADER_SWEEP_RUNS.contains(&run.as_str()) {
            cases.extend(header_field_cases(run));
            cases.extend(header_edit_cases(run));
        }
    }
    cases
}

/// One case per top-level field of header.json: flip one bit of a letter or digit in the middle
/// of that field (the header is not content-addressed, so each field must be bound by a
/// comparison with the sealed evidence).
fn header_field_cases(run: &str) -> Vec<Case> {
    let key = format!("runs/{run}/header.json");
    let bytes = std::fs::read(fixture_store_dir().join(&key)).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let obj = v.as_object().unwrap();
    let mut rebuilt = b"{".to_vec();
    let mut spans = Vec::new();
    for (n, (k, val)) in obj.iter().enumerate() {
        if n > 0 {
            rebuilt.push(b',');
        }
        rebuilt.extend(canonical_bytes(&Value::String(k.clone())).unwrap());
        rebuilt.push(b':');
        let start = rebuilt.len();
        rebuilt.extend(canonical_bytes(val).unwrap());
        spans.push((k.clone(), start, rebuilt.len()));
    }
    rebuilt.push(b'}');
    assert_eq!(rebuilt, bytes, "{key} is not stored as canonical JSON");
    let mut cases = Vec::new();
    for (field, start, end) in spans {
        // Letters and digits inside strings, digits of numbers: the result is still JSON.
        let mut candidates = Vec::new();
        let (mut in_str, mut escaped) = (false, false);
        for (i, &b) in bytes.iter().enumerate().take(end).skip(start) {
            if in_str {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_str = false;
                } else if b.is_ascii_alphanumeric() {
                    candidates.push(i);
                }
            } else if b == b'"' {
                in_str = true;
            } else if b.is_ascii_digit() {
                candidates.push(i);
            }
        }
        let Some(&offset) = candidates.get(candidates.len() / 2) else {
            continue; // null, [], true, false: nothing to flip that stays JSON.
        };
        cases.push(Case {
            row: format!("flip header.{field}"),
            run: run.to_string(),
            target: format!("{key} @{offset} ({field})"),
            apply: Apply::FlipAt(key.clone(), offset),
            verify_as: run.to_string(),
            checks: vec![
                AuditCheck::Refs,
                AuditCheck::Evidence,
                AuditCheck::Cost,
                AuditCheck::SchemaValid,
            ],
            object: key.clone(),
        });
    }
    cases
}

/// Schema-valid edits of header.json, one per field that flipping cannot change without
/// breaking the JSON (enums, booleans, empty arrays, nested keys): every field the submitted
/// header states about the run must be bound to the sealed evidence.
fn header_edit_cases(run: &str) -> Vec<Case> {
    let key = format!("runs/{run}/header.json");
    let h: Value =
        serde_json::from_slice(&std::fs::read(fixture_store_dir().join(&key)).unwrap()).unwrap();
    let other = |v: &Value, a: &str, b: &str| Value::String(if v == a { b } else { a }.into());
    let edits: Vec<(&str, Value)> = vec![
        ("/schemaVersion", Value::String("playtest/2".into())),
        ("/genre", other(&h["genre"], "puzzle", "narrative")),
        (
            "/acceptanceMode",
            other(&h["acceptanceMode"], "v3_shadow", "v3"),
        ),
        (
            "/evidenceMode",
            other(&h["evidenceMode"], "legacy-adapted", "native"),
        ),
        ("/phase", Value::String("DECIDED".into())),
        ("/proofProfileId", Value::String("edited.default".into())),
        ("/proofRegistryVersion", Value::String("1999.1.1".into())),
        (
            "/environment/host",
            Value::String("someone-elses-host".into()),
        ),
        ("/actor/model", Value::String("another-actor-model".into())),
        ("/floor/passed", Value::Bool(h["floor"]["passed"] != true)),
        ("/firstPlay/thresholdMs", serde_json::json!(1234)),
        ("/briefRuleMatches", serde_json::json!(["edited"])),
        (
            "/events",
            serde_json::json!([{"data": {}, "name": "edited", "seq": 0, "tMs": 0}]),
        ),
        ("/sourceRollId", Value::String("roll-1".into())),
        ("/costRmb", serde_json::json!(1.0)),
        (
            "/_edited",
            Value::String("an extension field added later".into()),
        ),
    ];
    edits
        .into_iter()
        .map(|(pointer, value)| Case {
            row: format!("edit header{pointer}"),
            run: run.to_string(),
            target: format!("{key} {pointer} = {value}"),
            apply: Apply::EditJson(key.clone(), pointer.to_string(), value),
            verify_as: run.to_string(),
            checks: vec![
                AuditCheck::Refs,
                AuditCheck::Evidence,
                AuditCheck::SchemaValid,
                AuditCheck::Cost,
            ],
            object: key.clone(),
        })
        .collect()
}

pub(crate) fn rewrite(path: &Path, bytes: &[u8]) {
    // A fresh file: nothing of the copied file (mode, links) matters.
    let _ = std::fs::remove_file(path);
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

pub(crate) fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Copies what verifying `run` needs (its folder and its frames) into `root`.
///
/// Files are hard links where the file system allows (a thousand copies stay cheap), so every
/// change to a file goes through [`rewrite`] (a new file, never a write into the shared one)
/// or a removal; [`fixture_digest`] proves afterwards that the fixtures were not touched.
fn copy_run(root: &Path, run: &FixtureRun) {
    let src = fixture_store_dir();
    let prefix = format!("runs/{}/", run.id);
    for f in run.frames.iter().chain(&run.files) {
        debug_assert!(f.starts_with("cas/") || f.starts_with(&prefix));
        let to = root.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if std::fs::hard_link(src.join(f), &to).is_err() {
            std::fs::copy(src.join(f), &to).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }
    // The transparency log of the whole fixture store: `seal verify` proves the run's inclusion.
    let mut log = Vec::new();
    list_files(&src, &src.join("log"), &mut log);
    for f in log {
        let to = root.join(&f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if std::fs::hard_link(src.join(&f), &to).is_err() {
            std::fs::copy(src.join(&f), &to).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }
}

/// sha256 over every fixture file's path and bytes.
fn fixture_digest() -> Hash {
    let root = fixture_store_dir();
    let mut files = Vec::new();
    list_files(&root, &root, &mut files);
    files.sort();
    let mut all = Vec::new();
    for f in files {
        all.extend(f.as_bytes());
        all.push(0);
        all.extend(Hash::of(&read(&root.join(&f))).as_str().as_bytes());
        all.push(b'\n');
    }
    Hash::of(&all)
}

fn changed_outcome(ev: &Value) -> &'static str {
    if ev["outcome"] == "pass" {
        "fail"
    } else {
        "pass"
    }
}

/// Evidence with another outcome, as canonical bytes.
fn edited_evidence(root: &Path, run: &str) -> Vec<u8> {
    let path = root.join(format!("runs/{run}/evidence.json"));
    let mut ev: Value = serde_json::from_slice(&read(&path)).unwrap();
    ev["outcome"] = Value::String(changed_outcome(&ev).into());
    let bytes = canonical_bytes(&ev).unwrap();
    rewrite(&path, &bytes);
    bytes
}

pub(crate) fn apply(root: &Path, run: &str, a: &Apply) {
    match a {
        Apply::Nothing => {}
        Apply::Flip(key) => {
            let p = root.join(key);
            let mut b = read(&p);
            let i = b.len() / 2;
            b[i] ^= 0x01;
            rewrite(&p, &b);
        }
        Apply::FlipAt(key, i) => {
            let p = root.join(key);
            let mut b = read(&p);
            b[*i] ^= 0x01;
            rewrite(&p, &b);
        }
        Apply::Truncate(key) => {
            let p = root.join(key);
            let b = read(&p);
            rewrite(&p, &b[..b.len() / 2]);
        }
        Apply::Delete(key) => std::fs::remove_file(root.join(key)).unwrap(),
        Apply::SwapDirs(x, y) => {
            let (x, y) = (root.join(x), root.join(y));
            let tmp = x.with_extension("swap");
            std::fs::rename(&x, &tmp).unwrap();
            std::fs::rename(&y, &x).unwrap();
            std::fs::rename(&tmp, &y).unwrap();
        }
        Apply::EditOutcome => {
            edited_evidence(root, run);
        }
        Apply::ResignOutcome { keep_trusted_sig } => {
            let bytes = edited_evidence(root, run);
            let ev: Evidence = serde_json::from_slice(&bytes).unwrap();
            let id = RunId::parse(run).unwrap();
            let statement = seal_core::sealing::statement_for(&id, &ev, &Hash::of(&bytes)).unwrap();
            let untrusted = seal_fs::keys::generate_signing_key();
            let mut env = sealing::sign(&untrusted, &statement).unwrap();
            let seal_path = root.join(format!("runs/{run}/seal.dsse.json"));
            if *keep_trusted_sig {
                let old: Envelope = serde_json::from_slice(&read(&seal_path)).unwrap();
                env.signatures.extend(old.signatures);
            }
            rewrite(&seal_path, &canonical_bytes(&env).unwrap());
        }
        Apply::CopySeal { from, evidence } => {
            let src = fixture_store_dir();
            let mut files = vec!["seal.dsse.json"];
            if *evidence {
                files.push("evidence.json");
            }
            for f in files {
                let b = read(&src.join(format!("runs/{from}/{f}")));
                rewrite(&root.join(format!("runs/{run}/{f}")), &b);
            }
        }
        Apply::EditJson(key, pointer, value) => {
            let p = root.join(key);
            let mut doc: Value = serde_json::from_slice(&read(&p)).unwrap();
            let (parent, field) = pointer.rsplit_once('/').unwrap();
            let slot = doc
                .pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .unwrap_or_else(|| panic!("{key}: no object at {parent:?}"));
            slot.insert(field.to_string(), value.clone());
            rewrite(&p, &canonical_bytes(&doc).unwrap());
        }
        Apply::Rename { to } => {
            std::fs::rename(
                root.join(format!("runs/{run}")),
                root.join(format!("runs/{to}")),
            )
            .unwrap();
        }
    }
}

pub(crate) fn trusted() -> Vec<PublicKey> {
    vec![seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap()]
}

/// Prepares a damaged copy for a case: (temp folder, store root).
pub(crate) fn prepare(case: &Case, run: &FixtureRun) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    copy_run(&root, run);
    apply(&root, &case.run, &case.apply);
    (dir, root)
}

fn judge(case: &Case, report: &verify::RunReport) -> Verdict {
    assert_eq!(
        report.verified,
        report.problems.is_empty(),
        "verified iff no problem"
    );
    if matches!(case.apply, Apply::Nothing) {
        return if report.verified {
            Verdict::Clean
        } else {
            Verdict::Wrong(report.problems.clone())
        };
    }
    if report.verified {
        return Verdict::Passed;
    }
    match report
        .problems
        .iter()
        .find(|p| case.checks.contains(&p.check) && p.object.contains(&case.object))
    {
        Some(p) => Verdict::Caught(p.check),
        None => Verdict::Wrong(report.problems.clone()),
    }
}

async fn run_case(case: Case, run: Arc<FixtureRun>, trusted: Arc<Vec<PublicKey>>) -> Verdict {
    let (_dir, root) = prepare(&case, &run);
    let store = match Store::open(&file_url(&root)).await {
        Ok(s) => s,
        Err(e) => return Verdict::Error(e.to_string()),
    };
    let id = RunId::parse(&case.verify_as).unwrap();
    match verify::verify_run(&store, &id, &trusted, seal_log::DEFAULT_ORIGIN).await {
        Ok(report) => judge(&case, &report),
        Err(e) => Verdict::Error(e.to_string()),
    }
}

fn render_matrix(runs: &[FixtureRun], results: &[(Case, Verdict)]) -> String {
    // row -> run -> verdict cells
    let mut rows: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (case, v) in results {
        if !rows.contains(&case.row) {
            rows.push(case.row.clone());
        }
        let cell = match v {
            Verdict::Caught(c) => short(*c).to_string(),
            Verdict::Clean => "ok".into(),
            Verdict::Passed => "PASSED!".into(),
            Verdict::Wrong(_) => "WRONG!".into(),
            Verdict::Error(_) => "ERROR!".into(),
        };
        cells
            .entry((case.row.clone(), case.run.clone()))
            .or_default()
            .push(cell);
    }
    let width = 13;
    let label = rows.iter().map(|r| r.len()).max().unwrap_or(10) + 1;
    let mut out = String::new();
    out.push_str(
        "tamper matrix: mutation x run -> the check that caught it (xN: N objects; \
         gap:passed = verified anyway, gap:object = wrong object named; see KNOWN_GAPS)\n",
    );
    for (i, r) in runs.iter().enumerate() {
        out.push_str(&format!("  R{i} = {}\n", r.id));
    }
    out.push_str(&format!("{:label$}", "mutation"));
    for i in 0..runs.len() {
        out.push_str(&format!("{:>width$}", format!("R{i}")));
    }
    out.push('\n');
    for row in &rows {
        out.push_str(&format!("{row:label$}"));
        for r in runs {
            let text = match cells.get(&(row.clone(), r.id.clone())) {
                None => "-".to_string(),
                Some(v) => {
                    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
                    for c in v {
                        *counts.entry(c.as_str()).or_default() += 1;
                    }
                    counts
                        .iter()
                        .map(|(c, n)| {
                            if *n > 1 {
                                format!("{c}x{n}")
                            } else {
                                c.to_string()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("+")
                }
            };
            out.push_str(&format!("{text:>width$}"));
        }
        out.push('\n');
    }
    out
}

pub(crate) fn describe_problems(ps: &[impl std::fmt::Display]) -> String {
    ps.iter()
        .map(|p| format!("      {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs cases through the library, a few at a time.
fn run_cases(cases: Vec<Case>) -> Vec<(Case, Verdict)> {
    let by_id: BTreeMap<String, Arc<FixtureRun>> = fixture_runs()
        .into_iter()
        .map(|r| (r.id.clone(), Arc::new(r)))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let trusted = Arc::new(trusted());
    rt.block_on(async {
        let sem = Arc::new(tokio::sync::Semaphore::new(4));
        let mut handles = Vec::new();
        for case in cases {
            let run = by_id[&case.run].clone();
            let trusted = trusted.clone();
            let sem = sem.clone();
            handles.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await.unwrap();
                let v = run_case(case.clone(), run, trusted).await;
                (case, v)
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    })
}

fn what(case: &Case) -> String {
    format!(
        "[{}] run {} object {} (verify {})",
        case.row, case.run, case.target, case.verify_as
    )
}

#[test]
fn every_mutation_of_every_sealed_fixture_is_caught_by_verify() {
    let started = Instant::now();
    let runs = fixture_runs();
    assert!(runs.len() >= 10, "expected the 10 sealed fixture runs");
    let before = fixture_digest();
    let cases = matrix(&runs);
    let kinds: BTreeSet<&str> = cases
        .iter()
        .filter_map(|c| c.row.strip_prefix("flip "))
        .collect();
    for k in REQUIRED_KINDS {
        assert!(kinds.contains(k), "no fixture has an object of kind {k}");
    }
    assert!(cases.iter().any(|c| c.row == "swap roll-1/roll-2"));
    let results = run_cases(cases);

    let mutations = results
        .iter()
        .filter(|(c, _)| !matches!(c.apply, Apply::Nothing))
        .count();
    let summary = format!(
        "{}{mutations} mutations over {} runs (+{} controls) in {:.1?}\n",
        render_matrix(&runs, &results),
        runs.len(),
        results.len() - mutations,
        started.elapsed(),
    );
    // Straight to stderr, past the harness's capture: the matrix belongs in every CI log.
    {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(summary.as_bytes());
    }

    assert_eq!(
        fixture_digest(),
        before,
        "the committed fixtures changed while the suite ran"
    );
    let mut failures = Vec::new();
    for (case, v) in &results {
        let what = what(case);
        match v {
            Verdict::Caught(_) | Verdict::Clean => {}
            Verdict::Passed => failures.push(format!(
                "GAP {what}: verify says VERIFIED (exit 0) after the mutation"
            )),
            Verdict::Wrong(ps) if matches!(case.apply, Apply::Nothing) => failures.push(format!(
                "CONTROL {what}: the untouched copy does not verify:\n{}",
                describe_problems(ps)
            )),
            Verdict::Wrong(ps) => failures.push(format!(
                "WRONG REPORT {what}: not verified, but no problem with check {:?} names {}:\n{}",
                case.checks,
                case.object,
                describe_problems(ps)
            )),
            Verdict::Error(e) => failures.push(format!("ERROR {what}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} tamper cases failed:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
}
