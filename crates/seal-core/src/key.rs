//! [`Key`]: the only way to name an object in the store.
//!
//! Invariants, checked before any I/O: at most [`MAX_SEGMENTS`] segments joined by `/`, each a
//! valid id segment (docs/DESIGN.md §2: letters, digits, `.`, `_`, `-`, starts alphanumeric, at most
//! 128 bytes, never `..`), so no key is absolute, empty, contains NUL or climbs out of the root.
//! The layout helpers below are the store layout of docs/DESIGN.md §2, written once.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

use crate::canonical::Hash;
use crate::ids::{check_segment, IdError, RollId, RunId, Slot};

/// Deepest key in the layout is `runs/<run>/roll-<n>/judge-a/attempt-<k>/raw.json` (6).
pub const MAX_SEGMENTS: usize = 8;

/// Folder of the transparency log's entries.
pub const LOG_ENTRIES: &str = "log/entries";
/// Folder of the transparency log's signed checkpoints.
pub const LOG_CHECKPOINTS: &str = "log/checkpoints";
/// Folder of the log's run pointers: `log/runs/<run>/<leaf index, 20 digits>`, one a leaf about
/// the run (its seal's, its reviews').
pub const LOG_RUNS: &str = "log/runs";
/// Folder of the log's judge-policy pointers: `log/policies/<policy sha256>/<leaf index, 20
/// digits>`, one a policy leaf (as a run's pointers are for its leaves).
pub const LOG_POLICIES: &str = "log/policies";
/// Folder of the stored judge policies: `policies/<sha256>.json` (`crate::policy`).
pub const POLICIES: &str = "policies";
/// Folder of the stored reliability reports: `reports/<sha256>.json` (DSSE envelopes,
/// `crate::stats::report`).
pub const REPORTS: &str = "reports";
/// Folder of the log's hash tiles (C2SP tlog-tiles): `log/tile/8/<level>/<index>[.p/<width>]`.
pub const LOG_TILES: &str = "log/tile";
/// Folder of the witnesses' cosignatures of the log's checkpoints:
/// `log/cosignatures/<size, 20 digits>/<key id>-<time>`.
pub const LOG_COSIGNATURES: &str = "log/cosignatures";

/// The folder of a run's reviews: `runs/<run>/reviews/`.
pub const REVIEWS: &str = "reviews";

/// What a put stored (or a read found): the key, the sha256 of its bytes, their length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub key: Key,
    pub hash: Hash,
    pub size: u64,
}

impl Stored {
    /// What `bytes` stored at `key` amount to.
    pub fn of(key: Key, bytes: &[u8]) -> Stored {
        Stored {
            key,
            hash: Hash::of(bytes),
            size: bytes.len() as u64,
        }
    }
}

/// A validated object key relative to the store root.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(String);

impl Key {
    /// Parses and validates a key such as a `*Ref` field of a document.
    pub fn parse(s: &str) -> Result<Key, IdError> {
        let segments: Vec<&str> = s.split('/').collect();
        if segments.len() > MAX_SEGMENTS {
            return Err(IdError {
                what: "object key",
                shown: s.chars().take(80).collect(),
                reason: "too many path segments",
            });
        }
        for seg in &segments {
            check_segment("object key segment", seg).map_err(|e| IdError {
                what: "object key",
                shown: s.chars().take(120).collect(),
                reason: e.reason,
            })?;
        }
        Ok(Key(s.to_owned()))
    }

    fn join(parts: &[&str]) -> Key {
        // Every part is a checked id or a constant of this module: the result is valid.
        Key(parts.join("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `cas/sha256/<aa>/<hex>`: blobs, shared across rolls and runs.
    pub fn cas(hash: &Hash) -> Key {
        let h = hash.as_str();
        Key::join(&["cas", "sha256", &h[..2], h])
    }

    /// Whether `reference` is exactly the key of [`Key::cas`]`(hash)`, without building it
    /// (the invariants compare every frame reference of a document).
    pub fn is_cas_of(reference: &str, hash: &Hash) -> bool {
        let h = hash.as_str();
        reference
            .strip_prefix("cas/sha256/")
            .and_then(|rest| rest.strip_prefix(&h[..2]))
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(h)
    }

    /// If this key is a CAS key, the hash it names.
    pub fn cas_hash(&self) -> Option<Hash> {
        let rest = self.0.strip_prefix("cas/sha256/")?;
        let (prefix, hex) = rest.split_once('/')?;
        let h = Hash::parse(hex).ok()?;
        (prefix == &hex[..2]).then_some(h)
    }

    pub fn run_dir(run: &RunId) -> String {
        format!("runs/{run}")
    }
    pub fn header(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "header.json"])
    }
    pub fn brief(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "brief.md"])
    }
    pub fn play_spec(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "play-spec.json"])
    }
    /// The JUDGING snapshot the postguard re-reads.
    pub fn judging(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "judging.json"])
    }
    /// Written only by the postguard (reserved: see [`Key::is_reserved`]).
    pub fn evidence(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "evidence.json"])
    }
    /// Written only by the postguard (reserved: see [`Key::is_reserved`]).
    pub fn seal(run: &RunId) -> Key {
        Key::join(&["runs", run.as_str(), "seal.dsse.json"])
    }
    pub fn roll_file(run: &RunId, roll: RollId, file: &str) -> Key {
        Key::join(&["runs", run.as_str(), roll.as_str(), file])
    }
    pub fn slot_file(run: &RunId, roll: RollId, slot: Slot, file: &str) -> Key {
        let dir = format!("judge-{slot}");
        Key::join(&["runs", run.as_str(), roll.as_str(), &dir, file])
    }
    pub fn attempt_file(run: &RunId, roll: RollId, slot: Slot, attempt: u32, file: &str) -> Key {
        let dir = format!("judge-{slot}");
        let att = format!("attempt-{attempt}");
        Key::join(&["runs", run.as_str(), roll.as_str(), &dir, &att, file])
    }

    /// `runs/<run>/reviews/<n>.dsse.json`: review `n` of a sealed run (`crate::review`),
    /// written only through the store's review writer (reserved: see [`Key::is_reserved`]).
    pub fn review(run: &RunId, index: u64) -> Key {
        let file = format!("{index}.dsse.json");
        Key::join(&["runs", run.as_str(), REVIEWS, &file])
    }

    /// The folder of a run's reviews.
    pub fn reviews_dir(run: &RunId) -> String {
        format!("runs/{run}/{REVIEWS}")
    }

    /// The index `n` a `runs/<run>/reviews/<n>.dsse.json` key names, if it is one (decimal,
    /// no leading zero: one index, one key).
    pub fn review_number(&self, run: &RunId) -> Option<u64> {
        let rest = self
            .0
            .strip_prefix(&Key::reviews_dir(run))?
            .strip_prefix('/')?;
        let n = rest.strip_suffix(".dsse.json")?;
        let canonical = !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (n == "0" || !n.starts_with('0'))
            && n.len() <= 19;
        canonical.then(|| n.parse().ok()).flatten()
    }

    /// `leases/<run>/<roll>/judge-<slot>/attempt-<k>/<epoch, 6 digits>`: who calls the judge
    /// for that attempt (see `crate::lease`). Outside `runs/`: leases are not evidence.
    pub fn lease(run: &RunId, roll: RollId, slot: Slot, attempt: u32, epoch: u32) -> Key {
        let dir = format!("judge-{slot}");
        let att = format!("attempt-{attempt}");
        let ep = format!("{epoch:06}");
        Key::join(&["leases", run.as_str(), roll.as_str(), &dir, &att, &ep])
    }

    /// `log/entries/<index, 20 digits>`: leaf `index` of the transparency log (create-only).
    pub fn log_entry(index: u64) -> Key {
        Key(format!("{LOG_ENTRIES}/{index:020}"))
    }
    /// `log/checkpoints/<size, 20 digits>`: the signed checkpoint of the tree of `size` leaves.
    pub fn log_checkpoint(size: u64) -> Key {
        Key(format!("{LOG_CHECKPOINTS}/{size:020}"))
    }
    /// `log/runs/<run>/<index, 20 digits>`: leaf `index` of the log is about `run` (a pointer,
    /// empty: the entry at that index is the authority).
    pub fn log_run_leaf(run: &RunId, index: u64) -> Key {
        Key(format!("{LOG_RUNS}/{run}/{index:020}"))
    }
    /// `log/policies/<sha256>/<index, 20 digits>`: leaf `index` of the log registers the judge
    /// policy of that digest (a pointer, empty, as a run's).
    pub fn log_policy_leaf(sha256: &Hash, index: u64) -> Key {
        Key(format!("{LOG_POLICIES}/{sha256}/{index:020}"))
    }
    /// `log/policies/<sha256>`: the folder of a policy's pointers.
    pub fn log_policy_dir(sha256: &Hash) -> String {
        format!("{LOG_POLICIES}/{sha256}")
    }
    /// `policies/<sha256>.json`: the canonical bytes of the judge policy of that digest.
    pub fn policy(sha256: &Hash) -> Key {
        Key(format!("{POLICIES}/{sha256}.json"))
    }
    /// `reports/<sha256>.json`: the envelope of the signed reliability report of that digest.
    pub fn report(sha256: &Hash) -> Key {
        Key(format!("{REPORTS}/{sha256}.json"))
    }
    /// The digest a `policies/<sha256>.json` key names, if it is one.
    pub fn policy_hash(&self) -> Option<Hash> {
        let name = self.0.strip_prefix("policies/")?.strip_suffix(".json")?;
        Hash::parse(name).ok()
    }

    /// `log/runs/<run>`: the folder of a run's pointers.
    pub fn log_run_dir(run: &RunId) -> String {
        format!("{LOG_RUNS}/{run}")
    }

    /// The number a `log/entries/<n>`, `log/checkpoints/<n>` or `log/runs/<run>/<n>` key names
    /// (`folder` being the key's folder), if it is one.
    pub fn log_number(&self, folder: &str) -> Option<u64> {
        numbered_name(self.0.strip_prefix(folder)?.strip_prefix('/')?)
    }

    /// `log/cosignatures/<size, 20 digits>/<key id, 8 hex>-<timestamp>`: one witness's
    /// cosignature of the checkpoint of `size` leaves.
    pub fn log_cosignature(size: u64, key_id: u32, timestamp: u64) -> Key {
        Key(format!(
            "{LOG_COSIGNATURES}/{size:020}/{key_id:08x}-{timestamp}"
        ))
    }

    /// `tmp/uploads/<nonce, 32 hex>`: the scratch object a large blob is streamed to before
    /// it is linked into place (never evidence, never read as a document).
    pub fn upload(nonce: u128) -> Key {
        Key(format!("tmp/uploads/{nonce:032x}"))
    }

    /// `healthz`: the object whose existence `GET /healthz` asks the store about (a read that
    /// reaches the backend; it is never written).
    pub fn health() -> Key {
        Key("healthz".into())
    }

    /// `receipts/<run>/…`: where the receipt of `runs/<run>/…` lives (see `crate::receipt`).
    /// Outside `runs/`: receipts are not evidence. `None` for a key outside `runs/`.
    pub fn receipt_for(object: &Key) -> Option<Key> {
        let rest = object.0.strip_prefix("runs/")?;
        Some(Key(format!("receipts/{rest}")))
    }

    /// The folder part of the key (everything before the last `/`).
    pub fn dir(&self) -> &str {
        self.0.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
    }

    /// Keys only the postguard writes (the decided evidence and its seal), and the run's
    /// reviews folder, written only with a checked review.
    pub fn is_reserved(&self) -> bool {
        let parts: Vec<&str> = self.0.split('/').collect();
        (parts.len() == 3
            && parts[0] == "runs"
            && (parts[2] == "evidence.json" || parts[2] == "seal.dsse.json"))
            || (parts.len() >= 3 && parts[0] == "runs" && parts[2] == REVIEWS)
    }

    /// A run's document written before its seal, or that document's receipt:
    /// `runs/<run>/…` and `receipts/<run>/…`, except the seal itself and the reviews (written
    /// after it). The postguard writes the seal only once every one of these has been put, so
    /// the flush that precedes the seal's own rename makes their names durable too (a store
    /// opened with `with_names_settled_by_seal` counts on it: seal-store's `file::durable`).
    pub fn precedes_its_seal(&self) -> bool {
        let mut parts = self.0.split('/');
        // The second segment is the run's id: every key segment is a valid one.
        let (Some(top), Some(_run), Some(third)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let is_the_seal = top == "runs" && third == "seal.dsse.json" && parts.next().is_none();
        matches!(top, "runs" | "receipts") && third != REVIEWS && !is_the_seal
    }

    /// The run a `runs/<run>/…` key belongs to.
    pub fn run_id(&self) -> Option<RunId> {
        let mut parts = self.0.split('/');
        (parts.next()? == "runs").then_some(())?;
        RunId::parse(parts.next()?).ok()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl From<Key> for String {
    fn from(k: Key) -> String {
        k.0
    }
}

impl From<&Key> for String {
    fn from(k: &Key) -> String {
        k.0.clone()
    }
}

/// A key is written as its string (the `*Ref` fields of the documents)...
impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// ...and read back only through [`Key::parse`]: a document naming a hostile key (absolute,
/// `..`, too deep) does not parse, so no code holding a typed document can be led outside the
/// store's root by it.
impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Key::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The number a numbered object's name is (a log entry, checkpoint or run pointer: `<n>` of
/// `log/entries/<n>`): exactly 20 ASCII digits, zero-padded, so that names sort as numbers.
pub fn numbered_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_keys_are_refused_before_io() {
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/../b",
            "../x",
            "a/./b",
            "a/b/",
            "a\0b",
            "a\\b",
            "runs/x y",
            "a/b/c/d/e/f/g/h/i",
        ] {
            assert!(Key::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(Key::parse(&format!("runs/{}", "x".repeat(129))).is_err());
    }

    #[test]
    fn is_cas_of_is_equality_with_the_cas_key() {
        let h = Hash::of(b"x");
        let other = Hash::of(b"y");
        let k = Key::cas(&h).as_str().to_string();
        assert!(Key::is_cas_of(&k, &h));
        assert!(!Key::is_cas_of(&k, &other));
        for bad in [
            format!("{k}/"),
            format!("/{k}"),
            k.replacen("sha256", "sha512", 1),
            k[..k.len() - 1].to_string(),
            format!("cas/sha256/{}", h.as_str()),
            format!("cas/sha256/{}/{}", &other.as_str()[..2], h.as_str()),
            String::new(),
        ] {
            assert!(!Key::is_cas_of(&bad, &h), "{bad:?}");
        }
    }

    #[test]
    fn layout() {
        let run = RunId::parse("r1").unwrap();
        let h = Hash::of(b"x");
        assert_eq!(
            Key::cas(&h).as_str(),
            format!("cas/sha256/{}/{}", &h.as_str()[..2], h)
        );
        assert_eq!(Key::cas(&h).cas_hash(), Some(h));
        assert_eq!(
            Key::attempt_file(&run, RollId::R2, Slot::B, 1, "raw.json").as_str(),
            "runs/r1/roll-2/judge-b/attempt-1/raw.json"
        );
        assert!(Key::evidence(&run).is_reserved());
        for made in [
            Key::log_cosignature(3, 0xdead_beef, 1_700_000_000),
            Key::upload(u128::MAX),
            Key::health(),
            Key::log_entry(7),
        ] {
            assert_eq!(Key::parse(made.as_str()), Ok(made.clone()), "{made}");
        }
        assert!(Key::seal(&run).is_reserved());
        assert!(!Key::header(&run).is_reserved());
        for k in [
            Key::header(&run),
            Key::cas(&Hash::of(b"y")),
            Key::judging(&run),
        ] {
            assert_eq!(Key::parse(k.as_str()).unwrap(), k);
        }
    }

    /// What a store that settles names by the seal may leave unflushed until the seal: a
    /// run's documents before it and their receipts, never the seal, a review (written after
    /// the seal), the log, the CAS, leases, or a key that only looks like a run's.
    #[test]
    fn what_precedes_a_runs_seal() {
        let run = RunId::parse("r1").unwrap();
        let before = [
            Key::header(&run),
            Key::evidence(&run),
            Key::judging(&run),
            Key::roll_file(&run, RollId::R1, "roll.json"),
            Key::attempt_file(&run, RollId::R2, Slot::B, 1, "raw.json"),
        ];
        for k in &before {
            assert!(k.precedes_its_seal(), "{k}");
            let receipt = Key::receipt_for(k).unwrap();
            assert!(receipt.precedes_its_seal(), "{receipt}");
        }
        let never = [
            Key::seal(&run),
            Key::review(&run, 0),
            Key::receipt_for(&Key::review(&run, 3)).unwrap(),
            Key::log_entry(1),
            Key::log_checkpoint(1),
            Key::log_run_leaf(&run, 1),
            Key::cas(&Hash::of(b"x")),
            Key::lease(&run, RollId::R1, Slot::A, 1, 0),
            Key::upload(1),
            Key::health(),
        ];
        for k in &never {
            assert!(!k.precedes_its_seal(), "{k}");
        }
        // Look-alikes: a file directly under runs/ or receipts/, a run-shaped path elsewhere,
        // the seal's name deeper in a run (an ordinary document there).
        for s in [
            "runs/r1",
            "receipts/r1",
            "cas/r1/a.json",
            "leases/r1/a.json",
        ] {
            assert!(!Key::parse(s).unwrap().precedes_its_seal(), "{s}");
        }
        assert!(Key::parse("runs/r1/roll-1/seal.dsse.json")
            .unwrap()
            .precedes_its_seal());
        assert!(Key::parse("receipts/r1/seal.dsse.json")
            .unwrap()
            .precedes_its_seal());
    }

    #[test]
    fn cas_hash_requires_matching_prefix() {
        let h = Hash::of(b"x");
        let wrong = format!("cas/sha256/zz/{h}");
        assert_eq!(Key::parse(&wrong).unwrap().cas_hash(), None);
    }
}
