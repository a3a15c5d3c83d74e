//! Receipts: what this deployment vouches it accepted or wrote, MAC'd with its secret.
//!
//! The adversary of docs/DESIGN.md §11 writes any store object but holds neither the signing
//! key nor the deployment secret. Content hashes say an object was not altered *after* a
//! document named it; they cannot say who wrote the first document. So every input seal takes
//! from a worker (header, brief, play-spec, proof package), every roll it finished (`roll.json`,
//! which names every document of the roll by sha256) and every judge attempt a stored replay
//! copied from a verified source get a receipt: `seal.receipt/1 {runId, kind, object, sha256,
//! from?, at, replica, mac}` at the object's key with `runs/` replaced by `receipts/`.
//!
//! `mac` = `"hmac-sha256:" ‖ hex(HMAC-SHA256(K, canonical receipt without mac))`, with
//! `K = HMAC-SHA256(secret, "seal/receipt" ‖ 0 ‖ runId ‖ 0)`: a receipt cannot be moved to
//! another run, object or hash, and cannot be made without the secret. Judging and the
//! postguard refuse an input whose receipt is missing or does not verify (the engine's
//! `ReceiptError::Unauthenticated`): the object is named as planted and nothing is judged or
//! sealed from it.
//!
//! Receipts live outside `runs/` (like leases): they are not evidence, and `seal verify` and
//! imports ignore them (docs/DECISIONS.md, "Receipts live outside `runs/`").
//!
//! This module holds the document and its MAC ([`make`], [`check`], pure); issuing and
//! requiring receipts in a store is the engine's `Notary`.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::canonical::{canonical_bytes, Hash};
use crate::ids::RunId;
use crate::key::{Key, Stored};

/// `schemaVersion` of a receipt.
pub const SCHEMA: &str = "seal.receipt/1";
/// Label of the receipt MAC key derivation (distinct from the seed, session and attempt labels).
pub const LABEL: &str = "seal/receipt";
/// Prefix of a `mac` value.
pub const MAC_PREFIX: &str = "hmac-sha256:";

/// What a receipt vouches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiptKind {
    /// A run header accepted from a worker, an operator's run folder or `seal replay`.
    Header,
    Brief,
    PlaySpec,
    ProofPackage,
    /// A roll this process finished: `roll.json`, which binds every document of the roll.
    Roll,
    /// A judge attempt's `meta.json` copied byte for byte from a verified source run (`from`).
    ReplayedAttempt,
    /// The decision: `evidence.json` as the postguard derived it, committed before it is
    /// stored, with `at` = its `finalPostguard.decidedAt` (the one input of a decision that is
    /// not derived). A retried finalize takes the time from here, never from the stored
    /// evidence (docs/DESIGN.md §11, "The commit point of a decision").
    Decision,
}

impl ReceiptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptKind::Header => "header",
            ReceiptKind::Brief => "brief",
            ReceiptKind::PlaySpec => "play-spec",
            ReceiptKind::ProofPackage => "proof-package",
            ReceiptKind::Roll => "roll",
            ReceiptKind::ReplayedAttempt => "replayed-attempt",
            ReceiptKind::Decision => "decision",
        }
    }
}

impl ReceiptKind {
    /// `planted_<kind>`: the API error code for an object of this kind seal cannot authenticate.
    pub fn code(self) -> &'static str {
        match self {
            ReceiptKind::Header => "planted_header",
            ReceiptKind::Brief => "planted_brief",
            ReceiptKind::PlaySpec => "planted_play_spec",
            ReceiptKind::ProofPackage => "planted_proof_package",
            ReceiptKind::Roll => "planted_roll",
            ReceiptKind::ReplayedAttempt => "planted_attempt",
            ReceiptKind::Decision => "planted_evidence",
        }
    }
}

impl std::fmt::Display for ReceiptKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The receipt document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    pub schema_version: String,
    pub run_id: String,
    pub kind: ReceiptKind,
    /// The key of the object vouched for (`runs/<id>/…`).
    pub object: String,
    pub sha256: Hash,
    /// For a replayed attempt: the verified source run it was copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// When it was accepted (RFC 3339, the engine's clock), and by which replica.
    pub at: String,
    pub replica: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

fn mac_of(secret: &[u8], receipt: &Receipt) -> Option<[u8; 32]> {
    let mut core = receipt.clone();
    core.mac = None;
    let bytes = canonical_bytes(&core).ok()?;
    let mut k = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    for part in [LABEL, receipt.run_id.as_str()] {
        k.update(part.as_bytes());
        k.update(&[0]);
    }
    let key: [u8; 32] = k.finalize().into_bytes().into();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(&bytes);
    Some(mac.finalize().into_bytes().into())
}

/// The receipt for `stored`, MAC'd under `secret` (pure).
pub fn make(
    secret: &[u8],
    kind: ReceiptKind,
    stored: &Stored,
    from: Option<&RunId>,
    at: &str,
    replica: &str,
) -> Receipt {
    let mut r = Receipt {
        schema_version: SCHEMA.into(),
        run_id: stored
            .key
            .run_id()
            .map(|r| r.to_string())
            .unwrap_or_default(),
        kind,
        object: stored.key.to_string(),
        sha256: stored.hash.clone(),
        from: from.map(|f| f.to_string()),
        at: at.into(),
        replica: replica.into(),
        mac: None,
    };
    r.mac = mac_of(secret, &r).map(|m| format!("{MAC_PREFIX}{}", hex::encode(m)));
    r
}

/// Why a receipt does not vouch for an object (the texts are those of the refusals).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotVouched {
    #[error("receipt schemaVersion is {0:?}")]
    Schema(String),
    #[error("the receipt is for {kind} {object} of run {run}")]
    OtherObject {
        kind: ReceiptKind,
        object: String,
        run: String,
    },
    #[error("the receipt cannot be canonicalized")]
    Canonical,
    #[error("its MAC does not verify (not written with this deployment's secret)")]
    BadMac,
    #[error("the receipt carries no MAC")]
    NoMac,
    #[error("the stored object hashes to {stored}, its receipt vouches for {vouched}")]
    OtherBytes { stored: Hash, vouched: Hash },
}

/// Whether `receipt` vouches, under `secret`, for `kind` object `object` holding `hash`
/// (pure). The reason when it does not.
pub fn check(
    secret: &[u8],
    receipt: &Receipt,
    kind: ReceiptKind,
    object: &Key,
    hash: &Hash,
) -> Result<(), NotVouched> {
    if receipt.schema_version != SCHEMA {
        return Err(NotVouched::Schema(receipt.schema_version.clone()));
    }
    let run = object.run_id().map(|r| r.to_string()).unwrap_or_default();
    if receipt.run_id != run || receipt.object != object.as_str() || receipt.kind != kind {
        return Err(NotVouched::OtherObject {
            kind: receipt.kind,
            object: receipt.object.clone(),
            run: receipt.run_id.clone(),
        });
    }
    let want = mac_of(secret, receipt).ok_or(NotVouched::Canonical)?;
    let got = receipt
        .mac
        .as_deref()
        .and_then(|m| m.strip_prefix(MAC_PREFIX))
        .and_then(|h| hex::decode(h).ok());
    use subtle::ConstantTimeEq;
    match got {
        Some(g) if g.len() == 32 && bool::from(g.ct_eq(&want)) => {}
        Some(_) => return Err(NotVouched::BadMac),
        None => return Err(NotVouched::NoMac),
    }
    if &receipt.sha256 != hash {
        return Err(NotVouched::OtherBytes {
            stored: hash.clone(),
            vouched: receipt.sha256.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(key: &str, bytes: &[u8]) -> Stored {
        Stored::of(Key::parse(key).unwrap(), bytes)
    }

    #[test]
    fn a_receipt_verifies_only_for_its_secret_object_kind_and_hash() {
        let s = stored("runs/run-1/header.json", b"{}");
        let r = make(
            b"0123456789abcdef0123456789abcdef",
            ReceiptKind::Header,
            &s,
            None,
            "t",
            "r",
        );
        let secret = b"0123456789abcdef0123456789abcdef";
        assert_eq!(
            check(secret, &r, ReceiptKind::Header, &s.key, &s.hash),
            Ok(())
        );
        assert!(check(
            b"another secret of thirty-two by",
            &r,
            ReceiptKind::Header,
            &s.key,
            &s.hash
        )
        .is_err());
        assert!(check(secret, &r, ReceiptKind::Brief, &s.key, &s.hash).is_err());
        let other = stored("runs/run-2/header.json", b"{}");
        assert!(check(secret, &r, ReceiptKind::Header, &other.key, &other.hash).is_err());
        assert!(check(secret, &r, ReceiptKind::Header, &s.key, &Hash::of(b"[]")).is_err());
        // Moving the receipt to another run, even with a recomputed body, needs the secret.
        let mut moved = r.clone();
        moved.run_id = "run-2".into();
        moved.object = "runs/run-2/header.json".into();
        assert!(check(secret, &moved, ReceiptKind::Header, &other.key, &other.hash).is_err());
        let mut bare = r;
        bare.mac = None;
        assert!(check(secret, &bare, ReceiptKind::Header, &s.key, &s.hash).is_err());
    }

    #[test]
    fn receipts_mirror_the_run_layout_outside_runs() {
        let k = Key::parse("runs/run-1/roll-1/judge-a/attempt-2/meta.json").unwrap();
        assert_eq!(
            Key::receipt_for(&k).unwrap().as_str(),
            "receipts/run-1/roll-1/judge-a/attempt-2/meta.json"
        );
        assert!(Key::receipt_for(&Key::parse("cas/sha256/aa/bb").unwrap()).is_none());
    }
}
