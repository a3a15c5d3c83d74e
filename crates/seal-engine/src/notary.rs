//! Receipts in the store: the [`Notary`] issues a receipt for what this deployment accepted or
//! wrote, and requires a verifying one before an input is judged, resumed or sealed from. The
//! receipt document and its MAC are pure ([`seal_core::receipt`], re-exported here; its doc
//! says what a receipt vouches for and why receipts live outside `runs/`).

use seal_core::canonical::Hash;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_store::{parse_stored, Key, Store, StoreError, Stored};

pub use seal_core::receipt::*;

/// An input or record seal cannot authenticate: never judged, resumed, copied or sealed from.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// A receipt is there but does not vouch for the object (wrong MAC, run, key or hash, or
    /// unreadable): the object contradicts its commit point, so it is planted.
    #[error("{object}: planted {kind} (not judged, resumed or sealed from): {reason}")]
    Unauthenticated {
        object: String,
        kind: ReceiptKind,
        reason: String,
    },
    /// The object has no receipt: its step was never committed (a crash between the object
    /// and its receipt, or bytes nobody submitted). Not done rather than planted
    /// (docs/DESIGN.md §2, "Crash safety"): the caller re-sends it and the step is redone;
    /// nothing is judged or sealed from it meanwhile.
    #[error(
        "{object}: {kind} not committed (no receipt: a crash before its commit, or planted; \
         not judged or sealed from): {resend}"
    )]
    Uncommitted {
        object: String,
        kind: ReceiptKind,
        /// What the caller re-sends to commit it.
        resend: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The API error code of an object without its commit receipt (HTTP 409).
pub const UNCOMMITTED: &str = "uncommitted";

/// What a caller re-sends to commit an object of `kind`.
pub fn resend_hint(kind: ReceiptKind) -> String {
    match kind {
        ReceiptKind::Header => "re-send the run's header".into(),
        ReceiptKind::Brief => "re-send the brief".into(),
        ReceiptKind::PlaySpec => "re-send the play-spec".into(),
        ReceiptKind::ProofPackage => "re-send the roll's proof package".into(),
        ReceiptKind::Roll => "re-send the roll's proof package (the roll is judged again)".into(),
        ReceiptKind::ReplayedAttempt => "run the replay again".into(),
        ReceiptKind::Decision => "finalize the run again".into(),
    }
}

impl HasFault for ReceiptError {
    fn fault(&self) -> Fault {
        match self {
            ReceiptError::Unauthenticated { .. } => Fault::Corruption,
            ReceiptError::Uncommitted { .. } => Fault::Caller,
            ReceiptError::Store(e) => e.fault(),
        }
    }
}

impl ReceiptError {
    /// The API error code of an unauthenticated object: `planted_<kind>`.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            ReceiptError::Unauthenticated { kind, .. } => Some(kind.code()),
            ReceiptError::Uncommitted { .. } => Some(UNCOMMITTED),
            ReceiptError::Store(_) => None,
        }
    }
}

/// Who issues and checks receipts: the deployment secret and this replica's name.
#[derive(Clone)]
pub struct Notary {
    secret: std::sync::Arc<zeroize::Zeroizing<Vec<u8>>>,
    replica: String,
}

impl std::fmt::Debug for Notary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notary")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Notary {
    pub fn new(secret: &[u8], replica: String) -> Notary {
        Notary {
            secret: std::sync::Arc::new(zeroize::Zeroizing::new(secret.to_vec())),
            replica,
        }
    }

    fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// Stores the receipt of `stored`, accepted at `at`, create-only. A receipt already there
    /// stands if it vouches for the same bytes (a retry, another replica); anything else there
    /// is planted.
    pub async fn issue(
        &self,
        store: &Store,
        kind: ReceiptKind,
        stored: &Stored,
        from: Option<&RunId>,
        at: &str,
    ) -> Result<(), ReceiptError> {
        let key = receipt_key(&stored.key, kind)?;
        let receipt = make(self.secret(), kind, stored, from, at, &self.replica);
        match store.put_json(&key, &receipt).await {
            Ok(_) => Ok(()),
            Err(StoreError::Conflict { .. }) => {
                self.require(store, kind, &stored.key, &stored.hash).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The receipt of `kind` for `object` when one is stored and verifies (this deployment's
    /// MAC, bound to its key, of that kind and object), whatever bytes it vouches for; `None`
    /// when none is stored. One that does not verify is planted.
    pub async fn committed(
        &self,
        reads: &Store,
        kind: ReceiptKind,
        object: &Key,
    ) -> Result<Option<Receipt>, ReceiptError> {
        let unauth = |reason: String| ReceiptError::Unauthenticated {
            object: object.to_string(),
            kind,
            reason,
        };
        let key = receipt_key(object, kind)?;
        let Some((bytes, _)) = reads.get_opt_hashed(&key).await? else {
            return Ok(None);
        };
        let receipt: Receipt = parse_stored(&key, &bytes, 64 * 1024)
            .map_err(|e| unauth(format!("unreadable receipt: {e}")))?;
        seal_core::bound::check(&key, &receipt).map_err(|e| unauth(e.to_string()))?;
        check(self.secret(), &receipt, kind, object, &receipt.sha256)
            .map_err(|e| unauth(e.to_string()))?;
        Ok(Some(receipt))
    }

    /// Stores the receipt of `stored` accepted at `at`, create-only, unless one is there:
    /// the receipt that stands (this one, or the one found, verified).
    pub async fn commit(
        &self,
        store: &Store,
        kind: ReceiptKind,
        stored: &Stored,
        at: &str,
    ) -> Result<Receipt, ReceiptError> {
        let key = receipt_key(&stored.key, kind)?;
        let receipt = make(self.secret(), kind, stored, None, at, &self.replica);
        match store.put_json(&key, &receipt).await {
            Ok(_) => Ok(receipt),
            Err(StoreError::Conflict { .. }) => self
                .committed(store, kind, &stored.key)
                .await?
                .ok_or_else(|| ReceiptError::Unauthenticated {
                    object: stored.key.to_string(),
                    kind,
                    reason: "its receipt vanished after a conflict".into(),
                }),
            Err(e) => Err(e.into()),
        }
    }

    /// The object `object`, holding `hash`, has a receipt of `kind` that verifies.
    pub async fn require(
        &self,
        reads: &Store,
        kind: ReceiptKind,
        object: &Key,
        hash: &Hash,
    ) -> Result<(), ReceiptError> {
        let Some(receipt) = self.committed(reads, kind, object).await? else {
            return Err(ReceiptError::Uncommitted {
                object: object.to_string(),
                kind,
                resend: resend_hint(kind),
            });
        };
        if receipt.sha256 != *hash {
            let other = NotVouched::OtherBytes {
                stored: hash.clone(),
                vouched: receipt.sha256,
            };
            return Err(ReceiptError::Unauthenticated {
                object: object.to_string(),
                kind,
                reason: other.to_string(),
            });
        }
        Ok(())
    }

    /// The header `open` was loaded with is the one this deployment accepted: its receipt
    /// vouches for exactly those bytes.
    pub(crate) async fn require_header(
        &self,
        reads: &Store,
        open: &crate::run_state::OpenRun,
    ) -> Result<(), ReceiptError> {
        let key = Key::header(open.run());
        self.require(reads, ReceiptKind::Header, &key, open.header_hash())
            .await
    }

    /// Like [`Notary::require`], for an object read now: its receipt must vouch for `bytes`.
    pub async fn require_bytes(
        &self,
        reads: &Store,
        kind: ReceiptKind,
        object: &Key,
        bytes: &[u8],
    ) -> Result<(), ReceiptError> {
        self.require(reads, kind, object, &Hash::of(bytes)).await
    }
}

/// `receipts/<run>/…` for `runs/<run>/…`.
fn receipt_key(object: &Key, kind: ReceiptKind) -> Result<Key, ReceiptError> {
    Key::receipt_for(object).ok_or_else(|| ReceiptError::Unauthenticated {
        object: object.to_string(),
        kind,
        reason: "only objects under runs/ take receipts".into(),
    })
}
