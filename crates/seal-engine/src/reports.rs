//! Publishing a signed reliability report (`seal report reliability`): its DSSE envelope is
//! stored create-only at `reports/<sha256>.json`, then a `reliability-report` leaf naming the
//! digest is appended to the transparency log (the leaf is the commit: a crash before it leaves
//! stored bytes the log never names, which are not published). Logging every report fixes
//! which figures were stated when, so that a report cannot be made again and again until its
//! figures please and then shown alone: the log lists them all (`seal log show`).

use bytes::Bytes;

use seal_core::canonical::Hash;
use seal_core::fault::{Fault, HasFault};
use seal_core::sealing::SigningKey;
use seal_core::tlog::ReportEntry;
use seal_log::{Appended, Log};
use seal_store::{Key, Store, StoreError};

/// Why a report could not be published.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("reliability report {key}: {source}")]
    Store {
        key: Key,
        #[source]
        source: StoreError,
    },
    #[error("reliability report {sha256}: the transparency log: {source}")]
    Log {
        sha256: Hash,
        #[source]
        source: seal_log::LogError,
    },
}

impl HasFault for ReportError {
    fn fault(&self) -> Fault {
        match self {
            // Other bytes under a content address were not written by seal: planted.
            ReportError::Store { source, .. } if source.is_corruption() => Fault::Corruption,
            ReportError::Store { source, .. } => source.fault(),
            ReportError::Log { source, .. } => source.fault(),
        }
    }
}

/// A published report: its digest and the log leaf that names it.
#[derive(Debug, Clone)]
pub struct Published {
    pub sha256: Hash,
    pub key: Key,
    pub leaf: Appended,
}

/// Stores the report envelope `bytes` (signed by `key`, made at `generated_at`) and logs it.
pub async fn publish(
    store: &Store,
    log: &Log,
    key: &SigningKey,
    bytes: &[u8],
    generated_at: &str,
) -> Result<Published, ReportError> {
    let sha256 = Hash::of(bytes);
    let at = Key::report(&sha256);
    store
        .put(&at, Bytes::copy_from_slice(bytes))
        .await
        .map_err(|source| ReportError::Store {
            key: at.clone(),
            source,
        })?;
    let entry = ReportEntry::new(&sha256, &key.key_id, generated_at);
    let leaf = log
        .append_report(&entry, key)
        .await
        .map_err(|source| ReportError::Log {
            sha256: sha256.clone(),
            source,
        })?;
    tracing::info!(report = %sha256, leaf = leaf.index, "reliability report published");
    Ok(Published {
        sha256,
        key: at,
        leaf,
    })
}
