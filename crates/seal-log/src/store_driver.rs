//! [`LogStorage`] on seal's store ([`seal_store::Store`]): each operation is the store's own,
//! so the log's objects are written, read, bounded and made durable exactly as every other
//! object of the store. The one removal is refused here for anything [`removable`] does not
//! name, before the store is asked.

use bytes::Bytes;

use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_store::{Bounded, CopiedAside, Key, Listing, Store, StoreError};

use crate::storage::{removable, LogStorage};

impl LogStorage for Store {
    async fn create(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        Ok(self.put(key, bytes).await?.created)
    }

    async fn get_opt(&self, key: &Key) -> Result<Option<Bytes>, StoreError> {
        Store::get_opt(self, key).await
    }

    async fn get_bounded(&self, key: &Key, bound: u64) -> Result<Bounded, StoreError> {
        Store::get_bounded(self, key, bound).await
    }

    async fn hash(&self, key: &Key) -> Result<(Hash, u64), StoreError> {
        Store::hash(self, key).await
    }

    async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        Store::exists(self, key).await
    }

    async fn list(&self, dir: &str) -> Result<Listing, StoreError> {
        Store::list(self, dir).await
    }

    async fn numbers(&self, dir: &str) -> Result<Vec<u64>, StoreError> {
        Store::numbered(self, dir).await
    }

    async fn runs(&self) -> Result<Vec<RunId>, StoreError> {
        Ok(Store::runs(self).await?.runs)
    }

    async fn copy_aside(&self, from: &Key, to: &Key) -> Result<CopiedAside, StoreError> {
        Store::copy_aside(self, from, to).await
    }

    async fn remove_copied(&self, aside: &CopiedAside) -> Result<(), StoreError> {
        let key = aside.from();
        if !removable(key) {
            return Err(StoreError::Backend {
                key: key.to_string(),
                op: "delete",
                detail: "only log entries, checkpoints and tiles are ever removed".into(),
            });
        }
        Store::remove_copied(self, aside).await
    }

    fn doc_limit(&self) -> u64 {
        Store::doc_limit(self)
    }

    async fn get(&self, key: &Key) -> Result<Bytes, StoreError> {
        Store::get(self, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        Key::parse(s).unwrap()
    }

    /// The log removes only an entry, checkpoint or tile it copied aside: the copy holds the
    /// bytes afterwards, and a run's object, even copied, is refused and stays.
    #[tokio::test]
    async fn only_a_log_object_copied_aside_is_removed() {
        let store = Store::open("memory://").await.unwrap();
        let tile = key("log/tile/8/0/000");
        let run_doc = key("runs/r1/header.json");
        for k in [&tile, &run_doc] {
            LogStorage::create(&store, k, Bytes::from_static(b"{}"))
                .await
                .unwrap();
        }

        let to = key("log/superseded/1-2/tile/8/0/000");
        let aside = LogStorage::copy_aside(&store, &tile, &to).await.unwrap();
        LogStorage::remove_copied(&store, &aside).await.unwrap();
        assert!(store.get_opt(&tile).await.unwrap().is_none());
        assert_eq!(store.get(&to).await.unwrap(), Bytes::from_static(b"{}"));
        // Removed already: success, nothing else touched.
        LogStorage::remove_copied(&store, &aside).await.unwrap();

        let to = key("log/superseded/1-2/runs/r1/header.json");
        let aside = LogStorage::copy_aside(&store, &run_doc, &to).await.unwrap();
        let err = LogStorage::remove_copied(&store, &aside).await.unwrap_err();
        assert!(err.to_string().contains("runs/r1/header.json"), "{err}");
        assert!(store.get_opt(&run_doc).await.unwrap().is_some());
    }

    /// A missing object is not copied, so it can never be named for removal.
    #[tokio::test]
    async fn nothing_missing_is_copied_aside() {
        let store = Store::open("memory://").await.unwrap();
        let err = LogStorage::copy_aside(
            &store,
            &key("log/entries/00000000000000000000"),
            &key("log/superseded/x/entries/00000000000000000000"),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    }
}
