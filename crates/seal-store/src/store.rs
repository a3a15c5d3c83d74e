//! The store facade: [`Store`], one type over every backend, with the guarantees the crate doc
//! lists (create-only puts, verified reads, reserved keys), and what every backend shares.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart,
};
use serde::{de::DeserializeOwned, Serialize};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;

use seal_core::canonical::{self, Hash};
use seal_core::decided::{Decided, Seal};
use seal_core::ids::RunId;

use crate::file::{backend_io, durable, file_kind, read as local, walk_file_store};
use crate::write_set::WriteSet;
use crate::{Key, StoreError, StoreUrl, Stored};

/// Default size limit for a document read into memory (docs/DESIGN.md: 64 MiB, configurable).
pub const DEFAULT_DOC_LIMIT: u64 = 64 * 1024 * 1024;
/// Blobs up to this size are put in one request; larger ones stream as multipart uploads.
const SINGLE_PUT_MAX: usize = 8 * 1024 * 1024;
/// Part size of a streamed upload (S3 needs at least 5 MiB per part).
const PART_SIZE: usize = 8 * 1024 * 1024;
/// How often a create that lost a race re-reads the winner before giving up.
const RACE_REREADS: usize = 5;

/// The store facade. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    url: StoreUrl,
    doc_limit: u64,
    /// A private in-memory staging area ([`Store::staging`]): the only store that takes
    /// arbitrary bytes at reserved keys, because nothing in it is evidence until verified.
    staging: bool,
    /// Reads of a `file://` store run on the calling thread ([`Store::direct_io`]).
    direct: bool,
    /// What this process stored through this open store (`recent`): read only by
    /// [`OwnWrites`], never by the reads of `Store` itself.
    pub(crate) recent: Arc<WriteSet>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url)
    }
}

fn path(key: &Key) -> Path {
    // A Key has no empty, `.` or `..` segment and no character `Path` would encode.
    Path::from(key.as_str())
}

fn backend(key: &Key, op: &'static str, e: object_store::Error) -> StoreError {
    match e {
        object_store::Error::NotFound { .. } => StoreError::NotFound { key: key.clone() },
        other => StoreError::Backend {
            key: key.to_string(),
            op,
            detail: other.to_string(),
        },
    }
}

impl Store {
    /// Opens the store named by `url` (see the module doc for the schemes).
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let url = StoreUrl::parse(url)?;
        let inner = url.build().await?;
        Ok(Store {
            inner,
            url,
            doc_limit: DEFAULT_DOC_LIMIT,
            staging: false,
            direct: false,
            recent: Arc::new(WriteSet::default()),
        })
    }

    /// Opens an existing store for reading: a `file://` folder must already exist (nothing is
    /// created), and `memory://` is refused (a fresh one is always empty).
    pub async fn open_existing(url: &str) -> Result<Store, StoreError> {
        let parsed = StoreUrl::parse(url)?;
        match &parsed {
            StoreUrl::File(p) => {
                seal_core::fsio::require_folder(p).map_err(|e| StoreError::Url {
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

    /// A private, empty in-memory staging area for an import (see `staging`).
    pub fn staging(doc_limit: u64) -> Store {
        Store {
            inner: Arc::new(object_store::memory::InMemory::new()),
            url: StoreUrl::Memory,
            doc_limit,
            staging: true,
            direct: false,
            recent: Arc::new(WriteSet::default()),
        }
    }

    /// Puts bytes from an archive into a staging area, reserved keys included. Refused on
    /// any other store: outside bytes reach a real store only through [`Store::import_from`]
    /// after verification.
    pub async fn put_staged(&self, key: &Key, bytes: Bytes) -> Result<Stored, StoreError> {
        if !self.staging {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        self.create(key, bytes).await
    }

    /// Sets the size limit for documents read into memory.
    pub fn with_doc_limit(mut self, limit: u64) -> Store {
        self.doc_limit = limit;
        self
    }

    /// The same store, whose `file://` reads (get, hash, exists, listing a run folder) run on
    /// the calling thread instead of the blocking pool. Only for callers that are on a thread
    /// of their own already, such as one blocking task per verified run: on an async worker
    /// it would stall the other tasks. Other backends are unchanged.
    pub fn direct_io(mut self) -> Store {
        self.direct = true;
        self
    }

    /// Runs a blocking file operation: here when [`Store::direct_io`], else as one task of
    /// the blocking pool (one hop for the whole operation).
    async fn on_disk<T, F>(&self, key: &str, op: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, StoreError> + Send + 'static,
    {
        if self.direct {
            return f();
        }
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| StoreError::Backend {
                key: key.to_string(),
                op,
                detail: e.to_string(),
            })?
    }

    fn file_root(&self) -> Option<&std::path::Path> {
        match &self.url {
            StoreUrl::File(root) => Some(root.as_path()),
            _ => None,
        }
    }

    pub fn doc_limit(&self) -> u64 {
        self.doc_limit
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Puts exact bytes at `key`, create-only (see the module doc).
    pub async fn put_bytes(&self, key: &Key, bytes: Bytes) -> Result<Stored, StoreError> {
        if key.is_reserved() {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        self.create(key, bytes).await
    }

    /// Puts the canonical bytes of `doc` at `key`, create-only.
    pub async fn put_json<T: Serialize + ?Sized>(
        &self,
        key: &Key,
        doc: &T,
    ) -> Result<Stored, StoreError> {
        let bytes = canonical::canonical_bytes(doc).map_err(|source| StoreError::Canonical {
            key: key.clone(),
            source,
        })?;
        self.put_bytes(key, Bytes::from(bytes)).await
    }

    /// Writes `runs/<id>/evidence.json`. Only a [`Decided`] document can be written there, and
    /// only the postguard can make one. Returns whether this call created the object (false:
    /// identical bytes were there).
    pub async fn put_decided(&self, decided: &Decided) -> Result<(Stored, bool), StoreError> {
        let key = Key::evidence(decided.run());
        self.create_reporting(&key, decided.bytes().clone()).await
    }

    /// Writes `runs/<id>/seal.dsse.json`, which only the postguard can make.
    pub async fn put_seal(&self, seal: &Seal) -> Result<(Stored, bool), StoreError> {
        let key = Key::seal(seal.run());
        self.create_reporting(&key, seal.bytes().clone()).await
    }

    /// Like [`Store::put_bytes`], and says whether this call created the object.
    pub async fn put_bytes_reporting(
        &self,
        key: &Key,
        bytes: Bytes,
    ) -> Result<(Stored, bool), StoreError> {
        if key.is_reserved() {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        self.create_reporting(key, bytes).await
    }

    /// Removes an object of the transparency log's entries or checkpoints: the one exception to
    /// "nothing is deleted", for `seal log rebuild`, which has copied it under `log/superseded/`
    /// first (docs/DESIGN.md §13). Refused for every other key. Absent already is success.
    pub async fn remove_log_object(&self, key: &Key) -> Result<(), StoreError> {
        let under = |dir: &str| {
            key.as_str()
                .strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'))
        };
        if !under(seal_core::key::LOG_ENTRIES) && !under(seal_core::key::LOG_CHECKPOINTS) {
            return Err(StoreError::Backend {
                key: key.to_string(),
                op: "delete",
                detail: "only log entries and checkpoints are ever removed".into(),
            });
        }
        match self.inner.delete(&path(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(backend(key, "delete", e)),
        }
    }

    /// Copies an object, reserved keys included, from a staging area byte for byte (importing
    /// archived runs; the engine's import calls it only for the keys of a run that verified there).
    /// Nothing is decided here: it takes no bytes from the caller, only what the staging area
    /// holds.
    pub async fn import_from(&self, from: &Store, key: &Key) -> Result<Stored, StoreError> {
        if !from.staging {
            return Err(StoreError::Reserved { key: key.clone() });
        }
        let bytes = from.get_unbounded(key).await?;
        self.create(key, bytes).await
    }

    /// Reads a whole object whatever its size (staging areas only hold what an import read
    /// through its own limits).
    async fn get_unbounded(&self, key: &Key) -> Result<Bytes, StoreError> {
        let r = self.inner.get_opts(&path(key), GetOptions::default()).await;
        let r = r.map_err(|e| backend(key, "get", e))?;
        r.bytes().await.map_err(|e| backend(key, "read", e))
    }

    async fn create(&self, key: &Key, bytes: Bytes) -> Result<Stored, StoreError> {
        self.create_reporting(key, bytes).await.map(|(s, _)| s)
    }

    async fn create_reporting(
        &self,
        key: &Key,
        bytes: Bytes,
    ) -> Result<(Stored, bool), StoreError> {
        let hash = Hash::of(&bytes);
        self.create_recorded(key, bytes, hash).await
    }

    /// Create-only put of bytes whose hash the caller already computed.
    async fn create_hashed(
        &self,
        key: &Key,
        bytes: Bytes,
        hash: Hash,
    ) -> Result<(Stored, bool), StoreError> {
        let size = bytes.len() as u64;
        let created = match self.file_root() {
            // seal's own durable write path (`durable`), on the calling thread or one hop.
            Some(root) => {
                let (root, k) = (root.to_path_buf(), key.clone());
                self.on_disk(key.as_str(), "create-only put", move || {
                    durable::create(&root, &k, &bytes)
                })
                .await?
            }
            None => {
                let opts = PutOptions {
                    mode: PutMode::Create,
                    ..Default::default()
                };
                match self
                    .inner
                    .put_opts(&path(key), PutPayload::from(bytes), opts)
                    .await
                {
                    Ok(_) => true,
                    Err(object_store::Error::AlreadyExists { .. })
                    | Err(object_store::Error::Precondition { .. }) => false,
                    Err(e) => return Err(backend(key, "create-only put", e)),
                }
            }
        };
        if !created {
            return self
                .settle_existing(key, hash, size)
                .await
                .map(|s| (s, false));
        }
        let stored = Stored {
            key: key.clone(),
            hash,
            size,
        };
        Ok((stored, true))
    }

    /// A create found the key taken: same bytes is success, other bytes a conflict.
    async fn settle_existing(
        &self,
        key: &Key,
        hash: Hash,
        size: u64,
    ) -> Result<Stored, StoreError> {
        for _ in 0..RACE_REREADS {
            match self.hash_object(key).await {
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

    /// Streams a blob into `cas/sha256/<aa>/<hex>`, hashing as it goes; memory stays bounded
    /// by the part size whatever the blob size. With `expected`, bytes that hash otherwise are
    /// refused and nothing is kept. At most `limit` bytes are accepted.
    pub async fn put_blob<S, E>(
        &self,
        stream: S,
        expected: Option<&Hash>,
        limit: u64,
    ) -> Result<Stored, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let mut stream = stream;
        let mut tally = Tally {
            hasher: Sha256::new(),
            size: 0,
            limit,
        };
        let mut head = BytesMut::new();
        // Small blobs: buffer, then one create-only put.
        if read_head(&mut stream, &mut tally, &mut head).await? {
            let hash = Hash::from_hasher(tally.hasher);
            check_expected(expected, &hash)?;
            return self
                .create_recorded(&Key::cas(&hash), head.freeze(), hash.clone())
                .await
                .map(|(s, _)| s);
        }
        // Large blobs: stream to a unique staging key, then link it into place create-only.
        let staging = Key::upload(rand::random());
        self.upload_staging(&staging, head.freeze(), &mut stream, &mut tally)
            .await?;
        let Tally { hasher, size, .. } = tally;
        let result = self
            .link_staged(&staging, Hash::from_hasher(hasher), size, expected)
            .await;
        // Staging objects are scratch space, not evidence: removing them rewrites nothing.
        let _ = self.inner.delete(&path(&staging)).await;
        self.recorded_link(result)
    }

    /// Streams the rest of a large blob to `staging` as one multipart upload, `head` first.
    /// A failed stream aborts the upload.
    async fn upload_staging<S, E>(
        &self,
        staging: &Key,
        head: Bytes,
        stream: &mut S,
        tally: &mut Tally,
    ) -> Result<(), StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let upload = self
            .inner
            .put_multipart(&path(staging))
            .await
            .map_err(|e| backend(staging, "start multipart upload", e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
        writer.put(head);
        let streamed: Result<(), StoreError> = async {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| StoreError::Upload(e.to_string()))?;
                tally.add(&chunk)?;
                writer
                    .wait_for_capacity(2)
                    .await
                    .map_err(|e| backend(staging, "upload part", e))?;
                writer.put(chunk);
            }
            Ok(())
        }
        .await;
        if let Err(e) = streamed {
            let _ = writer.abort().await;
            return Err(e);
        }
        writer
            .finish()
            .await
            .map_err(|e| backend(staging, "finish multipart upload", e))?;
        Ok(())
    }

    /// Links an uploaded staging object into place at its CAS key, create-only.
    async fn link_staged(
        &self,
        staging: &Key,
        hash: Hash,
        size: u64,
        expected: Option<&Hash>,
    ) -> Result<Stored, StoreError> {
        check_expected(expected, &hash)?;
        let key = Key::cas(&hash);
        let linked_ours = match self
            .inner
            .copy_if_not_exists(&path(staging), &path(&key))
            .await
        {
            Ok(()) => true,
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => false,
            Err(e) => return Err(backend(&key, "create-only copy", e)),
        };
        // A local hard link is the very file just hashed; anything else (someone else's
        // object, a server-side copy) is re-hashed: a CAS key must hash to its name.
        if linked_ours && matches!(self.url, StoreUrl::File(_)) {
            return Ok(Stored { key, hash, size });
        }
        let stored_size = self.verify(&key, &hash).await?;
        Ok(Stored {
            key,
            hash,
            size: stored_size,
        })
    }

    /// Streams an object without holding it (for copies between stores).
    /// Opens an object for reading. On a file store the object must be a regular file: a
    /// FIFO, device, socket, directory or symlink in the store is not something seal wrote,
    /// and reading one could hang or never end (its stat size says nothing).
    async fn open_object(&self, key: &Key) -> Result<object_store::GetResult, StoreError> {
        if let StoreUrl::File(_) = &self.url {
            self.regular_file(key).await?;
        }
        let r = self.inner.get_opts(&path(key), GetOptions::default()).await;
        r.map_err(|e| backend(key, "get", e))
    }

    /// On a file store: the object is a regular file (not followed if a link), else
    /// [`StoreError::NotRegular`] or [`StoreError::NotFound`].
    async fn regular_file(&self, key: &Key) -> Result<(), StoreError> {
        let StoreUrl::File(root) = &self.url else {
            return Ok(());
        };
        match tokio::fs::symlink_metadata(root.join(key.as_str())).await {
            Ok(m) if m.file_type().is_file() => Ok(()),
            Ok(m) => Err(StoreError::NotRegular {
                key: key.clone(),
                kind: file_kind(&m.file_type()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::NotFound { key: key.clone() })
            }
            Err(e) => Err(backend_io(key, "stat", e)),
        }
    }

    pub async fn get_stream(
        &self,
        key: &Key,
    ) -> Result<futures::stream::BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        let r = self.open_object(key).await?;
        let key = key.clone();
        Ok(r.into_stream()
            .map_err(move |e| backend(&key, "read", e))
            .boxed())
    }

    /// Reads a whole object (at most the document limit) into memory.
    pub async fn get(&self, key: &Key) -> Result<Bytes, StoreError> {
        if let Some(root) = self.file_root() {
            let (root, k, limit) = (root.to_path_buf(), key.clone(), self.doc_limit);
            return self
                .on_disk(key.as_str(), "read", move || local::read(&root, &k, limit))
                .await;
        }
        let r = self.open_object(key).await?;
        if r.meta.size > self.doc_limit {
            return Err(StoreError::TooLarge {
                key: key.to_string(),
                size: r.meta.size,
                limit: self.doc_limit,
            });
        }
        r.bytes().await.map_err(|e| backend(key, "read", e))
    }

    /// Like [`Store::get`], `None` when absent.
    pub async fn get_opt(&self, key: &Key) -> Result<Option<Bytes>, StoreError> {
        match self.get(key).await {
            Ok(b) => Ok(Some(b)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads an object and checks it hashes to `expected`.
    pub async fn get_verified(&self, key: &Key, expected: &Hash) -> Result<Bytes, StoreError> {
        let bytes = self.get(key).await?;
        let actual = Hash::of(&bytes);
        if &actual != expected {
            return Err(StoreError::HashMismatch {
                key: key.clone(),
                expected: expected.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Streams an object through SHA-256 without keeping it; returns its size.
    pub async fn verify(&self, key: &Key, expected: &Hash) -> Result<u64, StoreError> {
        let (actual, size) = self.hash_object(key).await?;
        if &actual != expected {
            return Err(StoreError::HashMismatch {
                key: key.clone(),
                expected: expected.clone(),
                actual,
            });
        }
        Ok(size)
    }

    /// Streams an object through SHA-256: its hash and size.
    pub async fn hash_object(&self, key: &Key) -> Result<(Hash, u64), StoreError> {
        if let Some(root) = self.file_root() {
            let (root, k) = (root.to_path_buf(), key.clone());
            return self
                .on_disk(key.as_str(), "read", move || local::hash(&root, &k))
                .await;
        }
        let r = self.open_object(key).await?;
        // Local files took the direct path above; other backends stream.
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut s = r.into_stream().map_err(|e| backend(key, "read", e));
        while let Some(chunk) = s.try_next().await? {
            size += chunk.len() as u64;
            hasher.update(&chunk);
        }
        Ok((Hash::from_hasher(hasher), size))
    }

    /// Reads and strictly parses a JSON document; `None` when absent.
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

    pub async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        // On a file store, object_store's HEAD opens the file: a FIFO there would block it
        // forever. The regular-file check of reads answers without opening anything.
        if let Some(root) = self.file_root() {
            let (root, k) = (root.to_path_buf(), key.clone());
            return self
                .on_disk(key.as_str(), "stat", move || local::exists(&root, &k))
                .await;
        }
        match self.inner.head(&path(key)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(backend(key, "head", e)),
        }
    }

    /// Every run id with a folder under `runs/`, sorted.
    pub async fn list_runs(&self) -> Result<Vec<RunId>, StoreError> {
        Ok(self.list_run_folders().await?.0)
    }

    /// Everything under `dir`: the keys of objects, and the entries that are not objects seal
    /// could have written (on a file store: symlinks, FIFOs, devices, sockets, names that are
    /// not valid keys), each named, so that an audit can report them instead of skipping them.
    pub async fn list_everything(&self, dir: &str) -> Result<(Vec<Key>, Vec<String>), StoreError> {
        let StoreUrl::File(root) = &self.url else {
            return Ok((self.list(dir).await?, Vec::new()));
        };
        let base = root.join(dir);
        let dir_owned = dir.to_string();
        self.on_disk(dir, "list", move || walk_file_store(&base, &dir_owned))
            .await
    }

    /// Every folder under `runs/`: the valid run ids, and the names that are not (listed so
    /// that an auditor sees every folder it could not verify).
    pub async fn list_run_folders(&self) -> Result<(Vec<RunId>, Vec<String>), StoreError> {
        let prefix = Path::from("runs");
        let listing = self
            .inner
            .list_with_delimiter(Some(&prefix))
            .await
            .map_err(|e| StoreError::Backend {
                key: "runs/".into(),
                op: "list",
                detail: e.to_string(),
            })?;
        let mut runs = Vec::new();
        let mut invalid = Vec::new();
        let names = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_owned))
            .chain(
                listing
                    .objects
                    .iter()
                    .filter_map(|o| o.location.filename().map(str::to_owned)),
            );
        for name in names {
            match RunId::parse(&name) {
                Ok(r) => runs.push(r),
                Err(_) => invalid.push(name.chars().take(200).collect()),
            }
        }
        runs.sort();
        invalid.sort();
        Ok((runs, invalid))
    }

    /// Every key under a folder (recursive), sorted.
    pub async fn list(&self, dir: &str) -> Result<Vec<Key>, StoreError> {
        let prefix = Path::from(dir);
        let mut keys: Vec<Key> = self
            .inner
            .list(Some(&prefix))
            .map_ok(|m| m.location.to_string())
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| StoreError::Backend {
                key: dir.to_string(),
                op: "list",
                detail: e.to_string(),
            })?
            .into_iter()
            .filter_map(|s| Key::parse(&s).ok())
            .collect();
        keys.sort();
        Ok(keys)
    }
}

/// The write set of this open store: what its puts recorded (see [`crate::write_set`]).
impl Store {
    /// A create-only put (see `create_hashed`) whose success is recorded in the write set.
    async fn create_recorded(
        &self,
        key: &Key,
        bytes: Bytes,
        hash: Hash,
    ) -> Result<(Stored, bool), StoreError> {
        let held = bytes.clone();
        let done = self.create_hashed(key, bytes, hash).await?;
        self.recent.record(key, &done.0.hash, &held);
        Ok(done)
    }

    /// Records a large blob linked into place (hash and size only).
    fn recorded_link(&self, linked: Result<Stored, StoreError>) -> Result<Stored, StoreError> {
        if let Ok(s) = &linked {
            self.recent.record_hash(&s.key, &s.hash, s.size);
        }
        linked
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

/// The hash and size of a blob as it streams in; past `limit` bytes it is refused.
struct Tally {
    hasher: Sha256,
    size: u64,
    limit: u64,
}

impl Tally {
    fn add(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        self.size += chunk.len() as u64;
        if self.size > self.limit {
            return Err(StoreError::TooLarge {
                key: "blob".into(),
                size: self.size,
                limit: self.limit,
            });
        }
        self.hasher.update(chunk);
        Ok(())
    }
}

/// Buffers the start of a blob into `head`: `true` when the stream ended there (the whole
/// blob is in `head`), `false` as soon as `head` is over [`SINGLE_PUT_MAX`].
async fn read_head<S, E>(
    stream: &mut S,
    tally: &mut Tally,
    head: &mut BytesMut,
) -> Result<bool, StoreError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    loop {
        match stream.next().await {
            None => return Ok(true),
            Some(Err(e)) => return Err(StoreError::Upload(e.to_string())),
            Some(Ok(chunk)) => {
                tally.add(&chunk)?;
                head.extend_from_slice(&chunk);
                if head.len() > SINGLE_PUT_MAX {
                    return Ok(false);
                }
            }
        }
    }
}

fn check_expected(expected: Option<&Hash>, actual: &Hash) -> Result<(), StoreError> {
    match expected {
        Some(e) if e != actual => Err(StoreError::HashMismatch {
            key: Key::cas(e),
            expected: e.clone(),
            actual: actual.clone(),
        }),
        _ => Ok(()),
    }
}

/// Random lowercase hex, for unique scratch names and session salts.
pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}
