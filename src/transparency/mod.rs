//! The transparency log of seals, kept in the object store next to the runs (docs/DESIGN.md
//! §13): every seal the postguard writes is appended as a leaf, and every append publishes a
//! C2SP signed checkpoint, so that no decided run can vanish or be replaced unnoticed.
//!
//! Layout, create-only like everything else:
//! - `log/entries/<index, 20 digits>`: the canonical [`LogEntry`] bytes of leaf `index`;
//! - `log/checkpoints/<size, 20 digits>`: the signed note of the tree of `size` leaves.
//!
//! Decision: no conditional *update* anywhere, only create-only puts, which every backend
//! (file, memory, S3 with `If-None-Match: *`) offers. A replica takes the next index by
//! creating `log/entries/<n>`; losing the race is a conflict, after which it reads the winner
//! and tries `n+1`. Entries are never rewritten, so the tree of size N is unique; the same key
//! signs deterministically, so two replicas publishing size N create the very same bytes, and
//! "the latest checkpoint" is simply the largest size. Before writing at index `n` an appender
//! has read every entry below `n`, so the same seal is never appended twice.
//!
//! Crash between seal and append: the first append of each process, and `seal serve` at start,
//! sweep the store for sealed runs the log lacks and append them (only seals that verify under
//! this process's own key: a planted run is not laundered into the log).

pub mod view;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::collections::HashMap;
use std::sync::Arc;

use crate::canonical::Hash;
use crate::doc::Evidence;
use crate::fault::{Fault, HasFault};
use crate::ids::RunId;
pub use crate::key::{LOG_CHECKPOINTS, LOG_ENTRIES};
use crate::sealing::{self, Envelope, PublicKey, SigningKey};
use crate::store::{Key, Store, StoreError};
use crate::tlog::{self, LogEntry, TlogError, Tree};

pub use view::{verify_log, LogReport, LogView};

/// Default origin (and signed-note key name) when the config names none.
pub const DEFAULT_ORIGIN: &str = "seal.local/log";
/// Entries read at once when a process first loads the log.
const READ_AHEAD: usize = 16;
/// Test hook: milliseconds to wait between writing a seal and appending it, so a test can
/// kill -9 the process in exactly that window. Unset in production.
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
}

impl HasFault for LogError {
    fn fault(&self) -> Fault {
        match self {
            LogError::Store(e) => e.fault(),
            LogError::Corrupt { .. } | LogError::Format(_) => Fault::Corruption,
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

/// What this process knows of the log: entries are create-only, so a cached entry never
/// goes stale.
#[derive(Default)]
struct Cache {
    entries: Vec<Bytes>,
    tree: Tree,
    by_run: HashMap<String, Vec<u64>>,
    swept: bool,
}

impl Cache {
    fn push(&mut self, bytes: Bytes, key: &Key) -> Result<(), LogError> {
        let entry = LogEntry::from_bytes(&bytes).map_err(|e| corrupt(key, e))?;
        self.tree.push(&bytes)?;
        let index = self.entries.len() as u64;
        self.by_run.entry(entry.run_id).or_default().push(index);
        self.entries.push(bytes);
        Ok(())
    }

    /// The index of an identical entry already in the log.
    fn find(&self, run: &str, bytes: &[u8]) -> Option<u64> {
        self.by_run.get(run)?.iter().copied().find(|&i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.entries.get(i))
                .is_some_and(|b| b.as_ref() == bytes)
        })
    }
}

/// The store's log as this process appends to it. Cheap to clone; one per engine.
#[derive(Clone)]
pub struct Log {
    store: Store,
    origin: String,
    cache: Arc<tokio::sync::Mutex<Cache>>,
    /// Where each new checkpoint is sent for cosigning (`crate::witness::publish`).
    witnesses: crate::witness::publish::Publisher,
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
            witnesses: Default::default(),
        }
    }

    /// The same log, offering every checkpoint it publishes to `witnesses`.
    pub fn with_witnesses(mut self, witnesses: crate::witness::publish::Publisher) -> Log {
        self.witnesses = witnesses;
        self
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Appends the stored seal of `run` unless that very seal is logged already, then
    /// publishes the checkpoint of the tree that holds it. The first call of a process first
    /// repairs the log (see the module doc).
    pub async fn append(&self, run: &RunId, key: &SigningKey) -> Result<Appended, LogError> {
        self.append_trusted(run, key, &[key.public()]).await
    }

    /// Like [`Log::append`] for a run sealed by any of `trusted` (an imported, verified run);
    /// `key` signs the checkpoint.
    pub async fn append_trusted(
        &self,
        run: &RunId,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<Appended, LogError> {
        append_delay().await;
        let entry = trusted_entry(&self.store, run, trusted).await?;
        let mut cache = self.cache.lock().await;
        if !cache.swept {
            self.sweep(&mut cache, key).await?;
            cache.swept = true;
        }
        let (index, created) = self.append_locked(&mut cache, run, entry).await?;
        let tree_size = self.publish(&cache, key).await?;
        Ok(Appended {
            index,
            created,
            tree_size,
        })
    }

    /// Appends every sealed run the log lacks (a crash between seal and append) and publishes a
    /// checkpoint; returns the runs it appended.
    pub async fn repair(&self, key: &SigningKey) -> Result<Vec<RunId>, LogError> {
        let mut cache = self.cache.lock().await;
        let added = self.sweep(&mut cache, key).await?;
        cache.swept = true;
        self.publish(&cache, key).await?;
        Ok(added)
    }

    async fn sweep(&self, cache: &mut Cache, key: &SigningKey) -> Result<Vec<RunId>, LogError> {
        self.sync(cache).await?;
        let mut added = Vec::new();
        for run in self.store.list_runs().await? {
            if cache.by_run.contains_key(run.as_str())
                || !self.store.exists(&Key::seal(&run)).await?
            {
                continue;
            }
            let appended = match trusted_entry(&self.store, &run, &[key.public()]).await {
                Ok(entry) => self.append_locked(cache, &run, entry).await,
                Err(e) => Err(e),
            };
            match appended {
                Ok((_, true)) => {
                    tracing::warn!(run = %run, "sealed run was missing from the log: appended");
                    added.push(run);
                }
                Ok((_, false)) => {}
                // Not ours or not a valid seal: `seal log verify` names it; nothing to append.
                Err(LogError::NotSealed { run, detail }) => {
                    tracing::warn!(run = %run, %detail, "sealed run not appended to the log")
                }
                Err(e) => return Err(e),
            }
        }
        Ok(added)
    }

    async fn append_locked(
        &self,
        cache: &mut Cache,
        run: &RunId,
        entry: LogEntry,
    ) -> Result<(u64, bool), LogError> {
        let bytes = Bytes::from(entry.to_bytes().map_err(|e| LogError::NotSealed {
            run: run.clone(),
            detail: e.to_string(),
        })?);
        self.sync(cache).await?;
        if let Some(index) = cache.find(run.as_str(), &bytes) {
            return Ok((index, false));
        }
        loop {
            let index = cache.entries.len() as u64;
            let k = Key::log_entry(index);
            match self.store.put_bytes_reporting(&k, bytes.clone()).await {
                Ok((_, created)) => {
                    cache.push(bytes, &k)?;
                    return Ok((index, created));
                }
                // Another replica took this index: learn its entry, try the next one.
                Err(StoreError::Conflict { .. }) => {
                    let theirs = self.store.get(&k).await?;
                    cache.push(theirs, &k)?;
                    if let Some(index) = cache.find(run.as_str(), &bytes) {
                        return Ok((index, false));
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads the entries this process has not seen yet: in bulk (listing) the first time,
    /// then one by one until the first free index.
    async fn sync(&self, cache: &mut Cache) -> Result<(), LogError> {
        if cache.entries.is_empty() {
            let keys = entry_keys(&self.store).await?;
            let fetched: Vec<(Key, Bytes)> = futures::stream::iter(keys.into_iter().map(|k| {
                let store = self.store.clone();
                async move { store.get(&k).await.map(|b| (k, b)) }
            }))
            .buffered(READ_AHEAD)
            .try_collect()
            .await?;
            for (k, b) in fetched {
                cache.push(b, &k)?;
            }
        }
        loop {
            let k = Key::log_entry(cache.entries.len() as u64);
            match self.store.get_opt(&k).await? {
                Some(b) => cache.push(b, &k)?,
                None => return Ok(()),
            }
        }
    }

    /// Signs and stores the checkpoint of everything this process has seen; returns its size.
    async fn publish(&self, cache: &Cache, key: &SigningKey) -> Result<u64, LogError> {
        let size = cache.tree.size();
        if size == 0 {
            return Ok(0);
        }
        let note = sign_checkpoint(&self.origin, &cache.tree, size, key)?;
        let k = Key::log_checkpoint(size);
        let note = Bytes::from(note);
        match self.store.put_bytes_reporting(&k, note.clone()).await {
            Ok(_) => {
                self.witnesses.offer(&cache.tree, size, &note);
                Ok(size)
            }
            // Another key (or a forger) published this size first: `seal log verify` judges it.
            Err(StoreError::Conflict { .. }) => {
                tracing::warn!(key = %k, "another checkpoint of this size is stored");
                Ok(size)
            }
            Err(e) => Err(e.into()),
        }
    }
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

async fn append_delay() {
    if let Some(ms) = std::env::var(APPEND_DELAY_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tracing::warn!(ms, "{APPEND_DELAY_ENV} set: waiting before the log append");
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

/// Keys of the stored entries in index order; a missing index below a stored one is
/// corruption (a dropped entry), refused before anything is appended.
async fn entry_keys(store: &Store) -> Result<Vec<Key>, LogError> {
    let keys = store.list(LOG_ENTRIES).await?;
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let Some(n) = k.log_number(LOG_ENTRIES) else {
            continue;
        };
        if n != out.len() as u64 {
            return Err(corrupt(
                &Key::log_entry(out.len() as u64),
                format!("missing while {k} exists: a log entry was dropped (seal log verify)"),
            ));
        }
        out.push(k);
    }
    Ok(out)
}

/// Stored checkpoint keys, largest size first.
pub async fn checkpoint_keys(store: &Store) -> Result<Vec<(u64, Key)>, StoreError> {
    let mut keys: Vec<(u64, Key)> = store
        .list(LOG_CHECKPOINTS)
        .await?
        .into_iter()
        .filter_map(|k| k.log_number(LOG_CHECKPOINTS).map(|n| (n, k)))
        .collect();
    keys.sort_by_key(|k| std::cmp::Reverse(k.0));
    Ok(keys)
}

/// The latest stored checkpoint (the largest size), exactly as stored; not verified.
pub async fn latest_checkpoint(store: &Store) -> Result<Option<Bytes>, StoreError> {
    match checkpoint_keys(store).await?.first() {
        Some((_, k)) => store.get_opt(k).await,
        None => Ok(None),
    }
}

/// The entry the log should hold for a run, computed from its stored evidence and seal bytes;
/// `None` when the run is not sealed (either object absent).
pub async fn entry_for(store: &Store, run: &RunId) -> Result<Option<LogEntry>, LogError> {
    let (Some(ev), Some(seal)) = (
        store.get_opt(&Key::evidence(run)).await?,
        store.get_opt(&Key::seal(run)).await?,
    ) else {
        return Ok(None);
    };
    let not_sealed = |detail: String| LogError::NotSealed {
        run: run.clone(),
        detail,
    };
    let evidence: Evidence = crate::json::parse_as(&ev, store.doc_limit())
        .map_err(|e| not_sealed(format!("evidence.json: {e}")))?;
    let envelope: Envelope = crate::json::parse_as(&seal, store.doc_limit())
        .map_err(|e| not_sealed(format!("seal.dsse.json: {e}")))?;
    let (Some(outcome), Some(pg)) = (evidence.outcome, evidence.final_postguard.as_ref()) else {
        return Err(not_sealed("evidence.json is not DECIDED".into()));
    };
    let key_id = match envelope.signatures.as_slice() {
        [s] => s.keyid.clone(),
        other => return Err(not_sealed(format!("{} seal signatures", other.len()))),
    };
    Ok(Some(LogEntry {
        run_id: run.to_string(),
        evidence_sha256: Hash::of(&ev).to_string(),
        seal_sha256: Hash::of(&seal).to_string(),
        key_id,
        outcome: outcome.as_str().to_string(),
        decided_at: pg.decided_at.clone(),
        acceptance_mode: evidence.acceptance_mode.as_str().to_string(),
        parent_run_id: evidence.parent_run_id.clone(),
    }))
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
