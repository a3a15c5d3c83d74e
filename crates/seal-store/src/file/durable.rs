//! Durable create-only writes to a `file://` store, without one serial fsync chain per object.
//!
//! An object is written the way power loss cannot tear it: a staging file `<key>#<n>` in the
//! key's own folder (created with `O_EXCL`, never a link; `#` is not allowed in keys, so the
//! name never collides with an object and every listing skips it), its bytes, `fdatasync`, then
//! `renameat2(RENAME_NOREPLACE)` onto the key, which fails if the key exists: create-only in one
//! atomic step, and nothing to unlink afterwards. Then the folder's entry list is made durable.
//!
//! What is new compared with `object_store`'s `LocalFileSystem` (staging file, `sync_all`, hard
//! link, folder fsync, unlink — per object, in series):
//! - **one folder fsync covers every rename that finished before it started** ([`DirSync`], a
//!   group commit per folder): writers that land in the same folder at the same time share one
//!   fsync instead of queueing one each;
//! - no hard link and no unlink per object (one directory update instead of three);
//! - the file fsyncs of independent objects run on their callers' threads, so the filesystem can
//!   batch them (callers issue independent writes together: a roll's records, many replays).
//!
//! The ordering argument (docs/DECISIONS.md, "Durable writes"): a call returns `Ok` only after
//! the object's bytes and its folder entry — and every folder entry leading to it that this
//! process has not yet seen durable — are on stable storage. Callers write a document that
//! references an object only after the object's put returned, so a referenced object is never
//! missing or torn after a crash; an unreferenced staging file may be left behind, and is never
//! an object.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError, Weak};

use crate::{Key, StoreError};

/// Folder fsyncs issued by this process (for tests and the benchmarks' accounting).
static DIR_FSYNCS: AtomicU64 = AtomicU64::new(0);
/// File fsyncs issued by this process.
static FILE_FSYNCS: AtomicU64 = AtomicU64::new(0);

/// How many folder and file fsyncs this process has issued through this module.
pub fn fsync_counts() -> (u64, u64) {
    (
        DIR_FSYNCS.load(Ordering::Relaxed),
        FILE_FSYNCS.load(Ordering::Relaxed),
    )
}

fn backend(key: &Key, op: &'static str, e: std::io::Error) -> StoreError {
    StoreError::Backend {
        key: key.to_string(),
        op,
        detail: e.to_string(),
    }
}

/// Creates `root/key` with exactly `bytes`, durably. `Ok(true)`: this call created it;
/// `Ok(false)`: the key was already taken (the caller compares the stored bytes).
pub(crate) fn create(root: &Path, key: &Key, bytes: &[u8]) -> Result<bool, StoreError> {
    let dest = root.join(key.as_str());
    let Some(dir) = dest.parent().map(Path::to_path_buf) else {
        return Err(backend(
            key,
            "create-only put",
            std::io::Error::other("no parent folder"),
        ));
    };
    // A folder this process has not seen durable is made so first (created if missing, and its
    // entry in each parent synced), so the object's own folder fsync below is enough.
    DURABLE_DIRS
        .ensure(root, &dir)
        .map_err(|e| backend(key, "create folder", e))?;
    let (file, staging) =
        open_staging(&dest).map_err(|e| backend(key, "create staging file", e))?;
    let written = write_and_sync(file, bytes);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&staging);
        return Err(backend(key, "write", e));
    }
    match rename_noreplace(&staging, &dest) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(&staging);
            return Ok(false);
        }
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(backend(key, "rename into place", e));
        }
    }
    dir_sync(&dir).map_err(|e| backend(key, "fsync folder", e))?;
    Ok(true)
}

/// A new staging file next to `dest`, never following or reusing anything that is there.
fn open_staging(dest: &Path) -> std::io::Result<(File, PathBuf)> {
    use rand::Rng;
    for _ in 0..8 {
        let mut name = dest.as_os_str().to_owned();
        name.push(format!("#{}", rand::thread_rng().gen::<u64>()));
        let staging = PathBuf::from(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&staging)
        {
            Ok(f) => return Ok((f, staging)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "eight random staging names were all taken",
    ))
}

fn write_and_sync(mut file: File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    // fdatasync: the data and the size needed to read it back; the name comes with the rename
    // and the folder fsync.
    file.sync_data()?;
    FILE_FSYNCS.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// `renameat2(RENAME_NOREPLACE)`; where the filesystem lacks it, a hard link (which also fails
/// on an existing name) and the removal of the staging name.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            std::fs::hard_link(from, to)?;
            let _ = std::fs::remove_file(from);
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Makes the entries of `dir` durable, sharing the fsync with concurrent writers in it.
fn dir_sync(dir: &Path) -> std::io::Result<()> {
    DIRS.get(dir).sync(|| {
        File::open(dir)?.sync_all()?;
        DIR_FSYNCS.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// One folder's group commit. A writer takes a ticket after its rename; any fsync that starts
/// after the ticket was taken covers that rename. One writer runs the fsync for everyone whose
/// ticket was issued when it started; the others wait for it, or run the next one.
#[derive(Default)]
pub(super) struct DirSync {
    state: Mutex<SyncState>,
    done: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// Tickets issued so far (the last one's number).
    issued: u64,
    /// Every ticket up to this one is covered by a finished fsync.
    synced: u64,
    /// An fsync is running.
    running: bool,
}

impl DirSync {
    /// Returns once an fsync (`run`) that started after this call began has succeeded.
    pub(super) fn sync(&self, mut run: impl FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.issued += 1;
        let ticket = st.issued;
        loop {
            if st.synced >= ticket {
                return Ok(());
            }
            if st.running {
                st = self.done.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            st.running = true;
            let covers = st.issued;
            drop(st);
            let result = run();
            st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.running = false;
            if result.is_ok() {
                st.synced = st.synced.max(covers);
            }
            self.done.notify_all();
            // A failed fsync is this caller's error; a waiter then runs its own.
            result?;
        }
    }
}

/// The group commits of the folders being written, by path. Entries die with their last
/// writer (weak references), so the map holds only folders in use.
struct Dirs(Mutex<HashMap<PathBuf, Weak<DirSync>>>);

static DIRS: LazyLock<Dirs> = LazyLock::new(|| Dirs(Mutex::new(HashMap::new())));

impl Dirs {
    fn get(&self, dir: &Path) -> Arc<DirSync> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = map.get(dir).and_then(Weak::upgrade) {
            return d;
        }
        if map.len() >= 4096 {
            map.retain(|_, w| w.strong_count() > 0);
        }
        let d = Arc::new(DirSync::default());
        map.insert(dir.to_path_buf(), Arc::downgrade(&d));
        d
    }
}

/// Folders whose entry in their parent is known durable in this process: created here and
/// synced into their parent, or found existing and synced once. Bounded: past the bound it is
/// forgotten and folders are re-synced once (correct, only slower).
struct DurableDirs(Mutex<HashSet<PathBuf>>);

static DURABLE_DIRS: LazyLock<DurableDirs> =
    LazyLock::new(|| DurableDirs(Mutex::new(HashSet::new())));

const DURABLE_DIRS_BOUND: usize = 65_536;

impl DurableDirs {
    fn known(&self, dir: &Path) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(dir)
    }

    /// Makes `dir` and every folder between it and `root` exist with durable entries. A folder
    /// created by another writer at the same moment is synced into its parent here too: its
    /// creator may not have done so yet.
    fn ensure(&self, root: &Path, dir: &Path) -> std::io::Result<()> {
        if self.known(dir) {
            return Ok(());
        }
        // The chain from `dir` up to (not including) the first folder already known durable,
        // or the store root, which is the operator's and is taken as given.
        let mut chain = Vec::new();
        let mut d = dir;
        while d != root && d.starts_with(root) && !self.known(d) {
            chain.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
        for folder in chain.iter().rev() {
            match std::fs::create_dir(folder) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Never write into a link or a file standing where a folder belongs.
                    let meta = std::fs::symlink_metadata(folder)?;
                    if !meta.file_type().is_dir() {
                        return Err(std::io::Error::other(format!(
                            "{} is not a folder",
                            folder.display()
                        )));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // Each folder's entry lives in its parent: sync the parents, deepest last.
        for folder in chain.iter().rev() {
            if let Some(parent) = folder.parent() {
                dir_sync(parent)?;
            }
        }
        let mut set = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if set.len() + chain.len() > DURABLE_DIRS_BOUND {
            set.clear();
        }
        set.extend(chain);
        Ok(())
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

    #[test]
    fn creates_once_and_reports_a_taken_key() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("runs/r1/roll-1/a.json");
        assert!(create(dir.path(), &k, b"one").unwrap());
        assert!(!create(dir.path(), &k, b"two").unwrap());
        assert_eq!(std::fs::read(dir.path().join(k.as_str())).unwrap(), b"one");
        // No staging file is left behind, in success or on a taken key.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("runs/r1/roll-1"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn refuses_a_link_where_a_folder_belongs() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("runs")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("runs/r2")).unwrap();
        let err = create(dir.path(), &key("runs/r2/x.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("not a folder"), "{err}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn racing_writers_of_one_key_have_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("cas/sha256/ab/race");
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..16)
                .map(|i| {
                    let (root, k) = (dir.path(), &k);
                    s.spawn(move || create(root, k, format!("{i}").as_bytes()).unwrap())
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
        });
        assert_eq!(wins, 1);
    }

    /// The group commit: every caller returns only after an fsync that started after it
    /// arrived, and concurrent callers share fsyncs.
    #[test]
    fn one_fsync_covers_every_writer_that_arrived_before_it_started() {
        let sync = DirSync::default();
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

    #[test]
    fn a_failed_fsync_is_an_error_and_the_next_caller_retries() {
        let sync = DirSync::default();
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
