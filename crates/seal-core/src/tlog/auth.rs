//! Which leaves and checkpoints are this deployment's log (docs/DESIGN.md §11, "Authenticated
//! leaves"): pure, bytes and keys in, a verdict out.
//!
//! Every leaf seal appends carries an `auth` member: a base64 ed25519 signature by the seal
//! signing key over [`LEAF_CONTEXT`], the log's origin, the leaf's index, the root of the tree
//! of the leaves before it, and the leaf's bytes without that member. A leaf a signed
//! checkpoint covers is authenticated by that checkpoint (the appender that signed it checked
//! the leaf first); a leaf past the latest one is authenticated by its own `auth`, or it is
//! planted. Binding the origin makes a leaf of another deployment's log (staging sharing
//! production's key) worthless here; binding the index and the prefix makes a genuine leaf
//! worthless anywhere but where it was appended: copied to another index, or put back after a
//! rebuild replaced the leaves before it (`log/superseded/` keeps them readable).
//!
//! The signature is one more member of the leaf's canonical JSON, not a second object or a
//! wrapper (docs/DECISIONS.md, "Every leaf signed for its origin, index and prefix").

use base64::Engine as _;
use serde_json::Value;

use super::{open_checkpoint, Leaf, NodeHash, RightEdge, SignedCheckpoint, TlogError, Tree};
use crate::canonical;

/// Domain separation of a leaf's `auth` signature.
pub const LEAF_CONTEXT: &[u8] = b"seal.log-leaf/1\n";

/// The member of a leaf's JSON that holds its signature.
const AUTH: &str = "auth";

/// A leaf as read: what it says, and the bytes and hash of its content without `auth` (the
/// identity of an entry whatever index it was signed for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadLeaf {
    pub leaf: Leaf,
    /// `leaf_hash` of the bytes without `auth`: equal for the same entry at any index.
    pub content: NodeHash,
    auth: Option<[u8; 64]>,
    unsigned: Vec<u8>,
}

impl ReadLeaf {
    /// Parses leaf bytes strictly: canonical JSON of a known kind, with or without a
    /// well-formed `auth` member (whether it verifies is [`LogTrust::authenticate`]'s).
    pub fn parse(bytes: &[u8]) -> Result<ReadLeaf, TlogError> {
        let mut value = crate::json::parse(bytes, super::MAX_LEAF_BYTES)
            .map_err(|e| TlogError::Entry(e.to_string()))?;
        let Some(members) = value.as_object_mut() else {
            return Err(TlogError::Entry("not a JSON object".into()));
        };
        let Some(auth) = members.remove(AUTH) else {
            let leaf = Leaf::from_unsigned(bytes)?;
            return Ok(ReadLeaf {
                content: super::leaf_hash(bytes),
                leaf,
                auth: None,
                unsigned: bytes.to_vec(),
            });
        };
        let auth = match &auth {
            Value::String(s) => decode_sig(s),
            _ => None,
        }
        .ok_or_else(|| TlogError::Entry("auth: not 64 base64 bytes".into()))?;
        let unsigned = canonical::canonical_value_bytes(&value)
            .map_err(|e| TlogError::Entry(e.to_string()))?;
        // One entry, one byte string: the signed bytes must be the canonical form of the
        // unsigned ones with `auth` added, so no two objects hold the same signed entry.
        if with_auth(&unsigned, &auth)? != bytes {
            return Err(TlogError::Entry("not canonical JSON".into()));
        }
        Ok(ReadLeaf {
            leaf: Leaf::from_unsigned(&unsigned)?,
            content: super::leaf_hash(&unsigned),
            auth: Some(auth),
            unsigned,
        })
    }
}

fn decode_sig(s: &str) -> Option<[u8; 64]> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .ok()?
        .try_into()
        .ok()
}

/// The canonical bytes of the unsigned leaf `unsigned` with `auth` added.
fn with_auth(unsigned: &[u8], sig: &[u8; 64]) -> Result<Vec<u8>, TlogError> {
    let mut value: Value =
        serde_json::from_slice(unsigned).map_err(|e| TlogError::Entry(e.to_string()))?;
    let members = value
        .as_object_mut()
        .ok_or_else(|| TlogError::Entry("not a JSON object".into()))?;
    if members.contains_key(AUTH) {
        return Err(TlogError::Entry("signed already".into()));
    }
    members.insert(
        AUTH.into(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(sig)),
    );
    canonical::canonical_value_bytes(&value).map_err(|e| TlogError::Entry(e.to_string()))
}

/// Where a leaf is appended: its index and the root of the tree of the leaves before it (RFC
/// 9162's hash of the empty tree, SHA-256 of no bytes, for leaf 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub index: u64,
    pub prefix_root: NodeHash,
}

impl Place {
    /// The root of the empty tree.
    pub fn empty_root() -> NodeHash {
        use sha2::Digest as _;
        sha2::Sha256::digest(b"").into()
    }

    /// The next leaf of `tree` (all of whose leaves are the log's first ones).
    pub fn next_of(tree: &Tree) -> Result<Place, TlogError> {
        Place::at(tree, tree.size())
    }

    /// Leaf `index` of the log whose first leaves `tree` holds (at least `index` of them).
    pub fn at(tree: &Tree, index: u64) -> Result<Place, TlogError> {
        let prefix_root = if index == 0 {
            Place::empty_root()
        } else {
            tree.root(index)?
        };
        Ok(Place { index, prefix_root })
    }

    /// The next leaf after the leaves `edge` holds.
    pub fn next_of_edge(edge: &RightEdge) -> Place {
        Place {
            index: edge.size(),
            prefix_root: edge.root().unwrap_or_else(Place::empty_root),
        }
    }
}

/// The message a leaf's `auth` signs.
fn message(origin: &str, at: &Place, unsigned: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(LEAF_CONTEXT.len() + origin.len() + 90 + unsigned.len());
    m.extend_from_slice(LEAF_CONTEXT);
    m.extend_from_slice(origin.as_bytes());
    m.push(b'\n');
    m.extend_from_slice(at.index.to_string().as_bytes());
    m.push(b'\n');
    m.extend_from_slice(hex::encode(at.prefix_root).as_bytes());
    m.push(b'\n');
    m.extend_from_slice(unsigned);
    m
}

/// The bytes to store at `at` in the log `origin`: the canonical leaf `unsigned` with its
/// `auth` signature (by whatever holds the private key).
pub fn sign_leaf(
    unsigned: &[u8],
    origin: &str,
    at: &Place,
    sign: &dyn Fn(&[u8]) -> [u8; 64],
) -> Result<Vec<u8>, TlogError> {
    let read = ReadLeaf::parse(unsigned)?;
    if read.auth.is_some() {
        return Err(TlogError::Entry("signed already".into()));
    }
    with_auth(unsigned, &sign(&message(origin, at, unsigned)))
}

/// What a reader of this deployment's log trusts: its origin and the keys that sign for it
/// (the signing key and those it signed with before a rotation). The default trusts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogTrust {
    origin: String,
    keys: Vec<[u8; 32]>,
}

impl LogTrust {
    /// Keys are kept once each, in a fixed order (the same key given twice is one key).
    pub fn new(origin: &str, keys: impl IntoIterator<Item = [u8; 32]>) -> LogTrust {
        let mut keys: Vec<[u8; 32]> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        LogTrust {
            origin: origin.to_string(),
            keys,
        }
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn keys(&self) -> &[[u8; 32]] {
        &self.keys
    }

    /// The same log, also trusting `key`.
    pub fn with_key(mut self, key: [u8; 32]) -> LogTrust {
        if !self.keys.contains(&key) {
            self.keys.push(key);
            self.keys.sort_unstable();
        }
        self
    }

    /// A checkpoint of this log: signed by a trusted key (C2SP signed note) and naming this
    /// log's origin. A note of another log is refused even under a trusted key (a staging log
    /// signed with production's key is not production's log).
    pub fn open_checkpoint(&self, note: &[u8]) -> Result<SignedCheckpoint, TlogError> {
        let c = open_checkpoint(note, &self.keys)?;
        if c.origin != self.origin {
            return Err(TlogError::Checkpoint(format!(
                "a checkpoint of the log {:?}, not of this one ({:?})",
                c.origin, self.origin
            )));
        }
        Ok(c)
    }

    /// The leaf at `at` when it carries this log's proof that seal wrote it there: its `auth`
    /// verifies (strict ed25519) under a trusted key for this origin, this index and these
    /// leaves before it.
    pub fn authenticate(&self, at: &Place, bytes: &[u8]) -> Result<ReadLeaf, TlogError> {
        let index = at.index;
        let read = ReadLeaf::parse(bytes)?;
        let Some(sig) = read.auth else {
            return Err(TlogError::Entry(
                "no auth signature: past every signed checkpoint, only a leaf seal signed is \
                 part of the log"
                    .into(),
            ));
        };
        let sig = ed25519_dalek::Signature::from_bytes(&sig);
        let msg = message(&self.origin, at, &read.unsigned);
        let signed = self.keys.iter().any(|public| {
            ed25519_dalek::VerifyingKey::from_bytes(public)
                .map(|k| k.verify_strict(&msg, &sig).is_ok())
                .unwrap_or(false)
        });
        if !signed {
            return Err(TlogError::Entry(format!(
                "auth does not verify under a trusted key for leaf {index} of {:?} after the \
                 leaves before it: a leaf nobody here signed, or signed for another index, \
                 another log, or a log whose earlier leaves were replaced (a rebuild's)",
                self.origin
            )));
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::LogEntry;
    use ed25519_dalek::Signer as _;

    fn key(seed: u8) -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&[seed; 32])
    }

    fn entry() -> Vec<u8> {
        LogEntry {
            run_id: "run-1".into(),
            evidence_sha256: "e".repeat(64),
            seal_sha256: "s".repeat(64),
            key_id: "k".into(),
            outcome: "PASS".into(),
            decided_at: "2026-01-01T00:00:00Z".into(),
            acceptance_mode: "live".into(),
            parent_run_id: None,
        }
        .to_bytes()
        .unwrap()
    }

    fn at(index: u64) -> Place {
        Place {
            index,
            prefix_root: [index as u8; 32],
        }
    }

    fn signed(k: &ed25519_dalek::SigningKey, origin: &str, index: u64) -> Vec<u8> {
        sign_leaf(&entry(), origin, &at(index), &|m| k.sign(m).to_bytes()).unwrap()
    }

    fn trust(k: &ed25519_dalek::SigningKey) -> LogTrust {
        LogTrust::new("seal.test/log", [k.verifying_key().to_bytes()])
    }

    #[test]
    fn a_leaf_signed_for_its_index_and_origin_authenticates_with_its_content_unchanged() {
        let k = key(1);
        let bytes = signed(&k, "seal.test/log", 7);
        let read = trust(&k).authenticate(&at(7), &bytes).unwrap();
        assert_eq!(read.content, crate::tlog::leaf_hash(&entry()));
        assert!(matches!(read.leaf, Leaf::Seal(ref e) if e.run_id == "run-1"));
        // Deterministic: the same entry at the same index is the same bytes.
        assert_eq!(bytes, signed(&k, "seal.test/log", 7));
        assert!(Leaf::from_bytes(&bytes).is_ok());
    }

    #[test]
    fn another_index_prefix_origin_key_or_no_auth_is_refused() {
        let k = key(1);
        let t = trust(&k);
        let seven = signed(&k, "seal.test/log", 7);
        assert!(t.authenticate(&at(7), &seven).is_ok());
        let moved = Place { index: 8, ..at(7) };
        assert!(t.authenticate(&moved, &seven).is_err());
        // The same index after other leaves (a rebuild replaced those before it).
        let rebuilt = Place { index: 7, ..at(6) };
        assert!(t.authenticate(&rebuilt, &seven).is_err());
        let staging = signed(&k, "seal.staging/log", 7);
        assert!(t.authenticate(&at(7), &staging).is_err());
        assert!(t
            .authenticate(&at(7), &signed(&key(2), "seal.test/log", 7))
            .is_err());
        assert!(t.authenticate(&at(7), &entry()).is_err());
    }

    #[test]
    fn a_changed_member_or_non_canonical_signed_bytes_are_refused() {
        let k = key(1);
        let bytes = signed(&k, "seal.test/log", 3);
        let forged = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("PASS", "FAIL");
        assert!(trust(&k).authenticate(&at(3), forged.as_bytes()).is_err());
        let spaced = String::from_utf8(bytes).unwrap().replacen(',', ", ", 1);
        assert!(ReadLeaf::parse(spaced.as_bytes()).is_err());
        let junk = br#"{"auth":"AAAA","evidenceSha256":"x"}"#;
        assert!(ReadLeaf::parse(junk).is_err());
    }

    #[test]
    fn checkpoints_of_another_origin_are_refused_under_a_trusted_key() {
        let k = key(1);
        let public = k.verifying_key().to_bytes();
        let body = crate::tlog::checkpoint_body("seal.staging/log", 1, &[7; 32]).unwrap();
        let note = crate::tlog::sign_checkpoint(&body, &public, &|m| k.sign(m).to_bytes()).unwrap();
        assert!(open_checkpoint(note.as_bytes(), &[public]).is_ok());
        let err = trust(&k).open_checkpoint(note.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("seal.staging/log"), "{err}");
        let ours = crate::tlog::checkpoint_body("seal.test/log", 1, &[7; 32]).unwrap();
        let note = crate::tlog::sign_checkpoint(&ours, &public, &|m| k.sign(m).to_bytes()).unwrap();
        assert_eq!(trust(&k).open_checkpoint(note.as_bytes()).unwrap().size, 1);
    }
}
