//! The reads an audit makes ([`Reads`]), and the one reader that may take this process's write
//! set instead of the store ([`OwnWrites`], made only by [`Store::trusting_own_writes`], for
//! the finalPostguard and the daemon's request path). What that trusts, and why it is safe, is
//! the doc of [`crate::write_set`].

use bytes::Bytes;
use std::future::Future;

use crate::parse_stored;
use crate::store::mismatch;
use crate::write_set::Recorded;
use crate::{Key, Store, StoreError};
use seal_core::canonical::Hash;
use serde::de::DeserializeOwned;

impl Store {
    /// Reads that may take what this process stored through this open store instead of
    /// re-reading and re-hashing it: for the finalPostguard and the daemon's request path only
    /// (a test keeps every other module from calling this). See the module doc for what that
    /// trusts.
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
    /// Whether an object is at `key`. An absence is always asked of the store: another
    /// process may have written it since.
    fn exists(&self, key: &Key) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Whether this reader answers for `key` without the store (this process stored it): a
    /// listing that lacks such a key (a listing lagging behind a put) must not hide it.
    fn holds(&self, _key: &Key) -> bool {
        false
    }

    /// The object's bytes; `None` when absent.
    fn get_opt(&self, key: &Key) -> impl Future<Output = Result<Option<Bytes>, StoreError>> + Send {
        async move { Ok(self.get_opt_hashed(key).await?.map(|(b, _)| b)) }
    }

    /// The object, which hashes to `expected`, strictly parsed as a JSON document.
    fn get_json_verified<T: DeserializeOwned + Send>(
        &self,
        key: &Key,
        expected: &Hash,
    ) -> impl Future<Output = Result<T, StoreError>> + Send {
        async move {
            let bytes = self.get_verified(key, expected).await?;
            parse_stored(key, &bytes, self.store().doc_limit())
        }
    }

    /// The object strictly parsed as a JSON document (within the store's document limit),
    /// with the sha256 of its bytes; `None` when absent.
    fn get_json<T: DeserializeOwned + Send>(
        &self,
        key: &Key,
    ) -> impl Future<Output = Result<Option<(T, Hash)>, StoreError>> + Send {
        async move {
            let Some((bytes, hash)) = self.get_opt_hashed(key).await? else {
                return Ok(None);
            };
            let doc = parse_stored(key, &bytes, self.store().doc_limit())?;
            Ok(Some((doc, hash)))
        }
    }
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
        Ok(Store::get_opt(self, key).await?.map(|b| {
            let h = Hash::of(&b);
            (b, h)
        }))
    }
    async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        Store::exists(self, key).await
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
        self.store.tally.note(key);
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
            Some(r) => {
                self.store.tally.note(key);
                mismatch(key, expected, r.hash).map(|()| r.size)
            }
            None => self.store.check_hash(key, expected).await,
        }
    }

    async fn get_opt_hashed(&self, key: &Key) -> Result<Option<(Bytes, Hash)>, StoreError> {
        if let Some((hash, bytes)) = self.held(key)? {
            return Ok(Some((bytes, hash)));
        }
        Reads::get_opt_hashed(self.store, key).await
    }

    async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        if self.holds(key) {
            return Ok(true);
        }
        Store::exists(self.store, key).await
    }

    fn holds(&self, key: &Key) -> bool {
        self.store.recent.get(key).is_some()
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
    async fn a_folder_listing_is_bounded_and_only_on_object_backends() {
        let store = Store::open("memory://").await.unwrap();
        for i in 0..3 {
            store.put(&key(i), Bytes::from_static(b"{}")).await.unwrap();
        }
        store
            .put(
                &Key::parse("runs/r2/obj-0.json").unwrap(),
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        let listed = store.keys_within("runs/r", 3).await.unwrap().unwrap();
        // Exactly that folder's keys: not `runs/r2`, which only shares the prefix's text.
        assert_eq!(
            listed.into_iter().collect::<Vec<_>>(),
            vec![key(0), key(1), key(2)]
        );
        // A folder holding more than the limit is not listed.
        assert_eq!(store.keys_within("runs/r", 2).await.unwrap(), None);
        assert_eq!(
            store.keys_within("runs/none", 2).await.unwrap(),
            Some(Default::default())
        );
        // On a file store a lookup is a local stat: no listing.
        let dir = tempfile::tempdir().unwrap();
        let file = Store::open(&format!("file://{}", dir.path().display()))
            .await
            .unwrap();
        file.put(&key(0), Bytes::from_static(b"{}")).await.unwrap();
        assert_eq!(file.keys_within("runs/r", 10).await.unwrap(), None);
    }

    #[tokio::test]
    async fn own_reads_take_a_recorded_object_but_ask_the_store_about_an_absent_one() {
        let store = Store::open("memory://").await.unwrap();
        let own = store.trusting_own_writes();
        let k = key(9);
        assert!(!own.exists(&k).await.unwrap());
        assert_eq!(own.get_json::<serde_json::Value>(&k).await.unwrap(), None);
        // Written through another handle on the same backend (another replica): the write
        // set of `store` does not hold it, and the store is asked.
        let other = store.clone_without_write_set();
        other
            .put(&k, Bytes::from_static(b"{\"a\":1}"))
            .await
            .unwrap();
        assert_eq!(store.write_set_usage().0, 0);
        assert!(own.exists(&k).await.unwrap());
        let (v, h) = own
            .get_json::<serde_json::Value>(&k)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v, serde_json::json!({"a": 1}));
        assert_eq!(h, Hash::of(b"{\"a\":1}"));
        // Only what this process stored is held (a listing may not hide it): not the other
        // handle's object, and never through the re-hashing reader.
        assert!(!own.holds(&k));
        let mine = key(10);
        store.put(&mine, Bytes::from_static(b"{}")).await.unwrap();
        assert!(own.holds(&mine));
        assert!(!Reads::holds(&store, &mine));
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
