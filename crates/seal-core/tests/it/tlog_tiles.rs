//! The log's tree as C2SP tlog-tiles hash tiles: which tiles a tree of n leaves has, their
//! bytes, and their paths. The check that matters is the reader's: tiles written at any
//! sequence of checkpoints are read back by `tlog_tiles`' own authenticating reader
//! (`TileHashReader`), which must find the signed root and the very proofs seal computes.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use seal_core::tlog::{self, Tile, Tree};
use tlog_tiles::{HashReader, TileHashReader, TileReader};

fn tree_of(n: u64) -> Tree {
    let mut tree = Tree::new();
    for i in 0..n {
        tree.push(format!("leaf {i}").as_bytes()).expect("push");
    }
    tree
}

/// The tiles a writer that checkpointed at each of `sizes` (ascending) has stored.
fn written(tree: &Tree, sizes: &[u64]) -> HashMap<Tile, Vec<u8>> {
    let mut stored = HashMap::new();
    let mut from = 0;
    for &size in sizes {
        for t in tlog::tiles_between(from, size) {
            stored.insert(t, tree.tile(&t).expect("tile of the tree"));
        }
        from = size;
    }
    stored
}

struct Stored(HashMap<Tile, Vec<u8>>);

impl TileReader for Stored {
    fn height(&self) -> u8 {
        tlog::TILE_HEIGHT
    }
    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|t| self.0.get(t).cloned().ok_or(tlog_tiles::Error::InvalidTile))
            .collect()
    }
    fn save_tiles(&self, _: &[Tile], _: &[Vec<u8>]) {}
}

/// A reader of the tree of `size` through the stored tiles finds its root and the inclusion
/// proof of `index` that the in-memory tree gives.
fn read_back(tree: &Tree, tiles: HashMap<Tile, Vec<u8>>, size: u64, index: u64) {
    let root = tlog_tiles::Hash(tree.root(size).expect("root"));
    let stored = Stored(tiles);
    let reader = TileHashReader::new(size, root, &stored);
    assert_eq!(
        tlog_tiles::tree_hash(size, &reader).expect("tree hash"),
        root
    );
    let proof: Vec<[u8; 32]> = tlog_tiles::prove_record(size, index, &reader)
        .expect("proof from tiles")
        .into_iter()
        .map(|h| h.0)
        .collect();
    assert_eq!(proof, tree.inclusion(index, size).expect("proof"));
    let leaf = reader
        .read_hashes(&[tlog_tiles::stored_hash_index(0, index)])
        .expect("leaf from tiles");
    assert_eq!(Some(leaf[0].0), tree.leaf(index));
}

#[test]
fn a_tile_holds_its_level_s_hashes_left_to_right() {
    let tree = tree_of(300);
    let full = Tile::new(8, 0, 0, 256, false);
    let bytes = tree.tile(&full).expect("full tile");
    assert_eq!(bytes.len(), 256 * 32);
    assert_eq!(bytes[..32], tree.leaf(0).expect("leaf 0"));
    assert_eq!(bytes[255 * 32..], tree.leaf(255).expect("leaf 255"));
    // The level-1 tile holds the root of each full level-0 tile: that of leaves 0..256.
    let up = Tile::new(8, 1, 0, 1, false);
    assert_eq!(
        tree.tile(&up).expect("level 1"),
        tree.root(256).expect("root 256")
    );
    // A tile reaching past the tree is refused, not padded.
    assert!(tree.tile(&Tile::new(8, 0, 1, 45, false)).is_err());
    assert!(tree.tile(&Tile::new(8, 1, 0, 2, false)).is_err());
}

#[test]
fn tiles_written_at_every_checkpoint_are_read_back_by_the_c2sp_reader() {
    let tree = tree_of(1000);
    // One checkpoint a leaf (an idle daemon), then in batches, across tile boundaries.
    let sizes: Vec<u64> = (1..=300)
        .chain([511, 512, 513, 700, 767, 768, 1000])
        .collect();
    for (k, &size) in sizes.iter().enumerate() {
        let tiles = written(&tree, &sizes[..=k]);
        read_back(&tree, tiles, size, size / 2);
    }
}

#[test]
fn the_tiles_of_one_checkpoint_are_the_ones_a_reader_of_it_needs() {
    let tree = tree_of(70_000);
    for size in [1, 255, 256, 257, 65_535, 65_536, 65_537, 70_000] {
        read_back(&tree, written(&tree, &[size]), size, size - 1);
        read_back(&tree, written(&tree, &[size]), size, 0);
    }
}

#[test]
fn a_tile_that_is_not_the_tree_s_is_refused_by_the_reader() {
    let tree = tree_of(600);
    let mut tiles = written(&tree, &[600]);
    let edge = Tile::new(8, 0, 2, 88, false);
    tiles.get_mut(&edge).expect("edge tile")[5] ^= 1;
    let root = tlog_tiles::Hash(tree.root(600).expect("root"));
    let stored = Stored(tiles);
    let reader = TileHashReader::new(600, root, &stored);
    assert!(tlog_tiles::prove_record(600, 599, &reader).is_err());
}

#[test]
fn the_edge_tiles_are_the_last_of_each_level() {
    assert!(tlog::edge_tiles(0).is_empty());
    let paths = |n| -> Vec<String> { tlog::edge_tiles(n).iter().map(Tile::path).collect() };
    assert_eq!(paths(1), ["tile/8/0/000.p/1"]);
    assert_eq!(paths(256), ["tile/8/0/000", "tile/8/1/000.p/1"]);
    assert_eq!(paths(600), ["tile/8/0/002.p/88", "tile/8/1/000.p/2"]);
    assert_eq!(
        paths(65_536),
        ["tile/8/0/255", "tile/8/1/000", "tile/8/2/000.p/1"]
    );
    // Each is among the tiles a writer of that size stored.
    for n in [1, 200, 256, 600, 65_536, 70_001] {
        let all: BTreeSet<String> = tlog::tiles_between(0, n).iter().map(Tile::path).collect();
        assert!(paths(n).iter().all(|p| all.contains(p)), "size {n}");
    }
}

#[test]
fn a_tile_key_is_its_c2sp_path_under_log() {
    let t = Tile::new(8, 0, 1_234_067, 17, false);
    let k = tlog::tile_key(&t).expect("key");
    assert_eq!(k.as_str(), "log/tile/8/0/x001/x234/067.p/17");
    assert_eq!(tlog::key_tile(&k), Some(t));
    for t in tlog::tiles_between(0, 70_000) {
        let k = tlog::tile_key(&t).expect("key");
        assert_eq!(tlog::key_tile(&k), Some(t));
    }
}

#[test]
fn a_hostile_tile_path_is_no_tile_and_no_panic() {
    for bad in [
        "tile/8/0/000.p/0",
        "tile/8/0/000.p/00",
        "tile/8/0/000.p/256",
        "tile/8/0/000.p/-1",
        "tile/8/0/000.p/",
        "tile/8/8/000",
        "tile/8/63/000",
        "tile/8/200/000",
        "tile/8/00/000",
        "tile/30/0/000",
        "tile/8/data/000",
        "tile/8/0/0001",
        "tile/8/0/1",
        "tile/8/0/x000/001",
        "tile/8/0/x1000/001",
        "tile/8/0",
        "tile/8/0/",
        "tile/8/0/000.p",
        "tile/8/0/x018/x446/x744/x073/x709/x551/616.p/255",
        "",
    ] {
        assert_eq!(tlog::parse_tile_path(bad), None, "{bad}");
    }
    assert!(tlog::parse_tile_path("tile/8/0/000.p/255").is_some());
    assert!(tlog::parse_tile_path("tile/8/7/000").is_some());
}

proptest! {
    #[test]
    fn any_tile_path_parses_to_its_own_spelling_or_to_nothing(
        s in "tile/8/[0-9a-z]{0,3}(/[x0-9.p]{0,6}){0,5}"
    ) {
        if let Some(t) = tlog::parse_tile_path(&s) {
            prop_assert_eq!(t.path(), s);
        }
    }

    #[test]
    fn every_tile_of_any_size_is_read_from_the_tree(size in 1u64..3000) {
        let tree = tree_of(size);
        for t in tlog::tiles_between(0, size) {
            prop_assert!(tree.tile(&t).is_ok(), "{}", t.path());
        }
    }
}
