//! The blinding rule end to end (issue 45, docs/DESIGN.md §3.3): real `seal judge` and
//! `seal verify` processes against the loopback judge, whose calls are counted.
//!
//! 1. The reproduction: a `v3_shadow` run whose `_taskId` is `"4800"` and whose roll-2 game
//!    shows a score of 4800 is judged normally (roll 1 inconclusive, roll 2 pass) and verifies.
//! 2. A leak the scrub cannot remove (the actor's self-talk echoed by the game) blocks the roll
//!    before any judge is called (`infra_guard_blinding`), and the sealed run verifies.
//! 3. Sealed ⇒ verified over run folders from `seal_testkit::collide`, with adversarial identity collisions
//!    (numeric ids equal to numbers in the events, ids inside the brief and obligations,
//!    unicode look-alikes, ids split across events, self-talk and seeds the scrub cannot
//!    reach), judged on `file://` (then verified by `seal verify` and by the independent
//!    `tools/verify_sealed_run.py`) and `memory://`: every run that comes out sealed verifies,
//!    and the judges are called exactly for the rolls whose guard passed.
//!    `SEAL_PROP_CASES` (default 40, about 7 s) and `SEAL_PROP_SEED` set the run; both are
//!    printed. 400 cases take about a minute.
//! 4. A postguard refusal (`postguard_refs_resolve`) verifies as that decision.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use common::*;
use seal_testkit::collide;
use seal_testkit::loopback::Loopback;

const SALT: &str = "blinding-salt-0123456789abcdef0123456789abcdef";

fn read(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

struct World {
    lb: Loopback,
    dir: tempfile::TempDir,
}

impl World {
    async fn new() -> World {
        let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
        personas(&lb);
        let dir = tempfile::tempdir().unwrap();
        let w = World { lb, dir };
        let out = w.seal(&["keygen", "--out", "keys"]).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        w
    }

    async fn seal(&self, args: &[&str]) -> std::process::Output {
        let mut c: Command = seal_cmd_with(self.dir.path(), &self.lb, "sk-a", "sk-b", SALT);
        c.args(args);
        run(c).await
    }

    /// A copy of an example run folder under `name`, to edit.
    fn folder(&self, example_name: &str, name: &str) -> std::path::PathBuf {
        let at = self.dir.path().join(name);
        copy_tree(&example(example_name), &at);
        at
    }

    /// `seal judge` of a folder into `store`: its exit code and `--json` output.
    async fn judge(&self, folder: &Path, store: &str) -> (Option<i32>, Value, String) {
        let f = folder.display().to_string();
        let mut args = vec!["judge", &f, "--store", store, "--key", "keys/seal.key.pem"];
        if store.starts_with("memory:") {
            args.push("--allow-ephemeral-store");
        }
        args.push("--json");
        let out = self.seal(&args).await;
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), v, text(&out.stderr))
    }

    async fn verify(&self, run: &str, store: &str) -> (Option<i32>, String) {
        let out = self
            .seal(&[
                "verify",
                run,
                "--store",
                store,
                "--trust",
                "keys/seal.pub.pem",
            ])
            .await;
        (
            out.status.code(),
            format!("{}{}", text(&out.stdout), text(&out.stderr)),
        )
    }
}

fn edit_header(folder: &Path, edit: impl FnOnce(&mut Value, &mut String)) {
    collide::edit_header(folder, edit).unwrap();
}

fn edit_proof(folder: &Path, roll: u8, edit: impl FnOnce(&mut Value)) {
    collide::edit_proof(folder, roll, edit).unwrap();
}

fn store_file(root: &Path, run: &str, rel: &str) -> Value {
    read(&root.join("store/runs").join(run).join(rel))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_numeric_task_id_equal_to_a_roll2_score_judges_normally_and_verifies() {
    let w = World::new().await;
    let folder = w.folder("run-heritage-0017-disputed-font", "in");
    edit_header(&folder, |h, _| {
        h["acceptanceMode"] = json!("v3_shadow");
        h["_taskId"] = json!("4800");
        h["_designId"] = json!("3f9a1c0e7b2d48a6915e0c7d2b4f6a8e");
    });
    edit_proof(&folder, 2, |p| {
        for e in p["events"].as_array_mut().unwrap() {
            if e["name"] == "state" && e["data"]["phase"] == "gameover" {
                e["data"]["score"] = json!(4800);
                e["data"]["banner"] = json!("Final score 4800");
            }
        }
    });
    let (code, v, err) = w.judge(&folder, "file://./store").await;
    assert_eq!(code, Some(0), "{v}\n{err}");
    assert_eq!(v["outcome"], "pass", "{v}");
    assert_eq!(v["sourceRollId"], "roll-2", "{v}");
    // Both rolls went to both judges once each: nothing was paid for a refused package.
    assert_eq!(w.lb.calls().len(), 4, "{:?}", w.lb.calls());
    let run = "run-heritage-0017-disputed-font";
    let pkg = store_file(w.dir.path(), run, "roll-2/judge-package.json");
    assert!(
        pkg.to_string().contains("\"score\":4800") && pkg.to_string().contains("score 4800"),
        "the score reaches the judges unredacted: {pkg}"
    );
    let ev = store_file(w.dir.path(), run, "evidence.json");
    assert_eq!(ev["finalPostguard"]["passed"], json!(true), "{ev}");
    let (code, out) = w.verify(run, "file://./store").await;
    assert_eq!(code, Some(0), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_talk_echoed_by_the_game_blocks_the_roll_before_any_judge_and_verifies() {
    let w = World::new().await;
    let folder = w.folder("run-narrative-0010-pass", "in");
    edit_proof(&folder, 1, |p| {
        let raw = p["actions"][0]["request"]["raw"].clone();
        p["events"][2]["data"]["said"] = raw;
    });
    let (code, v, err) = w.judge(&folder, "file://./store").await;
    assert_eq!(code, Some(0), "{v}\n{err}");
    assert_eq!(v["outcome"], "infra_error", "{v}");
    assert_eq!(
        w.lb.calls().len(),
        0,
        "no judge is paid for a refused package"
    );
    let run = "run-narrative-0010-pass";
    let roll = store_file(w.dir.path(), run, "roll-1/roll.json");
    assert_eq!(roll["rollGuard"]["status"], "blocked", "{roll}");
    let check = roll["rollGuard"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "blinding")
        .expect("the blinding check names the cause");
    assert!(
        check["detail"].as_str().unwrap().contains("actor text of"),
        "{check}"
    );
    let ev = store_file(w.dir.path(), run, "evidence.json");
    assert_eq!(ev["decision"]["reasons"], json!(["infra_guard_blinding"]));
    assert_eq!(ev["finalPostguard"]["passed"], json!(true), "{ev}");
    let (code, out) = w.verify(run, "file://./store").await;
    assert_eq!(code, Some(0), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Sealed ⇒ verified over generated run folders
// ---------------------------------------------------------------------------------------------

/// Whether `python3` with `cryptography` runs the independent verifier here (required in CI,
/// `SEAL_REQUIRE_PYTHON=1`).
fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import cryptography.hazmat.primitives.asymmetric.ed25519",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert_ne!(
            std::env::var("SEAL_REQUIRE_PYTHON").as_deref(),
            Ok("1"),
            "SEAL_REQUIRE_PYTHON=1 but python3 cannot import cryptography"
        );
        eprintln!("SKIPPED the independent verifier: python3 cannot import cryptography");
    }
    ok
}

/// `tools/verify_sealed_run.py` on a run of the world's file store.
async fn python_verify(root: &Path, run: &str) -> (Option<i32>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/verify_sealed_run.py");
    let mut c = Command::new("python3");
    c.arg(script)
        .arg("--store")
        .arg(root.join("store"))
        .args(["--run", run])
        .arg("--pub")
        .arg(root.join("keys/seal.pub.pem"));
    run_out(c).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sealed_generated_run_verifies_and_no_refused_package_is_paid_for() {
    let cases: u64 = std::env::var("SEAL_PROP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("SEAL_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!("sealed => verified: {cases} cases, SEAL_PROP_SEED={seed}");
    let w = World::new().await;
    let python = python_ready();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut sealed, mut blocked_rolls) = (0, 0);
    for case in 0..cases {
        let example_name = *EXAMPLES.choose(&mut rng).unwrap();
        let folder = w.folder(example_name, &format!("case-{case}"));
        collide::adversarial(&folder, case, &mut rng).unwrap();
        let run = read(&folder.join("header.json"))["runId"]
            .as_str()
            .unwrap()
            .to_string();
        let store = if case % 3 == 2 {
            "memory://".to_string()
        } else {
            "file://./store".to_string()
        };
        let before = w.lb.calls().len();
        let (code, v, err) = w.judge(&folder, &store).await;
        let why =
            format!("case {case} (SEAL_PROP_SEED={seed}, {example_name}, {store}): {v}\n{err}");
        assert_eq!(code, Some(0), "{why}");
        sealed += 1;
        assert_eq!(v["postguardPassed"], json!(true), "{why}");
        // Judges were called for exactly the rolls the guard let through, two calls each (the
        // loopback personas always answer, so an infra_error roll is one the guard blocked).
        let rolls = v["rolls"].as_array().cloned().unwrap_or_default();
        assert!(!rolls.is_empty(), "{why}");
        let passed = rolls
            .iter()
            .filter(|r| r["outcome"] != "infra_error")
            .count();
        blocked_rolls += rolls.len() - passed;
        let calls = w.lb.calls().len() - before;
        assert_eq!(calls, 2 * passed, "{why}");
        if store.starts_with("file:") {
            let (code, out) = w.verify(&run, &store).await;
            assert_eq!(code, Some(0), "{why}\n{out}");
            if python {
                let (code, out) = python_verify(w.dir.path(), &run).await;
                assert_eq!(code, Some(0), "independent verifier: {why}\n{out}");
            }
        }
    }
    eprintln!("sealed => verified: {sealed} sealed, {blocked_rolls} rolls blocked by the guard");
}

// ---------------------------------------------------------------------------------------------
// A postguard refusal is a decision verify re-proves
// ---------------------------------------------------------------------------------------------

/// An object nobody binds, planted in the run folder before finalize: the postguard refuses
/// (`infra_error`, `postguard_refs_resolve`) and seals that; `seal verify` re-derives exactly
/// that finding and verifies the run as that decision. Another planted object after the seal
/// is not what the postguard derived: verify refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_the_postguard_refused_verifies_as_that_decision() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let key = seal_fs::keys::generate_signing_key();
    let (_, pem) = seal_fs::keys::write_key_pair(&key, &dir.path().join("keys")).unwrap();
    let root = dir.path().join("store");
    let url = file_url(&root);
    let store = seal_store::Store::open(&url).await.unwrap();
    let engine = seal_engine::engine::Engine::new(store, config_for(&lb, &[]), Some(key)).unwrap();
    let (folder, _) = judge_roll1(&engine, &example("run-narrative-0010-pass")).await;
    let run = folder.run().to_string();
    let run_dir = root.join("runs").join(&run);
    std::fs::write(run_dir.join("stray.json"), b"{}").unwrap();
    let done = seal_engine::postguard::finalize(&engine, folder.run())
        .await
        .expect("the postguard decides");
    let ev = done.evidence();
    assert_eq!(ev.outcome, Some(seal_core::doc::Outcome::InfraError));
    let reasons: Vec<String> = ev
        .decision
        .as_ref()
        .unwrap()
        .reasons
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(reasons, ["postguard_refs_resolve"]);
    let verify = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
        c.current_dir(dir.path()).args([
            "verify",
            &run,
            "--store",
            &url,
            "--trust",
            &pem.display().to_string(),
        ]);
        run_out(c)
    };
    let (code, out) = verify().await;
    assert_eq!(code, Some(0), "{out}");
    std::fs::write(run_dir.join("stray-2.json"), b"{}").unwrap();
    let (code, out) = verify().await;
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("stray-2.json"), "{out}");
}

async fn run_out(c: Command) -> (Option<i32>, String) {
    let out = run(c).await;
    (
        out.status.code(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}
