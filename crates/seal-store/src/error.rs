//! The store's one error type: each variant names the object key and the reason, and says
//! whose fault it is (a leaf: it names keys and hashes, nothing of the store itself).

use seal_core::canonical::{CanonicalError, Hash};
use seal_core::fault::{Fault, HasFault};
use seal_core::key::Key;

/// Store failures. Each names the object key and the reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("store URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("{key}: already holds other bytes (stored sha256 {existing}, refused sha256 {attempted}); objects are write-once")]
    Conflict {
        key: Key,
        existing: Hash,
        attempted: Hash,
    },
    #[error("{key}: not found in the store")]
    NotFound { key: Key },
    #[error("{key}: hash mismatch: expected sha256 {expected}, stored bytes hash to {actual}")]
    HashMismatch {
        key: Key,
        expected: Hash,
        actual: Hash,
    },
    #[error("{key}: {size} bytes is over the limit of {limit} bytes")]
    TooLarge { key: String, size: u64, limit: u64 },
    #[error("{key}: reserved for the finalPostguard (decided evidence and seal)")]
    Reserved { key: Key },
    #[error("{key}: {op} failed: {detail}")]
    Backend {
        key: String,
        op: &'static str,
        detail: String,
    },
    #[error("{key}: not canonical JSON: {source}")]
    Canonical { key: Key, source: CanonicalError },
    #[error("{key}: not a valid document: {detail}")]
    BadDocument { key: Key, detail: String },
    #[error("blob upload: {0}")]
    Upload(String),
    #[error("{key}: not a regular file ({kind}): refused")]
    NotRegular { key: Key, kind: &'static str },
    /// A `file://` path runs through something other than a folder (a folder swapped for a
    /// symbolic link by whoever can write the store's filesystem): never followed.
    #[error("{key}: refused: {at} is {kind}, not a folder (a store's paths run through folders only: a link there could lead outside the store)")]
    LinkInPath {
        key: String,
        at: String,
        kind: &'static str,
    },
    /// A document of a kind with a size bound (seal-core `limits::doc_bound`) is larger:
    /// refused before it is read or parsed.
    #[error("{key}: {size} bytes is over the bound of {bound} bytes for a {kind}: refused unread")]
    OverBound {
        key: Key,
        kind: &'static str,
        size: u64,
        bound: u64,
    },
}

impl HasFault for StoreError {
    fn fault(&self) -> Fault {
        match self {
            StoreError::HashMismatch { .. }
            | StoreError::BadDocument { .. }
            | StoreError::Canonical { .. }
            | StoreError::NotRegular { .. }
            | StoreError::LinkInPath { .. }
            | StoreError::OverBound { .. } => Fault::Corruption,
            StoreError::Backend { .. } => Fault::Infrastructure,
            StoreError::Url { .. }
            | StoreError::Conflict { .. }
            | StoreError::NotFound { .. }
            | StoreError::TooLarge { .. }
            | StoreError::Reserved { .. }
            | StoreError::Upload(_) => Fault::Caller,
        }
    }
}

impl StoreError {
    /// The object the error names (a key, or what stands for one), if any.
    pub fn object(&self) -> Option<String> {
        match self {
            StoreError::Conflict { key, .. }
            | StoreError::NotFound { key }
            | StoreError::HashMismatch { key, .. }
            | StoreError::Reserved { key }
            | StoreError::Canonical { key, .. }
            | StoreError::BadDocument { key, .. }
            | StoreError::NotRegular { key, .. }
            | StoreError::OverBound { key, .. } => Some(key.to_string()),
            StoreError::TooLarge { key, .. }
            | StoreError::Backend { key, .. }
            | StoreError::LinkInPath { key, .. } => Some(key.clone()),
            StoreError::Url { .. } | StoreError::Upload(_) => None,
        }
    }

    /// True when the stored bytes themselves are wrong (tampered, truncated, overwritten).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            StoreError::HashMismatch { .. } | StoreError::Conflict { .. }
        )
    }
}
