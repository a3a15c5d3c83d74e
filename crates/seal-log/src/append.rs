//! Appending to the log: one way in ([`Log::append`]) for every kind of leaf a process
//! appends (a seal's entry, a review's), one put-at-next-index loop ([`Log::place`], which a
//! rebuild's relogs use too) and one way a checkpoint is published ([`Log::publish_covering`]).
//!
//! No read of the next index before a create: the cache knows every leaf below its length
//! that the leaf being appended could already be (the run's, read since the process started
//! and below its starting checkpoint by their pointers), so a create that succeeds was made
//! after looking at all of them, and the same leaf is never appended twice; a conflict means
//! another process appended there, whose entry is authenticated and looked at before the next
//! index is tried (docs/DECISIONS.md, "The log uses create-only puts only").

use bytes::Bytes;

use seal_core::ids::RunId;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, LogEntry, NodeHash, PolicyEntry, ReportEntry, ReviewEntry};
use seal_store::{Key, StoreError};

use crate::cache::Cache;
use crate::checkpoints::{sign_checkpoint, store_pointers};
use crate::error::{corrupt, LogError};
use crate::log::Log;
use crate::storage::LogStorage;
use crate::stored::trusted_entry;
use crate::tiles;

/// Where an append put a run's seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub index: u64,
    /// False when the seal was already logged (by this or another replica).
    pub created: bool,
    /// Size of the checkpoint published after the append.
    pub tree_size: u64,
}

/// What [`Log::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealLogged {
    /// The entry is in the log: appended now, or found there already.
    Appended(Appended),
    /// Another seal of the same evidence is logged (a racing finalizer holding another key
    /// got there first): that seal is the run's, and its signer is storing it.
    Rival(LogEntry),
}

impl SealLogged {
    /// Where the leaf is, for callers that hold the only seal of the run (an import) or
    /// append a review (which has no rival).
    fn appended(self, run: &RunId) -> Result<Appended, LogError> {
        match self {
            SealLogged::Appended(a) => Ok(a),
            SealLogged::Rival(e) => Err(LogError::NotSealed {
                run: run.clone(),
                detail: format!(
                    "another seal of this evidence is logged (seal sha256 {})",
                    e.seal_sha256
                ),
            }),
        }
    }
}

/// A leaf to append, of a kind a process appends (a rebuild's own entry is written at its
/// index by the rebuild, never appended).
#[derive(Debug, Clone, Copy)]
pub enum NewLeaf<'a> {
    /// A seal's entry, and what the caller knows of the evidence it is over.
    Seal {
        run: &'a RunId,
        entry: &'a LogEntry,
        evidence: EvidenceWas,
    },
    /// A review's entry.
    Review(&'a ReviewEntry),
    /// A judge policy's registration.
    Policy(&'a PolicyEntry),
    /// A signed reliability report's entry.
    Report(&'a ReportEntry),
}

impl NewLeaf<'_> {
    /// The leaf's canonical bytes without `auth`: what is signed for its index.
    fn unsigned(&self) -> Result<Vec<u8>, LogError> {
        match self {
            NewLeaf::Seal { run, entry, .. } => entry.to_bytes().map_err(|e| LogError::NotSealed {
                run: (*run).clone(),
                detail: e.to_string(),
            }),
            NewLeaf::Review(r) => r.to_bytes().map_err(|e| LogError::Corrupt {
                key: format!("runs/{}/reviews", r.run_id),
                detail: e.to_string(),
            }),
            NewLeaf::Policy(p) => p.to_bytes().map_err(|e| LogError::Corrupt {
                key: format!("policies/{}.json", p.policy_sha256),
                detail: e.to_string(),
            }),
            NewLeaf::Report(r) => r.to_bytes().map_err(|e| LogError::Corrupt {
                key: format!("reports/{}.json", r.report_sha256),
                detail: e.to_string(),
            }),
        }
    }

    /// Where the log this process holds has this leaf already (`content`: the hash of its
    /// bytes without `auth`), or, for a seal, another seal of the same evidence.
    fn found_in(&self, cache: &Cache, content: &NodeHash) -> Option<Placed> {
        match self {
            NewLeaf::Seal { entry, .. } => {
                if let Some(index) = cache.find(&entry.run_id, content) {
                    return Some(Placed::At {
                        index,
                        created: false,
                    });
                }
                cache.rival(entry, content).map(Placed::Rival)
            }
            NewLeaf::Review(_) | NewLeaf::Report(_) => {
                cache.others.get(content).map(|&index| Placed::At {
                    index,
                    created: false,
                })
            }
            // A policy is registered once: its first leaf, whenever it was appended.
            NewLeaf::Policy(p) => cache
                .policies
                .get(&p.policy_sha256)
                .map(|&index| Placed::At {
                    index,
                    created: false,
                }),
        }
    }
}

impl<S: LogStorage> Log<S> {
    /// Appends `leaf` unless that very leaf is logged already (a seal's: log before seal, see
    /// the crate doc; a review's: log before store), then returns once a checkpoint of a tree
    /// that holds it is stored: the one it publishes, or one another appender of this process
    /// published meanwhile ([`Log::publish_covering`]). Appends nothing when another seal of
    /// the same evidence is logged ([`SealLogged::Rival`]). The guard runs first, trusting
    /// `key` and `trusted` besides the log's own keys.
    pub async fn append(
        &self,
        leaf: NewLeaf<'_>,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<SealLogged, LogError> {
        let (index, created) = {
            let mut cache = self.cache.lock().await;
            self.admit_locked(&mut cache, &self.trust_of(key, trusted))
                .await?;
            match leaf {
                // A seal over evidence created in this very call has no leaf from before this
                // process started: its run's pointers are not listed (one request a run on an
                // object store).
                NewLeaf::Seal { run, evidence, .. } => {
                    if evidence == EvidenceWas::Stored {
                        self.load_run(&mut cache, run.as_str()).await?;
                    }
                }
                NewLeaf::Review(r) => {
                    self.sync(&mut cache).await?;
                    self.load_run(&mut cache, &r.run_id).await?;
                }
                NewLeaf::Policy(p) => {
                    self.sync(&mut cache).await?;
                    self.load_policy(&mut cache, p).await?;
                }
                NewLeaf::Report(_) => self.sync(&mut cache).await?,
            }
            match self.place(&mut cache, leaf, key).await? {
                Placed::At { index, created } => (index, created),
                Placed::Rival(index) => {
                    let rival = self.entry_at(&cache, index).await?;
                    return Ok(SealLogged::Rival(rival));
                }
            }
        };
        // The entry's pointer is stored with the checkpoint's tiles, before the checkpoint
        // (outside the cache's lock, so that appends are not serialized behind one more write
        // each).
        let tree_size = self.publish_covering(index + 1, key).await?;
        Ok(SealLogged::Appended(Appended {
            index,
            created,
            tree_size,
        }))
    }

    /// [`Log::append`] of the entry of a seal the postguard is about to store.
    pub async fn append_seal(
        &self,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
    ) -> Result<SealLogged, LogError> {
        self.append_seal_as(run, entry, key, EvidenceWas::Stored)
            .await
    }

    /// [`Log::append`] of the entry of a seal the postguard is about to store, over evidence
    /// `evidence` ([`EvidenceWas::CreatedNow`]: created in this very call).
    pub async fn append_seal_as(
        &self,
        run: &RunId,
        entry: &LogEntry,
        key: &SigningKey,
        evidence: EvidenceWas,
    ) -> Result<SealLogged, LogError> {
        let leaf = NewLeaf::Seal {
            run,
            entry,
            evidence,
        };
        self.append(leaf, key, &[]).await
    }

    /// [`Log::append`] of the entry of a run this process is importing from an archive
    /// (`seal replay --from`), computed from the seal and evidence `staged` (verified there
    /// under `trusted`), before the import stores the seal: log before seal, as the
    /// postguard does, so that no other process ever sees the imported seal unlogged. `key`
    /// signs the checkpoint. Import copies verified bytes; it signs no seal.
    pub async fn append_imported(
        &self,
        run: &RunId,
        staged: &impl LogStorage,
        key: &SigningKey,
        trusted: &[PublicKey],
    ) -> Result<Appended, LogError> {
        let entry = trusted_entry(staged, run, trusted).await?;
        let leaf = NewLeaf::Seal {
            run,
            entry: &entry,
            evidence: EvidenceWas::Stored,
        };
        self.append(leaf, key, trusted).await?.appended(run)
    }

    /// [`Log::append`] of the entry of a review about to be stored. A crash between the two
    /// leaves a logged review that is not stored: `seal log verify` lists it as pending, and
    /// sending the same envelope again stores it.
    pub async fn append_review(
        &self,
        entry: &ReviewEntry,
        key: &SigningKey,
    ) -> Result<Appended, LogError> {
        let run = RunId::parse(&entry.run_id).map_err(|e| LogError::Corrupt {
            key: format!("runs/{}/reviews", entry.run_id),
            detail: e.to_string(),
        })?;
        self.append(NewLeaf::Review(entry), key, &[])
            .await?
            .appended(&run)
    }

    /// [`Log::append`] of a judge policy's registration, unless the policy is registered
    /// already (then its first leaf: a policy is registered once, whoever registered it). The
    /// caller has stored the policy's bytes at `policies/<sha256>.json` first.
    pub async fn append_policy(
        &self,
        entry: &PolicyEntry,
        key: &SigningKey,
    ) -> Result<Appended, LogError> {
        match self.append(NewLeaf::Policy(entry), key, &[]).await? {
            SealLogged::Appended(a) => Ok(a),
            SealLogged::Rival(_) => Err(LogError::Corrupt {
                key: format!("policies/{}.json", entry.policy_sha256),
                detail: "a policy has no rival".into(),
            }),
        }
    }

    /// [`Log::append`] of a signed reliability report's entry. The caller has stored the
    /// report's envelope at `reports/<sha256>.json` first: the leaf is the commit, and a
    /// crash before it leaves a stored report the log never names (not published).
    pub async fn append_report(
        &self,
        entry: &ReportEntry,
        key: &SigningKey,
    ) -> Result<Appended, LogError> {
        match self.append(NewLeaf::Report(entry), key, &[]).await? {
            SealLogged::Appended(a) => Ok(a),
            SealLogged::Rival(_) => Err(LogError::Corrupt {
                key: format!("reports/{}.json", entry.report_sha256),
                detail: "a report has no rival".into(),
            }),
        }
    }

    /// The judge policy registered at leaf `index`, as the tree this process holds says:
    /// `None` when the leaf is not a policy's (or the tree has no such leaf). The entry is read
    /// from the store and believed only when it hashes to the tree's leaf there (after the
    /// guard, as every read an append relies on).
    pub async fn policy_at(
        &self,
        index: u64,
        key: &SigningKey,
    ) -> Result<Option<PolicyEntry>, LogError> {
        let mut cache = self.cache.lock().await;
        self.admit_locked(&mut cache, &self.trust_of(key, &[]))
            .await?;
        if index >= cache.tree.size() {
            self.sync(&mut cache).await?;
        }
        let Some(hash) = cache.tree.leaf(index) else {
            return Ok(None);
        };
        let k = Key::log_entry(index);
        let Some(bytes) = self.store.get_opt(&k).await? else {
            return Err(corrupt(
                &k,
                "the log's tree holds this entry, but it is gone",
            ));
        };
        if tlog::leaf_hash(&bytes) != hash {
            return Err(corrupt(
                &k,
                "not the entry the log's tree holds at this index: it was replaced",
            ));
        }
        match tlog::Leaf::from_bytes(&bytes).map_err(|e| corrupt(&k, e))? {
            tlog::Leaf::Policy(p) => Ok(Some(p)),
            _ => Ok(None),
        }
    }

    /// The one put-at-next-index loop: places `leaf` in the log `cache` holds, found there
    /// already (or, for a seal, its rival), else created at the next free index, retrying at
    /// the next one while other processes take them (see the module doc).
    pub(crate) async fn place(
        &self,
        cache: &mut Cache,
        leaf: NewLeaf<'_>,
        key: &SigningKey,
    ) -> Result<Placed, LogError> {
        let unsigned = leaf.unsigned()?;
        let content = tlog::leaf_hash(&unsigned);
        loop {
            if let Some(placed) = leaf.found_in(cache, &content) {
                return Ok(placed);
            }
            let index = cache.tree.size();
            if let Some(created) = self.create_entry(cache, index, &unsigned, key).await? {
                return Ok(Placed::At { index, created });
            }
        }
    }

    /// Creates leaf `index` as `unsigned` signed for this log and that index
    /// ([`tlog::sign_leaf`]): `Some(created)` once it is there (`false`: the same bytes were,
    /// from a racing replica appending the same entry), `None` when another entry took the
    /// index (read, authenticated and adopted: the caller looks again). An entry there that
    /// does not authenticate is refused ([`Cache::push`]).
    pub(crate) async fn create_entry(
        &self,
        cache: &mut Cache,
        index: u64,
        unsigned: &[u8],
        key: &SigningKey,
    ) -> Result<Option<bool>, LogError> {
        let k = Key::log_entry(index);
        let at = tlog::Place::next_of(&cache.tree)?;
        if at.index != index {
            return Err(corrupt(
                &k,
                "not the next index of the log this process holds",
            ));
        }
        let bytes = Bytes::from(tlog::sign_leaf(unsigned, &self.origin, &at, &|m| {
            key.sign(m)
        })?);
        match self.store.create(&k, bytes.clone()).await {
            Ok(created) => {
                cache.push_trusted(&bytes, &k)?;
                Ok(Some(created))
            }
            // Another replica took this index: learn its entry (if it is this log's).
            Err(StoreError::Conflict { .. }) => {
                let theirs = self.store.get(&k).await?;
                cache.push(&theirs, &k)?;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Returns once a checkpoint of at least `needed` leaves is stored, publishing one of
    /// everything appended so far unless this process already did: the size of that
    /// checkpoint. The checkpoint is made durable outside the cache's lock, so entries go on
    /// being appended meanwhile, and the appenders queued behind it find them covered by the
    /// next one: under load, one checkpoint (one signature, one create, its flushes) per batch
    /// of entries instead of one per seal. Each caller still returns only after a checkpoint
    /// holding its entry is stored (log, checkpoint, then seal: the module doc).
    pub(crate) async fn publish_covering(
        &self,
        needed: u64,
        key: &SigningKey,
    ) -> Result<u64, LogError> {
        let _turn = self.publishing.lock().await;
        let (size, note, due, pointers) = {
            let cache = self.cache.lock().await;
            if cache.published >= needed {
                return Ok(cache.published);
            }
            let size = cache.tree.size();
            // The tree only grows while this process appends; a smaller one means the log was
            // replaced under it (a rebuild): no checkpoint may then claim to cover the entry.
            if size < needed {
                return Err(LogError::Corrupt {
                    key: Key::log_checkpoint(needed).to_string(),
                    detail: format!(
                        "the log holds {size} entries, fewer than the {needed} just appended: \
                         it was replaced while this process appended"
                    ),
                });
            }
            let note = sign_checkpoint(&self.origin, &cache.tree, size, key)?;
            let due = tiles::due(&cache.tree, cache.tiled.min(size), size)?;
            (size, Bytes::from(note), due, cache.pointers_due(size))
        };
        // The tiles and the pointers first: a stored checkpoint's tiles are all there for its
        // readers, and every leaf it covers can be found from its run.
        tokio::try_join!(
            tiles::store_all(&self.store, due),
            store_pointers(&self.store, &pointers)
        )?;
        {
            let mut cache = self.cache.lock().await;
            cache.tiled_through(size);
            cache.pointed(&pointers);
        }
        let created = self.store_checkpoint(size, &note).await?;
        if created {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            self.last_checkpoint_unix
                .store(now, std::sync::atomic::Ordering::Relaxed);
        }
        let mut cache = self.cache.lock().await;
        // The tree only grows (entries are create-only), so its first `size` leaves are the
        // ones just signed, and a witness is offered the proofs of that size.
        if created && cache.tree.size() >= size {
            self.witnesses.offer(&cache.tree, size, &note);
        }
        cache.published = cache.published.max(size);
        Ok(size)
    }

    /// Stores the checkpoint `note` of `size` leaves, create-only; false when another
    /// checkpoint of that size was there (another key's, or a forger's: `seal log verify`
    /// judges it).
    pub(crate) async fn store_checkpoint(&self, size: u64, note: &Bytes) -> Result<bool, LogError> {
        let k = Key::log_checkpoint(size);
        match self.store.create(&k, note.clone()).await {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. }) => {
                tracing::warn!(key = %k, "another checkpoint of this size is stored");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// What the caller of an append knows of the evidence its seal is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceWas {
    /// Its create-only put succeeded in this very call, so no leaf can name it from before
    /// this process started: an appender stores the evidence before it appends, so every leaf
    /// naming it was appended after that create, at an index this process reads (past its
    /// starting checkpoint). Wrong only if the store writer deleted the evidence, and then
    /// the cost is a second leaf for the run (`run_relogged`), never a seal unlogged.
    CreatedNow,
    /// Anything else: the run's leaves below the starting checkpoint are looked up.
    Stored,
}

/// Where [`Log::place`] left a leaf.
pub(crate) enum Placed {
    At {
        index: u64,
        created: bool,
    },
    /// The leaf of another seal of the same evidence.
    Rival(u64),
}

impl Placed {
    /// The index, for callers that hold the only seal of the run (an import, a rebuild).
    pub(crate) fn at(self, run: &RunId) -> Result<(u64, bool), LogError> {
        match self {
            Placed::At { index, created } => Ok((index, created)),
            Placed::Rival(index) => Err(LogError::NotSealed {
                run: run.clone(),
                detail: format!("another seal of this evidence is logged (leaf {index})"),
            }),
        }
    }
}
