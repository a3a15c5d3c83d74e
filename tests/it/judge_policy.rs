//! The pre-registered judge policy (issue 47, item 1) with real processes: `seal serve` logs
//! its `seal.judge-policy/1` before the first judge call, every attempt names the leaf, a
//! restart under the same configuration reuses the registration and a changed one registers a
//! new policy (`seal policy log`, `seal policy diff`); `seal verify` re-reads the policy each
//! run names, so stored policy bytes rewritten by the store writer fail the run, and bytes
//! planted under the next policy's name stop the daemon before any judge is called.

use crate::common;

use common::*;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::{Loopback, Persona};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// A changed set-up: judge B asked for another model (which the loopback answers like B).
const MODEL_B2: &str = "judge-b-2027";

async fn judge_run(c: &SealClient, dir: &Path, id: &str) {
    let folder = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.join(format!("in-{id}")),
        id,
    );
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect_success();
    let f = c.finalize(folder.run()).await.expect_success().json();
    assert_eq!(f["outcome"], "pass", "{f}");
}

fn seal(dir: &Path, lb: &Loopback, env: &[(&str, &str)], args: &[&str]) -> Output {
    let [a, b, salt] = DAEMON_SECRETS;
    let mut cmd = seal_cmd_with(dir, lb, a, b, salt);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The policy every attempt of `run` names (all the same), as stored in its metas.
fn named_policy(dir: &Path, run: &str) -> Value {
    let mut named = Vec::new();
    for slot in ["a", "b"] {
        let meta = dir.join(format!(
            "store/runs/{run}/roll-1/judge-{slot}/attempt-1/meta.json"
        ));
        let v: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
        named.push(v["policy"].clone());
    }
    assert_eq!(named[0], named[1], "both slots name one policy");
    assert!(named[0]["sha256"].is_string(), "{}", named[0]);
    named[0].clone()
}

fn registrations(dir: &Path, lb: &Loopback) -> Vec<Value> {
    let out = seal(
        dir,
        lb,
        &[],
        &[
            "policy",
            "log",
            "--store",
            "file://./store",
            "--trust",
            "keys/seal.pub.pem",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A policy's bytes with judge A's temperature changed (what a store writer tuning the
/// recorded set-up would write).
fn with_temperature(policy: &[u8], t: f64) -> String {
    let mut v: Value = serde_json::from_slice(policy).unwrap();
    assert_ne!(v["a"]["sampling"]["temperature"], t);
    v["a"]["sampling"]["temperature"] = t.into();
    serde_json::to_string(&v).unwrap()
}

fn verify(dir: &Path, run: &str) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir)
        .args([
            "verify",
            run,
            "--store",
            "file://./store",
            "--trust",
            "keys/seal.pub.pem",
            "--json",
        ])
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_policy_is_logged_before_the_judges_are_asked_and_every_run_names_it() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    lb.persona(
        MODEL_B2,
        Persona {
            min_font_px: 14.0,
            ..Persona::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    keygen(dir);

    // The policy the configuration makes, before anything is stored.
    let shown = seal(dir, &lb, &[], &["policy", "show"]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let shown = text(&shown.stdout);
    let sha1 = shown
        .lines()
        .next()
        .unwrap()
        .strip_prefix("sha256 ")
        .unwrap();
    let doc: Value = serde_json::from_str(shown.lines().nth(1).unwrap()).unwrap();
    assert_eq!(doc["schemaVersion"], "seal.judge-policy/1");
    assert_eq!(doc["b"]["modelRequested"], MODEL_B);

    let d = spawn_daemon(dir, &lb, "file://./store", &[]);
    judge_run(&d.client(), dir, "policy-1").await;
    judge_run(&d.client(), dir, "policy-2").await;
    // One registration for both runs, its bytes stored under their digest, before the
    // runs' seals in the log.
    let regs = registrations(dir, &lb);
    assert_eq!(regs.len(), 1, "{regs:?}");
    assert_eq!(regs[0]["policySha256"], sha1);
    assert_eq!(regs[0]["stored"], true);
    let stored = std::fs::read(dir.join(format!("store/policies/{sha1}.json"))).unwrap();
    assert_eq!(
        text(&stored),
        shown.lines().nth(1).unwrap(),
        "the stored bytes are the canonical bytes shown"
    );
    for run in ["policy-1", "policy-2"] {
        let named = named_policy(dir, run);
        assert_eq!(named["sha256"], sha1);
        assert_eq!(named["leafIndex"], regs[0]["leafIndex"]);
        let out = verify(dir, run);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    }
    assert_eq!(regs[0]["leafIndex"], 0, "logged before the first seal");

    // A restart under the same configuration: the registration is found, not repeated.
    drop(d);
    let d = spawn_daemon(dir, &lb, "file://./store", &[]);
    judge_run(&d.client(), dir, "policy-3").await;
    assert_eq!(registrations(dir, &lb).len(), 1);
    assert_eq!(named_policy(dir, "policy-3")["sha256"], sha1);
    drop(d);

    // Another model for judge B is another policy: registered at the next run's first roll.
    let changed = [("SEAL_JUDGE_B_MODEL", MODEL_B2)];
    let d = spawn_daemon(dir, &lb, "file://./store", &changed);
    judge_run(&d.client(), dir, "policy-4").await;
    let regs = registrations(dir, &lb);
    assert_eq!(regs.len(), 2, "{regs:?}");
    let sha2 = regs[1]["policySha256"].as_str().unwrap().to_string();
    assert_ne!(sha2, sha1);
    assert_eq!(named_policy(dir, "policy-4")["sha256"], sha2.as_str());
    let out = verify(dir, "policy-4");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let diff = seal(
        dir,
        &lb,
        &[],
        &["policy", "diff", sha1, &sha2, "--store", "file://./store"],
    );
    assert_eq!(
        diff.status.code(),
        Some(1),
        "changed: {}",
        text(&diff.stderr)
    );
    let diff = text(&diff.stdout);
    let changes: Vec<&str> = diff.lines().skip(2).collect();
    assert_eq!(
        changes,
        [format!("b.modelRequested: \"{MODEL_B}\" -> \"{MODEL_B2}\"")],
        "{diff}"
    );
    let same = seal(
        dir,
        &lb,
        &changed,
        &[
            "policy",
            "diff",
            &sha2,
            "config",
            "--store",
            "file://./store",
        ],
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    drop(d);

    // The store writer rewrites the first policy's bytes: every run naming it fails, by name.
    let at = dir.join(format!("store/policies/{sha1}.json"));
    let tuned = with_temperature(&stored, 1.0);
    std::fs::write(&at, tuned).unwrap();
    let out = verify(dir, "policy-1");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!("policies/{sha1}.json")) && report.contains("refs_resolve"),
        "{report}"
    );
    assert!(
        verify(dir, "policy-4").status.success(),
        "another policy's runs still verify"
    );
    let show = seal(
        dir,
        &lb,
        &[],
        &["policy", "show", sha1, "--store", "file://./store"],
    );
    assert_eq!(show.status.code(), Some(1), "{}", text(&show.stdout));
    assert!(
        text(&show.stderr).contains("hash"),
        "{}",
        text(&show.stderr)
    );
}

/// Bytes planted under the name of the policy a daemon is about to register are a conflict:
/// the daemon logs no policy, asks no judge, and exits 2 naming the object, which it leaves as
/// it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_bytes_under_the_policy_s_name_stop_the_daemon_before_any_judge_call() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    keygen(dir);
    let shown = text(&seal(dir, &lb, &[], &["policy", "show"]).stdout);
    let sha = shown
        .lines()
        .next()
        .unwrap()
        .strip_prefix("sha256 ")
        .unwrap();
    std::fs::create_dir_all(dir.join("store/policies")).unwrap();
    let planted = with_temperature(shown.lines().nth(1).unwrap().as_bytes(), 2.0);
    std::fs::write(dir.join(format!("store/policies/{sha}.json")), &planted).unwrap();

    let mut d = spawn_daemon(dir, &lb, "file://./store", &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon kept running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status.code(), Some(2), "{}", d.log_text());
    let log = d.log_text();
    assert!(
        log.contains(&format!("policies/{sha}.json")) && log.contains("judge policy refused"),
        "the log names the object: {log}"
    );
    assert!(
        lb.calls().is_empty(),
        "a judge was called: {:?}",
        lb.calls()
    );
    assert!(
        !dir.join("store/log/entries").exists()
            || std::fs::read_dir(dir.join("store/log/entries"))
                .unwrap()
                .count()
                == 0,
        "nothing logged"
    );
    let still = std::fs::read(dir.join(format!("store/policies/{sha}.json"))).unwrap();
    assert_eq!(
        text(&still),
        planted,
        "the planted bytes are left as they were"
    );
}

/// A policy whose registration is dated after the run's first judge call (as one logged
/// after the answers were seen would be): the run is sealed, and `seal verify` fails it,
/// naming the policy's leaf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_registered_after_the_run_s_first_judge_call_fails_verify() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    keygen(dir);
    let hook = seal_engine::policy::REGISTERED_AT_HOOK;
    let d = spawn_daemon(
        dir,
        &lb,
        "file://./store",
        &[(hook, "2099-01-01T00:00:00Z")],
    );
    judge_run(&d.client(), dir, "late-policy").await;
    let out = verify(dir, "late-policy");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(
        report.contains("judge_policy")
            && report.contains("2099-01-01T00:00:00Z")
            && report.contains("log/entries/00000000000000000000"),
        "{report}"
    );
}

/// A run judged under a policy, replayed from its store into another one (`seal replay --from`,
/// stored answers): the import stages and copies the policy its attempts name (by digest, as
/// the audit re-reads it), the replay is sealed, and both runs verify in the destination,
/// whose log never registered that policy (the order is the source log's to prove).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_replayed_from_another_store_brings_its_policy_and_verifies() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    keygen(dir);
    let d = spawn_daemon(dir, &lb, "file://./store", &[]);
    judge_run(&d.client(), dir, "policy-archived").await;
    drop(d);
    let sha = named_policy(dir, "policy-archived")["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    let replay = seal(
        dir,
        &lb,
        &[],
        &[
            "replay",
            "policy-archived",
            "--judges",
            "stored",
            "--from",
            "file://./store",
            "--store",
            "file://./other",
            "--key",
            "keys/seal.key.pem",
            "--trust",
            "keys/seal.pub.pem",
        ],
    );
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
    let copied = std::fs::read(dir.join(format!("other/policies/{sha}.json"))).unwrap();
    assert_eq!(
        copied,
        std::fs::read(dir.join(format!("store/policies/{sha}.json"))).unwrap()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir)
        .args([
            "verify",
            "--all",
            "--store",
            "file://./other",
            "--trust",
            "keys/seal.pub.pem",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("\"verified\":2"),
        "{}",
        text(&out.stdout)
    );
}

/// `policy.require_distinct_served_models`: both loopback judges answer as the same served
/// model. Without the requirement the run passes and records `sameModel`; with it the policy
/// logged says so, the postguard's `independence` check fails (the run is decided
/// `infra_error`, `postguard_independence`, naming the model), and either run verifies as
/// decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_requiring_distinct_served_models_fails_a_roll_served_by_one_model() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    for model in [MODEL_A, MODEL_B] {
        lb.persona(
            model,
            Persona {
                served_model: Some("vendor-x-vl-2026".into()),
                ..Persona::default()
            },
        );
    }
    for require in [false, true] {
        let engine = engine_edited(&lb, &[], &move |t| {
            t.replace(
                "require_distinct_served_models = false",
                &format!("require_distinct_served_models = {require}"),
            )
        })
        .await;
        let policy = engine.policy().await.unwrap();
        let stored = seal_engine::policy::stored(engine.store(), &policy.sha256)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(stored.policy.require_distinct_served_models, require);
        let dir = tempfile::tempdir().unwrap();
        let folder = renamed_copy(
            &example("run-narrative-0010-pass"),
            &dir.path().join("in"),
            &format!("served-once-{require}"),
        );
        let done = seal_engine::judge_run::judge(&engine, &folder)
            .await
            .expect("decided");
        let ev = done.evidence();
        let reasons: Vec<String> = ev
            .decision
            .as_ref()
            .unwrap()
            .reasons
            .iter()
            .map(ToString::to_string)
            .collect();
        if require {
            assert_eq!(ev.outcome, Some(seal_core::doc::Outcome::InfraError));
            assert_eq!(reasons, ["postguard_independence"]);
            let pg = ev.final_postguard.as_ref().unwrap();
            let check = pg.checks.iter().find(|c| !c.ok).expect("a failed check");
            assert!(
                check.detail.contains("vendor-x-vl-2026")
                    && check.detail.contains("requires distinct served models"),
                "{}",
                check.detail
            );
        } else {
            assert_eq!(
                ev.outcome,
                Some(seal_core::doc::Outcome::Pass),
                "{reasons:?}"
            );
        }
        let key = engine.key().unwrap().public();
        let report = verifier(engine.store(), key)
            .await
            .report(engine.store(), folder.run())
            .await
            .unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}
