//! The `file://` backend: seal's durable create-only writes ([`durable`]), direct reads that
//! refuse anything but a regular file ([`read`]), the listing walk that reports what seal could
//! not have written, and `object_store`'s `LocalFileSystem` for what is the same on every
//! backend (large-blob uploads, create-only copies, deletes, the top-level run listing).
//!
//! One decision: every blocking call of an operation runs as one task of the blocking pool
//! (one hop for open, stat and read together), or on the calling thread when the caller asked
//! for it ([`FileBackend::with_direct_io`]) because it is on a thread of its own already.

pub(crate) mod durable;
pub(crate) mod read;

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::ObjectStore;
use std::path::PathBuf;
use std::sync::Arc;

use crate::object;
use crate::{Key, Listing, StoreError};
use seal_core::canonical::Hash;

/// Which creates return before their new name is durable (once their bytes are, and the name
/// visible), leaving it to the next flush of the filesystem ([`durable::Name::ByNextFlush`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Names {
    /// None: every create returns once its name is durable.
    OnPut,
    /// A run's documents before its seal and their receipts ([`Key::precedes_its_seal`]):
    /// the seal is put only after them, and the flush before its rename covers their names.
    BySeal,
}

/// A `file://` store: its root folder and how its blocking calls run.
#[derive(Clone)]
pub(crate) struct FileBackend {
    root: PathBuf,
    /// Blocking calls run on the calling thread ([`FileBackend::with_direct_io`]).
    direct: bool,
    /// How a write is made durable ([`durable::Flush`]).
    flush: durable::Flush,
    /// Which creates leave their new name for a later flush to make durable.
    names: Names,
    /// The same folder through `object_store` (`LocalFileSystem`, with fsync).
    local: Arc<dyn ObjectStore>,
}

impl FileBackend {
    pub(crate) fn new(
        root: PathBuf,
        flush: durable::Flush,
        local: Arc<dyn ObjectStore>,
    ) -> FileBackend {
        FileBackend {
            root,
            direct: false,
            flush,
            names: Names::OnPut,
            local,
        }
    }

    /// The same backend, whose reads (get, hash, exists, listings) run on the calling thread
    /// instead of the blocking pool. Only for callers on a thread of their own already (one
    /// blocking task per verified run): on an async worker it would stall the other tasks.
    pub(crate) fn with_direct_io(mut self) -> FileBackend {
        self.direct = true;
        self
    }

    /// The same backend, whose creates leave their new name to a later flush as `names` says.
    pub(crate) fn with_names(mut self, names: Names) -> FileBackend {
        self.names = names;
        self
    }

    /// Makes every name this process created on the store's filesystem so far durable: one
    /// group flush (nothing on a per-object store, whose creates are durable already).
    pub(crate) async fn settle(&self) -> Result<(), StoreError> {
        if self.flush == durable::Flush::PerObject {
            return Ok(());
        }
        self.on_disk("", "flush the store's filesystem", durable::settle)
            .await
    }

    pub(crate) fn objects(&self) -> &dyn ObjectStore {
        self.local.as_ref()
    }

    /// Runs a blocking file operation: here when direct, else as one task of the blocking
    /// pool (one hop for the whole operation).
    async fn on_disk<T, F>(&self, key: &str, op: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PathBuf) -> Result<T, StoreError> + Send + 'static,
    {
        let root = self.root.clone();
        if self.direct {
            return f(root);
        }
        tokio::task::spawn_blocking(move || f(root))
            .await
            .map_err(|e| StoreError::Backend {
                key: key.to_string(),
                op,
                detail: e.to_string(),
            })?
    }

    /// seal's own durable write path ([`durable`]): `true` when this call created the object.
    pub(crate) async fn create(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        let (k, flush) = (key.clone(), self.flush);
        let name = match self.names {
            Names::BySeal if key.precedes_its_seal() => durable::Name::ByNextFlush,
            Names::OnPut | Names::BySeal => durable::Name::Durable,
        };
        self.on_disk(key.as_str(), "create-only put", move |root| {
            durable::create(&root, &k, &bytes, flush, name)
        })
        .await
    }

    pub(crate) async fn read(&self, key: &Key, limit: u64) -> Result<Bytes, StoreError> {
        let k = key.clone();
        self.on_disk(key.as_str(), "read", move |root| {
            read::read(&root, &k, limit)
        })
        .await
    }

    pub(crate) async fn hash(&self, key: &Key) -> Result<(Hash, u64), StoreError> {
        let k = key.clone();
        self.on_disk(key.as_str(), "read", move |root| read::hash(&root, &k))
            .await
    }

    /// Whether the object exists. `object_store`'s HEAD opens the file, and a FIFO there would
    /// block it forever: this answers from the entry's type without opening anything.
    pub(crate) async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        let k = key.clone();
        self.on_disk(key.as_str(), "stat", move |root| read::exists(&root, &k))
            .await
    }

    /// Everything under `dir`, links never followed (see [`walk_file_store`]).
    pub(crate) async fn list(&self, dir: &str) -> Result<Listing, StoreError> {
        let d = dir.to_string();
        let (keys, foreign) = self
            .on_disk(dir, "list", move |root| walk_file_store(&root.join(&d), &d))
            .await?;
        Ok(Listing { keys, foreign })
    }

    /// The log numbers of the regular files directly in `dir` (see [`crate::Store::log_numbers`]).
    pub(crate) async fn log_numbers(&self, dir: &str) -> Result<Vec<u64>, StoreError> {
        let d = dir.to_string();
        self.on_disk(dir, "list", move |root| log_numbers_in(&root.join(&d), &d))
            .await
    }

    /// The object's bytes as a stream; it must be a regular file (a FIFO, device, socket,
    /// directory or link is not something seal wrote, and reading one could hang or never end).
    pub(crate) async fn stream(
        &self,
        key: &Key,
    ) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        match self.exists(key).await? {
            true => object::stream(self.objects(), key).await,
            false => Err(StoreError::NotFound { key: key.clone() }),
        }
    }
}

/// Walks a file store folder without following links (blocking): the keys of its regular
/// files, and every other entry named (symlinks, FIFOs, devices, sockets, names that are not
/// keys). A put's staging file (`<name>#<n>`) is neither.
pub(crate) fn walk_file_store(
    base: &std::path::Path,
    dir: &str,
) -> Result<(Vec<Key>, Vec<String>), StoreError> {
    let mut keys = Vec::new();
    let mut odd = Vec::new();
    let mut stack = vec![(base.to_path_buf(), dir.to_string())];
    while let Some((path, rel)) = stack.pop() {
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(StoreError::Backend {
                    key: rel,
                    op: "list",
                    detail: e.to_string(),
                })
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            let Ok(t) = entry.file_type() else {
                odd.push(format!("{child} (unreadable)"));
                continue;
            };
            if t.is_dir() {
                stack.push((entry.path(), child));
            } else if !t.is_file() {
                odd.push(format!("{child} ({})", file_kind(&t)));
            } else if name.contains('#') {
                // object_store's staging file of a put (`<name>#<n>`), left behind when a
                // process is killed mid-write: never an object, renamed into place or not.
                continue;
            } else {
                match Key::parse(&child) {
                    Ok(k) => keys.push(k),
                    Err(_) => odd.push(format!("{child} (not a valid object key)")),
                }
            }
        }
    }
    keys.sort();
    odd.sort();
    Ok((keys, odd))
}

/// One folder's regular files named by a log number (blocking); a missing folder has none.
fn log_numbers_in(path: &std::path::Path, dir: &str) -> Result<Vec<u64>, StoreError> {
    let error = |e: std::io::Error| StoreError::Backend {
        key: dir.to_string(),
        op: "list",
        detail: e.to_string(),
    };
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error(e)),
    };
    let mut numbers = Vec::new();
    for entry in entries {
        let entry = entry.map_err(error)?;
        // The type from the directory entry: a link, FIFO or folder there is no log object.
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        let number = entry
            .file_name()
            .to_str()
            .and_then(seal_core::key::log_number);
        if let (true, Some(n)) = (regular, number) {
            numbers.push(n);
        }
    }
    Ok(numbers)
}

pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::durable::waits_of;
    use crate::{Key, Store};
    use bytes::Bytes;

    /// Which creates leave their name to a later flush: on a store settled by the seal only a
    /// run's documents before the seal and their receipts (one wait each instead of two); the
    /// log, the leases and the store opened without it stay durable on return. Fails without
    /// the choice in `FileBackend::create` (two waits each).
    #[test]
    fn names_are_left_to_a_later_flush_only_where_the_store_says() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = rt.block_on(Store::open(&url)).unwrap().with_direct_io();
        let waits = |s: &Store, k: &str| {
            let key = Key::parse(k).unwrap();
            let (put, n) = waits_of(|| rt.block_on(s.put(&key, Bytes::from_static(b"{}"))));
            put.unwrap();
            n
        };
        let by_seal = store.clone().with_names_settled_by_seal();
        assert_eq!(waits(&by_seal, "runs/r1/header.json"), 1);
        assert_eq!(waits(&by_seal, "receipts/r1/header.json"), 1);
        assert_eq!(waits(&by_seal, "runs/r1/roll-1/judge-a/parsed.json"), 1);
        assert_eq!(waits(&by_seal, "log/entries/00000000000000000000"), 2);
        assert_eq!(
            waits(&by_seal, "leases/r1/roll-1/judge-a/attempt-1/000000"),
            2
        );
        assert_eq!(waits(&store, "runs/r2/header.json"), 2, "the store itself");
        assert_eq!(waits(&by_seal, "cas/sha256/aa/a.json"), 2);
        let (settled, n) = waits_of(|| rt.block_on(by_seal.settle()));
        settled.unwrap();
        assert_eq!(n, 1, "settle: one flush");
    }
}
