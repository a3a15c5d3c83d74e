//! The two documents only the postguard writes, as types only the postguard can make.
//!
//! [`Decided`] is a DECIDED playtest/3 document with its canonical bytes; [`Seal`] is the
//! canonical DSSE envelope over it. Their constructors are `pub(super)`: only
//! `crate::postguard` reaches them, and the store's writers for the two reserved keys
//! (`Store::put_decided`, `Store::put_seal`) take nothing else. So a decided document cannot be
//! written by any other code path, and the compiler, not a convention, says so. This module
//! holds no logic of its own and imports only documents, so the store can name these types
//! without importing the postguard.

use bytes::Bytes;

use crate::canonical::{self, CanonicalError, Hash};
use crate::doc::{Evidence, Phase};
use crate::ids::RunId;

/// A DECIDED evidence document, canonical, ready to be written once.
#[derive(Debug, Clone)]
pub struct Decided {
    run: RunId,
    evidence: Evidence,
    bytes: Bytes,
    hash: Hash,
}

impl Decided {
    /// Wraps the postguard's decided document. Refuses anything not in phase DECIDED.
    /// `value` is `evidence` as a JSON value (the postguard has it already, from validating
    /// the document): its canonical bytes are those of `evidence`, without a second copy.
    pub(super) fn new(
        run: RunId,
        evidence: Evidence,
        value: &serde_json::Value,
    ) -> Result<Decided, CanonicalError> {
        debug_assert!(evidence.phase == Phase::Decided);
        let bytes = canonical::canonical_value_bytes(value)?;
        let hash = Hash::of(&bytes);
        Ok(Decided {
            run,
            evidence,
            bytes: Bytes::from(bytes),
            hash,
        })
    }
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    pub fn hash(&self) -> &Hash {
        &self.hash
    }
}

/// The canonical bytes of a run's seal envelope, ready to be written once.
#[derive(Debug, Clone)]
pub struct Seal {
    run: RunId,
    bytes: Bytes,
}

impl Seal {
    pub(super) fn new(run: RunId, canonical_envelope: Vec<u8>) -> Seal {
        Seal {
            run,
            bytes: Bytes::from(canonical_envelope),
        }
    }
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}
