//! [`LogStorage`] on seal's store ([`seal_store::Store`]): each operation is the store's own,
//! so the log's objects are written, read, bounded and made durable exactly as every other
//! object of the store. The one removal is refused here for anything [`removable`] does not
//! name, before the store is asked.

use bytes::Bytes;

use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_store::{Bounded, Key, Listing, Store, StoreError};

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

    async fn remove(&self, key: &Key) -> Result<(), StoreError> {
        if !removable(key) {
            return Err(StoreError::Backend {
                key: key.to_string(),
                op: "delete",
                detail: "only log entries, checkpoints and tiles are ever removed".into(),
            });
        }
        Store::remove(self, key).await
    }

    fn doc_limit(&self) -> u64 {
        Store::doc_limit(self)
    }

    async fn get(&self, key: &Key) -> Result<Bytes, StoreError> {
        Store::get(self, key).await
    }
}
