//! The byte oracle of the crate split (issue 23): a refactor must change no stored byte.
//!
//! 1. Every stored document of the sealed fixtures (and every valid test document) parses into
//!    its typed struct and serializes back to exactly the bytes that were stored: this pins the
//!    serde form (names, `rename_all`, `flatten`, `skip_serializing_if`) of each document type.
//! 2. A stored-judge replay of every replayable fixture run, with a fixed clock, the fixtures'
//!    salt and their test-only key, writes objects whose sha256 are listed in
//!    `tests/data/stored-bytes.sha256`. That file was written once, by the code before the split
//!    (`SEAL_BLESS=1 cargo test --test it stored_bytes::`), and is never re-blessed by a refactor: a
//!    difference is a changed byte in blinding, request building, parsing, normalization,
//!    consensus, the roll records, the postguard, the DSSE seal or the log.
//!
//! Receipts and leases hold wall-clock times and replica ids, so they are left out of the
//! manifest (they are not part of what a replay reproduces).

use crate::common;

use common::*;
use seal_core::canonical::canonical_bytes;
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::ids::RunId;
use seal_core::sealing::{Envelope, SigningKey};
use seal_core::tlog::LogEntry;
use seal_engine::config::Config;
use seal_engine::engine::{Engine, FixedClock};
use seal_engine::replay::{replay, replayable_runs, JudgesFrom, SourceProof};
use seal_store::Store;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The clock and salt `seal-fixtures` sealed the fixtures with (crates/seal-testkit).
const DECIDED_AT: &str = "2026-11-29T12:00:00Z";
const FIXTURE_SALT: &str = "sealed-fixtures-salt (test only)";
const MANIFEST: &str = "tests/data/stored-bytes.sha256";
const LIMIT: u64 = 1 << 26;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Parses `bytes` as `T` and serializes it back canonically.
fn through<T: DeserializeOwned + Serialize>(bytes: &[u8], what: &Path) -> Vec<u8> {
    let typed: T = seal_core::json::parse_as(bytes, LIMIT)
        .unwrap_or_else(|e| panic!("{}: does not parse as its type: {e}", what.display()));
    canonical_bytes(&typed).unwrap_or_else(|e| panic!("{}: {e}", what.display()))
}

/// A failed slot stores a `JudgeAttemptFailure/1` where a judge's output would be.
fn has_schema_version(bytes: &[u8]) -> bool {
    seal_core::json::parse(bytes, LIMIT).is_ok_and(|v| v.get("schemaVersion").is_some())
}

/// The typed round trip of one document, and the name of the type it went through.
fn round_trip(path: &Path, bytes: &[u8]) -> (Vec<u8>, &'static str) {
    let name = path.file_name().unwrap().to_string_lossy();
    let in_log = path.components().any(|c| c.as_os_str() == "entries");
    if in_log {
        return (through::<LogEntry>(bytes, path), "LogEntry");
    }
    if name == "seal.dsse.json" {
        return (through::<Envelope>(bytes, path), "Envelope");
    }
    if name == "parsed.json" && !has_schema_version(bytes) {
        return (through::<JudgeOutput>(bytes, path), "JudgeOutput");
    }
    if name == "raw.json" || name == "request.json" {
        // The judge's wire answer and the request body have no seal type: their bytes are
        // canonical JSON of what was sent and received.
        return (through::<Value>(bytes, path), "Value");
    }
    let value = seal_core::json::parse(bytes, LIMIT).unwrap();
    let kind = Kind::detect(&value).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match kind {
        Kind::PlaytestV3 => (through::<Evidence>(bytes, path), "Evidence"),
        Kind::ProofPackage => (through::<ProofPackage>(bytes, path), "ProofPackage"),
        Kind::JudgePackage => (through::<JudgePackage>(bytes, path), "JudgePackage"),
        Kind::ImageManifest => (through::<ImageManifest>(bytes, path), "ImageManifest"),
        Kind::SlotMeta => (through::<SlotMeta>(bytes, path), "SlotMeta"),
        Kind::JudgeResult => (through::<JudgeResult>(bytes, path), "JudgeResult"),
        Kind::JudgeConsensus => (through::<JudgeConsensus>(bytes, path), "JudgeConsensus"),
        Kind::CostReservation => (through::<CostReservation>(bytes, path), "CostReservation"),
        Kind::JudgeAttemptFailure => (through::<AttemptFailure>(bytes, path), "AttemptFailure"),
        Kind::V3Roll => (through::<Roll>(bytes, path), "Roll"),
        // Play specs are kept as the caller's JSON (seal reads a few fields of them).
        Kind::PlaySpec => (through::<Value>(bytes, path), "PlaySpec"),
        other => panic!("{}: unexpected kind {}", path.display(), other.name()),
    }
}

#[test]
fn every_stored_document_reserializes_to_its_bytes() {
    let store = fixture_store_dir();
    let mut files = Vec::new();
    files_under(&store.join("runs"), &mut files);
    files_under(&store.join("log/entries"), &mut files);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for f in files
        .iter()
        .filter(|f| f.extension().is_none_or(|x| x == "json"))
    {
        let bytes = std::fs::read(f).unwrap();
        let (again, ty) = round_trip(f, &bytes);
        assert!(
            again == bytes,
            "{} ({ty}) does not serialize back to its stored bytes",
            f.display()
        );
        *seen.entry(ty).or_default() += 1;
    }
    // The valid test documents are pretty-printed: their typed form must say what their JSON
    // says, canonically.
    let mut valid = Vec::new();
    files_under(&root().join("tests/data/valid"), &mut valid);
    for f in &valid {
        let bytes = std::fs::read(f).unwrap();
        let (again, ty) = round_trip(f, &bytes);
        let value = seal_core::json::parse(&bytes, LIMIT).unwrap();
        assert!(
            again == canonical_bytes(&value).unwrap(),
            "{} ({ty}) loses or changes something in its typed round trip",
            f.display()
        );
        *seen.entry(ty).or_default() += 1;
    }
    for ty in [
        "LogEntry",
        "Envelope",
        "JudgeOutput",
        "Value",
        "Evidence",
        "ProofPackage",
        "JudgePackage",
        "ImageManifest",
        "SlotMeta",
        "JudgeResult",
        "JudgeConsensus",
        "CostReservation",
        "Roll",
        "PlaySpec",
        "AttemptFailure",
    ] {
        assert!(
            seen.get(ty).copied().unwrap_or(0) > 0,
            "no stored {ty} was checked: {seen:?}"
        );
    }
}

/// `seal verify` checks a run's JUDGING snapshot by hashing the evidence's canonical bytes
/// minus its decision (`decided::snapshot_bytes`) and parses the stored snapshot only when that differs:
/// for every sealed run those bytes must be exactly the stored snapshot, or the quick check
/// would never apply. (That a differing snapshot is still named: `tests/it/tamper.rs`.)
#[test]
fn a_decided_evidence_minus_its_decision_is_its_stored_snapshot() {
    let store = fixture_store_dir();
    let mut checked = 0;
    for run in std::fs::read_dir(store.join("runs")).unwrap() {
        let dir = run.unwrap().path();
        let Ok(ev_bytes) = std::fs::read(dir.join("evidence.json")) else {
            continue;
        };
        let tree = seal_core::json::parse(&ev_bytes, LIMIT).unwrap();
        let ev: Evidence = serde_json::from_value(tree.clone()).unwrap();
        let Some(pg) = &ev.final_postguard else {
            continue;
        };
        let snapshot = std::fs::read(dir.join("judging.json")).unwrap();
        let canonical = seal_core::canonical::canonical_object(&tree)
            .unwrap()
            .unwrap();
        assert_eq!(canonical.bytes, ev_bytes, "{}", dir.display());
        let derived = seal_core::decided::snapshot_bytes(&canonical).unwrap();
        assert!(
            derived == snapshot,
            "{}: the evidence minus its decision is not the stored snapshot",
            dir.display()
        );
        assert_eq!(
            seal_core::canonical::Hash::of(&derived),
            pg.judging_snapshot_hash
        );
        assert!(
            canonical_bytes(&seal_core::decided::undecided(&ev)).unwrap() == derived,
            "{}: the typed evidence minus its decision is another document",
            dir.display()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} sealed runs");
}

/// The fixtures' config: the embedded one with the salt and clock of `seal-fixtures`. No judge
/// is called (stored answers), so the judge URLs point nowhere.
fn fixture_config() -> Config {
    let env = |k: &str| -> Option<String> {
        match k {
            "SEAL_JUDGE_A_URL" | "SEAL_JUDGE_B_URL" => Some("http://127.0.0.1:9/v1".into()),
            "SEAL_JUDGE_A_MODEL" => Some("fixture-judge-a".into()),
            "SEAL_JUDGE_B_MODEL" => Some("fixture-judge-b".into()),
            "SEAL_JUDGE_A_KEY" | "SEAL_JUDGE_B_KEY" => Some("sk-fixture-never-sent".into()),
            "SEAL_JUDGE_TIMEOUT_MS" => Some("3000".into()),
            "SEAL_SEED_SALT" => Some(FIXTURE_SALT.into()),
            _ => None,
        }
    };
    Config::parse("stored-bytes", seal_engine::config::EMBEDDED, &env).expect("fixture config")
}

/// The test-only fixture key, copied with mode 0600 (the committed file is world-readable).
fn fixture_signing_key(dir: &Path) -> SigningKey {
    use std::os::unix::fs::PermissionsExt;
    let to = dir.join("seal.key.pem");
    std::fs::copy(sealed_fixtures().join("keys/test-only/seal.key.pem"), &to).unwrap();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
    seal_fs::keys::load_signing_key(&to).expect("the test-only fixture key")
}

/// `sha256  key` of every object a replay wrote (runs/*.replay-*/) and of the log.
fn manifest(root: &Path) -> String {
    let mut files = Vec::new();
    files_under(&root.join("runs"), &mut files);
    files_under(&root.join("log"), &mut files);
    let mut lines: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let key = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let run = key.split('/').nth(1).unwrap_or("");
            let keep = key.starts_with("log/") || run.contains(".replay-");
            keep.then(|| {
                let hash = seal_core::canonical::Hash::of(&std::fs::read(f).unwrap());
                format!("{hash}  {key}")
            })
        })
        .collect();
    lines.sort();
    lines.join("\n") + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_judge_replay_reproduces_the_manifest() {
    let (dir, store_root) = copy_fixture_store();
    let store = Store::open(&file_url(&store_root)).await.unwrap();
    let key = fixture_signing_key(dir.path());
    let trusted = [seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap()];
    let engine = Engine::new(store, fixture_config(), Some(key))
        .unwrap()
        .with_clock(Arc::new(FixedClock(DECIDED_AT.into())));
    let mut runs = replayable_runs(engine.store()).await.unwrap();
    runs.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert!(runs.len() >= 10, "{runs:?}");
    for run in &runs {
        let r = replay(
            &engine,
            run,
            JudgesFrom::Stored,
            None,
            &trusted,
            SourceProof::Verify,
        )
        .await
        .unwrap_or_else(|e| panic!("replay {run}: {e}"));
        assert!(r.consensus_reproduced, "{run}");
        assert!(RunId::parse(&r.replay).is_ok());
    }
    let got = manifest(&store_root);
    let path = root().join(MANIFEST);
    if std::env::var_os("SEAL_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/data/stored-bytes.sha256");
    if got != want {
        let diff: Vec<String> = got
            .lines()
            .filter(|l| !want.contains(*l))
            .map(|l| format!("+ {l}"))
            .chain(
                want.lines()
                    .filter(|l| !got.contains(*l))
                    .map(|l| format!("- {l}")),
            )
            .collect();
        panic!(
            "stored bytes changed ({} lines differ):\n{}",
            diff.len(),
            diff.join("\n")
        );
    }
}
