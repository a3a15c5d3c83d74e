//! The `file://` backend's own paths, beside `object_store`'s `LocalFileSystem`: seal's durable
//! create-only writes ([`durable`]), direct reads that refuse anything but a regular file
//! ([`read`]), and the listing walk that reports what seal could not have written.

pub(crate) mod durable;
pub(crate) mod read;

use crate::{Key, StoreError};

/// Walks a file store folder without following links (blocking; see
/// [`crate::Store::list_everything`]).
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

pub(crate) fn backend_io(key: &Key, op: &'static str, e: std::io::Error) -> StoreError {
    StoreError::Backend {
        key: key.to_string(),
        op,
        detail: e.to_string(),
    }
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
