//! `seal shadow-report`'s loader: the store's decided runs, each proven, reduced to the
//! [`ShadowRun`]s the pure report pairs with the ledger (docs/DESIGN.md §7).
//!
//! Every decided run is proven before its acceptance mode is read (docs/DECISIONS.md, "Shadow
//! runs are proven before their mode is read").
//!
//! Only the verified evidence is read: designId, taskId, genre, evidence mode, outcome,
//! decision and `decidedAt`. Runs are proven [`JOBS`] at a time and consumed in store order.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use seal_core::adapt::task_id_string;
use seal_core::doc::{AcceptanceMode, Evidence};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::sealing::PublicKey;
use seal_core::shadow::{build, LedgerSummary, RunSet, ShadowReport, ShadowRun};
use seal_core::stats::facts::Unverified;
use seal_store::{Key, Store, StoreError};

/// Runs proved at once (as `seal stats`).
pub const JOBS: usize = 8;

/// Why the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{key}: {detail}")]
    Corrupt { key: String, detail: String },
    #[error("the shadow report is not valid: {0}")]
    Invalid(String),
}

impl HasFault for ShadowError {
    fn fault(&self) -> Fault {
        match self {
            ShadowError::Store(e) => e.fault(),
            ShadowError::Corrupt { .. } | ShadowError::Invalid(_) => Fault::Corruption,
        }
    }
}

/// The report and its canonical JSON bytes (with a final newline).
#[derive(Debug, Clone)]
pub struct Shadow {
    pub report: ShadowReport,
    pub bytes: Vec<u8>,
}

/// What one listed run contributes.
enum Visit {
    Open,
    NotVerified(Unverified),
    Other,
    Shadow(Box<ShadowRun>),
}

fn unverified(r: &crate::verify::RunReport) -> Unverified {
    Unverified {
        run_id: r.run_id.clone(),
        problems: r.problems.len(),
        first_problem: r
            .problems
            .first()
            .map(|p| p.to_string())
            .unwrap_or_default(),
    }
}

async fn visit(store: &Store, run: &RunId, trusted: &[PublicKey]) -> Result<Visit, ShadowError> {
    if !store.exists(&Key::evidence(run)).await? {
        return Ok(Visit::Open); // not decided: nothing to pair
    }
    Ok(match crate::verify::prove(store, run, trusted).await? {
        Err(report) => Visit::NotVerified(unverified(&report)),
        Ok(proof) if proof.evidence().acceptance_mode == AcceptanceMode::V3Shadow => {
            Visit::Shadow(Box::new(shadow_run(run, proof.evidence())?))
        }
        Ok(_) => Visit::Other,
    })
}

/// The `_designId` of a run when it is a designId (64 lowercase hex).
fn design_id(ev: &Evidence) -> Option<String> {
    match ev.extensions.0.get("_designId") {
        Some(serde_json::Value::String(s))
            if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

fn task_id(ev: &Evidence) -> Option<String> {
    match ev.extensions.0.get("_taskId") {
        Some(v @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => {
            Some(task_id_string(v))
        }
        _ => None,
    }
}

fn shadow_run(run: &RunId, ev: &Evidence) -> Result<ShadowRun, ShadowError> {
    let corrupt = |detail: &str| ShadowError::Corrupt {
        key: Key::evidence(run).to_string(),
        detail: detail.into(),
    };
    let decided_at = ev
        .final_postguard
        .as_ref()
        .map(|p| p.decided_at.clone())
        .ok_or_else(|| corrupt("a verified evidence without finalPostguard"))?;
    let decided = OffsetDateTime::parse(&decided_at, &Rfc3339)
        .map_err(|_| corrupt("a verified evidence without an RFC 3339 decidedAt"))?;
    let outcome = ev
        .outcome
        .ok_or_else(|| corrupt("a verified evidence without an outcome"))?;
    let genre = serde_json::to_value(ev.genre)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(ShadowRun {
        run_id: run.to_string(),
        design_id: design_id(ev),
        task_id: task_id(ev),
        genre,
        evidence_mode: ev.evidence_mode,
        outcome,
        action: ev
            .decision
            .as_ref()
            .map(|d| d.action.as_str())
            .unwrap_or("-")
            .to_string(),
        reasons: ev
            .decision
            .as_ref()
            .map(|d| d.reasons.iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        decided_at,
        decided_nanos: decided.unix_timestamp_nanos(),
        artifact_sha256: ev.artifact_hash.to_string(),
    })
}

/// Proves every decided run of the store, [`JOBS`] at a time, in store order.
pub async fn load(store: &Store, trusted: &[PublicKey]) -> Result<RunSet, ShadowError> {
    use futures::StreamExt;
    let seal_store::RunListing { runs, invalid } = store.runs().await?;
    let mut set = RunSet::default();
    for name in invalid {
        set.listed += 1;
        let r = crate::verify::RunReport::unverifiable_folder(name);
        set.not_verified.push(unverified(&r));
    }
    let mut visits = futures::stream::iter(runs)
        .map(|run| async move { visit(store, &run, trusted).await })
        .buffered(JOBS);
    while let Some(v) = visits.next().await {
        match v? {
            Visit::Open => continue,
            Visit::NotVerified(u) => set.not_verified.push(u),
            Visit::Other => {}
            Visit::Shadow(run) => set.shadow.push(*run),
        }
        set.listed += 1;
    }
    Ok(set)
}

/// The report over `ledger` (whose file's sha256 is `ledger_sha256`) and the store's runs,
/// checked against its schema and invariants before anyone reads it.
pub async fn report(
    store: &Store,
    trusted: &[PublicKey],
    ledger: &LedgerSummary,
    ledger_sha256: &str,
) -> Result<Shadow, ShadowError> {
    let runs = load(store, trusted).await?;
    let report = build(ledger, ledger_sha256, &runs);
    let value = serde_json::to_value(&report).map_err(|e| ShadowError::Invalid(e.to_string()))?;
    if let seal_core::validate::Report::Invalid(_, findings) =
        seal_core::validate::validate_as(seal_core::contracts::Kind::ShadowReport, &value)
    {
        let shown: Vec<String> = findings.iter().take(3).map(|f| f.to_string()).collect();
        return Err(ShadowError::Invalid(shown.join("; ")));
    }
    let mut bytes = seal_core::canonical::canonical_bytes(&value)
        .map_err(|e| ShadowError::Invalid(e.to_string()))?;
    bytes.push(b'\n');
    Ok(Shadow { report, bytes })
}
