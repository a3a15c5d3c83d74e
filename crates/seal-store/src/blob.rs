//! Blobs (frames and images): streamed into `cas/sha256/<aa>/<hex>` with memory bounded by the
//! part size whatever the blob size.
//!
//! A small blob is buffered and stored through the facade's one create path. A large one is
//! streamed to a scratch key (`tmp/uploads/…`) as a multipart upload while it is hashed, then
//! linked into place with a create-only copy: its CAS name is known only once the last byte
//! is in, and nothing is ever written at a CAS key that does not hash to it.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use object_store::{ObjectStoreExt, WriteMultipart};
use sha2::{Digest as _, Sha256};

use crate::object;
use crate::{Key, Store, StoreError, Stored};
use seal_core::canonical::Hash;

/// Blobs up to this size are put in one request; larger ones stream as multipart uploads.
const SINGLE_PUT_MAX: usize = 8 * 1024 * 1024;
/// Part size of a streamed upload (S3 needs at least 5 MiB per part).
const PART_SIZE: usize = 8 * 1024 * 1024;

impl Store {
    /// Streams a blob into `cas/sha256/<aa>/<hex>`, hashing as it goes. With `expected`, bytes
    /// that hash otherwise are refused ([`StoreError::HashMismatch`]) and nothing is kept. At
    /// most `limit` bytes are accepted ([`StoreError::TooLarge`]).
    pub async fn put_blob<S, E>(
        &self,
        stream: S,
        expected: Option<&Hash>,
        limit: u64,
    ) -> Result<Stored, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        Ok(self.put_blob_once(stream, expected, limit).await?.stored)
    }

    /// [`Store::put_blob`], saying whether this call created the object: the API answers 201
    /// or 200 from it without asking the store first (one request less per frame on S3).
    pub async fn put_blob_once<S, E>(
        &self,
        stream: S,
        expected: Option<&Hash>,
        limit: u64,
    ) -> Result<crate::Put, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let mut stream = stream;
        let mut tally = Tally {
            hasher: Sha256::new(),
            size: 0,
            limit,
        };
        let mut head = BytesMut::new();
        if read_head(&mut stream, &mut tally, &mut head).await? {
            let hash = Hash::from_hasher(tally.hasher);
            check_expected(expected, &hash)?;
            return self.create(&Key::cas(&hash), head.freeze(), hash).await;
        }
        let scratch = Key::upload(rand::random());
        self.upload(&scratch, head.freeze(), &mut stream, &mut tally)
            .await?;
        let Tally { hasher, size, .. } = tally;
        let linked = self
            .link(&scratch, Hash::from_hasher(hasher), size, expected)
            .await;
        // Scratch objects are not evidence: removing them rewrites nothing.
        let _ = self.backend.remove(&scratch).await;
        let (stored, created) = linked?;
        self.cas_seen.record(&stored.hash, stored.size);
        Ok(crate::Put { stored, created })
    }

    /// Streams the rest of a large blob to `scratch` as one multipart upload, `head` first.
    /// A failed stream aborts the upload.
    async fn upload<S, E>(
        &self,
        scratch: &Key,
        head: Bytes,
        stream: &mut S,
        tally: &mut Tally,
    ) -> Result<(), StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        if let crate::backend::Backend::File(f) = &self.backend {
            // Written by seal itself beneath the store's root, never through a link.
            let mut file = f.scratch(scratch).await?;
            let streamed: Result<(), StoreError> = async {
                file.write(head).await?;
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(|e| StoreError::Upload(e.to_string()))?;
                    tally.add(&chunk)?;
                    file.write(chunk).await?;
                }
                file.finish().await
            }
            .await;
            if streamed.is_err() {
                let _ = self.backend.remove(scratch).await;
            }
            return streamed;
        }
        let upload = self
            .backend
            .objects()
            .put_multipart(&object::path(scratch))
            .await
            .map_err(|e| object::error(scratch, "start multipart upload", e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
        writer.put(head);
        let streamed: Result<(), StoreError> = async {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| StoreError::Upload(e.to_string()))?;
                tally.add(&chunk)?;
                writer
                    .wait_for_capacity(2)
                    .await
                    .map_err(|e| object::error(scratch, "upload part", e))?;
                writer.put(chunk);
            }
            Ok(())
        }
        .await;
        if let Err(e) = streamed {
            let _ = writer.abort().await;
            return Err(e);
        }
        writer
            .finish()
            .await
            .map_err(|e| object::error(scratch, "finish multipart upload", e))?;
        Ok(())
    }

    /// Links an uploaded scratch object into place at its CAS key, create-only; `true` when
    /// this call created it.
    async fn link(
        &self,
        scratch: &Key,
        hash: Hash,
        size: u64,
        expected: Option<&Hash>,
    ) -> Result<(Stored, bool), StoreError> {
        check_expected(expected, &hash)?;
        let key = Key::cas(&hash);
        let linked_ours = self.backend.copy_if_absent(scratch, &key).await?;
        if linked_ours {
            crate::store::crash::after_write(&key);
        }
        // A local hard link is the very file just hashed; anything else (someone else's
        // object, a server-side copy) is re-hashed: a CAS key must hash to its name.
        if linked_ours && self.backend.is_file() {
            return Ok((Stored { key, hash, size }, true));
        }
        let stored_size = self.verify(&key, &hash).await?;
        Ok((
            Stored {
                key,
                hash,
                size: stored_size,
            },
            linked_ours,
        ))
    }
}

/// The hash and size of a blob as it streams in; past `limit` bytes it is refused.
struct Tally {
    hasher: Sha256,
    size: u64,
    limit: u64,
}

impl Tally {
    fn add(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        self.size += chunk.len() as u64;
        if self.size > self.limit {
            return Err(StoreError::TooLarge {
                key: "blob".into(),
                size: self.size,
                limit: self.limit,
            });
        }
        self.hasher.update(chunk);
        Ok(())
    }
}

/// Buffers the start of a blob into `head`: `true` when the stream ended there (the whole
/// blob is in `head`), `false` as soon as `head` is over [`SINGLE_PUT_MAX`].
async fn read_head<S, E>(
    stream: &mut S,
    tally: &mut Tally,
    head: &mut BytesMut,
) -> Result<bool, StoreError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    loop {
        match stream.next().await {
            None => return Ok(true),
            Some(Err(e)) => return Err(StoreError::Upload(e.to_string())),
            Some(Ok(chunk)) => {
                tally.add(&chunk)?;
                head.extend_from_slice(&chunk);
                if head.len() > SINGLE_PUT_MAX {
                    return Ok(false);
                }
            }
        }
    }
}

fn check_expected(expected: Option<&Hash>, actual: &Hash) -> Result<(), StoreError> {
    match expected {
        Some(e) if e != actual => Err(StoreError::HashMismatch {
            key: Key::cas(e),
            expected: e.clone(),
            actual: actual.clone(),
        }),
        _ => Ok(()),
    }
}
