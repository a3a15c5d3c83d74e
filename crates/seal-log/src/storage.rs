//! What the log needs of storage ([`LogStorage`]), and nothing more: create an object unless
//! it exists, read one (whole within the store's limit, or only when it is no larger than a
//! bound), hash one, list a folder's keys or the numbers its objects are named by, list the
//! runs, and the one removal `seal log rebuild` makes. No overwrite, no conditional update: the
//! log is correct on any storage that offers these (docs/DECISIONS.md, "The log uses
//! create-only puts only"), as Tessera's storage drivers are for its logs.
//!
//! The log's layout (`log/entries/<n>`, `log/checkpoints/<n>`, `log/tile/…`, `log/runs/…`) is
//! the log's, in seal-core's key vocabulary; a storage knows folders, keys and bytes. The
//! implementation for seal's store is [`crate::store_driver`]'s.

use bytes::Bytes;
use std::future::Future;

use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::key::{LOG_CHECKPOINTS, LOG_ENTRIES, LOG_TILES};
use seal_store::{Bounded, CopiedAside, Key, Listing, StoreError};

/// The storage under a log: create-only, with one removal. Cheap to clone (a handle).
///
/// Every future is `Send`, so that an append can run on any task of a multi-threaded runtime
/// (the server's handlers).
pub trait LogStorage: Clone + Send + Sync + 'static {
    /// Creates `key` holding `bytes` unless it exists: `true` when this call created it,
    /// `false` when the very same bytes were there; other bytes there are
    /// [`StoreError::Conflict`].
    fn create(
        &self,
        key: &Key,
        bytes: Bytes,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The object at `key`, `None` when absent; one larger than the storage's document limit
    /// (or its kind's bound) is an error, never read whole.
    fn get_opt(&self, key: &Key) -> impl Future<Output = Result<Option<Bytes>, StoreError>> + Send;

    /// The object at `key` when it holds at most `bound` bytes; a larger one is answered as
    /// [`Bounded::Larger`] without being read (a planted checkpoint or tile of the wrong size).
    fn get_bounded(
        &self,
        key: &Key,
        bound: u64,
    ) -> impl Future<Output = Result<Bounded, StoreError>> + Send;

    /// The sha256 and size of the object at `key`, streamed (to compare with what a leaf
    /// names).
    fn hash(&self, key: &Key) -> impl Future<Output = Result<(Hash, u64), StoreError>> + Send;

    /// Whether an object is at `key`.
    fn exists(&self, key: &Key) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Every key under the folder `dir` (recursive), and what is there that is no object (see
    /// [`Listing`]).
    fn list(&self, dir: &str) -> impl Future<Output = Result<Listing, StoreError>> + Send;

    /// The numbers the objects directly in the flat folder `dir` are named by (20 zero-padded
    /// digits, [`seal_core::key::numbered_name`]), unsorted; anything else there is left out.
    /// Eight bytes a number, where a listing of the keys would hold a key each.
    fn numbers(&self, dir: &str) -> impl Future<Output = Result<Vec<u64>, StoreError>> + Send;

    /// The runs the storage holds (the valid run ids under `runs/`), sorted.
    fn runs(&self) -> impl Future<Output = Result<Vec<RunId>, StoreError>> + Send;

    /// Copies the object `from` to `to` (create-only; the same bytes there already are a
    /// success): what `seal log rebuild` does with every entry, checkpoint and tile it moves
    /// aside, before it removes any of them.
    fn copy_aside(
        &self,
        from: &Key,
        to: &Key,
    ) -> impl Future<Output = Result<CopiedAside, StoreError>> + Send;

    /// Removes an object [`LogStorage::copy_aside`] copied, when it is a log entry, checkpoint
    /// or tile ([`removable`]); absent already is success. Every other key is refused.
    fn remove_copied(
        &self,
        aside: &CopiedAside,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The largest document read whole.
    fn doc_limit(&self) -> u64;

    /// The object at `key`; absent is [`StoreError::NotFound`].
    fn get(&self, key: &Key) -> impl Future<Output = Result<Bytes, StoreError>> + Send {
        async move {
            self.get_opt(key)
                .await?
                .ok_or_else(|| StoreError::NotFound { key: key.clone() })
        }
    }
}

/// Whether `key` is one the log may remove ([`LogStorage::remove_copied`]): an entry, a checkpoint or
/// a tile, the objects a rebuild moves aside. Never a run's object, a pointer or a
/// cosignature.
pub fn removable(key: &Key) -> bool {
    [LOG_ENTRIES, LOG_CHECKPOINTS, LOG_TILES].iter().any(|dir| {
        key.as_str()
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}
