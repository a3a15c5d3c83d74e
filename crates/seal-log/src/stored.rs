//! What the store holds of a run, in the log's terms: the entry a sealed run's leaf must be
//! ([`seal_entry`], [`entry_for`]), recomputed from its stored evidence and seal bytes.

use seal_core::canonical::Hash;
use seal_core::doc::Evidence;
use seal_core::ids::RunId;
use seal_core::sealing::{self, Envelope, PublicKey};
use seal_core::tlog::LogEntry;
use seal_store::Key;

use crate::error::LogError;
use crate::storage::LogStorage;

/// The log entry of a seal: what the postguard appends before it stores the seal, and what
/// auditors recompute from the stored evidence and seal bytes ([`entry_for`]); `None` when the
/// evidence is not DECIDED.
pub fn seal_entry(
    run: &RunId,
    evidence: &Evidence,
    evidence_sha256: &Hash,
    seal_sha256: &Hash,
    key_id: &str,
) -> Option<LogEntry> {
    let (Some(outcome), Some(pg)) = (evidence.outcome, evidence.final_postguard.as_ref()) else {
        return None;
    };
    Some(LogEntry {
        run_id: run.to_string(),
        evidence_sha256: evidence_sha256.to_string(),
        seal_sha256: seal_sha256.to_string(),
        key_id: key_id.to_string(),
        outcome: outcome.as_str().to_string(),
        decided_at: pg.decided_at.clone(),
        acceptance_mode: evidence.acceptance_mode.as_str().to_string(),
        parent_run_id: evidence.parent_run_id.clone(),
    })
}

/// What the store holds of a logged run.
#[derive(Debug)]
pub enum StoredRun {
    /// No evidence.
    Absent,
    /// Evidence without a seal: decided, its seal not written yet.
    Pending { evidence_sha256: String },
    /// Evidence and seal, as the entry the log should hold.
    Sealed(LogEntry),
}

/// What the store holds of a run, as log entry terms.
pub async fn stored_run(store: &impl LogStorage, run: &RunId) -> Result<StoredRun, LogError> {
    let Some(ev) = store.get_opt(&Key::evidence(run)).await? else {
        return Ok(StoredRun::Absent);
    };
    let Some(seal) = store.get_opt(&Key::seal(run)).await? else {
        return Ok(StoredRun::Pending {
            evidence_sha256: Hash::of(&ev).to_string(),
        });
    };
    let not_sealed = |detail: String| LogError::NotSealed {
        run: run.clone(),
        detail,
    };
    let evidence: Evidence = seal_core::json::parse_as(&ev, store.doc_limit())
        .map_err(|e| not_sealed(format!("evidence.json: {e}")))?;
    let envelope: Envelope = seal_core::json::parse_as(&seal, store.doc_limit())
        .map_err(|e| not_sealed(format!("seal.dsse.json: {e}")))?;
    let key_id = match envelope.signatures.as_slice() {
        [s] => s.keyid.clone(),
        other => return Err(not_sealed(format!("{} seal signatures", other.len()))),
    };
    seal_entry(run, &evidence, &Hash::of(&ev), &Hash::of(&seal), &key_id)
        .map(StoredRun::Sealed)
        .ok_or_else(|| not_sealed("evidence.json is not DECIDED".into()))
}

/// The entry the log should hold for a run, computed from its stored evidence and seal bytes;
/// `None` when the run is not sealed (either object absent).
pub async fn entry_for(store: &impl LogStorage, run: &RunId) -> Result<Option<LogEntry>, LogError> {
    Ok(match stored_run(store, run).await? {
        StoredRun::Sealed(e) => Some(e),
        StoredRun::Absent | StoredRun::Pending { .. } => None,
    })
}

/// The entry of a run sealed by one of `trusted` (signature and subject checked), or why it
/// is not one.
pub(crate) async fn trusted_entry(
    store: &impl LogStorage,
    run: &RunId,
    trusted: &[PublicKey],
) -> Result<LogEntry, LogError> {
    let not_sealed = |detail: String| LogError::NotSealed {
        run: run.clone(),
        detail,
    };
    let entry = entry_for(store, run)
        .await?
        .ok_or_else(|| not_sealed("no evidence.json and seal.dsse.json".into()))?;
    let seal_key = Key::seal(run);
    let seal = store
        .get_opt(&seal_key)
        .await?
        .ok_or_else(|| not_sealed("the seal vanished".into()))?;
    let envelope: Envelope = seal_store::parse_stored(&seal_key, &seal, store.doc_limit())?;
    let verified = sealing::verify_envelope(&envelope, trusted)
        .map_err(|e| not_sealed(format!("seal: {e}")))?;
    let subject = &verified.statement.subject[0];
    if subject.name != Key::evidence(run).as_str() || subject.digest.sha256 != entry.evidence_sha256
    {
        return Err(not_sealed(
            "the seal is not over this run's evidence".into(),
        ));
    }
    Ok(entry)
}
