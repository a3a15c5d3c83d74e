//! The store's log as a process appends to it ([`Log`]): admission (G2), the appends, and the
//! checkpoints that cover them (the crate doc says how).

use bytes::Bytes;
use std::sync::Arc;

use crate::storage::LogStorage;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::key::LOG_RUNS;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, Leaf, LogEntry, LogTrust};
use seal_store::{Key, Store};

use crate::cache::Cache;
use crate::checkpoints::store_pointers;
use crate::error::{corrupt, LogError};
use crate::guard;
use crate::leaf::SealLeaf;
use crate::publish::Publisher;
use crate::tiles;

/// Test hook: milliseconds the postguard waits between appending a seal's entry and storing
/// the seal, so a test can kill -9 the process in exactly that window. Read by debug builds
/// only ([`append_delay`]).
pub const APPEND_DELAY_ENV: &str = "SEAL_TEST_LOG_APPEND_DELAY_MS";

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
    /// Unix time of the last checkpoint this process stored (0: none yet), for `/metrics`.
    pub(crate) last_checkpoint_unix: Arc<std::sync::atomic::AtomicU64>,
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
            last_checkpoint_unix: Arc::default(),
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

    /// The entries of the log as this process knows it, without waiting: None before its
    /// admission, or while an append holds the log (a scrape must not queue behind one).
    pub fn size_now(&self) -> Option<u64> {
        let cache = self.cache.try_lock().ok()?;
        cache.admitted.then(|| cache.tree.size())
    }

    /// Unix time of the last checkpoint this process stored (0: none yet).
    pub fn last_checkpoint_unix(&self) -> u64 {
        self.last_checkpoint_unix
            .load(std::sync::atomic::Ordering::Relaxed)
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
        let size = cache.tree.size();
        drop(cache);
        self.publish_covering(size, key).await?;
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
            Leaf::Review(_) | Leaf::Rebuild(_) | Leaf::Policy(_) | Leaf::Report(_) => {
                Err(corrupt(&k, "not a seal's entry"))
            }
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
