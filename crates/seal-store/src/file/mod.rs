//! The `file://` backend: seal's durable create-only writes ([`durable`]), direct reads that
//! refuse anything but a regular file ([`read`]), the listing walk that reports what seal could
//! not have written, removals and streams, every path resolved beneath the store's root without
//! following a link on any component ([`beneath`]); `object_store`'s `LocalFileSystem` only for
//! the large-blob upload to its scratch key (see [`FileBackend::link_upload`]).
//!
//! One decision: every blocking call of an operation runs as one task of the blocking pool
//! (one hop for open, stat and read together), or on the calling thread when the caller asked
//! for it ([`FileBackend::with_direct_io`]) because it is on a thread of its own already.

pub(crate) mod beneath;
pub(crate) mod durable;
pub(crate) mod read;
#[cfg(test)]
mod swapped;

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::ObjectStore;
use std::sync::Arc;

use beneath::{kind_name, Root, Walk};
use rustix::fs::{AtFlags, FileType};

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
    /// The root folder, held open: every path is resolved beneath it ([`beneath`]).
    root: Arc<Root>,
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
        root: &std::path::Path,
        flush: durable::Flush,
        local: Arc<dyn ObjectStore>,
    ) -> std::io::Result<FileBackend> {
        Ok(FileBackend {
            root: Arc::new(Root::open(root)?),
            direct: false,
            flush,
            names: Names::OnPut,
            local,
        })
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
        self.on_disk("", "flush the store's filesystem", |root| {
            durable::settle(&root)
        })
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
        F: FnOnce(Arc<Root>) -> Result<T, StoreError> + Send + 'static,
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
            .on_disk(dir, "list", move |root| walk_file_store(&root, &d))
            .await?;
        Ok(Listing { keys, foreign })
    }

    /// The numbers the regular files directly in `dir` are named by (see
    /// [`crate::Store::numbered`]).
    pub(crate) async fn numbered(&self, dir: &str) -> Result<Vec<u64>, StoreError> {
        let d = dir.to_string();
        self.on_disk(dir, "list", move |root| numbered_in(&root, &d))
            .await
    }

    /// The object's bytes as a stream; it must be a regular file (a FIFO, device, socket,
    /// directory or link is not something seal wrote, and reading one could hang or never end),
    /// opened beneath the root as every read is.
    pub(crate) async fn stream(
        &self,
        key: &Key,
    ) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        use futures::StreamExt;
        use tokio::io::AsyncReadExt;
        let k = key.clone();
        let (file, _) = self
            .on_disk(key.as_str(), "open", move |root| read::open(&root, &k))
            .await?;
        let file = tokio::fs::File::from_std(file);
        let key = key.clone();
        let chunks = futures::stream::unfold(Some(file), move |file| {
            let key = key.clone();
            async move {
                let mut file = file?;
                let mut buf = bytes::BytesMut::with_capacity(STREAM_CHUNK);
                match file.read_buf(&mut buf).await {
                    Ok(0) => None,
                    Ok(_) => Some((Ok(buf.freeze()), Some(file))),
                    Err(e) => Some((
                        Err(StoreError::Backend {
                            key: key.to_string(),
                            op: "read",
                            detail: e.to_string(),
                        }),
                        None,
                    )),
                }
            }
        });
        Ok(chunks.boxed())
    }

    /// Removes the object `key`; absent already is success. The
    /// name is unlinked in its folder reached beneath the root: a folder swapped for a link is
    /// refused, and nothing outside the store is ever removed.
    pub(crate) async fn remove(&self, key: &Key) -> Result<(), StoreError> {
        let k = key.clone();
        self.on_disk(key.as_str(), "delete", move |root| {
            let (dir, name) = beneath::split(k.as_str());
            let fd = match root.dir(dir) {
                Ok(fd) => fd,
                Err(Walk::Missing) => return Ok(()),
                Err(w) => return Err(w.into_store(k.as_str(), "delete")),
            };
            match rustix::fs::unlinkat(&fd, name, AtFlags::empty()) {
                Ok(()) => Ok(()),
                Err(e) if e == rustix::io::Errno::NOENT => Ok(()),
                Err(e) => Err(StoreError::Backend {
                    key: k.to_string(),
                    op: "delete",
                    detail: std::io::Error::from(e).to_string(),
                }),
            }
        })
        .await
    }

    /// The names directly in the folder `dir` (every entry but a put's staging file), without
    /// following a link to it.
    pub(crate) async fn names(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        let d = dir.to_string();
        self.on_disk(dir, "list", move |root| {
            let mut names = Vec::new();
            for_each_entry(&root, &d, |name, _| {
                if !name.contains('#') {
                    names.push(name.to_string());
                }
                Ok(())
            })?;
            Ok(names)
        })
        .await
    }

    /// Links a large blob uploaded to `scratch` into place at `to`, create-only: `true` when
    /// this call created it. A hard link between two folders reached beneath the root (a link
    /// on the way to either is refused), then the flush that makes the name durable.
    pub(crate) async fn link_upload(&self, scratch: &Key, to: &Key) -> Result<bool, StoreError> {
        let (from, k, flush) = (scratch.clone(), to.clone(), self.flush);
        self.on_disk(to.as_str(), "create-only copy", move |root| {
            durable::link(&root, &from, &k, flush)
        })
        .await
    }
}

/// A large blob's upload being written to its scratch key (see [`FileBackend::scratch`]).
pub(crate) struct Scratch {
    key: Key,
    file: Option<std::fs::File>,
}

impl Scratch {
    /// Appends `bytes` (on the blocking pool).
    pub(crate) async fn write(&mut self, bytes: Bytes) -> Result<(), StoreError> {
        self.blocking("write", move |f| {
            use std::io::Write;
            f.write_all(&bytes)
        })
        .await
    }

    /// Makes the written bytes durable before any name points at them.
    pub(crate) async fn finish(&mut self) -> Result<(), StoreError> {
        self.blocking("fsync", |f| f.sync_data()).await
    }

    async fn blocking(
        &mut self,
        op: &'static str,
        f: impl FnOnce(&mut std::fs::File) -> std::io::Result<()> + Send + 'static,
    ) -> Result<(), StoreError> {
        let error = |detail: String| StoreError::Backend {
            key: self.key.to_string(),
            op,
            detail,
        };
        let Some(mut file) = self.file.take() else {
            return Err(error("an earlier write failed".into()));
        };
        let (file, done) = tokio::task::spawn_blocking(move || {
            let done = f(&mut file);
            (file, done)
        })
        .await
        .map_err(|e| error(e.to_string()))?;
        done.map_err(|e| error(e.to_string()))?;
        self.file = Some(file);
        Ok(())
    }
}

impl FileBackend {
    /// Creates the scratch object `key` of a large blob's upload (`tmp/uploads/…`), create-only,
    /// beneath the root as every write is.
    pub(crate) async fn scratch(&self, key: &Key) -> Result<Scratch, StoreError> {
        let (k, per_object) = (key.clone(), self.flush == durable::Flush::PerObject);
        let file = self
            .on_disk(key.as_str(), "create upload", move |root| {
                let (dir, name) = beneath::split(k.as_str());
                let (fd, made) = root
                    .dir_made(dir, per_object)
                    .map_err(|w| w.into_store(k.as_str(), "create folder"))?;
                durable::count_dir_syncs(made.synced);
                let flags = rustix::fs::OFlags::WRONLY
                    | rustix::fs::OFlags::CREATE
                    | rustix::fs::OFlags::EXCL
                    | rustix::fs::OFlags::NOFOLLOW
                    | rustix::fs::OFlags::CLOEXEC;
                rustix::fs::openat(&fd, name, flags, rustix::fs::Mode::from_raw_mode(0o666))
                    .map(std::fs::File::from)
                    .map_err(|e| StoreError::Backend {
                        key: k.to_string(),
                        op: "create upload",
                        detail: std::io::Error::from(e).to_string(),
                    })
            })
            .await?;
        Ok(Scratch {
            key: key.clone(),
            file: Some(file),
        })
    }
}

/// Bytes read a step by [`FileBackend::stream`].
const STREAM_CHUNK: usize = 256 * 1024;

/// Calls `f` with the name and type of every entry of the folder `dir` (a missing folder has
/// none), reached beneath the root without following a link; a link on the way is refused.
fn for_each_entry(
    root: &Root,
    dir: &str,
    mut f: impl FnMut(&str, FileType) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let error = |e: rustix::io::Errno| StoreError::Backend {
        key: dir.to_string(),
        op: "list",
        detail: std::io::Error::from(e).to_string(),
    };
    let fd = match root.dir(dir) {
        Ok(fd) => fd,
        Err(Walk::Missing) => return Ok(()),
        Err(w) => return Err(w.into_store(dir, "list")),
    };
    let mut entries = rustix::fs::Dir::new(fd).map_err(error)?;
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(error)?;
        let Ok(name) = entry.file_name().to_str() else {
            f(&entry.file_name().to_string_lossy(), FileType::Unknown)?;
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let mut t = entry.file_type();
        if t == FileType::Unknown {
            // A filesystem that does not fill in the type: ask, without following a link.
            let fd = entries.fd().map_err(error)?;
            t = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))
                .unwrap_or(FileType::Unknown);
        }
        f(name, t)?;
    }
    Ok(())
}

/// Walks a file store folder without following links (blocking): the keys of its regular
/// files, and every other entry named (symlinks, FIFOs, devices, sockets, names that are not
/// keys). A put's staging file (`<name>#<n>`) is neither. Each folder is opened beneath the
/// root ([`beneath`]): the folder listed swapped for a link is refused, a link inside it named.
pub(crate) fn walk_file_store(
    root: &Root,
    dir: &str,
) -> Result<(Vec<Key>, Vec<String>), StoreError> {
    let mut keys = Vec::new();
    let mut odd = Vec::new();
    let mut stack = vec![dir.to_string()];
    while let Some(rel) = stack.pop() {
        let listed = for_each_entry(root, &rel, |name, t| {
            let child = format!("{rel}/{name}");
            match t {
                FileType::Directory => stack.push(child),
                FileType::RegularFile if name.contains('#') => {
                    // object_store's staging file of a put (`<name>#<n>`), left behind when a
                    // process is killed mid-write: never an object, renamed into place or not.
                }
                FileType::RegularFile => match Key::parse(&child) {
                    Ok(k) => keys.push(k),
                    Err(_) => odd.push(format!("{child} (not a valid object key)")),
                },
                other => odd.push(format!("{child} ({})", kind_name(other))),
            }
            Ok(())
        });
        match listed {
            Ok(()) => {}
            // A sub-folder swapped for a link between the listing of its parent and its own:
            // named like a link found in the parent, never followed.
            Err(StoreError::LinkInPath { at, kind, .. }) if rel != dir && at == rel => {
                odd.push(format!("{rel} ({kind})"))
            }
            Err(e) => return Err(e),
        }
    }
    keys.sort();
    odd.sort();
    Ok((keys, odd))
}

/// One folder's regular files named by a number (blocking); a missing folder has none.
fn numbered_in(root: &Root, dir: &str) -> Result<Vec<u64>, StoreError> {
    let mut numbers = Vec::new();
    for_each_entry(root, dir, |name, t| {
        // The type from the directory entry: a link, FIFO or folder there is no object.
        if let (FileType::RegularFile, Some(n)) = (t, seal_core::key::numbered_name(name)) {
            numbers.push(n);
        }
        Ok(())
    })?;
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
