//! The store-using log's own tests: appends, rivals, proofs, the head, the cache.

use super::*;
use crate::checkpoints::checkpoint_sizes;
use crate::view;
use crate::view::latest_checkpoint;
use crate::{Appended, LogView, SealLogged, DEFAULT_ORIGIN};
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, LogEntry, LogTrust};
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store};
use std::sync::Arc;

/// A seal entry of run `run-batch-<i>` (nothing stored for it).
pub(crate) fn entry(i: u32) -> (RunId, LogEntry) {
    let run = RunId::parse(&format!("run-batch-{i:04}")).expect("a valid run id");
    let e = LogEntry {
        run_id: run.to_string(),
        evidence_sha256: Hash::of(&i.to_be_bytes()).to_string(),
        seal_sha256: Hash::of(&[i.to_be_bytes(), [1; 4]].concat()).to_string(),
        key_id: "c".repeat(64),
        outcome: "pass".into(),
        decided_at: "2026-12-03T00:00:00Z".into(),
        acceptance_mode: "live".into(),
        parent_run_id: None,
    };
    (run, e)
}

/// A `file://` log of 40 runs' seals, each appended and checkpointed as the postguard does.
pub(crate) async fn forty() -> (tempfile::TempDir, Store, SigningKey) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let key = seal_fs::keys::generate_signing_key();
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    for i in 0..40 {
        let (run, e) = entry(i);
        log.append_seal(&run, &e, &key).await.unwrap();
    }
    (dir, store, key)
}

/// The file of `log/entries/<index>` in a `file://` store at `dir`.
pub(crate) fn entry_file(dir: &tempfile::TempDir, index: u64) -> std::path::PathBuf {
    dir.path().join(Key::log_entry(index).as_str())
}

/// Entries appended while no checkpoint was published are all covered by the next one,
/// and an appender whose entry a stored checkpoint already covers publishes none: one
/// checkpoint per batch, and none missing.
#[tokio::test]
async fn one_checkpoint_covers_every_entry_appended_before_it() {
    let store = Store::open("memory://").await.unwrap();
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    let key = seal_fs::keys::generate_signing_key();
    // Five entries appended as appenders do, before any of them publishes.
    {
        let mut cache = log.cache.lock().await;
        log.admit_locked(&mut cache, &raw_keys(&key, &[]))
            .await
            .unwrap();
        for i in 0..5 {
            let (run, e) = entry(i);
            let leaf = crate::NewLeaf::Seal {
                run: &run,
                entry: &e,
                evidence: crate::EvidenceWas::Stored,
            };
            log.place(&mut cache, leaf, &key).await.unwrap();
        }
    }
    // The first appender to publish covers all five.
    assert_eq!(log.publish_covering(1, &key).await.unwrap(), 5);
    // The others find their entries covered: no checkpoint of their own.
    for needed in 2..=5 {
        assert_eq!(log.publish_covering(needed, &key).await.unwrap(), 5);
    }
    let sizes = checkpoint_sizes(&store).await.unwrap();
    assert_eq!(sizes, vec![5]);
    // A sixth entry is not covered by it: the next appender publishes size 6.
    let (run, e) = entry(5);
    match log.append_seal(&run, &e, &key).await.unwrap() {
        SealLogged::Appended(a) => {
            assert_eq!((a.index, a.created, a.tree_size), (5, true, 6))
        }
        other => panic!("{other:?}"),
    }
    let sizes = checkpoint_sizes(&store).await.unwrap();
    assert_eq!(sizes, vec![6, 5], "largest first");
}

/// What seal passes on as its log's head (`seal log checkpoint`, `GET /v1/log/checkpoint`,
/// the admission's starting point) is the latest checkpoint a trusted key signed. Bytes
/// the store writer plants under a larger size are passed over: a forged note, and a file
/// larger than any checkpoint, which is not read (nor fails the reader past the document
/// limit); `seal log verify` names each.
#[tokio::test]
async fn the_head_is_the_latest_signed_checkpoint_never_a_planted_larger_one() {
    let (dir, store, key) = forty().await;
    let trusted = [key.public()];
    let genuine = latest_checkpoint(&store, &crate::trust(DEFAULT_ORIGIN, &trusted))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(genuine.size, 40);
    let plant = |size: u64, bytes: &[u8]| {
        std::fs::write(dir.path().join(Key::log_checkpoint(size).as_str()), bytes).unwrap()
    };
    plant(
        41,
        "seal.local/log\n41\nAAAA\n\n\u{2014} seal.local/log \u{1b}[2J\u{9b}31m\n".as_bytes(),
    );
    let big = vec![b'x'; 2 * tlog::MAX_CHECKPOINT_BYTES as usize];
    plant(42, &big);
    let head = latest_checkpoint(&store, &crate::trust(DEFAULT_ORIGIN, &trusted))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((head.size, &head.text), (40, &genuine.text));
    // A reader whose document limit the large one passes: not read, not an error.
    let small = store.clone().with_doc_limit(tlog::MAX_CHECKPOINT_BYTES + 1);
    let head = latest_checkpoint(&small, &crate::trust(DEFAULT_ORIGIN, &trusted))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.size, 40);
    let read = view::read_checkpoints(&store, &raw_keys(&key, &[]), true)
        .await
        .unwrap();
    let found: Vec<(u64, String)> = read
        .iter()
        .map(|(size, _, c)| {
            (
                *size,
                c.as_ref().err().map(|e| e.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(found[0].0, 42);
    assert!(
        found[0].1.contains("more than a checkpoint holds"),
        "{found:?}"
    );
    assert_eq!(found[1].0, 41);
    assert!(!found[1].1.is_empty(), "{found:?}");
    assert_eq!(found[2], (40, String::new()));
    // Under keys that signed none of them there is no head.
    let other = [seal_fs::keys::generate_signing_key().public()];
    assert!(
        latest_checkpoint(&store, &crate::trust(DEFAULT_ORIGIN, &other))
            .await
            .unwrap()
            .is_none()
    );
}

/// A `file://` store (so that a test can rewrite an object behind the log), a key, and two
/// seal entries of the same run and evidence that name different seals.
async fn rivals(
    i: u32,
) -> (
    tempfile::TempDir,
    Store,
    SigningKey,
    RunId,
    LogEntry,
    LogEntry,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let (run, first) = entry(i);
    let mut second = first.clone();
    second.seal_sha256 = Hash::of(b"another seal of the same evidence").to_string();
    (
        dir,
        store,
        seal_fs::keys::generate_signing_key(),
        run,
        first,
        second,
    )
}

/// Another seal of the same evidence, logged first by another process, is handed back
/// whole (read again from the store) and nothing is appended for the second one.
#[tokio::test]
async fn a_rival_seal_of_the_same_evidence_is_handed_back_not_appended() {
    let (_dir, store, key, run, first, second) = rivals(7).await;
    // Another process admits before the first one appends, then learns the entry as it
    // goes for the next index.
    let other = Log::new(store.clone(), DEFAULT_ORIGIN);
    other.admit(&key, &[]).await.unwrap();
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    assert!(matches!(
        log.append_seal(&run, &first, &key).await.unwrap(),
        SealLogged::Appended(Appended { index: 0, .. })
    ));
    match other.append_seal(&run, &second, &key).await.unwrap() {
        SealLogged::Rival(rival) => assert_eq!(rival, first),
        found => panic!("{found:?}"),
    }
    assert!(store.get_opt(&Key::log_entry(1)).await.unwrap().is_none());
    // The same entry again is found where it is, not appended twice.
    match log.append_seal(&run, &first, &key).await.unwrap() {
        SealLogged::Appended(a) => assert_eq!((a.index, a.created), (0, false)),
        found => panic!("{found:?}"),
    }
}

/// The store writer replaces the rival's entry after this process read it: the bytes read
/// back are refused against the leaf hash this process holds, never handed out as the
/// run's seal entry.
#[tokio::test]
async fn a_rival_entry_replaced_after_it_was_read_is_refused() {
    let (dir, store, key, run, first, second) = rivals(8).await;
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    log.append_seal(&run, &first, &key).await.unwrap();
    let other = Log::new(store.clone(), DEFAULT_ORIGIN);
    other.admit(&key, &[]).await.unwrap();
    let mut planted = first.clone();
    planted.key_id = "d".repeat(64);
    plant_first_entry(&dir, &planted);
    let err = other.append_seal(&run, &second, &key).await.unwrap_err();
    assert_first_entry_refused(&err, "replaced");
}

/// The store writer rewrites `log/entries/0` on disk.
fn plant_first_entry(dir: &tempfile::TempDir, planted: &LogEntry) {
    let path = dir.path().join(Key::log_entry(0).as_str());
    std::fs::write(&path, planted.to_bytes().unwrap()).unwrap();
}

/// `err` refuses `log/entries/0`, saying `why`.
fn assert_first_entry_refused(err: &LogError, why: &str) {
    assert!(
        matches!(err, LogError::Corrupt { key, detail }
            if key == Key::log_entry(0).as_str() && detail.contains(why)),
        "{err}"
    );
}

/// A process that admits a log others wrote learns every leaf from the guard's view
/// alone: a logged seal, a review and its index are found, not appended again.
#[tokio::test]
async fn an_admitted_log_knows_every_leaf_the_guard_read() {
    let store = Store::open("memory://").await.unwrap();
    let key = seal_fs::keys::generate_signing_key();
    let writer = Log::new(store.clone(), DEFAULT_ORIGIN);
    let (run, sealed) = entry(3);
    writer.append_seal(&run, &sealed, &key).await.unwrap();
    let review = tlog::ReviewEntry::new(
        run.as_str(),
        0,
        Hash::of(b"a review").as_ref(),
        &"e".repeat(64),
        "2026-12-03T00:00:00Z",
    );
    let logged = writer.append_review(&review, &key).await.unwrap();
    assert_eq!((logged.index, logged.created), (1, true));

    let reader = Log::new(store.clone(), DEFAULT_ORIGIN);
    reader.admit(&key, &[]).await.unwrap();
    assert_eq!(reader.review_leaf(&review, &key).await.unwrap(), Some(1));
    let review_hash = Hash::parse(&review.review_sha256).unwrap();
    assert!(reader
        .review_logged(&run, 0, &review_hash, &key)
        .await
        .unwrap());
    let again = reader.append_review(&review, &key).await.unwrap();
    assert_eq!((again.index, again.created), (1, false));
    match reader.append_seal(&run, &sealed, &key).await.unwrap() {
        SealLogged::Appended(a) => assert_eq!((a.index, a.created), (0, false)),
        found => panic!("{found:?}"),
    }
    assert!(store.get_opt(&Key::log_entry(2)).await.unwrap().is_none());
}

/// `entry` appended by one process, then the log read as `seal verify` reads it.
async fn logged_and_read(
    store: &Store,
    key: &SigningKey,
    run: &RunId,
    entry: &LogEntry,
) -> LogView {
    Log::new(store.clone(), DEFAULT_ORIGIN)
        .append_seal(run, entry, key)
        .await
        .unwrap();
    LogView::load(store, &raw_keys(key, &[])).await.unwrap()
}

/// A view keeps no entry bytes; a proof reads its entry again, and an entry the store
/// writer replaced after the view read the log is refused, never handed out as logged.
#[tokio::test]
async fn a_proof_of_an_entry_replaced_after_the_log_was_read_is_refused() {
    let (dir, store, key, run, first, _) = rivals(9).await;
    let view = logged_and_read(&store, &key, &run, &first).await;
    let proof = view.proof(&store, &run).await.unwrap();
    // The exact leaf: the entry with its `auth` for leaf 0 of this log.
    let at = tlog::Place {
        index: 0,
        prefix_root: tlog::Place::empty_root(),
    };
    let signed = tlog::sign_leaf(&first.to_bytes().unwrap(), DEFAULT_ORIGIN, &at, &|m| {
        key.sign(m)
    });
    assert_eq!(proof.entry.as_bytes(), signed.unwrap());

    let mut planted = first.clone();
    planted.outcome = "fail".into();
    plant_first_entry(&dir, &planted);
    let err = view.proof(&store, &run).await.unwrap_err();
    assert_first_entry_refused(&err, "rewritten");
}

/// `seal verify`'s check of a stored run against a view without bytes: the run's entry
/// is the logged one exactly when its leaf hash is, whichever field differs.
#[tokio::test]
async fn a_stored_run_is_the_logged_one_only_byte_for_byte() {
    let (_dir, store, key, run, first, other_seal) = rivals(10).await;
    let view = logged_and_read(&store, &key, &run, &first).await;
    assert!(view.check_entry(&run, &first).is_empty());
    let mut other_outcome = first.clone();
    other_outcome.outcome = "fail".into();
    for stored in [other_seal, other_outcome] {
        let problems = view.check_entry(&run, &stored);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].check, AuditCheck::RunReplaced, "{problems:?}");
        assert_eq!(
            problems[0].expected.as_deref(),
            Some(first.seal_sha256.as_str()),
            "{problems:?}"
        );
    }
}

/// Concurrent appenders each return only once a stored checkpoint holds their entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_appender_returns_after_a_checkpoint_holding_its_entry() {
    let store = Store::open("memory://").await.unwrap();
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    let key = Arc::new(seal_fs::keys::generate_signing_key());
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let (log, key) = (log.clone(), key.clone());
            tokio::spawn(async move {
                let (run, e) = entry(i);
                let logged = log.append_seal(&run, &e, &key).await.unwrap();
                let stored = checkpoint_sizes(&log.store).await.unwrap();
                (logged, stored)
            })
        })
        .collect();
    for t in tasks {
        let (logged, stored) = t.await.unwrap();
        let SealLogged::Appended(a) = logged else {
            panic!("no rival here")
        };
        assert!(a.tree_size > a.index, "{a:?}");
        assert!(
            stored.contains(&a.tree_size),
            "the checkpoint of size {} is not stored when its appender returns",
            a.tree_size
        );
    }
}

/// What a test log of the default origin trusts: the signing key, then `trusted`.
pub(crate) fn raw_keys(key: &SigningKey, trusted: &[PublicKey]) -> LogTrust {
    LogTrust::new(
        DEFAULT_ORIGIN,
        std::iter::once(key.public())
            .chain(trusted.iter().cloned())
            .map(|k| k.raw()),
    )
}

/// A judge policy is registered once, whoever asks: the same process again, or another
/// process starting from the checkpoint (found by its pointer below it); another policy gets
/// its own leaf, and `policy_at` reads a leaf as a policy's only when it is one.
#[tokio::test]
async fn a_policy_is_registered_once_across_processes() {
    let (_dir, store, key) = forty().await;
    let sha = Hash::of(b"policy one");
    let first = tlog::PolicyEntry::new(&sha, "2026-12-07T10:00:00Z");
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    let a = log.append_policy(&first, &key).await.unwrap();
    assert_eq!((a.index, a.created), (40, true));
    let later = tlog::PolicyEntry::new(&sha, "2026-12-07T11:00:00Z");
    let again = log.append_policy(&later, &key).await.unwrap();
    assert_eq!((again.index, again.created), (40, false));
    // Another process, reading the tree from the checkpoint and tiles, not the entries.
    let other = Log::new(store.clone(), DEFAULT_ORIGIN);
    let found = other.append_policy(&later, &key).await.unwrap();
    assert_eq!((found.index, found.created), (40, false));
    assert_eq!(other.policy_at(40, &key).await.unwrap(), Some(first));
    assert_eq!(
        other.policy_at(3, &key).await.unwrap(),
        None,
        "a seal's leaf"
    );
    assert_eq!(
        other.policy_at(99, &key).await.unwrap(),
        None,
        "no such leaf"
    );
    let two = tlog::PolicyEntry::new(&Hash::of(b"policy two"), "2026-12-07T12:00:00Z");
    let b = other.append_policy(&two, &key).await.unwrap();
    assert_eq!((b.index, b.created), (41, true));
}

/// A policy leaf planted at the next index (canonical, but without the log key's `auth`) is
/// not taken for a registration: the process refuses it rather than name it in attempts.
#[tokio::test]
async fn a_planted_policy_leaf_is_never_taken_for_a_registration() {
    let (dir, store, key) = forty().await;
    let sha = Hash::of(b"tuned after the answers");
    let planted = tlog::PolicyEntry::new(&sha, "2020-01-01T00:00:00Z");
    std::fs::write(entry_file(&dir, 40), planted.to_bytes().unwrap()).unwrap();
    let log = Log::new(store.clone(), DEFAULT_ORIGIN);
    let err = log.append_policy(&planted, &key).await.unwrap_err();
    assert!(
        matches!(&err, LogError::Refused { problems } if problems
            .iter()
            .any(|p| p.check == AuditCheck::PlantedLogEntry)),
        "{err}"
    );
}
