//! The adversary of docs/DESIGN.md §11: someone who writes, reads and deletes store objects at
//! will (a backup restore job, a worker holding store credentials, a leaked role) but holds
//! neither the signing key nor the deployment secret. Every test drives real processes (`seal
//! judge`, `seal serve`, `seal replay`, `seal verify`) against a store such a writer prepared,
//! and pins one rule of G1: seal signs only what its postguard derived from inputs it can
//! authenticate; anything else is named and left unsealed.

use crate::common;

use common::*;
use seal_testkit::client::StatusCode;
use seal_testkit::loopback::{Loopback, Persona};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// The run both deployments judge: the judges of the production deployment disagree on it
/// (inconclusive), the attacker's judges both say `satisfied` to everything (pass).
const RUN: &str = "run-heritage-0017-disputed-font";
const ATTACKER_SALT: &str = "attacker-salt-0123456789abcdef-32b";
const PROD_SALT: &str = "production-salt-0123456789abcdef-32";

/// Judges that accept everything (both lenient about fonts).
async fn lenient_judges() -> Loopback {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    for model in [MODEL_A, MODEL_B] {
        lb.persona(
            model,
            Persona {
                min_font_px: 10.0,
                ..Persona::default()
            },
        );
    }
    lb
}

/// The production judges: A lenient, B strict (the run comes out inconclusive on roll 1).
async fn production_judges() -> Loopback {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    lb
}

fn keys_in(dir: &Path) -> PathBuf {
    keygen(dir);
    dir.join("keys/seal.key.pem")
}

/// `seal judge RUN_DIR` into `store` as a deployment with `salt` and the key in `cwd/keys`.
async fn judge_cli(cwd: &Path, lb: &Loopback, salt: &str, store: &Path, run_dir: &Path) -> Output {
    let key = cwd.join("keys/seal.key.pem");
    if !key.exists() {
        keys_in(cwd);
    }
    let mut c = seal_cmd_with(cwd, lb, "sk-a-0123456789", "sk-b-0123456789", salt);
    c.arg("judge")
        .arg(run_dir)
        .arg("--store")
        .arg(file_url(store))
        .arg("--key")
        .arg(&key);
    run(c).await
}

/// The attacker's own deployment seals RUN as a pass; returns its store.
async fn attacker_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lb = lenient_judges().await;
    let store = dir.path().join("store");
    let out = judge_cli(dir.path(), &lb, ATTACKER_SALT, &store, &example(RUN)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
    dir
}

/// Copies `runs/<RUN>/` and `cas/` of `from` into `to`, leaving out the run files named in
/// `without` (relative to the run folder): what a writer of the bucket can do.
fn plant(from: &Path, to: &Path, without: &[&str]) {
    copy_tree(&from.join("cas"), &to.join("cas"));
    let run = to.join("runs").join(RUN);
    copy_tree(&from.join("runs").join(RUN), &run);
    for f in without {
        std::fs::remove_file(run.join(f)).unwrap();
    }
}

/// The production deployment: its folder (keys), its store and its judges.
struct Production {
    dir: tempfile::TempDir,
    store: PathBuf,
    lb: Loopback,
}

async fn production() -> Production {
    let dir = tempfile::tempdir().unwrap();
    keys_in(dir.path());
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    Production {
        lb: production_judges().await,
        dir,
        store,
    }
}

impl Production {
    fn serve(&self) -> Daemon {
        spawn_daemon(
            self.dir.path(),
            &self.lb,
            &file_url(&self.store),
            &[("SEAL_SEED_SALT", PROD_SALT)],
        )
    }

    fn seal_path(&self) -> PathBuf {
        self.store.join(format!("runs/{RUN}/seal.dsse.json"))
    }

    async fn verify(&self) -> Output {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_seal"));
        c.current_dir(self.dir.path())
            .args(["verify", RUN, "--store"])
            .arg(file_url(&self.store))
            .arg("--trust")
            .arg(self.dir.path().join("keys/seal.pub.pem"));
        run(c).await
    }
}

async fn finalize(daemon: &Daemon) -> (StatusCode, Value) {
    daemon.client().finalize(RUN).await.status_json()
}

fn code(v: &Value) -> String {
    v["error"]["code"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_does_not_sign_planted_evidence_from_another_key_and_salt() {
    let attacker = attacker_store().await;
    let prod = production().await;
    plant(
        &attacker.path().join("store"),
        &prod.store,
        &["seal.dsse.json"],
    );
    let daemon = prod.serve();
    let (status, body) = finalize(&daemon).await;
    // The planted inputs have no receipt of this deployment: never committed here.
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "uncommitted", "{body}");
    assert!(!prod.seal_path().exists(), "the planted pass was sealed");
    let out = prod.verify().await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
}

/// The attacker's sealed pass planted as an open run (without its seal, evidence and
/// snapshot), with or without the attacker's receipts beside it; production finalizes it.
/// Whatever it answers, nothing may be judged or sealed.
async fn finalize_planted_open_run(with_receipts: bool) -> (StatusCode, Value) {
    let attacker = attacker_store().await;
    let prod = production().await;
    plant(
        &attacker.path().join("store"),
        &prod.store,
        &["seal.dsse.json", "evidence.json", "judging.json"],
    );
    if with_receipts {
        copy_tree(
            &attacker.path().join("store/receipts").join(RUN),
            &prod.store.join("receipts").join(RUN),
        );
    }
    let daemon = prod.serve();
    let answer = finalize(&daemon).await;
    assert!(!prod.seal_path().exists(), "the planted pass was sealed");
    assert!(prod.lb.calls().is_empty(), "a planted run was judged");
    answer
}

/// A run planted without receipts was never committed by this deployment: 409 `uncommitted`
/// naming the header (re-send it), nothing judged or signed. Not "planted": an honest crash
/// between an input and its receipt looks the same (docs/DESIGN.md §2, "Crash safety").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_does_not_sign_a_planted_open_run() {
    let (status, body) = finalize_planted_open_run(false).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "uncommitted", "{body}");
    assert_eq!(
        body["error"]["object"],
        format!("runs/{RUN}/header.json"),
        "{body}"
    );
}

/// The same planted run with the attacker's own receipts beside it: receipts MAC'd under
/// another secret contradict the commit they claim, so this is planted (500 `planted_header`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_from_another_deployment_make_a_planted_run_planted_not_uncommitted() {
    let (status, body) = finalize_planted_open_run(true).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(code(&body), "planted_header", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_judge_does_not_seal_the_planted_pass_of_a_planted_run() {
    let attacker = attacker_store().await;
    let prod = production().await;
    plant(
        &attacker.path().join("store"),
        &prod.store,
        &["seal.dsse.json", "evidence.json", "judging.json"],
    );
    let out = judge_cli(
        prod.dir.path(),
        &prod.lb,
        PROD_SALT,
        &prod.store,
        &example(RUN),
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("planted"),
        "{}",
        text(&out.stderr)
    );
    assert!(!text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
    assert!(!prod.seal_path().exists(), "the planted pass was sealed");
}

/// A run judged by production up to an indecisive roll 1 (its roll 2 not yet submitted).
async fn open_after_roll_1(prod: &Production) -> Daemon {
    let daemon = prod.serve();
    let c = daemon.client();
    let folder = seal_fs::runfolder::RunFolder::read(&example(RUN), 1 << 26).unwrap();
    c.submit(&folder).await;
    let v = c.roll(&folder, 1).await.expect(StatusCode::OK).json();
    assert_eq!(v["next"], "roll-2", "{v}");
    daemon
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_package_planted_in_an_open_run_is_named_and_never_judged() {
    let prod = production().await;
    let daemon = open_after_roll_1(&prod).await;
    let calls = prod.lb.calls().len();
    // The writer drops in a roll 2 nobody submitted; a finalize would judge a pending roll.
    let roll2 = prod.store.join(format!("runs/{RUN}/roll-2"));
    std::fs::create_dir_all(&roll2).unwrap();
    std::fs::copy(
        example(RUN).join("roll-2/proof-package.json"),
        roll2.join("proof-package.json"),
    )
    .unwrap();
    let (status, body) = finalize(&daemon).await;
    // No receipt: never committed; the worker would re-send roll 2 (409), nothing is judged.
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "uncommitted", "{body}");
    assert_eq!(
        body["error"]["object"],
        format!("runs/{RUN}/roll-2/proof-package.json"),
        "{body}"
    );
    assert_eq!(
        prod.lb.calls().len(),
        calls,
        "the planted package was judged"
    );
    assert!(!prod.seal_path().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_package_swapped_after_judging_is_refused_by_the_postguard() {
    let prod = production().await;
    let mut first = open_after_roll_1(&prod).await;
    // A restarted daemon holds none of its own writes in memory: it reads what is stored.
    first.kill_9();
    let daemon = prod.serve();
    // Another valid proof package in place of the judged one.
    std::fs::write(
        prod.store
            .join(format!("runs/{RUN}/roll-1/proof-package.json")),
        std::fs::read(example(RUN).join("roll-2/proof-package.json")).unwrap(),
    )
    .unwrap();
    let (status, body) = finalize(&daemon).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(code(&body), "corrupt_store", "{body}");
    assert!(!prod.seal_path().exists());
}

/// The writer rewrites roll 1's record to a pass (its consensus then matches nothing).
fn plant_a_passing_roll_record(prod: &Production) {
    let rec = prod.store.join(format!("runs/{RUN}/roll-1/roll.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert_ne!(
        v["rollOutcome"], "pass",
        "the fixture's roll 1 is not a pass"
    );
    v["rollOutcome"] = "pass".into();
    std::fs::remove_file(&rec).unwrap();
    std::fs::write(&rec, seal_core::canonical::canonical_bytes(&v).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roll_record_planted_in_an_open_run_is_not_answered_or_sealed() {
    let prod = production().await;
    let mut first = open_after_roll_1(&prod).await;
    // A restarted daemon holds none of its own writes in memory: it reads what is stored.
    first.kill_9();
    plant_a_passing_roll_record(&prod);
    let daemon = prod.serve();
    let (status, body) = finalize(&daemon).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(code(&body).starts_with("planted_"), "{body}");
    assert!(!prod.seal_path().exists());
}

/// The same record planted behind the daemon that wrote the real one, while it runs: the
/// daemon decides from what the store holds, not from what it remembers writing, so it refuses
/// the run exactly as a restarted one does (the record has no receipt for these bytes, and the
/// roll judged again derives other bytes): nothing is sealed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roll_record_planted_behind_the_running_daemon_is_refused_as_after_a_restart() {
    let prod = production().await;
    let daemon = open_after_roll_1(&prod).await;
    plant_a_passing_roll_record(&prod);
    let (status, body) = finalize(&daemon).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(code(&body).starts_with("planted_"), "{body}");
    assert!(
        body["error"]["object"]
            .as_str()
            .is_some_and(|o| o.ends_with("roll-1/roll.json")),
        "{body}"
    );
    assert!(!prod.seal_path().exists());
}

/// Issue 44, hole 4: roll 1's genuine cost reservation copied to `roll-2/` before roll 2 is
/// judged. Its MAC is keyed by the roll written inside it (`roll-1`), so it verifies; read as
/// roll 2's, every slot's request would be "reserved elsewhere" and roll 2 closed as
/// `config_changed` without a judge call, the run sealed `infra_error`/retry. A document whose
/// identity fields are not its key's is planted (`seal_core::bound`): roll 2 and the finalize
/// answer 500 `planted_document` naming the key, no judge is called, nothing is sealed (the
/// key is create-only: the run stays refused until an operator removes the planted object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_rolls_reservation_copied_under_roll_2_is_named_and_never_sealed_over() {
    let prod = production().await;
    let daemon = open_after_roll_1(&prod).await;
    let calls = prod.lb.calls().len();
    let roll = |n: u8| prod.store.join(format!("runs/{RUN}/roll-{n}"));
    std::fs::create_dir_all(roll(2)).unwrap();
    std::fs::copy(
        roll(1).join("cost-reservation.json"),
        roll(2).join("cost-reservation.json"),
    )
    .unwrap();
    let folder = seal_fs::runfolder::RunFolder::read(&example(RUN), 1 << 26).unwrap();
    let (status, body) = daemon.client().roll(&folder, 2).await.status_json();
    let planted = format!("runs/{RUN}/roll-2/cost-reservation.json");
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(code(&body), "planted_document", "{body}");
    assert_eq!(body["error"]["object"], planted, "{body}");
    let (status, body) = finalize(&daemon).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(code(&body), "planted_document", "{body}");
    assert_eq!(body["error"]["object"], planted, "{body}");
    assert_eq!(prod.lb.calls().len(), calls, "roll 2 was judged or closed");
    assert!(
        !prod.seal_path().exists(),
        "sealed over the planted reservation"
    );
    assert!(!roll(2).join("roll.json").exists());
}

/// The audit side of the same rule: a sealed run whose roll 2 binds roll 1's reservation
/// (what a deployment without the rule seals after the copy above) is named by `seal verify`:
/// the sealed fixture's roll 2 reservation replaced by roll 1's bytes, every hash that binds it
/// updated and the evidence signed again with the fixtures' own key, so only the key binding
/// (and the log, which holds the original seal) tells it apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_verify_names_a_sealed_document_bound_under_another_rolls_key() {
    use seal_core::canonical::{canonical_bytes, Hash};
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_tree(&fixture_store_dir(), &store);
    let run_dir = store.join(format!("runs/{RUN}"));
    let rewrite = |rel: &str, bytes: &[u8]| {
        let p = run_dir.join(rel);
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, bytes).unwrap();
    };
    let json = |rel: &str| -> Value {
        serde_json::from_slice(&std::fs::read(run_dir.join(rel)).unwrap()).unwrap()
    };
    let copied = std::fs::read(run_dir.join("roll-1/cost-reservation.json")).unwrap();
    let hash = Hash::of(&copied).to_string();
    rewrite("roll-2/cost-reservation.json", &copied);
    let mut record = json("roll-2/roll.json");
    record["costReservationHash"] = hash.clone().into();
    rewrite("roll-2/roll.json", &canonical_bytes(&record).unwrap());
    let mut ev = json("evidence.json");
    ev["rolls"][1]["costReservationHash"] = hash.into();
    let typed: seal_core::doc::Evidence = serde_json::from_value(ev.clone()).unwrap();
    let snapshot = canonical_bytes(&seal_core::decided::undecided(&typed)).unwrap();
    rewrite("judging.json", &snapshot);
    ev["finalPostguard"]["judgingSnapshotHash"] = Hash::of(&snapshot).to_string().into();
    let ev_bytes = canonical_bytes(&ev).unwrap();
    rewrite("evidence.json", &ev_bytes);
    let typed: seal_core::doc::Evidence = serde_json::from_slice(&ev_bytes).unwrap();
    let id = seal_core::ids::RunId::parse(RUN).unwrap();
    let statement = seal_core::sealing::statement_for(&id, &typed, &Hash::of(&ev_bytes)).unwrap();
    // The fixtures' test-only key, copied private (the loader refuses a readable key).
    let pem = dir.path().join("seal.key.pem");
    std::fs::copy(fixture_trust_pem().with_file_name("seal.key.pem"), &pem).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = seal_fs::keys::load_signing_key(&pem).unwrap();
    let env = seal_core::sealing::sign(&key, &statement).unwrap();
    rewrite("seal.dsse.json", &canonical_bytes(&env).unwrap());

    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(dir.path())
        .args(["verify", RUN, "--json", "--store"])
        .arg(file_url(&store))
        .arg("--trust")
        .arg(fixture_trust_pem());
    let out = run(c).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    let report: Value = serde_json::from_str(said.lines().next().unwrap()).unwrap();
    let planted = format!("runs/{RUN}/roll-2/cost-reservation.json");
    assert!(
        report["problems"].as_array().unwrap().iter().any(|p| {
            p["object"] == planted.as_str()
                && p["detail"].as_str().unwrap().contains("planted document")
                && p["expected"] == "roll-2"
                && p["actual"] == "roll-1"
        }),
        "the reservation under another roll's key is not named: {said}"
    );
}

/// A request planted where an attempt is about to start (no answer, no meta: the walk's
/// create-only put of the request finds other bytes) is read back, named planted and never
/// sent: judge B is not called, and nothing is sealed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_planted_where_an_attempt_starts_is_named_and_never_sent() {
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    let lb = production_judges().await;
    let attempt = store.join(format!("runs/{RUN}/roll-1/judge-b/attempt-1"));
    std::fs::create_dir_all(&attempt).unwrap();
    std::fs::write(attempt.join("request.json"), br#"{"model":"planted"}"#).unwrap();
    let out = judge_cli(work.path(), &lb, PROD_SALT, &store, &example(RUN)).await;
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        said.contains("judge-b/attempt-1") && said.contains("planted"),
        "{said}"
    );
    assert!(
        lb.calls().iter().all(|c| c.model != MODEL_B),
        "judge B was called"
    );
    assert!(!attempt.join("meta.json").exists());
    assert!(!store.join(format!("runs/{RUN}/seal.dsse.json")).exists());
}

// ---------------------------------------------------------------------------------------------
// Replay

fn replay_cmd(cwd: &Path, lb: &Loopback, store: &Path, key: &Path) -> std::process::Command {
    let mut c = seal_cmd_with(cwd, lb, "sk-a-0123456789", "sk-b-0123456789", PROD_SALT);
    c.args(["replay", "--all", "--judges", "stored", "--json", "--store"])
        .arg(file_url(store))
        .arg("--key")
        .arg(key)
        .arg("--trust")
        .arg(fixture_trust_pem());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_refuses_an_attempt_planted_in_the_replay_folder() {
    let (_d, root) = copy_fixture_store();
    let work = tempfile::tempdir().unwrap();
    let key = keys_in(work.path());
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    // The writer prepares the replay's folder with an attempt 2 after the source's attempt 1.
    let source = "run-narrative-0011-inconclusive";
    let planted = root.join(format!("runs/{source}.replay-1/roll-1/judge-b/attempt-2"));
    std::fs::create_dir_all(&planted).unwrap();
    for f in ["request.json", "raw.json", "meta.json"] {
        let from = root.join(format!("runs/{source}/roll-1/judge-a/attempt-1/{f}"));
        std::fs::copy(from, planted.join(f)).unwrap();
    }
    let out = run(replay_cmd(work.path(), &lb, &root, &key)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("attempt-2") && e.contains("planted")),
        "{v:#}"
    );
    assert!(!root
        .join(format!("runs/{source}.replay-1/seal.dsse.json"))
        .exists());
    assert!(lb.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_replay_is_not_finalized_before_its_source_verifies() {
    let (_d, root) = copy_fixture_store();
    let work = tempfile::tempdir().unwrap();
    let key = keys_in(work.path());
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let out = run(replay_cmd(work.path(), &lb, &root, &key)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let source = "run-trpg-0021-pass";
    // The replay as a kill between its evidence and its seal would leave it ...
    let replay = root.join(format!("runs/{source}.replay-1"));
    std::fs::remove_file(replay.join("seal.dsse.json")).unwrap();
    // ... and its source no longer verifies.
    let ev = root.join(format!("runs/{source}/evidence.json"));
    let mut bytes = std::fs::read(&ev).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::remove_file(&ev).unwrap();
    std::fs::write(&ev, bytes).unwrap();
    let out = run(replay_cmd(work.path(), &lb, &root, &key)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["errors"].to_string().contains(source),
        "the unsound source was not reported: {v:#}"
    );
    assert!(
        !replay.join("seal.dsse.json").exists(),
        "a replay of a source that does not verify was sealed"
    );
}
