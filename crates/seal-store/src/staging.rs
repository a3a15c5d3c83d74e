//! [`Staging`]: the private in-memory area an import reads an archive's run into before it is
//! verified.
//!
//! A type of its own, not a flag on [`Store`]: it is the only place that takes outside bytes
//! at the postguard's reserved keys (an archived run carries its evidence and seal), because
//! nothing in it is evidence until it verified, and [`Store::import_from`] copies into a real
//! store only from a `Staging`, so no caller can hand a store arbitrary bytes at those keys.

use bytes::Bytes;
use futures::TryStreamExt;

use crate::{Key, Store, StoreError, Stored};
use seal_core::canonical::Hash;

/// An empty, private, in-memory area. Reads go through [`Staging::store`].
#[derive(Debug)]
pub struct Staging {
    store: Store,
}

impl Staging {
    /// An empty area whose documents are read with `doc_limit`.
    pub fn new(doc_limit: u64) -> Staging {
        Staging {
            store: Store::memory(doc_limit),
        }
    }

    /// Puts bytes from an archive, reserved keys included (create-only, as every put).
    pub async fn put(&self, key: &Key, bytes: Bytes) -> Result<Stored, StoreError> {
        let hash = Hash::of(&bytes);
        Ok(self.store.create(key, bytes, hash).await?.stored)
    }

    /// Copies the object at `key` of `src` here, streamed and refused past `limit` bytes
    /// ([`StoreError::TooLarge`]); `None` when `src` has no such object.
    pub async fn copy_from(
        &self,
        src: &Store,
        key: &Key,
        limit: u64,
    ) -> Result<Option<Stored>, StoreError> {
        let mut stream = match src.backend.stream(key).await {
            Ok(s) => s,
            Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut buf = Vec::new();
        while let Some(chunk) = stream.try_next().await? {
            let size = (buf.len() + chunk.len()) as u64;
            if size > limit {
                return Err(StoreError::TooLarge {
                    key: key.to_string(),
                    size,
                    limit,
                });
            }
            buf.extend_from_slice(&chunk);
        }
        self.put(key, Bytes::from(buf)).await.map(Some)
    }

    /// The staged objects, for reading (a verification runs on them).
    pub fn store(&self) -> &Store {
        &self.store
    }
}
