//! The `object_store` side of the backends: every call seal makes to an [`ObjectStore`]
//! (`memory://`, `s3://`, and the large-blob, copy and delete paths of `file://`), each with
//! its error named after the key and the operation.
//!
//! One decision: a create-only put is `PutMode::Create`, and a backend that answers
//! `AlreadyExists` or `Precondition` reports "not created" here, never an error: whether the
//! object there is the same is the facade's question (same bytes are success, others a
//! conflict), asked the same way on every backend.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sha2::{Digest as _, Sha256};

use crate::{Key, StoreError};
use seal_core::canonical::Hash;

/// The object path of a key. A [`Key`] has no empty, `.` or `..` segment and no character
/// `Path` would encode, so the path is the key's text.
pub(crate) fn path(key: &Key) -> Path {
    Path::from(key.as_str())
}

/// A backend error about `key`; a missing object is [`StoreError::NotFound`].
pub(crate) fn error(key: &Key, op: &'static str, e: object_store::Error) -> StoreError {
    match e {
        object_store::Error::NotFound { .. } => StoreError::NotFound { key: key.clone() },
        other => StoreError::Backend {
            key: key.to_string(),
            op,
            detail: other.to_string(),
        },
    }
}

/// A create-only put: `true` when this call created the object, `false` when the key was
/// taken (by any bytes).
pub(crate) async fn create(
    s: &dyn ObjectStore,
    key: &Key,
    bytes: Bytes,
) -> Result<bool, StoreError> {
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match s.put_opts(&path(key), PutPayload::from(bytes), opts).await {
        Ok(_) => Ok(true),
        Err(object_store::Error::AlreadyExists { .. })
        | Err(object_store::Error::Precondition { .. }) => Ok(false),
        Err(e) => Err(error(key, "create-only put", e)),
    }
}

/// The whole object, refused past `limit` bytes (its stored size says so before any read).
pub(crate) async fn read(s: &dyn ObjectStore, key: &Key, limit: u64) -> Result<Bytes, StoreError> {
    let r = s
        .get_opts(&path(key), GetOptions::default())
        .await
        .map_err(|e| error(key, "get", e))?;
    if r.meta.size > limit {
        return Err(StoreError::TooLarge {
            key: key.to_string(),
            size: r.meta.size,
            limit,
        });
    }
    r.bytes().await.map_err(|e| error(key, "read", e))
}

/// The object's bytes as a stream, never held whole.
pub(crate) async fn stream(
    s: &dyn ObjectStore,
    key: &Key,
) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
    let r = s
        .get_opts(&path(key), GetOptions::default())
        .await
        .map_err(|e| error(key, "get", e))?;
    let key = key.clone();
    Ok(r.into_stream()
        .map_err(move |e| error(&key, "read", e))
        .boxed())
}

/// The object streamed through SHA-256: its hash and size.
pub(crate) async fn hash(s: &dyn ObjectStore, key: &Key) -> Result<(Hash, u64), StoreError> {
    let mut bytes = stream(s, key).await?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = bytes.try_next().await? {
        size += chunk.len() as u64;
        hasher.update(&chunk);
    }
    Ok((Hash::from_hasher(hasher), size))
}

pub(crate) async fn exists(s: &dyn ObjectStore, key: &Key) -> Result<bool, StoreError> {
    match s.head(&path(key)).await {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(error(key, "head", e)),
    }
}

fn list_error(dir: &str, e: object_store::Error) -> StoreError {
    StoreError::Backend {
        key: dir.to_string(),
        op: "list",
        detail: e.to_string(),
    }
}

/// Every key under the folder `dir` (recursive), sorted. Names that are not keys are not
/// seal's objects and are left out (an object backend has no links or special files to
/// report).
pub(crate) async fn list(s: &dyn ObjectStore, dir: &str) -> Result<Vec<Key>, StoreError> {
    let prefix = Path::from(dir);
    let mut keys: Vec<Key> = s
        .list(Some(&prefix))
        .map_ok(|m| m.location.to_string())
        .try_collect::<Vec<_>>()
        .await
        .map_err(|e| list_error(dir, e))?
        .into_iter()
        .filter_map(|s| Key::parse(&s).ok())
        .collect();
    keys.sort();
    Ok(keys)
}

/// The numbers the objects directly in `dir` are named by (see [`crate::Store::numbered`]),
/// taken from the listing as it streams: one number kept a key.
pub(crate) async fn numbered(s: &dyn ObjectStore, dir: &str) -> Result<Vec<u64>, StoreError> {
    let prefix = Path::from(dir);
    let folder = format!("{dir}/");
    s.list(Some(&prefix))
        .map_err(|e| list_error(dir, e))
        .try_filter_map(|m| {
            let n = (m.location.as_ref().strip_prefix(folder.as_str()))
                .and_then(seal_core::key::numbered_name);
            std::future::ready(Ok(n))
        })
        .try_collect()
        .await
}

/// Every key under the folder `dir` (recursive), unless there are more than `limit`
/// objects: then `None` (a listing is a hint, and a folder crowded by a hostile writer must
/// not cost unbounded memory or time).
pub(crate) async fn keys_within(
    s: &dyn ObjectStore,
    dir: &str,
    limit: usize,
) -> Result<Option<std::collections::BTreeSet<Key>>, StoreError> {
    let prefix = Path::from(dir);
    let mut stream = s.list(Some(&prefix));
    let mut keys = std::collections::BTreeSet::new();
    let mut seen = 0usize;
    while let Some(meta) = stream.try_next().await.map_err(|e| list_error(dir, e))? {
        seen += 1;
        if seen > limit {
            return Ok(None);
        }
        if let Ok(k) = Key::parse(meta.location.as_ref()) {
            keys.insert(k);
        }
    }
    Ok(Some(keys))
}

/// The names directly under the folder `dir`: its sub-folders and its objects.
pub(crate) async fn names(s: &dyn ObjectStore, dir: &str) -> Result<Vec<String>, StoreError> {
    let listing = s
        .list_with_delimiter(Some(&Path::from(dir)))
        .await
        .map_err(|e| list_error(&format!("{dir}/"), e))?;
    let folders = listing.common_prefixes.iter().filter_map(|p| p.filename());
    let objects = listing.objects.iter().filter_map(|o| o.location.filename());
    Ok(folders.chain(objects).map(str::to_owned).collect())
}

/// Copies `from` to `to` unless `to` exists: `true` when this call created `to`.
pub(crate) async fn copy_if_absent(
    s: &dyn ObjectStore,
    from: &Key,
    to: &Key,
) -> Result<bool, StoreError> {
    match s.copy_if_not_exists(&path(from), &path(to)).await {
        Ok(()) => Ok(true),
        Err(object_store::Error::AlreadyExists { .. })
        | Err(object_store::Error::Precondition { .. }) => Ok(false),
        Err(e) => Err(error(to, "create-only copy", e)),
    }
}

/// Deletes `key`; absent already is success.
pub(crate) async fn delete(s: &dyn ObjectStore, key: &Key) -> Result<(), StoreError> {
    match s.delete(&path(key)).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(error(key, "delete", e)),
    }
}
