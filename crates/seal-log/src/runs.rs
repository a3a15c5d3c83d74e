//! A few runs' leaves without the whole log: what `seal verify <run>`, `seal explain`,
//! `seal export verdict`, `seal log prove` and their routes read, in O(log n) objects a run
//! instead of every entry (docs/DESIGN.md §13).
//!
//! For each run: its pointers (`log/runs/<run>/<index>`), the entry at each index, and that
//! leaf's hash and inclusion proof from the stored tiles, authenticated against the latest
//! checkpoint a trusted key signed. A pointer only says where to look: the entry must hash to
//! the leaf the signed tree holds, and be about the run, or it is not the run's.
//!
//! When any of it is missing (a run logged before pointers, a log from before
//! tiles, a pointer to an entry that is gone, tiles that do not hash to the signed root) the
//! answer is "read the whole log" ([`LogView::load`]), never "not logged": the short way
//! only ever finds a run's leaves, so the verdict it gives a run is the one of the whole log,
//! with one difference, written in docs/DESIGN.md §13: it proves the run's own leaves, so a
//! log whose *other* entries were deleted or rewritten is not seen from one run (`seal log
//! verify` and `seal verify --all` read everything and refuse it).

use std::collections::BTreeMap;

use crate::leaf::SealLeaf;
use crate::storage::LogStorage;
use crate::stream::Passed;
use crate::tiles::{self, TileCache};
use crate::view::{latest_trusted, LogView, Proof};
use seal_core::ids::RunId;
use seal_core::key::LOG_POLICIES;
use seal_core::tlog::{self, Leaf, LogTrust, NodeHash, ReadLeaf, SignedCheckpoint};
use seal_store::{Key, StoreError};

/// How a leaf read by a run's pointer is believed.
enum Authority<'a> {
    /// The stored tiles, authenticated against the latest trusted checkpoint's root.
    Tiles {
        latest: SignedCheckpoint,
        cache: TileCache,
    },
    /// The pass over the whole log that `seal verify --all` made first ([`crate::stream`]).
    Passed(&'a Passed),
}

/// What a pointer's entry is, once believed (or not).
enum Believed {
    /// The leaf the log holds at that index, and how it is proven in the latest checkpoint.
    Leaf(Option<Proof>),
    /// Not a leaf the pass read (appended since): not the run's, as the pass saw the log.
    Unread,
    /// Read the whole log instead.
    Whole,
}

impl Authority<'_> {
    fn latest(&self) -> &SignedCheckpoint {
        match self {
            Authority::Tiles { latest, .. } => latest,
            Authority::Passed(p) => &p.latest,
        }
    }

    /// Whether a leaf no checkpoint covers is known to be this log's: the pass authenticated
    /// every leaf it read past the checkpoint; read by its pointer alone, a leaf's `auth`
    /// cannot be checked (it signs the root of every leaf before it), so the whole log is read.
    fn authenticated_past_checkpoint(&self) -> bool {
        matches!(self, Authority::Passed(_))
    }

    async fn believe(
        &mut self,
        store: &impl LogStorage,
        index: u64,
        hash: &NodeHash,
    ) -> Result<Believed, StoreError> {
        match self {
            // A leaf the checkpoint covers is believed only as the signed tree holds it; one
            // past it, as the whole log's readers read it (no checkpoint names it).
            Authority::Tiles { latest, cache, .. } => {
                if index >= latest.size {
                    return Ok(Believed::Leaf(None));
                }
                Ok(
                    match tiles::prove_leaf(store, latest.size, &latest.root, index, cache).await? {
                        Some((proven, path)) if proven == *hash => {
                            Believed::Leaf(Some(Proof::Path(path)))
                        }
                        _ => Believed::Whole,
                    },
                )
            }
            Authority::Passed(pass) => {
                if index >= pass.size() {
                    return Ok(Believed::Unread);
                }
                Ok(match pass.leaf_hash(store, index).await? {
                    Some(h) if h == *hash => {
                        Believed::Leaf((index < pass.latest.size).then_some(Proof::Pass))
                    }
                    // A tile missing or planted, or the entry rewritten since the pass.
                    _ => Believed::Whole,
                })
            }
        }
    }
}

/// The policy digest and leaf index a `log/policies/<sha256>/<index>` key names.
fn policy_pointer(k: &Key) -> Option<(String, u64)> {
    let rest = k.as_str().strip_prefix(LOG_POLICIES)?.strip_prefix('/')?;
    let (sha, index) = rest.split_once('/')?;
    let sha = seal_core::canonical::Hash::parse(sha).ok()?;
    Some((sha.to_string(), seal_core::key::numbered_name(index)?))
}

impl LogView {
    /// The log as `seal verify` checks `runs` against it, read by their pointers and the
    /// tiles (see the module doc); `None` when that cannot be done, and the caller reads the
    /// whole log.
    pub async fn for_runs(
        store: &impl LogStorage,
        trust: &LogTrust,
        runs: &[RunId],
    ) -> Result<Option<LogView>, StoreError> {
        let latest = latest_trusted(store, trust).await?;
        let Some(latest) = latest else {
            return Ok(None);
        };
        let authority = Authority::Tiles {
            latest,
            cache: TileCache::new(),
        };
        LogView::read_runs(store, runs, authority).await
    }

    /// [`LogView::for_runs`] after a clean [`crate::stream::pass`]: each leaf is believed as
    /// the pass read it, and a run without a seal leaf's pointer is not logged (the pass found
    /// every seal leaf's pointer stored). `None`: read the whole log.
    pub async fn for_runs_passed(
        store: &impl LogStorage,
        pass: &Passed,
        runs: &[RunId],
    ) -> Result<Option<LogView>, StoreError> {
        LogView::read_runs(store, runs, Authority::Passed(pass)).await
    }

    async fn read_runs(
        store: &impl LogStorage,
        runs: &[RunId],
        mut authority: Authority<'_>,
    ) -> Result<Option<LogView>, StoreError> {
        let mut view = LogView::default();
        let mut read = BTreeMap::new();
        for run in runs {
            let folder = Key::log_run_dir(run);
            // A stray name there is no pointer; the whole log's readers never look here.
            let mut indices: Vec<u64> = (store.list(&folder).await?.keys.iter())
                .filter_map(|k| k.log_number(&folder))
                .collect();
            if let Authority::Passed(pass) = &authority {
                indices.extend(pass.unpointed(run));
                indices.sort_unstable();
                indices.dedup();
            }
            for index in indices {
                let Some(bytes) = store.get_opt(&Key::log_entry(index)).await? else {
                    return Ok(None);
                };
                let hash = tlog::leaf_hash(&bytes);
                let proof = match authority.believe(store, index, &hash).await? {
                    Believed::Leaf(proof) => proof,
                    Believed::Unread => continue,
                    Believed::Whole => return Ok(None),
                };
                // Past the checkpoint, a leaf that does not authenticate is planted: the whole
                // log's readers name it.
                if proof.is_none() && !authority.authenticated_past_checkpoint() {
                    return Ok(None);
                }
                match ReadLeaf::parse(&bytes).map(|r| (r.leaf, r.content)) {
                    Ok((Leaf::Seal(e), content)) if e.run_id == run.as_str() => {
                        let leaf = SealLeaf::of(index, &e, content);
                        view.by_run.entry(e.run_id).or_default().push(leaf);
                    }
                    Ok((Leaf::Review(r), _)) if r.run_id == run.as_str() => {
                        view.reviews.push((index, r));
                    }
                    // Another run's leaf there (the index was rebuilt since): not this run's.
                    Ok(_) => continue,
                    Err(_) => return Ok(None),
                }
                read.insert(index, (hash, proof));
            }
            // A run is found by its seal's leaf: one whose only pointers are its reviews'
            // was sealed before pointers, and the whole log holds its seal's leaf. After a
            // clean pass every seal leaf has its pointer: no seal leaf, not logged.
            let passed = matches!(authority, Authority::Passed(_));
            if !passed && !view.by_run.contains_key(run.as_str()) {
                return Ok(None);
            }
        }
        // The judge policies' registrations (a few leaves: one a set-up), believed as the
        // runs' leaves are: what a run's attempts name is checked against them.
        let listed = store.list(LOG_POLICIES).await?.keys;
        for k in &listed {
            let Some((sha, index)) = policy_pointer(k) else {
                continue;
            };
            let Some(bytes) = store.get_opt(&Key::log_entry(index)).await? else {
                return Ok(None);
            };
            let hash = tlog::leaf_hash(&bytes);
            let proof = match authority.believe(store, index, &hash).await? {
                Believed::Leaf(proof) => proof,
                Believed::Unread => continue,
                Believed::Whole => return Ok(None),
            };
            if proof.is_none() && !authority.authenticated_past_checkpoint() {
                return Ok(None);
            }
            match ReadLeaf::parse(&bytes).map(|r| r.leaf) {
                Ok(Leaf::Policy(p)) if p.policy_sha256 == sha => view.policies.push((index, p)),
                Ok(_) => continue,
                Err(_) => return Ok(None),
            }
            read.insert(index, (hash, proof));
        }
        for leaves in view.by_run.values_mut() {
            leaves.sort_by_key(|l| l.index);
        }
        view.reviews.sort_by_key(|(i, _)| *i);
        view.policies.sort_by_key(|(i, _)| *i);
        view.policies.dedup_by_key(|(i, _)| *i);
        view.latest = Some(authority.latest().clone());
        view.partial = Some(read);
        Ok(Some(view))
    }

    /// [`LogView::for_runs`], else the whole log.
    pub async fn load_for(
        store: &impl LogStorage,
        trust: &LogTrust,
        runs: &[RunId],
    ) -> Result<LogView, StoreError> {
        match LogView::for_runs(store, trust, runs).await? {
            Some(view) => Ok(view),
            None => LogView::load(store, trust).await,
        }
    }

    /// The first registration of the judge policy of digest `sha256` in this view's log (a
    /// view of some runs reads every policy's: [`LogView::for_runs`]).
    pub fn policy_registration(&self, sha256: &str) -> Option<&(u64, tlog::PolicyEntry)> {
        self.policies
            .iter()
            .find(|(_, p)| p.policy_sha256 == sha256)
    }

    /// Whether this view answers for `run`: a view of the whole log for every run, one of
    /// some runs ([`LogView::for_runs`]) for those.
    pub fn covers(&self, run: &str) -> bool {
        self.partial.is_none() || self.by_run.contains_key(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::{entry, entry_file, forty, raw_keys};
    use crate::{Log, DEFAULT_ORIGIN};
    use seal_core::canonical::Hash;
    use seal_core::sealing::SigningKey;
    use seal_core::tlog::{LogEntry, ReviewEntry};
    use seal_store::Store;

    /// A `file://` log of 40 runs' seals (each appended and checkpointed as the postguard
    /// does) and a review of run 7 after them; run 7 and its seal's entry.
    async fn logged() -> (tempfile::TempDir, Store, SigningKey, RunId, LogEntry) {
        let (dir, store, key) = forty().await;
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        let (run, sealed) = entry(7);
        let review = ReviewEntry::new(
            run.as_str(),
            0,
            Hash::of(b"a review").as_ref(),
            &"e".repeat(64),
            "2026-12-04T00:00:00Z",
        );
        log.append_review(&review, &key).await.unwrap();
        (dir, store, key, run, sealed)
    }

    async fn views(store: &Store, key: &SigningKey, run: &RunId) -> (Option<LogView>, LogView) {
        let trust = raw_keys(key, &[]);
        let some = LogView::for_runs(store, &trust, std::slice::from_ref(run))
            .await
            .unwrap();
        (some, LogView::load(store, &trust).await.unwrap())
    }

    /// Read by its pointers and the tiles, a run's view gives the run the whole log's answers:
    /// its seal leaf, its review, the check of its stored entry (the logged one, or another
    /// seal), and its inclusion proof.
    #[tokio::test]
    async fn a_run_s_view_gives_the_whole_log_s_answers_for_that_run() {
        let (_dir, store, key, run, sealed) = logged().await;
        let (some, whole) = views(&store, &key, &run).await;
        let some = some.expect("read by its pointers");
        assert!(some.covers(run.as_str()) && !some.covers("run-batch-0008"));
        assert_eq!(
            some.seal_leaves(run.as_str()),
            whole.seal_leaves(run.as_str())
        );
        assert_eq!(some.reviews.len(), 1);
        assert_eq!(some.reviews[0].0, 40);
        let review = &some.reviews[0].1;
        assert!(some.check_review(&run, 0, &review.review_sha256).is_none());
        assert!(some.check_review(&run, 0, &"f".repeat(64)).is_some());
        assert!(some.check_entry(&run, &sealed).is_empty());
        let mut other = sealed.clone();
        other.seal_sha256 = Hash::of(b"another seal").to_string();
        assert_eq!(
            format!("{:?}", some.check_entry(&run, &other)),
            format!("{:?}", whole.check_entry(&run, &other))
        );
        let (a, b) = (
            some.proof(&store, &run).await.unwrap(),
            whole.proof(&store, &run).await.unwrap(),
        );
        assert_eq!(
            (
                a.leaf_index,
                a.tree_size,
                &a.entry,
                &a.audit_path,
                &a.checkpoint
            ),
            (
                b.leaf_index,
                b.tree_size,
                &b.entry,
                &b.audit_path,
                &b.checkpoint
            )
        );
    }

    /// A run without a pointer (sealed before them) is not "not logged": the caller is sent
    /// to the whole log, which finds it.
    #[tokio::test]
    async fn a_run_without_its_pointer_is_read_from_the_whole_log() {
        let (dir, store, key, run, sealed) = logged().await;
        let folder = dir.path().join(Key::log_run_dir(&run));
        std::fs::remove_file(folder.join(format!("{:020}", 7))).unwrap();
        let (some, _) = views(&store, &key, &run).await;
        assert!(some.is_none());
        let view = LogView::load_for(&store, &raw_keys(&key, &[]), std::slice::from_ref(&run))
            .await
            .unwrap();
        assert!(view.partial.is_none());
        assert!(view.check_entry(&run, &sealed).is_empty());
    }

    /// The store writer rewrites the entry a pointer names (here to say `fail`): the bytes do
    /// not hash to the leaf the tiles prove under the signed root, so the run's view is not
    /// built from them, and the whole log refuses the rewrite.
    #[tokio::test]
    async fn an_entry_rewritten_behind_its_pointer_is_not_believed() {
        let (dir, store, key, run, sealed) = logged().await;
        let mut planted = sealed.clone();
        planted.outcome = "fail".into();
        std::fs::write(entry_file(&dir, 7), planted.to_bytes().unwrap()).unwrap();
        let (some, whole) = views(&store, &key, &run).await;
        assert!(
            some.is_none(),
            "a rewritten entry was read as the run's leaf"
        );
        assert!(!whole.check_entry(&run, &planted).is_empty());
    }

    /// The store writer rewrites an entry and the tile that holds its leaf hash to match: the
    /// tile does not hash up to the signed root, so it is not believed.
    #[tokio::test]
    async fn a_tile_rewritten_to_match_a_rewritten_entry_is_not_believed() {
        let (dir, store, key, run, sealed) = logged().await;
        let mut planted = sealed.clone();
        planted.outcome = "fail".into();
        let bytes = planted.to_bytes().unwrap();
        std::fs::write(entry_file(&dir, 7), &bytes).unwrap();
        // Every stored tile of level 0 holds leaf 7 at offset 7.
        let level0 = dir.path().join("log/tile/8/0/000.p");
        for f in std::fs::read_dir(&level0).unwrap() {
            let path = f.unwrap().path();
            let mut tile = std::fs::read(&path).unwrap();
            if tile.len() >= 8 * 32 {
                tile[7 * 32..8 * 32].copy_from_slice(&tlog::leaf_hash(&bytes));
                std::fs::write(&path, tile).unwrap();
            }
        }
        let (some, _) = views(&store, &key, &run).await;
        assert!(some.is_none(), "a rewritten tile was believed");
    }

    /// A pointer in a run's folder that names another run's leaf (planted, or left by a
    /// rebuild): that leaf is not the run's.
    #[tokio::test]
    async fn a_pointer_to_another_run_s_leaf_is_not_that_run_s() {
        let (_dir, store, key, run, sealed) = logged().await;
        store
            .put(&Key::log_run_leaf(&run, 9), bytes::Bytes::new())
            .await
            .unwrap();
        let (some, _) = views(&store, &key, &run).await;
        let some = some.expect("read by its pointers");
        assert_eq!(some.seal_leaves(run.as_str()).len(), 1);
        assert!(some.check_entry(&run, &sealed).is_empty());
        // Nor does it make the view answer for the other run.
        assert!(!some.covers("run-batch-0009"));
    }

    /// Every leaf of a run (the 40 seals and the review) has its pointer once its
    /// checkpoint is stored, and `seal log verify` finds none missing.
    #[tokio::test]
    async fn every_leaf_a_checkpoint_covers_has_its_pointer() {
        let (_dir, store, key, _run, _sealed) = logged().await;
        let trust = raw_keys(&key, &[]);
        let report = crate::verify_log(&store, &trust, None).await.unwrap();
        assert_eq!(report.pointers_missing, 0);
        assert!(pointer_problems(&report).is_empty());
        assert_eq!(store.list(crate::LOG_RUNS).await.unwrap().keys.len(), 41);
    }

    /// The store writer deletes the pointer of run 7's seal (to hide that leaf from a reader
    /// of run 7 alone): `seal log verify` names it (fails without the check), and the next
    /// admission of an appender stores it again.
    #[tokio::test]
    async fn a_deleted_pointer_is_named_by_log_verify_and_stored_again_at_admission() {
        let (dir, store, key, run, _sealed) = logged().await;
        let deleted = Key::log_run_leaf(&run, 7);
        std::fs::remove_file(dir.path().join(deleted.as_str())).unwrap();
        let trust = raw_keys(&key, &[]);
        let report = crate::verify_log(&store, &trust, None).await.unwrap();
        assert!(!report.verified);
        assert_eq!(report.pointers_missing, 1);
        let named = pointer_problems(&report);
        assert_eq!(named.len(), 1, "{:?}", report.problems);
        assert_eq!(named[0].object, deleted.as_str());

        Log::new(store.clone(), DEFAULT_ORIGIN)
            .admit(&key, &[])
            .await
            .unwrap();
        assert!(store.exists(&deleted).await.unwrap());
        let report = crate::verify_log(&store, &trust, None).await.unwrap();
        assert!(pointer_problems(&report).is_empty());
    }

    /// The report's `log_pointers` problems (the fixture logs runs it does not store, so the
    /// report has `run_missing` ones too).
    fn pointer_problems(report: &crate::LogReport) -> Vec<&crate::Finding> {
        let check = seal_core::vocab::AuditCheck::LogPointers;
        report
            .problems
            .iter()
            .filter(|p| p.check == check)
            .collect()
    }

    /// A log from before pointers (none stored) and an entry a crash left past the latest
    /// checkpoint with no pointer: admission stores them all, and run 7 is read by its
    /// pointers again.
    #[tokio::test]
    async fn admission_points_a_log_from_before_pointers_and_an_entry_left_by_a_crash() {
        let (dir, store, key, run, _sealed) = logged().await;
        std::fs::remove_dir_all(dir.path().join(crate::LOG_RUNS)).unwrap();
        // What a crash between the entry's create and its checkpoint leaves: an entry seal
        // signed for its index.
        let (late, e) = entry(40);
        let tree = LogView::load(&store, &raw_keys(&key, &[]))
            .await
            .unwrap()
            .tree;
        let at = tlog::Place::next_of(&tree).unwrap();
        assert_eq!(at.index, 41);
        let signed = tlog::sign_leaf(&e.to_bytes().unwrap(), DEFAULT_ORIGIN, &at, &|m| {
            key.sign(m)
        })
        .unwrap();
        store
            .put(&Key::log_entry(41), bytes::Bytes::from(signed))
            .await
            .unwrap();
        let trust = raw_keys(&key, &[]);
        let report = crate::verify_log(&store, &trust, None).await.unwrap();
        assert_eq!(
            report.pointers_missing, 0,
            "a log from before pointers is no problem"
        );
        assert!(views(&store, &key, &run).await.0.is_none());

        Log::new(store.clone(), DEFAULT_ORIGIN)
            .admit(&key, &[])
            .await
            .unwrap();
        assert!(store.exists(&Key::log_run_leaf(&late, 41)).await.unwrap());
        assert_eq!(store.list(crate::LOG_RUNS).await.unwrap().keys.len(), 42);
        assert!(views(&store, &key, &run).await.0.is_some());
    }

    /// A pointer that cannot be stored (the store writer put a file where the run's pointer
    /// folder goes): the append fails naming it, and no checkpoint is published over a leaf
    /// whose pointer is not stored (fails when the pointer races the checkpoint).
    #[tokio::test]
    async fn no_checkpoint_covers_a_leaf_whose_pointer_is_not_stored() {
        let (dir, store, key, _run, _sealed) = logged().await;
        let (blocked, e) = entry(41);
        let folder = dir.path().join(Key::log_run_dir(&blocked));
        std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
        std::fs::write(&folder, b"not a folder").unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        let err = log.append_seal(&blocked, &e, &key).await.unwrap_err();
        assert!(err.to_string().contains(blocked.as_str()), "{err}");
        let largest = crate::checkpoint_sizes(&store).await.unwrap()[0];
        assert_eq!(largest, 41, "a checkpoint covers the unpointed leaf 41");
    }
}
