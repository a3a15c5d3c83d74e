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
//! Decision: no conditional *update* anywhere, only create-only puts, which every backend
//! (file, memory, S3 with `If-None-Match: *`) offers. A replica takes the next index by
//! creating `log/entries/<n>`; losing the race is a conflict, after which it reads the winner
//! and tries `n+1`. Entries are never rewritten, so the tree of size N is unique; the same key
//! signs deterministically, so two replicas publishing size N create the very same bytes, and
//! "the latest checkpoint" is simply the largest size. Before writing at index `n` an appender
//! has read every entry below `n`, so the same seal is never appended twice.
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

pub mod guard;
mod history;
pub mod publish;
pub mod rebuild;
pub mod runs;
pub mod stream;
pub mod tiles;
pub mod view;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::audit::Problem;
use seal_core::canonical::Hash;
use seal_core::doc::Evidence;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
pub use seal_core::key::{LOG_CHECKPOINTS, LOG_ENTRIES, LOG_RUNS};
use seal_core::sealing::{self, Envelope, PublicKey, SigningKey};
use seal_core::tlog::{self, Leaf, LogEntry, LogTrust, NodeHash, ReadLeaf, TlogError, Tree};
use seal_core::vocab::AuditCheck;
use seal_store::{Bounded, Key, Put, Store, StoreError};

pub use view::{verify_log, LogReport, LogView, WholeLog};

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

/// What this process knows of the log: entries are create-only, so a cached leaf never goes
/// stale.
///
/// Decision: no leaf's bytes are kept, only the tree's hashes and, per seal leaf, its index
/// and the two digests appends and retries compare (a long-lived daemon holds the whole log:
/// ~1.3 KB a logged run with the bytes, docs/DEPLOYING.md "Sizing"). An identical entry is
/// found by its leaf hash in the tree; the rare caller that needs a whole entry back (a rival
/// seal's) reads it from the store and checks it against that leaf hash ([`Log::entry_at`]).
#[derive(Default)]
struct Cache {
    tree: Tree,
    by_run: HashMap<String, Vec<SealLeaf>>,
    /// The leaves that are not a seal's (reviews, rebuilds), by leaf hash: appending the same
    /// bytes again finds them.
    others: HashMap<NodeHash, u64>,
    /// The review leaves seen: (run, review index, review sha256).
    reviews: std::collections::HashSet<(String, u64, String)>,
    /// The guard let this process append (once per process: see [`Log::admit`]).
    admitted: bool,
    /// The largest checkpoint this process stored (or found stored) for this tree.
    published: u64,
    /// The tree's tiles are stored through this size ([`tiles`]): the next checkpoint stores
    /// the ones after it.
    tiled: u64,
    /// The pointers ([`store_pointers`]) of the leaves this process knows but has not pointed yet:
    /// the next checkpoint stores them first, as it does the tiles, so that every leaf a
    /// stored checkpoint covers has its pointer (docs/DESIGN.md §13, "Run pointers").
    unpointed: BTreeMap<u64, Key>,
    /// The leaves below this index are known by their hash only (the tree this process
    /// started from, read from the tiles: [`history`]); a run's are indexed the first time it
    /// is asked about ([`Log::load_run`]). 0 when every leaf was read.
    base: u64,
    /// The runs whose leaves below `base` are indexed.
    loaded: std::collections::HashSet<String>,
    /// What the seal scan found (G2, [`Log::scan`]): once set, this process appends nothing.
    refused: Option<Vec<Problem>>,
    /// This log's origin and keys: a leaf read past what the process knows is adopted only
    /// when it authenticates under them ([`Cache::push`]).
    trust: LogTrust,
}

/// A seal leaf as this process holds it: where it is and the digests it names (`None` for a
/// digest that is not 64 lowercase hex digits, which no hash of seal's equals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealLeaf {
    pub index: u64,
    evidence: Option<[u8; 32]>,
    seal: Option<[u8; 32]>,
    /// The leaf hash of the entry without its `auth` (`tlog::ReadLeaf::content`): the same
    /// entry whatever index it was signed for.
    content: NodeHash,
}

impl SealLeaf {
    pub(super) fn of(index: u64, entry: &LogEntry, content: NodeHash) -> SealLeaf {
        let digest = |hex: &str| Hash::parse(hex).ok().map(|h| h.to_bytes());
        SealLeaf {
            index,
            evidence: digest(&entry.evidence_sha256),
            seal: digest(&entry.seal_sha256),
            content,
        }
    }

    /// Whether the logged seal is over these evidence bytes.
    pub fn is_over(&self, evidence_sha256: &Hash) -> bool {
        self.evidence == Some(evidence_sha256.to_bytes())
    }

    /// Whether the logged seal is these seal bytes.
    pub fn names_seal(&self, seal_sha256: &Hash) -> bool {
        self.seal == Some(seal_sha256.to_bytes())
    }

    /// The logged seal's sha256 as hex (empty when the entry's was not a sha256).
    pub(super) fn seal_hex(&self) -> String {
        self.seal.map(|d| tlog::hex(&d)).unwrap_or_default()
    }
}

impl Cache {
    /// Adopts the entry read at the next index, when it authenticates as this log's
    /// ([`LogTrust::authenticate`]). One that does not was planted (or is another log's): the
    /// process refuses it, named, adopts nothing after it and signs nothing over it, from now
    /// on (the refusal sticks, as the seal scan's does), and leaves it for `seal log verify`
    /// and `seal log rebuild`.
    fn push(&mut self, bytes: &[u8], key: &Key) -> Result<(), LogError> {
        let index = self.tree.size();
        match self.trust.authenticate(index, bytes) {
            Ok(read) => self.adopt(bytes, read),
            Err(e) => {
                let problems = vec![planted_entry(key, &e)];
                self.refused = Some(problems.clone());
                Err(LogError::Refused { problems })
            }
        }
    }

    /// Adopts the entry at the next index that the caller has authenticated already (it
    /// signed it, or a view authenticated it: the kept prefix of a rebuild).
    fn push_trusted(&mut self, bytes: &[u8], key: &Key) -> Result<(), LogError> {
        let read = ReadLeaf::parse(bytes).map_err(|e| corrupt(key, e))?;
        self.adopt(bytes, read)
    }

    fn adopt(&mut self, bytes: &[u8], read: ReadLeaf) -> Result<(), LogError> {
        let index = self.tree.size();
        self.tree.push_leaf_hash(tlog::leaf_hash(bytes))?;
        self.index(index, read.leaf, read.content);
        Ok(())
    }

    /// The cache of a log the guard has just read whole and let through: its tree as the view
    /// hashed it and its leaves as the view indexed them (every entry is in both, or the guard
    /// would have refused), so nothing is read or parsed twice.
    fn admitted(view: LogView, trust: &LogTrust) -> Result<Cache, LogError> {
        let leaf_hash = |tree: &Tree, index: u64| {
            tree.leaf(index).ok_or_else(|| {
                corrupt(
                    &Key::log_entry(index),
                    "an entry outside the tree the guard read",
                )
            })
        };
        let mut cache = Cache {
            admitted: true,
            by_run: view.by_run.into_iter().collect(),
            trust: trust.clone(),
            ..Cache::default()
        };
        // The seal leaves come indexed already; the others through the one rule for them.
        let others = (view.reviews.into_iter().map(|(i, r)| (i, Leaf::Review(r)))).chain(
            view.rebuilds
                .into_iter()
                .map(|(i, r)| (i, Leaf::Rebuild(r))),
        );
        for (index, leaf) in others {
            leaf_hash(&view.tree, index)?;
            let content = content_of(&leaf).map_err(|e| corrupt(&Key::log_entry(index), e))?;
            cache.index(index, leaf, content);
        }
        for (run, leaves) in &cache.by_run {
            for leaf in leaves {
                cache.unpointed.extend(pointer(run, leaf.index));
            }
        }
        cache.tree = view.tree;
        Ok(cache)
    }

    /// The seal scan's refusal, once it refused: every append of the process answers it.
    fn refusal(&self) -> Result<(), LogError> {
        match &self.refused {
            Some(problems) => Err(LogError::Refused {
                problems: problems.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Records that the tiles of the tree of `size` leaves are stored.
    fn tiled_through(&mut self, size: u64) {
        // A rebuild may have replaced the tree meanwhile: then its own tiles are due again.
        if self.tree.size() >= size {
            self.tiled = self.tiled.max(size);
        }
    }

    /// Records what leaf `index` (content hash `hash`: [`ReadLeaf::content`]) is, for the
    /// lookups below, and that its pointer is due.
    fn index(&mut self, index: u64, leaf: Leaf, hash: NodeHash) {
        match &leaf {
            Leaf::Seal(entry) => self.unpointed.extend(pointer(&entry.run_id, index)),
            Leaf::Review(r) => self.unpointed.extend(pointer(&r.run_id, index)),
            Leaf::Rebuild(_) => {}
        }
        self.know(index, leaf, hash);
    }

    /// Records what leaf `index` (content hash `hash`) is, for the lookups below.
    fn know(&mut self, index: u64, leaf: Leaf, hash: NodeHash) {
        match leaf {
            Leaf::Seal(entry) => {
                let sealed = SealLeaf::of(index, &entry, hash);
                self.by_run.entry(entry.run_id).or_default().push(sealed);
            }
            Leaf::Review(r) => {
                self.reviews
                    .insert((r.run_id, r.review_index, r.review_sha256));
                self.others.insert(hash, index);
            }
            Leaf::Rebuild(_) => {
                self.others.insert(hash, index);
            }
        }
    }

    /// The seal leaves logged for a run, in log order.
    fn logged(&self, run: &str) -> &[SealLeaf] {
        self.by_run.get(run).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The index of a leaf of `run` whose content hash is `hash`: that very entry, logged
    /// already (signed for whatever index it is at).
    fn find(&self, run: &str, hash: &NodeHash) -> Option<u64> {
        self.logged(run)
            .iter()
            .find(|l| l.content == *hash)
            .map(|l| l.index)
    }

    /// Another seal of the same evidence, already logged (a leaf of the run over the same
    /// evidence that is not this entry): a racing finalizer holding another key logged
    /// first, and it stores that seal.
    fn rival(&self, entry: &LogEntry, hash: &NodeHash) -> Option<u64> {
        let evidence = SealLeaf::of(0, entry, *hash).evidence?;
        self.logged(&entry.run_id)
            .iter()
            .find(|l| l.evidence == Some(evidence) && l.content != *hash)
            .map(|l| l.index)
    }
}

/// The content hash of a leaf ([`ReadLeaf::content`]): the hash of its canonical bytes
/// without `auth`.
fn content_of(leaf: &Leaf) -> Result<NodeHash, seal_core::canonical::CanonicalError> {
    let bytes = match leaf {
        Leaf::Seal(e) => e.to_bytes()?,
        Leaf::Review(r) => r.to_bytes()?,
        Leaf::Rebuild(r) => r.to_bytes()?,
    };
    Ok(tlog::leaf_hash(&bytes))
}

/// The problem of an entry past everything this process trusts that does not authenticate as
/// this log's (docs/DESIGN.md §11): planted by whoever can write the store.
pub(super) fn planted_entry(key: &Key, why: &TlogError) -> Problem {
    Problem::new(
        AuditCheck::PlantedLogEntry,
        key.as_str(),
        format!(
            "{why}. seal adopts, signs over and serves nothing from here on; `seal log verify` \
             names it and `seal log rebuild` moves it aside, recorded in the log"
        ),
    )
}

/// The pointer of leaf `index` about `run`: `None` for a run id seal never writes (such an
/// entry is a `log_entries` problem of `seal log verify`, and no reader looks for it).
fn pointer(run: &str, index: u64) -> Option<(u64, Key)> {
    let run = RunId::parse(run).ok()?;
    Some((index, Key::log_run_leaf(&run, index)))
}

impl Cache {
    /// The pointers a checkpoint of `size` leaves must be stored after.
    fn pointers_due(&self, size: u64) -> Vec<(u64, Key)> {
        let due = self.unpointed.range(..size);
        due.map(|(i, k)| (*i, k.clone())).collect()
    }

    /// Records that the pointers `stored` are (each only if it is still the one due at its
    /// index: a rebuild may have replaced the tree meanwhile).
    fn pointed(&mut self, stored: &[(u64, Key)]) {
        for (index, k) in stored {
            if self.unpointed.get(index) == Some(k) {
                self.unpointed.remove(index);
            }
        }
    }
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
        }
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

    /// What this log trusts: its origin, `key` and the keys it signed with before.
    pub fn trust_of(&self, key: &SigningKey, trusted: &[PublicKey]) -> LogTrust {
        LogTrust::new(
            &self.origin,
            std::iter::once(key.public())
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
    ) -> Result<SealLeaf, LogError> {
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, &[]))
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
        let bytes = Bytes::from(tlog::sign_leaf(unsigned, &self.origin, index, &|m| {
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
pub(super) mod tests {
    use super::*;
    use seal_core::vocab::AuditCheck;

    /// A seal entry of run `run-batch-<i>` (nothing stored for it).
    pub(in crate::transparency) fn entry(i: u32) -> (RunId, LogEntry) {
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
    pub(in crate::transparency) async fn forty() -> (tempfile::TempDir, Store, SigningKey) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("file://{}", dir.path().display()))
            .await
            .unwrap();
        let key = SigningKey::generate();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        for i in 0..40 {
            let (run, e) = entry(i);
            log.append_seal(&run, &e, &key).await.unwrap();
        }
        (dir, store, key)
    }

    /// The file of `log/entries/<index>` in a `file://` store at `dir`.
    pub(in crate::transparency) fn entry_file(
        dir: &tempfile::TempDir,
        index: u64,
    ) -> std::path::PathBuf {
        dir.path().join(Key::log_entry(index).as_str())
    }

    /// Entries appended while no checkpoint was published are all covered by the next one,
    /// and an appender whose entry a stored checkpoint already covers publishes none: one
    /// checkpoint per batch, and none missing.
    #[tokio::test]
    async fn one_checkpoint_covers_every_entry_appended_before_it() {
        let store = Store::open("memory://").await.unwrap();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        let key = SigningKey::generate();
        // Five entries appended as appenders do, before any of them publishes.
        {
            let mut cache = log.cache.lock().await;
            log.admit_locked(&mut cache, &raw_keys(&key, &[]))
                .await
                .unwrap();
            for i in 0..5 {
                let (run, e) = entry(i);
                log.append_locked(&mut cache, &run, &e, &key).await.unwrap();
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
        let genuine = latest_checkpoint(
            &store,
            &crate::transparency::trust(DEFAULT_ORIGIN, &trusted),
        )
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
        let head = latest_checkpoint(
            &store,
            &crate::transparency::trust(DEFAULT_ORIGIN, &trusted),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!((head.size, &head.text), (40, &genuine.text));
        // A reader whose document limit the large one passes: not read, not an error.
        let small = store.clone().with_doc_limit(tlog::MAX_CHECKPOINT_BYTES + 1);
        let head = latest_checkpoint(
            &small,
            &crate::transparency::trust(DEFAULT_ORIGIN, &trusted),
        )
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
        let other = [SigningKey::generate().public()];
        assert!(
            latest_checkpoint(&store, &crate::transparency::trust(DEFAULT_ORIGIN, &other))
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
        (dir, store, SigningKey::generate(), run, first, second)
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
        let key = SigningKey::generate();
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
        let signed = tlog::sign_leaf(&first.to_bytes().unwrap(), DEFAULT_ORIGIN, 0, &|m| {
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
        let key = Arc::new(SigningKey::generate());
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
}
