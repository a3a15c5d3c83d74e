//! One conformance suite for the store facade, run on every backend: memory://, file:// and
//! s3:// (the S3-compatible server CI starts; skipped with a message locally without it).

use crate::common;

use bytes::Bytes;
use futures::stream;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_store::{Key, Staging, Store, StoreError};
use serde_json::json;

async fn suite(store: &Store, backend: &str) {
    put_json_is_canonical_and_verifiable(store).await;
    create_only_same_bytes_ok_other_bytes_conflict(store).await;
    missing_and_mismatch_name_the_key(store).await;
    reserved_keys_are_refused(store).await;
    only_a_staging_area_hands_over_reserved_keys(store).await;
    blobs_small_and_large_stream(store).await;
    blob_with_wrong_expected_hash_keeps_nothing(store).await;
    concurrent_creates_exactly_one_wins(store).await;
    listing_runs(store).await;
    numbered_lists_the_20_digit_names_directly_in_the_folder(store).await;
    eprintln!("store conformance passed on {backend}");
}

async fn put_json_is_canonical_and_verifiable(store: &Store) {
    let key = Key::parse("runs/r1/header.json").unwrap();
    let doc = json!({"b": 1, "a": [true, null, "x"]});
    let stored = store.put_json(&key, &doc).await.unwrap().stored;
    assert_eq!(stored.hash, Hash::of(br#"{"a":[true,null,"x"],"b":1}"#));
    let bytes = store.get_verified(&key, &stored.hash).await.unwrap();
    assert_eq!(&bytes[..], br#"{"a":[true,null,"x"],"b":1}"#);
    assert_eq!(
        store.verify(&key, &stored.hash).await.unwrap(),
        bytes.len() as u64
    );
}

async fn create_only_same_bytes_ok_other_bytes_conflict(store: &Store) {
    let key = Key::parse("runs/r2/roll-1/consensus.json").unwrap();
    let first = store
        .put(&key, Bytes::from_static(b"{\"v\":1}"))
        .await
        .unwrap();
    let again = store
        .put(&key, Bytes::from_static(b"{\"v\":1}"))
        .await
        .unwrap();
    assert_eq!(first.stored, again.stored);
    assert!(first.created && !again.created, "{first:?} then {again:?}");
    let err = store
        .put(&key, Bytes::from_static(b"{\"v\":2}"))
        .await
        .unwrap_err();
    match &err {
        StoreError::Conflict {
            key: k,
            existing,
            attempted,
        } => {
            assert_eq!(k, &key);
            assert_eq!(existing, &first.stored.hash);
            assert_eq!(attempted, &Hash::of(b"{\"v\":2}"));
        }
        other => panic!("expected a conflict, got {other}"),
    }
    assert!(err.to_string().contains("runs/r2/roll-1/consensus.json"));
    // Nothing was overwritten.
    assert_eq!(&store.get(&key).await.unwrap()[..], b"{\"v\":1}");
}

async fn missing_and_mismatch_name_the_key(store: &Store) {
    let key = Key::parse("runs/r3/roll-1/judge-a/parsed.json").unwrap();
    let err = store.get_verified(&key, &Hash::of(b"x")).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains(key.as_str()));
    store.put(&key, Bytes::from_static(b"real")).await.unwrap();
    let err = store
        .get_verified(&key, &Hash::of(b"other"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{msg}");
    assert!(
        msg.contains(key.as_str())
            && msg.contains(Hash::of(b"other").as_str())
            && msg.contains(Hash::of(b"real").as_str()),
        "{msg}"
    );
    let err = store.verify(&key, &Hash::of(b"other")).await.unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }));
    assert_eq!(
        store
            .get_opt(&Key::parse("runs/none/header.json").unwrap())
            .await
            .unwrap(),
        None
    );
}

async fn reserved_keys_are_refused(store: &Store) {
    let run = RunId::parse("r4").unwrap();
    for key in [Key::evidence(&run), Key::seal(&run)] {
        let err = store
            .put_json(&key, &json!({"phase": "DECIDED"}))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Reserved { .. }), "{err}");
        assert!(!store.exists(&key).await.unwrap());
    }
}

/// Outside bytes reach a reserved key only through a `Staging` area (what an import verified),
/// copied byte for byte; a staging copy from another store is bounded.
async fn only_a_staging_area_hands_over_reserved_keys(store: &Store) {
    let run = RunId::parse("r5").unwrap();
    let key = Key::evidence(&run);
    let bytes = Bytes::from_static(b"{\"phase\":\"DECIDED\"}");
    let staging = Staging::new(1 << 20);
    staging.put(&key, bytes.clone()).await.unwrap();
    let stored = store.import_from(&staging, &key).await.unwrap();
    assert_eq!(stored.hash, Hash::of(&bytes));
    assert_eq!(store.get(&key).await.unwrap(), bytes);

    let frame = Key::cas(&Hash::of(b"frame"));
    store
        .put(&frame, Bytes::from_static(b"frame"))
        .await
        .unwrap();
    let staging = Staging::new(1 << 20);
    let err = staging.copy_from(store, &frame, 4).await.unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    let copied = staging.copy_from(store, &frame, 5).await.unwrap().unwrap();
    assert_eq!(copied.hash, Hash::of(b"frame"));
    let absent = Key::cas(&Hash::of(b"no such frame"));
    assert_eq!(staging.copy_from(store, &absent, 5).await.unwrap(), None);
}

fn chunks(total: usize, chunk: usize, seed: u8) -> Vec<Result<Bytes, std::io::Error>> {
    (0..total.div_ceil(chunk))
        .map(|i| {
            let len = chunk.min(total - i * chunk);
            Ok(Bytes::from(
                (0..len)
                    .map(|j| (j as u8).wrapping_mul(31).wrapping_add(seed ^ i as u8))
                    .collect::<Vec<u8>>(),
            ))
        })
        .collect()
}

fn hash_chunks(c: &[Result<Bytes, std::io::Error>]) -> Hash {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for b in c.iter().flatten() {
        h.update(b);
    }
    Hash::from_hasher(h)
}

async fn blobs_small_and_large_stream(store: &Store) {
    for (total, seed) in [(4096usize, 1u8), (20 * 1024 * 1024 + 17, 2u8)] {
        let parts = chunks(total, 64 * 1024, seed);
        let want = hash_chunks(&parts);
        let stored = store
            .put_blob(stream::iter(parts), Some(&want), u64::MAX)
            .await
            .unwrap();
        assert_eq!(stored.hash, want);
        assert_eq!(stored.key, Key::cas(&want));
        assert_eq!(stored.size, total as u64);
        assert_eq!(
            store.verify(&stored.key, &want).await.unwrap(),
            total as u64
        );
        // Again: idempotent.
        let again = store
            .put_blob(stream::iter(chunks(total, 64 * 1024, seed)), None, u64::MAX)
            .await
            .unwrap();
        assert_eq!(again.hash, want);
    }
    // Over the limit: refused.
    let err = store
        .put_blob(stream::iter(chunks(10_000, 1000, 9)), None, 5000)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
}

async fn blob_with_wrong_expected_hash_keeps_nothing(store: &Store) {
    for total in [1000usize, 9 * 1024 * 1024] {
        let parts = chunks(total, 4096, 3);
        let actual = hash_chunks(&parts);
        let claimed = Hash::of(b"not these bytes");
        let err = store
            .put_blob(stream::iter(parts), Some(&claimed), u64::MAX)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
        assert!(!store.exists(&Key::cas(&claimed)).await.unwrap());
        assert!(!store.exists(&Key::cas(&actual)).await.unwrap());
    }
    // No staging leftovers.
    assert!(store.list("tmp").await.unwrap().keys.is_empty());
}

async fn concurrent_creates_exactly_one_wins(store: &Store) {
    let key = Key::parse("runs/race/evidence-candidate.json").unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let key = key.clone();
            tokio::spawn(async move { store.put(&key, Bytes::from(format!("writer {i}"))).await })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => wins += 1,
            Err(StoreError::Conflict { .. }) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    assert_eq!(wins, 1, "exactly one racing create must win");
    // Identical racing creates all succeed, and exactly one says it created the object.
    let key = Key::parse("runs/race/same.json").unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let key = key.clone();
            tokio::spawn(async move { store.put(&key, Bytes::from_static(b"same")).await })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        created += usize::from(t.await.unwrap().unwrap().created);
    }
    assert_eq!(
        created, 1,
        "exactly one identical racing create created the object"
    );
}

async fn listing_runs(store: &Store) {
    let runs: Vec<String> = store
        .runs()
        .await
        .unwrap()
        .runs
        .iter()
        .map(|r| r.to_string())
        .collect();
    for want in ["r1", "r2", "r3", "race"] {
        assert!(runs.contains(&want.to_string()), "{want} not in {runs:?}");
    }
}

/// `numbered` lists what `Key::log_number` reads from a full listing: names of exactly 20
/// digits directly in the folder; a shorter or longer name, a staging-like name and a key one
/// folder deeper are not numbered objects.
async fn numbered_lists_the_20_digit_names_directly_in_the_folder(store: &Store) {
    let dir = "log/checkpoints";
    assert_eq!(store.numbered(dir).await.unwrap(), Vec::<u64>::new());
    for name in [
        format!("{:020}", 7),
        format!("{:020}", 123_456),
        format!("{}", u64::MAX),
        "0000000000000000007".into(),
        "000000000000000000007".into(),
        "0000000000000000000x".into(),
        format!("{:020}/{:020}", 9, 9),
        format!("{:020}.tmp", 8),
    ] {
        let key = Key::parse(&format!("{dir}/{name}")).unwrap();
        store.put(&key, Bytes::from_static(b"note")).await.unwrap();
    }
    let mut numbers = store.numbered(dir).await.unwrap();
    numbers.sort_unstable();
    assert_eq!(numbers, vec![7, 123_456, u64::MAX]);
    let from_keys: Vec<u64> = (store.list(dir).await.unwrap().keys.iter())
        .filter_map(|k| k.log_number(dir))
        .collect();
    assert_eq!(from_keys, numbers, "the same as read from every key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_memory() {
    let store = Store::open("memory://").await.unwrap();
    suite(&store, "memory://").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    suite(&store, "file://").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_s3() {
    let Some(store) = common::s3_store("conformance").await else {
        return;
    };
    suite(&store, "s3://").await;
}

#[tokio::test]
async fn file_store_lists_links_as_foreign_never_as_objects() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let key = Key::parse("runs/x/a.json").unwrap();
    store.put(&key, Bytes::from_static(b"{}")).await.unwrap();
    let folder = dir.path().join("runs/x");
    std::os::unix::fs::symlink(folder.join("a.json"), folder.join("b.json")).unwrap();
    let listing = store.list("runs/x").await.unwrap();
    assert_eq!(listing.keys, vec![key]);
    assert_eq!(
        listing.foreign,
        vec!["runs/x/b.json (a symbolic link)".to_string()]
    );
}

/// On `file://`, only regular files are numbered objects: a link, a FIFO or a folder with a
/// number's name is left out of `numbered` (a link to a real checkpoint too), and listing
/// never opens them (a FIFO would block).
#[tokio::test]
async fn file_store_numbered_are_regular_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let key = Key::log_checkpoint(5);
    store.put(&key, Bytes::from_static(b"note")).await.unwrap();
    let folder = dir.path().join("log/checkpoints");
    std::os::unix::fs::symlink(
        folder.join(format!("{:020}", 5)),
        folder.join(format!("{:020}", 6)),
    )
    .unwrap();
    std::fs::create_dir(folder.join(format!("{:020}", 7))).unwrap();
    let fifo = folder.join(format!("{:020}", 8));
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    assert_eq!(store.numbered("log/checkpoints").await.unwrap(), vec![5]);
    assert_eq!(
        store.numbered("log/entries").await.unwrap(),
        Vec::<u64>::new()
    );
}

#[tokio::test]
async fn file_store_detects_edits_and_truncation_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let key = Key::parse("runs/t/roll-1/proof-package.json").unwrap();
    let stored = store
        .put_json(&key, &json!({"frames": [1, 2, 3]}))
        .await
        .unwrap()
        .stored;
    let file = dir.path().join(key.as_str());
    // Edit one byte.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[3] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let err = store.get_verified(&key, &stored.hash).await.unwrap_err();
    assert!(
        matches!(err, StoreError::HashMismatch { .. }) && err.to_string().contains(key.as_str()),
        "{err}"
    );
    // Truncate.
    std::fs::write(&file, &bytes[..4]).unwrap();
    let err = store.verify(&key, &stored.hash).await.unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    // A re-put of the original bytes is a conflict: a damaged object is reported, never repaired.
    let err = store
        .put_json(&key, &json!({"frames": [1, 2, 3]}))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
}

#[tokio::test]
async fn file_store_that_cannot_be_written_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    // `runs` is a file, so nothing can be created under it (works even as root, unlike chmod).
    std::fs::write(dir.path().join("runs"), b"in the way").unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let key = Key::parse("runs/x/header.json").unwrap();
    let err = store.put_json(&key, &json!({})).await.unwrap_err();
    // A file where a folder belongs is refused as a link there would be: never passed through.
    assert!(
        matches!(&err, StoreError::LinkInPath { at, .. } if at == "runs"),
        "{err}"
    );
    assert!(err.to_string().contains("runs/x/header.json"), "{err}");
    // A store folder that cannot be created is a clear open error.
    let err = Store::open(&format!("file://{}/runs/sub", dir.path().display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot create folder"), "{err}");
}

#[tokio::test]
async fn documents_over_the_limit_are_refused_before_reading() {
    let store = Store::open("memory://").await.unwrap().with_doc_limit(16);
    let key = Key::parse("runs/big/header.json").unwrap();
    store.put(&key, Bytes::from(vec![b' '; 100])).await.unwrap();
    let err = store.get(&key).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLarge {
                size: 100,
                limit: 16,
                ..
            }
        ),
        "{err}"
    );
}

/// A blob this process stored is not created again (on S3 that create costs a PUT that finds
/// it and a GET to compare): its key is its sha256, so the store is not asked, and a rewrite on
/// disk since is found by every read of it, as by another process's create.
#[tokio::test]
async fn a_blob_this_process_stored_is_not_created_again_and_a_rewrite_is_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    let bytes = Bytes::from_static(b"\x89PNG\r\n\x1a\n a frame");
    let key = Key::cas(&Hash::of(&bytes));
    assert!(store.put(&key, bytes.clone()).await.unwrap().created);
    let file = dir.path().join(key.as_str());
    std::fs::write(&file, b"planted").unwrap();
    let again = store.put(&key, bytes.clone()).await.unwrap();
    assert!(!again.created);
    assert_eq!(again.stored.hash, Hash::of(&bytes));
    let err = store
        .get_verified(&key, &again.stored.hash)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    // Another process (another opened store) asks the store, and finds other bytes there.
    let other = Store::open(&url).await.unwrap();
    let err = other.put(&key, bytes).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
}
