//! Authenticated resume: a judge attempt found in the store is reused only if this daemon can
//! tell it wrote it.
//!
//! When seal stores an attempt it writes, in its SlotMeta/1, an `attemptMac`:
//! `HMAC-SHA256(K, "request" ‖ 0 ‖ requestHash ‖ 0 ‖ "raw" ‖ 0 ‖ rawHash ‖ 0 ‖ "meta" ‖ 0 ‖
//! metaCoreHash ‖ 0)`, where `K` is derived from the seed salt with the label
//! `seal/attempt-mac` and the attempt's run, roll, slot and number (as `judge` derives seeds),
//! and `metaCoreHash` is the sha256 of the canonical SlotMeta without `attemptMac`. On resume a
//! stored attempt is accepted only when
//!
//! 1. its stored request is byte-identical to the request this configuration and salt build
//!    for that attempt (a request from another salt, model or prompt is not ours), and
//! 2. its meta carries a MAC that verifies over the stored request, raw answer and meta.
//!
//! Anything else is a *planted* attempt: [`Planted`], a corruption that names the attempt and is
//! never sealed from. A raw answer without a meta is planted too.
//!
//! The MAC is checked on resume only, never by `seal verify` (docs/DECISIONS.md, "The attempt MAC
//! is for resume only").

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::canonical::{canonical_bytes, Hash};
use crate::doc::SlotMeta;
use crate::fault::{Fault, HasFault};
use crate::ids::{RollId, RunId, Slot};
use crate::key::Key;

/// Label of the MAC key derivation (distinct from the seed and session labels).
pub const MAC_LABEL: &str = "seal/attempt-mac";
/// Prefix of an `attemptMac` value.
pub const MAC_PREFIX: &str = "hmac-sha256:";

/// A stored attempt this daemon cannot tell it wrote: never resumed, never sealed from.
#[derive(Debug, thiserror::Error)]
#[error("{key}: planted judge attempt, not resumed and never sealed from: {reason}")]
pub struct Planted {
    /// The attempt's folder (`runs/<run>/<roll>/judge-<slot>/attempt-<k>`).
    pub key: String,
    pub reason: String,
}

impl HasFault for Planted {
    fn fault(&self) -> Fault {
        Fault::Corruption
    }
}

/// Which attempt, for keys and the MAC.
#[derive(Debug, Clone, Copy)]
pub struct AttemptId<'a> {
    pub run: &'a RunId,
    pub roll: RollId,
    pub slot: Slot,
    pub attempt: u32,
}

impl AttemptId<'_> {
    fn folder(&self) -> String {
        Key::attempt_file(self.run, self.roll, self.slot, self.attempt, "raw.json")
            .dir()
            .to_string()
    }

    /// The key of this attempt's `meta.json`.
    pub fn meta_key(&self) -> Key {
        Key::attempt_file(self.run, self.roll, self.slot, self.attempt, "meta.json")
    }

    /// The attempt named as planted, for `reason`.
    pub fn planted(&self, reason: impl Into<String>) -> Planted {
        Planted {
            key: self.folder(),
            reason: reason.into(),
        }
    }
}

fn core_hash(meta: &SlotMeta) -> Hash {
    let mut core = meta.clone();
    core.attempt_mac = None;
    // A SlotMeta always canonicalizes (no floats beyond 2^53); an empty hash never verifies.
    Hash::of(&canonical_bytes(&core).unwrap_or_default())
}

fn compute(
    salt: &[u8],
    id: AttemptId<'_>,
    request: Option<&Hash>,
    raw: &Hash,
    meta: &SlotMeta,
) -> [u8; 32] {
    let key = super::seeds::derive(salt, MAC_LABEL, id.run, id.roll, id.slot, id.attempt);
    let mut mac = match Hmac::<Sha256>::new_from_slice(&key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    let request = request.map(|h| h.to_string()).unwrap_or_default();
    let core = core_hash(meta);
    for part in [
        "request",
        &request,
        "raw",
        raw.as_str(),
        "meta",
        core.as_str(),
    ] {
        mac.update(part.as_bytes());
        mac.update(&[0]);
    }
    mac.finalize().into_bytes().into()
}

/// Sets `meta.attemptMac` for the attempt's stored request and raw answer.
pub fn sign_meta(salt: &[u8], id: AttemptId<'_>, mut meta: SlotMeta) -> SlotMeta {
    meta.attempt_mac = None;
    let mac = compute(salt, id, meta.request_hash.as_ref(), &meta.raw_hash, &meta);
    meta.attempt_mac = Some(format!("{MAC_PREFIX}{}", hex::encode(mac)));
    meta
}

/// Whether `meta`'s `attemptMac` verifies for attempt `id` over the request and raw answer the
/// meta names (the caller checks those hashes against the stored bytes): seal made this
/// attempt for this run, roll, slot and number under this secret.
pub fn mac_verifies(salt: &[u8], id: AttemptId<'_>, meta: &SlotMeta) -> bool {
    if crate::bound::check(&id.meta_key(), meta).is_err() {
        return false;
    }
    let want = compute(salt, id, meta.request_hash.as_ref(), &meta.raw_hash, meta);
    use subtle::ConstantTimeEq;
    meta.attempt_mac
        .as_deref()
        .and_then(|m| m.strip_prefix(MAC_PREFIX))
        .and_then(|h| hex::decode(h).ok())
        .is_some_and(|g| g.len() == 32 && bool::from(g.ct_eq(&want)))
}

/// What was found stored for one attempt.
pub struct Stored<'a> {
    pub request: Option<&'a [u8]>,
    pub raw: &'a [u8],
    pub meta: Option<&'a SlotMeta>,
}

/// Accepts a stored attempt only if its request is `expected_request` byte for byte (when the
/// attempt was sent; `None` for a slot the guard never dispatched) and its meta's MAC verifies.
pub fn check(
    salt: &[u8],
    id: AttemptId<'_>,
    expected_request: Option<&[u8]>,
    found: &Stored<'_>,
) -> Result<(), Planted> {
    if found.request != expected_request {
        return Err(id.planted(match (found.request, expected_request) {
            (None, Some(_)) => "an answer without the request it answers".to_string(),
            (Some(_), None) => "a request for a slot that was never dispatched".to_string(),
            _ => "the stored request is not the one this configuration and seed salt build"
                .to_string(),
        }));
    }
    let Some(meta) = found.meta else {
        return Err(id.planted("a raw answer without its SlotMeta (no MAC)"));
    };
    let request_hash = found.request.map(Hash::of);
    let raw_hash = Hash::of(found.raw);
    if meta.raw_hash != raw_hash || meta.request_hash != request_hash {
        return Err(id.planted("the SlotMeta names another request or raw answer"));
    }
    // The meta is read from this attempt's folder: its slot and number must be the folder's.
    crate::bound::check(&id.meta_key(), meta).map_err(|e| id.planted(e.to_string()))?;
    let want = compute(salt, id, request_hash.as_ref(), &raw_hash, meta);
    let got = meta
        .attempt_mac
        .as_deref()
        .and_then(|m| m.strip_prefix(MAC_PREFIX))
        .and_then(|h| hex::decode(h).ok());
    use subtle::ConstantTimeEq;
    match got {
        Some(g) if g.len() == 32 && bool::from(g.ct_eq(&want)) => Ok(()),
        Some(_) => {
            Err(id.planted("its attemptMac does not verify (not written by this daemon's salt)"))
        }
        None => Err(id.planted("its SlotMeta carries no attemptMac")),
    }
}

/// A stored request that was never answered must still be ours before it is re-sent.
pub fn check_request(id: AttemptId<'_>, expected: &[u8], stored: &[u8]) -> Result<(), Planted> {
    if stored == expected {
        Ok(())
    } else {
        Err(id.planted("the stored request is not the one this configuration and seed salt build"))
    }
}
