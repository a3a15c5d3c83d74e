//! What an appender knows of the log below the latest checkpoint, read without the entries
//! (issue 24, docs/DESIGN.md §13 "Admission"): the tree from the stored hash tiles, and a
//! run's leaves from its pointers the first time the process is asked about that run.
//!
//! A process starting on a store of n logged runs reads the latest checkpoint a trusted key
//! signed, the n/256 level-0 tiles of its tree (authenticated by hashing them up to the signed
//! root), and the few entries past it; not the n entries and n seals the old admission read.
//! The guard's look at every stored seal ([`guard`](crate::guard)) then runs behind the first
//! appends (`seal serve`) or before them (every other caller, [`Log::admit`]).
//!
//! A pointer is believed only through the entry it names, and that entry only when it hashes to
//! the leaf the signed tree holds at its index. A pointer the store writer deletes can make a
//! run logged twice (`run_relogged`), never make a seal look logged that is not, nor hide one
//! (docs/DECISIONS.md, "The appender's index is the run pointers").

use futures::{StreamExt, TryStreamExt};

use crate::cache::Cache;
use crate::error::{corrupt, LogError};
use crate::log::Log;
use crate::storage::LogStorage;
use crate::tiles::{self, AT_ONCE};
use crate::view::latest_trusted;
use seal_core::ids::RunId;
use seal_core::tlog::{self, Leaf, LogTrust, NodeHash, ReadLeaf, Tree};
use seal_store::{Key, StoreError};

impl<S: LogStorage> Log<S> {
    /// The appender's state from the latest checkpoint a key of `trusted` signed and the
    /// entries past it; `None` when the stored tiles do not give that checkpoint's tree (a log
    /// from before tiles, tiles lost or planted), and the caller reads the whole log.
    pub(super) async fn read_from_checkpoint(
        &self,
        trust: &LogTrust,
    ) -> Result<Option<Cache>, LogError> {
        let t0 = std::time::Instant::now();
        let latest = latest_trusted(&self.store, trust).await?;
        tracing::debug!(
            ms = t0.elapsed().as_millis() as u64,
            "admission: latest checkpoint read"
        );
        let mut cache = Cache {
            admitted: true,
            trust: trust.clone(),
            ..Cache::default()
        };
        if let Some(latest) = latest {
            let Some(tree) = tree_from_tiles(&self.store, latest.size, &latest.root).await? else {
                return Ok(None);
            };
            // A log cut short under its checkpoint (the store writer deleting the newest
            // entries) is the one loss the tiles cannot show: its last entry is read, and
            // without it the whole log is, whose guard names what is missing.
            if !last_entry_holds(&self.store, &tree).await? {
                return Ok(None);
            }
            tracing::debug!(ms = t0.elapsed().as_millis() as u64, "admission: tree read");
            cache.tiled = tiles::stored_through(&self.store, &tree, latest.size).await?;
            cache.base = latest.size;
            // That checkpoint is stored: an append found below it (a judge policy registered
            // by an earlier process) publishes nothing again, and offers no witness the same
            // checkpoint twice.
            cache.published = latest.size;
            cache.tree = tree;
        }
        // The entries past the checkpoint (a crash between an append and its checkpoint, or
        // another replica's appends in flight) are read and indexed whole, as before.
        self.sync(&mut cache).await?;
        tracing::debug!(
            ms = t0.elapsed().as_millis() as u64,
            "admission: entries past it read"
        );
        Ok(Some(cache))
    }

    /// Indexes the leaves of `run` below the checkpoint this process started from, found by
    /// the run's pointers, once per run: after it the cache knows every leaf of the run, as
    /// it knows every leaf it read past that checkpoint. A pointer names an entry; the entry
    /// counts only when it hashes to the signed tree's leaf there and is about `run`.
    pub(super) async fn load_run(&self, cache: &mut Cache, run: &str) -> Result<(), LogError> {
        if cache.base == 0 || cache.loaded.contains(run) {
            return Ok(());
        }
        // A run id seal never writes has no pointer: nothing below the checkpoint to find.
        let Ok(id) = RunId::parse(run) else {
            return Ok(());
        };
        let folder = Key::log_run_dir(&id);
        for (index, read) in self.pointed(cache, &folder, &format!("run {run}")).await? {
            // Another run's leaf (a pointer planted, or left by a rebuild): not this run's.
            if leaf_run(&read.leaf) == Some(run) {
                cache.know(index, read.leaf, read.content);
            }
        }
        if let Some(leaves) = cache.by_run.get_mut(run) {
            leaves.sort_by_key(|l| l.index);
        }
        cache.loaded.insert(run.to_string());
        Ok(())
    }
}

impl<S: LogStorage> Log<S> {
    /// Indexes the registrations of the policy `entry` registers below the checkpoint this
    /// process started from, found by the policy's pointers, once per policy (as
    /// [`Log::load_run`] does a run's). A deleted pointer can make a policy registered twice,
    /// never make one look registered that is not: the entry counts only when the signed
    /// tree holds it.
    pub(super) async fn load_policy(
        &self,
        cache: &mut Cache,
        entry: &tlog::PolicyEntry,
    ) -> Result<(), LogError> {
        let name = &entry.policy_sha256;
        if cache.base == 0 || cache.policies_loaded.contains(name) {
            return Ok(());
        }
        let Some(sha) = entry.sha256() else {
            return Ok(());
        };
        let folder = Key::log_policy_dir(&sha);
        for (index, read) in self
            .pointed(cache, &folder, &format!("policy {name}"))
            .await?
        {
            if matches!(&read.leaf, Leaf::Policy(p) if &p.policy_sha256 == name) {
                cache.know(index, read.leaf, read.content);
            }
        }
        cache.policies_loaded.insert(name.clone());
        Ok(())
    }
}

impl<S: LogStorage> Log<S> {
    /// The entries below the checkpoint this process started from that the pointers in
    /// `folder` name (`whose`: what the pointers are of, for the errors), each read and believed
    /// only when it hashes to the signed tree's leaf at its index: authenticated by the
    /// checkpoint, `auth` or not. What the leaf is about is the caller's to check.
    async fn pointed(
        &self,
        cache: &Cache,
        folder: &str,
        whose: &str,
    ) -> Result<Vec<(u64, ReadLeaf)>, LogError> {
        let listed = self.store.list(folder).await?.keys;
        let below = (listed.iter())
            .filter_map(|k| k.log_number(folder))
            .filter(|i| *i < cache.base);
        let mut out = Vec::new();
        for index in below {
            let k = Key::log_entry(index);
            let Some(bytes) = self.store.get_opt(&k).await? else {
                return Err(corrupt(
                    &k,
                    format!(
                        "{whose}'s pointer names this entry, which the signed tree holds, but \
                         it is gone: the log lost it (`seal log verify`)"
                    ),
                ));
            };
            if cache.tree.leaf(index) != Some(tlog::leaf_hash(&bytes)) {
                return Err(corrupt(
                    &k,
                    "not the entry the signed tree holds at this index: it was replaced",
                ));
            }
            out.push((index, ReadLeaf::parse(&bytes).map_err(|e| corrupt(&k, e))?));
        }
        Ok(out)
    }
}

/// The run a leaf is about (`None` for a rebuild's).
fn leaf_run(leaf: &Leaf) -> Option<&str> {
    match leaf {
        Leaf::Seal(e) => Some(&e.run_id),
        Leaf::Review(r) => Some(&r.run_id),
        Leaf::Rebuild(_) | Leaf::Policy(_) | Leaf::Report(_) => None,
    }
}

/// Whether the last leaf of `tree` is stored as an entry that hashes to it.
async fn last_entry_holds(store: &impl LogStorage, tree: &Tree) -> Result<bool, StoreError> {
    let Some(last) = tree.size().checked_sub(1) else {
        return Ok(true);
    };
    let stored = store.get_opt(&Key::log_entry(last)).await?;
    Ok(stored.is_some_and(|b| tree.leaf(last) == Some(tlog::leaf_hash(&b))))
}

/// The tree of the first `size` leaves from the stored level-0 tiles (the leaf hashes, 256 a
/// tile), when they hash up to `root`; `None` when a tile is missing or has the wrong length,
/// or the tiles are not that tree's.
pub(super) async fn tree_from_tiles(
    store: &impl LogStorage,
    size: u64,
    root: &NodeHash,
) -> Result<Option<Tree>, StoreError> {
    let leaf_tiles: Vec<tlog::Tile> = tlog::tiles_between(0, size)
        .into_iter()
        .filter(|t| t.level() == 0)
        .collect();
    let mut reads = futures::stream::iter(leaf_tiles)
        .map(|t| async move {
            let Some(k) = tlog::tile_key(&t) else {
                return Ok(None);
            };
            let read = tiles::bounded_tile(store, &k).await?.read();
            Ok::<_, StoreError>(read.filter(|b| b.len() == t.width() as usize * 32))
        })
        .buffered(AT_ONCE);
    let mut tree = Tree::new();
    while let Some(read) = reads.try_next().await? {
        let Some(bytes) = read else {
            return Ok(None);
        };
        for hash in bytes.chunks_exact(32) {
            let mut leaf = [0u8; 32];
            leaf.copy_from_slice(hash);
            if tree.push_leaf_hash(leaf).is_err() {
                return Ok(None);
            }
        }
    }
    let signed = tree.size() == size && tree.root(size).ok().as_ref() == Some(root);
    Ok(signed.then_some(tree))
}

#[cfg(test)]
mod tests {
    use crate::log::tests::{entry, entry_file, forty, raw_keys};
    use crate::{Appended, EvidenceWas, Log, LogError, SealLogged, DEFAULT_ORIGIN};
    use bytes::Bytes;
    use seal_core::canonical::Hash;
    use seal_store::Key;

    fn appended(logged: SealLogged) -> Appended {
        match logged {
            SealLogged::Appended(a) => a,
            other => panic!("{other:?}"),
        }
    }

    /// The quick admission reads the tree from the tiles, not the entries: entries below the
    /// checkpoint that are gone do not stop it (the old admission read every one). A run is
    /// then found by its pointer, the run whose entry is gone is refused by name, and the seal
    /// scan behind the appends refuses the log.
    #[tokio::test]
    async fn admission_reads_no_entry_below_the_checkpoint_and_finds_runs_by_their_pointers() {
        let (dir, store, key) = forty().await;
        std::fs::remove_file(entry_file(&dir, 3)).unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        assert!(log.admit_quick(&key, &[]).await.unwrap(), "a scan is due");

        let (run, e) = entry(20);
        let found = appended(log.append_seal(&run, &e, &key).await.unwrap());
        assert_eq!((found.index, found.created), (20, false));
        let seal = Hash::parse(&e.seal_sha256).unwrap();
        assert_eq!(
            log.require_logged(&run, &seal, &key, &[])
                .await
                .unwrap()
                .index,
            20
        );

        let (gone, e3) = entry(3);
        match log.append_seal(&gone, &e3, &key).await.unwrap_err() {
            LogError::Corrupt { key: k, detail } => {
                assert_eq!(k, Key::log_entry(3).as_str());
                assert!(detail.contains("gone"), "{detail}");
            }
            other => panic!("{other}"),
        }
        let (new, e40) = entry(40);
        assert_eq!(
            appended(log.append_seal(&new, &e40, &key).await.unwrap()).index,
            40
        );

        assert!(matches!(
            log.scan(&key, &[]).await,
            Err(LogError::Refused { .. })
        ));
        let (next, e41) = entry(41);
        assert!(matches!(
            log.append_seal(&next, &e41, &key).await,
            Err(LogError::Refused { .. })
        ));
        assert!(store.get_opt(&Key::log_entry(41)).await.unwrap().is_none());
    }

    /// A pointer is believed only through the entry it names, as the signed tree holds it:
    /// an entry replaced under a run's pointer is refused, never taken for the run's leaf
    /// (it would be handed back as a rival seal, or make the run look logged).
    #[tokio::test]
    async fn an_entry_replaced_under_a_pointer_is_refused() {
        let (dir, store, key) = forty().await;
        let (run, e) = entry(7);
        let mut planted = e.clone();
        planted.seal_sha256 = Hash::of(b"a planted seal").to_string();
        std::fs::write(entry_file(&dir, 7), planted.to_bytes().unwrap()).unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        log.admit_quick(&key, &[]).await.unwrap();
        let planted_seal = Hash::parse(&planted.seal_sha256).unwrap();
        for err in [
            log.append_seal(&run, &e, &key).await.unwrap_err(),
            log.require_logged(&run, &planted_seal, &key, &[])
                .await
                .unwrap_err(),
        ] {
            assert!(
                matches!(&err, LogError::Corrupt { key: k, detail }
                    if k == Key::log_entry(7).as_str() && detail.contains("replaced")),
                "{err}"
            );
        }
    }

    /// A pointer planted for a run that is not logged, naming another run's leaf, does not
    /// make that run logged.
    #[tokio::test]
    async fn a_planted_pointer_to_another_run_s_leaf_logs_nothing() {
        let (_dir, store, key) = forty().await;
        let (run, e) = entry(50);
        store
            .put(&Key::log_run_leaf(&run, 12), Bytes::new())
            .await
            .unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        log.admit_quick(&key, &[]).await.unwrap();
        let seal = Hash::parse(&entry(12).1.seal_sha256).unwrap();
        assert!(matches!(
            log.require_logged(&run, &seal, &key, &[]).await,
            Err(LogError::Refused { .. })
        ));
        let a = appended(log.append_seal(&run, &e, &key).await.unwrap());
        assert_eq!((a.index, a.created), (40, true));
    }

    /// A log whose tiles are gone (one from before tiles) is read whole, as before: the seal
    /// scan is done with it, and runs are still found.
    #[tokio::test]
    async fn a_log_without_tiles_is_read_whole() {
        let (dir, store, key) = forty().await;
        std::fs::remove_dir_all(dir.path().join("log/tile")).unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        assert!(
            !log.admit_quick(&key, &[]).await.unwrap(),
            "scanned already"
        );
        let (run, e) = entry(5);
        let a = appended(log.append_seal(&run, &e, &key).await.unwrap());
        assert_eq!((a.index, a.created), (5, false));
    }

    /// Tiles that are not the signed tree's are never used for it: the log is read whole.
    #[tokio::test]
    async fn tiles_that_do_not_hash_to_the_signed_root_are_not_the_tree() {
        let (dir, store, key) = forty().await;
        let tile = dir.path().join("log/tile/8/0/000.p/40");
        let mut bytes = std::fs::read(&tile).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&tile, bytes).unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        assert!(log
            .read_from_checkpoint(&raw_keys(&key, &[]))
            .await
            .unwrap()
            .is_none());
    }

    /// A stored seal the log lacks, planted before a start, is found by the scan behind the
    /// first appends, which stop from then on; [`Log::admit`] finds it before any append.
    #[tokio::test]
    async fn a_planted_seal_stops_appends_once_the_scan_finds_it() {
        let (dir, store, key) = forty().await;
        let (planted, _) = entry(90);
        let seal = dir.path().join(Key::seal(&planted).as_str());
        std::fs::create_dir_all(seal.parent().unwrap()).unwrap();
        std::fs::write(&seal, b"{}").unwrap();
        let whole = Log::new(store.clone(), DEFAULT_ORIGIN);
        assert!(matches!(
            whole.admit(&key, &[]).await,
            Err(LogError::Refused { .. })
        ));
        let (run, e) = entry(41);
        assert!(matches!(
            whole.append_seal(&run, &e, &key).await,
            Err(LogError::Refused { .. })
        ));
        let quick = Log::new(store.clone(), DEFAULT_ORIGIN);
        assert!(quick.admit_quick(&key, &[]).await.unwrap());
        assert_eq!(
            appended(quick.append_seal(&run, &e, &key).await.unwrap()).index,
            40
        );
        assert!(matches!(
            quick.scan(&key, &[]).await,
            Err(LogError::Refused { .. })
        ));
        let (next, e42) = entry(42);
        assert!(matches!(
            quick.append_seal(&next, &e42, &key).await,
            Err(LogError::Refused { .. })
        ));
    }

    /// An append over evidence the caller has just created does not list the run's pointers:
    /// it looks only at what this process read. Its promise is the caller's (the postguard's
    /// create-only put of the evidence succeeded), and when the store writer breaks it by
    /// deleting evidence that was logged, the cost is a second leaf, which `seal log verify`
    /// names (`run_relogged`), as this pins; without the promise the run's leaf is found.
    #[tokio::test]
    async fn evidence_created_now_is_not_looked_up_below_the_checkpoint() {
        let (_dir, store, key) = forty().await;
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        log.admit_quick(&key, &[]).await.unwrap();
        let (run, e) = entry(20);
        let looked_up = appended(log.append_seal(&run, &e, &key).await.unwrap());
        assert_eq!((looked_up.index, looked_up.created), (20, false));

        let other = Log::new(store.clone(), DEFAULT_ORIGIN);
        other.admit_quick(&key, &[]).await.unwrap();
        let (run, e) = entry(21);
        let a = other
            .append_seal_as(&run, &e, &key, EvidenceWas::CreatedNow)
            .await
            .unwrap();
        let a = appended(a);
        assert_eq!((a.index, a.created), (40, true));
        let trust = raw_keys(&key, &[]);
        let report = crate::verify_log(&store, &trust, None).await.unwrap();
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.contains("run_relogged"), "{json}");
    }

    /// A log cut short under its latest checkpoint (its newest entry deleted) is not
    /// admitted from the tiles, which still hold the lost leaf: the whole log is read, and its
    /// guard refuses before anything is appended.
    #[tokio::test]
    async fn a_log_cut_short_under_its_checkpoint_is_refused_before_any_append() {
        let (dir, store, key) = forty().await;
        std::fs::remove_file(entry_file(&dir, 39)).unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        match log.admit_quick(&key, &[]).await {
            Err(LogError::Refused { problems }) => {
                assert!(
                    format!("{problems:?}").contains("LogCheckpoint"),
                    "{problems:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        let (run, e) = entry(40);
        assert!(log.append_seal(&run, &e, &key).await.is_err());
        assert!(store.get_opt(&Key::log_entry(39)).await.unwrap().is_none());
    }
}
