//! Witness cosigning (docs/DESIGN.md §13, guarantee G3), with real processes: `seal witness
//! serve` on 127.0.0.1:0, `seal judge` and `seal serve` against a loopback judge sending their
//! checkpoints to it, `seal log verify` and `seal verify` requiring N of M cosignatures. The
//! witness's own rules (rollback, fork, tampered proof, restart) are driven over HTTP with
//! checkpoints signed by the log's real key.
//!
//! The acceptance test of G3 is `whole_store_rollback_is_caught_through_a_witness_alone`.

use crate::common;

use common::*;
use reqwest::StatusCode;
use seal_core::tlog::{self, Tree};
use seal_fs::runfolder::RunFolder;
use seal_log::cosign::{cosig, protocol};
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ORIGIN: &str = "seal.local/log";

/// A `seal witness serve` process, killed on drop.
struct WitnessProc {
    child: Child,
    base: String,
    log: PathBuf,
}

impl WitnessProc {
    fn kill_9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    fn log_text(&self) -> String {
        text(&std::fs::read(&self.log).unwrap_or_default())
    }
}

impl Drop for WitnessProc {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// `seal keygen --out DIR` (a witness's key pair is made the same way as seal's).
fn keygen_into(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["keygen", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Starts a witness named `name` whose key pair is in `keys` (made if missing), state in `state`,
/// trusting the log key `log_pub`.
fn spawn_witness(keys: &Path, state: &Path, log_pub: &Path, name: &str) -> WitnessProc {
    if !keys.join("seal.key.pem").exists() {
        keygen_into(keys);
    }
    let log = state.with_extension(format!("{}.log", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args([
            "--log-format",
            "json",
            "witness",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--key")
        .arg(keys.join("seal.key.pem"))
        .arg("--state")
        .arg(state)
        .arg("--log-key")
        .arg(log_pub)
        .args(["--name", name])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().rsplit(' ').next().unwrap_or("").to_string();
    assert!(
        base.starts_with("http://127.0.0.1:"),
        "unexpected first line {line:?}: {}",
        text(&std::fs::read(&log).unwrap_or_default())
    );
    WitnessProc { child, base, log }
}

/// Writes `DIR/config/seal.toml`: the embedded config with these witnesses and quorum.
fn write_config(dir: &Path, witnesses: &[(&str, &str, &Path)], quorum: Option<usize>) {
    let mut text = seal_engine::config::EMBEDDED.to_string();
    if let Some(q) = quorum {
        text = text.replacen("[limits]", &format!("witness_quorum = {q}\n[limits]"), 1);
    }
    for (name, url, key) in witnesses {
        text.push_str(&format!(
            "\n[[witnesses]]\nname = \"{name}\"\nurl = \"{url}\"\npublic_key = \"{}\"\ntimeout_ms = 3000\n",
            key.display()
        ));
    }
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/seal.toml"), text).unwrap();
}

/// A copy of an example run folder under a fresh run id.
fn run_folder(dir: &Path, example_name: &str, id: &str) -> PathBuf {
    let to = dir.join("inputs").join(id);
    renamed_copy(&example(example_name), &to, id);
    to
}

/// `seal judge` of a run folder into `DIR/store` with `DIR/keys`; asserts it sealed.
async fn judge(dir: &Path, lb: &Loopback, folder: &Path) -> String {
    let mut c = seal_cmd_with(
        dir,
        lb,
        "sk-a",
        "sk-b",
        "witness-salt-0123456789abcdef-32-bytes",
    );
    c.args(["--log-format", "json", "judge"]).arg(folder).args([
        "--store",
        "file://./store",
        "--key",
        "keys/seal.key.pem",
    ]);
    let out = run(c).await;
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

/// Runs `seal` with `args` from an empty folder (no config: a verifier trusting only the keys
/// it is given): (exit code, stdout and stderr).
fn seal_alone(args: &[&str]) -> (i32, String) {
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(empty.path())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// The cosignature objects stored for the checkpoint of `size`. The daemon may be writing one
/// while this looks: its staging file (`<key>#<n>`, renamed onto the key when whole) is not an
/// object, and may be gone by the time it is read.
fn cosignatures(store: &Path, size: u64) -> Vec<String> {
    let dir = store.join(format!("log/cosignatures/{size:020}"));
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| !p.to_string_lossy().contains('#'))
                .map(|p| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn pem(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A seal deployment in a temp folder: keys, store, a loopback judge.
struct Deployment {
    dir: tempfile::TempDir,
    lb: Loopback,
}

impl Deployment {
    async fn new() -> Deployment {
        let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
        personas(&lb);
        let dir = tempfile::tempdir().unwrap();
        keygen(dir.path());
        Deployment { dir, lb }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn store(&self) -> PathBuf {
        self.path().join("store")
    }
    fn store_url(&self) -> String {
        file_url(&self.store())
    }
    fn seal_pub(&self) -> PathBuf {
        self.path().join("keys/seal.pub.pem")
    }
    async fn seal_run(&self, n: usize) -> String {
        let folder = run_folder(
            self.path(),
            "run-narrative-0010-pass",
            &format!("run-w-{n:04}"),
        );
        judge(self.path(), &self.lb, &folder).await
    }
    fn log_verify(&self, extra: &[&str]) -> (i32, String) {
        let store = self.store_url();
        let trust = self.seal_pub();
        let mut args = vec!["log", "verify", "--store", &store, "--trust", pem(&trust)];
        args.extend_from_slice(extra);
        seal_alone(&args)
    }
    fn verify_all(&self, extra: &[&str]) -> (i32, String) {
        let store = self.store_url();
        let trust = self.seal_pub();
        let mut args = vec!["verify", "--all", "--store", &store, "--trust", pem(&trust)];
        args.extend_from_slice(extra);
        seal_alone(&args)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cosignatures_are_stored_beside_each_checkpoint_and_verified() {
    let d = Deployment::new().await;
    let wkeys = d.path().join("w1");
    let w = spawn_witness(
        &wkeys,
        &d.path().join("w1.json"),
        &d.seal_pub(),
        "w1.test/witness",
    );
    let wpub = wkeys.join("seal.pub.pem");
    write_config(d.path(), &[("w1.test/witness", &w.base, &wpub)], None);
    d.seal_run(1).await;
    d.seal_run(2).await;
    // Size 1 holds the judge policy's registration (logged before the first run's judges
    // were asked), sizes 2 and 3 the two seals.
    for size in [1, 2, 3] {
        let lines = cosignatures(&d.store(), size);
        assert_eq!(
            lines.len(),
            1,
            "size {size}: {lines:?}; witness: {}",
            w.log_text()
        );
        let c = cosig::Cosignature::parse_line(lines[0].as_bytes())
            .unwrap()
            .unwrap();
        let public = seal_fs::keys::load_public_key(&wpub).unwrap().raw();
        let note = std::fs::read(d.store().join(format!("log/checkpoints/{size:020}"))).unwrap();
        let body = signed_note::Note::from_bytes(&note)
            .unwrap()
            .text()
            .to_vec();
        let key = cosig::WitnessKey {
            name: Some("w1.test/witness".into()),
            public,
        };
        assert!(c.verifies(&body, &key), "size {size}");
    }
    let (code, out) = d.log_verify(&["--witness", pem(&wpub)]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("cosigned by 1 of 1 witnesses (quorum 1)"),
        "{out}"
    );
    let (code, out) = d.verify_all(&["--witness", pem(&wpub)]);
    assert_eq!(code, 0, "{out}");
    // The witness serves its latest cosigned checkpoint, which the store holds.
    let (code, out) = d.log_verify(&["--witness", pem(&wpub), "--witness-url", &w.base]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("holds the checkpoint of size 3"), "{out}");
    // A cosignature by another key does not count.
    let other = d.path().join("other");
    keygen_into(&other);
    let (code, out) = d.log_verify(&["--witness", pem(&other.join("seal.pub.pem"))]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("log_witness"), "{out}");
    explain_export_and_stats_take_verifys_witness_flags(&d, &wpub, &other.join("seal.pub.pem"));
}

/// `explain`, `export verdict` and `stats` take `--witness`/`--witness-quorum` as `verify`
/// does and give its verdict: under the witness that cosigned, the run is explained, exported
/// and counted; under one that did not, `verify` says NOT VERIFIED and so do they.
fn explain_export_and_stats_take_verifys_witness_flags(d: &Deployment, good: &Path, bad: &Path) {
    let store = d.store_url();
    let trust = d.seal_pub();
    let run = "run-w-0001";
    let with = |cmd: &[&str], witness: &Path| {
        let mut args: Vec<&str> = cmd.to_vec();
        args.extend_from_slice(&["--store", &store, "--trust", pem(&trust)]);
        args.extend_from_slice(&["--witness", pem(witness), "--witness-quorum", "1"]);
        seal_alone(&args)
    };
    for (witness, code) in [(good, 0), (bad, 1)] {
        let (got, out) = with(&["verify", run], witness);
        assert_eq!(got, code, "verify: {out}");
        let (got, out) = with(&["explain", run], witness);
        assert_eq!(got, code, "explain: {out}");
        // This run was not adapted from an agent-loop design, so a verified run has no Verdict
        // to export; what matters is which check stops it.
        let (got, out) = with(&["export", "verdict", run], witness);
        assert_eq!(got, 1, "export: {out}");
        assert_eq!(out.contains("does NOT VERIFY"), code == 1, "export: {out}");
        let (got, out) = with(&["stats", "--json"], witness);
        assert_eq!(got, 0, "stats: {out}");
        let listed = out.contains(r#""notVerifiedRuns":[{"#);
        assert_eq!(
            listed,
            code == 1,
            "stats under {}: {out}",
            witness.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_sends_every_new_checkpoint_to_its_witnesses() {
    let d = Deployment::new().await;
    let wkeys = d.path().join("w1");
    let w = spawn_witness(
        &wkeys,
        &d.path().join("w1.json"),
        &d.seal_pub(),
        "w1.test/witness",
    );
    write_config(
        d.path(),
        &[("w1.test/witness", &w.base, &wkeys.join("seal.pub.pem"))],
        None,
    );
    let daemon = spawn_daemon(d.path(), &d.lb, "file://./store", &[]);
    let c = daemon.client();
    for n in 1..=3 {
        let dir = run_folder(
            d.path(),
            "run-narrative-0010-pass",
            &format!("run-d-{n:04}"),
        );
        let folder = RunFolder::read(&dir, 1 << 26).unwrap();
        c.submit(&folder).await;
        c.roll(&folder, 1).await.expect(StatusCode::OK);
        c.finalize(folder.run()).await.expect(StatusCode::OK);
        // The cosignature arrives in the background, shortly after the finalize answered.
        // Size 1 is the judge policy's registration (logged once the daemon's log is
        // admitted), so run n's seal makes the tree of size n + 1.
        let t0 = Instant::now();
        while cosignatures(&d.store(), n + 1).is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no cosignature of size {}; daemon: {}; witness: {}",
                n + 1,
                daemon.log_text(),
                w.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The sender stores a cosignature, then counts it: the last count may come a moment
    // after the last cosignature is seen in the store. Every cosignature stored is counted
    // once: the three seals', and the policy registration's unless the sender had already
    // moved on to a newer checkpoint when it came to send it.
    let stored = (1..=4)
        .filter(|&size| !cosignatures(&d.store(), size).is_empty())
        .count();
    assert!(stored >= 3, "{stored} cosigned checkpoints");
    let want = format!(
        "seal_witness_submissions_total{{witness=\"w1.test/witness\",result=\"cosigned\"}} {stored}\n"
    );
    let t0 = Instant::now();
    loop {
        let metrics = c.metrics().await.text();
        if metrics.contains(&want) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "want {want}: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_of_m_cosignatures_are_enforced_and_a_failing_witness_never_blocks_sealing() {
    let d = Deployment::new().await;
    let (k1, k2) = (d.path().join("w1"), d.path().join("w2"));
    let w1 = spawn_witness(
        &k1,
        &d.path().join("w1.json"),
        &d.seal_pub(),
        "w1.test/witness",
    );
    keygen_into(&k2);
    // Witness 2 is configured but down: nothing listens on its port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (p1, p2) = (k1.join("seal.pub.pem"), k2.join("seal.pub.pem"));
    write_config(
        d.path(),
        &[
            ("w1.test/witness", &w1.base, &p1),
            ("w2.test/witness", &down, &p2),
        ],
        Some(1),
    );
    let t0 = Instant::now();
    let stderr = d.seal_run(1).await;
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "sealing waited on the dead witness"
    );
    assert!(stderr.contains("witness unreachable"), "{stderr}");
    assert_eq!(cosignatures(&d.store(), 1).len(), 1);
    // Two witnesses required: one cosigned, the other is named missing.
    let both = ["--witness", pem(&p1), "--witness", pem(&p2)];
    let (code, out) = d.log_verify(&both);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("log_witness") && out.contains("cosigned by 1 of 2"),
        "{out}"
    );
    let (code, out) = d.verify_all(&both);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("lacks a quorum of witness cosignatures"),
        "{out}"
    );
    // One of the two suffices when the quorum says so.
    let one = [
        "--witness",
        pem(&p1),
        "--witness",
        pem(&p2),
        "--witness-quorum",
        "1",
    ];
    let (code, out) = d.log_verify(&one);
    assert_eq!(code, 0, "{out}");
    let (code, out) = d.verify_all(&one);
    assert_eq!(code, 0, "{out}");
    config_witnesses_and_quorum_apply(d.path());
    // A quorum above the witnesses given is refused as a bad option.
    let (code, out) = d.log_verify(&["--witness", pem(&p1), "--witness-quorum", "2"]);
    assert_eq!(code, 2, "{out}");
}

/// `seal log verify` run where the config names the witnesses: its quorum (1) holds, a quorum
/// of 2 fails naming the witness (by its configured name) that did not cosign.
fn config_witnesses_and_quorum_apply(dir: &Path) {
    // The config's witnesses and quorum apply too (names from the config).
    let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(dir).args([
        "log",
        "verify",
        "--store",
        "file://./store",
        "--trust",
        "keys/seal.pub.pem",
    ]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(dir).args([
        "log",
        "verify",
        "--store",
        "file://./store",
        "--trust",
        "keys/seal.pub.pem",
        "--witness-quorum",
        "2",
    ]);
    let out = c.output().unwrap();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("missing: w2.test/witness"), "{said}");
}

/// The log's key and tree, signing checkpoints as seal does.
struct TestLog {
    key: seal_core::sealing::SigningKey,
    tree: Tree,
}

impl TestLog {
    fn note(&self, size: u64) -> String {
        let body = tlog::checkpoint_body(ORIGIN, size, &self.tree.root(size).unwrap()).unwrap();
        tlog::sign_checkpoint(&body, &self.key.public().raw(), &|m| self.key.sign(m)).unwrap()
    }
    fn grow(&mut self, tag: &str, n: usize) {
        for i in 0..n {
            self.tree.push(format!("{tag} {i}").as_bytes()).unwrap();
        }
    }
}

/// A witness trusting a fresh log key: (the witness, the log, the witness's public key).
fn witness_and_log(dir: &Path) -> (WitnessProc, TestLog, [u8; 32]) {
    let log_keys = dir.join("log");
    keygen_into(&log_keys);
    let key = seal_fs::keys::load_signing_key(&log_keys.join("seal.key.pem")).unwrap();
    let w = spawn_witness(
        &dir.join("w"),
        &dir.join("w.json"),
        &log_keys.join("seal.pub.pem"),
        "w.test/witness",
    );
    let public = seal_fs::keys::load_public_key(&dir.join("w/seal.pub.pem"))
        .unwrap()
        .raw();
    (
        w,
        TestLog {
            key,
            tree: Tree::new(),
        },
        public,
    )
}

async fn add(base: &str, old: u64, proof: &[[u8; 32]], note: &str) -> (StatusCode, String, String) {
    let r = http()
        .post(protocol::add_checkpoint_url(base))
        .body(protocol::encode_add_checkpoint(old, proof, note.as_bytes()))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let ctype = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ctype, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_or_rolled_back_checkpoint_is_refused_by_the_witness() {
    let dir = tempfile::tempdir().unwrap();
    let (w, mut log, _) = witness_and_log(dir.path());
    log.grow("honest", 4);
    let (status, _, _) = add(&w.base, 0, &[], &log.note(3)).await;
    assert_eq!(status, StatusCode::OK);
    // A stale old size: 409 with the witness's size, as text/x.tlog.size.
    let (status, ctype, body) = add(&w.base, 0, &[], &log.note(4)).await;
    assert_eq!(
        (status, ctype.as_str(), body.as_str()),
        (StatusCode::CONFLICT, "text/x.tlog.size", "3\n")
    );
    // A rollback to size 2: refused.
    let (status, _, _) = add(&w.base, 3, &[], &log.note(2)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A fork: another tree of size 3, then of size 4, signed by the log's own key.
    let mut fork = TestLog {
        key: seal_fs::keys::load_signing_key(&dir.path().join("log/seal.key.pem")).unwrap(),
        tree: Tree::new(),
    };
    fork.grow("forked", 4);
    let (status, _, body) = add(&w.base, 3, &[], &fork.note(3)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let proof = fork.tree.consistency(3, 4).unwrap();
    let (status, _, body) = add(&w.base, 3, &proof, &fork.note(4)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // Another key for the same origin: 403; another origin: 404.
    let mut stranger = TestLog {
        key: seal_fs::keys::generate_signing_key(),
        tree: Tree::new(),
    };
    stranger.grow("honest", 4);
    let proof = stranger.tree.consistency(3, 4).unwrap();
    let (status, _, _) = add(&w.base, 3, &proof, &stranger.note(4)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let other = tlog::checkpoint_body("other.test/log", 0, &[0u8; 32]).unwrap();
    let other =
        tlog::sign_checkpoint(&other, &log.key.public().raw(), &|m| log.key.sign(m)).unwrap();
    let (status, _, _) = add(&w.base, 0, &[], &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The honest extension is still cosigned.
    let proof = log.tree.consistency(3, 4).unwrap();
    let (status, _, body) = add(&w.base, 3, &proof, &log.note(4)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    http_edges(&w.base).await;
}

/// Bodies over the bound, unknown routes and logs the witness never cosigned.
async fn http_edges(base: &str) {
    let c = http();
    let big = c
        .post(protocol::add_checkpoint_url(base))
        .body(vec![b'o'; protocol::MAX_BODY_BYTES + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let get = c
        .get(protocol::add_checkpoint_url(base))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let none = c
        .get(protocol::checkpoint_url(base, "never.test/log"))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_consistency_proof_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (w, mut log, wpub) = witness_and_log(dir.path());
    log.grow("leaf", 7);
    assert_eq!(add(&w.base, 0, &[], &log.note(3)).await.0, StatusCode::OK);
    let good = log.tree.consistency(3, 7).unwrap();
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i][31] ^= 0x80;
        let (status, _, body) = add(&w.base, 3, &bad, &log.note(7)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "hash {i}: {body}");
    }
    let (status, _, body) = add(&w.base, 3, &good[..good.len() - 1], &log.note(7)).await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a short proof: {body}"
    );
    let (status, _, line) = add(&w.base, 3, &good, &log.note(7)).await;
    assert_eq!(status, StatusCode::OK, "{line}");
    let c = cosig::Cosignature::parse_line(line.as_bytes())
        .unwrap()
        .unwrap();
    let body = tlog::checkpoint_body(ORIGIN, 7, &log.tree.root(7).unwrap()).unwrap();
    let key = cosig::WitnessKey {
        name: Some("w.test/witness".into()),
        public: wpub,
    };
    assert!(c.verifies(body.as_bytes(), &key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_witness_keeps_what_it_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, mut log, _) = witness_and_log(dir.path());
    log.grow("leaf", 5);
    assert_eq!(add(&w.base, 0, &[], &log.note(3)).await.0, StatusCode::OK);
    // kill -9 right after the answer: the size was on disk before the witness answered.
    w.kill_9();
    let w = spawn_witness(
        &dir.path().join("w"),
        &dir.path().join("w.json"),
        &dir.path().join("log/seal.pub.pem"),
        "w.test/witness",
    );
    let (status, _, body) = add(&w.base, 0, &[], &log.note(2)).await;
    assert_eq!((status, body.as_str()), (StatusCode::CONFLICT, "3\n"));
    let served = http()
        .get(protocol::checkpoint_url(&w.base, ORIGIN))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        served.starts_with(&tlog::checkpoint_body(ORIGIN, 3, &log.tree.root(3).unwrap()).unwrap()),
        "{served}"
    );
    let proof = log.tree.consistency(3, 5).unwrap();
    assert_eq!(
        add(&w.base, 3, &proof, &log.note(5)).await.0,
        StatusCode::OK
    );
    // A second witness on the same state file refuses to start.
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args([
            "witness",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--name",
            "w.test/witness",
        ])
        .arg("--key")
        .arg(dir.path().join("w/seal.key.pem"))
        .arg("--state")
        .arg(dir.path().join("w.json"))
        .arg("--log-key")
        .arg(dir.path().join("log/seal.pub.pem"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("another process holds"),
        "{}",
        text(&out.stderr)
    );
}

/// The runs `seal verify --json` reports as not verified.
fn unverified_runs(ndjson: &str) -> usize {
    ndjson
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["runId"].is_string() && v["verified"] == false)
        .count()
}

/// G3: the store is rolled back as a whole (runs, log entries, checkpoints and cosignatures
/// together, as a backup restore would) and the log's own checks pass; the witness, which
/// cosigned the larger tree, refuses the next checkpoint, and a verifier trusting only the
/// seal key and the witness key fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_store_rollback_is_caught_through_a_witness_alone() {
    let d = Deployment::new().await;
    let wkeys = d.path().join("w");
    let w = spawn_witness(
        &wkeys,
        &d.path().join("w.json"),
        &d.seal_pub(),
        "w.test/witness",
    );
    let wpub = wkeys.join("seal.pub.pem");
    write_config(d.path(), &[("w.test/witness", &w.base, &wpub)], None);
    d.seal_run(1).await;
    d.seal_run(2).await;
    let snapshot = d.path().join("snapshot");
    copy_tree(&d.store(), &snapshot);
    d.seal_run(3).await;
    d.seal_run(4).await;
    // The judge policy's leaf, then four seals.
    assert_eq!(cosignatures(&d.store(), 5).len(), 1, "{}", w.log_text());
    let witness = ["--witness", pem(&wpub)];
    assert_eq!(d.log_verify(&witness).0, 0);
    // Restore the snapshot: runs 3 and 4, their entries, checkpoints and cosignatures vanish.
    std::fs::remove_dir_all(d.store()).unwrap();
    copy_tree(&snapshot, &d.store());
    // Before any new checkpoint, the restored latest one still carries its cosignature: the
    // store looks whole, and only the witness's own latest checkpoint shows the rollback.
    assert_eq!(d.log_verify(&witness).0, 0);
    let (code, out) = d.log_verify(&["--witness-url", &w.base]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("log_witness") && out.contains("rolled back"),
        "{out}"
    );
    // The next seal: sealing goes on, but the witness refuses the rolled-back checkpoint.
    let stderr = d.seal_run(5).await;
    assert!(stderr.contains("ROLLED BACK"), "{stderr}");
    assert!(
        cosignatures(&d.store(), 4).is_empty(),
        "the witness cosigned a rollback"
    );
    // The log is consistent in itself: without witnesses it verifies.
    let (code, out) = d.log_verify(&[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = d.verify_all(&[]);
    assert_eq!(code, 0, "{out}");
    // With the witness key, both verifiers fail, naming the missing cosignature quorum.
    let (code, out) = d.log_verify(&witness);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("log_witness") && out.contains("lacks a quorum of witness cosignatures"),
        "{out}"
    );
    assert!(
        out.contains("missing: w.test/witness") || out.contains("missing: witness key"),
        "{out}"
    );
    let (code, out) = d.verify_all(&witness);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("log_witness") && out.contains("lacks a quorum of witness cosignatures"),
        "{out}"
    );
    let reports = d.verify_all(&["--json", "--witness", pem(&wpub)]).1;
    assert_eq!(
        unverified_runs(&reports),
        3,
        "every run relies on that checkpoint: {reports}"
    );
}
