//! The one way in for files: every path seal reads from outside (run folders, blobs, keys,
//! trust anchors, config, Verdicts, source stores) is opened here, and every file seal creates
//! next to an operator's files (keys, exports) is created here.
//!
//! Reading: the last path component is opened with `O_NOFOLLOW | O_NONBLOCK` (a symbolic link
//! is refused, a FIFO does not block the open), `fstat` on the open descriptor refuses anything
//! that is not a regular file (FIFO, device, socket, folder), and the bytes go through
//! `Read::take(limit + 1)`, so the limit holds on bytes read, whatever the stat size says
//! (`/dev/zero` and `/proc` files report 0). Folders are walked without following links:
//! [`entries`] reports each entry's own type. Creating: `O_CREAT | O_EXCL | O_NOFOLLOW`, so an
//! existing file or a link at the path is never written through.
//!
//! Links are refused, not resolved: resolving and then checking the target is a check-then-use
//! race (docs/DECISIONS.md, "Operator files: links refused, not resolved").

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file could not be read or created.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("{path}: does not exist")]
    Missing { path: String },
    #[error("{path}: is a symbolic link (seal does not follow links)")]
    Symlink { path: String },
    #[error("{path}: not a regular file ({kind})")]
    NotRegular { path: String, kind: &'static str },
    #[error("{path}: not a folder ({kind})")]
    NotFolder { path: String, kind: &'static str },
    #[error("{path}: over the limit of {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("{path}: already exists (refusing to overwrite it or write through a link)")]
    Exists { path: String },
    #[error("{path}: {detail}")]
    Io { path: String, detail: String },
}

impl seal_core::fault::HasFault for FsError {
    fn fault(&self) -> seal_core::fault::Fault {
        // Every path here was named by an operator or lies inside an archive they gave.
        seal_core::fault::Fault::Caller
    }
}

/// What a folder entry or path is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Folder,
    Symlink,
    Other(&'static str),
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn kind_of(t: std::fs::FileType) -> Kind {
    if t.is_symlink() {
        Kind::Symlink
    } else if t.is_file() {
        Kind::File
    } else if t.is_dir() {
        Kind::Folder
    } else if t.is_fifo() {
        Kind::Other("a FIFO")
    } else if t.is_char_device() {
        Kind::Other("a character device")
    } else if t.is_block_device() {
        Kind::Other("a block device")
    } else if t.is_socket() {
        Kind::Other("a socket")
    } else {
        Kind::Other("a special file")
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::File => "a regular file",
        Kind::Folder => "a folder",
        Kind::Symlink => "a symbolic link",
        Kind::Other(name) => name,
    }
}

fn io(path: &Path, e: std::io::Error) -> FsError {
    match e.kind() {
        std::io::ErrorKind::NotFound => FsError::Missing { path: shown(path) },
        _ if e.raw_os_error() == Some(libc::ELOOP) => FsError::Symlink { path: shown(path) },
        _ => FsError::Io {
            path: shown(path),
            detail: e.to_string(),
        },
    }
}

/// The type of `path` itself (a link is reported as a link); `None` when absent.
pub fn kind(path: &Path) -> Result<Option<Kind>, FsError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(kind_of(m.file_type()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, e)),
    }
}

/// Opens a regular file for reading: no link, no FIFO, no device, no folder.
pub fn open(path: &Path) -> Result<File, FsError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io(path, e))?;
    let meta = file.metadata().map_err(|e| io(path, e))?;
    match kind_of(meta.file_type()) {
        Kind::File => Ok(file),
        other => Err(FsError::NotRegular {
            path: shown(path),
            kind: kind_name(other),
        }),
    }
}

/// Reads a whole regular file of at most `limit` bytes (counted while reading).
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FsError> {
    let file = open(path)?;
    read_open(path, file, limit)
}

/// Reads an opened file through a reader bounded at `limit + 1` bytes.
pub fn read_open(path: &Path, file: File, limit: u64) -> Result<Vec<u8>, FsError> {
    let too_large = || FsError::TooLarge {
        path: shown(path),
        limit,
    };
    if file.metadata().map(|m| m.len() > limit).unwrap_or(false) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Reads a regular UTF-8 text file of at most `limit` bytes.
pub fn read_string(path: &Path, limit: u64) -> Result<String, FsError> {
    String::from_utf8(read(path, limit)?).map_err(|_| FsError::Io {
        path: shown(path),
        detail: "not UTF-8 text".into(),
    })
}

/// `path` is a real folder (not a link to one).
pub fn require_folder(path: &Path) -> Result<(), FsError> {
    match kind(path)? {
        Some(Kind::Folder) => Ok(()),
        Some(Kind::Symlink) => Err(FsError::Symlink { path: shown(path) }),
        Some(other) => Err(FsError::NotFolder {
            path: shown(path),
            kind: kind_name(other),
        }),
        None => Err(FsError::Missing { path: shown(path) }),
    }
}

/// One entry of a folder, typed without following links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name, or `None` when it is not UTF-8 (nothing seal names can be).
    pub name: Option<String>,
    pub path: PathBuf,
    pub kind: Kind,
}

/// The entries of a real folder, sorted by path.
pub fn entries(dir: &Path) -> Result<Vec<Entry>, FsError> {
    require_folder(dir)?;
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let e = e.map_err(|e| io(dir, e))?;
        let kind = kind_of(e.file_type().map_err(|err| io(&e.path(), err))?);
        out.push(Entry {
            name: e.file_name().to_str().map(str::to_owned),
            path: e.path(),
            kind,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Describes a path that is not what a reader wanted (for messages about folder entries).
pub fn describe(k: Kind) -> &'static str {
    kind_name(k)
}

/// Creates a new file with `mode`: never overwrites, never writes through a link.
pub fn create_new(path: &Path, mode: u32) -> Result<File, FsError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => FsError::Exists { path: shown(path) },
            _ => io(path, e),
        })
}

/// Makes `dir` a folder fit for keys and secrets: when absent it is created with mode 0700
/// whatever the umask (its parents as `mkdir -p` would); a link, a non-folder, or a folder
/// writable by group or others (who could rename a key or secret in it and put their own in
/// its place) is refused. The checks are made on the opened folder (`O_DIRECTORY |
/// O_NOFOLLOW`), not on whatever the path names a moment later.
pub fn private_folder(dir: &Path) -> Result<(), FsError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if kind(dir)?.is_none() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            // The umask may have cleared owner bits too (umask 0777): the mode is set, not
            // masked. (Set by path: an open descriptor needs the read bit the umask removed;
            // a link swapped in meanwhile is refused below.)
            Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io(dir, e))?,
            // Made by someone else meanwhile: judged below like any existing folder.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(dir, e)),
        }
    }
    require_folder(dir)?;
    let folder = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| io(dir, e))?;
    let mode = folder
        .metadata()
        .map_err(|e| io(dir, e))?
        .permissions()
        .mode()
        & 0o7777;
    if mode & 0o022 != 0 {
        return Err(FsError::Io {
            path: shown(dir),
            detail: format!(
                "writable by group or others (mode {mode:o}): they could replace a key in it; \
                 run chmod go-w on it or choose another folder"
            ),
        });
    }
    Ok(())
}

/// Creates `path` with `bytes` (see [`create_new`]) and syncs it.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FsError> {
    use std::io::Write;
    let mut f = create_new(path, mode)?;
    f.write_all(bytes).map_err(|e| io(path, e))?;
    f.sync_all().map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_devices_and_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"hello").unwrap();
        assert_eq!(read(&file, 5).unwrap(), b"hello");
        assert!(matches!(read(&file, 4), Err(FsError::TooLarge { .. })));
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(read(&link, 10), Err(FsError::Symlink { .. })));
        assert!(matches!(
            read(Path::new("/dev/zero"), 10),
            Err(FsError::NotRegular { .. })
        ));
        assert!(matches!(
            read(dir.path(), 10),
            Err(FsError::NotRegular { .. })
        ));
        assert!(matches!(
            create_new(&link, 0o644),
            Err(FsError::Exists { .. })
        ));
        assert!(matches!(
            create_new(&file, 0o644),
            Err(FsError::Exists { .. })
        ));
        assert!(matches!(
            read(&dir.path().join("none"), 1),
            Err(FsError::Missing { .. })
        ));
    }
}
