//! Every path of a `file://` store resolved beneath its root, never through a link.
//!
//! The store writer can replace any folder of the store by a symbolic link (to a folder
//! outside it) between two of seal's calls. `O_NOFOLLOW` only covers a path's last
//! component, so each object is reached from a descriptor of the store's root held open
//! since the store was opened ([`Root`]), and every component on the way is refused when it
//! is a link:
//!
//! - where the kernel has it, one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` of the
//!   whole path (Linux 5.6);
//! - else (an older kernel, or a seccomp filter that answers `ENOSYS`/`EPERM`) an `openat`
//!   walk, one component at a time, each opened with `O_NOFOLLOW | O_DIRECTORY`.
//!
//! A link or a non-folder where a folder belongs is [`Walk::Link`], which the callers turn into
//! [`StoreError::LinkInPath`] naming the key and the component. Only the root's own path is
//! taken as given (it is the operator's, opened once).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{openat, openat2, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::StoreError;

/// `openat2` was refused by the kernel or a seccomp filter once: every later resolution walks.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How many times a resolution that raced a rename (`EAGAIN`) is tried again before walking.
const RACE_RETRIES: usize = 4;

/// Flags of every folder opened on the way: read-only, a folder, never a link.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn resolve_flags() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// Why a path could not be resolved beneath the root.
#[derive(Debug)]
pub(crate) enum Walk {
    /// A component is missing (nothing was created).
    Missing,
    /// `at` (a path relative to the root) is `kind` where a folder belongs.
    Link { at: String, kind: &'static str },
    /// Any other failure of the system call.
    Io(std::io::Error),
}

impl Walk {
    /// The store error naming `key`; a missing component is `NotFound` when `key` is one.
    pub(crate) fn into_store(self, key: &str, op: &'static str) -> StoreError {
        match self {
            Walk::Missing => match seal_core::key::Key::parse(key) {
                Ok(k) => StoreError::NotFound { key: k },
                Err(_) => StoreError::Backend {
                    key: key.to_string(),
                    op,
                    detail: "not found".into(),
                },
            },
            Walk::Link { at, kind } => StoreError::LinkInPath {
                key: key.to_string(),
                at,
                kind,
            },
            Walk::Io(e) => StoreError::Backend {
                key: key.to_string(),
                op,
                detail: e.to_string(),
            },
        }
    }
}

impl From<Errno> for Walk {
    fn from(e: Errno) -> Walk {
        if e == Errno::NOENT {
            Walk::Missing
        } else {
            Walk::Io(e.into())
        }
    }
}

/// What [`Root::dir_made`] did on the way, for the caller's durability and counters.
pub(crate) struct Made {
    /// Folder fsyncs made (per-object durability).
    pub(crate) synced: u64,
}

/// The store's root folder, held open for the life of the store.
#[derive(Debug)]
pub(crate) struct Root {
    fd: OwnedFd,
    /// The folder's path as the store URL named it (for messages only).
    path: std::path::PathBuf,
}

impl Root {
    /// Opens the root folder (its own path is followed: it is the operator's).
    pub(crate) fn open(path: &Path) -> std::io::Result<Root> {
        let fd = openat(
            rustix::fs::CWD,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The root's path as the store URL named it (for messages only: never opened again).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The root's own descriptor (a flush of its filesystem).
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Opens `rel` beneath the root with `flags`, no link on any component. `rel` is a key or
    /// a folder of keys (segments that are never empty, `.` or `..`).
    fn open_beneath(&self, rel: &str, flags: OFlags) -> Result<OwnedFd, Walk> {
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            for _ in 0..RACE_RETRIES {
                match openat2(&self.fd, rel, flags, Mode::empty(), resolve_flags()) {
                    Ok(fd) => return Ok(fd),
                    Err(e) if e == Errno::AGAIN => continue,
                    Err(e) if e == Errno::NOSYS || e == Errno::PERM || e == Errno::INVAL => {
                        // No openat2 here (before 5.6, or filtered): walk from now on.
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    // A link (ELOOP), a file where a folder belongs (ENOTDIR) or an escape
                    // (EXDEV): the walk names the component.
                    Err(e) if e == Errno::LOOP || e == Errno::NOTDIR || e == Errno::XDEV => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.walk(rel, flags)
    }

    /// The `openat` walk: each folder on the way opened with `O_NOFOLLOW | O_DIRECTORY`, the
    /// last component with `flags` (which carry `O_NOFOLLOW` where a link must be refused).
    fn walk(&self, rel: &str, flags: OFlags) -> Result<OwnedFd, Walk> {
        let (dir, name) = split(rel);
        let parent = self.walk_dir(dir, None)?.0;
        match openat(&parent, name, flags, Mode::empty()) {
            Ok(fd) => Ok(fd),
            Err(e) if e == Errno::LOOP || e == Errno::NOTDIR => Err(link(&parent, rel, name, e)),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the folder `rel` ("" is the root), every component a folder and none a link.
    pub(crate) fn dir(&self, rel: &str) -> Result<OwnedFd, Walk> {
        if rel.is_empty() {
            return openat(&self.fd, ".", dir_flags(), Mode::empty()).map_err(Walk::from);
        }
        self.open_beneath(rel, dir_flags())
    }

    /// Opens the folder `rel`, creating every missing folder on the way; with `sync_parents`,
    /// each new folder's entry is fsynced into its parent (per-object durability).
    pub(crate) fn dir_made(&self, rel: &str, sync_parents: bool) -> Result<(OwnedFd, Made), Walk> {
        match self.dir(rel) {
            Ok(fd) => Ok((fd, Made { synced: 0 })),
            Err(Walk::Missing) => self.walk_dir(rel, Some(sync_parents)),
            Err(e) => Err(e),
        }
    }

    /// The walk to folder `rel`; `create` makes the missing ones (`Some(sync_parents)`).
    fn walk_dir(&self, rel: &str, create: Option<bool>) -> Result<(OwnedFd, Made), Walk> {
        let mut cur = openat(&self.fd, ".", dir_flags(), Mode::empty())?;
        let mut made = Made { synced: 0 };
        if rel.is_empty() {
            return Ok((cur, made));
        }
        let mut end = 0;
        for name in rel.split('/') {
            end += name.len();
            let upto = &rel[..end];
            end += 1;
            let next = match openat(&cur, name, dir_flags(), Mode::empty()) {
                Err(e) if e == Errno::NOENT => {
                    let Some(sync) = create else {
                        return Err(Walk::Missing);
                    };
                    match rustix::fs::mkdirat(&cur, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) => {}
                        // A racing writer made it: its entry may not be durable yet either.
                        Err(e) if e == Errno::EXIST => {}
                        Err(e) => return Err(e.into()),
                    }
                    if sync {
                        rustix::fs::fsync(&cur).map_err(|e| Walk::Io(e.into()))?;
                        made.synced += 1;
                    }
                    openat(&cur, name, dir_flags(), Mode::empty())
                }
                other => other,
            };
            cur = match next {
                Ok(fd) => fd,
                Err(e) if e == Errno::LOOP || e == Errno::NOTDIR => {
                    return Err(link(&cur, upto, name, e))
                }
                Err(e) => return Err(e.into()),
            };
        }
        Ok((cur, made))
    }

    /// Opens the object `key` for reading, never following a link on any component and never
    /// blocking on a FIFO (`O_NONBLOCK`).
    pub(crate) fn open_file(&self, key: &str) -> Result<File, Walk> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        self.open_beneath(key, flags).map(File::from)
    }

    /// The type of what stands at `key` (a link is not followed, nothing is opened), `None`
    /// when absent.
    pub(crate) fn kind_of(&self, key: &str) -> Result<Option<FileType>, Walk> {
        let (dir, name) = split(key);
        let parent = match self.dir(dir) {
            Ok(fd) => fd,
            Err(Walk::Missing) => return Ok(None),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(e) if e == Errno::NOENT => Ok(None),
            Err(e) => Err(Walk::Io(e.into())),
        }
    }
}

/// `(folder, last component)` of a relative path ("" for a name at the root).
pub(crate) fn split(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// What stands at `name` in `parent` where a folder (or a plain file) was expected.
fn link(parent: &impl AsFd, at: &str, name: &str, e: Errno) -> Walk {
    let kind = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => kind_name(FileType::from_raw_mode(st.st_mode)),
        Err(_) if e == Errno::LOOP => "a symbolic link",
        Err(_) => "not a folder",
    };
    Walk::Link {
        at: at.to_string(),
        kind,
    }
}

/// How an entry that is not a regular file is named.
pub(crate) fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::Symlink => "a symbolic link",
        FileType::Directory => "a directory",
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::BlockDevice | FileType::CharacterDevice => "a device",
        FileType::RegularFile => "a regular file",
        FileType::Unknown => "not a file",
    }
}

/// Forces the walk (tests of the fallback).
#[cfg(test)]
pub(crate) fn without_openat2<T>(f: impl FnOnce() -> T) -> T {
    let before = NO_OPENAT2.swap(true, Ordering::SeqCst);
    let out = f();
    NO_OPENAT2.store(before, Ordering::SeqCst);
    out
}
