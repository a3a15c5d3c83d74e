//! The backend under the facade: a `file://` folder with seal's own write and read paths
//! ([`FileBackend`]), or any other `object_store` (`memory://`, `s3://`).
//!
//! Each operation is written once per arm here, so the facade never asks which backend it is
//! on; what `object_store` does the same way everywhere (multipart uploads, create-only copies,
//! deletes, the run listing) goes through [`Backend::objects`].

use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::ObjectStore;
use std::sync::Arc;

use crate::file::FileBackend;
use crate::object;
use crate::{Key, Listing, StoreError};
use seal_core::canonical::Hash;

#[derive(Clone)]
pub(crate) enum Backend {
    File(FileBackend),
    Object(Arc<dyn ObjectStore>),
}

impl Backend {
    /// The backend as an `object_store`, for what every backend does the same way.
    pub(crate) fn objects(&self) -> &dyn ObjectStore {
        match self {
            Backend::File(f) => f.objects(),
            Backend::Object(s) => s.as_ref(),
        }
    }

    pub(crate) fn is_file(&self) -> bool {
        matches!(self, Backend::File(_))
    }

    /// A create-only put: `true` when this call created the object, `false` when the key was
    /// taken (by any bytes: the facade compares).
    pub(crate) async fn create(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        match self {
            Backend::File(f) => f.create(key, bytes).await,
            Backend::Object(s) => object::create(s.as_ref(), key, bytes).await,
        }
    }

    /// The whole object, refused past `limit` bytes.
    pub(crate) async fn read(&self, key: &Key, limit: u64) -> Result<Bytes, StoreError> {
        match self {
            Backend::File(f) => f.read(key, limit).await,
            Backend::Object(s) => object::read(s.as_ref(), key, limit).await,
        }
    }

    /// The object streamed through SHA-256: its hash and size.
    pub(crate) async fn hash(&self, key: &Key) -> Result<(Hash, u64), StoreError> {
        match self {
            Backend::File(f) => f.hash(key).await,
            Backend::Object(s) => object::hash(s.as_ref(), key).await,
        }
    }

    pub(crate) async fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        match self {
            Backend::File(f) => f.exists(key).await,
            Backend::Object(s) => object::exists(s.as_ref(), key).await,
        }
    }

    pub(crate) async fn list(&self, dir: &str) -> Result<Listing, StoreError> {
        match self {
            Backend::File(f) => f.list(dir).await,
            Backend::Object(s) => Ok(Listing {
                keys: object::list(s.as_ref(), dir).await?,
                foreign: Vec::new(),
            }),
        }
    }

    pub(crate) async fn numbered(&self, dir: &str) -> Result<Vec<u64>, StoreError> {
        match self {
            Backend::File(f) => f.numbered(dir).await,
            Backend::Object(s) => object::numbered(s.as_ref(), dir).await,
        }
    }

    /// Deletes `key`; absent already is success.
    pub(crate) async fn remove(&self, key: &Key) -> Result<(), StoreError> {
        match self {
            Backend::File(f) => f.remove(key).await,
            Backend::Object(s) => object::delete(s.as_ref(), key).await,
        }
    }

    /// The names directly under the folder `dir`: its sub-folders and its objects.
    pub(crate) async fn names(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        match self {
            Backend::File(f) => f.names(dir).await,
            Backend::Object(s) => object::names(s.as_ref(), dir).await,
        }
    }

    /// Copies `from` to `to` unless `to` exists (a large blob's upload linked into place):
    /// `true` when this call created `to`.
    pub(crate) async fn copy_if_absent(&self, from: &Key, to: &Key) -> Result<bool, StoreError> {
        match self {
            Backend::File(f) => f.link_upload(from, to).await,
            Backend::Object(s) => object::copy_if_absent(s.as_ref(), from, to).await,
        }
    }

    /// The object's bytes as a stream, never held whole.
    pub(crate) async fn stream(
        &self,
        key: &Key,
    ) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        match self {
            Backend::File(f) => f.stream(key).await,
            Backend::Object(s) => object::stream(s.as_ref(), key).await,
        }
    }
}
