//! Durable create-only writes to a `file://` store, made durable in batches (group commit).
//!
//! An object is written the way power loss cannot tear it: a staging file `<key>#<n>` in the
//! key's own folder (created with `O_EXCL`, never a link; `#` is not allowed in keys, so the
//! name never collides with an object and every listing skips it), its bytes, a **flush**, then
//! `renameat2(RENAME_NOREPLACE)` onto the key, which fails if the key exists: create-only in one
//! atomic step, and nothing to unlink afterwards. Then a second flush makes the new name (and any
//! folder made for it) durable, and only then does the call return.
//!
//! A flush is one `syncfs(2)` of the store's filesystem, shared by every writer of this process
//! ([`GroupCommit`], one per filesystem): a writer takes a ticket once its bytes (or its rename)
//! are in the page cache, and any flush that *starts* after the ticket covers them. One writer
//! runs the flush for everyone waiting; the others wait for it, or run the next one. So the
//! objects of every run in flight are made durable together — the wall that issue 25 measured
//! was about 100 flushes a run (an `fdatasync` per object and a folder `fsync` per folder);
//! under load a flush now covers the data of the writers that arrived during the previous one
//! and the names of those that renamed during it, so a run pays a fraction of one.
//!
//! What `syncfs` costs the host: it writes back everything dirty on that filesystem, not only
//! seal's objects. The store belongs on a filesystem of its own (a volume; docs/DEPLOYING.md).
//!
//! The ordering argument (docs/DECISIONS.md, "Durable writes"): a name is created only after a
//! flush that started after its bytes were written, so a visible object is never torn, even
//! after power loss; a call returns `Ok` only after a flush that started after its rename. Callers
//! write a document that references an object only after the object's put returned, so a
//! referenced object is never missing or torn after a crash; an unreferenced staging file may be
//! left behind, and is never an object.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::beneath::{self, Root};
use crate::{Key, StoreError};

/// How a `file://` store makes a write durable (the store URL's `?flush=` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flush {
    /// `syncfs` of the store's filesystem, group-committed across every writer in flight (the
    /// default): a fraction of a flush per object under load, but it also writes back whatever
    /// else is dirty on that filesystem.
    #[default]
    Batch,
    /// `fdatasync` of the object and `fsync` of its folder, per object: two flushes per object
    /// whatever the load, touching nothing else on the filesystem. For a store on a filesystem
    /// shared with other busy writers.
    PerObject,
}

/// When the new name of a create must be durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// Before the call returns: a second flush after the rename.
    Durable,
    /// With the next flush of the filesystem that starts after the rename, not waited for
    /// here. For a run's documents before its seal ([`Key::precedes_its_seal`]) in a store
    /// that settles them by the seal: the seal is put only after they were, and its first
    /// flush (bytes before name) starts after their renames. Only on a [`Flush::Batch`] store:
    /// a per-object store's folder fsync covers only that folder, so it syncs it either way.
    ByNextFlush,
}

/// Filesystem flushes (`syncfs`) issued by this process (for `/metrics` and the benchmarks).
static FLUSHES: AtomicU64 = AtomicU64::new(0);
/// File and folder fsyncs of [`Flush::PerObject`] stores.
static FILE_FSYNCS: AtomicU64 = AtomicU64::new(0);
static DIR_FSYNCS: AtomicU64 = AtomicU64::new(0);
/// Objects created by this process through this module.
static CREATED: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
thread_local! {
    /// Group flushes this thread has waited for (each create on a batch store waits for one
    /// before its rename, and one after it unless its name is settled later).
    static WAITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Folder fsyncs this thread made (per-object stores): the process-wide counter also
    /// counts other tests' at the same time.
    static DIR_SYNCS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The group flushes `f` waited for on this thread.
#[cfg(test)]
pub(crate) fn waits_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = WAITS.with(|w| w.get());
    let out = f();
    (out, WAITS.with(|w| w.get()) - before)
}

/// What this process's durable writes have cost so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushCounts {
    /// `syncfs` calls ([`Flush::Batch`]).
    pub syncfs: u64,
    /// `fdatasync` calls of objects ([`Flush::PerObject`]).
    pub file: u64,
    /// `fsync` calls of folders ([`Flush::PerObject`]).
    pub folder: u64,
    /// Objects created.
    pub created: u64,
}

/// How many flushes of each kind this process has issued through this module, and how many
/// objects it created.
pub fn flush_counts() -> FlushCounts {
    FlushCounts {
        syncfs: FLUSHES.load(Ordering::Relaxed),
        file: FILE_FSYNCS.load(Ordering::Relaxed),
        folder: DIR_FSYNCS.load(Ordering::Relaxed),
        created: CREATED.load(Ordering::Relaxed),
    }
}

fn backend(key: &Key, op: &'static str, e: std::io::Error) -> StoreError {
    StoreError::Backend {
        key: key.to_string(),
        op,
        detail: e.to_string(),
    }
}

/// Creates `key` beneath `root` with exactly `bytes`, durably (its name as `name` says).
/// `Ok(true)`: this call created it; `Ok(false)`: the key was already taken (the caller
/// compares the stored bytes). Every folder on the way is reached from the root's descriptor
/// and refused when it is a link ([`super::beneath`]): nothing is ever written outside.
pub(crate) fn create(
    root: &Root,
    key: &Key,
    bytes: &[u8],
    flush: Flush,
    name: Name,
) -> Result<bool, StoreError> {
    let (dir_rel, file_name) = beneath::split(key.as_str());
    // Missing folders are created here; the flush after the rename makes their entries durable
    // together with the object's (per object: their parents are fsynced on the way).
    let open_dir = || {
        root.dir_made(dir_rel, flush == Flush::PerObject)
            .map(|(fd, made)| {
                count_dir_syncs(made.synced);
                fd
            })
            .map_err(|e| e.into_store(key.as_str(), "create folder"))
    };
    let mut dir = open_dir()?;
    let (mut file, staging) = match open_staging(&dir, file_name) {
        // The folder was removed behind the descriptor (an operator's clean-up, the store
        // writer): resolve it again, making it anew.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            dir = open_dir()?;
            open_staging(&dir, file_name)
        }
        opened => opened,
    }
    .map_err(|e| backend(key, "create staging file", e))?;
    let remove_staging = |dir: &OwnedFd| {
        let _ = rustix::fs::unlinkat(dir, staging.as_str(), AtFlags::empty());
    };
    // The group commit is the staging file's filesystem's (a sub-folder may be another mount);
    // a per-object store needs neither it nor the `fstat` that finds it.
    let commit = match flush {
        Flush::PerObject => None,
        Flush::Batch => match file.metadata() {
            Ok(m) => Some(GroupCommit::of_device(m.dev())),
            Err(e) => {
                remove_staging(&dir);
                return Err(backend(key, "stat staging file", e));
            }
        },
    };
    // Counted as at work until the end, so that a flush about to start waits briefly for this
    // write's ticket instead of leaving it for the next flush.
    let _active = commit.as_deref().map(GroupCommit::enter);
    // 1. The bytes are on stable storage before any name points at them.
    let synced = file.write_all(bytes).and_then(|()| match &commit {
        Some(c) => c.flush(&file),
        None => sync_data(&file),
    });
    if let Err(e) = synced {
        remove_staging(&dir);
        return Err(backend(key, "write", e));
    }
    let created = match rename_noreplace(&dir, &staging, file_name) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            remove_staging(&dir);
            false
        }
        Err(e) => {
            remove_staging(&dir);
            return Err(backend(key, "rename into place", e));
        }
    };
    // 2. The name is durable before the caller hears of it. A taken key is flushed too: its
    // writer may not have flushed its name yet, and the caller is about to acknowledge it.
    // Unless the caller settles it later (`Name::ByNextFlush`): any flush that starts from
    // now on covers this rename, and the caller's next create starts one.
    match &commit {
        Some(_) if name == Name::ByNextFlush => {}
        Some(c) => c
            .flush(&file)
            .map_err(|e| backend(key, "flush the store's filesystem", e))?,
        None => dir_sync(&dir).map_err(|e| backend(key, "fsync folder", e))?,
    }
    if created {
        CREATED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(created)
}

/// Makes every name created on `root`'s filesystem so far durable: one group flush.
pub(crate) fn settle(root: &Root) -> Result<(), StoreError> {
    let error = |op, e: std::io::Error| StoreError::Backend {
        key: root.path().display().to_string(),
        op,
        detail: e.to_string(),
    };
    let st =
        rustix::fs::fstat(root.fd()).map_err(|e| error("stat the store's folder", e.into()))?;
    GroupCommit::of_device(st.st_dev)
        .flush(root.fd())
        .map_err(|e| error("flush the store's filesystem", e))
}

/// Hard-links the uploaded object `from` to `to`, create-only, both folders reached beneath
/// `root` (a link on the way to either is refused); `Ok(false)` when `to` was taken. The
/// upload's bytes are durable already (it was fsynced); the new name is made durable here.
pub(crate) fn link(root: &Root, from: &Key, to: &Key, flush: Flush) -> Result<bool, StoreError> {
    let (from_dir, from_name) = beneath::split(from.as_str());
    let (to_dir, to_name) = beneath::split(to.as_str());
    let src = root
        .dir(from_dir)
        .map_err(|e| e.into_store(from.as_str(), "create-only copy"))?;
    let (dst, made) = root
        .dir_made(to_dir, flush == Flush::PerObject)
        .map_err(|e| e.into_store(to.as_str(), "create folder"))?;
    count_dir_syncs(made.synced);
    let created = match rustix::fs::linkat(&src, from_name, &dst, to_name, AtFlags::empty()) {
        Ok(()) => true,
        Err(e) if e == rustix::io::Errno::EXIST => false,
        Err(e) if e == rustix::io::Errno::NOENT => {
            return Err(StoreError::NotFound { key: from.clone() })
        }
        Err(e) => return Err(backend(to, "create-only copy", e.into())),
    };
    match flush {
        Flush::Batch => {
            let st = rustix::fs::fstat(&dst).map_err(|e| backend(to, "stat folder", e.into()))?;
            GroupCommit::of_device(st.st_dev)
                .flush(&dst)
                .map_err(|e| backend(to, "flush the store's filesystem", e))?
        }
        Flush::PerObject => dir_sync(&dst).map_err(|e| backend(to, "fsync folder", e))?,
    }
    if created {
        CREATED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(created)
}

/// A new staging file `<name>#<n>` in `dir`, never following or reusing anything that is
/// there: the file and its name.
fn open_staging(dir: &OwnedFd, name: &str) -> std::io::Result<(File, String)> {
    use rand::Rng;
    for _ in 0..8 {
        let staging = format!("{name}#{}", rand::thread_rng().gen::<u64>());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, staging.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((File::from(fd), staging)),
            Err(e) if e == rustix::io::Errno::EXIST => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(std::io::Error::other(
        "eight random staging names were all taken",
    ))
}

fn sync_data(file: &File) -> std::io::Result<()> {
    // fdatasync: the data and the size needed to read it back; the name comes with the rename
    // and the folder fsync.
    file.sync_data()?;
    FILE_FSYNCS.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn dir_sync(dir: &OwnedFd) -> std::io::Result<()> {
    rustix::fs::fsync(dir)?;
    count_dir_syncs(1);
    Ok(())
}

/// Counts `n` folder fsyncs (here or of folders made by [`beneath`]).
pub(super) fn count_dir_syncs(n: u64) {
    DIR_FSYNCS.fetch_add(n, Ordering::Relaxed);
    #[cfg(test)]
    DIR_SYNCS_HERE.with(|c| c.set(c.get() + n));
}

/// `renameat2(RENAME_NOREPLACE)` within `dir`; where the filesystem lacks it, a hard link
/// (which also fails on an existing name) and the removal of the staging name.
fn rename_noreplace(dir: &OwnedFd, from: &str, to: &str) -> std::io::Result<()> {
    use rustix::fs::{linkat, renameat_with, unlinkat, RenameFlags};
    match renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            linkat(dir, from, dir, to, AtFlags::empty())?;
            let _ = unlinkat(dir, from, AtFlags::empty());
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// How long the writer about to flush waits for writers that are still writing their bytes or
/// renaming, so that one flush carries them too (PostgreSQL's `commit_delay`, taken only when
/// others are at work, as with its `commit_siblings`). A writer alone never waits.
const GATHER_WINDOW: Duration = Duration::from_millis(2);

/// One filesystem's group commit. A writer takes a ticket once what it needs flushed is in the
/// page cache; any flush that starts after the ticket was taken covers it. One writer runs the
/// flush for everyone whose ticket was issued when it started; the others wait for it, or run the
/// next one. Before it starts, the runner gives the writers still at work (between [`enter`]
/// and their ticket) up to [`GATHER_WINDOW`] to take theirs.
///
/// [`enter`]: GroupCommit::enter
#[derive(Default)]
pub(super) struct GroupCommit {
    state: Mutex<CommitState>,
    /// A flush finished.
    done: Condvar,
    /// A ticket was issued or a writer left: the runner gathering writers looks again.
    arrived: Condvar,
}

#[derive(Default)]
struct CommitState {
    /// Tickets issued so far (the last one's number).
    issued: u64,
    /// Every ticket up to this one is covered by a finished flush.
    flushed: u64,
    /// A flush is running (or its runner is gathering writers).
    running: bool,
    /// Writers between [`GroupCommit::enter`] and the end of their write.
    active: usize,
}

/// A writer at work on a filesystem; leaving lets a gathering runner start at once.
pub(super) struct Active<'a>(&'a GroupCommit);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.active = st.active.saturating_sub(1);
        self.0.arrived.notify_all();
    }
}

/// The group commits of the filesystems this process writes, by device number. Never shrinks:
/// a process writes a handful of filesystems.
static COMMITS: LazyLock<Mutex<HashMap<u64, Arc<GroupCommit>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

impl GroupCommit {
    fn of_device(dev: u64) -> Arc<GroupCommit> {
        let mut map = COMMITS.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(dev).or_default().clone()
    }

    /// Counts the caller as a writer at work until the guard drops.
    pub(super) fn enter(&self) -> Active<'_> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.active += 1;
        Active(self)
    }

    /// Returns once a `syncfs` of `file`'s filesystem that started after this call began has
    /// succeeded.
    fn flush(&self, file: impl rustix::fd::AsFd) -> std::io::Result<()> {
        #[cfg(test)]
        WAITS.with(|w| w.set(w.get() + 1));
        self.sync(|| {
            rustix::fs::syncfs(&file)?;
            FLUSHES.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// Returns once a run of `run` that started after this call began has succeeded.
    pub(super) fn sync(&self, run: impl FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
        self.sync_gathering(GATHER_WINDOW, run)
    }

    /// [`GroupCommit::sync`] with the runner's gathering window given (tests use a long one).
    fn sync_gathering(
        &self,
        window: Duration,
        mut run: impl FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.issued += 1;
        let ticket = st.issued;
        self.arrived.notify_all();
        loop {
            if st.flushed >= ticket {
                return Ok(());
            }
            if st.running {
                st = self.done.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            st.running = true;
            // Gather: every writer at work that holds no ticket yet is about to take one.
            let deadline = Instant::now() + window;
            loop {
                let waiting = usize::try_from(st.issued - st.flushed).unwrap_or(usize::MAX);
                let now = Instant::now();
                if waiting >= st.active || now >= deadline {
                    break;
                }
                st = self
                    .arrived
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            let covers = st.issued;
            drop(st);
            let result = run();
            st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.running = false;
            if result.is_ok() {
                st.flushed = st.flushed.max(covers);
            }
            self.done.notify_all();
            // A failed flush is this caller's error; a waiter then runs its own.
            result?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    fn key(s: &str) -> Key {
        Key::parse(s).unwrap()
    }

    fn root(p: &std::path::Path) -> Root {
        Root::open(p).unwrap()
    }

    /// A create whose name is settled later waits for one flush (bytes before the name), a
    /// durable one for two, also on a taken key; a per-object store's settled create still
    /// fsyncs its folder (fails without the `Name::ByNextFlush` branch: two waits).
    #[test]
    fn a_name_settled_later_costs_one_flush_instead_of_two() {
        let dir = tempfile::tempdir().unwrap();
        let root = &root(dir.path());
        let (doc, seal) = (
            key("runs/r1/roll-1/roll.json"),
            key("runs/r1/seal.dsse.json"),
        );
        let (created, n) = waits_of(|| create(root, &doc, b"d", Flush::Batch, Name::ByNextFlush));
        assert!(created.unwrap());
        assert_eq!(n, 1, "a settled-later create");
        let (created, n) = waits_of(|| create(root, &doc, b"d", Flush::Batch, Name::ByNextFlush));
        assert!(!created.unwrap());
        assert_eq!(n, 1, "a settled-later create of a taken key");
        let (created, n) = waits_of(|| create(root, &seal, b"s", Flush::Batch, Name::Durable));
        assert!(created.unwrap());
        assert_eq!(n, 2, "a durable create");
        let (settled, n) = waits_of(|| settle(root));
        settled.unwrap();
        assert_eq!(n, 1, "a settle");
        // Per object, in a folder that exists already (a new folder's parents are fsynced
        // when it is made, which would hide a missing fsync of the object's own folder).
        let (first, other) = (key("runs/r2/roll-1/a.json"), key("runs/r2/roll-1/b.json"));
        create(root, &first, b"d", Flush::PerObject, Name::Durable).unwrap();
        let before = DIR_SYNCS_HERE.with(|n| n.get());
        create(root, &other, b"d", Flush::PerObject, Name::ByNextFlush).unwrap();
        let folder_syncs = DIR_SYNCS_HERE.with(|n| n.get()) - before;
        assert_eq!(folder_syncs, 1, "per object: the folder fsync all the same");
    }

    /// A folder made by this process and removed behind it (here with the object in it) is
    /// made again by the next write into it: the write does not fail on what the process
    /// remembered (fails without the retry: "create staging file: No such file").
    #[test]
    fn a_folder_removed_behind_the_process_is_made_again() {
        for flush in [Flush::Batch, Flush::PerObject] {
            let dir = tempfile::tempdir().unwrap();
            let first = key("log/runs/r1/00000000000000000001");
            assert!(create(&root(dir.path()), &first, b"", flush, Name::Durable).unwrap());
            std::fs::remove_dir_all(dir.path().join("log/runs")).unwrap();
            let second = key("log/runs/r1/00000000000000000002");
            assert!(create(&root(dir.path()), &second, b"", flush, Name::Durable).unwrap());
            assert!(dir.path().join(second.as_str()).is_file());
        }
    }

    #[test]
    fn creates_once_and_reports_a_taken_key() {
        for flush in [Flush::Batch, Flush::PerObject] {
            let dir = tempfile::tempdir().unwrap();
            let k = key("runs/r1/roll-1/a.json");
            assert!(create(&root(dir.path()), &k, b"one", flush, Name::Durable).unwrap());
            assert!(!create(&root(dir.path()), &k, b"two", flush, Name::Durable).unwrap());
            assert_eq!(std::fs::read(dir.path().join(k.as_str())).unwrap(), b"one");
            // No staging file is left behind, in success or on a taken key.
            let names: Vec<_> = std::fs::read_dir(dir.path().join("runs/r1/roll-1"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, vec![std::ffi::OsString::from("a.json")], "{flush:?}");
        }
    }

    /// Each mode pays with its own kind of flush: a batch store never fsyncs a file or folder,
    /// a per-object store never calls `syncfs` (which would write back others' dirty pages).
    #[test]
    fn each_flush_mode_uses_its_own_kind_of_flush() {
        let dir = tempfile::tempdir().unwrap();
        let before = flush_counts();
        create(
            &root(dir.path()),
            &key("runs/p1/one.json"),
            b"1",
            Flush::PerObject,
            Name::Durable,
        )
        .unwrap();
        let after = flush_counts();
        // Counters are process-wide and other tests write at the same time: only growth of
        // this mode's own counters is certain.
        assert!(after.file > before.file && after.folder > before.folder);
        let dir = tempfile::tempdir().unwrap();
        let before = flush_counts();
        create(
            &root(dir.path()),
            &key("runs/b1/one.json"),
            b"1",
            Flush::Batch,
            Name::Durable,
        )
        .unwrap();
        assert!(flush_counts().syncfs > before.syncfs);
    }

    #[test]
    fn refuses_a_link_where_a_folder_belongs() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("runs")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("runs/r2")).unwrap();
        let err = create(
            &root(dir.path()),
            &key("runs/r2/x.json"),
            b"x",
            Flush::Batch,
            Name::Durable,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("runs/r2 is a symbolic link, not a folder"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn racing_writers_of_one_key_have_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("cas/sha256/ab/race");
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..16)
                .map(|i| {
                    let (root, k) = (root(dir.path()), &k);
                    s.spawn(move || {
                        create(
                            &root,
                            k,
                            format!("{i}").as_bytes(),
                            Flush::Batch,
                            Name::Durable,
                        )
                        .unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
        });
        assert_eq!(wins, 1);
    }

    /// The group commit: every caller returns only after a flush that started after it
    /// arrived, and concurrent callers share flushes.
    #[test]
    fn one_flush_covers_every_writer_that_arrived_before_it_started() {
        let sync = GroupCommit::default();
        let arrived = AtomicU64::new(0);
        let covered = AtomicU64::new(0);
        let runs = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    let me = arrived.fetch_add(1, Ordering::SeqCst) + 1;
                    sync.sync(|| {
                        // Everyone who has arrived by now is covered by this fsync.
                        let upto = arrived.load(Ordering::SeqCst);
                        runs.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        covered.fetch_max(upto, Ordering::SeqCst);
                        Ok(())
                    })
                    .unwrap();
                    assert!(covered.load(Ordering::SeqCst) >= me);
                });
            }
        });
        let runs = runs.load(Ordering::SeqCst);
        assert!((1..32).contains(&runs), "{runs} fsyncs for 32 writers");
    }

    /// The gathering: a flush about to start waits for a writer still at work (entered, no
    /// ticket yet), so one flush carries both; a writer alone does not wait at all.
    #[test]
    fn a_flush_waits_for_writers_at_work_and_a_writer_alone_does_not_wait() {
        let long = Duration::from_secs(30);
        let sync = GroupCommit::default();
        let runs = AtomicU64::new(0);
        let both_in = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for delay in [0, 50] {
                let (sync, runs, both_in) = (&sync, &runs, &both_in);
                s.spawn(move || {
                    let _at_work = sync.enter();
                    both_in.wait();
                    std::thread::sleep(Duration::from_millis(delay));
                    sync.sync_gathering(long, || {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .unwrap();
                });
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one flush for two writers");

        let alone = GroupCommit::default();
        let started = Instant::now();
        let _at_work = alone.enter();
        alone.sync_gathering(long, || Ok(())).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a writer alone waited"
        );
    }

    /// A writer that leaves without a ticket (its write failed) does not hold the flush back.
    #[test]
    fn a_writer_that_leaves_lets_the_flush_start() {
        let long = Duration::from_secs(30);
        let sync = GroupCommit::default();
        let started = Instant::now();
        std::thread::scope(|s| {
            let leaver = sync.enter();
            let sync = &sync;
            let h = s.spawn(move || {
                let _at_work = sync.enter();
                sync.sync_gathering(long, || Ok(())).unwrap();
            });
            std::thread::sleep(Duration::from_millis(50));
            drop(leaver);
            h.join().unwrap();
        });
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_failed_flush_is_an_error_and_the_next_caller_retries() {
        let sync = GroupCommit::default();
        let mut first = true;
        let r = sync.sync(|| {
            if std::mem::take(&mut first) {
                Err(std::io::Error::other("disk on fire"))
            } else {
                Ok(())
            }
        });
        assert!(r.is_err());
        sync.sync(|| Ok(())).unwrap();
    }
}
