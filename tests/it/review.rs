//! Reviews of sealed runs (`seal review`, issue 26), with real processes on a copy of the sealed
//! fixture store: a review of the inconclusive fixture leaves its evidence and seal bytes as
//! they were, is one `review` leaf of the log, verifies under the reviewer's key with Python's
//! `securesystemslib` (no seal code), and `seal verify` passes with the reviewer trusted and
//! fails naming the review without. Refused and named: an untrusted key, an obligation the run
//! does not have, a tampered review, a planted one (even signed by a trusted reviewer), one
//! about other bytes.
//!
//! The Python check needs `python3` with `securesystemslib`; without it that test prints
//! SKIPPED, unless `SEAL_REQUIRE_PYTHON=1` (CI), where it fails.

use crate::common;

use base64::Engine as _;
use common::*;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::sealing::{Envelope, SigningKey};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) const RUN: &str = "run-narrative-0011-inconclusive";

/// A copy of the fixture store, a reviewer key pair, a stranger's, and the log key.
pub(crate) struct Setup {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) url: String,
    pub(crate) reviewer_key: PathBuf,
    pub(crate) reviewer_pub: PathBuf,
    pub(crate) stranger_key: PathBuf,
    pub(crate) log_key: PathBuf,
}

fn keygen(dir: &Path) -> (PathBuf, PathBuf) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["keygen", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (dir.join("seal.key.pem"), dir.join("seal.pub.pem"))
}

pub(crate) fn setup() -> Setup {
    let (dir, root) = copy_fixture_store();
    Setup::at(dir, root)
}

impl Setup {
    /// A reviewer's and a stranger's key in `dir`, and the fixtures' test-only seal key as the
    /// log key, for the store at `root`.
    pub(crate) fn at(dir: tempfile::TempDir, root: PathBuf) -> Setup {
        let (reviewer_key, reviewer_pub) = keygen(&dir.path().join("reviewer"));
        let (stranger_key, _) = keygen(&dir.path().join("stranger"));
        // The fixture store's log is signed by the test-only seal key: a copy, mode 0600.
        let log_key = dir.path().join("log.key.pem");
        std::fs::copy(
            sealed_fixtures().join("keys/test-only/seal.key.pem"),
            &log_key,
        )
        .unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&log_key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let url = file_url(&root);
        Setup {
            dir,
            root,
            url,
            reviewer_key,
            reviewer_pub,
            stranger_key,
            log_key,
        }
    }

    /// Log entry `index` is a review leaf naming `sha256`, and `seal log verify` checks it.
    pub(crate) fn assert_review_leaf(&self, index: usize, sha256: &str) {
        let leaf = std::fs::read(self.root.join(format!("log/entries/{index:020}"))).unwrap();
        let leaf: serde_json::Value = serde_json::from_slice(&leaf).unwrap();
        assert_eq!(leaf["kind"], "review");
        assert_eq!(leaf["reviewSha256"], sha256);
        let trust = fixture_trust_pem().display().to_string();
        let log = self.seal(&["log", "verify", "--store", &self.url, "--trust", &trust]);
        assert_eq!(log.status.code(), Some(0), "{}", both(&log));
        assert!(
            text(&log.stdout).contains("review 0 of run"),
            "{}",
            both(&log)
        );
    }

    pub(crate) fn seal(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_seal"))
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// `seal review RUN` signed with `key`, the reviewer key trusted.
    pub(crate) fn review(&self, key: &Path, sets: &[&str], note: &str) -> Output {
        self.review_run(RUN, key, sets, note)
    }

    /// `seal review <run>` signed with `key`, the reviewer key trusted.
    pub(crate) fn review_run(&self, run: &str, key: &Path, sets: &[&str], note: &str) -> Output {
        let trust = fixture_trust_pem().display().to_string();
        let (key, rpub, log_key) = (
            key.display().to_string(),
            self.reviewer_pub.display().to_string(),
            self.log_key.display().to_string(),
        );
        let mut args = vec![
            "review",
            run,
            "--store",
            &self.url,
            "--trust",
            &trust,
            "--trust-reviewer",
            &rpub,
            "--key",
            &key,
            "--reviewer",
            "Ada <b>Lovelace</b>",
            "--note",
            note,
            "--log-key",
            &log_key,
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        self.seal(&args)
    }

    pub(crate) fn verify(&self, trust_reviewer: bool) -> Output {
        let trust = fixture_trust_pem().display().to_string();
        let rpub = self.reviewer_pub.display().to_string();
        let mut args = vec!["verify", RUN, "--store", &self.url, "--trust", &trust];
        if trust_reviewer {
            args.extend(["--trust-reviewer", &rpub]);
        }
        self.seal(&args)
    }

    pub(crate) fn bytes(&self, key: &str) -> Vec<u8> {
        std::fs::read(self.root.join(key)).unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    pub(crate) fn review_path(&self, n: u64) -> PathBuf {
        self.root.join(format!("runs/{RUN}/reviews/{n}.dsse.json"))
    }

    /// `config/seal.toml` and `keys/` of a daemon in the setup folder: it signs checkpoints
    /// with the fixture key and trusts the reviewer by config.
    pub(crate) fn daemon_config(&self) {
        std::fs::create_dir_all(self.dir.path().join("keys")).unwrap();
        std::fs::copy(&self.log_key, self.dir.path().join("keys/seal.key.pem")).unwrap();
        std::fs::create_dir_all(self.dir.path().join("config")).unwrap();
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/seal.toml"))
                .unwrap();
        // reviewers.trusted is the second `trusted = []` (keys.trusted stays empty: the daemon
        // trusts the key it signs with).
        let at = text.find("[reviewers]").unwrap();
        let (head, tail) = text.split_at(at);
        let quoted = format!("trusted = [{:?}]", self.reviewer_pub.display().to_string());
        let text = format!("{head}{}", tail.replacen("trusted = []", &quoted, 1));
        std::fs::write(self.dir.path().join("config/seal.toml"), text).unwrap();
    }

    /// `seal stats --json`, the reviewer trusted when `trust_reviewer`.
    pub(crate) fn stats(&self, trust_reviewer: bool) -> serde_json::Value {
        if trust_reviewer {
            let rpub = self.reviewer_pub.display().to_string();
            self.stats_with(&["--trust-reviewer", &rpub])
        } else {
            self.stats_with(&[])
        }
    }

    /// `seal stats --json` on the store, the fixtures' key trusted, with `extra` arguments.
    pub(crate) fn stats_with(&self, extra: &[&str]) -> serde_json::Value {
        let trust = fixture_trust_pem().display().to_string();
        let mut args = vec!["stats", "--json", "--store", &self.url, "--trust", &trust];
        args.extend_from_slice(extra);
        let out = self.seal(&args);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The labels export to `name` with the reviewer trusted (and `extra` arguments): one line
    /// per obligation of a dispatched roll.
    pub(crate) fn labels(&self, name: &str, extra: &[&str]) -> Vec<serde_json::Value> {
        let path = self.dir.path().join(name);
        let (trust, rpub, out_path) = (
            fixture_trust_pem().display().to_string(),
            self.reviewer_pub.display().to_string(),
            path.display().to_string(),
        );
        let mut args = vec![
            "export",
            "labels",
            "--store",
            &self.url,
            "--trust",
            &trust,
            "--trust-reviewer",
            &rpub,
            "--out",
            &out_path,
        ];
        args.extend_from_slice(extra);
        let out = self.seal(&args);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub(crate) fn log_entries(&self) -> usize {
        std::fs::read_dir(self.root.join("log/entries"))
            .unwrap()
            .count()
    }
}

pub(crate) fn both(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// Whether `python3` can import `securesystemslib`; panics in CI (`SEAL_REQUIRE_PYTHON=1`).
pub(crate) fn python_ready(test: &str) -> bool {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import securesystemslib.dsse, securesystemslib.signer",
        ])
        .output();
    let reason = match probe {
        Ok(o) if o.status.success() => return true,
        Ok(o) => format!(
            "python3 cannot import securesystemslib ({}); run `python3 -m pip install securesystemslib`",
            text(&o.stderr).trim().lines().last().unwrap_or("")
        ),
        Err(e) => format!("python3 is not runnable ({e})"),
    };
    if std::env::var("SEAL_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("SEAL_REQUIRE_PYTHON=1 but {reason}");
    }
    eprintln!("SKIPPED {test}: {reason}");
    false
}

/// docs/VERIFYING.md's review check, in Python with securesystemslib: the envelope verifies
/// under the reviewer's public key; prints the predicate's decisions.
const PY_VERIFY: &str = r#"
import json, sys, hashlib
from cryptography.hazmat.primitives.serialization import load_pem_public_key, Encoding, PublicFormat
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
envelope_file, pub_file = sys.argv[1], sys.argv[2]
public = load_pem_public_key(open(pub_file, "rb").read())
raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
key = SSlibKey.from_crypto(public, keyid=hashlib.sha256(raw).hexdigest())
env = Envelope.from_dict(json.load(open(envelope_file)))
assert env.payload_type == "application/vnd.in-toto+json", env.payload_type
env.verify([key], 1)
statement = json.loads(env.payload)
assert statement["predicateType"] == "https://wanxiang.ai/seal/review/v1"
print(json.dumps(statement["predicate"]["decisions"]))
print(json.dumps([s["digest"]["sha256"] for s in statement["subject"]]))
"#;

#[test]
fn a_review_is_stored_logged_and_verified_without_touching_the_sealed_run() {
    let s = setup();
    let evidence = s.bytes(&format!("runs/{RUN}/evidence.json"));
    let seal = s.bytes(&format!("runs/{RUN}/seal.dsse.json"));
    let entries = s.log_entries();
    assert_eq!(
        s.verify(false).status.code(),
        Some(0),
        "the fixture verifies"
    );

    let out = s.review(
        &s.reviewer_key,
        &["core.loop-reached=satisfied", "ui.text-readable=failed"],
        "<script>alert('note')</script>",
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(
        text(&out.stdout).contains("review 0 of run"),
        "{}",
        both(&out)
    );

    // Evidence and seal bytes unchanged; the review beside them.
    assert_eq!(s.bytes(&format!("runs/{RUN}/evidence.json")), evidence);
    assert_eq!(s.bytes(&format!("runs/{RUN}/seal.dsse.json")), seal);
    let stored = std::fs::read(s.review_path(0)).unwrap();
    let env: Envelope = serde_json::from_slice(&stored).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(&env.payload)
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        statement["subject"][0]["digest"]["sha256"],
        Hash::of(&evidence).to_string()
    );
    assert_eq!(
        statement["subject"][1]["digest"]["sha256"],
        Hash::of(&seal).to_string()
    );
    assert_eq!(statement["predicate"]["reviewIndex"], 0);
    assert_eq!(
        env.signatures[0].keyid,
        seal_fs::keys::load_signing_key(&s.reviewer_key)
            .unwrap()
            .key_id
    );
    // `seal validate` knows the statement.
    let file = s.dir.path().join("statement.json");
    std::fs::write(&file, &payload).unwrap();
    let val = s.seal(&["validate", &file.display().to_string()]);
    assert_eq!(val.status.code(), Some(0), "{}", both(&val));
    assert!(
        text(&val.stdout).contains("seal.review/1"),
        "{}",
        both(&val)
    );

    // The log grew by one entry, of the review kind, naming these bytes.
    assert_eq!(s.log_entries(), entries + 1);
    s.assert_review_leaf(entries, Hash::of(&stored).as_str());

    // Verified with the reviewer trusted; without, the review is named.
    let ok = s.verify(true);
    assert_eq!(ok.status.code(), Some(0), "{}", both(&ok));
    let no = s.verify(false);
    assert_eq!(no.status.code(), Some(1), "{}", both(&no));
    let said = both(&no);
    assert!(
        said.contains(&format!("runs/{RUN}/reviews/0.dsse.json"))
            && said.contains("review_signature"),
        "{said}"
    );

    // A second review chains to the first.
    let out = s.review(&s.reviewer_key, &["brief.theme-visible=missing"], "");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(s.review_path(1).exists());
    assert_eq!(s.verify(true).status.code(), Some(0));
}

#[test]
fn the_envelope_verifies_with_securesystemslib_under_the_reviewer_key() {
    if !python_ready("the_envelope_verifies_with_securesystemslib_under_the_reviewer_key") {
        return;
    }
    let s = setup();
    let out = s.review(&s.reviewer_key, &["progress.score-increased=failed"], "n");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let run_py = |pub_pem: &Path| {
        Command::new("python3")
            .args(["-c", PY_VERIFY])
            .arg(s.review_path(0))
            .arg(pub_pem)
            .output()
            .unwrap()
    };
    let py = run_py(&s.reviewer_pub);
    assert!(py.status.success(), "{}", both(&py));
    assert!(
        text(&py.stdout)
            .contains(r#"{"obligationId": "progress.score-increased", "status": "failed"}"#),
        "{}",
        both(&py)
    );
    // Under another key (the seal's), the same check fails.
    let py = run_py(&fixture_trust_pem());
    assert!(!py.status.success(), "{}", both(&py));
}

#[test]
fn untrusted_keys_and_unknown_obligations_are_refused_and_named() {
    let s = setup();
    let entries = s.log_entries();
    let out = s.review(&s.stranger_key, &["core.loop-reached=satisfied"], "");
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(
        both(&out).contains("not a trusted reviewer key"),
        "{}",
        both(&out)
    );
    let out = s.review(&s.reviewer_key, &["no.such-obligation=failed"], "");
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let said = both(&out);
    assert!(
        said.contains("review_content") && said.contains("no.such-obligation"),
        "{said}"
    );
    // The seal key itself is never a reviewer key, even when trusted as one.
    let trust = fixture_trust_pem().display().to_string();
    let log_key = s.log_key.display().to_string();
    let out = s.seal(&[
        "review",
        RUN,
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &trust,
        "--key",
        &log_key,
        "--reviewer",
        "seal",
        "--set",
        "core.loop-reached=satisfied",
        "--log-key",
        &log_key,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("seal key"), "{}", both(&out));
    // Nothing stored, nothing logged.
    assert!(!s.review_path(0).exists());
    assert_eq!(s.log_entries(), entries);
    // A bad status never reaches the store: a usage error.
    let out = s.review(&s.reviewer_key, &["core.loop-reached=maybe"], "");
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
}

#[test]
fn tampered_planted_and_misdirected_reviews_fail_verify_and_are_named() {
    let s = setup();
    let out = s.review(&s.reviewer_key, &["core.loop-reached=satisfied"], "first");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let original = std::fs::read(s.review_path(0)).unwrap();
    let review0 = format!("runs/{RUN}/reviews/0.dsse.json");

    // Tampered: one decision changed in the payload, the signature kept.
    let mut env: Envelope = serde_json::from_slice(&original).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = String::from_utf8(b64.decode(&env.payload).unwrap()).unwrap();
    env.payload = b64.encode(payload.replace("\"satisfied\"", "\"failed\""));
    std::fs::write(
        s.review_path(0),
        seal_core::canonical::canonical_bytes(&env).unwrap(),
    )
    .unwrap();
    let out = s.verify(true);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let said = both(&out);
    assert!(
        said.contains(&review0) && said.contains("does not verify"),
        "{said}"
    );
    std::fs::write(s.review_path(0), &original).unwrap();
    assert_eq!(s.verify(true).status.code(), Some(0));

    // Planted: a review signed by the trusted reviewer, written straight into the store (never
    // admitted, never logged) is not trusted.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let run = RunId::parse(RUN).unwrap();
    let reviewer = seal_fs::keys::load_signing_key(&s.reviewer_key).unwrap();
    let fixture = seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap();
    let facts = rt.block_on(async {
        let store = seal_store::Store::open(&s.url).await.unwrap();
        let proof = seal_engine::verify::prove(&store, &run, std::slice::from_ref(&fixture))
            .await
            .unwrap()
            .unwrap();
        let mut facts = seal_engine::reviewing::facts(&run, &proof, std::slice::from_ref(&fixture));
        seal_engine::reviewing::read_checked(&store, &run, &mut facts, &[reviewer.public()])
            .await
            .unwrap();
        facts
    });
    let decision = |id: &str| seal_core::review::ObligationDecision {
        obligation_id: id.into(),
        status: seal_core::review::Status::Failed,
    };
    let planted = facts.statement(
        "Mallory",
        "2026-12-02T00:00:00Z",
        vec![decision("core.loop-reached")],
        None,
        &Hash::of(b"nothing shown"),
    );
    let bytes = seal_core::review::sign(&reviewer, &planted).unwrap();
    std::fs::write(s.review_path(1), &bytes).unwrap();
    let out = s.verify(true);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let said = both(&out);
    assert!(
        said.contains(&format!("runs/{RUN}/reviews/1.dsse.json"))
            && said.contains("review_log")
            && said.contains("not in the transparency log"),
        "{said}"
    );
    let trust = fixture_trust_pem().display().to_string();
    let log = s.seal(&["log", "verify", "--store", &s.url, "--trust", &trust]);
    assert_eq!(log.status.code(), Some(1), "{}", both(&log));
    assert!(both(&log).contains("reviews/1.dsse.json"), "{}", both(&log));
    // The next admitted review is refused while a stored one does not check.
    let out = s.review(&s.reviewer_key, &["core.loop-reached=satisfied"], "");
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    std::fs::remove_file(s.review_path(1)).unwrap();

    // Misdirected: about other evidence bytes (a review of another state of the run).
    let mut other = facts.clone();
    other.evidence_sha256 = Hash::of(b"another evidence");
    let bytes = seal_core::review::sign(
        &reviewer,
        &other.statement(
            "Eve",
            "2026-12-02T00:00:00Z",
            vec![decision("core.loop-reached")],
            None,
            &Hash::of(b"x"),
        ),
    )
    .unwrap();
    std::fs::write(s.review_path(1), &bytes).unwrap();
    let out = s.verify(true);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("review_subject"), "{}", both(&out));
    std::fs::remove_file(s.review_path(1)).unwrap();

    // A link where a review should be is named, never followed.
    std::os::unix::fs::symlink(s.root.join(&review0), s.review_path(1)).unwrap();
    let out = s.verify(true);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("reviews/1.dsse.json"), "{}", both(&out));
    std::fs::remove_file(s.review_path(1)).unwrap();

    // A stray name in the reviews folder is an unbound object.
    std::fs::write(s.root.join(format!("runs/{RUN}/reviews/notes.txt")), b"x").unwrap();
    let out = s.verify(true);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("reviews/notes.txt"), "{}", both(&out));
}

#[test]
fn the_store_refuses_review_keys_except_through_an_admitted_review() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = seal_store::Store::open("memory://").await.unwrap();
        let run = RunId::parse(RUN).unwrap();
        let key = seal_core::key::Key::review(&run, 0);
        let e = store
            .put(&key, bytes::Bytes::from_static(b"{}"))
            .await
            .unwrap_err();
        assert!(matches!(e, seal_store::StoreError::Reserved { .. }), "{e}");
    });
}

/// `POST /v1/runs/{id}/reviews` on a real daemon: a review the reviewer signed client-side is
/// stored (201) and logged, listed by GET and verified by `GET …/verify`; an untrusted key is
/// 403 `untrusted_reviewer`, an unknown obligation 422 `invalid_review`; the same envelope again
/// is the stored review (200, its number, not logged twice); another review claiming a taken
/// index is 409 `review_conflict`, a review chained to nothing 409 `review_stale`, and a
/// different review chained after the last is stored under the next number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_takes_client_signed_reviews_and_refuses_the_rest_by_code() {
    let s = setup();
    s.daemon_config();
    let lb = seal_testkit::loopback::Loopback::start(std::time::Duration::from_millis(5))
        .await
        .unwrap();
    let daemon = spawn_daemon(s.dir.path(), &lb, &s.url, &[]);
    let c = daemon.client();

    let run = RunId::parse(RUN).unwrap();
    let fixture = seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap();
    let store = seal_store::Store::open(&s.url).await.unwrap();
    let proof = seal_engine::verify::prove(&store, &run, std::slice::from_ref(&fixture))
        .await
        .unwrap()
        .unwrap();
    let facts = seal_engine::reviewing::facts(&run, &proof, std::slice::from_ref(&fixture));
    let reviewer = seal_fs::keys::load_signing_key(&s.reviewer_key).unwrap();
    let stranger = seal_fs::keys::load_signing_key(&s.stranger_key).unwrap();
    let envelope = |key: &SigningKey, f: &seal_core::review::RunFacts, obligation: &str| {
        let st = f.statement(
            "Grace",
            "2026-12-02T12:00:00Z",
            vec![seal_core::review::ObligationDecision {
                obligation_id: obligation.into(),
                status: seal_core::review::Status::Satisfied,
            }],
            Some("</script><script>alert(1)</script>".into()),
            &Hash::of(b"tree"),
        );
        seal_core::review::sign(key, &st).unwrap()
    };
    let post = |body: Vec<u8>| c.post_review(RUN, body);
    let code = |v: &serde_json::Value| v["error"]["code"].as_str().unwrap_or("").to_string();

    let r = post(envelope(&stranger, &facts, "core.loop-reached")).await;
    assert_eq!(r.status, 403);
    assert_eq!(code(&r.json()), "untrusted_reviewer");
    let r = post(envelope(&reviewer, &facts, "nope")).await;
    assert_eq!(r.status, 422);
    assert_eq!(code(&r.json()), "invalid_review");
    let first = envelope(&reviewer, &facts, "core.loop-reached");
    let r = post(first.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["reviewIndex"], 0);
    assert_eq!(v["reviewSha256"], Hash::of(&first).to_string());
    // The same envelope again (a retry after a lost answer): the stored review, 200, nothing
    // stored or logged twice.
    let entries = s.log_entries();
    let r = post(first.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let again = r.json();
    assert_eq!(again["reviewIndex"], 0);
    assert_eq!(again["reviewSha256"], v["reviewSha256"]);
    assert_eq!(again["leafIndex"], v["leafIndex"]);
    assert_eq!(s.log_entries(), entries, "a re-send is not logged again");
    assert!(!s.review_path(1).exists());
    // Another review claiming index 0: a conflict.
    let r = post(envelope(&reviewer, &facts, "ui.text-readable")).await;
    assert_eq!(r.status, 409);
    assert_eq!(code(&r.json()), "review_conflict");
    let mut ahead = facts.clone();
    ahead.reviews = vec![Hash::of(b"a"), Hash::of(b"b")];
    let r = post(envelope(&reviewer, &ahead, "core.loop-reached")).await;
    assert_eq!(r.status, 409);
    assert_eq!(code(&r.json()), "review_stale");

    // A different review, chained after the first: stored under the next number.
    let mut next = facts.clone();
    next.reviews = vec![Hash::of(&first)];
    let second = envelope(&reviewer, &next, "ui.text-readable");
    let r = post(second.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["reviewIndex"], 1);
    assert_eq!(s.log_entries(), entries + 1);
    // And it too, sent again, is answered by its number.
    let r = post(second.clone()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["reviewIndex"], 1);

    let listed = c.reviews(RUN).await.json();
    assert_eq!(listed["reviews"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed["reviews"][0]["trusted"], true, "{listed}");
    let verified = c.verify(RUN).await.json();
    assert_eq!(verified["verified"], true, "{verified}");
    assert_eq!(std::fs::read(s.review_path(0)).unwrap(), first);
    assert_eq!(std::fs::read(s.review_path(1)).unwrap(), second);
    assert!(!s.review_path(2).exists());
}

/// `seal export labels`: one `seal.label/1` line per (run, roll, obligation) of the runs that
/// verify, the human label the latest trusted review's, deterministic; without the reviewer
/// trusted the reviewed run gives no line.
#[test]
fn labels_carry_the_human_decision_and_validate() {
    let s = setup();
    let out = s.review(&s.reviewer_key, &["core.loop-reached=failed"], "");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let out = s.review(
        &s.reviewer_key,
        &["core.loop-reached=satisfied"],
        "changed my mind",
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let export_with = |file: &str, with_reviewer: bool, extra: &[&str]| {
        let path = s.dir.path().join(file).display().to_string();
        let mut args = vec![
            "export", "labels", "--store", &s.url, "--trust", &trust, "--out", &path,
        ];
        if with_reviewer {
            args.extend(["--trust-reviewer", &rpub]);
        }
        args.extend(extra);
        let out = s.seal(&args);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        std::fs::read_to_string(&path).unwrap()
    };
    let export = |file: &str, with_reviewer: bool| export_with(file, with_reviewer, &[]);
    let text = export("labels.jsonl", true);
    assert_eq!(text, export("again.jsonl", true), "deterministic");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 5, "{text}");
    for l in &lines {
        let report = seal_core::validate::validate_as(seal_core::contracts::Kind::Label, l);
        assert!(
            matches!(report, seal_core::validate::Report::Valid(_)),
            "{report:?}"
        );
    }
    let ours: Vec<&serde_json::Value> = lines.iter().filter(|l| l["runId"] == RUN).collect();
    assert!(!ours.is_empty());
    let loop_reached = ours
        .iter()
        .find(|l| l["obligationId"] == "core.loop-reached")
        .unwrap();
    assert_eq!(loop_reached["human"], "satisfied", "the latest review wins");
    assert!(
        ours.iter().any(|l| l["human"].is_null()),
        "undecided obligations are null"
    );
    // Original runs only, each line saying so; the store's replays only on request.
    assert!(
        lines
            .iter()
            .all(|l| l["acceptanceMode"] != "historical_replay" && l["parentRunId"].is_null()),
        "{text}"
    );
    let with_replays = export_with("replays.jsonl", true, &["--include-replays"]);
    let replayed: Vec<serde_json::Value> = with_replays
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["acceptanceMode"] == "historical_replay")
        .collect();
    assert!(!replayed.is_empty(), "the fixture store holds replays");
    assert!(
        replayed
            .iter()
            .all(|l| l["parentRunId"].as_str().is_some_and(|p| !p.is_empty())),
        "{with_replays}"
    );
    assert_eq!(
        with_replays.lines().count(),
        lines.len() + replayed.len(),
        "the same original lines, plus the replays'"
    );
    // `seal validate` knows a line, and reads the whole JSONL file a line at a time.
    let one = s.dir.path().join("line.json");
    std::fs::write(&one, text.lines().next().unwrap()).unwrap();
    let val = s.seal(&["validate", &one.display().to_string()]);
    assert_eq!(val.status.code(), Some(0), "{}", both(&val));
    let all = s.dir.path().join("replays.jsonl").display().to_string();
    let val = s.seal(&["validate", &all]);
    assert_eq!(val.status.code(), Some(0), "{}", both(&val));
    let stdout = common::text(&val.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("valid ")).count(),
        with_replays.lines().count(),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{all}:2 (seal.label/1)")),
        "{stdout}"
    );
    // A broken line is named by its number; the others still pass.
    let broken = s.dir.path().join("broken.jsonl");
    let mut body: Vec<&str> = text.lines().take(3).collect();
    body[1] = "{\"schemaVersion\": \"seal.label/1\", \"runId\": 7}";
    std::fs::write(&broken, body.join("\n")).unwrap();
    let val = s.seal(&["validate", &broken.display().to_string()]);
    assert_eq!(val.status.code(), Some(1), "{}", both(&val));
    let stdout = common::text(&val.stdout);
    assert!(
        stdout.contains(&format!("INVALID  {}:2 (seal.label/1)", broken.display())),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("valid ")).count(),
        2,
        "{stdout}"
    );
    // Without the reviewer trusted, the reviewed run does not verify: no lines of it.
    let without = export("without.jsonl", false);
    assert!(!without.contains(RUN), "{without}");
    assert!(without.lines().count() > 0);
}

/// A note no page may run.
pub(crate) const HOSTILE_NOTE: &str =
    "<script>document.title='pwned'</script><img src=x onerror=alert(1)> & done";

impl Setup {
    /// `seal explain RUN` (`--html` when `html`), the reviewer trusted when `trust_reviewer`.
    fn explain(&self, html: bool, trust_reviewer: bool) -> Output {
        let trust = fixture_trust_pem().display().to_string();
        let rpub = self.reviewer_pub.display().to_string();
        let mut args = vec!["explain", RUN, "--store", &self.url, "--trust", &trust];
        if trust_reviewer {
            args.extend(["--trust-reviewer", &rpub]);
        }
        if html {
            args.push("--html");
        }
        self.seal(&args)
    }
}

/// `seal explain` of a reviewed inconclusive run: each trusted review is an `owner: "human"`
/// node after the sealed outcome, off the selected path (which still ends at the sealed
/// outcome), with its reviewer, time, decisions and note; the page shows them, the note and
/// the name as text. Without the reviewer trusted the run is not explained at all.
#[test]
fn explain_shows_trusted_reviews_as_human_nodes_after_the_decision() {
    let s = setup();
    let before = s.explain(false, true);
    assert_eq!(before.status.code(), Some(0), "{}", both(&before));
    let tree: serde_json::Value = serde_json::from_slice(&before.stdout).unwrap();
    let humans = |t: &serde_json::Value| -> Vec<serde_json::Value> {
        t["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["owner"] == "human")
            .cloned()
            .collect()
    };
    assert!(humans(&tree).is_empty(), "no review yet: no human node");

    let out = s.review(
        &s.reviewer_key,
        &["core.loop-reached=satisfied", "ui.text-readable=failed"],
        HOSTILE_NOTE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let out = s.explain(false, true);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let file = s.dir.path().join("tree.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let val = s.seal(&["validate", &file.display().to_string()]);
    assert_eq!(val.status.code(), Some(0), "{}", both(&val));
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = humans(&tree);
    assert_eq!(h.len(), 1, "{tree}");
    let node = &h[0];
    assert_eq!(node["id"], "review-0");
    assert_eq!(node["status"], "blocked", "a failed obligation");
    assert_eq!(node["evidenceRef"], "#review-0");
    let detail = node["detail"].as_str().unwrap();
    for want in [
        "Ada <b>Lovelace</b>",
        "core.loop-reached satisfied",
        "ui.text-readable failed",
        "note: <script>",
        "review sha256 ",
    ] {
        assert!(detail.contains(want), "{want}: {detail}");
    }
    // After the sealed outcome, off the selected path: the sealed decision is not rewritten.
    let edge = tree["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["to"] == "review-0")
        .unwrap();
    assert_eq!(edge["from"], "outcome-inconclusive");
    assert_eq!(edge["selected"], false);
    let t: seal_core::doc::DecisionTree = serde_json::from_value(tree.clone()).unwrap();
    let path = t.selected_path().unwrap();
    assert_eq!(path.last().unwrap().id, "outcome-inconclusive");

    // The page: the reviewer's decisions and the note, as text.
    let page = s.explain(true, true);
    assert_eq!(page.status.code(), Some(0), "{}", both(&page));
    let html = text(&page.stdout);
    assert!(
        html.contains("<section id=\"reviews\">"),
        "no reviews section"
    );
    assert!(html.contains("<div id=\"review-0\""));
    assert!(html.contains("Ada &lt;b&gt;Lovelace&lt;/b&gt;"));
    assert!(html.contains("&lt;script&gt;document.title="));
    assert!(!html.contains("<script>document.title"));
    assert!(!html.contains("<img src=x"));
    assert!(html
        .contains("<code>ui.text-readable</code></td><td><span class=\"st failed\">failed</span>"));
    assert!(
        html.contains("--trust-reviewer"),
        "the verify command trusts the reviewer"
    );

    // A second review: chained after the first.
    let out = s.review(&s.reviewer_key, &["brief.theme-visible=missing"], "");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let tree: serde_json::Value = serde_json::from_slice(&s.explain(false, true).stdout).unwrap();
    assert_eq!(humans(&tree).len(), 2);
    assert_eq!(humans(&tree)[1]["status"], "guard", "a missing obligation");
    assert!(tree["edges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["from"] == "review-0" && e["to"] == "review-1" && e["selected"] == false));

    // Without the reviewer trusted the run does not verify: not explained, nothing written.
    let no = s.explain(false, false);
    assert_eq!(no.status.code(), Some(1), "{}", both(&no));
    assert!(no.stdout.is_empty());
    assert!(both(&no).contains("review_signature"), "{}", both(&no));
}

/// Only reviews that check under the verifier's reviewer keys (and are logged) are decisions:
/// the same stored review is one trusted review with its key trusted, none without.
#[test]
fn only_reviews_under_trusted_reviewer_keys_are_trusted_reviews() {
    let s = setup();
    let out = s.review(&s.reviewer_key, &["core.loop-reached=failed"], "n");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = seal_store::Store::open(&s.url).await.unwrap();
        let run = RunId::parse(RUN).unwrap();
        let fixture = seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap();
        let reviewer = seal_fs::keys::load_public_key(&s.reviewer_pub).unwrap();
        let stranger = seal_fs::keys::load_signing_key(&s.stranger_key)
            .unwrap()
            .public();
        let proof = seal_engine::verify::prove(&store, &run, std::slice::from_ref(&fixture))
            .await
            .unwrap()
            .unwrap();
        let plain = verifier(&store, fixture.clone()).await;
        assert!(plain.prove(&store, &run).await.unwrap().is_err());
        assert!(plain
            .trusted_reviews(&store, &run, &proof)
            .await
            .unwrap()
            .is_empty());
        let other = plain.clone().with_reviewers(vec![stranger]);
        assert!(other
            .trusted_reviews(&store, &run, &proof)
            .await
            .unwrap()
            .is_empty());
        let trusting = plain.with_reviewers(vec![reviewer.clone()]);
        let got = trusting
            .trusted_reviews(&store, &run, &proof)
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].key_id, reviewer.key_id);
        assert_eq!(got[0].predicate.note.as_deref(), Some("n"));
        let e = seal_engine::explain_load::explain(&store, &run, &trusting)
            .await
            .unwrap();
        assert_eq!(e.reviews, got);
    });
}
