//! The tamper suite, continued: the real binary on a representative subset (exit codes, the --json report, the same problems as the library).

use super::tamper::*;
use super::tamper_log::*;
use crate::common;
use common::*;
use seal_core::canonical::{canonical_bytes, Hash};
use seal_core::doc::Evidence;
use seal_core::ids::RunId;
use seal_core::sealing::{self};
use seal_engine::verify;
use seal_store::Store;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// The binary, on a representative subset.

/// Runs `seal verify`: (exit code, stdout, stderr).
pub(crate) fn seal_verify(
    cwd: &Path,
    root: &Path,
    runs: &[&str],
    extra: &[&str],
) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(cwd)
        .arg("verify")
        .args(runs)
        .arg("--store")
        .arg(file_url(root))
        .arg("--trust")
        .arg(fixture_trust_pem())
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "seal verify panicked: {stderr}"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr.into_owned(),
    )
}

/// `(check, object)` pairs of a `--json` report's one run.
fn json_problems(stdout: &str) -> (Value, Vec<(String, String)>) {
    // NDJSON: the run's report, then the summary line.
    let first = stdout.lines().next().unwrap_or_default();
    let report: Value = serde_json::from_str(first)
        .unwrap_or_else(|e| panic!("--json output is not NDJSON ({e}): {stdout}"));
    let ps = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["check"].as_str().unwrap().to_string(),
                p["object"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (report, ps)
}

#[test]
fn the_binary_exits_1_naming_the_check_and_object() {
    let started = Instant::now();
    let runs = fixture_runs();
    let all = matrix(&runs);
    // The run with two rolls: the first object of every kind under each of flip, truncate and
    // delete, and every structural attack (known gaps are pinned by the library test).
    let mut seen = BTreeSet::new();
    let subset: Vec<&Case> = all
        .iter()
        .filter(|c| c.run == "run-heritage-0017-disputed-font")
        .filter(|c| !c.row.starts_with("flip header.") && !c.row.starts_with("edit header"))
        .filter(|c| seen.insert(c.row.clone()))
        .collect();
    assert!(subset.len() > 50, "{}", subset.len());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let trusted = trusted();
    let mut failures = Vec::new();
    for case in &subset {
        let run = runs.iter().find(|r| r.id == case.run).unwrap();
        let (dir, root) = prepare(case, run);
        let (code, out, err) = seal_verify(dir.path(), &root, &[&case.verify_as], &["--json"]);
        let what = format!("[{}] run {} object {}", case.row, case.run, case.target);
        let (report, ps) = json_problems(&out);
        // The binary and the library must report the same problems.
        let lib = rt.block_on(async {
            let store = Store::open(&file_url(&root)).await.unwrap();
            verify::verify_run(
                &store,
                &RunId::parse(&case.verify_as).unwrap(),
                &trusted,
                seal_log::DEFAULT_ORIGIN,
            )
            .await
            .unwrap()
        });
        let lib_ps: Vec<(String, String)> = lib
            .problems
            .iter()
            .map(|p| (p.check.to_string(), p.object.clone()))
            .collect();
        if ps != lib_ps {
            failures.push(format!(
                "{what}: the binary reports {ps:?}, the library {lib_ps:?}"
            ));
        }
        if matches!(case.apply, Apply::Nothing) {
            if code != Some(0) || report["verified"] != true {
                failures.push(format!("{what}: control exit {code:?}: {out}{err}"));
            }
            continue;
        }
        if code != Some(1) || report["verified"] != false {
            failures.push(format!("{what}: exit {code:?}, expected 1: {out}{err}"));
            continue;
        }
        if !ps
            .iter()
            .any(|(c, o)| case.checks.iter().any(|k| k.as_str() == c) && o.contains(&case.object))
        {
            failures.push(format!(
                "{what}: no problem with check {:?} naming {}: {ps:?}",
                case.checks, case.object
            ));
        }
    }
    println!(
        "binary: {} cases in {:.1?}",
        subset.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_binary_verifies_every_untouched_fixture_and_prints_readable_reports() {
    let (dir, root) = copy_fixture_store();
    let (code, out, _) = seal_verify(dir.path(), &root, &["--all"], &["--json"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(v["notVerified"], 0, "{out}");
    assert_eq!(v["verified"], fixture_run_ids().len(), "{out}");

    // Human output after damage: NOT VERIFIED, the check id and the object key, exit 1.
    let key = "runs/run-trpg-0021-pass/roll-1/judge-b/attempt-1/raw.json";
    apply(&root, "run-trpg-0021-pass", &Apply::Flip(key.into()));
    let (code, out, _) = seal_verify(dir.path(), &root, &["run-trpg-0021-pass"], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("NOT VERIFIED  run-trpg-0021-pass"), "{out}");
    assert!(out.contains(&format!("[refs_resolve] {key}")), "{out}");
    assert!(out.contains("0 verified, 1 not verified"), "{out}");

    // --all over a store with one damaged run: exit 1, the others still verified.
    let (code, out, _) = seal_verify(dir.path(), &root, &["--all"], &["--json"]);
    assert_eq!(code, Some(1), "{out}");
    let v: Value = serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(v["notVerified"], 1, "{out}");

    // Could not run (exit 2): no such run; no trusted key.
    let (code, out, err) = seal_verify(dir.path(), &root, &["run-does-not-exist"], &[]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("no run run-does-not-exist"), "{err}");
    let out2 = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir.path())
        .args(["verify", "run-trpg-0021-pass", "--store"])
        .arg(file_url(&root))
        .output()
        .unwrap();
    assert_eq!(out2.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out2.stderr).contains("no trusted public key"));

    // A seal by an untrusted key: the binary names the signature check and the seal object.
    let run = "run-puzzle-0013-fail-end";
    apply(
        &root,
        run,
        &Apply::ResignOutcome {
            keep_trusted_sig: false,
        },
    );
    let (code, out, _) = seal_verify(dir.path(), &root, &[run], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "[signature] runs/{run}/seal.dsse.json: not signed by a trusted key"
        )),
        "{out}"
    );
}

/// Edits a fixture run's evidence and seals it again with the fixtures' own (trusted) key: what
/// a keyholder's bug would store. Returns `seal verify`'s exit code and output.
fn resealed_by_the_keyholder(run: &str, edit: impl FnOnce(&mut Value)) -> (Option<i32>, String) {
    let (dir, root) = copy_fixture_store();
    let ev_path = root.join(format!("runs/{run}/evidence.json"));
    let mut doc: Value = serde_json::from_slice(&read(&ev_path)).unwrap();
    edit(&mut doc);
    let bytes = canonical_bytes(&doc).unwrap();
    rewrite(&ev_path, &bytes);
    let ev: Evidence = serde_json::from_slice(&bytes).unwrap();
    let id = RunId::parse(run).unwrap();
    let statement = seal_core::sealing::statement_for(&id, &ev, &Hash::of(&bytes)).unwrap();
    let env = sealing::sign(&fixture_signing_key(dir.path()), &statement).unwrap();
    rewrite(
        &root.join(format!("runs/{run}/seal.dsse.json")),
        &canonical_bytes(&env).unwrap(),
    );
    let (code, out, _) = seal_verify(dir.path(), &root, &[run], &[]);
    assert!(
        !out.contains("[signature]"),
        "the seal itself is good: {out}"
    );
    (code, out)
}

/// A keyholder's seal over an evidence that is not its JUDGING snapshot plus the decision (a
/// member added after judging) is named, although the stored snapshot still hashes to the hash
/// the evidence records: `verify` compares the evidence minus its decision with the snapshot.
#[test]
fn a_signed_evidence_that_is_not_its_snapshot_plus_the_decision_is_named() {
    let run = "run-narrative-0010-pass";
    let (code, out) = resealed_by_the_keyholder(run, |doc| {
        doc["_addedAfterJudging"] = Value::from("x");
    });
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "[judging_snapshot] runs/{run}/judging.json: the evidence is not its JUDGING snapshot plus the decision"
        )),
        "{out}"
    );
}

/// A keyholder's seal over an evidence whose header member changed after submission (one
/// judging never writes) is named against the submitted header.
#[test]
fn a_signed_evidence_that_changes_a_header_member_is_named() {
    let run = "run-puzzle-0013-fail-end";
    let (code, out) = resealed_by_the_keyholder(run, |doc| {
        doc["templateRoute"] = Value::from("another-route");
    });
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "[evidence] runs/{run}/evidence.json: the evidence changes header fields that judging never writes"
        )),
        "{out}"
    );
}
