//! The transparency log of seals (docs/DESIGN.md §13): seal's Merkle and note code against the
//! RFC 6962 and C2SP test vectors, the independent Python verifier (`tools/verify_log.py`)
//! against every proof seal prints, a kill -9 between the log append and the seal (completed
//! by the next finalize, logged once). The guard and `seal log rebuild`: tests/it/log_guard.rs. Three replicas sealing 300 runs into one S3 log: tests/it/replicas.rs.
//!
//! The Python checks need `python3` with `cryptography` (skipped with a message unless
//! `SEAL_REQUIRE_PYTHON=1`); the replica test needs the S3 test server (`SEAL_TEST_S3_ENDPOINT`).

use crate::common;

use common::*;
use seal_core::tlog::{self, Tree};
use seal_testkit::client::SealClient;
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn vectors() -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tlog/vectors.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn hexes(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn merkle_and_note_code_meet_the_rfc6962_and_c2sp_vectors() {
    let v = vectors();
    let leaves: Vec<Vec<u8>> = hexes(&v["leaves"])
        .iter()
        .map(|h| hex::decode(h).unwrap())
        .collect();
    let mut tree = Tree::new();
    for l in &leaves {
        tree.push(l).unwrap();
    }
    for (size, root) in v["roots"].as_object().unwrap() {
        let size: u64 = size.parse().unwrap();
        assert_eq!(tlog::hex(&tree.root(size).unwrap()), root.as_str().unwrap());
    }
    for t in v["inclusion"].as_array().unwrap() {
        let (size, index) = (t["size"].as_u64().unwrap(), t["index"].as_u64().unwrap());
        let proof = tree.inclusion(index, size).unwrap();
        assert_eq!(
            proof.iter().map(tlog::hex).collect::<Vec<_>>(),
            hexes(&t["path"])
        );
        let leaf = tlog::leaf_hash(&leaves[index as usize]);
        tlog::check_inclusion(&proof, size, &tree.root(size).unwrap(), index, &leaf).unwrap();
    }
    for t in v["consistency"].as_array().unwrap() {
        let (old, new) = (t["old"].as_u64().unwrap(), t["new"].as_u64().unwrap());
        let proof = tree.consistency(old, new).unwrap();
        assert_eq!(
            proof.iter().map(tlog::hex).collect::<Vec<_>>(),
            hexes(&t["proof"])
        );
        let (o, n) = (tree.root(old).unwrap(), tree.root(new).unwrap());
        tlog::check_consistency(&proof, old, &o, new, &n).unwrap();
        if old < new {
            assert!(tlog::check_consistency(&proof, old, &n, new, &n).is_err());
        }
    }
    // C2SP signed-note: the spec's example key reproduces its key id and verifier key.
    let vkey = v["signed_note"]["verifier_key"].as_str().unwrap();
    let (name, rest) = vkey.split_once('+').unwrap();
    let (_, b64) = rest.split_once('+').unwrap();
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let public: [u8; 32] = raw[1..].try_into().unwrap();
    assert_eq!(tlog::verifier_key(name, &public), vkey);
    assert_eq!(
        format!("{:08x}", tlog::note_key_id(name, &public)),
        "c74f20a3"
    );
}

/// Whether `python3` can import `cryptography`; panics in CI (`SEAL_REQUIRE_PYTHON=1`) if not.
fn python_ready(test: &str) -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import cryptography.hazmat.primitives.asymmetric.ed25519",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("SEAL_REQUIRE_PYTHON").as_deref() == Ok("1") {
            panic!("SEAL_REQUIRE_PYTHON=1 but python3 cannot import cryptography");
        }
        eprintln!("SKIPPED {test}: python3 with the cryptography package is needed");
    }
    ok
}

fn python(args: &[&str]) -> (i32, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/verify_log.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let text = format!("{}{}", text(&out.stdout), text(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn seal_bin(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty() || out.status.code() != Some(0),
        "{}",
        text(&out.stderr)
    );
    let code = out.status.code().unwrap_or(-1);
    if code == 0 {
        (code, text(&out.stdout))
    } else {
        // The failure's own words, for the assertion message.
        (code, format!("{}{}", text(&out.stdout), text(&out.stderr)))
    }
}

#[test]
fn the_independent_script_agrees_with_seal_on_every_proof() {
    if !python_ready("the_independent_script_agrees_with_seal_on_every_proof") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = file_url(&fixture_store_dir());
    let pem = fixture_trust_pem();
    let pem = pem.to_str().unwrap();
    let vectors = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tlog/vectors.json");
    let (code, out) = python(&["vectors", vectors.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    // The checkpoint, exactly as `seal log checkpoint` prints it.
    let (code, note) = seal_bin(&["log", "checkpoint", "--store", &store, "--trust", pem]);
    assert_eq!(code, 0, "{note}");
    let cp = dir.path().join("checkpoint");
    std::fs::write(&cp, &note).unwrap();
    let (code, out) = python(&["checkpoint", cp.to_str().unwrap(), "--pub", pem]);
    assert_eq!(code, 0, "{out}");
    // Every run's inclusion proof.
    for run in fixture_run_ids() {
        let (code, json) = seal_bin(&[
            "log", "prove", &run, "--store", &store, "--trust", pem, "--json",
        ]);
        assert_eq!(code, 0, "{run}");
        let p = dir.path().join(format!("{run}.json"));
        std::fs::write(&p, &json).unwrap();
        let (code, out) = python(&["inclusion", p.to_str().unwrap(), "--pub", pem]);
        assert_eq!(code, 0, "{run}: {out}");
        // A proof for another leaf fails.
        let mut v: Value = serde_json::from_str(&json).unwrap();
        v["leafIndex"] = (v["leafIndex"].as_u64().unwrap() ^ 1).into();
        std::fs::write(&p, v.to_string()).unwrap();
        let (code, out) = python(&["inclusion", p.to_str().unwrap(), "--pub", pem]);
        assert_eq!(code, 1, "{run}: a moved leaf must fail: {out}");
    }
    // Consistency from every older checkpoint to the latest.
    let cps = fixture_store_dir().join("log/checkpoints");
    for e in std::fs::read_dir(&cps).unwrap() {
        let old = e.unwrap().path();
        let (code, json) = seal_bin(&[
            "log",
            "verify",
            "--store",
            &store,
            "--trust",
            pem,
            "--json",
            "--checkpoint",
            old.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{json}");
        let rep = dir.path().join("report.json");
        std::fs::write(&rep, &json).unwrap();
        let (code, out) = python(&[
            "consistency",
            old.to_str().unwrap(),
            rep.to_str().unwrap(),
            "--pub",
            pem,
        ]);
        assert_eq!(code, 0, "{}: {out}", old.display());
    }
    let (code, out) = python(&["tree", fixture_store_dir().to_str().unwrap(), "--pub", pem]);
    assert_eq!(code, 0, "{out}");
    // A checkpoint signed by another key is refused.
    let other = tempfile::tempdir().unwrap();
    seal_fs::keys::write_key_pair(&seal_fs::keys::generate_signing_key(), other.path()).unwrap();
    let other_pem = other.path().join("seal.pub.pem");
    let (code, out) = python(&[
        "checkpoint",
        cp.to_str().unwrap(),
        "--pub",
        other_pem.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
}

/// The independent script holds leaves to the same rule as seal: one past every checkpoint
/// counts only with an `auth` by the seal key for this origin and its own index.
#[test]
fn the_independent_script_authenticates_leaves_past_the_latest_checkpoint() {
    if !python_ready("the_independent_script_authenticates_leaves_past_the_latest_checkpoint") {
        return;
    }
    let (dir, root) = copy_fixture_store();
    let pem = fixture_trust_pem();
    let pem = pem.to_str().unwrap();
    // The fixture key, as a private key file must be (mode 0600).
    let key_file = dir.path().join("seal.key.pem");
    std::fs::copy(
        sealed_fixtures().join("keys/test-only/seal.key.pem"),
        &key_file,
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let key = seal_fs::keys::load_signing_key(&key_file).unwrap();
    let next = entries(&root) as u64;
    let ghost = tlog::LogEntry {
        run_id: "run-ghost-0001".into(),
        evidence_sha256: "ab".repeat(32),
        seal_sha256: "cd".repeat(32),
        key_id: key.key_id.clone(),
        outcome: "pass".into(),
        decided_at: "2026-12-01T00:00:00Z".into(),
        acceptance_mode: "live".into(),
        parent_run_id: None,
    }
    .to_bytes()
    .unwrap();
    let at = root.join(format!("log/entries/{next:020}"));
    let store = root.to_str().unwrap();
    // The leaves before it, as the script hashes them.
    let mut tree = Tree::new();
    for i in 0..next {
        tree.push(&std::fs::read(root.join(format!("log/entries/{i:020}"))).unwrap())
            .unwrap();
    }
    let signed = |index: u64, origin: &str| {
        let place = tlog::Place {
            index,
            prefix_root: tree.root(next).unwrap(),
        };
        tlog::sign_leaf(&ghost, origin, &place, &|m| key.sign(m)).unwrap()
    };
    std::fs::write(&at, signed(next, tlog::DEFAULT_ORIGIN)).unwrap();
    let (code, out) = python(&["tree", store, "--pub", pem]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 past the latest authenticated"), "{out}");
    let after_other_leaves = {
        let place = tlog::Place {
            index: next,
            prefix_root: tree.root(next - 1).unwrap(),
        };
        tlog::sign_leaf(&ghost, tlog::DEFAULT_ORIGIN, &place, &|m| key.sign(m)).unwrap()
    };
    for (what, bytes) in [
        ("no auth", ghost.clone()),
        ("after other leaves", after_other_leaves),
        ("another index", signed(next + 1, tlog::DEFAULT_ORIGIN)),
        ("another log", signed(next, "seal.staging/log")),
    ] {
        std::fs::write(&at, bytes).unwrap();
        let (code, out) = python(&["tree", store, "--pub", pem]);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.contains("planted"), "{what}: {out}");
    }
}

fn entries(store: &Path) -> usize {
    std::fs::read_dir(store.join("log/entries"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_between_the_log_append_and_the_seal_is_completed_by_the_next_finalize() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let run = "run-narrative-0010-pass";
    let mut judge = seal_cmd_with(
        dir.path(),
        &lb,
        "sk-a",
        "sk-b",
        "log-salt-0123456789abcdef0123456789abcdef",
    );
    judge
        .arg("judge")
        .arg(example(run))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"])
        .env(seal_log::APPEND_DELAY_ENV, "60000")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = judge.spawn().unwrap();
    let store = dir.path().join("store");
    // Leaf 0 registers the judge policy (before the judges are asked); leaf 1 is the seal's.
    let entry = store.join("log/entries/00000000000000000001");
    let checkpoint = store.join("log/checkpoints/00000000000000000002");
    let t0 = Instant::now();
    while !(entry.exists() && checkpoint.exists()) {
        assert!(t0.elapsed() < Duration::from_secs(60), "never logged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // kill -9 in the window between the log append and the seal.
    child.kill().unwrap();
    child.wait().unwrap();
    let seal = store.join(format!("runs/{run}/seal.dsse.json"));
    assert!(!seal.exists(), "killed before the seal was stored");
    let logged: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    let pem = dir.path().join("keys/seal.pub.pem");
    let pem = pem.to_str().unwrap();
    let url = file_url(&store);
    // What it is: a logged run whose seal is not stored. An auditor cannot tell it from a
    // deleted seal, so it fails the log (`seal_missing`), saying how an interrupted finalize
    // is completed; it is not called planted.
    let (code, out) = seal_bin(&["log", "verify", "--store", &url, "--trust", pem]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("its seal not stored yet"), "{out}");
    assert!(out.contains("[seal_missing]"), "{out}");
    assert!(out.contains("finalize the run again"), "{out}");
    assert!(!out.contains("planted"), "{out}");
    // The daemon starts (nothing hidden), and finalizing the run stores the very seal logged;
    // finalizing again, after a restart, appends nothing.
    for _ in 0..2 {
        // The same deployment secret as the `seal judge` that was killed (replicas share it).
        let d = spawn_daemon(
            dir.path(),
            &lb,
            "file://./store",
            &[(
                "SEAL_SEED_SALT",
                "log-salt-0123456789abcdef0123456789abcdef",
            )],
        );
        let c = d.client();
        let done = c.finalize(run).await;
        assert_eq!(done.status, 200, "{}", done.text());
        let proof = c.log_proof(run).await.json();
        assert_eq!(
            (proof["leafIndex"].as_u64(), proof["treeSize"].as_u64()),
            (Some(1), Some(2)),
            "{proof}"
        );
        // The tree as a tlog-tiles client reads it: the stored tile, and nothing past it.
        let served = c.tile("8/0/000.p/2").await;
        assert_eq!(served.status, 200);
        let stored_tile = std::fs::read(store.join("log/tile/8/0/000.p/2")).unwrap();
        assert_eq!(served.body[..], stored_tile[..]);
        assert_eq!(c.tile("8/0/000.p/3").await.status, 404);
        for hostile in [
            "8/0/000.p/0",
            "8/0/000.p/00",
            "8/200/000",
            "8/data/000",
            "..%2F..%2Fx",
        ] {
            assert_eq!(c.tile(hostile).await.status, 400, "{hostile}");
        }
        assert_eq!(entries(&store), 2);
        assert!(!d.log_text().contains("missing from the log"));
        drop(d);
    }
    let stored = seal_core::canonical::Hash::of(&std::fs::read(&seal).unwrap()).to_string();
    assert_eq!(logged["sealSha256"].as_str(), Some(stored.as_str()));
    let (code, out) = seal_bin(&["log", "verify", "--store", &url, "--trust", pem]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 entries, 1 runs"), "{out}");
    assert!(!out.contains("not stored yet"), "{out}");
    let (code, out) = seal_bin(&["verify", run, "--store", &url, "--trust", pem]);
    assert_eq!(code, 0, "{out}");
}

/// The store writer plants a note under a larger size than the log's latest checkpoint, and a
/// file larger than any checkpoint above it; then rewrites the latest checkpoint with a
/// signature line of its own (an unknown key's line rides along: C2SP notes carry
/// cosignatures) that holds a C1 control and a bidi override. Neither `seal log checkpoint`
/// nor `GET /v1/log/checkpoint` passes a planted note on, and the CLI writes the foreign
/// line's controls as text.
#[tokio::test]
async fn a_planted_checkpoint_is_neither_printed_nor_served() {
    use base64::Engine as _;
    let (_dir, root) = copy_fixture_store();
    let store = file_url(&root);
    let pem = fixture_trust_pem();
    let pem = pem.to_str().unwrap();
    let head = || seal_bin(&["log", "checkpoint", "--store", &store, "--trust", pem]);
    let (code, genuine) = head();
    assert_eq!(code, 0, "{genuine}");
    assert!(genuine.starts_with("seal.local/log\n11\n"), "{genuine}");
    let cps = root.join("log/checkpoints");
    std::fs::write(
        cps.join(format!("{:020}", 12)),
        genuine.replacen("\n11\n", "\n12\n", 1),
    )
    .unwrap();
    std::fs::write(cps.join(format!("{:020}", 13)), vec![b'x'; 1 << 20]).unwrap();
    assert_eq!(
        head(),
        (0, genuine.clone()),
        "the CLI passes the planted ones over"
    );

    // The daemon, trusting the fixtures' key, serves the same.
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let engine = seal_engine::engine::Engine::new(
        seal_store::Store::open(&store).await.unwrap(),
        config_for(&lb, &[]),
        Some(seal_fs::keys::generate_signing_key()),
    )
    .unwrap();
    let trusted = vec![seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (_stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(seal_server::run(
        listener,
        seal_server::AppState::new(engine, trusted),
        async move {
            let _ = rx.await;
        },
    ));
    let r = SealClient::new(base).checkpoint().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), genuine, "the daemon serves the signed one");

    // A foreign signature line with controls, beside seal's valid one: the note still
    // verifies, and its controls reach the terminal as text.
    let sig = base64::engine::general_purpose::STANDARD.encode([0u8; 68]);
    let hostile = format!("{genuine}\u{2014} evil\u{9b}2J\u{202e}x {sig}\n");
    std::fs::write(cps.join(format!("{:020}", 11)), &hostile).unwrap();
    let (code, out) = head();
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with(&genuine), "{out}");
    assert!(
        out.contains("evil\\u{9b}2J\\u{202e}x"),
        "controls written as text: {out:?}"
    );
    assert!(
        !out.contains('\u{9b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    // The same note in a run's inclusion proof.
    let run = &fixture_run_ids()[0];
    let (code, out) = seal_bin(&["log", "prove", run, "--store", &store, "--trust", pem]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("evil\\u{9b}2J\\u{202e}x"), "{out:?}");
    assert!(
        !out.contains('\u{9b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
}
