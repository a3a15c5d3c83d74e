//! What a witness remembers: for each log origin, the latest checkpoint it cosigned (size,
//! root, the note with the log's signatures and its own cosignature), in one JSON file.
//!
//! Durability: a size is acknowledged (200) only after [`StateFile::persist`] returned, and
//! persisting writes a temporary file beside the state, fsyncs it, renames it over the state
//! and fsyncs the folder. A crash at any point leaves either the old file or the new one, never
//! a torn one, and never a file older than an answer already given: a witness cannot be made to
//! forget a size it cosigned, which is all that stops it from cosigning a rollback.
//!
//! One process per state file: [`StateFile::open`] takes an exclusive `flock` on
//! `<state>.lock` for the life of the process, so a second witness on the same file refuses to
//! start instead of racing the first one's check-and-update.
//!
//! A missing state file is a new witness; a state file that does not parse is refused, never
//! replaced (docs/DECISIONS.md, "A damaged witness state is refused, never replaced").

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use seal_core::fault::{Fault, HasFault};
use seal_core::tlog::NodeHash;

/// The `schemaVersion` of the state file.
pub const SCHEMA: &str = "seal.witness-state/1";
/// Largest state file read (one small note per log).
const MAX_STATE_BYTES: u64 = 16 * 1024 * 1024;

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("witness state {path}: {detail}")]
    Io { path: String, detail: String },
    #[error("witness state {path}: another process holds {lock} (one witness per state file)")]
    Locked { path: String, lock: String },
    #[error(
        "witness state {path}: not a witness state file ({detail}); refusing to start over it"
    )]
    Corrupt { path: String, detail: String },
}

impl HasFault for StateError {
    fn fault(&self) -> Fault {
        match self {
            StateError::Io { .. } => Fault::Infrastructure,
            StateError::Locked { .. } => Fault::Caller,
            StateError::Corrupt { .. } => Fault::Corruption,
        }
    }
}

/// The latest cosigned checkpoint of one log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogState {
    pub size: u64,
    /// The root hash, base64 as in the checkpoint.
    pub root: String,
    /// The cosigned checkpoint: the log's verified signature lines and this witness's
    /// cosignature, served to monitors as it is.
    pub checkpoint: String,
}

impl LogState {
    /// The root hash.
    pub fn root_hash(&self) -> Option<NodeHash> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.root)
            .ok()
            .and_then(|v| v.try_into().ok())
    }
}

/// Every log's latest cosigned checkpoint, by origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct State {
    pub schema_version: String,
    pub logs: BTreeMap<String, LogState>,
}

impl Default for State {
    fn default() -> State {
        State {
            schema_version: SCHEMA.to_string(),
            logs: BTreeMap::new(),
        }
    }
}

/// The state file, locked for this process.
#[derive(Debug)]
pub struct StateFile {
    path: PathBuf,
    /// Held (and so the `flock`) for the life of the process.
    _lock: File,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> StateError {
    StateError::Io {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

impl StateFile {
    /// Locks `<path>.lock` and reads the state (empty when the file does not exist yet).
    pub fn open(path: &Path) -> Result<(StateFile, State), StateError> {
        let lock = lock(path)?;
        let state = match seal_fs::fsio::read(path, MAX_STATE_BYTES) {
            Ok(bytes) => parse(path, &bytes)?,
            Err(seal_fs::fsio::FsError::Missing { .. }) => State::default(),
            Err(e) => return Err(io_err(path, e)),
        };
        Ok((
            StateFile {
                path: path.to_path_buf(),
                _lock: lock,
            },
            state,
        ))
    }

    /// Writes `state` durably and atomically (see the module doc); returns once it is on disk.
    pub fn persist(&self, state: &State) -> Result<(), StateError> {
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| io_err(&self.path, e))?;
        let tmp = with_suffix(&self.path, ".tmp");
        // A temporary file left by a crash is ours (we hold the lock): start it anew.
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&tmp, e)),
        }
        seal_fs::fsio::write_new(&tmp, &bytes, 0o600).map_err(|e| io_err(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_err(&self.path, e))?;
        sync_parent(&self.path)
    }
}

/// Creates (if needed) and locks `<path>.lock`, failing at once when another process holds it.
fn lock(path: &Path) -> Result<File, StateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let lock_path = with_suffix(path, ".lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&lock_path)
        .map_err(|e| io_err(&lock_path, e))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(StateError::Locked {
            path: path.display().to_string(),
            lock: lock_path.display().to_string(),
        }),
        Err(e) => Err(io_err(&lock_path, e)),
    }
}

/// Makes a rename in `path`'s folder durable.
fn sync_parent(path: &Path) -> Result<(), StateError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(parent, e))
}

fn parse(path: &Path, bytes: &[u8]) -> Result<State, StateError> {
    let corrupt = |detail: String| StateError::Corrupt {
        path: path.display().to_string(),
        detail,
    };
    let state: State = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if state.schema_version != SCHEMA {
        return Err(corrupt(format!(
            "schemaVersion {:?}, expected {SCHEMA:?}",
            state.schema_version
        )));
    }
    for (origin, log) in &state.logs {
        if log.root_hash().is_none() {
            return Err(corrupt(format!(
                "log {origin:?}: root is not a base64 hash"
            )));
        }
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_survives_reopen_and_a_second_process_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let (file, mut state) = StateFile::open(&path).unwrap();
        assert!(state.logs.is_empty());
        assert!(matches!(
            StateFile::open(&path),
            Err(StateError::Locked { .. })
        ));
        state.logs.insert(
            "o".into(),
            LogState {
                size: 3,
                root: base64::engine::general_purpose::STANDARD.encode([1u8; 32]),
                checkpoint: "o\n3\n…\n".into(),
            },
        );
        file.persist(&state).unwrap();
        drop(file);
        let (_file, again) = StateFile::open(&path).unwrap();
        assert_eq!(again, state);
        assert!(!with_suffix(&path, ".tmp").exists());
    }

    #[test]
    fn a_damaged_state_file_is_refused_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        std::fs::write(&path, b"{\"schemaVersion\":\"seal.witness-state/1\",\"logs\":{\"o\":{\"size\":1,\"root\":\"x\",\"checkpoint\":\"\"}}}").unwrap();
        assert!(matches!(
            StateFile::open(&path),
            Err(StateError::Corrupt { .. })
        ));
        std::fs::write(&path, b"").unwrap();
        assert!(matches!(
            StateFile::open(&path),
            Err(StateError::Corrupt { .. })
        ));
    }
}
