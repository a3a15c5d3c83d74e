//! The independent verifier (`tools/verify_sealed_run.py`, docs/VERIFYING.md) against runs seal
//! really sealed: it accepts every example run, names each tampered object, rejects envelopes
//! not signed by the trusted key, and the worked example in the docs is what seal produces.
//!
//! It needs `python3` with the `cryptography` package. Without them the tests print SKIPPED,
//! unless `SEAL_REQUIRE_PYTHON=1` (CI), where a missing interpreter or package is a failure.

use crate::common;

use base64::Engine as _;
use common::*;
use seal_core::canonical::{canonical_bytes, Hash};
use seal_core::ids::RunId;
use seal_core::sealing::{self, Predicate, SigningKey, Statement};
use seal_engine::judge_run::judge;
use seal_fs::runfolder::RunFolder;
use seal_testkit::loopback::{Fault, Loopback};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Whether `python3` can import `cryptography`; panics in CI (`SEAL_REQUIRE_PYTHON=1`) if not.
fn python_ready(test: &str) -> bool {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import cryptography.hazmat.primitives.asymmetric.ed25519",
        ])
        .output();
    let reason = match probe {
        Ok(o) if o.status.success() => return true,
        Ok(o) => format!(
            "python3 cannot import the `cryptography` package ({}); run `python3 -m pip install cryptography`",
            String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("")
        ),
        Err(e) => format!("python3 is not runnable ({e})"),
    };
    if std::env::var("SEAL_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("SEAL_REQUIRE_PYTHON=1 but {reason}");
    }
    eprintln!("SKIPPED {test}: {reason} (CI sets SEAL_REQUIRE_PYTHON=1 to make this a failure)");
    false
}

/// Example runs sealed into a file store, and the public key to trust.
struct Sealed {
    _dir: tempfile::TempDir,
    store: PathBuf,
    pub_pem: PathBuf,
    /// The id of the key that sealed the runs.
    key_id: String,
    runs: Vec<(RunId, seal_engine::postguard::Finalized)>,
}

fn seal_examples() -> Sealed {
    seal_runs(&EXAMPLES, |_| {})
}

/// Seals the named example runs against a loopback judge prepared by `setup`.
fn seal_runs(names: &[&str], setup: impl FnOnce(&Loopback)) -> Sealed {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let (key_id, pub_pem, runs) = rt.block_on(async {
        let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
        personas(&lb);
        setup(&lb);
        let engine = engine_with(&lb, &format!("file://{}", store.display()), &[]).await;
        let mut runs = Vec::new();
        for name in names {
            let folder = RunFolder::read(&example(name), 1 << 26).unwrap();
            let done = judge(&engine, &folder)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            runs.push((folder.run().clone(), done));
        }
        let key = engine.key().expect("engine has a key");
        let (_, pub_pem) = seal_fs::keys::write_key_pair(key, &dir.path().join("key")).unwrap();
        (key.key_id.clone(), pub_pem, runs)
    });
    Sealed {
        _dir: dir,
        store,
        pub_pem,
        key_id,
        runs,
    }
}

/// Runs the script; (exit code, stdout + stderr).
fn verifier(store: &Path, run: &str, pub_pem: &Path) -> (i32, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/verify_sealed_run.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--store")
        .arg(store)
        .args(["--run", run])
        .arg("--pub")
        .arg(pub_pem)
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Flips one bit of the byte in the middle of the object at `key` (a fresh file, so that no
/// hard link or permission of the store's file matters).
fn flip_byte(store: &Path, key: &str) {
    let path = store.join(key);
    let mut bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{key}: {e}"));
    let i = bytes.len() / 2;
    bytes[i] ^= 0x01;
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, bytes).unwrap();
}

fn replace(store: &Path, key: &str, bytes: &[u8]) {
    let path = store.join(key);
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, bytes).unwrap();
}

fn stored_json(store: &Path, key: &str) -> Value {
    serde_json::from_slice(&std::fs::read(store.join(key)).unwrap()).unwrap()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer}"))
}

#[test]
fn python_verifier_accepts_every_sealed_example() {
    if !python_ready("python_verifier_accepts_every_sealed_example") {
        return;
    }
    let s = seal_examples();
    for (run, _) in &s.runs {
        let (code, out) = verifier(&s.store, run.as_str(), &s.pub_pem);
        println!("{out}");
        assert_eq!(code, 0, "{run}: {out}");
        assert!(out.contains(&s.key_id), "{run}: keyid not reported: {out}");
    }
}

/// The sealed fixtures committed in the repository verify with their test-only public key.
#[test]
fn python_verifier_accepts_the_committed_sealed_fixtures() {
    if !python_ready("python_verifier_accepts_the_committed_sealed_fixtures") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sealed-fixtures");
    let store = root.join("store");
    let pub_pem = root.join("keys/test-only/seal.pub.pem");
    let mut runs: Vec<String> = std::fs::read_dir(store.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    assert!(
        !runs.is_empty(),
        "no sealed fixtures under {}",
        store.display()
    );
    for run in &runs {
        let (code, out) = verifier(&store, run, &pub_pem);
        assert_eq!(code, 0, "{run}: {out}");
    }
}

/// Retried attempts (a transport error stored as a failure record, a 500) and a slot that
/// never answered: every attempt is bound and verifies.
#[test]
fn python_verifier_accepts_retried_and_failed_slots() {
    if !python_ready("python_verifier_accepts_retried_and_failed_slots") {
        return;
    }
    let s = seal_runs(&["run-narrative-0010-pass"], |lb| {
        let garbage = || Fault::Content("no verdict here".into());
        lb.script(MODEL_A, [garbage(), garbage(), garbage()]);
        let status = Fault::Status {
            code: 500,
            body: "oops".into(),
            retry_after: None,
        };
        lb.script(MODEL_B, [Fault::Reset, status]);
    });
    let (run, done) = &s.runs[0];
    let store = &s.store;
    let attempts = |slot: &str| -> Vec<Value> {
        let key = format!("/rolls/0/judge{slot}Ref/normalizedRef");
        let result = stored_json(
            store,
            str_at(&serde_json::to_value(done.evidence()).unwrap(), &key),
        );
        result["attempts"].as_array().unwrap().clone()
    };
    assert_eq!(attempts("A").len(), 3, "judge A: three failed attempts");
    assert_eq!(
        attempts("B").len(),
        3,
        "judge B: two failures, then an answer"
    );
    let (code, out) = verifier(store, run.as_str(), &s.pub_pem);
    assert_eq!(code, 0, "{out}");

    // A failed attempt's stored transport-error record is bound like any answer.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(store, copy.path());
    let key = format!("runs/{run}/roll-1/judge-b/attempt-1/raw.json");
    flip_byte(copy.path(), &key);
    let (code, out) = verifier(copy.path(), run.as_str(), &s.pub_pem);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("FAIL {key}: stored bytes do not hash")),
        "{out}"
    );
}

#[test]
fn python_verifier_names_each_tampered_object() {
    if !python_ready("python_verifier_names_each_tampered_object") {
        return;
    }
    let s = seal_examples();
    let run = "run-narrative-0010-pass";
    let ev = stored_json(&s.store, &format!("runs/{run}/evidence.json"));
    let proof = stored_json(&s.store, str_at(&ev, "/rolls/0/proofPackageRef"));
    let normalized_b = stored_json(&s.store, str_at(&ev, "/rolls/0/judgeBRef/normalizedRef"));
    let attempt_b = normalized_b["attempts"][0]["attempt"].as_u64().unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("evidence", format!("runs/{run}/evidence.json")),
        ("frame blob", str_at(&proof, "/frames/0/ref").to_string()),
        (
            "judge B raw answer",
            str_at(&ev, "/rolls/0/judgeBRef/rawRef").to_string(),
        ),
        (
            "judge A meta",
            format!("runs/{run}/roll-1/judge-a/attempt-1/meta.json"),
        ),
        (
            "judge B request",
            format!("runs/{run}/roll-1/judge-b/attempt-{attempt_b}/request.json"),
        ),
        (
            "image manifest",
            format!("runs/{run}/roll-1/image-manifest.json"),
        ),
        (
            "consensus",
            str_at(&ev, "/rolls/0/judgeConsensusRef").to_string(),
        ),
        (
            "normalized result",
            str_at(&ev, "/rolls/0/judgeARef/normalizedRef").to_string(),
        ),
    ];
    let scratch = tempfile::tempdir().unwrap();
    for (i, (what, key)) in cases.iter().enumerate() {
        let copy = scratch.path().join(format!("flip-{i}"));
        copy_dir(&s.store, &copy);
        flip_byte(&copy, key);
        let (code, out) = verifier(&copy, run, &s.pub_pem);
        assert_eq!(code, 1, "{what} {key} flipped, still: {out}");
        assert!(
            out.contains(&format!("FAIL {key}: stored bytes do not hash")),
            "{what}: {key} not named as the object at fault: {out}"
        );
    }

    // A deleted object is named too.
    let copy = scratch.path().join("deleted");
    copy_dir(&s.store, &copy);
    let key = format!("runs/{run}/roll-1/judge-b/attempt-{attempt_b}/raw.json");
    std::fs::remove_file(copy.join(&key)).unwrap();
    let (code, out) = verifier(&copy, run, &s.pub_pem);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("FAIL {key}: object is missing")),
        "{out}"
    );

    // The seal of one run replayed onto another run.
    let copy = scratch.path().join("replayed");
    copy_dir(&s.store, &copy);
    let other = "run-puzzle-0013-fail-end";
    let seal = std::fs::read(copy.join(format!("runs/{run}/seal.dsse.json"))).unwrap();
    replace(&copy, &format!("runs/{other}/seal.dsse.json"), &seal);
    let (code, out) = verifier(&copy, other, &s.pub_pem);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "FAIL runs/{other}/seal.dsse.json: the subject is not this run's evidence"
        )),
        "{out}"
    );

    // The untouched store still verifies (the copies were independent).
    assert_eq!(verifier(&s.store, run, &s.pub_pem).0, 0);
}

#[test]
fn python_verifier_rejects_envelopes_not_signed_by_the_trusted_key() {
    if !python_ready("python_verifier_rejects_envelopes_not_signed_by_the_trusted_key") {
        return;
    }
    let s = seal_examples();
    let (run, done) = &s.runs[0];
    let seal_key = format!("runs/{run}/seal.dsse.json");
    let other = seal_fs::keys::generate_signing_key();
    let statement =
        seal_core::sealing::statement_for(run, done.evidence(), done.evidence_hash()).unwrap();
    let scratch = tempfile::tempdir().unwrap();

    // The true statement, re-signed by another key.
    let resigned = sealing::sign(&other, &statement).unwrap();
    let copy = scratch.path().join("resigned");
    copy_dir(&s.store, &copy);
    replace(&copy, &seal_key, &canonical_bytes(&resigned).unwrap());
    let (code, out) = verifier(&copy, run.as_str(), &s.pub_pem);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "FAIL {seal_key}: no signature by the trusted key (expected {}, actual {})",
            s.key_id, other.key_id
        )),
        "{out}"
    );

    // A forged statement signed by another key that claims the trusted keyid.
    let mut forged = statement.clone();
    forged.predicate.outcome = "fail".into();
    let mut spoofed = sealing::sign(&other, &forged).unwrap();
    spoofed.signatures[0].keyid = s.key_id.clone();
    let copy = scratch.path().join("spoofed");
    copy_dir(&s.store, &copy);
    replace(&copy, &seal_key, &canonical_bytes(&spoofed).unwrap());
    let (code, out) = verifier(&copy, run.as_str(), &s.pub_pem);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("does not verify over the DSSE PAE"), "{out}");
    assert!(
        out.contains(&format!("FAIL {seal_key} predicate.outcome")),
        "{out}"
    );

    // The genuine seal, checked against another trusted key.
    let other_dir = scratch.path().join("other-key");
    let (_, other_pem) = seal_fs::keys::write_key_pair(&other, &other_dir).unwrap();
    let (code, out) = verifier(&s.store, run.as_str(), &other_pem);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no signature by the trusted key"), "{out}");

    // Could not run: no store, or a key file that is not a public key.
    let (code, out) = verifier(&scratch.path().join("absent"), run.as_str(), &s.pub_pem);
    assert_eq!(code, 2, "{out}");
    let (code, out) = verifier(&s.store, run.as_str(), &other_dir.join("seal.key.pem"));
    assert_eq!(code, 2, "{out}");
}

/// The worked example of docs/VERIFYING.md, recomputed with seal's own code.
#[test]
fn the_documented_worked_example_is_what_seal_signs() {
    let key = SigningKey::from_dalek(ed25519_dalek::SigningKey::from_bytes(&[0x42; 32]));
    let evidence = br#"{"runId":"run-example"}"#;
    let statement = Statement::new(
        "runs/run-example/evidence.json",
        &Hash::of(evidence),
        Predicate {
            run_id: "run-example".into(),
            outcome: "pass".into(),
            decision: "accept".into(),
            source_roll_id: Some("roll-1".into()),
            consensus_hash: Some(Hash::of(b"consensus").to_string()),
            strategy_version: Some("dual-strict/1".into()),
            acceptance_mode: "v3".into(),
            decided_at: "2026-01-01T00:00:00Z".into(),
        },
    );
    let payload = canonical_bytes(&statement).unwrap();
    let envelope = sealing::sign(&key, &statement).unwrap();
    let pae = sealing::pae(sealing::PAYLOAD_TYPE, &payload);
    let public = ed25519_dalek::SigningKey::from_bytes(&[0x42; 32]).verifying_key();
    let pem = {
        use ed25519_dalek::pkcs8::EncodePublicKey;
        public
            .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .unwrap()
    };
    let header = format!("DSSEv1 28 application/vnd.in-toto+json {} ", payload.len());
    let facts = [
        String::from_utf8(payload.clone()).unwrap(),
        format!("The PAE is the {} ASCII bytes `{header}`", header.len()),
        format!(
            "The payload P ({} bytes, the canonical statement)",
            payload.len()
        ),
        pem.trim_end().to_string(),
        hex::encode(public.as_bytes()),
        key.key_id.clone(),
        envelope.signatures[0].sig.clone(),
        String::from_utf8(canonical_bytes(&envelope).unwrap()).unwrap(),
    ];
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/VERIFYING.md"))
            .unwrap();
    assert_eq!(pae.len(), header.len() + payload.len());
    assert!(pae.starts_with(header.as_bytes()));
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&envelope.payload)
            .unwrap(),
        payload
    );
    for fact in &facts {
        assert!(
            doc.contains(fact.as_str()),
            "docs/VERIFYING.md lacks: {fact}"
        );
    }
}
