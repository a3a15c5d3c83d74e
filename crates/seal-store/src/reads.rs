//! The reads an audit makes ([`Reads`]), and the one reader that may take this process's write
//! set instead of the store ([`OwnWrites`], made only by [`Store::trusting_own_writes`], for
//! the finalPostguard). What that trusts, and why it is safe, is the doc of
//! [`crate::write_set`].

use bytes::Bytes;
use std::future::Future;

use crate::store::mismatch;
use crate::write_set::Recorded;
use crate::{Key, Store, StoreError};
use seal_core::canonical::Hash;

impl Store {
    /// Reads that may take what this process stored through this open store instead of
    /// re-reading and re-hashing it: for the finalPostguard only (a test keeps every other
    /// module from calling this). See the module doc for what that trusts.
    pub fn trusting_own_writes(&self) -> OwnWrites<'_> {
        OwnWrites { store: self }
    }

    /// Keys recorded in the write set and bytes it holds (for tests of its bound).
    #[doc(hidden)]
    pub fn write_set_usage(&self) -> (usize, usize) {
        self.recent.usage()
    }
}

/// The reads an audit makes, by the hash it expects. Two readers: [`Store`] re-reads and
/// re-hashes every byte (`seal verify`, imports, replay's source), [`OwnWrites`] may take this
/// process's write set (the finalPostguard). A type, not a flag, so that a verify cannot take
/// the trusted path by passing the wrong value.
pub trait Reads: Sync {
    /// The store underneath, for reads the write set has nothing to say about (listings).
    fn store(&self) -> &Store;
    /// The object's bytes, which hash to `expected` (else [`StoreError::HashMismatch`]).
    fn get_verified(
        &self,
        key: &Key,
        expected: &Hash,
    ) -> impl Future<Output = Result<Bytes, StoreError>> + Send;
    /// The object hashes to `expected`; its size.
    fn verify(
        &self,
        key: &Key,
        expected: &Hash,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// The object's bytes and their sha256; `None` when absent.
    fn get_opt_hashed(
        &self,
        key: &Key,
    ) -> impl Future<Output = Result<Option<(Bytes, Hash)>, StoreError>> + Send;
}

impl Reads for Store {
    fn store(&self) -> &Store {
        self
    }
    async fn get_verified(&self, key: &Key, expected: &Hash) -> Result<Bytes, StoreError> {
        Store::get_verified(self, key, expected).await
    }
    async fn verify(&self, key: &Key, expected: &Hash) -> Result<u64, StoreError> {
        self.check_hash(key, expected).await
    }
    async fn get_opt_hashed(&self, key: &Key) -> Result<Option<(Bytes, Hash)>, StoreError> {
        Ok(self.get_opt(key).await?.map(|b| {
            let h = Hash::of(&b);
            (b, h)
        }))
    }
}

/// Reads of the finalPostguard, which may take what this process wrote (see the module doc).
/// Only [`Store::trusting_own_writes`] makes one.
#[derive(Clone, Copy)]
pub struct OwnWrites<'a> {
    store: &'a Store,
}

impl OwnWrites<'_> {
    /// The held bytes of `key`, if the write set has them (within the document limit, like
    /// any read).
    fn held(&self, key: &Key) -> Result<Option<(Hash, Bytes)>, StoreError> {
        let Some(Recorded {
            hash,
            bytes: Some(bytes),
            ..
        }) = self.store.recent.get(key)
        else {
            return Ok(None);
        };
        if bytes.len() as u64 > self.store.doc_limit() {
            return Err(StoreError::TooLarge {
                key: key.to_string(),
                size: bytes.len() as u64,
                limit: self.store.doc_limit(),
            });
        }
        Ok(Some((hash, bytes)))
    }
}

impl Reads for OwnWrites<'_> {
    fn store(&self) -> &Store {
        self.store
    }

    async fn get_verified(&self, key: &Key, expected: &Hash) -> Result<Bytes, StoreError> {
        match self.held(key)? {
            Some((hash, bytes)) => mismatch(key, expected, hash).map(|()| bytes),
            None => self.store.get_verified(key, expected).await,
        }
    }

    async fn verify(&self, key: &Key, expected: &Hash) -> Result<u64, StoreError> {
        match self.store.recent.get(key) {
            Some(r) => mismatch(key, expected, r.hash).map(|()| r.size),
            None => self.store.check_hash(key, expected).await,
        }
    }

    async fn get_opt_hashed(&self, key: &Key) -> Result<Option<(Bytes, Hash)>, StoreError> {
        if let Some((hash, bytes)) = self.held(key)? {
            return Ok(Some((bytes, hash)));
        }
        Reads::get_opt_hashed(self.store, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Key {
        Key::parse(&format!("runs/r/obj-{i}.json")).unwrap()
    }

    #[tokio::test]
    async fn a_recorded_object_never_stands_for_other_bytes() {
        let store = Store::open("memory://").await.unwrap();
        let k = key(7);
        let mine = Bytes::from_static(b"{\"a\":1}");
        store.put(&k, mine.clone()).await.unwrap();
        let own = store.trusting_own_writes();
        // The recorded bytes answer for their own hash only.
        assert_eq!(own.get_verified(&k, &Hash::of(&mine)).await.unwrap(), mine);
        let theirs = Hash::of(b"{\"a\":2}");
        assert!(matches!(
            own.get_verified(&k, &theirs).await,
            Err(StoreError::HashMismatch { .. })
        ));
        assert!(matches!(
            own.verify(&k, &theirs).await,
            Err(StoreError::HashMismatch { .. })
        ));
        // A put of other bytes at the key is still a conflict, and is not recorded.
        let err = store
            .put(&k, Bytes::from_static(b"{\"a\":2}"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
        assert_eq!(own.get_verified(&k, &Hash::of(&mine)).await.unwrap(), mine);
    }

    #[tokio::test]
    async fn held_bytes_keep_the_document_limit() {
        let store = Store::open("memory://").await.unwrap();
        let k = key(8);
        let bytes = Bytes::from(vec![b' '; 100]);
        store.put(&k, bytes.clone()).await.unwrap();
        let small = store.clone().with_doc_limit(10);
        let err = small
            .trusting_own_writes()
            .get_verified(&k, &Hash::of(&bytes))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    }
}
