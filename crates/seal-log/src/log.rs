//! The store's log as a process appends to it ([`Log`]): admission (G2), the appends, and the
//! checkpoints that cover them (the crate doc says how).

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

use crate::storage::LogStorage;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::key::LOG_RUNS;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, Leaf, LogEntry, LogTrust};
use seal_store::{Key, Store, StoreError};

use crate::cache::Cache;
use crate::checkpoints::sign_checkpoint;
use crate::error::{corrupt, LogError};
use crate::guard;
use crate::leaf::SealLeaf;
use crate::publish::Publisher;
use crate::stored::trusted_entry;
use crate::tiles;

/// Test hook: milliseconds the postguard waits between appending a seal's entry and storing
/// the seal, so a test can kill -9 the process in exactly that window. Read by debug builds
/// only ([`append_delay`]).
pub const APPEND_DELAY_ENV: &str = "SEAL_TEST_LOG_APPEND_DELAY_MS";

/// Where an append put a run's seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub index: u64,
    /// False when the seal was already logged (by this or another replica).
    pub created: bool,
    /// Size of the checkpoint published after the append.
    pub tree_size: u64,
}

/// What [`Log::append_seal`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealLogged {
    /// The entry is in the log: appended now, or found there already.
    Appended(Appended),
    /// Another seal of the same evidence is logged (a racing finalizer holding another key
    /// got there first): that seal is the run's, and its signer is storing it.
    Rival(LogEntry),
}

/// The store's log as this process appends to it, on any [`LogStorage`] (seal's
/// [`Store`] unless said otherwise). Cheap to clone; one per engine.
#[derive(Clone)]
pub struct Log<S: LogStorage = Store> {
    pub(crate) store: S,
    pub(crate) origin: String,
    pub(crate) cache: Arc<tokio::sync::Mutex<Cache>>,
    /// One checkpoint publication of a seal's append at a time, outside the cache's lock
    /// ([`Log::publish_covering`]): appenders queue here, and one checkpoint covers every entry
    /// appended while the previous one was being made durable (a group commit of the log).
    pub(crate) publishing: Arc<tokio::sync::Mutex<()>>,
    /// Where each new checkpoint is sent for cosigning ([`publish`]).
    pub(crate) witnesses: Publisher<S>,
    /// Keys whose leaves and checkpoints count besides the signing key (`keys.trusted`).
    pub(crate) trusted: Arc<Vec<PublicKey>>,
}

impl<S: LogStorage> std::fmt::Debug for Log<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Log({})", self.origin)
    }
}

impl<S: LogStorage> Log<S> {
    pub fn new(store: S, origin: &str) -> Log<S> {
        Log {
            store,
            origin: origin.to_string(),
            cache: Arc::new(tokio::sync::Mutex::new(Cache::default())),
            publishing: Arc::new(tokio::sync::Mutex::new(())),
            witnesses: Default::default(),
            trusted: Arc::default(),
        }
    }

    /// The same log, also trusting leaves and checkpoints signed by `keys` (`keys.trusted`).
    pub fn with_trusted(mut self, keys: Vec<PublicKey>) -> Log<S> {
        self.trusted = Arc::new(keys);
        self
    }

    /// The same log, offering every checkpoint it publishes to `witnesses`.
    pub fn with_witnesses(mut self, witnesses: Publisher<S>) -> Log<S> {
        self.witnesses = witnesses;
        self
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The admission (G2, [`guard`]): refuses unless the log accounts for every sealed run of
    /// the store and is neither shorter than a checkpoint it signed nor forked. Checkpoints
    /// are trusted under `key` and `trusted` (keys it signed with before a rotation). Runs
    /// once per process, whole, before anything is appended: `seal judge` before judging,
    /// else the first append. `seal serve` runs it in two halves instead
    /// ([`Log::admit_quick`], then [`Log::scan`] behind the first appends).
    pub async fn admit(&self, key: &SigningKey, trusted: &[PublicKey]) -> Result<(), LogError> {
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, trusted))
            .await
    }

    /// What this log trusts: its origin, `key`, the log's `keys.trusted` and `trusted`.
    pub fn trust_of(&self, key: &SigningKey, trusted: &[PublicKey]) -> LogTrust {
        LogTrust::new(
            &self.origin,
            std::iter::once(key.public())
                .chain(self.trusted.iter().cloned())
                .chain(trusted.iter().cloned())
                .map(|k| k.raw()),
        )
    }

    pub(crate) async fn admit_locked(
        &self,
        cache: &mut Cache,
        trust: &LogTrust,
    ) -> Result<(), LogError> {
        cache.refusal()?;
        if cache.admitted {
            for k in trust.keys() {
                cache.trust = std::mem::take(&mut cache.trust).with_key(*k);
            }
            return Ok(());
        }
        let Some(fresh) = self.read_from_checkpoint(trust).await? else {
            return self.admit_whole(cache, trust).await;
        };
        if let Err(e) = self.scan_store(trust).await {
            if let LogError::Refused { problems } = &e {
                cache.refused = Some(problems.clone());
            }
            return Err(e);
        }
        *cache = fresh;
        Ok(())
    }

    /// The first half of `seal serve`'s admission, independent of the log's length: the tree
    /// of the latest trusted checkpoint from its tiles and the entries past it ([`history`]).
    /// Appends may go on from here; `true` when the seal scan ([`Log::scan`]) is still due,
    /// `false` when the log had to be read whole (no tiles), which scanned it already.
    pub async fn admit_quick(
        &self,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<bool, LogError> {
        let trust = self.trust_of(key, trusted);
        let mut cache = self.cache.lock().await;
        cache.refusal()?;
        if cache.admitted {
            return Ok(false);
        }
        match self.read_from_checkpoint(&trust).await? {
            Some(fresh) => {
                *cache = fresh;
                Ok(true)
            }
            None => self.admit_whole(&mut cache, &trust).await.map(|()| false),
        }
    }

    /// The second half of `seal serve`'s admission: every stored seal is logged and the log
    /// is whole ([`guard::check`], O(history), run behind the first appends). On a refusal
    /// this process appends nothing more (every append answers the same refusal); else the
    /// pointers the log lacks are stored.
    ///
    /// Decision (docs/DECISIONS.md): the issue asks for a start-up independent of history, so
    /// the scan no longer comes before the first append. What that gives up is the time until
    /// a planted or orphaned seal of an old run, an entry deleted or rewritten in the middle,
    /// or a fork is seen; a log cut short under its latest signed checkpoint is refused at once
    /// by [`Log::admit_quick`], and no append believes an entry that is not the signed tree's.
    pub async fn scan(&self, key: &SigningKey, trusted: &[PublicKey]) -> Result<(), LogError> {
        let scanned = self.scan_store(&self.trust_of(key, trusted)).await;
        if let Err(LogError::Refused { problems }) = &scanned {
            self.cache.lock().await.refused = Some(problems.clone());
        }
        scanned
    }

    /// The seal scan without the cache: the guard over the whole store, then the pointers the
    /// log it read lacks.
    pub(crate) async fn scan_store(&self, trust: &LogTrust) -> Result<(), LogError> {
        let view = guard::check(&self.store, trust).await?;
        let mut whole = Cache::admitted(view, trust)?;
        self.backfill_pointers(&mut whole).await
    }

    /// The admission of a log whose tiles and last entry do not give its latest checkpoint's
    /// tree (one from before tiles, or cut short under it): the guard reads it whole, and the
    /// cache is what it read.
    pub(crate) async fn admit_whole(
        &self,
        cache: &mut Cache,
        trust: &LogTrust,
    ) -> Result<(), LogError> {
        tracing::info!(
            "the latest checkpoint's tiles or last entry are not its tree: reading the log whole"
        );
        let view = match guard::check(&self.store, trust).await {
            Err(LogError::Refused { problems }) => {
                cache.refused = Some(problems.clone());
                return Err(LogError::Refused { problems });
            }
            read => read?,
        };
        let latest = view.latest.as_ref().map_or(0, |c| c.size);
        let mut admitted = Cache::admitted(view, trust)?;
        admitted.tiled = tiles::stored_through(&self.store, &admitted.tree, latest).await?;
        self.backfill_pointers(&mut admitted).await?;
        *cache = admitted;
        Ok(())
    }

    /// Stores the pointer of every leaf of a log read whole (`cache`) that lacks one: those of
    /// a log from before pointers, of entries appended just before a crash (no checkpoint
    /// covered them yet), or deleted since. One listing of `log/runs/`, then only the missing
    /// writes. Done by the seal scan, which reads every entry anyway.
    pub(crate) async fn backfill_pointers(&self, cache: &mut Cache) -> Result<(), LogError> {
        let listed = self.store.list(LOG_RUNS).await?.keys;
        let stored: std::collections::HashSet<&str> = listed.iter().map(Key::as_str).collect();
        cache.unpointed.retain(|_, k| !stored.contains(k.as_str()));
        let missing = cache.pointers_due(u64::MAX);
        if !missing.is_empty() {
            tracing::info!(
                pointers = missing.len(),
                "storing the run pointers the log's leaves lack"
            );
        }
        store_pointers(&self.store, &missing).await?;
        cache.pointed(&missing);
        Ok(())
    }

    /// Appends the entry of a seal the postguard is about to store (see the module doc), unless
    /// that very entry is logged already, then returns once a checkpoint of a tree that holds
    /// it is stored: the one it publishes, or one another appender of this process published
    /// meanwhile ([`Log::publish_covering`]). Appends nothing when another seal of the same
    /// evidence is logged ([`SealLogged::Rival`]).
    pub async fn append_seal(
        &self,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
    ) -> Result<SealLogged, LogError> {
        self.append_seal_as(run, entry, key, EvidenceWas::Stored)
            .await
    }

    /// [`Log::append_seal`] of a seal over evidence the caller has just created in the store
    /// ([`EvidenceWas::CreatedNow`]): the run's pointers are not listed (one request a run on an
    /// object store).
    pub async fn append_seal_as(
        &self,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
        evidence: EvidenceWas,
    ) -> Result<SealLogged, LogError> {
        let (index, created) = {
            let mut cache = self.cache.lock().await;
            self.admit_locked(&mut cache, &self.trust_of(key, &[]))
                .await?;
            match self
                .append_as(&mut cache, run, entry, evidence, key)
                .await?
            {
                Placed::At { index, created } => (index, created),
                Placed::Rival(index) => {
                    let rival = self.entry_at(&cache, index).await?;
                    return Ok(SealLogged::Rival(rival));
                }
            }
        };
        // The entry's pointer is stored with the checkpoint's tiles, before the checkpoint
        // (outside the cache's lock, so that appends are not serialized behind one more write
        // each).
        let tree_size = self.publish_covering(index + 1, key).await?;
        Ok(SealLogged::Appended(Appended {
            index,
            created,
            tree_size,
        }))
    }

    /// The logged leaf of a run's stored seal (`seal_sha256`, as stored), after the guard;
    /// publishes the checkpoint again, in case a crash came between an append and its
    /// checkpoint. A stored seal the log lacks is refused, named: planted, or the log lost it.
    pub async fn require_logged(
        &self,
        run: &RunId,
        seal_sha256: &Hash,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<SealLeaf, LogError> {
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, trusted))
            .await?;
        self.sync(&mut cache).await?;
        self.load_run(&mut cache, run.as_str()).await?;
        let logged = cache.logged(run.as_str());
        let hash = Some(seal_sha256.to_bytes());
        let Some(leaf) = logged.iter().find(|l| l.seal == hash).copied() else {
            return Err(LogError::Refused {
                problems: vec![guard::unlogged_seal(run, !logged.is_empty())],
            });
        };
        self.publish(&mut cache, key).await?;
        Ok(leaf)
    }

    /// Hash tile `tile` of the tree this process holds, once the guard let it in: derived
    /// from the entries' hashes it read, never read back from the store; `None` before the
    /// guard or for a tile reaching past those entries.
    pub async fn tile(&self, tile: &tlog::Tile) -> Option<Bytes> {
        let cache = self.cache.lock().await;
        if !cache.admitted || tiles::reach(tile)? > cache.tree.size() {
            return None;
        }
        cache.tree.tile(tile).ok().map(Bytes::from)
    }

    /// The seal entry at leaf `index` of the tree this process holds, read from the store and
    /// checked against that leaf's hash: the store writer may have replaced the object since
    /// it was read, and a replaced entry is refused, never handed out.
    pub(crate) async fn entry_at(&self, cache: &Cache, index: u64) -> Result<LogEntry, LogError> {
        let k = Key::log_entry(index);
        let bytes = self.store.get(&k).await?;
        if cache.tree.leaf(index) != Some(tlog::leaf_hash(&bytes)) {
            return Err(corrupt(
                &k,
                "not the entry this process read at that index: it was replaced since",
            ));
        }
        match Leaf::from_bytes(&bytes).map_err(|e| corrupt(&k, e))? {
            Leaf::Seal(entry) => Ok(entry),
            Leaf::Review(_) | Leaf::Rebuild(_) => Err(corrupt(&k, "not a seal's entry")),
        }
    }

    /// Appends the entry of a run this process is importing from an archive
    /// (`seal replay --from`), computed from the seal and evidence `staged` (verified there
    /// under `trusted`), before the import stores the seal: log before seal, as the
    /// postguard does, so that no other process ever sees the imported seal unlogged. `key`
    /// signs the checkpoint. Import copies verified bytes; it signs no seal.
    pub async fn append_imported(
        &self,
        run: &RunId,
        staged: &impl LogStorage,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<Appended, LogError> {
        let entry = trusted_entry(staged, run, trusted).await?;
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, trusted))
            .await?;
        let (index, created) = self
            .append_locked(&mut cache, run, &entry, key)
            .await?
            .at(run)?;
        let tree_size = self.publish(&mut cache, key).await?;
        Ok(Appended {
            index,
            created,
            tree_size,
        })
    }

    /// Appends the entry of a review about to be stored (log before store, as for seals),
    /// unless those very bytes are logged already, then publishes the checkpoint. A crash
    /// between the two leaves a logged review that is not stored: `seal log verify` lists it
    /// as pending, and sending the same envelope again stores it.
    pub async fn append_review(
        &self,
        entry: &tlog::ReviewEntry,
        key: &SigningKey,
    ) -> Result<Appended, LogError> {
        let bytes = Bytes::from(entry.to_bytes().map_err(|e| LogError::Corrupt {
            key: format!("runs/{}/reviews", entry.run_id),
            detail: e.to_string(),
        })?);
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, &[]))
            .await?;
        self.sync(&mut cache).await?;
        self.load_run(&mut cache, &entry.run_id).await?;
        let (index, created) = self.append_bytes_locked(&mut cache, bytes, key).await?;
        let tree_size = self.publish(&mut cache, key).await?;
        Ok(Appended {
            index,
            created,
            tree_size,
        })
    }

    /// Appends `bytes`, a leaf that is not a seal's, as the next leaf unless a leaf holds
    /// them already: `(leaf, created)`.
    pub(crate) async fn append_bytes_locked(
        &self,
        cache: &mut Cache,
        unsigned: Bytes,
        key: &SigningKey,
    ) -> Result<(u64, bool), LogError> {
        let content = tlog::leaf_hash(&unsigned);
        loop {
            if let Some(&i) = cache.others.get(&content) {
                return Ok((i, false));
            }
            let index = cache.tree.size();
            match self.create_entry(cache, index, &unsigned, key).await? {
                Some(created) => return Ok((index, created)),
                None => continue,
            }
        }
    }

    /// Creates leaf `index` as `unsigned` signed for this log and that index
    /// ([`tlog::sign_leaf`]): `Some(created)` once it is there (`false`: the same bytes were,
    /// from a racing replica appending the same entry), `None` when another entry took the
    /// index (read, authenticated and adopted: the caller looks again). An entry there that
    /// does not authenticate is refused ([`Cache::push`]).
    pub(crate) async fn create_entry(
        &self,
        cache: &mut Cache,
        index: u64,
        unsigned: &[u8],
        key: &SigningKey,
    ) -> Result<Option<bool>, LogError> {
        let k = Key::log_entry(index);
        let at = tlog::Place::next_of(&cache.tree)?;
        if at.index != index {
            return Err(corrupt(
                &k,
                "not the next index of the log this process holds",
            ));
        }
        let bytes = Bytes::from(tlog::sign_leaf(unsigned, &self.origin, &at, &|m| {
            key.sign(m)
        })?);
        match self.store.create(&k, bytes.clone()).await {
            Ok(created) => {
                cache.push_trusted(&bytes, &k)?;
                Ok(Some(created))
            }
            // Another replica took this index: learn its entry (if it is this log's).
            Err(StoreError::Conflict { .. }) => {
                let theirs = self.store.get(&k).await?;
                cache.push(&theirs, &k)?;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The leaf index of a review entry, when the log holds exactly these entry bytes (after
    /// the guard, and after reading what other processes appended).
    pub async fn review_leaf(
        &self,
        entry: &tlog::ReviewEntry,
        key: &SigningKey,
    ) -> Result<Option<u64>, LogError> {
        let unsigned = entry.to_bytes().map_err(|e| LogError::Corrupt {
            key: format!("runs/{}/reviews", entry.run_id),
            detail: e.to_string(),
        })?;
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, &[]))
            .await?;
        self.sync(&mut cache).await?;
        self.load_run(&mut cache, &entry.run_id).await?;
        Ok(cache.others.get(&tlog::leaf_hash(&unsigned)).copied())
    }

    /// Whether a review leaf names these bytes as review `index` of `run` (after the guard,
    /// and after reading what other processes appended): a stored review it does not name was
    /// never admitted, and nothing is chained to it.
    pub async fn review_logged(
        &self,
        run: &RunId,
        index: u64,
        sha256: &Hash,
        key: &SigningKey,
    ) -> Result<bool, LogError> {
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, &[]))
            .await?;
        self.sync(&mut cache).await?;
        self.load_run(&mut cache, run.as_str()).await?;
        let wanted = (run.to_string(), index, sha256.to_string());
        Ok(cache.reviews.contains(&wanted))
    }

    /// Creates the entry at the next free index unless it, or a rival, is logged already.
    pub(crate) async fn append_locked(
        &self,
        cache: &mut Cache,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
    ) -> Result<Placed, LogError> {
        self.append_as(cache, run, entry, EvidenceWas::Stored, key)
            .await
    }

    pub(crate) async fn append_as(
        &self,
        cache: &mut Cache,
        run: &RunId,
        entry: &LogEntry,
        evidence: EvidenceWas,
        key: &SigningKey,
    ) -> Result<Placed, LogError> {
        let unsigned = entry.to_bytes().map_err(|e| LogError::NotSealed {
            run: run.clone(),
            detail: e.to_string(),
        })?;
        let content = tlog::leaf_hash(&unsigned);
        if evidence == EvidenceWas::Stored {
            self.load_run(cache, &entry.run_id).await?;
        }
        // No read of the next index first: the cache knows every leaf of this run below its
        // length (those it read, and those below its starting checkpoint by their pointers),
        // so a create at that index that succeeds was made after looking at all of them (the
        // same seal is not appended twice); a conflict means another process appended there,
        // whose entry is authenticated and looked at before trying the next index.
        loop {
            if let Some(index) = cache.find(&entry.run_id, &content) {
                return Ok(Placed::At {
                    index,
                    created: false,
                });
            }
            if let Some(rival) = cache.rival(entry, &content) {
                return Ok(Placed::Rival(rival));
            }
            let index = cache.tree.size();
            if let Some(created) = self.create_entry(cache, index, &unsigned, key).await? {
                return Ok(Placed::At { index, created });
            }
        }
    }

    /// Reads the entries this process has not seen yet, one by one until the first free
    /// index (the guard read the log in bulk when the process first used it).
    pub(crate) async fn sync(&self, cache: &mut Cache) -> Result<(), LogError> {
        loop {
            let k = Key::log_entry(cache.tree.size());
            match self.store.get_opt(&k).await? {
                Some(b) => cache.push(&b, &k)?,
                None => return Ok(()),
            }
        }
    }

    /// Signs and stores the checkpoint of everything this process has seen; returns its size.
    pub(crate) async fn publish(
        &self,
        cache: &mut Cache,
        key: &SigningKey,
    ) -> Result<u64, LogError> {
        let size = cache.tree.size();
        if size == 0 {
            return Ok(0);
        }
        let note = Bytes::from(sign_checkpoint(&self.origin, &cache.tree, size, key)?);
        let due = tiles::due(&cache.tree, cache.tiled.min(size), size)?;
        let pointers = cache.pointers_due(size);
        tokio::try_join!(
            tiles::store_all(&self.store, due),
            store_pointers(&self.store, &pointers)
        )?;
        cache.tiled_through(size);
        cache.pointed(&pointers);
        if self.store_checkpoint(size, &note).await? {
            self.witnesses.offer(&cache.tree, size, &note);
        }
        cache.published = cache.published.max(size);
        Ok(size)
    }

    /// Returns once a checkpoint of at least `needed` leaves is stored, publishing one of
    /// everything appended so far unless this process already did: the size of that
    /// checkpoint. The checkpoint is made durable outside the cache's lock, so entries go on
    /// being appended meanwhile, and the appenders queued behind it find them covered by the
    /// next one: under load, one checkpoint (one signature, one create, its flushes) per batch
    /// of entries instead of one per seal. Each caller still returns only after a checkpoint
    /// holding its entry is stored (log, checkpoint, then seal: the module doc).
    pub(crate) async fn publish_covering(
        &self,
        needed: u64,
        key: &SigningKey,
    ) -> Result<u64, LogError> {
        let _turn = self.publishing.lock().await;
        let (size, note, due, pointers) = {
            let cache = self.cache.lock().await;
            if cache.published >= needed {
                return Ok(cache.published);
            }
            let size = cache.tree.size();
            // The tree only grows while this process appends; a smaller one means the log was
            // replaced under it (a rebuild): no checkpoint may then claim to cover the entry.
            if size < needed {
                return Err(LogError::Corrupt {
                    key: Key::log_checkpoint(needed).to_string(),
                    detail: format!(
                        "the log holds {size} entries, fewer than the {needed} just appended: \
                         it was replaced while this process appended"
                    ),
                });
            }
            let note = sign_checkpoint(&self.origin, &cache.tree, size, key)?;
            let due = tiles::due(&cache.tree, cache.tiled.min(size), size)?;
            (size, Bytes::from(note), due, cache.pointers_due(size))
        };
        // The tiles and the pointers first: a stored checkpoint's tiles are all there for its
        // readers, and every leaf it covers can be found from its run.
        tokio::try_join!(
            tiles::store_all(&self.store, due),
            store_pointers(&self.store, &pointers)
        )?;
        {
            let mut cache = self.cache.lock().await;
            cache.tiled_through(size);
            cache.pointed(&pointers);
        }
        let created = self.store_checkpoint(size, &note).await?;
        let mut cache = self.cache.lock().await;
        // The tree only grows (entries are create-only), so its first `size` leaves are the
        // ones just signed, and a witness is offered the proofs of that size.
        if created && cache.tree.size() >= size {
            self.witnesses.offer(&cache.tree, size, &note);
        }
        cache.published = cache.published.max(size);
        Ok(size)
    }

    /// Stores the checkpoint `note` of `size` leaves, create-only; false when another
    /// checkpoint of that size was there (another key's, or a forger's: `seal log verify`
    /// judges it).
    pub(crate) async fn store_checkpoint(&self, size: u64, note: &Bytes) -> Result<bool, LogError> {
        let k = Key::log_checkpoint(size);
        match self.store.create(&k, note.clone()).await {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. }) => {
                tracing::warn!(key = %k, "another checkpoint of this size is stored");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Stores the pointers `keys`, each saying leaf `<index>` is about `<run>` (create-only: the
/// same again is fine, and so is one stored with other bytes, since only its name is read).
/// Readers authenticate the leaf it names and ignore one that is not the run's, so a pointer
/// is never trusted for more than "look there".
async fn store_pointers(store: &impl LogStorage, keys: &[(u64, Key)]) -> Result<(), LogError> {
    // Owned keys: a stream over borrowed ones makes the append's future not `Send` for
    // every lifetime, which the routes need.
    let owned: Vec<Key> = keys.iter().map(|(_, k)| k.clone()).collect();
    futures::stream::iter(owned)
        .map(|k| async move {
            match store.create(&k, Bytes::new()).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => Ok(()),
                Err(e) => Err(LogError::from(e)),
            }
        })
        .buffer_unordered(tiles::AT_ONCE)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Where [`Log::append_locked`] left an entry.
/// What the caller of an append knows of the evidence its seal is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceWas {
    /// Its create-only put succeeded in this very call, so no leaf can name it from before
    /// this process started: an appender stores the evidence before it appends, so every leaf
    /// naming it was appended after that create, at an index this process reads (past its
    /// starting checkpoint). Wrong only if the store writer deleted the evidence, and then
    /// the cost is a second leaf for the run (`run_relogged`), never a seal unlogged.
    CreatedNow,
    /// Anything else: the run's leaves below the starting checkpoint are looked up.
    Stored,
}

pub(crate) enum Placed {
    At {
        index: u64,
        created: bool,
    },
    /// The leaf of another seal of the same evidence.
    Rival(u64),
}

impl Placed {
    /// The index, for callers that hold the only seal of the run (an import, a rebuild).
    pub(crate) fn at(self, run: &RunId) -> Result<(u64, bool), LogError> {
        match self {
            Placed::At { index, created } => Ok((index, created)),
            Placed::Rival(index) => Err(LogError::NotSealed {
                run: run.clone(),
                detail: format!("another seal of this evidence is logged (leaf {index})"),
            }),
        }
    }
}

/// The test hook of [`APPEND_DELAY_ENV`] (the postguard calls it after the append). Compiled
/// with debug assertions only, as the store's crash points are: `cargo test` runs the dev
/// binary, the shipped `--release` one waits for nothing, whatever its environment says.
pub async fn append_delay() {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(APPEND_DELAY_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tracing::warn!(
            ms,
            "{APPEND_DELAY_ENV} set: waiting between the log append and the seal"
        );
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

#[cfg(test)]
pub(crate) mod tests;
