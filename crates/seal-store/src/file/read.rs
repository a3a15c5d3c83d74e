//! Direct reads of a `file://` store: one open, one `fstat` and the reads of an object in a
//! single synchronous call, instead of `object_store`'s separate blocking hops for open, stat
//! and read.
//!
//! The same rules as every read of the store: an object must be a regular file. The object is
//! opened beneath the store's root with no link on any component ([`super::beneath`]) and with
//! `O_NONBLOCK`, and its type is taken from the open descriptor, so a symbolic link, FIFO,
//! socket or device put in the store is refused ([`StoreError::NotRegular`]) and never blocks
//! the reader, even if it replaced a regular file a moment before; a folder on the way swapped
//! for a link is [`StoreError::LinkInPath`].

use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use std::cell::RefCell;
use std::fs::File;
use std::io::Read;

use super::beneath::{kind_name, Root, Walk};
use super::file_kind;
use crate::{Key, StoreError};
use seal_core::canonical::Hash;

/// Read buffer for hashing a local file: large enough to keep SHA-NI busy, small enough to
/// keep memory flat whatever the blob size.
const HASH_BUF: usize = 1024 * 1024;

thread_local! {
    /// One hashing buffer per thread, reused for every object (a fresh zeroed 1 MiB buffer per
    /// 180 KB frame was a measurable share of verify).
    static HASH_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn io(key: &Key, op: &'static str, e: std::io::Error) -> StoreError {
    if e.kind() == std::io::ErrorKind::NotFound {
        return StoreError::NotFound { key: key.clone() };
    }
    StoreError::Backend {
        key: key.to_string(),
        op,
        detail: e.to_string(),
    }
}

/// What a failed resolution of `key` is: its last component a link is "not a regular file",
/// a link on the way to it [`StoreError::LinkInPath`].
fn refused(key: &Key, op: &'static str, w: Walk) -> StoreError {
    match w {
        Walk::Link { at, kind } if at == key.as_str() => StoreError::NotRegular {
            key: key.clone(),
            kind,
        },
        other => other.into_store(key.as_str(), op),
    }
}

/// Opens the object `key` if it is a regular file; its size.
pub(super) fn open(root: &Root, key: &Key) -> Result<(File, u64), StoreError> {
    let file = root
        .open_file(key.as_str())
        .map_err(|w| refused(key, "open", w))?;
    let meta = file.metadata().map_err(|e| io(key, "stat", e))?;
    if !meta.file_type().is_file() {
        return Err(StoreError::NotRegular {
            key: key.clone(),
            kind: file_kind(&meta.file_type()),
        });
    }
    Ok((file, meta.len()))
}

/// Whether `key` is a regular file (not followed if a link); never opens it.
pub(crate) fn exists(root: &Root, key: &Key) -> Result<bool, StoreError> {
    match root
        .kind_of(key.as_str())
        .map_err(|w| refused(key, "stat", w))?
    {
        None => Ok(false),
        Some(rustix::fs::FileType::RegularFile) => Ok(true),
        Some(t) => Err(StoreError::NotRegular {
            key: key.clone(),
            kind: kind_name(t),
        }),
    }
}

/// Reads a whole object of at most `limit` bytes.
pub(crate) fn read(root: &Root, key: &Key, limit: u64) -> Result<Bytes, StoreError> {
    let (mut file, size) = open(root, key)?;
    let too_large = |size| StoreError::TooLarge {
        key: key.to_string(),
        size,
        limit,
    };
    if size > limit {
        return Err(too_large(size));
    }
    // Exactly the size the descriptor had when it was checked, without a last read to find the
    // end (a read system call an object: a tenth of `verify`'s). A stored object never grows
    // (it is renamed into place whole); one that grew under the reader is read as it was at
    // the stat, and one that shrank is an error.
    let len = usize::try_from(size).map_err(|_| too_large(size))?;
    let mut buf = vec![0u8; len];
    file.read_exact(&mut buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            StoreError::Backend {
                key: key.to_string(),
                op: "read",
                detail: format!("the object shrank while it was read (it had {size} bytes)"),
            }
        } else {
            io(key, "read", e)
        }
    })?;
    Ok(Bytes::from(buf))
}

/// Streams an object through SHA-256 with this thread's buffer: its hash and size.
pub(crate) fn hash(root: &Root, key: &Key) -> Result<(Hash, u64), StoreError> {
    let (mut file, stat_size) = open(root, key)?;
    HASH_BUFFER.with(|cell| {
        let mut buf = cell.borrow_mut();
        if buf.len() != HASH_BUF {
            buf.resize(HASH_BUF, 0);
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        // Up to the size of the stat, as `read` does (no last read to find the end); a file
        // that shrank ends the loop early, with the hash of what it held.
        while size < stat_size {
            let want = usize::try_from(stat_size - size).map_or(buf.len(), |w| w.min(buf.len()));
            let n = match file.read(&mut buf[..want]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(key, "read", e)),
            };
            if n == 0 {
                break;
            }
            size += n as u64;
            hasher.update(&buf[..n]);
        }
        Ok((Hash::from_hasher(hasher), size))
    })
}
