//! The store facade: [`Store`], one type over every backend, with the guarantees the crate doc
//! lists (create-only puts, verified reads, reserved keys), and what every backend shares: the
//! reserved-key refusal, the document limit, how a create that found its key taken is settled,
//! and the blobs this process stored. What differs per backend is [`crate::backend`]'s.

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;

use seal_core::canonical::{self, Hash};
use seal_core::decided::{Decided, Seal};
use seal_core::ids::RunId;
use seal_core::review::CheckedReview;

use crate::backend::Backend;
use crate::cas_seen::CasSeen;
use crate::object;
use crate::staging::Staging;
use crate::{Key, StoreError, StoreUrl, Stored};

/// Default size limit for a document read into memory (docs/DESIGN.md: 64 MiB, configurable).
pub const DEFAULT_DOC_LIMIT: u64 = 64 * 1024 * 1024;
/// How often a create that lost a race re-reads the winner before giving up.
const RACE_REREADS: usize = 5;

/// The store facade. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Store {
    pub(crate) backend: Backend,
    url: StoreUrl,
    doc_limit: u64,
    /// The blobs this process stored through this open store (see [`crate::cas_seen`]).
    pub(crate) cas_seen: Arc<CasSeen>,
    /// Reads by kind of object, for [`Store::reads_by_kind`].
    pub(crate) tally: Arc<crate::tally::Tally>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url)
    }
}

/// What a create-only put did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Put {
    /// The object as stored: the key, the sha256 of its bytes, their length.
    pub stored: Stored,
    /// This call created the object; `false`: identical bytes were there already.
    pub created: bool,
}

/// What a folder of the store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Its objects, sorted.
    pub keys: Vec<Key>,
    /// What a `file://` store holds there that seal could not have written (symbolic links,
    /// FIFOs, devices, sockets, names that are not keys), each named so that an audit reports
    /// it instead of skipping it; links are never followed. Always empty on object backends.
    pub foreign: Vec<String>,
}

/// The folders under `runs/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunListing {
    /// The valid run ids, sorted.
    pub runs: Vec<RunId>,
    /// The names that are not run ids (listed so that an auditor sees every folder it could
    /// not verify), sorted.
    pub invalid: Vec<String>,
}

/// An object [`Store::copy_aside`] copied: its bytes are stored under [`CopiedAside::to`] as
/// well. Only the store makes one, and it is the only way to name an object to remove.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CopiedAside {
    from: Key,
    to: Key,
}

impl CopiedAside {
    /// Where the object was (and is removed from).
    pub fn from(&self) -> &Key {
        &self.from
    }
    /// Where its copy is.
    pub fn to(&self) -> &Key {
        &self.to
    }
    /// One made without a copy, for the store's own tests of removal beneath the root.
    #[cfg(test)]
    pub(crate) fn unchecked(from: Key) -> CopiedAside {
        CopiedAside {
            to: from.clone(),
            from,
        }
    }
}

impl Store {
    /// Opens the store named by `url` (see the crate doc for the schemes); a missing `file://`
    /// folder is created.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let url = StoreUrl::parse(url)?;
        let backend = url.backend().await?;
        Ok(Store::on(backend, url, DEFAULT_DOC_LIMIT))
    }

    /// Opens an existing store for reading: a `file://` folder must already exist (nothing is
    /// created), and `memory://` is refused (a fresh one is always empty).
    pub async fn open_existing(url: &str) -> Result<Store, StoreError> {
        let parsed = StoreUrl::parse(url)?;
        match &parsed {
            StoreUrl::File(p, _) => {
                seal_fs::fsio::require_folder(p).map_err(|e| StoreError::Url {
                    url: url.chars().take(200).collect(),
                    reason: format!("no store there: {e}"),
                })?
            }
            StoreUrl::Memory => {
                return Err(StoreError::Url {
                    url: url.into(),
                    reason: "a memory:// store opened here would be empty".into(),
                })
            }
            StoreUrl::S3 { .. } => {}
        }
        Store::open(url).await
    }

    fn on(backend: Backend, url: StoreUrl, doc_limit: u64) -> Store {
        Store {
            backend,
            url,
            doc_limit,
            cas_seen: Arc::default(),
            tally: Arc::default(),
        }
    }

    /// A private, empty in-memory store (a [`Staging`] area's).
    pub(crate) fn memory(doc_limit: u64) -> Store {
        let backend = Backend::Object(Arc::new(object_store::memory::InMemory::new()));
        Store::on(backend, StoreUrl::Memory, doc_limit)
    }

    /// Sets the size limit for documents read into memory.
    pub fn with_doc_limit(mut self, limit: u64) -> Store {
        self.doc_limit = limit;
        self
    }

    /// The same store, whose `file://` reads (get, hash, exists, listings) run on the calling
    /// thread instead of the blocking pool: only for callers on a thread of their own already,
    /// such as one blocking task per verified run (on an async worker it would stall the other
    /// tasks). Object backends have no blocking calls: for them this changes nothing.
    pub fn with_direct_io(mut self) -> Store {
        if let Backend::File(f) = self.backend {
            self.backend = Backend::File(f.with_direct_io());
        }
        self
    }

    /// The same store, on which a create of a run's document before its seal
    /// ([`Key::precedes_its_seal`]) returns once its bytes are durable and its name visible;
    /// its name becomes durable with the next flush, at the latest the one before the run's
    /// seal is put (`file://` with `flush=batch`: one flush a document instead of two; other
    /// backends are unchanged). After a power loss a run without its seal may then lack some of
    /// those documents, as after a `kill -9` earlier in its writing. Only for a writer that
    /// acknowledges a run once its seal is put, or after [`Store::settle`].
    pub fn with_names_settled_by_seal(mut self) -> Store {
        if let Backend::File(f) = self.backend {
            self.backend = Backend::File(f.with_names(crate::file::Names::BySeal));
        }
        self
    }

    /// Every object this process has created on the store so far is durable when this
    /// returns (on `file://` with `flush=batch` one flush of the store's filesystem; every
    /// other backend's creates are durable when they return).
    pub async fn settle(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::File(f) => f.settle().await,
            Backend::Object(_) => Ok(()),
        }
    }

    pub fn doc_limit(&self) -> u64 {
        self.doc_limit
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Puts exact bytes at `key`, create-only: the same bytes again is `Ok` (not created),
    /// other bytes [`StoreError::Conflict`]. The postguard's two keys are refused
    /// ([`StoreError::Reserved`]): they are written only by [`Store::put_decided`] and
    /// [`Store::put_seal`].
    pub async fn put(&self, key: &Key, bytes: Bytes) -> Result<Put, StoreError> {
        if key.is_reserved() {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        let hash = Hash::of(&bytes);
        self.create(key, bytes, hash).await
    }

    /// Puts the canonical bytes of `doc` at `key`, create-only (as [`Store::put`]).
    pub async fn put_json<T: Serialize + ?Sized>(
        &self,
        key: &Key,
        doc: &T,
    ) -> Result<Put, StoreError> {
        let bytes = canonical::canonical_bytes(doc).map_err(|source| StoreError::Canonical {
            key: key.clone(),
            source,
        })?;
        self.put(key, Bytes::from(bytes)).await
    }

    /// Writes `runs/<id>/evidence.json`. Only a [`Decided`] document can be written there, and
    /// only the postguard can make one.
    pub async fn put_decided(&self, decided: &Decided) -> Result<Put, StoreError> {
        let key = Key::evidence(decided.run());
        let bytes = decided.bytes().clone();
        let hash = Hash::of(&bytes);
        self.create(&key, bytes, hash).await
    }

    /// Writes `runs/<id>/seal.dsse.json`, which only the postguard can make.
    pub async fn put_seal(&self, seal: &Seal) -> Result<Put, StoreError> {
        let key = Key::seal(seal.run());
        let bytes = seal.bytes().clone();
        let hash = Hash::of(&bytes);
        self.create(&key, bytes, hash).await
    }

    /// Writes `runs/<id>/reviews/<n>.dsse.json`, create-only: only an [`CheckedReview`]
    /// (checked against the run's verified evidence, seal and earlier reviews) is written
    /// there. Another review already at that index is [`StoreError::Conflict`]; the very same
    /// bytes again is `Ok` (not created).
    pub async fn put_review(&self, review: &CheckedReview) -> Result<Put, StoreError> {
        let key = review.key();
        let bytes = review.bytes().clone();
        self.create(&key, bytes, review.hash().clone()).await
    }

    /// Copies an object, reserved keys included, from a staging area byte for byte (importing
    /// archived runs; the engine's import calls it only for the keys of a run that verified
    /// there). It takes no bytes from the caller, only what the staging area holds.
    pub async fn import_from(&self, from: &Staging, key: &Key) -> Result<Stored, StoreError> {
        // A staging area holds only what an import read through its own limits.
        let bytes = from.store().backend.read(key, u64::MAX).await?;
        let hash = Hash::of(&bytes);
        Ok(self.create(key, bytes, hash).await?.stored)
    }

    /// Copies the object `from` to `to`, create-only (identical bytes already at `to` are a
    /// success, as after a crash part-way through a rebuild): the first half of the one
    /// exception to "nothing is deleted". The [`CopiedAside`] returned is the only thing
    /// [`Store::remove_copied`] accepts, so no object is removed that is not kept elsewhere.
    pub async fn copy_aside(&self, from: &Key, to: &Key) -> Result<CopiedAside, StoreError> {
        let bytes = self.get(from).await?;
        self.put(to, bytes).await?;
        Ok(CopiedAside {
            from: from.clone(),
            to: to.clone(),
        })
    }

    /// Removes an object [`Store::copy_aside`] copied (the transparency log's rebuild, through
    /// seal-log, which moves only its own entries, checkpoints and tiles aside). The
    /// postguard's two keys are refused ([`StoreError::Reserved`]). Absent already is success.
    pub async fn remove_copied(&self, aside: &CopiedAside) -> Result<(), StoreError> {
        let key = &aside.from;
        if key.is_reserved() {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        self.backend.remove(key).await?;
        crash::after_write(key);
        Ok(())
    }

    /// The one create path: a create-only put of bytes whose sha256 is `hash`, settled when the
    /// key was taken (a blob remembered in [`crate::cas_seen`]).
    pub(crate) async fn create(
        &self,
        key: &Key,
        bytes: Bytes,
        hash: Hash,
    ) -> Result<Put, StoreError> {
        let size = bytes.len() as u64;
        // A blob this process stored moments ago with these very bytes (a frame sent again, two
        // judges' identical answers): its key is its sha256, and every read of a CAS object is
        // checked against it, so creating it again would only cost a request (on S3 a PUT that
        // finds it, then a GET to compare). Only CAS keys: any other object taken, even by the
        // same bytes, is asked of the store, where a rewrite since is found.
        let cas = key.cas_hash().is_some_and(|h| h == hash);
        if cas {
            if let Some(size) = self.cas_seen.size(&hash) {
                return Ok(Put {
                    stored: Stored {
                        key: key.clone(),
                        hash,
                        size,
                    },
                    created: false,
                });
            }
        }
        let created = self.backend.create(key, bytes).await?;
        let stored = if created {
            Stored {
                key: key.clone(),
                hash,
                size,
            }
        } else {
            self.settle_existing(key, hash, size).await?
        };
        if cas {
            self.cas_seen.record(&stored.hash, stored.size);
        }
        if created && self.url != StoreUrl::Memory {
            crash::after_write(key);
        }
        Ok(Put { stored, created })
    }

    /// A create found the key taken: same bytes is success, other bytes a conflict.
    async fn settle_existing(
        &self,
        key: &Key,
        hash: Hash,
        size: u64,
    ) -> Result<Stored, StoreError> {
        for _ in 0..RACE_REREADS {
            match self.hash(key).await {
                Ok((existing, _)) if existing == hash => {
                    return Ok(Stored {
                        key: key.clone(),
                        hash,
                        size,
                    })
                }
                Ok((existing, _)) => {
                    return Err(StoreError::Conflict {
                        key: key.clone(),
                        existing,
                        attempted: hash,
                    })
                }
                // The winner of a race may not be visible yet on an eventually listing store.
                Err(StoreError::NotFound { .. }) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Backend {
            key: key.to_string(),
            op: "create-only put",
            detail: "the store refused the create but the object cannot be read".into(),
        })
    }

    /// Reads a whole object (at most the document limit) into memory. On a `file://` store the
    /// object must be a regular file ([`StoreError::NotRegular`]). A document of a kind with a
    /// bound of its own ([`seal_core::limits::bounds::doc_bound`]: a seal envelope, a receipt,
    /// a roll record…) larger than that bound is [`StoreError::OverBound`], refused from its
    /// stored size before a byte of it is read.
    pub async fn get(&self, key: &Key) -> Result<Bytes, StoreError> {
        self.tally.note(key);
        match seal_core::limits::bounds::doc_bound(key) {
            Some(b) if b.bytes < self.doc_limit => {
                self.backend.read(key, b.bytes).await.map_err(|e| match e {
                    StoreError::TooLarge { size, .. } => StoreError::OverBound {
                        key: key.clone(),
                        kind: b.kind,
                        size,
                        bound: b.bytes,
                    },
                    other => other,
                })
            }
            _ => self.backend.read(key, self.doc_limit).await,
        }
    }

    /// Like [`Store::get`], `None` when absent.
    pub async fn get_opt(&self, key: &Key) -> Result<Option<Bytes>, StoreError> {
        match self.get(key).await {
            Ok(b) => Ok(Some(b)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads `key` when it holds at most `bound` bytes (and the document limit); a larger
    /// object is not read but answered as [`Bounded::Larger`]. For the log's small objects
    /// (a checkpoint, a tile), where one over its kind's size is planted: the reader passes it
    /// over as it does a forgery of the right size, instead of reading up to the document
    /// limit, or failing the command on it.
    pub async fn get_bounded(&self, key: &Key, bound: u64) -> Result<Bounded, StoreError> {
        let own = seal_core::limits::bounds::doc_bound(key).map_or(u64::MAX, |b| b.bytes);
        let bound = bound.min(self.doc_limit).min(own);
        self.tally.note(key);
        match self.backend.read(key, bound).await {
            Ok(bytes) => Ok(Bounded::Read(bytes)),
            Err(StoreError::NotFound { .. }) => Ok(Bounded::Absent),
            Err(StoreError::TooLarge { size, .. }) => Ok(Bounded::Larger { size, bound }),
            Err(e) => Err(e),
        }
    }

    /// Reads an object and checks it hashes to `expected` ([`StoreError::HashMismatch`]).
    pub async fn get_verified(&self, key: &Key, expected: &Hash) -> Result<Bytes, StoreError> {
        let bytes = self.get(key).await?;
        mismatch(key, expected, Hash::of(&bytes))?;
        Ok(bytes)
    }

    /// Streams an object through SHA-256 without keeping it: its hash and size. (Checking an
    /// object against an expected hash is [`Store::verify`].)
    pub async fn hash(&self, key: &Key) -> Result<(Hash, u64), StoreError> {
        self.tally.note(key);
        self.backend.hash(key).await
    }

    /// The object hashes to `expected` (streamed, not kept); its size.
    pub async fn verify(&self, key: &Key, expected: &Hash) -> Result<u64, StoreError> {
        let (actual, size) = self.hash(key).await?;
        mismatch(key, expected, actual)?;
        Ok(size)
    }

    /// Reads an object with the sha256 of its bytes; `None` when absent.
    pub async fn get_opt_hashed(&self, key: &Key) -> Result<Option<(Bytes, Hash)>, StoreError> {
        Ok(self.get_opt(key).await?.map(|b| {
            let h = Hash::of(&b);
            (b, h)
        }))
    }

    /// Reads and strictly parses a JSON document, with the sha256 of its bytes; `None` when
    /// absent.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        key: &Key,
    ) -> Result<Option<(T, Hash)>, StoreError> {
        let Some(bytes) = self.get_opt(key).await? else {
            return Ok(None);
        };
        let hash = Hash::of(&bytes);
        Ok(Some((parse_stored(key, &bytes, self.doc_limit)?, hash)))
    }

    /// Reads, checks the hash of, and strictly parses a JSON document.
    pub async fn get_json_verified<T: DeserializeOwned>(
        &self,
        key: &Key,
        expected: &Hash,
    ) -> Result<T, StoreError> {
        let bytes = self.get_verified(key, expected).await?;
        parse_stored(key, &bytes, self.doc_limit)
    }

    /// On an object backend (S3, memory), every key under the folder `dir` from one listing
    /// (a few requests instead of one per absent object, for a caller that would otherwise
    /// ask for several objects there that may not exist yet); `None` on a `file://` store,
    /// where a lookup is a local `stat`, on an S3 store opened with `listing=off`, or when the
    /// folder holds more than `limit` objects.
    /// It is what the store holds when listed, no more trusted than a read: a key it names is
    /// still read (and verified) before use, and one it lacks is absent as a read would say.
    pub async fn keys_within(
        &self,
        dir: &str,
        limit: usize,
    ) -> Result<Option<std::collections::BTreeSet<Key>>, StoreError> {
        if let StoreUrl::S3 { listing: false, .. } = self.url {
            return Ok(None);
        }
        match &self.backend {
            Backend::File(_) => Ok(None),
            Backend::Object(s) => object::keys_within(s.as_ref(), dir, limit).await,
        }
    }

    /// Whether an object is at `key`. On a `file://` store, something other than a regular
    /// file there is [`StoreError::NotRegular`].
    pub async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        self.backend.exists(key).await
    }

    /// Everything under the folder `dir` (recursive): see [`Listing`].
    pub async fn list(&self, dir: &str) -> Result<Listing, StoreError> {
        self.backend.list(dir).await
    }

    /// The numbers the objects directly in the flat folder `dir` are named by, unsorted: names
    /// that are 20 zero-padded digits ([`seal_core::key::numbered_name`]), of regular files on
    /// `file://`. Anything else there is left out. Eight bytes a number: a listing of every key
    /// would hold ~190 bytes each while it is built (measured on 78,956 log checkpoints,
    /// docs/BENCHMARKS.md).
    pub async fn numbered(&self, dir: &str) -> Result<Vec<u64>, StoreError> {
        self.backend.numbered(dir).await
    }

    /// Every folder under `runs/`: see [`RunListing`].
    pub async fn runs(&self) -> Result<RunListing, StoreError> {
        let mut runs = Vec::new();
        let mut invalid = Vec::new();
        for name in self.backend.names("runs").await? {
            match RunId::parse(&name) {
                Ok(r) => runs.push(r),
                Err(_) => invalid.push(name.chars().take(200).collect()),
            }
        }
        runs.sort();
        invalid.sort();
        Ok(RunListing { runs, invalid })
    }
}

/// `actual` is `expected`, else [`StoreError::HashMismatch`] naming `key`.
pub(crate) fn mismatch(key: &Key, expected: &Hash, actual: Hash) -> Result<(), StoreError> {
    if &actual == expected {
        Ok(())
    } else {
        Err(StoreError::HashMismatch {
            key: key.clone(),
            expected: expected.clone(),
            actual,
        })
    }
}

/// What [`Store::get_bounded`] found at a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    Absent,
    Read(Bytes),
    /// Stored with `size` bytes, over `bound` (the one asked for, or the document limit when
    /// that is lower): not read.
    Larger {
        size: u64,
        bound: u64,
    },
}

impl Bounded {
    /// The bytes, when read.
    pub fn read(self) -> Option<Bytes> {
        match self {
            Bounded::Read(b) => Some(b),
            Bounded::Absent | Bounded::Larger { .. } => None,
        }
    }
}

/// Strictly parses the bytes read at `key` into `T`: the one place a stored document becomes
/// a type, and a document that does not parse is [`StoreError::BadDocument`] naming the key.
pub fn parse_stored<T: DeserializeOwned>(
    key: &Key,
    bytes: &[u8],
    limit: u64,
) -> Result<T, StoreError> {
    seal_core::json::parse_as(bytes, limit).map_err(|e| StoreError::BadDocument {
        key: key.clone(),
        detail: e.to_string(),
    })
}

// Inline, so that the store layer's set of files stays as tests/it/architecture.rs lists it.
pub mod crash {
    //! Crash points for tests (docs/DESIGN.md §2, "Crash safety"): a debug build can be told to
    //! die by `SIGKILL` right after its N-th state-changing store write, so that a test can kill a
    //! process at every write of a run and check that the next process finishes it.
    //!
    //! - `SEAL_TEST_CRASH_AFTER_WRITE=N`: die after the N-th counted write of this process;
    //!   `key:GLOB#n` after the n-th counted write whose key matches `GLOB` (`*` matches within one
    //!   segment, `**` any rest), `#n` optional (default 1).
    //! - `SEAL_TEST_WRITE_LOG=PATH`: every counted write is appended as `n\tkey\n` (one `write(2)`
    //!   on an `O_APPEND` file, so it is on disk before any kill), the crash as `CRASH\tn\tkey\n`.
    //!
    //! Counted: a create-only put that created its object (an identical object found is no new
    //! state), a large blob linked into place, a removal of a log object. Never counted: the
    //! private in-memory stores (an import's staging area, `memory://`).
    //!
    //! Compiled only with debug assertions: in the shipped `--release` binary [`after_write`] is
    //! empty and the variables mean nothing (docs/DECISIONS.md, "Crash points only in debug
    //! builds"). `SIGKILL` and not `abort()`: exactly what `kill -9` does (no destructors, no
    //! flush, no core dump).

    use crate::Key;

    /// The spec variable (see the module doc).
    pub const CRASH_ENV: &str = "SEAL_TEST_CRASH_AFTER_WRITE";
    /// The write log variable (see the module doc).
    pub const WRITE_LOG_ENV: &str = "SEAL_TEST_WRITE_LOG";

    /// Called after every counted write: logs it and dies when it is the armed crash point.
    #[inline]
    pub(crate) fn after_write(key: &Key) {
        #[cfg(debug_assertions)]
        armed::after_write(key.as_str());
        #[cfg(not(debug_assertions))]
        let _ = key;
    }

    /// Whether `glob` matches `key`: segments compared one by one, `*` matches any one segment
    /// (or any text where it is part of a segment's pattern, as a prefix/suffix wildcard), `**`
    /// matches every remaining segment.
    pub fn glob_matches(glob: &str, key: &str) -> bool {
        let mut keys = key.split('/');
        for pat in glob.split('/') {
            if pat == "**" {
                return true;
            }
            let Some(seg) = keys.next() else {
                return false;
            };
            if !segment_matches(pat, seg) {
                return false;
            }
        }
        keys.next().is_none()
    }

    fn segment_matches(pat: &str, seg: &str) -> bool {
        match pat.split_once('*') {
            None => pat == seg,
            Some((head, tail)) => {
                seg.len() >= head.len() + tail.len() && seg.starts_with(head) && seg.ends_with(tail)
            }
        }
    }

    #[cfg(debug_assertions)]
    mod armed {
        use std::io::Write;
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::{Mutex, OnceLock};

        /// Where to die.
        enum Point {
            Nth(u64),
            Key { glob: String, nth: u64 },
        }

        struct Armed {
            point: Option<Point>,
            log: Option<std::path::PathBuf>,
        }

        static ARMED: OnceLock<Armed> = OnceLock::new();
        static WRITES: AtomicU64 = AtomicU64::new(0);
        /// Counted matches of a `key:` point; under a lock so that the n-th match is exactly one.
        static MATCHES: Mutex<u64> = Mutex::new(0);

        fn parse(spec: &str) -> Option<Point> {
            if let Some(rest) = spec.strip_prefix("key:") {
                let (glob, nth) = match rest.rsplit_once('#') {
                    Some((g, n)) => (g, n.parse().ok()?),
                    None => (rest, 1),
                };
                return Some(Point::Key {
                    glob: glob.to_string(),
                    nth,
                });
            }
            spec.parse().ok().map(Point::Nth)
        }

        fn armed() -> &'static Armed {
            ARMED.get_or_init(|| Armed {
                point: std::env::var(super::CRASH_ENV).ok().and_then(|s| parse(&s)),
                log: std::env::var_os(super::WRITE_LOG_ENV).map(Into::into),
            })
        }

        fn log_line(path: &std::path::Path, line: &str) {
            // Best effort: a test that asked for the log reads it; a failed write shows there.
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }

        pub(super) fn after_write(key: &str) {
            let armed = armed();
            if armed.point.is_none() && armed.log.is_none() {
                return;
            }
            let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some(path) = &armed.log {
                log_line(path, &format!("{n}\t{key}\n"));
            }
            let die = match &armed.point {
                None => false,
                Some(Point::Nth(at)) => n == *at,
                Some(Point::Key { glob, nth }) => {
                    super::glob_matches(glob, key) && {
                        let mut seen = MATCHES.lock().unwrap_or_else(|p| p.into_inner());
                        *seen += 1;
                        *seen == *nth
                    }
                }
            };
            if die {
                if let Some(path) = &armed.log {
                    log_line(path, &format!("CRASH\t{n}\t{key}\n"));
                }
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
                // SIGKILL cannot be caught; should the kill itself fail, still never go on.
                std::process::abort();
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::glob_matches;

        #[test]
        fn globs_match_whole_segments() {
            assert!(glob_matches(
                "runs/*/seal.dsse.json",
                "runs/r-1/seal.dsse.json"
            ));
            assert!(!glob_matches(
                "runs/*/seal.dsse.json",
                "runs/r-1/roll-1/seal.dsse.json"
            ));
            assert!(glob_matches("runs/**", "runs/r-1/roll-1/x.json"));
            assert!(glob_matches(
                "runs/*/roll-*/judge-a/attempt-1/meta.json",
                "runs/r/roll-2/judge-a/attempt-1/meta.json"
            ));
            assert!(!glob_matches("log/entries/*", "log/checkpoints/1"));
        }
    }
}
