//! The whole log checked in one pass that keeps almost nothing: what `seal verify --all`,
//! `seal stats` and `seal labels` read first, so that their memory does not grow with the log
//! (issue 25: verify's memory flat from 1,000 to 100,000 runs).
//!
//! The pass reads every entry in order, once, and keeps: the right edge of the tree
//! ([`RightEdge`], O(log n) hashes), a sha256 of each group of 256 leaf hashes (one level-0
//! tile's bytes: 32 bytes per 256 leaves) and the leaf hashes past the latest checkpoint. It
//! ends [`Pass::Clean`] only when all of this holds:
//! - the entries the latest trusted checkpoint covers are all stored, parse, and hash to its
//!   signed root; a rebuild entry's signature verifies;
//! - every seal and review leaf under that checkpoint has its pointer (`log/runs/<run>/<index>`),
//!   and the few past it that have none yet (an append stores its pointer with the next
//!   checkpoint's tiles) are kept: the pointers and those are a complete index of the runs'
//!   leaves, as of the pass.
//!
//! Each run is then read by its pointers ([`LogView::for_runs_passed`]): the entry at each
//! pointer must hash to the leaf the pass authenticated, found in the stored level-0 tile whose
//! bytes hash to the group's digest (or, past the checkpoint, in the pass's tail). A pointer
//! or tile that is wrong, or an entry rewritten since the pass, sends that run to the whole
//! log, read once, as before.
//!
//! Anything else the pass finds ([`Pass::Whole`]) means "read the whole log" ([`LogView::load`]):
//! the pass only ever decides to defer to it. A damaged log costs the memory it always did; a
//! sound one costs O(n / 256) (docs/DECISIONS.md, "Start-up independent of history").

use futures::{StreamExt, TryStreamExt};
use sha2::{Digest, Sha256};
use std::sync::Mutex;

use crate::storage::LogStorage;
use crate::view::{latest_trusted, READ_AHEAD};
use seal_core::ids::RunId;
use seal_core::tlog::{
    self, Leaf, LogTrust, NodeHash, RightEdge, SignedCheckpoint, Tile, TILE_HEIGHT,
};
use seal_store::{Key, StoreError};

/// Leaves a level-0 tile holds.
const GROUP: u64 = 1 << TILE_HEIGHT;
/// Level-0 tiles a [`Passed`] keeps after checking them (runs next to each other in the store
/// are often next to each other in the log).
const TILES_KEPT: usize = 16;

/// What the pass over the log found.
#[derive(Debug)]
pub enum Pass {
    /// A log whose runs can each be read by their pointers.
    Clean(Box<Passed>),
    /// Read the whole log: why not the pointers (for the log line; the whole log names it).
    Whole(String),
}

/// What a clean pass keeps: enough to authenticate any leaf it read, from the stored tiles.
#[derive(Debug)]
pub struct Passed {
    /// The latest checkpoint a trusted key signed: the entries below its size hash to its root.
    pub latest: SignedCheckpoint,
    /// sha256 of the leaf hashes of each group of 256 leaves below `latest.size` (the last
    /// group may be partial): the bytes of that level-0 tile of the signed tree.
    groups: Vec<[u8; 32]>,
    /// The leaf hashes of the entries read past `latest.size`.
    tail: Vec<NodeHash>,
    /// Leaves past `latest.size` whose pointer is not stored yet (an append stores it with
    /// the next checkpoint's tiles): their run and index.
    unpointed: Vec<(RunId, u64)>,
    /// Level-0 tiles read and found to be the groups' bytes, most recent last.
    tiles: Mutex<Vec<(u64, bytes::Bytes)>>,
}

/// One entry as the pass reads it, or why the whole log must be read.
type Read = Result<Entry, Unread>;

/// Why the pass cannot take an entry as it is (the whole log's readers name it).
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error(transparent)]
    Leaf(#[from] tlog::TlogError),
    #[error("names no valid run id ({0:?})")]
    RunId(String),
}

/// An entry that parses (and, a rebuild entry, verifies).
struct Entry {
    hash: NodeHash,
    /// The run a seal or review leaf is about, when its pointer is not stored.
    unpointed: Option<RunId>,
    /// Past the checkpoint: the bytes, for the pass to authenticate after the leaves before
    /// it (it alone holds their root).
    tail: Option<bytes::Bytes>,
}

impl Passed {
    /// The runs of the leaves the pass found without a pointer (past the checkpoint).
    pub fn unpointed_runs(&self) -> impl Iterator<Item = RunId> + '_ {
        self.unpointed.iter().map(|(run, _)| run.clone())
    }

    /// Entries the pass read: the checkpoint's and the tail past it.
    pub fn size(&self) -> u64 {
        self.latest.size + self.tail.len() as u64
    }

    /// The leaves past the checkpoint about `run` that have no pointer yet.
    pub(super) fn unpointed(&self, run: &RunId) -> impl Iterator<Item = u64> + '_ {
        let run = run.clone();
        self.unpointed
            .iter()
            .filter(move |(r, _)| *r == run)
            .map(|(_, i)| *i)
    }

    /// The leaf hash the pass authenticated at `index`; `None` when it did not read that
    /// leaf, or the stored tile that holds it is missing or not the pass's group.
    pub(super) async fn leaf_hash(
        &self,
        store: &impl LogStorage,
        index: u64,
    ) -> Result<Option<NodeHash>, StoreError> {
        let size = self.latest.size;
        if index >= size {
            let at = usize::try_from(index - size).ok();
            return Ok(at.and_then(|i| self.tail.get(i).copied()));
        }
        let group = index / GROUP;
        let Some(tile) = self.tile(store, group).await? else {
            return Ok(None);
        };
        let at = ((index % GROUP) * 32) as usize;
        Ok(tile
            .get(at..at + 32)
            .and_then(|h| <NodeHash>::try_from(h).ok()))
    }

    /// The level-0 tile of group `group` of the signed tree, read (or kept) and checked
    /// against the pass's digest of that group.
    async fn tile(
        &self,
        store: &impl LogStorage,
        group: u64,
    ) -> Result<Option<bytes::Bytes>, StoreError> {
        if let Some(bytes) = self.kept(group) {
            return Ok(Some(bytes));
        }
        let Some(digest) = usize::try_from(group).ok().and_then(|g| self.groups.get(g)) else {
            return Ok(None);
        };
        let width = (self.latest.size - group * GROUP).min(GROUP);
        // `width` ≤ 256.
        let tile = Tile::new(TILE_HEIGHT, 0, group, width as u32, false);
        let Some(key) = tlog::tile_key(&tile) else {
            return Ok(None);
        };
        let Some(bytes) = crate::tiles::bounded_tile(store, &key).await?.read() else {
            return Ok(None);
        };
        if <[u8; 32]>::from(Sha256::digest(&bytes)) != *digest {
            // Planted, or a tile of another tree: not what the pass read.
            return Ok(None);
        }
        if let Ok(mut kept) = self.tiles.lock() {
            if kept.len() == TILES_KEPT {
                kept.remove(0);
            }
            kept.push((group, bytes.clone()));
        }
        Ok(Some(bytes))
    }

    fn kept(&self, group: u64) -> Option<bytes::Bytes> {
        let kept = self.tiles.lock().ok()?;
        kept.iter()
            .rev()
            .find(|(g, _)| *g == group)
            .map(|(_, b)| b.clone())
    }
}

/// Reads the whole log once, in order, keeping O(log n + n / 256) hashes (see the module
/// doc). Errors only when the store cannot be read.
pub async fn pass(store: &impl LogStorage, trust: &LogTrust) -> Result<Pass, StoreError> {
    // Checkpoints before entries, as `LogView::load` reads them (a checkpoint is published
    // after its entries).
    let latest = latest_trusted(store, trust).await?;
    let Some(latest) = latest else {
        return Ok(Pass::Whole("no checkpoint signed by a trusted key".into()));
    };
    let mut edge = RightEdge::new();
    let mut group = Sha256::new();
    let mut groups = Vec::new();
    let mut tail = Vec::new();
    let mut unpointed = Vec::new();
    // Entries by number until the first one not stored, a few reads ahead. No listing of
    // `log/entries/`: it would hold every key at once. What lies past a missing entry is
    // outside the tree for the whole log's readers too.
    let covered = latest.size;
    let reads = futures::stream::iter(0u64..)
        .map(|index| read_entry(store, trust, index, covered))
        .buffered(READ_AHEAD)
        .try_take_while(|read| std::future::ready(Ok(read.is_some())));
    futures::pin_mut!(reads);
    let mut index = 0u64;
    // The leaves past the checkpoint, each authenticated after the ones before it.
    let mut tail_edge: Option<RightEdge> = None;
    while let Some(read) = reads.try_next().await? {
        let Entry {
            hash,
            unpointed: run,
            tail: tail_bytes,
        } = match read {
            Some(Ok(entry)) => entry,
            Some(Err(why)) => return Ok(Pass::Whole(format!("log/entries/{index}: {why}"))),
            None => break,
        };
        if let Some(run) = run {
            // Under the checkpoint every leaf's pointer is stored before it is published.
            if index < latest.size {
                return Ok(Pass::Whole(format!(
                    "log/entries/{index}: the pointer of run {run} is not stored"
                )));
            }
            unpointed.push((run, index));
        }
        if index < latest.size {
            edge.push(hash);
            group.update(hash);
            if (index + 1) % GROUP == 0 || index + 1 == latest.size {
                groups.push(<[u8; 32]>::from(std::mem::take(&mut group).finalize()));
            }
        } else {
            // The leaves past the checkpoint sign its tree: it must be the signed one first.
            if tail_edge.is_none() && edge.root() != Some(latest.root) {
                return Ok(Pass::Whole(format!(
                    "the entries do not hash to the root the checkpoint of {} signs",
                    latest.size
                )));
            }
            let past = tail_edge.get_or_insert_with(|| edge.clone());
            let at = tlog::Place::next_of_edge(past);
            let bytes = tail_bytes.unwrap_or_default();
            if let Err(why) = trust.authenticate(&at, &bytes) {
                return Ok(Pass::Whole(format!("log/entries/{index}: {why}")));
            }
            past.push(hash);
            tail.push(hash);
        }
        index += 1;
    }
    if edge.size() < latest.size {
        return Ok(Pass::Whole(format!(
            "{} entries stored under a checkpoint of {}",
            edge.size(),
            latest.size
        )));
    }
    if edge.root() != Some(latest.root) {
        return Ok(Pass::Whole(format!(
            "the entries do not hash to the root the checkpoint of {} signs",
            latest.size
        )));
    }
    Ok(Pass::Clean(Box::new(Passed {
        latest,
        groups,
        tail,
        unpointed,
        tiles: Mutex::new(Vec::new()),
    })))
}

/// Entry `index`: `None` when not stored; else its leaf hash once it parses (past `covered`,
/// the latest checkpoint's size, with its bytes: the pass authenticates it) and a rebuild
/// entry's signature verifies, with whether a seal or review leaf's pointer is stored.
async fn read_entry(
    store: &impl LogStorage,
    trust: &LogTrust,
    index: u64,
    covered: u64,
) -> Result<Option<Read>, StoreError> {
    let Some(bytes) = store.get_opt(&Key::log_entry(index)).await? else {
        return Ok(None);
    };
    let hash = tlog::leaf_hash(&bytes);
    let tail = (index >= covered).then(|| bytes.clone());
    let run = match Leaf::from_bytes(&bytes) {
        Err(e) => return Ok(Some(Err(e.into()))),
        Ok(Leaf::Rebuild(r)) => {
            let read = r.verify(trust.keys()).map_err(Unread::from);
            return Ok(Some(read.map(|()| Entry {
                hash,
                unpointed: None,
                tail,
            })));
        }
        // A policy's registration and a report's are about no run: the pass looks for runs'
        // pointers only (a policy's pointer only saves a second registration of the same
        // policy).
        Ok(Leaf::Policy(_) | Leaf::Report(_)) => {
            return Ok(Some(Ok(Entry {
                hash,
                unpointed: None,
                tail,
            })))
        }
        Ok(Leaf::Seal(e)) => e.run_id,
        Ok(Leaf::Review(r)) => r.run_id,
    };
    let Ok(run) = RunId::parse(&run) else {
        return Ok(Some(Err(Unread::RunId(run))));
    };
    let pointed = store.exists(&Key::log_run_leaf(&run, index)).await?;
    Ok(Some(Ok(Entry {
        hash,
        unpointed: (!pointed).then_some(run),
        tail,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::{entry, entry_file, raw_keys};
    use crate::{EvidenceWas, Log, LogView, DEFAULT_ORIGIN};
    use seal_core::canonical::Hash;
    use seal_core::sealing::SigningKey;
    use seal_core::tlog::{LogEntry, ReviewEntry};
    use seal_core::vocab::AuditCheck;
    use seal_store::Store;

    /// A `file://` log of the seals of runs 0..300 published in one batch (two level-0
    /// tiles: a full one and one of 44), a review of run 7 published after them, and, past
    /// that checkpoint, runs 301 and 302 appended without their pointers yet.
    async fn log_of_300() -> (tempfile::TempDir, Store, SigningKey) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        let trust = raw_keys(&key, &[]);
        append_unpublished(&log, &key, &trust, 0..300).await;
        log.publish_covering(300, &key).await.unwrap();
        let review = ReviewEntry::new(
            "run-batch-0007",
            0,
            Hash::of(b"a review").as_ref(),
            &"e".repeat(64),
            "2026-12-04T00:00:00Z",
        );
        log.append_review(&review, &key).await.unwrap();
        append_unpublished(&log, &key, &trust, 301..303).await;
        (dir, store, key)
    }

    async fn append_unpublished(
        log: &Log,
        key: &SigningKey,
        trust: &LogTrust,
        runs: std::ops::Range<u32>,
    ) {
        let mut cache = log.cache.lock().await;
        log.admit_locked(&mut cache, trust).await.unwrap();
        for i in runs {
            let (run, e) = entry(i);
            let leaf = crate::NewLeaf::Seal {
                run: &run,
                entry: &e,
                evidence: crate::EvidenceWas::Stored,
            };
            log.place(&mut cache, leaf, key).await.unwrap();
        }
    }

    async fn clean(store: &Store, key: &SigningKey) -> Passed {
        match pass(store, &raw_keys(key, &[])).await.unwrap() {
            Pass::Clean(p) => *p,
            Pass::Whole(why) => panic!("not a clean pass: {why}"),
        }
    }

    fn another_seal(e: &LogEntry) -> LogEntry {
        LogEntry {
            seal_sha256: Hash::of(b"another seal").to_string(),
            ..e.clone()
        }
    }

    /// The file of the level-0 tile `group` of width `width`.
    fn tile_file(dir: &tempfile::TempDir, group: u64, width: u32) -> std::path::PathBuf {
        let key = tlog::tile_key(&Tile::new(TILE_HEIGHT, 0, group, width, false)).unwrap();
        dir.path().join(key.as_str())
    }

    /// After a clean pass, each run read by its pointers gets the whole log's answers: its
    /// seal leaves, the check of its stored entry (the logged one or another seal), its
    /// review, and "not logged" for a run the log does not hold, on both sides of the tile
    /// boundary and past the checkpoint (leaves whose pointers are not stored yet).
    #[tokio::test]
    async fn a_clean_pass_gives_each_run_the_whole_log_s_answers() {
        let (_dir, store, key) = log_of_300().await;
        let pass = clean(&store, &key).await;
        assert_eq!((pass.latest.size, pass.size()), (301, 303));
        assert_eq!(pass.groups.len(), 2);
        assert_eq!(pass.unpointed.len(), 2);
        let whole = LogView::load(&store, &raw_keys(&key, &[])).await.unwrap();
        for i in [0, 7, 255, 256, 299, 301, 302, 9999] {
            let (run, e) = entry(i);
            let one = LogView::for_runs_passed(&store, &pass, std::slice::from_ref(&run))
                .await
                .unwrap()
                .expect("read by its pointers");
            assert_eq!(one.is_logged(run.as_str()), i != 9999, "run {i}");
            assert_eq!(
                one.seal_leaves(run.as_str()),
                whole.seal_leaves(run.as_str())
            );
            for stored in [e.clone(), another_seal(&e)] {
                assert_eq!(
                    format!("{:?}", one.check_entry(&run, &stored)),
                    format!("{:?}", whole.check_entry(&run, &stored)),
                    "run {i}"
                );
            }
            if i < 300 {
                assert!(one.check_entry(&run, &e).is_empty(), "run {i}");
            }
            let sha = Hash::of(b"a review").to_string();
            assert_eq!(
                one.check_review(&run, 0, &sha),
                whole.check_review(&run, 0, &sha)
            );
        }
    }

    /// A seal leaf under the checkpoint without its pointer (here: a run logged twice whose
    /// second pointer was deleted) is not read by the pointers: the pass sends the reader to
    /// the whole log, which reports the run relogged. Without the pointer check, the run's
    /// pointers would show one leaf and the run would pass.
    #[tokio::test]
    async fn a_leaf_without_its_pointer_sends_the_reader_to_the_whole_log() {
        let (dir, store, key) = log_of_300().await;
        let (run, e) = entry(3);
        // A restarted appender over evidence it "created now" lists no pointers: the second
        // leaf of run 3 (the cost DESIGN §13 names when logged evidence is deleted).
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        let again = another_seal(&e);
        log.append_seal_as(&run, &again, &key, EvidenceWas::CreatedNow)
            .await
            .unwrap();
        let relogged = |problems: Vec<crate::Finding>| {
            problems.iter().any(|p| p.check == AuditCheck::RunRelogged)
        };
        // Both pointers stored: the pointers find both leaves.
        let pass_ = clean(&store, &key).await;
        let one = LogView::for_runs_passed(&store, &pass_, std::slice::from_ref(&run))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(one.seal_leaves(run.as_str()).len(), 2);
        assert!(relogged(one.check_entry(&run, &again)));
        // The second pointer deleted.
        let index = one.seal_leaves(run.as_str())[1].index;
        std::fs::remove_file(dir.path().join(Key::log_run_leaf(&run, index).as_str())).unwrap();
        match pass(&store, &raw_keys(&key, &[])).await.unwrap() {
            Pass::Whole(why) => assert!(why.contains("pointer of run run-batch-0003"), "{why}"),
            Pass::Clean(_) => panic!("a leaf without its pointer passed"),
        }
        let whole = LogView::load(&store, &raw_keys(&key, &[])).await.unwrap();
        assert!(relogged(whole.check_entry(&run, &again)));
    }

    /// After the pass, an entry rewritten together with its level-0 tile (so that the tile
    /// vouches for it), or a tile deleted, is not believed: that run is sent to the whole log.
    /// Without the check of the tile against the pass's digest the rewritten entry would be
    /// the run's logged seal.
    #[tokio::test]
    async fn an_entry_and_tile_rewritten_after_the_pass_are_not_believed() {
        let (dir, store, key) = log_of_300().await;
        let pass_ = clean(&store, &key).await;
        let read = |run: RunId| {
            let (store, pass_) = (&store, &pass_);
            async move {
                LogView::for_runs_passed(store, pass_, std::slice::from_ref(&run))
                    .await
                    .unwrap()
            }
        };
        std::fs::remove_file(tile_file(&dir, 1, 45)).unwrap();
        assert!(
            read(entry(290).0).await.is_none(),
            "a missing tile was believed"
        );
        let (run5, e5) = entry(5);
        let forged = another_seal(&e5).to_bytes().unwrap();
        std::fs::write(entry_file(&dir, 5), &forged).unwrap();
        let tile = tile_file(&dir, 0, 256);
        let mut bytes = std::fs::read(&tile).unwrap();
        bytes[5 * 32..6 * 32].copy_from_slice(&tlog::leaf_hash(&forged));
        std::fs::write(&tile, &bytes).unwrap();
        assert!(read(run5).await.is_none(), "a rewritten entry was believed");
    }

    /// Entries that do not hash to the signed root, or fewer than it signs, are not passed.
    #[tokio::test]
    async fn a_log_that_is_not_the_signed_tree_is_read_whole() {
        let (dir, store, key) = log_of_300().await;
        let trust = raw_keys(&key, &[]);
        let (_, e5) = entry(5);
        std::fs::write(entry_file(&dir, 5), another_seal(&e5).to_bytes().unwrap()).unwrap();
        match pass(&store, &trust).await.unwrap() {
            Pass::Whole(why) => assert!(why.contains("do not hash to the root"), "{why}"),
            Pass::Clean(_) => panic!("a rewritten entry passed"),
        }
        std::fs::remove_file(entry_file(&dir, 200)).unwrap();
        match pass(&store, &trust).await.unwrap() {
            Pass::Whole(why) => assert!(why.contains("200 entries stored under"), "{why}"),
            Pass::Clean(_) => panic!("a log cut short passed"),
        }
    }
}
