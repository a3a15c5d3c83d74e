//! The log's checkpoints as stored (`log/checkpoints/<size, 20 digits>`): their sizes, one
//! read within a checkpoint's bound, signing one, what a reader trusts, and the run pointers
//! stored before each checkpoint that covers their leaves.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use seal_core::key::LOG_CHECKPOINTS;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, LogTrust, Tree};
use seal_store::{Bounded, Key, StoreError};

use crate::error::LogError;
use crate::storage::LogStorage;
use crate::tiles;

/// Stored checkpoint sizes, largest first. Only the sizes are listed (8 bytes each; the
/// store holds a checkpoint a batch of seals, ~0.8 a run under light load): a reader builds
/// the key of each one it reads ([`Key::log_checkpoint`]). A link or special file there is no
/// checkpoint ([`LogStorage::numbers`]).
pub async fn checkpoint_sizes(store: &impl LogStorage) -> Result<Vec<u64>, StoreError> {
    let mut sizes = store.numbers(LOG_CHECKPOINTS).await?;
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    Ok(sizes)
}

/// The stored checkpoint of `size` leaves, read only when it is no larger than a checkpoint
/// can be ([`tlog::MAX_CHECKPOINT_BYTES`]): what every reader of checkpoints reads them with.
pub async fn bounded_checkpoint(store: &impl LogStorage, size: u64) -> Result<Bounded, StoreError> {
    store
        .get_bounded(&Key::log_checkpoint(size), tlog::MAX_CHECKPOINT_BYTES)
        .await
}

/// What a reader of the log `origin` trusts: its checkpoints and leaves signed by `trusted`.
pub fn trust(origin: &str, trusted: &[PublicKey]) -> LogTrust {
    LogTrust::new(origin, trusted.iter().map(PublicKey::raw))
}

/// The signed note of the tree of `size` leaves.
pub fn sign_checkpoint(
    origin: &str,
    tree: &Tree,
    size: u64,
    key: &SigningKey,
) -> Result<String, LogError> {
    let body = tlog::checkpoint_body(origin, size, &tree.root(size)?)?;
    let public = key.public().raw();
    Ok(tlog::sign_checkpoint(&body, &public, &|m| key.sign(m))?)
}

/// Stores the pointers `keys`, each saying leaf `<index>` is about `<run>` (create-only: the
/// same again is fine, and so is one stored with other bytes, since only its name is read).
/// Readers authenticate the leaf it names and ignore one that is not the run's, so a pointer
/// is never trusted for more than "look there".
pub(crate) async fn store_pointers(
    store: &impl LogStorage,
    keys: &[(u64, Key)],
) -> Result<(), LogError> {
    // Owned keys: a stream over borrowed ones makes the append's future not `Send` for
    // every lifetime, which the routes need.
    let owned: Vec<Key> = keys.iter().map(|(_, k)| k.clone()).collect();
    futures::stream::iter(owned)
        .map(|k| async move {
            match store.create(&k, Bytes::new()).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => Ok(()),
                Err(e) => Err(LogError::from(e)),
            }
        })
        .buffer_unordered(tiles::AT_ONCE)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}
