//! The transparency log of seals, kept in the object store next to the runs (docs/DESIGN.md
//! §13): every seal the postguard writes is appended as a leaf, and a C2SP signed checkpoint
//! of a tree holding it is stored before its seal (one per batch of appends under load:
//! [`Log::publish_covering`]), so that no decided run can vanish or be replaced unnoticed.
//!
//! Layout, create-only like everything else:
//! - `log/entries/<index, 20 digits>`: the canonical [`LogEntry`] bytes of leaf `index`;
//! - `log/checkpoints/<size, 20 digits>`: the signed note of the tree of `size` leaves;
//! - `log/tile/8/<level>/<index>[.p/<width>]`: the tree's hash tiles (C2SP tlog-tiles),
//!   stored before each checkpoint ([`tiles`]);
//! - `log/runs/<run>/<index, 20 digits>`: an empty pointer, leaf `index` is about `run`, stored
//!   with the tiles before the first checkpoint that covers the leaf, so before the seal or
//!   review it logs is stored ([`store_pointers`]): what lets `seal verify <run>` read a run's
//!   leaves without the whole log ([`runs`]).
//!
//! Only create-only puts, no conditional *update*: a replica takes the next index by creating
//! `log/entries/<n>`; losing the race, it reads the winner and tries `n+1`. Before writing at
//! index `n` an appender has read every entry below `n`, so the same seal is never appended
//! twice (docs/DECISIONS.md, "The log uses create-only puts only").
//!
//! Log before seal (docs/DESIGN.md §13): the postguard computes the seal's bytes (ed25519 and
//! the canonical envelope are deterministic), appends the entry naming their sha256, and only
//! then stores the seal. A crash in between leaves a logged run whose seal is missing, which
//! the next finalize completes with the very bytes logged. So a stored seal the log lacks was
//! planted, or the log lost it: seal then signs nothing (`guard`) until an operator runs
//! `seal log rebuild` (`rebuild`), which records itself as a signed leaf. Nothing is ever
//! appended to the log behind an operator's back.
//!
//! Each new checkpoint is also offered to the configured witnesses ([`publish`]), in the
//! background: cosigning never holds sealing back.

mod cache;
pub mod guard;
mod history;
mod log_verify;
pub mod publish;
pub mod rebuild;
pub mod runs;
pub mod stream;
pub mod tiles;
pub mod view;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

use crate::audit::Problem;
use seal_core::canonical::Hash;
use seal_core::doc::Evidence;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
pub use seal_core::key::{LOG_CHECKPOINTS, LOG_ENTRIES, LOG_RUNS};
use seal_core::sealing::{self, Envelope, PublicKey, SigningKey};
use seal_core::tlog::{self, Leaf, LogEntry, LogTrust, TlogError, Tree};
use seal_store::{Bounded, Key, Put, Store, StoreError};

pub use cache::SealLeaf;
use cache::{planted_entry, pointer, Cache};
pub use log_verify::{verify_log, Consistency, LogReport, RebuildNote, ReviewNote};
pub use view::{LogView, WholeLog};

pub use seal_core::tlog::DEFAULT_ORIGIN;
/// Entries read at once when a process first loads the log.
const READ_AHEAD: usize = 16;
/// Test hook: milliseconds the postguard waits between appending a seal's entry and storing
/// the seal, so a test can kill -9 the process in exactly that window. Read by debug builds
/// only ([`append_delay`]).
pub const APPEND_DELAY_ENV: &str = "SEAL_TEST_LOG_APPEND_DELAY_MS";

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{key}: {detail}")]
    Corrupt { key: String, detail: String },
    #[error("run {run}: {detail}")]
    NotSealed { run: RunId, detail: String },
    #[error("run {run} is not in the transparency log")]
    NotLogged { run: RunId },
    #[error("the store holds no signed log checkpoint")]
    NoCheckpoint,
    #[error("log format: {0}")]
    Format(#[from] TlogError),
    /// The log does not account for the store (G2): seal signs nothing until an operator
    /// has looked and run `seal log rebuild`.
    #[error("{}", refusal_text(.problems))]
    Refused { problems: Vec<Problem> },
}

/// How many problems a refusal names in its message (all of them: `seal log verify`).
const REFUSAL_SHOWN: usize = 3;

fn refusal_text(problems: &[Problem]) -> String {
    let shown: Vec<String> = problems
        .iter()
        .take(REFUSAL_SHOWN)
        .map(Problem::to_string)
        .collect();
    let more = problems.len().saturating_sub(REFUSAL_SHOWN);
    format!(
        "the transparency log does not account for this store, so seal signs nothing: {}{}. \
         `seal log verify` names every problem; once you know why, `seal log rebuild` records \
         a rebuild in the log and relogs the sealed runs (docs/DEPLOYING.md)",
        shown.join("; "),
        if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        }
    )
}

impl HasFault for LogError {
    fn fault(&self) -> Fault {
        match self {
            LogError::Store(e) => e.fault(),
            LogError::Corrupt { .. } | LogError::Format(_) | LogError::Refused { .. } => {
                Fault::Corruption
            }
            LogError::NotSealed { .. } | LogError::NotLogged { .. } | LogError::NoCheckpoint => {
                Fault::Caller
            }
        }
    }
}

fn corrupt(key: &Key, detail: impl std::fmt::Display) -> LogError {
    LogError::Corrupt {
        key: key.to_string(),
        detail: detail.to_string(),
    }
}

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

/// The store's log as this process appends to it. Cheap to clone; one per engine.
#[derive(Clone)]
pub struct Log {
    store: Store,
    origin: String,
    cache: Arc<tokio::sync::Mutex<Cache>>,
    /// One checkpoint publication of a seal's append at a time, outside the cache's lock
    /// ([`Log::publish_covering`]): appenders queue here, and one checkpoint covers every entry
    /// appended while the previous one was being made durable (a group commit of the log).
    publishing: Arc<tokio::sync::Mutex<()>>,
    /// Where each new checkpoint is sent for cosigning ([`publish`]).
    witnesses: crate::transparency::publish::Publisher,
    /// Keys whose leaves and checkpoints count besides the signing key (`keys.trusted`).
    trusted: Arc<Vec<PublicKey>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Log({})", self.origin)
    }
}

impl Log {
    pub fn new(store: Store, origin: &str) -> Log {
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
    pub fn with_trusted(mut self, keys: Vec<PublicKey>) -> Log {
        self.trusted = Arc::new(keys);
        self
    }

    /// The same log, offering every checkpoint it publishes to `witnesses`.
    pub fn with_witnesses(mut self, witnesses: crate::transparency::publish::Publisher) -> Log {
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

    async fn admit_locked(&self, cache: &mut Cache, trust: &LogTrust) -> Result<(), LogError> {
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
    async fn scan_store(&self, trust: &LogTrust) -> Result<(), LogError> {
        let view = guard::check(&self.store, trust).await?;
        let mut whole = Cache::admitted(view, trust)?;
        self.backfill_pointers(&mut whole).await
    }

    /// The admission of a log whose tiles and last entry do not give its latest checkpoint's
    /// tree (one from before tiles, or cut short under it): the guard reads it whole, and the
    /// cache is what it read.
    async fn admit_whole(&self, cache: &mut Cache, trust: &LogTrust) -> Result<(), LogError> {
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
    async fn backfill_pointers(&self, cache: &mut Cache) -> Result<(), LogError> {
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
    async fn entry_at(&self, cache: &Cache, index: u64) -> Result<LogEntry, LogError> {
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
        staged: &Store,
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
    async fn append_bytes_locked(
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
    async fn create_entry(
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
        match self.store.put(&k, bytes.clone()).await {
            Ok(Put { created, .. }) => {
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
    async fn append_locked(
        &self,
        cache: &mut Cache,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
    ) -> Result<Placed, LogError> {
        self.append_as(cache, run, entry, EvidenceWas::Stored, key)
            .await
    }

    async fn append_as(
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
    async fn sync(&self, cache: &mut Cache) -> Result<(), LogError> {
        loop {
            let k = Key::log_entry(cache.tree.size());
            match self.store.get_opt(&k).await? {
                Some(b) => cache.push(&b, &k)?,
                None => return Ok(()),
            }
        }
    }

    /// Signs and stores the checkpoint of everything this process has seen; returns its size.
    async fn publish(&self, cache: &mut Cache, key: &SigningKey) -> Result<u64, LogError> {
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
    async fn publish_covering(&self, needed: u64, key: &SigningKey) -> Result<u64, LogError> {
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
    async fn store_checkpoint(&self, size: u64, note: &Bytes) -> Result<bool, LogError> {
        let k = Key::log_checkpoint(size);
        match self.store.put(&k, note.clone()).await {
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
async fn store_pointers(store: &Store, keys: &[(u64, Key)]) -> Result<(), LogError> {
    // Owned keys: a stream over borrowed ones makes the append's future not `Send` for
    // every lifetime, which the routes need.
    let owned: Vec<Key> = keys.iter().map(|(_, k)| k.clone()).collect();
    futures::stream::iter(owned)
        .map(|k| async move {
            match store.put(&k, Bytes::new()).await {
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

enum Placed {
    At {
        index: u64,
        created: bool,
    },
    /// The leaf of another seal of the same evidence.
    Rival(u64),
}

impl Placed {
    /// The index, for callers that hold the only seal of the run (an import, a rebuild).
    fn at(self, run: &RunId) -> Result<(u64, bool), LogError> {
        match self {
            Placed::At { index, created } => Ok((index, created)),
            Placed::Rival(index) => Err(LogError::NotSealed {
                run: run.clone(),
                detail: format!("another seal of this evidence is logged (leaf {index})"),
            }),
        }
    }
}

/// What a test log of the default origin trusts: the signing key, then `trusted`.
#[cfg(test)]
pub(crate) fn raw_keys(key: &SigningKey, trusted: &[PublicKey]) -> LogTrust {
    LogTrust::new(
        DEFAULT_ORIGIN,
        std::iter::once(key.public())
            .chain(trusted.iter().cloned())
            .map(|k| k.raw()),
    )
}

/// The signed note of the tree of `size` leaves.
pub fn sign_checkpoint(
    origin: &str,
    tree: &Tree,
    size: u64,
    key: &SigningKey,
) -> Result<String, LogError> {
    let body = tlog::checkpoint_body(origin, size, &tree.root(size)?)?;
    let public = key.public().raw();
    Ok(tlog::sign_checkpoint(&body, &public, &|m| key.sign(m))?)
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

/// Stored checkpoint sizes, largest first. Only the sizes are listed (8 bytes each; the
/// store holds a checkpoint a batch of seals, ~0.8 a run under light load): a reader builds
/// the key of each one it reads ([`Key::log_checkpoint`]). A link or special file there is no
/// checkpoint ([`Store::log_numbers`]).
pub async fn checkpoint_sizes(store: &Store) -> Result<Vec<u64>, StoreError> {
    let mut sizes = store.log_numbers(LOG_CHECKPOINTS).await?;
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    Ok(sizes)
}

/// The stored checkpoint of `size` leaves, read only when it is no larger than a checkpoint
/// can be ([`tlog::MAX_CHECKPOINT_BYTES`]): what every reader of checkpoints reads them with.
pub async fn bounded_checkpoint(store: &Store, size: u64) -> Result<Bounded, StoreError> {
    store
        .get_bounded(&Key::log_checkpoint(size), tlog::MAX_CHECKPOINT_BYTES)
        .await
}

/// The latest stored checkpoint of this log (`trust`), its note exactly as stored: what
/// `seal log checkpoint` prints and `GET /v1/log/checkpoint` serves. The largest stored one is
/// not taken on its name: anyone who can write to the store can put any bytes under a larger
/// size (the store writer of docs/DESIGN.md §13), and seal would pass them on as its log's
/// head to every tlog client and terminal.
pub async fn latest_checkpoint(
    store: &Store,
    trust: &LogTrust,
) -> Result<Option<tlog::SignedCheckpoint>, StoreError> {
    view::latest_trusted(store, trust).await
}

/// What a reader of the log `origin` trusts: its checkpoints and leaves signed by `trusted`.
pub fn trust(origin: &str, trusted: &[PublicKey]) -> LogTrust {
    LogTrust::new(origin, trusted.iter().map(PublicKey::raw))
}

/// The log entry of a seal: what the postguard appends before it stores the seal, and what
/// auditors recompute from the stored evidence and seal bytes ([`entry_for`]); `None` when the
/// evidence is not DECIDED.
pub fn seal_entry(
    run: &RunId,
    evidence: &Evidence,
    evidence_sha256: &Hash,
    seal_sha256: &Hash,
    key_id: &str,
) -> Option<LogEntry> {
    let (Some(outcome), Some(pg)) = (evidence.outcome, evidence.final_postguard.as_ref()) else {
        return None;
    };
    Some(LogEntry {
        run_id: run.to_string(),
        evidence_sha256: evidence_sha256.to_string(),
        seal_sha256: seal_sha256.to_string(),
        key_id: key_id.to_string(),
        outcome: outcome.as_str().to_string(),
        decided_at: pg.decided_at.clone(),
        acceptance_mode: evidence.acceptance_mode.as_str().to_string(),
        parent_run_id: evidence.parent_run_id.clone(),
    })
}

/// What the store holds of a logged run.
#[derive(Debug)]
pub enum StoredRun {
    /// No evidence.
    Absent,
    /// Evidence without a seal: decided, its seal not written yet.
    Pending { evidence_sha256: String },
    /// Evidence and seal, as the entry the log should hold.
    Sealed(LogEntry),
}

/// What the store holds of a run, as log entry terms.
pub async fn stored_run(store: &Store, run: &RunId) -> Result<StoredRun, LogError> {
    let Some(ev) = store.get_opt(&Key::evidence(run)).await? else {
        return Ok(StoredRun::Absent);
    };
    let Some(seal) = store.get_opt(&Key::seal(run)).await? else {
        return Ok(StoredRun::Pending {
            evidence_sha256: Hash::of(&ev).to_string(),
        });
    };
    let not_sealed = |detail: String| LogError::NotSealed {
        run: run.clone(),
        detail,
    };
    let evidence: Evidence = seal_core::json::parse_as(&ev, store.doc_limit())
        .map_err(|e| not_sealed(format!("evidence.json: {e}")))?;
    let envelope: Envelope = seal_core::json::parse_as(&seal, store.doc_limit())
        .map_err(|e| not_sealed(format!("seal.dsse.json: {e}")))?;
    let key_id = match envelope.signatures.as_slice() {
        [s] => s.keyid.clone(),
        other => return Err(not_sealed(format!("{} seal signatures", other.len()))),
    };
    seal_entry(run, &evidence, &Hash::of(&ev), &Hash::of(&seal), &key_id)
        .map(StoredRun::Sealed)
        .ok_or_else(|| not_sealed("evidence.json is not DECIDED".into()))
}

/// The entry the log should hold for a run, computed from its stored evidence and seal bytes;
/// `None` when the run is not sealed (either object absent).
pub async fn entry_for(store: &Store, run: &RunId) -> Result<Option<LogEntry>, LogError> {
    Ok(match stored_run(store, run).await? {
        StoredRun::Sealed(e) => Some(e),
        StoredRun::Absent | StoredRun::Pending { .. } => None,
    })
}

/// The entry of a run sealed by one of `trusted` (signature and subject checked), or why it
/// is not one.
async fn trusted_entry(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
) -> Result<LogEntry, LogError> {
    let not_sealed = |detail: String| LogError::NotSealed {
        run: run.clone(),
        detail,
    };
    let entry = entry_for(store, run)
        .await?
        .ok_or_else(|| not_sealed("no evidence.json and seal.dsse.json".into()))?;
    let (envelope, _) = store
        .get_json::<Envelope>(&Key::seal(run))
        .await?
        .ok_or_else(|| not_sealed("the seal vanished".into()))?;
    let verified = sealing::verify_envelope(&envelope, trusted)
        .map_err(|e| not_sealed(format!("seal: {e}")))?;
    let subject = &verified.statement.subject[0];
    if subject.name != Key::evidence(run).as_str() || subject.digest.sha256 != entry.evidence_sha256
    {
        return Err(not_sealed(
            "the seal is not over this run's evidence".into(),
        ));
    }
    Ok(entry)
}

#[cfg(test)]
pub(super) mod tests;
