//! The log's tree as hash tiles (C2SP tlog-tiles), stored under `log/tile/` beside the
//! entries (docs/DESIGN.md §13).
//!
//! Before a checkpoint of `n` leaves is stored, its tiles are: every tile completed since
//! the tiles this process last stored, and at each level the partial tile at the new right
//! edge (`log/tile/8/<level>/<index>[.p/<width>]`). So a reader of any stored checkpoint
//! finds every tile it may ask for, and the tree of the latest checkpoint is readable in
//! O(log n) objects instead of n entries.
//!
//! Tiles are derived bytes: a reader authenticates them against a signed root
//! (`tlog_tiles::TileHashReader`); a writer refuses to publish over a tile stored with other
//! bytes than its tree gives, and writes tiles create-only (docs/DECISIONS.md, "Tiles are
//! derived, never trusted").

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::error::{corrupt, LogError};
use crate::finding::Finding;
use crate::storage::LogStorage;
use seal_core::key::LOG_TILES;
use seal_core::tlog::{self, Tile, Tree};
use seal_core::vocab::AuditCheck;
use seal_store::{Bounded, Key, StoreError};

/// Tiles written or read at once.
pub(super) const AT_ONCE: usize = 16;

/// The tiles of `tree`'s first `size` leaves that a log tiled through `from` leaves lacks,
/// with their bytes.
pub(super) fn due(tree: &Tree, from: u64, size: u64) -> Result<Vec<(Key, Bytes)>, LogError> {
    tlog::tiles_between(from, size)
        .into_iter()
        .map(|t| Ok((key(&t)?, Bytes::from(tree.tile(&t)?))))
        .collect()
}

fn key(tile: &Tile) -> Result<Key, LogError> {
    tlog::tile_key(tile).ok_or_else(|| LogError::Corrupt {
        key: format!("{LOG_TILES}/{}", tile.path()),
        detail: "a tile of a tree deeper than the store's keys reach".into(),
    })
}

/// Stores `tiles`, create-only and all at once (one batch of the file store's group commit).
/// A tile stored already with the same bytes is fine; with other bytes, nothing is published
/// over it.
pub(super) async fn store_all(
    store: &impl LogStorage,
    tiles: Vec<(Key, Bytes)>,
) -> Result<(), LogError> {
    futures::stream::iter(tiles)
        .map(|(k, bytes)| async move {
            match store.create(&k, bytes).await {
                Ok(_) => Ok(()),
                Err(StoreError::Conflict { .. }) => Err(corrupt(
                    &k,
                    "holds a tile that is not this log's, so no checkpoint is published over \
                     it: `seal log verify` names it, `seal log rebuild` moves it aside",
                )),
                Err(e) => Err(e.into()),
            }
        })
        .buffer_unordered(AT_ONCE)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// How far the stored tiles go, as far as a process about to publish needs to know: `size`
/// (the latest checkpoint's) when every tile on the right edge of that tree is stored with
/// the tree's bytes, since a writer stores those last and before the checkpoint; else 0, and
/// the next checkpoint stores every tile again (a log from before tiles, or one whose tiles
/// were lost: the tiles already there are the same bytes, so this only costs the writes).
pub(super) async fn stored_through(
    store: &impl LogStorage,
    tree: &Tree,
    size: u64,
) -> Result<u64, LogError> {
    if size > tree.size() {
        return Ok(0);
    }
    for t in tlog::edge_tiles(size) {
        let k = key(&t)?;
        match bounded_tile(store, &k).await?.read() {
            Some(bytes) if bytes[..] == tree.tile(&t)?[..] => {}
            _ => return Ok(0),
        }
    }
    Ok(size)
}

/// A leaf's hash and its inclusion proof in a signed tree, read from the stored tiles.
pub(super) type ProvenLeaf = (tlog::NodeHash, Vec<tlog::NodeHash>);

/// The tiles read so far from the store, for [`prove_leaf`]: a reader of many leaves of one
/// tree reads the tiles near the root once.
pub(super) type TileCache = std::collections::HashMap<Tile, Vec<u8>>;

/// The tiles of `cache`, handed to `tlog_tiles`' authenticating reader; a tile not in it is
/// noted, for the caller to fetch, and the read fails.
struct Fetched<'a> {
    cache: &'a TileCache,
    missing: std::cell::RefCell<Vec<Tile>>,
}

impl tlog_tiles::TileReader for Fetched<'_> {
    fn height(&self) -> u8 {
        tlog::TILE_HEIGHT
    }
    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        let mut missing = self.missing.borrow_mut();
        let data: Vec<Vec<u8>> = tiles
            .iter()
            .filter_map(|t| {
                let found = self.cache.get(t).cloned();
                if found.is_none() {
                    missing.push(*t);
                }
                found
            })
            .collect();
        if missing.is_empty() {
            Ok(data)
        } else {
            Err(tlog_tiles::Error::InvalidTile)
        }
    }
    fn save_tiles(&self, _: &[Tile], _: &[Vec<u8>]) {}
}

/// Rounds of fetching: the leaf's tiles, then those of its proof (a third for safety).
const FETCH_ROUNDS: usize = 3;

/// Leaf `index`'s hash and its inclusion proof in the tree of `size` leaves whose root a
/// trusted checkpoint signs as `root`, read from the stored tiles (O(log n) of them) and
/// authenticated against that root by `tlog_tiles::TileHashReader`: a stored tile is believed
/// only when it hashes up to the signed root. `None` when a tile it needs is not stored, or
/// the stored ones are not that tree's: the caller then reads the whole log.
pub(super) async fn prove_leaf(
    store: &impl LogStorage,
    size: u64,
    root: &tlog::NodeHash,
    index: u64,
    cache: &mut TileCache,
) -> Result<Option<ProvenLeaf>, StoreError> {
    if index >= size {
        return Ok(None);
    }
    for _ in 0..FETCH_ROUNDS {
        let (proven, missing) = prove_from(cache, size, root, index);
        if missing.is_empty() {
            return Ok(proven);
        }
        for t in missing {
            let Some(k) = tlog::tile_key(&t) else {
                return Ok(None);
            };
            match bounded_tile(store, &k).await?.read() {
                Some(bytes) if bytes.len() == t.width() as usize * 32 => {
                    cache.insert(t, bytes.to_vec());
                }
                _ => return Ok(None),
            }
        }
    }
    Ok(None)
}

/// [`prove_leaf`] from the tiles of `cache` alone: the leaf and proof when they are all there
/// and hash up to `root`, and the tiles that were not there.
fn prove_from(
    cache: &TileCache,
    size: u64,
    root: &tlog::NodeHash,
    index: u64,
) -> (Option<ProvenLeaf>, Vec<Tile>) {
    use tlog_tiles::HashReader;
    let reader = Fetched {
        cache,
        missing: Default::default(),
    };
    let hashes = tlog_tiles::TileHashReader::new(size, tlog_tiles::Hash(*root), &reader);
    let proven = hashes
        .read_hashes(&[tlog_tiles::stored_hash_index(0, index)])
        .and_then(|leaf| {
            let proof = tlog_tiles::prove_record(size, index, &hashes)?;
            let leaf = leaf.first().ok_or(tlog_tiles::Error::BadMath)?.0;
            Ok((leaf, proof.into_iter().map(|h| h.0).collect()))
        });
    (proven.ok(), reader.missing.into_inner())
}

/// The first leaf past the leaves a tile's hashes cover (`None` past u64).
pub(super) fn reach(tile: &Tile) -> Option<u64> {
    let hashes = (tile
        .level_index()
        .checked_shl(u32::from(tlog::TILE_HEIGHT))?)
    .checked_add(u64::from(tile.width()))?;
    let shift = u32::from(tlog::TILE_HEIGHT) * u32::from(tile.level());
    let leaves = hashes.checked_shl(shift)?;
    // A shift that pushed bits out is a reach past u64.
    (leaves.checked_shr(shift) == Some(hashes)).then_some(leaves)
}

/// Why a stored object under `log/tile/` is not one of the log's tiles.
#[derive(Debug, thiserror::Error)]
enum NotATile {
    #[error("not a hash tile's key (tile/8/<level>/<index>[.p/<width>])")]
    Name,
    #[error("a tile of leaves past the {0} the log holds")]
    PastTheLog(u64),
    #[error("not the hashes of the log's entries")]
    OtherHashes,
    #[error(transparent)]
    Tree(#[from] tlog::TlogError),
    #[error("{size} bytes, more than a tile holds ({bound}): not read")]
    TooLarge { size: u64, bound: u64 },
    #[error("listed, then gone when read")]
    Gone,
}

/// Whether the stored `bytes` at `key` are a tile of the first `size` leaves of `tree`, byte
/// for byte: `Err` says why not.
fn agrees(tree: &Tree, size: u64, key: &Key, bytes: &[u8]) -> Result<(), NotATile> {
    let tile = tlog::key_tile(key).ok_or(NotATile::Name)?;
    match reach(&tile) {
        Some(end) if end <= size => {}
        _ => return Err(NotATile::PastTheLog(size)),
    }
    if tree.tile(&tile)?[..] == *bytes {
        Ok(())
    } else {
        Err(NotATile::OtherHashes)
    }
}

/// What `seal log verify` found of the tiles.
#[derive(Debug, Default)]
pub struct TileCheck {
    /// Tiles read and found to be the entries' hashes.
    pub checked: u64,
    /// Tiles a reader of the latest checkpoint may ask for that are not stored.
    pub missing: Vec<String>,
    pub problems: Vec<Finding>,
}

/// `seal log verify`: every stored tile is the hashes of the log's entries (`tree`, every
/// entry read), and every tile of the latest checkpoint (`checkpoint` leaves) is stored. A
/// log that holds no tile at all predates them: its next checkpoint writes them, and that is
/// no problem.
pub async fn check(
    store: &impl LogStorage,
    tree: &Tree,
    checkpoint: u64,
) -> Result<TileCheck, StoreError> {
    let listed = store.list(LOG_TILES).await?.keys;
    // Each tile is checked as it is read, and none is read past a tile's size: a planted
    // larger one is named unread.
    let mut reads = futures::stream::iter(listed.iter().cloned())
        .map(|k| async move { bounded_tile(store, &k).await.map(|b| (k, b)) })
        .buffered(AT_ONCE);
    let mut found = TileCheck::default();
    while let Some((k, read)) = reads.try_next().await? {
        let verdict = match read {
            Bounded::Read(bytes) => agrees(tree, tree.size(), &k, &bytes),
            Bounded::Larger { size, bound } => Err(NotATile::TooLarge { size, bound }),
            Bounded::Absent => Err(NotATile::Gone),
        };
        match verdict {
            Ok(()) => found.checked += 1,
            Err(detail) => found.problems.push(Finding::new(
                AuditCheck::LogTiles,
                k.to_string(),
                detail.to_string(),
            )),
        }
    }
    if listed.is_empty() {
        return Ok(found);
    }
    let stored: std::collections::HashSet<&str> = listed.iter().map(Key::as_str).collect();
    for t in tlog::tiles_between(0, checkpoint) {
        let k = format!("log/{}", t.path());
        if !stored.contains(k.as_str()) {
            found.missing.push(k);
        }
    }
    if let Some(first) = found.missing.first() {
        found.problems.push(Finding::new(
            AuditCheck::LogTiles,
            first.clone(),
            format!(
                "{} tile(s) of the latest checkpoint (size {checkpoint}) are missing, from this \
                 one on: a reader of that checkpoint cannot read its tree",
                found.missing.len()
            ),
        ));
    }
    Ok(found)
}

/// The stored tiles a rebuild that keeps `keep` leaves of `tree` moves aside: every tile
/// that is not the kept leaves' hashes byte for byte (planted, or of leaves it does not
/// keep, which the relogged entries will tile again).
pub(super) async fn in_the_way(
    store: &impl LogStorage,
    tree: &Tree,
    keep: u64,
) -> Result<Vec<Key>, StoreError> {
    let listed = store.list(LOG_TILES).await?.keys;
    let mut moving = Vec::new();
    let mut reads = futures::stream::iter(listed)
        .map(|k| async move { bounded_tile(store, &k).await.map(|b| (k, b)) })
        .buffered(AT_ONCE);
    while let Some((k, read)) = reads.try_next().await? {
        let in_the_way = match read {
            Bounded::Read(bytes) => agrees(tree, keep.min(tree.size()), &k, &bytes).is_err(),
            Bounded::Larger { .. } => true,
            Bounded::Absent => false,
        };
        if in_the_way {
            moving.push(k);
        }
    }
    Ok(moving)
}

/// A stored tile, read only when it is no larger than a full tile ([`tlog::MAX_TILE_BYTES`]):
/// what every reader of the tiles reads them with.
pub(super) async fn bounded_tile(
    store: &impl LogStorage,
    key: &Key,
) -> Result<Bounded, StoreError> {
    store.get_bounded(key, tlog::MAX_TILE_BYTES).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::{entry, raw_keys};
    use crate::{checkpoint_sizes, verify_log, Log, DEFAULT_ORIGIN};
    use seal_core::sealing::SigningKey;
    use seal_store::Store;
    use seal_store::DEFAULT_DOC_LIMIT;
    use tlog_tiles::TileHashReader;

    #[test]
    fn a_tile_reaches_the_leaf_after_its_last_hash_covers() {
        assert_eq!(reach(&Tile::new(8, 0, 0, 1, false)), Some(1));
        assert_eq!(reach(&Tile::new(8, 0, 2, 88, false)), Some(600));
        assert_eq!(reach(&Tile::new(8, 1, 0, 2, false)), Some(512));
        assert_eq!(reach(&Tile::new(8, 2, 0, 256, false)), Some(1 << 24));
        assert_eq!(reach(&Tile::new(8, 7, 0, 255, false)), Some(255 << 56));
        assert_eq!(reach(&Tile::new(8, 7, 1, 1, false)), None);
    }

    /// `key` gone from the store, as a store writer would delete it (moved aside under
    /// `log/superseded/`, the one removal the store offers).
    async fn deleted(store: &Store, key: &Key) {
        let rest = key.as_str().strip_prefix("log/").unwrap_or(key.as_str());
        let to = Key::parse(&format!("log/superseded/test/{rest}")).unwrap();
        let aside = store.copy_aside(key, &to).await.unwrap();
        store.remove_copied(&aside).await.unwrap();
    }

    /// A log of entries `0..n`, each appended and checkpointed as the postguard does.
    async fn appended(store: &Store, key: &SigningKey, n: u32) -> Log {
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        for i in 0..n {
            let (run, e) = entry(i);
            log.append_seal(&run, &e, key).await.unwrap();
        }
        log
    }

    /// Every stored tile, as a C2SP reader fetching them from the store would get them.
    async fn fetched(store: &Store) -> TileCache {
        let mut tiles = TileCache::new();
        for k in store.list(LOG_TILES).await.unwrap().keys {
            let t = tlog::key_tile(&k).expect("a tile key");
            tiles.insert(t, store.get(&k).await.unwrap().to_vec());
        }
        tiles
    }

    fn tile_problems(report: &crate::LogReport) -> Vec<&Finding> {
        let tiles = report.problems.iter();
        tiles.filter(|p| p.check == AuditCheck::LogTiles).collect()
    }

    /// Each checkpoint's tiles are stored before it, so a reader of any stored checkpoint
    /// reads that tree from the tiles alone, authenticated by `tlog_tiles`' own reader
    /// against the signed root: the root, and the proof of its last leaf.
    #[tokio::test]
    async fn every_stored_checkpoint_is_readable_from_the_stored_tiles() {
        let store = Store::open("memory://").await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        appended(&store, &key, 300).await;
        let tiles = fetched(&store).await;
        let checkpoints = checkpoint_sizes(&store).await.unwrap();
        assert_eq!(checkpoints.len(), 300);
        for size in checkpoints {
            let note = store.get(&Key::log_checkpoint(size)).await.unwrap();
            let cp = tlog::open_checkpoint(&note, raw_keys(&key, &[]).keys()).unwrap();
            let root = tlog_tiles::Hash(cp.root);
            let fetched = Fetched {
                cache: &tiles,
                missing: Default::default(),
            };
            let reader = TileHashReader::new(size, root, &fetched);
            assert_eq!(
                tlog_tiles::tree_hash(size, &reader).unwrap(),
                root,
                "{size}"
            );
            tlog_tiles::prove_record(size, size - 1, &reader).unwrap();
        }
        let report = verify_log(&store, &raw_keys(&key, &[]), None)
            .await
            .unwrap();
        assert!(tile_problems(&report).is_empty(), "{:?}", report.problems);
        assert_eq!(report.tiles_checked, tiles.len() as u64);
        assert_eq!(report.tiles_missing, 0);
    }

    /// The store writer plants the tile the next checkpoint needs: nothing is published over
    /// it, and the error names it.
    #[tokio::test]
    async fn a_planted_tile_stops_the_checkpoint_that_needs_it() {
        let store = Store::open("memory://").await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        let log = appended(&store, &key, 3).await;
        let planted = tlog::tile_key(&Tile::new(8, 0, 0, 4, false)).unwrap();
        store
            .put(&planted, Bytes::from(vec![7u8; 128]))
            .await
            .unwrap();
        let (run, e) = entry(3);
        let err = log.append_seal(&run, &e, &key).await.unwrap_err();
        assert!(
            matches!(&err, LogError::Corrupt { key, detail }
                if key == planted.as_str() && detail.contains("not this log's")),
            "{err}"
        );
        assert!(store
            .get_opt(&Key::log_checkpoint(4))
            .await
            .unwrap()
            .is_none());
    }

    /// `seal log verify` reads every stored tile: a rewritten one, a stray key and a missing
    /// tile of the latest checkpoint are each named.
    #[tokio::test]
    async fn seal_log_verify_names_a_rewritten_a_stray_and_a_missing_tile() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("file://{}", dir.path().display()))
            .await
            .unwrap();
        let key = seal_fs::keys::generate_signing_key();
        appended(&store, &key, 10).await;
        let tiles = dir.path().join("log/tile/8/0");
        std::fs::write(tiles.join("000.p/5"), [0u8; 5 * 32]).unwrap();
        std::fs::remove_file(tiles.join("000.p/10")).unwrap();
        std::fs::write(tiles.join("stray"), b"x").unwrap();
        let report = verify_log(&store, &raw_keys(&key, &[]), None)
            .await
            .unwrap();
        let named: Vec<(&str, &str)> = tile_problems(&report)
            .iter()
            .map(|p| (p.object.as_str(), p.detail.as_str()))
            .collect();
        assert_eq!(named.len(), 3, "{named:?}");
        assert!(named.contains(&(
            "log/tile/8/0/000.p/5",
            "not the hashes of the log's entries"
        )));
        assert!(named
            .iter()
            .any(|(k, d)| *k == "log/tile/8/0/stray" && d.contains("key")));
        assert!(named
            .iter()
            .any(|(k, d)| *k == "log/tile/8/0/000.p/10" && d.contains("missing")));
        assert_eq!(report.tiles_missing, 1);
    }

    /// A tile larger than any tile can be is planted: readers pass it over, unread, as they
    /// do a tile of the wrong bytes (they prove from the whole log instead), rather than read
    /// it up to the document limit, or fail on it past that limit.
    #[tokio::test]
    async fn a_planted_oversized_tile_is_passed_over_unread() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        appended(&store, &key, 10).await;
        let latest =
            crate::latest_checkpoint(&store, &crate::trust(DEFAULT_ORIGIN, &[key.public()]))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(latest.size, 10);
        // Readers of the genuine tiles prove a leaf.
        let mut cache = TileCache::new();
        let proven = prove_leaf(&store, 10, &latest.root, 3, &mut cache).await;
        assert!(matches!(proven, Ok(Some(_))), "{proven:?}");
        let tile = dir.path().join("log/tile/8/0/000.p/10");
        std::fs::write(&tile, vec![7u8; 2 * tlog::MAX_TILE_BYTES as usize]).unwrap();
        let mut tree = Tree::new();
        for i in 0..10 {
            tree.push(&store.get(&Key::log_entry(i)).await.unwrap())
                .unwrap();
        }
        // Past the document limit of the store reading it, and within it.
        for limit in [tlog::MAX_TILE_BYTES + 1, DEFAULT_DOC_LIMIT] {
            let reader = Store::open(&url).await.unwrap().with_doc_limit(limit);
            let mut cache = TileCache::new();
            let proven = prove_leaf(&reader, 10, &latest.root, 3, &mut cache).await;
            assert!(matches!(proven, Ok(None)), "limit {limit}: {proven:?}");
            assert!(cache.is_empty(), "limit {limit}: nothing of it kept");
            let through = stored_through(&reader, &tree, 10).await;
            assert!(matches!(through, Ok(0)), "limit {limit}: {through:?}");
            // The pass over the log and the admission read the whole log instead.
            let trust = raw_keys(&key, &[]);
            let pass = crate::stream::pass(&reader, &trust).await;
            assert!(pass.is_ok(), "limit {limit}: {:?}", pass.err());
            let admitted = Log::new(reader.clone(), DEFAULT_ORIGIN)
                .read_from_checkpoint(&trust)
                .await
                .map(|c| c.is_some());
            assert!(matches!(admitted, Ok(false)), "limit {limit}: {admitted:?}");
        }
        // Every reader above reads tiles through `bounded_tile`, which does not read it, and
        // `seal log verify` names it so.
        let key_of_tile = tlog::tile_key(&Tile::new(8, 0, 0, 10, false)).unwrap();
        assert_eq!(
            bounded_tile(&store, &key_of_tile).await.unwrap(),
            Bounded::Larger {
                size: 2 * tlog::MAX_TILE_BYTES,
                bound: tlog::MAX_TILE_BYTES
            }
        );
        let report = verify_log(&store, &raw_keys(&key, &[]), None)
            .await
            .unwrap();
        assert!(
            tile_problems(&report)
                .iter()
                .any(|p| p.object == "log/tile/8/0/000.p/10"
                    && p.detail.contains("more than a tile holds (8192): not read")),
            "{:?}",
            tile_problems(&report)
        );
    }

    /// The store writer rewrites the full tile on the right edge of the latest checkpoint,
    /// where a process starting learns how far the tiles go. The stored bytes are compared
    /// with the tree's, so the process does not take them for the log's: it stores the tiles
    /// again from the start, and refuses to publish over the rewritten one. (Were presence
    /// enough, that tile would never be written again, and every reader of a later checkpoint
    /// would find it wrong.)
    #[tokio::test]
    async fn a_rewritten_edge_tile_is_not_taken_for_the_log_s() {
        let store = Store::open("memory://").await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        appended(&store, &key, 256).await;
        let edge = tlog::tile_key(&Tile::new(8, 0, 0, 256, false)).unwrap();
        deleted(&store, &edge).await;
        store
            .put(&edge, Bytes::from(vec![9u8; 256 * 32]))
            .await
            .unwrap();
        let (run, e) = entry(256);
        let err = appended(&store, &key, 0)
            .await
            .append_seal(&run, &e, &key)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LogError::Corrupt { key, .. } if key == edge.as_str()),
            "{err}"
        );
    }

    /// A log without tiles (from before them) is tiled whole by the next checkpoint a process
    /// publishes. A process that finds the edge tiles of the latest checkpoint stored does not
    /// write the older ones again: a full tile deleted behind them stays missing, and
    /// `seal log verify` says so.
    #[tokio::test]
    async fn a_log_without_tiles_is_tiled_whole_by_its_next_checkpoint() {
        let store = Store::open("memory://").await.unwrap();
        let key = seal_fs::keys::generate_signing_key();
        let log = Log::new(store.clone(), DEFAULT_ORIGIN);
        {
            let mut cache = log.cache.lock().await;
            log.admit_locked(&mut cache, &raw_keys(&key, &[]))
                .await
                .unwrap();
            for i in 0..600 {
                let (run, e) = entry(i);
                let leaf = crate::NewLeaf::Seal {
                    run: &run,
                    entry: &e,
                    evidence: crate::EvidenceWas::Stored,
                };
                log.place(&mut cache, leaf, &key).await.unwrap();
            }
        }
        assert_eq!(log.publish_covering(600, &key).await.unwrap(), 600);
        let remove_all = |store: Store| async move {
            for k in store.list(LOG_TILES).await.unwrap().keys {
                deleted(&store, &k).await;
            }
        };
        remove_all(store.clone()).await;

        let (run, e) = entry(600);
        appended(&store, &key, 0)
            .await
            .append_seal(&run, &e, &key)
            .await
            .unwrap();
        let mut paths: Vec<String> = fetched(&store).await.keys().map(Tile::path).collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "tile/8/0/000",
                "tile/8/0/001",
                "tile/8/0/002.p/89",
                "tile/8/1/000.p/2"
            ]
        );

        let first = tlog::tile_key(&Tile::new(8, 0, 0, 256, false)).unwrap();
        deleted(&store, &first).await;
        let (run, e) = entry(601);
        appended(&store, &key, 0)
            .await
            .append_seal(&run, &e, &key)
            .await
            .unwrap();
        assert!(store.get_opt(&first).await.unwrap().is_none());
        let report = verify_log(&store, &raw_keys(&key, &[]), None)
            .await
            .unwrap();
        assert_eq!(report.tiles_missing, 1);
        assert_eq!(tile_problems(&report)[0].object, first.as_str());
    }
}
