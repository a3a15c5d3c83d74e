//! The transparency log's format rules, each pinned by a test named after it (mutation
//! survivors of `tlog.rs`, docs/TESTING.md): RFC 6962 hashing against the reference vectors of
//! Certificate Transparency, the leaf size bound, and which leaf kinds exist.

use seal_core::tlog::{self, Leaf, LogEntry, ReviewEntry, Tree};

/// The eight leaves of the RFC 6962 reference tests (certificate-transparency's
/// `merkle_tree_test`), and the root of each prefix of them.
const LEAVES: [&[u8]; 8] = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
];
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

#[test]
fn a_leaf_hash_is_sha256_of_a_zero_byte_and_the_leaf() {
    assert_eq!(tlog::hex(&tlog::leaf_hash(LEAVES[0])), ROOTS[0]);
}

#[test]
fn a_node_hash_is_sha256_of_a_one_byte_and_both_children() {
    let (a, b) = (tlog::leaf_hash(LEAVES[0]), tlog::leaf_hash(LEAVES[1]));
    assert_eq!(tlog::hex(&tlog::node_hash(&a, &b)), ROOTS[1]);
    // Order matters: the left child comes first.
    assert_ne!(tlog::node_hash(&b, &a), tlog::node_hash(&a, &b));
}

#[test]
fn every_prefix_of_the_reference_tree_has_the_reference_root() {
    let mut tree = Tree::new();
    for (n, leaf) in LEAVES.iter().enumerate() {
        tree.push(leaf).unwrap();
        for (size, root) in ROOTS.iter().enumerate().take(n + 1) {
            assert_eq!(
                tlog::hex(&tree.root(size as u64 + 1).unwrap()),
                *root,
                "size {}",
                size + 1
            );
        }
    }
}

fn reference_tree() -> Tree {
    let mut tree = Tree::new();
    for leaf in LEAVES {
        tree.push(leaf).unwrap();
    }
    tree
}

#[test]
fn a_tree_counts_its_leaves() {
    let mut tree = Tree::new();
    assert_eq!(tree.size(), 0);
    for (n, leaf) in LEAVES.iter().enumerate() {
        tree.push(leaf).unwrap();
        assert_eq!(tree.size(), n as u64 + 1);
    }
}

#[test]
fn a_size_beyond_the_leaves_held_is_refused_by_name() {
    let tree = reference_tree();
    let beyond = "size 9 is beyond the 8 leaves held";
    for err in [
        tree.root(9).unwrap_err(),
        tree.inclusion(0, 9).unwrap_err(),
        tree.consistency(2, 9).unwrap_err(),
    ] {
        assert!(err.to_string().contains(beyond), "{err}");
    }
}

#[test]
fn a_consistency_proof_from_the_empty_tree_or_to_the_same_size_is_empty() {
    let tree = reference_tree();
    for n in 1..=8u64 {
        let root = tree.root(n).unwrap();
        assert_eq!(
            tree.consistency(0, n).unwrap(),
            Vec::<tlog::NodeHash>::new(),
            "0 → {n}"
        );
        assert_eq!(
            tree.consistency(n, n).unwrap(),
            Vec::<tlog::NodeHash>::new(),
            "{n} → {n}"
        );
        tlog::check_consistency(&[], n, &root, n, &root).unwrap();
    }
    // Between different non-empty sizes there is a proof, and it checks.
    let proof = tree.consistency(3, 8).unwrap();
    assert!(!proof.is_empty());
    tlog::check_consistency(&proof, 3, &tree.root(3).unwrap(), 8, &tree.root(8).unwrap()).unwrap();
}

fn seal_entry(run_id: String) -> LogEntry {
    LogEntry {
        run_id,
        evidence_sha256: "a".repeat(64),
        seal_sha256: "b".repeat(64),
        key_id: "c".repeat(64),
        outcome: "pass".into(),
        decided_at: "2026-12-03T00:00:00Z".into(),
        acceptance_mode: "live".into(),
        parent_run_id: None,
    }
}

/// A seal entry is ~500 bytes and a rebuild entry a few KiB; 64 KiB is the bound on what is
/// parsed at all.
#[test]
fn a_leaf_up_to_64_kib_is_read_and_a_larger_one_is_not() {
    let base = seal_entry(String::new()).to_bytes().unwrap().len();
    let of_size = |size: usize| seal_entry("r".repeat(size - base)).to_bytes().unwrap();
    let limit = 64 * 1024;
    let at = of_size(limit);
    assert_eq!(at.len(), limit);
    assert!(matches!(Leaf::from_bytes(&at), Ok(Leaf::Seal(_))));
    assert!(LogEntry::from_bytes(&at).is_ok());
    let over = of_size(limit + 1);
    assert!(Leaf::from_bytes(&over).is_err());
    assert!(LogEntry::from_bytes(&over).is_err());
}

/// Three kinds of leaf exist (a seal's entry has none); a review entry under any other kind is
/// not read as a review.
#[test]
fn a_leaf_of_an_unknown_kind_is_refused_even_with_a_review_s_fields() {
    let review = ReviewEntry::new(
        "run-1",
        1,
        &"d".repeat(64),
        &"e".repeat(64),
        "2026-12-03T00:00:00Z",
    );
    // The same entry under its own kind is read as a review (tlog.rs's
    // `a_review_leaf_round_trips_strictly`); under any other kind it is refused.
    let mut other = review;
    other.kind = "witness".into();
    let err = Leaf::from_bytes(&other.to_bytes().unwrap()).unwrap_err();
    assert!(err.to_string().contains("unknown leaf kind"), "{err}");
}

#[test]
fn a_consistency_proof_that_does_not_hold_is_refused() {
    let tree = reference_tree();
    let (r3, r8) = (tree.root(3).unwrap(), tree.root(8).unwrap());
    let proof = tree.consistency(3, 8).unwrap();
    // A different old root, a different new root, a cut proof.
    assert!(tlog::check_consistency(&proof, 3, &r8, 8, &r8).is_err());
    assert!(tlog::check_consistency(&proof, 3, &r3, 8, &r3).is_err());
    assert!(tlog::check_consistency(&proof[1..], 3, &r3, 8, &r8).is_err());
    // The old tree larger than the new, equal sizes with different roots, a proof from the
    // empty tree or between equal sizes that is not empty.
    assert!(tlog::check_consistency(&[], 8, &r8, 3, &r3).is_err());
    assert!(tlog::check_consistency(&[], 3, &r3, 3, &r8).is_err());
    assert!(tlog::check_consistency(&proof, 0, &r3, 8, &r8).is_err());
    assert!(tlog::check_consistency(&proof, 8, &r8, 8, &r8).is_err());
}

/// A log's origin is a signed-note key name: not empty, no whitespace, no '+'.
#[test]
fn an_origin_is_a_signed_note_key_name() {
    assert!(tlog::is_origin_valid(tlog::DEFAULT_ORIGIN));
    assert!(tlog::is_origin_valid("example.com/log-2"));
    for bad in ["", "seal log", "seal+log", "seal\tlog", "seal\nlog"] {
        assert!(!tlog::is_origin_valid(bad), "{bad:?}");
    }
}

/// C2SP signed-note: the key id is the first 4 bytes, big-endian, of
/// SHA-256(name || "\n" || 0x01 || public key), and the verifier key string is
/// `<name>+<hex id>+<base64(0x01 || public key)>` (vector computed with Python's hashlib).
#[test]
fn a_note_key_id_and_verifier_key_follow_c2sp_signed_note() {
    let public = [7u8; 32];
    assert_eq!(tlog::note_key_id("seal.local/log", &public), 0x81c6_4b8a);
    assert_eq!(
        tlog::verifier_key("seal.local/log", &public),
        "seal.local/log+81c64b8a+AQcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"
    );
}

/// What a store holds is reported from the checkpoint's own lines, before (and without) any
/// signature check.
#[test]
fn an_unverified_checkpoint_reports_its_origin_size_and_root() {
    let tree = reference_tree();
    let root = tree.root(5).unwrap();
    let body = tlog::checkpoint_body("example.com/log", 5, &root).unwrap();
    // Any signature at all: this reading checks none.
    let note = tlog::sign_checkpoint(&body, &[7u8; 32], &|_| [9u8; 64]).unwrap();
    let (origin, size, got) = tlog::parse_checkpoint_unverified(note.as_bytes()).unwrap();
    assert_eq!((origin.as_str(), size, got), ("example.com/log", 5, root));
    assert!(tlog::parse_checkpoint_unverified(b"not a note").is_err());
}

/// A node hash is written as 64 lowercase hex digits and read back from either case; anything
/// else is refused.
#[test]
fn a_node_hash_reads_back_from_its_hex_in_either_case() {
    let h = tlog::leaf_hash(LEAVES[3]);
    let text = tlog::hex(&h);
    assert_eq!(text.len(), 64);
    assert_eq!(tlog::parse_hex(&text).unwrap(), h);
    assert_eq!(tlog::parse_hex(&text.to_uppercase()).unwrap(), h);
    assert_eq!(tlog::parse_hex(ROOTS[0]).unwrap(), tlog::leaf_hash(b""));
    for bad in ["", "00", &text[..62], "zz".repeat(32).as_str()] {
        assert!(tlog::parse_hex(bad).is_err(), "{bad:?}");
    }
}
