//! The legacy adapter (`seal_core::adapt`): agent-loop Verdicts into run folders that validate and
//! read, refusals, and DECIDED evidence back into Verdicts, including end to end through
//! `seal judge` with a loopback judge.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use seal::cli::validate::validate_file;
use seal_core::adapt::{evidence_to_verdict, AdaptError};
use seal_core::canonical::{canonical_bytes, Hash};
use seal_core::contracts::Kind;
use seal_core::doc::{DecisionAction, Evidence, EvidenceMode, Genre, Phase};
use seal_core::validate::{validate_as, Report};
use seal_fs::adapt::{verdict_file_to_run_folder, verdict_to_run_folder};
use seal_fs::runfolder::RunFolder;

const LIMIT: u64 = 1 << 26;
const VERDICTS: [(&str, Genre); 3] = [
    ("accept", Genre::Puzzle),
    ("fix", Genre::Heritage),
    ("kill", Genre::SimBusiness),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn verdict_path(name: &str) -> PathBuf {
    root().join(format!("tests/data/verdicts/{name}.json"))
}

fn verdict_bytes(name: &str) -> Vec<u8> {
    std::fs::read(verdict_path(name)).unwrap()
}

fn verdict_value(name: &str) -> Value {
    serde_json::from_slice(&verdict_bytes(name)).unwrap()
}

fn decided(name: &str) -> Evidence {
    let bytes = std::fs::read(root().join(format!("tests/data/valid/{name}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn assert_valid(path: &Path) {
    match validate_file(path, LIMIT) {
        Report::Valid(_) => {}
        other => panic!("{}: {other:?}", path.display()),
    }
}

fn assert_verdict(v: &Value) {
    assert!(
        matches!(validate_as(Kind::Verdict, v), Report::Valid(_)),
        "{:?}\n{v:#}",
        validate_as(Kind::Verdict, v)
    );
}

fn with_legacy_extensions(mut e: Evidence, version: Option<Value>) -> Evidence {
    let x = &mut e.extensions.0;
    x.insert("_designId".into(), json!("c".repeat(64)));
    x.insert("_taskId".into(), json!(7001));
    x.insert(
        "_traceId".into(),
        json!("2b7e1516-28ae-4d2a-abf7-158809cf4f3c"),
    );
    if let Some(v) = version {
        x.insert("_versionId".into(), v);
    }
    e
}

#[test]
fn realistic_verdicts_adapt_into_folders_that_validate_and_read() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, genre) in VERDICTS {
        let out = tmp.path().join(name);
        let run = verdict_to_run_folder(&verdict_bytes(name), genre, &out)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let v = verdict_value(name);
        let design = v["designId"].as_str().unwrap();
        assert_eq!(
            run.as_str(),
            format!("legacy-{}-r{}", &design[..16], v["round"]),
            "{name}"
        );

        for file in ["header.json", "roll-1/proof-package.json"] {
            assert_valid(&out.join(file));
            // Canonical bytes: re-canonicalizing changes nothing.
            let bytes = std::fs::read(out.join(file)).unwrap();
            let parsed: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(canonical_bytes(&parsed).unwrap(), bytes, "{name} {file}");
        }
        let folder = RunFolder::read(&out, LIMIT).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(folder.run(), &run);
        assert_eq!(folder.rolls().len(), 1);
        assert!(folder.play_spec().is_none() && folder.blobs().is_empty());

        let h = &folder.header();
        assert_eq!(h.phase, Phase::Judging);
        assert_eq!(h.evidence_mode, EvidenceMode::LegacyAdapted);
        assert_eq!(h.genre, genre);
        assert_eq!(h.template_route, "_template-legacy");
        assert_eq!(h.proof_profile_id, "legacy.verdict");
        assert!(h.rolls.is_empty() && h.merge.is_none() && h.judge.is_none());
        assert!(h.actor.is_none());
        assert_eq!(h.environment["host"], "legacy-agent-loop");
        assert_eq!(h.repair.round as u64, v["round"].as_u64().unwrap());
        let task = match &v["taskId"] {
            Value::String(s) => s.clone(),
            n => n.to_string(),
        };
        assert_eq!(h.game_id, format!("task-{task}"));
        assert_eq!(h.task_binding_hash, Hash::of(task.as_bytes()));
        assert_eq!(h.acceptance_request_hash, Hash::of(design.as_bytes()));
        assert_eq!(h.artifact_hash, Hash::of(&canonical_bytes(&v).unwrap()));
        assert_eq!(h.brief_hash, Hash::of(folder.brief()));
        let x = &h.extensions.0;
        assert_eq!(x["_designId"], v["designId"]);
        assert_eq!(x["_taskId"], v["taskId"]);
        assert_eq!(x["_traceId"], v["evidence"]["traceId"]);
        assert_eq!(x["_promptVersions"], v["evidence"]["promptVersions"]);
        assert_eq!(x.get("_versionId"), v.get("versionId"));
        assert_eq!(x["_legacyVerdict"], v);

        // Floor: structure and runnable, passed = both.
        let checks: Vec<(&str, bool)> = h
            .floor
            .checks
            .iter()
            .map(|c| (c.id.as_str(), c.status == seal_core::doc::FloorStatus::Pass))
            .collect();
        let (s, r) = (
            v["structureOk"].as_bool().unwrap(),
            v["runnableOk"].as_bool().unwrap(),
        );
        assert_eq!(checks, [("structure", s), ("runnable", r)], "{name}");
        assert_eq!(h.floor.passed, s && r);

        // Obligations: core.loop-reached iff played, then one per finding.
        let played = !v["playReport"].is_null();
        let findings = v["findings"].as_array().unwrap();
        assert_eq!(
            h.proof_obligations.len(),
            findings.len() + usize::from(played)
        );
        assert_eq!(
            h.proof_obligations
                .iter()
                .any(|o| o.id == "core.loop-reached"),
            played
        );
        for o in h
            .proof_obligations
            .iter()
            .filter(|o| o.id.starts_with("finding."))
        {
            let p2 = o.id.starts_with("finding.p2-");
            assert_eq!(o.required, !p2, "{}", o.id);
            assert!(o
                .description
                .starts_with("No problem of this kind remains: "));
        }

        // Proof package: events are emitsCaptured, in order.
        let proof = folder.rolls()[0].package();
        let names: Vec<&str> = proof.events.iter().map(|e| e.name.as_str()).collect();
        let emits: Vec<&str> = v["playReport"]["emitsCaptured"]
            .as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(names, emits, "{name}");
        assert!(proof
            .events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq == i as u64));
        assert!(proof.actions.is_empty() && proof.frames.is_empty());
        assert_eq!(
            proof.actor_session_id,
            format!("legacy-{}", v["evidence"]["traceId"].as_str().unwrap())
        );
        assert_eq!(proof.floor, h.floor);

        // The brief never names the design or the expected outcome (it reaches the judges).
        let brief = String::from_utf8(folder.brief().to_vec()).unwrap();
        for secret in [&design[..16], task.as_str(), "accept", "kill", "P1", "P2"] {
            assert!(!brief.contains(secret), "{name}: {secret:?} in the brief");
        }
        for f in findings {
            assert!(brief.contains(f["issue"].as_str().unwrap()), "{name}");
        }
    }

    // The accept Verdict's game_end carries gameEnd in wire (snake_case) form.
    let accept = RunFolder::read(&tmp.path().join("accept"), LIMIT).unwrap();
    let proof = accept.rolls()[0].package();
    let end = proof.events.iter().find(|e| e.name == "game_end").unwrap();
    assert_eq!(end.data.get("completed"), Some(&json!(true)));
    assert_eq!(end.data.get("duration_ms"), Some(&json!(41870)));
    assert!(proof.first_play.core_loop_reached);
    assert_eq!(proof.first_play.core_loop_ms, Some(41870));
}

#[test]
fn seal_validate_accepts_every_adapted_document() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, genre) in VERDICTS {
        let out = tmp.path().join(name);
        verdict_file_to_run_folder(&verdict_path(name), genre, &out).unwrap();
        files.push(out.join("header.json"));
        files.push(out.join("roll-1/proof-package.json"));
        files.push(verdict_path(name));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(root())
        .arg("validate")
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn invalid_verdicts_are_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let accept = verdict_value("accept");
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();

    let mut bad_design = accept.clone();
    bad_design["designId"] = json!("3F9A1C0E");
    cases.push((
        "bad designId",
        serde_json::to_vec(&bad_design).unwrap(),
        "/designId",
    ));

    let mut no_version = accept.clone();
    no_version.as_object_mut().unwrap().remove("versionId");
    cases.push((
        "accept without versionId",
        serde_json::to_vec(&no_version).unwrap(),
        "versionId",
    ));

    let mut unknown = accept.clone();
    unknown["score"] = json!(97);
    cases.push((
        "unknown field",
        serde_json::to_vec(&unknown).unwrap(),
        "score",
    ));

    let mut accept_unplayed = accept.clone();
    accept_unplayed["playReport"] = Value::Null;
    cases.push((
        "accept without playReport",
        serde_json::to_vec(&accept_unplayed).unwrap(),
        "/playReport",
    ));

    let mut bad_reason = accept.clone();
    bad_reason["reasons"] = json!(["looks_good"]);
    cases.push((
        "reason outside the vocabulary",
        serde_json::to_vec(&bad_reason).unwrap(),
        "/reasons/0",
    ));

    let text = String::from_utf8(verdict_bytes("accept")).unwrap();
    let duplicated = text.replacen(
        "\"decision\": \"accept\",",
        "\"decision\": \"kill\", \"decision\": \"accept\",",
        1,
    );
    assert_ne!(duplicated, text);
    cases.push((
        "duplicate key",
        duplicated.into_bytes(),
        "duplicate key \"decision\"",
    ));
    cases.push(("not JSON", b"{\"designId\":".to_vec(), "not valid JSON"));

    for (what, bytes, needle) in cases {
        let out = tmp.path().join(what.replace(' ', "-"));
        let err = verdict_to_run_folder(&bytes, Genre::Puzzle, &out).unwrap_err();
        assert!(
            matches!(err, AdaptError::InvalidVerdict { .. }),
            "{what}: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("Verdict: not a valid agent-loop Verdict"),
            "{what}: {msg}"
        );
        assert!(
            msg.contains(needle),
            "{what}: {msg:?} should mention {needle:?}"
        );
        assert!(!out.exists(), "{what}: wrote {}", out.display());
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "no staging left behind"
    );

    // From a file, the error names the file.
    let file = tmp.path().join("verdict-with-extra.json");
    std::fs::write(&file, serde_json::to_vec(&unknown).unwrap()).unwrap();
    let err = verdict_file_to_run_folder(&file, Genre::Puzzle, &tmp.path().join("o")).unwrap_err();
    assert!(
        err.to_string().starts_with(&file.display().to_string()),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists());
}

#[test]
fn an_existing_non_empty_folder_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    verdict_to_run_folder(&verdict_bytes("fix"), Genre::Heritage, &out).unwrap();
    let before = std::fs::read(out.join("header.json")).unwrap();

    // Again, even with another Verdict: refused, the folder unchanged.
    for name in ["fix", "accept"] {
        let err = verdict_to_run_folder(&verdict_bytes(name), Genre::Heritage, &out).unwrap_err();
        assert!(matches!(err, AdaptError::OutFolder { .. }), "{err:?}");
        assert!(err.to_string().contains("not empty"), "{err}");
        assert!(
            err.to_string().contains(&out.display().to_string()),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(out.join("header.json")).unwrap(), before);

    // Any content counts; a file in the way too.
    let other = tmp.path().join("notes");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("README"), "keep me").unwrap();
    assert!(verdict_to_run_folder(&verdict_bytes("kill"), Genre::Puzzle, &other).is_err());
    assert_eq!(
        std::fs::read_to_string(other.join("README")).unwrap(),
        "keep me"
    );
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = verdict_to_run_folder(&verdict_bytes("kill"), Genre::Puzzle, &file).unwrap_err();
    assert!(err.to_string().contains("not a folder"), "{err}");

    // An empty folder is filled; a missing parent is created.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    verdict_to_run_folder(&verdict_bytes("kill"), Genre::Puzzle, &empty).unwrap();
    RunFolder::read(&empty, LIMIT).unwrap();
    let deep = tmp.path().join("a/b/run");
    verdict_to_run_folder(&verdict_bytes("kill"), Genre::Puzzle, &deep).unwrap();
    RunFolder::read(&deep, LIMIT).unwrap();
    let hidden: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "staging left behind: {hidden:?}");
}

#[test]
fn decided_pass_with_extensions_becomes_a_valid_accept_verdict() {
    let e = with_legacy_extensions(decided("decided-pass"), Some(json!("88001")));
    let v = evidence_to_verdict(&e).unwrap();
    assert_verdict(&v);
    assert_eq!(v["decision"], "accept");
    assert_eq!(v["reasons"], json!(["accept"]));
    assert_eq!(v["designId"], json!("c".repeat(64)));
    assert_eq!(v["taskId"], 7001);
    assert_eq!(v["versionId"], "88001");
    assert_eq!(v["round"], 0);
    assert_eq!(v["findings"], json!([]));
    // No structure/runnable checks in a native floor: both follow floor.passed.
    assert_eq!(v["structureOk"], true);
    assert_eq!(v["runnableOk"], true);
    let p = &v["playReport"];
    assert_eq!(p["loaded"], true);
    let taps = e.actions.iter().filter(|a| a.normalized.t == "tap").count();
    assert!(taps > 0);
    assert_eq!(p["clicks"], taps);
    let names: Vec<Value> = e.events.iter().map(|ev| json!(ev.name)).collect();
    assert_eq!(p["emitsCaptured"], Value::Array(names));
    let end = e.events.iter().find(|ev| ev.name == "game_end").unwrap();
    assert_eq!(p["gameEnd"]["completed"], end.data["completed"]);
    assert_eq!(p["gameEnd"]["durationMs"], end.data["duration_ms"]);
    assert_eq!(p["consoleErrors"], json!([]));
    assert_eq!(p["packageChecksumVerified"], false);
    assert_eq!(
        v["evidence"],
        json!({"traceId": "2b7e1516-28ae-4d2a-abf7-158809cf4f3c",
               "promptVersions": {"judge-a": "1.0.0", "judge-b": "1.0.0"}})
    );
}

#[test]
fn decided_reject_becomes_kill_with_the_failed_obligation_as_p1() {
    let e = with_legacy_extensions(decided("decided-fail-reject"), None);
    let v = evidence_to_verdict(&e).unwrap();
    assert_verdict(&v);
    assert_eq!(v["decision"], "kill");
    assert_eq!(v["reasons"], json!(["p1_residual_after_fix"]));
    assert_eq!(v["round"], 1);
    assert!(v.get("versionId").is_none());
    let core = e
        .proof_obligations
        .iter()
        .find(|o| o.id == "core.loop-reached")
        .unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["severity"], "P1");
    assert_eq!(findings[0]["issue"], json!(core.description));
    assert!(findings[0]["suggestion"]
        .as_str()
        .unwrap()
        .contains("failed"));
}

#[test]
fn a_retry_run_has_no_verdict() {
    for name in ["decided-postguard-failed", "decided-void-infra-error"] {
        let e = with_legacy_extensions(decided(name), Some(json!(1)));
        let err = evidence_to_verdict(&e).unwrap_err();
        assert!(matches!(err, AdaptError::Retry { .. }), "{name}: {err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("retry") && msg.contains("has no Verdict"),
            "{msg}"
        );
        assert!(msg.contains(&e.run_id), "{msg}");
    }
}

#[test]
fn missing_bindings_and_undecided_runs_are_refused() {
    // An accept needs _versionId.
    let e = with_legacy_extensions(decided("decided-pass"), None);
    let err = evidence_to_verdict(&e).unwrap_err();
    assert!(matches!(err, AdaptError::NoVersionId { .. }), "{err:?}");

    // A native run without the agent-loop bindings.
    let err = evidence_to_verdict(&decided("decided-pass")).unwrap_err();
    assert!(
        matches!(
            err,
            AdaptError::Extension {
                field: "_designId",
                ..
            }
        ),
        "{err:?}"
    );

    // A malformed binding is caught by the Verdict schema, named.
    let mut e = with_legacy_extensions(decided("decided-pass"), Some(json!(5)));
    e.extensions
        .0
        .insert("_designId".into(), json!("not-a-hash"));
    let err = evidence_to_verdict(&e).unwrap_err();
    assert!(matches!(err, AdaptError::InvalidResult { .. }), "{err:?}");
    assert!(err.to_string().contains("/designId"), "{err}");

    // A JUDGING header has no Verdict yet.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    verdict_to_run_folder(&verdict_bytes("accept"), Genre::Puzzle, &out).unwrap();
    let header = RunFolder::read(&out, LIMIT).unwrap().header().clone();
    let err = evidence_to_verdict(&header).unwrap_err();
    assert!(matches!(err, AdaptError::NotDecided { .. }), "{err:?}");
    assert!(err.to_string().contains("JUDGING"), "{err}");
}

/// Adapt, judge with loopback judges, decide, and back: each Verdict's decision and bindings
/// come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adapted_verdicts_are_judged_and_map_back_to_their_decision() {
    use seal_testkit::loopback::Loopback;
    use std::time::Duration;

    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    common::personas(&lb);
    let engine = common::engine_with(&lb, "memory://", &[]).await;
    let tmp = tempfile::tempdir().unwrap();
    for (name, genre) in VERDICTS {
        let original = verdict_value(name);
        let out = tmp.path().join(name);
        verdict_to_run_folder(&verdict_bytes(name), genre, &out).unwrap();
        let folder = RunFolder::read(&out, LIMIT).unwrap();
        let done = seal_engine::judge_run::judge(&engine, &folder)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ev = &done.evidence();
        assert_eq!(ev.evidence_mode, EvidenceMode::LegacyAdapted);
        let want_action = match name {
            "accept" => DecisionAction::Accept,
            "fix" => DecisionAction::Repair,
            _ => DecisionAction::Reject,
        };
        assert_eq!(
            ev.decision.as_ref().unwrap().action,
            want_action,
            "{name}: {:?}",
            ev.decision
        );

        // A sealed legacy run verifies like any other.
        let trusted = [engine.key().unwrap().public()];
        let report = seal_engine::verify::verify_run(
            engine.store(),
            folder.run(),
            &trusted,
            seal_log::DEFAULT_ORIGIN,
        )
        .await
        .unwrap();
        assert!(report.verified, "{name}: {:?}", report.problems);

        let back = evidence_to_verdict(ev).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_verdict(&back);
        for field in [
            "designId",
            "taskId",
            "versionId",
            "decision",
            "structureOk",
            "runnableOk",
            "round",
        ] {
            assert_eq!(back.get(field), original.get(field), "{name}: {field}");
        }
        assert_eq!(back["evidence"], original["evidence"], "{name}");
        let names = |v: &Value| v["playReport"]["emitsCaptured"].clone();
        assert_eq!(names(&back), names(&original), "{name}");
        assert_eq!(
            back["playReport"]["gameEnd"], original["playReport"]["gameEnd"],
            "{name}"
        );

        // Required findings the judges could not clear come back as P1 with their issue.
        let issues: Vec<&str> = back["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["issue"].as_str().unwrap())
            .collect();
        for f in original["findings"].as_array().unwrap() {
            if f["severity"] != "P2" {
                assert!(
                    issues.contains(&f["issue"].as_str().unwrap()),
                    "{name}: {issues:?}"
                );
            }
        }
        if name == "accept" {
            assert!(issues.is_empty(), "{issues:?}");
        }
    }
}
