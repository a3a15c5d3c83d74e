//! Transparency-log formats, pure: the log entries (a seal's, a rebuild's), RFC 6962 / 9162 Merkle hashing and
//! proofs, C2SP `tlog-checkpoint` text and C2SP `signed-note` signatures (docs/DESIGN.md §13).
//!
//! Responsibility: bytes in, bytes out. No store, no clock, no randomness: the same entries
//! always give the same tree, the same proofs and (ed25519 being deterministic) the same signed
//! checkpoint. The store-using log is `crate::transparency`.
//!
//! The Merkle math and the formats come from `tlog_tiles` (the Rust port of Go's `sumdb/tlog`
//! with C2SP checkpoints) and `signed_note` (C2SP signed notes); this module only adapts them (an
//! in-memory [`Tree`] of stored hashes, strict ed25519 verification) and is checked against the
//! RFC 6962 and C2SP test vectors in `tests/data/tlog/` (docs/DECISIONS.md, "`tlog_tiles` and
//! `signed_note`").

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use signed_note::{Note, VerifierList};
use tlog_tiles::{Checkpoint, HashReader};

use crate::canonical::{self, CanonicalError};
use crate::key::Key;

pub mod auth;
mod leaves;
pub use auth::{sign_leaf, LogTrust, Place, ReadLeaf};
pub use leaves::{Leaf, PolicyEntry, ReportEntry, ReviewEntry};

/// A node or leaf hash of the tree (32 bytes).
pub type NodeHash = [u8; 32];

/// Default origin (and signed-note key name) of a seal log when the config names none.
pub const DEFAULT_ORIGIN: &str = "seal.local/log";

/// The signature algorithm byte of an ed25519 signed-note key (C2SP signed-note).
const ALG_ED25519: u8 = 0x01;

/// Why a log format operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TlogError {
    #[error("log entry: {0}")]
    Entry(String),
    #[error("tree: {0}")]
    Tree(String),
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    #[error("signed note: {0}")]
    Note(String),
    #[error("proof does not verify: {0}")]
    Proof(String),
}

impl crate::fault::HasFault for TlogError {
    fn fault(&self) -> crate::fault::Fault {
        // Bad log bytes were read from the store or handed in by a caller; both are refused,
        // and the store-using layer reclassifies what it read as corruption.
        crate::fault::Fault::Caller
    }
}

/// One leaf: what the log records about a sealed run. Its canonical JSON bytes are the leaf
/// data; field order in the bytes is RFC 8785's (sorted), whatever the order here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogEntry {
    pub run_id: String,
    pub evidence_sha256: String,
    pub seal_sha256: String,
    pub key_id: String,
    pub outcome: String,
    pub decided_at: String,
    pub acceptance_mode: String,
    pub parent_run_id: Option<String>,
}

impl LogEntry {
    /// The exact leaf bytes (canonical JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }

    /// Parses leaf bytes strictly and refuses any that are not canonical (one entry, one hash).
    pub fn from_bytes(bytes: &[u8]) -> Result<LogEntry, TlogError> {
        let entry: LogEntry = crate::json::parse_as(bytes, MAX_LEAF_BYTES)
            .map_err(|e| TlogError::Entry(e.to_string()))?;
        let again = entry
            .to_bytes()
            .map_err(|e| TlogError::Entry(e.to_string()))?;
        if again != bytes {
            return Err(TlogError::Entry("not canonical JSON".into()));
        }
        Ok(entry)
    }
}

/// The `kind` of a rebuild entry. A seal entry has no `kind` at all: its bytes are those of the
/// first log, so old leaves, proofs and golden vectors stay valid.
const KIND_REBUILD: &str = "rebuild";

/// Domain separation of a rebuild entry's signature: the signed message is this context, then
/// the canonical bytes of the entry without its `signature` field.
pub const REBUILD_CONTEXT: &[u8] = b"seal.log-rebuild/1\n";

/// Largest leaf parsed (a seal entry is ~500 bytes; a rebuild entry carries at most
/// [`MAX_REBUILD_PROBLEMS`] short lines).
const MAX_LEAF_BYTES: u64 = 64 * 1024;

/// Problems a rebuild entry records word for word; the rest are counted.
pub const MAX_REBUILD_PROBLEMS: usize = 32;

/// The leaf an operator's `seal log rebuild` appends (docs/DESIGN.md §13): why the log was
/// rebuilt, what of the previous log was kept and where the rest went. Signed by the seal
/// signing key itself, not only through the checkpoints: an appender adopts every entry it
/// finds below the next free index, so a rebuild entry planted by a store writer would
/// otherwise be signed over by the next checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RebuildEntry {
    /// Always `"rebuild"`.
    pub kind: String,
    pub origin: String,
    pub rebuilt_at: String,
    /// The seal key id (sha256 of the raw public key) of the key that signed this entry.
    pub key_id: String,
    /// Leaves of the previous log kept below this one: this entry's index.
    pub kept_entries: u64,
    /// The largest checkpoint of the previous log that verified, if one did.
    pub previous_checkpoint_size: Option<u64>,
    /// Its root, lowercase hex.
    pub previous_checkpoint_root: Option<String>,
    /// The folder the objects of the previous log that were in the way were moved to.
    pub superseded: Option<String>,
    pub moved_objects: u64,
    /// Why: the first [`MAX_REBUILD_PROBLEMS`] problems found, one line each.
    pub problems: Vec<String>,
    pub problem_count: u64,
    /// Sealed runs the rebuild appended right after this leaf.
    pub runs_appended: u64,
    /// What the rebuilt log no longer holds that the previous one did, each named by the
    /// operator (`seal log rebuild --drop`): `<run>: leaf <i>, …` or `leaf:<i>: …`, the first
    /// [`MAX_REBUILD_PROBLEMS`] word for word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// How many were dropped (0 is left out, as in rebuild entries from before drops).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_count: u64,
    /// Base64 ed25519 signature over [`REBUILD_CONTEXT`] and the entry without this field.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub signature: String,
}

impl RebuildEntry {
    /// An unsigned entry (every count to be filled in by the caller).
    pub fn new(origin: &str, rebuilt_at: &str, key_id: &str) -> RebuildEntry {
        RebuildEntry {
            kind: KIND_REBUILD.into(),
            origin: origin.into(),
            rebuilt_at: rebuilt_at.into(),
            key_id: key_id.into(),
            kept_entries: 0,
            previous_checkpoint_size: None,
            previous_checkpoint_root: None,
            superseded: None,
            moved_objects: 0,
            problems: Vec::new(),
            problem_count: 0,
            runs_appended: 0,
            dropped: Vec::new(),
            dropped_count: 0,
            signature: String::new(),
        }
    }

    /// The message the signature covers.
    fn signed_message(&self) -> Result<Vec<u8>, TlogError> {
        let unsigned = RebuildEntry {
            signature: String::new(),
            ..self.clone()
        };
        let body =
            canonical::canonical_bytes(&unsigned).map_err(|e| TlogError::Entry(e.to_string()))?;
        Ok([REBUILD_CONTEXT, &body].concat())
    }

    /// Signs the entry with whatever holds the private key (the note code never sees it).
    pub fn sign(mut self, sign: &dyn Fn(&[u8]) -> [u8; 64]) -> Result<RebuildEntry, TlogError> {
        let sig = sign(&self.signed_message()?);
        self.signature = base64::engine::general_purpose::STANDARD.encode(sig);
        Ok(self)
    }

    /// Checks the signature under the trusted key whose seal key id the entry names (strict
    /// ed25519, as for seals and checkpoints).
    pub fn verify(&self, trusted: &[[u8; 32]]) -> Result<(), TlogError> {
        let fail = |why: &str| TlogError::Entry(format!("rebuild entry: {why}"));
        let public = trusted
            .iter()
            .find(|p| canonical::Hash::of(p.as_slice()).to_string() == self.key_id)
            .ok_or_else(|| fail("not signed by a trusted key"))?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(public)
            .map_err(|e| fail(&format!("trusted key: {e}")))?;
        let sig = base64::engine::general_purpose::STANDARD
            .decode(&self.signature)
            .ok()
            .and_then(|b| ed25519_dalek::Signature::from_slice(&b).ok())
            .ok_or_else(|| fail("the signature is not 64 base64 bytes"))?;
        key.verify_strict(&self.signed_message()?, &sig)
            .map_err(|_| fail("the signature does not verify"))
    }

    /// The exact leaf bytes (canonical JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Height of the log's hash tiles: 256 hashes a tile, as C2SP tlog-tiles fixes it.
pub const TILE_HEIGHT: u8 = 8;

/// The bytes of a full hash tile (256 hashes of 32 bytes): no stored tile is larger.
pub const MAX_TILE_BYTES: u64 = 32 << TILE_HEIGHT;

/// The most bytes a stored checkpoint is read for. A note of seal's is a few hundred bytes:
/// the origin, size and root lines, then one signature line (~100 bytes) per key that signed
/// it, and signed_note takes at most 100 of those (~10 KB). A larger file under
/// `log/checkpoints/` is planted and is not read.
pub const MAX_CHECKPOINT_BYTES: u64 = 64 * 1024;

pub use tlog_tiles::Tile;

/// The hash tiles a log of `new` leaves has that a log of `old` leaves has not (C2SP
/// tlog-tiles): every tile completed in between and, at each level, the partial tile at the
/// new right edge. `tiles_between(0, n)` is every tile a reader of the tree of `n` may ask for.
pub fn tiles_between(old: u64, new: u64) -> Vec<Tile> {
    if old >= new {
        return Vec::new();
    }
    Tile::new_tiles(TILE_HEIGHT, old, new)
}

/// The hash tile a C2SP path (`tile/8/<level>/<index>[.p/<width>]`) names, in its one
/// canonical spelling, at seal's height; `None` for anything else, data tiles included.
///
/// Checked here before `Tile::from_path`, which panics on a width of 0 or a level above 63 and
/// lets a level overflow the hash index arithmetic: the path comes from a store listing or a
/// request, so it is hostile.
pub fn parse_tile_path(path: &str) -> Option<Tile> {
    let mut parts = path.split('/');
    let (Some("tile"), Some("8"), Some(level)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    // Levels of a tree of at most 2^64 leaves at height 8: 0 to 7, one digit.
    if level.len() != 1 || !matches!(level.as_bytes()[0], b'0'..=b'7') {
        return None;
    }
    // A partial tile's width: 1 to 255 (`from_path` reads `0` and `00` too, then panics).
    let all: Vec<&str> = path.split('/').collect();
    if let [.., index, width] = all.as_slice() {
        if index.ends_with(".p") && !matches!(width.parse::<u32>(), Ok(1..=255)) {
            return None;
        }
    }
    // `from_path` keeps only the canonical spelling (it compares the path with the tile's
    // own), and a data tile's `data` level was refused above.
    Tile::from_path(path).ok()
}

/// `log/tile/<height>/<level>/<index path>[.p/<width>]`: the store key of hash tile `tile`
/// (C2SP tlog-tiles, whose `tile/…` path it is under `log/`). `None` past the key depth (a
/// tree of more than 2^38 leaves).
pub fn tile_key(tile: &Tile) -> Option<Key> {
    Key::parse(&format!("log/{}", tile.path())).ok()
}

/// The hash tile a `log/tile/…` key names, if it is one (a data tile is not: seal stores its
/// entries one by one).
pub fn key_tile(key: &Key) -> Option<Tile> {
    parse_tile_path(key.as_str().strip_prefix("log/")?)
}

/// The tiles on the right edge of the tree of `size` leaves: at each level, the one holding
/// that level's last hash (partial, or the last full tile). They are the last tiles a writer
/// stores before a checkpoint of `size`, so finding them all stored with the tree's bytes
/// says the writer got that far.
pub fn edge_tiles(size: u64) -> Vec<Tile> {
    let h = u32::from(TILE_HEIGHT);
    let mut tiles = Vec::new();
    let mut level: u8 = 0;
    loop {
        let shift = h * u32::from(level);
        let count = size.checked_shr(shift).unwrap_or(0);
        if count == 0 {
            return tiles;
        }
        let width = count % (1 << h);
        let tile = if width == 0 {
            Tile::new(TILE_HEIGHT, level, (count >> h) - 1, 1 << h, false)
        } else {
            // `width` < 256, so it fits.
            Tile::new(TILE_HEIGHT, level, count >> h, width as u32, false)
        };
        tiles.push(tile);
        level += 1;
    }
}

/// RFC 6962 leaf hash: SHA-256(0x00 || data).
pub fn leaf_hash(data: &[u8]) -> NodeHash {
    tlog_tiles::record_hash(data).0
}

/// RFC 6962 interior node hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &NodeHash, right: &NodeHash) -> NodeHash {
    tlog_tiles::node_hash(tlog_tiles::Hash(*left), tlog_tiles::Hash(*right)).0
}

/// The root of a tree fed one leaf hash at a time, in O(log n) memory: the roots of the
/// perfect subtrees on its right edge, largest first (an RFC 9162 compact range from 0).
///
/// What reads a whole log only to compare it with one signed root (`seal verify --all`'s pass
/// over the log) keeps this, not a [`Tree`] (two hashes a leaf), so its memory does not grow
/// with the log (docs/DECISIONS.md, "Start-up independent of history").
#[derive(Debug, Clone, Default)]
pub struct RightEdge {
    /// (height, root) of each perfect subtree, heights strictly decreasing.
    peaks: Vec<(u32, NodeHash)>,
    size: u64,
}

impl RightEdge {
    pub fn new() -> RightEdge {
        RightEdge::default()
    }

    /// Leaves fed so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf by its leaf hash: equal-height neighbours merge, as in a binary counter.
    pub fn push(&mut self, leaf: NodeHash) {
        let mut node = (0u32, leaf);
        while let Some(&(height, left)) = self.peaks.last() {
            if height != node.0 {
                break;
            }
            self.peaks.pop();
            node = (height + 1, node_hash(&left, &node.1));
        }
        self.peaks.push(node);
        self.size += 1;
    }

    /// The root of the tree of every leaf fed (RFC 9162 MTH: the peaks folded from the right);
    /// `None` for the empty tree, which no checkpoint of seal's signs.
    pub fn root(&self) -> Option<NodeHash> {
        let mut peaks = self.peaks.iter().rev();
        let mut acc = peaks.next()?.1;
        for (_, left) in peaks {
            acc = node_hash(left, &acc);
        }
        Some(acc)
    }
}

/// A tree kept in memory as the stored hashes of Go's `tlog` layout (about two per leaf), from
/// which any root and proof is computed in O(log n) hash reads.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    stored: Vec<tlog_tiles::Hash>,
    size: u64,
}

impl HashReader for Tree {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<tlog_tiles::Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| self.stored.get(i).copied())
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

fn tree_err(e: tlog_tiles::Error) -> TlogError {
    TlogError::Tree(e.to_string())
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf by its data.
    pub fn push(&mut self, data: &[u8]) -> Result<(), TlogError> {
        self.push_leaf_hash(leaf_hash(data))
    }

    /// Appends a leaf by its leaf hash.
    pub fn push_leaf_hash(&mut self, leaf: NodeHash) -> Result<(), TlogError> {
        let new =
            tlog_tiles::stored_hashes_for_record_hash(self.size, tlog_tiles::Hash(leaf), self)
                .map_err(tree_err)?;
        self.stored.extend(new);
        self.size += 1;
        Ok(())
    }

    /// The leaf hash of leaf `index` (`None` past the tree).
    pub fn leaf(&self, index: u64) -> Option<NodeHash> {
        // Leaf `size` would be stored at `stored.len()`, so past the tree nothing is found.
        let at = usize::try_from(tlog_tiles::stored_hash_index(0, index)).ok()?;
        self.stored.get(at).map(|h| h.0)
    }

    /// The root of the tree of the first `size` leaves (`size` ≤ [`Tree::size`]).
    pub fn root(&self, size: u64) -> Result<NodeHash, TlogError> {
        self.check_size(size)?;
        tlog_tiles::tree_hash(size, self)
            .map(|h| h.0)
            .map_err(tree_err)
    }

    /// The RFC 9162 inclusion proof (audit path, leaf to root) of leaf `index` in the tree of
    /// the first `size` leaves.
    pub fn inclusion(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, TlogError> {
        self.check_size(size)?;
        if index >= size {
            return Err(TlogError::Tree(format!(
                "leaf {index} is not in a tree of size {size}"
            )));
        }
        tlog_tiles::prove_record(size, index, self)
            .map(|p| p.into_iter().map(|h| h.0).collect())
            .map_err(tree_err)
    }

    /// The RFC 9162 consistency proof from the tree of `old` leaves to the tree of `new`.
    pub fn consistency(&self, old: u64, new: u64) -> Result<Vec<NodeHash>, TlogError> {
        self.check_size(new)?;
        if old == 0 || old == new {
            return if old <= new {
                Ok(Vec::new())
            } else {
                Err(TlogError::Tree("old size above new size".into()))
            };
        }
        tlog_tiles::prove_tree(new, old, self)
            .map(|p| p.into_iter().map(|h| h.0).collect())
            .map_err(tree_err)
    }

    /// The bytes of hash tile `tile` of this tree (32 bytes a hash, left to right); an error
    /// for a tile reaching past the tree.
    pub fn tile(&self, tile: &Tile) -> Result<Vec<u8>, TlogError> {
        if tile.is_data() {
            return Err(TlogError::Tree(
                "a data tile holds entries, not hashes".into(),
            ));
        }
        tile.read_data(self).map_err(tree_err)
    }

    fn check_size(&self, size: u64) -> Result<(), TlogError> {
        if size > self.size {
            return Err(TlogError::Tree(format!(
                "size {size} is beyond the {} leaves held",
                self.size
            )));
        }
        Ok(())
    }
}

fn hashes(p: &[NodeHash]) -> Vec<tlog_tiles::Hash> {
    p.iter().map(|h| tlog_tiles::Hash(*h)).collect()
}

/// Checks an inclusion proof: leaf `index` with leaf hash `leaf` is in the tree of `size`
/// leaves whose root is `root`.
pub fn check_inclusion(
    proof: &[NodeHash],
    size: u64,
    root: &NodeHash,
    index: u64,
    leaf: &NodeHash,
) -> Result<(), TlogError> {
    if index >= size {
        return Err(TlogError::Proof(format!(
            "leaf {index} is not in a tree of size {size}"
        )));
    }
    tlog_tiles::check_record(
        &hashes(proof),
        size,
        tlog_tiles::Hash(*root),
        index,
        tlog_tiles::Hash(*leaf),
    )
    .map_err(|e| TlogError::Proof(format!("inclusion of leaf {index} in size {size}: {e}")))
}

/// Checks a consistency proof: the tree of `old_size` with `old_root` is a prefix of the tree
/// of `new_size` with `new_root`.
pub fn check_consistency(
    proof: &[NodeHash],
    old_size: u64,
    old_root: &NodeHash,
    new_size: u64,
    new_root: &NodeHash,
) -> Result<(), TlogError> {
    let fail =
        |why: String| TlogError::Proof(format!("consistency {old_size} → {new_size}: {why}"));
    if old_size > new_size {
        return Err(fail("the old tree is larger".into()));
    }
    if old_size == new_size {
        return match (proof.is_empty(), old_root == new_root) {
            (true, true) => Ok(()),
            (false, _) => Err(fail("a proof between equal sizes must be empty".into())),
            (true, false) => Err(fail("same size, different roots".into())),
        };
    }
    if old_size == 0 {
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(fail("a proof from the empty tree must be empty".into()))
        };
    }
    tlog_tiles::check_tree(
        &hashes(proof),
        new_size,
        tlog_tiles::Hash(*new_root),
        old_size,
        tlog_tiles::Hash(*old_root),
    )
    .map_err(|e| fail(e.to_string()))
}

/// Whether a string can be a log origin: a valid signed-note key name (non-empty, no
/// whitespace, no '+').
pub fn is_origin_valid(origin: &str) -> bool {
    signed_note::is_key_name_valid(origin)
}

/// The C2SP `tlog-checkpoint` body: origin line, tree size, base64 root hash, each ending in a
/// newline, no extension lines.
pub fn checkpoint_body(origin: &str, size: u64, root: &NodeHash) -> Result<String, TlogError> {
    if !signed_note::is_key_name_valid(origin) {
        return Err(TlogError::Checkpoint(format!(
            "origin {origin:?} is not a valid signed-note key name (no spaces, no '+')"
        )));
    }
    let c = Checkpoint::new(origin, size, tlog_tiles::Hash(*root), "")
        .map_err(|e| TlogError::Checkpoint(e.to_string()))?;
    String::from_utf8(c.to_bytes()).map_err(|e| TlogError::Checkpoint(e.to_string()))
}

/// The C2SP signed-note key id of an ed25519 key under a name:
/// the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key), big-endian.
pub fn note_key_id(name: &str, public: &[u8; 32]) -> u32 {
    let mut key = vec![ALG_ED25519];
    key.extend_from_slice(public);
    signed_note::key_id(name, &key)
}

/// The C2SP verifier key string `<name>+<hex key id>+<base64(0x01 || public key)>`.
pub fn verifier_key(name: &str, public: &[u8; 32]) -> String {
    let mut key = vec![ALG_ED25519];
    key.extend_from_slice(public);
    format!(
        "{name}+{:08x}+{}",
        note_key_id(name, public),
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

/// Signs with whatever holds the private key; the note code never sees it.
struct NoteSigner<'a> {
    name: &'a str,
    id: u32,
    sign: &'a dyn Fn(&[u8]) -> [u8; 64],
}

impl signed_note::Signer for NoteSigner<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, ed25519_dalek::SignatureError> {
        Ok((self.sign)(msg).to_vec())
    }
}

/// Signs a checkpoint body as a C2SP signed note whose key name is the checkpoint's origin.
pub fn sign_checkpoint(
    body: &str,
    public: &[u8; 32],
    sign: &dyn Fn(&[u8]) -> [u8; 64],
) -> Result<String, TlogError> {
    let origin = body.split('\n').next().unwrap_or_default();
    let signer = NoteSigner {
        name: origin,
        id: note_key_id(origin, public),
        sign,
    };
    let mut note = Note::new(body.as_bytes(), &[]).map_err(|e| TlogError::Note(e.to_string()))?;
    note.add_sigs(&[&signer as &dyn signed_note::Signer])
        .map_err(|e| TlogError::Note(e.to_string()))?;
    String::from_utf8(note.to_bytes()).map_err(|e| TlogError::Note(e.to_string()))
}

/// Strict ed25519 verification of signed-note signatures (small-order keys and non-canonical
/// signatures refused, as for seals).
struct StrictVerifier {
    name: String,
    id: u32,
    key: ed25519_dalek::VerifyingKey,
}

impl signed_note::Verifier for StrictVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(sig)
            .map(|s| self.key.verify_strict(msg, &s).is_ok())
            .unwrap_or(false)
    }
}

/// A checkpoint whose signed note verified under a trusted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    pub origin: String,
    pub size: u64,
    pub root: NodeHash,
    /// The signed-note key id (hex) of the key that verified.
    pub note_key_id: String,
    /// The raw public key that verified.
    pub public: [u8; 32],
    /// The whole note, exactly as given.
    pub text: String,
}

/// Parses a signed checkpoint and verifies it: at least one signature by a trusted key under
/// the checkpoint's origin as key name, every such signature valid; signatures by other keys
/// are ignored (witness cosignatures, as the C2SP spec allows).
pub fn open_checkpoint(note: &[u8], trusted: &[[u8; 32]]) -> Result<SignedCheckpoint, TlogError> {
    let parsed = Note::from_bytes(note).map_err(|e| TlogError::Note(e.to_string()))?;
    let body = parsed.text().to_vec();
    let c = Checkpoint::from_bytes(&body).map_err(|e| TlogError::Checkpoint(e.to_string()))?;
    let origin = c.origin().to_string();
    // A set, not a list: the same key given twice (the signing key is also in `keys.trusted`,
    // `--trust` repeated) would make `signed_note` refuse every note as "ambiguous key", and
    // every checkpoint would look unsigned, silently turning off the checks that rest on them.
    let mut distinct = trusted.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut verifiers: Vec<Box<dyn signed_note::Verifier>> = Vec::new();
    for public in &distinct {
        let key = ed25519_dalek::VerifyingKey::from_bytes(public)
            .map_err(|e| TlogError::Note(format!("trusted key: {e}")))?;
        verifiers.push(Box::new(StrictVerifier {
            name: origin.clone(),
            id: note_key_id(&origin, public),
            key,
        }));
    }
    let list = VerifierList::new(verifiers);
    let (verified, _) = parsed.verify(&list).map_err(|e| match e {
        signed_note::NoteError::UnverifiedNote => TlogError::Note(format!(
            "no signature by a trusted key under the name {origin:?}"
        )),
        other => TlogError::Note(other.to_string()),
    })?;
    let first = verified
        .first()
        .ok_or_else(|| TlogError::Note("no verified signature".into()))?;
    let public = trusted
        .iter()
        .find(|p| note_key_id(&origin, p) == first.id())
        .copied()
        .ok_or_else(|| TlogError::Note("verified key vanished".into()))?;
    Ok(SignedCheckpoint {
        origin,
        size: c.size(),
        root: c.hash().0,
        note_key_id: format!("{:08x}", first.id()),
        public,
        text: String::from_utf8(note.to_vec()).map_err(|e| TlogError::Note(e.to_string()))?,
    })
}

/// Parses a checkpoint note without verifying any signature (for reporting what a store holds).
pub fn parse_checkpoint_unverified(note: &[u8]) -> Result<(String, u64, NodeHash), TlogError> {
    let parsed = Note::from_bytes(note).map_err(|e| TlogError::Note(e.to_string()))?;
    let c =
        Checkpoint::from_bytes(parsed.text()).map_err(|e| TlogError::Checkpoint(e.to_string()))?;
    Ok((c.origin().to_string(), c.size(), c.hash().0))
}

/// Lowercase hex of a node hash.
pub fn hex(h: &NodeHash) -> String {
    ::hex::encode(h)
}

/// Parses a lowercase or uppercase hex node hash.
pub fn parse_hex(s: &str) -> Result<NodeHash, TlogError> {
    let v = ::hex::decode(s).map_err(|e| TlogError::Proof(format!("{s:?}: {e}")))?;
    v.try_into()
        .map_err(|_| TlogError::Proof(format!("{s:?}: not 32 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The right edge's root is the tree's (RFC 9162 MTH, as `tlog_tiles` computes it) at
    /// every size from 1 to 600: sizes on and off powers of two and the tile width 256.
    #[test]
    fn the_right_edge_s_root_is_the_tree_s_at_every_size() {
        let (mut tree, mut edge) = (Tree::new(), RightEdge::new());
        assert_eq!(edge.root(), None);
        for n in 0..600u32 {
            let leaf = leaf_hash(&n.to_be_bytes());
            tree.push_leaf_hash(leaf).unwrap();
            edge.push(leaf);
            assert_eq!(edge.size(), tree.size());
            assert_eq!(
                edge.root(),
                Some(tree.root(tree.size()).unwrap()),
                "size {}",
                n + 1
            );
        }
        // Order matters: two leaves swapped give another root.
        let (mut a, mut b) = (RightEdge::new(), RightEdge::new());
        let (x, y) = (leaf_hash(b"x"), leaf_hash(b"y"));
        a.push(x);
        a.push(y);
        b.push(y);
        b.push(x);
        assert_ne!(a.root(), b.root());
    }

    /// `Tree::leaf` is the leaf hash of exactly that leaf, at every size, and nothing past it.
    #[test]
    fn a_leaf_is_the_hash_of_its_data() {
        let mut t = Tree::new();
        for n in 0..300u32 {
            t.push(&n.to_be_bytes()).unwrap();
            for i in [0, n / 2, n] {
                assert_eq!(
                    t.leaf(u64::from(i)),
                    Some(leaf_hash(&i.to_be_bytes())),
                    "{i} of {n}"
                );
            }
            assert_eq!(t.leaf(u64::from(n) + 1), None);
            assert_eq!(t.leaf(u64::from(n) + 2), None);
        }
    }

    #[test]
    fn proofs_round_trip() {
        let mut t = Tree::new();
        for i in 0..20u8 {
            t.push(&[i]).unwrap();
        }
        for size in 1..=20 {
            let root = t.root(size).unwrap();
            for i in 0..size {
                let p = t.inclusion(i, size).unwrap();
                check_inclusion(&p, size, &root, i, &leaf_hash(&[i as u8])).unwrap();
            }
            for old in 1..=size {
                let p = t.consistency(old, size).unwrap();
                check_consistency(&p, old, &t.root(old).unwrap(), size, &root).unwrap();
            }
        }
        assert!(check_inclusion(&[], 20, &t.root(20).unwrap(), 3, &leaf_hash(&[3])).is_err());
    }

    #[test]
    fn a_rebuild_entry_is_signed_canonical_and_told_apart_from_a_seal_entry() {
        use ed25519_dalek::Signer;
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let public = key.verifying_key().to_bytes();
        let key_id = canonical::Hash::of(&public).to_string();
        let mut e = RebuildEntry::new("seal.test/log", "2026-12-02T00:00:00Z", &key_id);
        e.problems = vec!["[run_unlogged] runs/x: sealed, but not in the log".into()];
        e.problem_count = 1;
        e.runs_appended = 3;
        let e = e.sign(&|m| key.sign(m).to_bytes()).unwrap();
        let bytes = e.to_bytes().unwrap();
        match Leaf::from_bytes(&bytes).unwrap() {
            Leaf::Rebuild(r) => r.verify(&[public]).unwrap(),
            other => panic!("{other:?}"),
        }
        let other = ed25519_dalek::SigningKey::from_bytes(&[8u8; 32])
            .verifying_key()
            .to_bytes();
        assert!(e.verify(&[other]).is_err(), "another key");
        let forged = RebuildEntry {
            runs_appended: 2,
            ..e.clone()
        };
        assert!(forged.verify(&[public]).is_err(), "a field changed");
        let text = String::from_utf8(bytes).unwrap();
        let other_kind = text.replace("\"rebuild\"", "\"other\"");
        assert!(Leaf::from_bytes(other_kind.as_bytes()).is_err());
        assert!(Leaf::from_bytes(format!(" {text}").as_bytes()).is_err());
        let unsigned = RebuildEntry {
            signature: String::new(),
            ..e
        };
        assert!(Leaf::from_bytes(&unsigned.to_bytes().unwrap()).is_err());
        // A seal entry has no kind and parses as before.
        let seal = LogEntry {
            run_id: "r".into(),
            evidence_sha256: "e".into(),
            seal_sha256: "s".into(),
            key_id,
            outcome: "pass".into(),
            decided_at: "2026-12-02T00:00:00Z".into(),
            acceptance_mode: "normal".into(),
            parent_run_id: None,
        };
        let bytes = seal.to_bytes().unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("kind"));
        assert_eq!(Leaf::from_bytes(&bytes).unwrap(), Leaf::Seal(seal));
    }

    #[test]
    fn checkpoint_signs_and_opens() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let public = key.verifying_key().to_bytes();
        let body = checkpoint_body("seal.test/log", 3, &[9u8; 32]).unwrap();
        let sign = |m: &[u8]| {
            use ed25519_dalek::Signer;
            key.sign(m).to_bytes()
        };
        let note = sign_checkpoint(&body, &public, &sign).unwrap();
        assert!(note.starts_with("seal.test/log\n3\n"));
        let c = open_checkpoint(note.as_bytes(), &[public]).unwrap();
        assert_eq!((c.size, c.root), (3, [9u8; 32]));
        let other = ed25519_dalek::SigningKey::from_bytes(&[8u8; 32])
            .verifying_key()
            .to_bytes();
        assert!(open_checkpoint(note.as_bytes(), &[other]).is_err());
        let forged = note.replace("\n3\n", "\n4\n");
        assert!(open_checkpoint(forged.as_bytes(), &[public]).is_err());
        // The trusted keys are a set: the signing key given again (it is also in
        // `keys.trusted`, or `--trust` names it twice) still verifies, with another key or not.
        for trusted in [vec![public, public], vec![other, public, other, public]] {
            let c = open_checkpoint(note.as_bytes(), &trusted).unwrap();
            assert_eq!((c.size, c.public), (3, public));
        }
    }
}
