//! finalPostguard: the only code that writes an outcome (docs/DESIGN.md §6).
//!
//! [`finalize`] judges any roll whose proof package is stored but not judged, then makes one
//! pass over what the store holds: [`audit::load`] reads every object the rolls bind, once,
//! re-hashed against its record; the first gate ([`authentic`]) authenticates the inputs on
//! those bytes; the JUDGING snapshot is derived from those documents
//! (`derive::judging_snapshot`) and stored create-only; every check runs against them
//! ([`audit::compare`]: refs, documents, normalization, independence, consensus, blinding,
//! costs and unbound objects, plus the schema and the cross-field invariants), each recorded;
//! then it decides and writes `evidence.json` and the seal, both create-only.
//!
//! Enforced by construction, not convention: the store writes the two reserved keys only from
//! a [`decided::Decided`] and a [`decided::Seal`], made only by [`decided::decide`] and
//! [`decided::seal`], which only this module calls (tests/it/architecture.rs).
//! A failed check still decides (`infra_error` / `retry`, reason `postguard_<check>`), so no
//! run is left hanging. Racing finalizers: exactly one create wins; the others return the
//! stored result. A stored snapshot (an interrupted finalize) is decided as stored: once
//! `judging.json` exists the run takes no more rolls, so the snapshot cannot go stale.

mod authentic;

pub use seal_core::decided::{self, VERSION};

use tracing::Instrument;

use crate::audit::{self, Problem};
use crate::engine::Engine;
use crate::notary::{ReceiptError, ReceiptKind};
use crate::roll::{self, JudgingError, Source};
use crate::run_state::{OpenRun, RunState, RunStateError};
use decided::Decided;
use seal_core::canonical::{self, Hash};
use seal_core::contracts::Kind;
use seal_core::derive;
use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_core::invariants;
use seal_core::merge;
use seal_core::sealing::{self, Envelope};
use seal_core::vocab::AuditCheck;
use seal_log::SealLogged;
use seal_store::{parse_stored, Key, Store, StoreError, Stored};

/// A sealed run, as [`finalize`] left it (made only there).
#[derive(Debug, Clone)]
pub struct Finalized {
    evidence: Evidence,
    evidence_hash: Hash,
    envelope: Envelope,
    envelope_hash: Hash,
    wrote: bool,
}

impl Finalized {
    /// The DECIDED evidence.
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
    pub fn evidence_hash(&self) -> &Hash {
        &self.evidence_hash
    }
    /// The seal (a DSSE envelope over the evidence's statement).
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }
    pub fn envelope_hash(&self) -> &Hash {
        &self.envelope_hash
    }
    /// False when another finalizer had already written this run's evidence.
    pub fn wrote(&self) -> bool {
        self.wrote
    }
    /// The evidence, taken out.
    pub fn into_evidence(self) -> Evidence {
        self.evidence
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FinalizeError {
    #[error("run {run}: no roll has been judged; submit roll 1 first")]
    NoRolls { run: RunId },
    #[error(
        "run {run}: no signing key configured (seal keygen --out DIR, then --key DIR/seal.key.pem)"
    )]
    NoKey { run: RunId },
    #[error(transparent)]
    State(#[from] RunStateError),
    #[error(transparent)]
    Roll(#[from] JudgingError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("run {run}: not sealed: {source}")]
    Log {
        run: RunId,
        source: seal_log::LogError,
    },
    #[error("run {run}: {reason}")]
    Internal { run: RunId, reason: String },
    /// A stored input or record this deployment cannot authenticate (G1, docs/DESIGN.md §11).
    #[error(transparent)]
    Receipt(#[from] crate::notary::ReceiptError),
    /// A stored decision document that is not what the postguard derives: never signed.
    #[error("{object}: planted {kind}, not sealed: {reason}")]
    Planted {
        object: String,
        kind: &'static str,
        reason: String,
    },
    /// Objects the run binds are missing or do not hash to their records: never signed.
    #[error("run {run}: the store does not hold what the run binds, not sealed: {problems}")]
    Corrupt { run: RunId, problems: String },
}

/// A document stored under another run's, roll's or slot's key (`seal_core::bound`): planted.
impl From<seal_core::bound::Unbound> for FinalizeError {
    fn from(e: seal_core::bound::Unbound) -> FinalizeError {
        FinalizeError::Planted {
            object: e.key.to_string(),
            kind: "document",
            reason: e.to_string(),
        }
    }
}

impl HasFault for FinalizeError {
    fn fault(&self) -> Fault {
        match self {
            FinalizeError::NoRolls { .. } => Fault::Caller,
            FinalizeError::NoKey { .. } => Fault::Infrastructure,
            FinalizeError::State(e) => e.fault(),
            FinalizeError::Roll(e) => e.fault(),
            FinalizeError::Store(e) => e.fault(),
            FinalizeError::Log { source, .. } => source.fault(),
            FinalizeError::Internal { .. } => Fault::Corruption,
            FinalizeError::Receipt(e) => e.fault(),
            FinalizeError::Planted { .. } | FinalizeError::Corrupt { .. } => Fault::Corruption,
        }
    }
}

fn internal(run: &RunId, reason: impl std::fmt::Display) -> FinalizeError {
    FinalizeError::Internal {
        run: run.clone(),
        reason: reason.to_string(),
    }
}

/// Finalizes a run: snapshot, postguard, evidence, seal. Idempotent and race-safe.
pub async fn finalize(engine: &Engine, run: &RunId) -> Result<Finalized, FinalizeError> {
    let span = tracing::info_span!("finalize", run = %run);
    finalize_inner(engine, run).instrument(span).await
}

async fn finalize_inner(engine: &Engine, run: &RunId) -> Result<Finalized, FinalizeError> {
    let store = &engine.store;
    let key = engine
        .key
        .clone()
        .ok_or_else(|| FinalizeError::NoKey { run: run.clone() })?;
    // One finalize or roll of a run at a time in this process (replicas: create-only writes).
    let _run_lock = engine.lock_run(run).await;
    let (open, found) = match RunState::load(store, run).await? {
        RunState::Decided(d) => {
            if store.exists(&Key::seal(run)).await? {
                // Sealed: nothing is signed here; the seal must be one this deployment trusts.
                trusted_seal(engine, run, d.evidence_hash(), &key).await?;
                let (evidence, evidence_hash) = d.into_parts();
                return seal_and_log(engine, run, &key, evidence, evidence_hash, false).await;
            }
            // Decided without a seal: derived again below, and sealed only if identical.
            (open_view(store, run).await?, Found::Decided(Box::new(d)))
        }
        RunState::Open(o) => (o, Found::Open),
        RunState::Finalizing(o) => (o, Found::Finalizing),
    };
    // The header as the run's state was loaded: the one the receipt must vouch for below and
    // the one the snapshot is derived from, read once.
    let (header, header_hash) = (open.header().clone(), open.header_hash().clone());
    let (rolls, authenticated) = match found {
        Found::Open => judge_pending(engine, open).await?,
        Found::Finalizing | Found::Decided(_) => (open.into_parts().1, Vec::new()),
    };
    if rolls.is_empty() {
        return Err(FinalizeError::NoRolls { run: run.clone() });
    }
    // The final audit's deliberate re-read (docs/DESIGN.md §6): every object the rolls bind,
    // read once from the store and re-hashed against its record. The inputs are authenticated,
    // the snapshot derived and every check run on these very bytes; nothing is read twice.
    let loaded = audit::load(store, run, &rolls).await;
    let brief = authentic::inputs(engine, run, &header_hash, &loaded, &authenticated).await?;
    let snapshot = stored_snapshot(store, run, header, &loaded).await?;
    let checks = postguard_checks(store, run, &snapshot, loaded, brief.as_deref()).await?;
    let redecide = |at: String| {
        decided::decide(
            run,
            snapshot.doc.clone(),
            checks.clone(),
            snapshot.hash.clone(),
            at,
        )
        .map_err(|e| internal(run, e))
    };
    let stored = match found {
        Found::Decided(d) => Some(d),
        _ => None,
    };
    let decided = committed_decision(engine, run, stored.as_deref(), &redecide).await?;
    if let Some(d) = &stored {
        same_decision(run, &decided, d.evidence_hash())?;
    }
    let (evidence, evidence_hash, wrote) = match store.put_decided(&decided).await {
        // The store holds exactly these bytes now (created, or identical ones were there).
        Ok(put) => (decided.evidence().clone(), put.stored.hash, put.created),
        // A racing finalizer (another replica) stored its evidence first: both derived it
        // from the one committed decidedAt, so it is these bytes, or it is planted.
        Err(StoreError::Conflict { .. }) => {
            let Some((theirs, theirs_hash)) =
                store.get_json::<Evidence>(&Key::evidence(run)).await?
            else {
                return Err(internal(run, "evidence.json vanished after a conflict"));
            };
            same_decision(run, &decided, &theirs_hash)?;
            (theirs, theirs_hash, false)
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(outcome = %evidence.outcome.map(|o| o.to_string()).unwrap_or_default(), wrote, "run decided");
    seal_and_log(engine, run, &key, evidence, evidence_hash, wrote).await
}

/// The decision as committed (docs/DESIGN.md §11, "The commit point of a decision"): the
/// postguard's document derived with the `decidedAt` of the run's decision receipt, committed
/// now (this clock's time) unless a receipt is there already: this process's or another
/// replica's earlier finalize, interrupted or racing. The time is never taken from a stored
/// evidence document, which the store writer can rewrite while it is not sealed: a decided
/// run without its receipt is planted, and one whose receipt vouches for other bytes than the
/// inputs give now is too.
async fn committed_decision(
    engine: &Engine,
    run: &RunId,
    stored: Option<&crate::run_state::DecidedRun>,
    redecide: &(dyn Fn(String) -> Result<Decided, FinalizeError> + Sync),
) -> Result<Decided, FinalizeError> {
    let object = Key::evidence(run);
    let planted = |reason: String| FinalizeError::Planted {
        object: object.to_string(),
        kind: "evidence",
        reason,
    };
    let receipt = if stored.is_some() {
        // Decided, unsealed: the time is the committed one, or the evidence is planted.
        let committed = engine
            .notary
            .committed(&engine.store, ReceiptKind::Decision, &object)
            .await?;
        committed.ok_or_else(|| {
            planted(
                "decided, unsealed, and no decision receipt commits it: its decidedAt is not \
                 one this deployment's postguard committed"
                    .into(),
            )
        })?
    } else {
        // Commit now (one create, no read first); a receipt already there (a crash after it,
        // a racing replica) is read back by the commit, and its time stands.
        let decided = redecide(engine.clock.now_rfc3339())?;
        let at = decided_at_of(run, decided.evidence())?;
        let ours = Stored {
            key: object.clone(),
            hash: decided.hash().clone(),
            size: decided.bytes().len() as u64,
        };
        let r = engine
            .notary
            .commit(&engine.store, ReceiptKind::Decision, &ours, &at)
            .await?;
        if r.sha256 == *decided.hash() {
            return Ok(decided);
        }
        r
    };
    let decided = redecide(receipt.at.clone())?;
    if receipt.sha256 != *decided.hash() {
        return Err(planted(format!(
            "its decision receipt commits sha256 {}, but the postguard derives {} from the \
             run's authenticated inputs at the committed decidedAt {}",
            receipt.sha256,
            decided.hash(),
            receipt.at
        )));
    }
    Ok(decided)
}

/// The stored evidence (`stored`) is the document the postguard derived (`decided`), byte
/// for byte; anything else is planted and never sealed.
fn same_decision(run: &RunId, decided: &Decided, stored: &Hash) -> Result<(), FinalizeError> {
    if decided.hash() == stored {
        return Ok(());
    }
    Err(FinalizeError::Planted {
        object: Key::evidence(run).to_string(),
        kind: "evidence",
        reason: format!(
            "stored sha256 {stored}, but the postguard derives {} from the run's authenticated \
             inputs",
            decided.hash()
        ),
    })
}

/// Where finalize found the run.
enum Found {
    Open,
    /// `judging.json` stored: no more rolls; the snapshot is derived again and must match.
    Finalizing,
    /// `evidence.json` stored without a seal: derived again and sealed only if identical.
    Decided(Box<crate::run_state::DecidedRun>),
}

/// A decided run's header and judged rolls (see [`RunState::decided_view`]).
async fn open_view(store: &Store, run: &RunId) -> Result<OpenRun, FinalizeError> {
    RunState::decided_view(store, run)
        .await?
        .ok_or_else(|| FinalizeError::Planted {
            object: Key::evidence(run).to_string(),
            kind: "evidence",
            reason: "decided evidence without a stored header".into(),
        })
}

/// The `decidedAt` a stored decided document carries: the one input of the decision that is
/// not derived (the clock's), so re-proving the document takes it from there.
fn decided_at_of(run: &RunId, evidence: &Evidence) -> Result<String, FinalizeError> {
    evidence
        .final_postguard
        .as_ref()
        .map(|p| p.decided_at.clone())
        .ok_or_else(|| FinalizeError::Planted {
            object: Key::evidence(run).to_string(),
            kind: "evidence",
            reason: "a decided document without finalPostguard.decidedAt".into(),
        })
}

/// A stored seal is acted on (returned, logged) only if it verifies under this deployment's
/// key or a key of `keys.trusted`, for the stored evidence: a seal made elsewhere is named.
async fn trusted_seal(
    engine: &Engine,
    run: &RunId,
    evidence_hash: &Hash,
    key: &sealing::SigningKey,
) -> Result<(), FinalizeError> {
    let planted = |reason: String| FinalizeError::Planted {
        object: Key::seal(run).to_string(),
        kind: "seal",
        reason,
    };
    let Some((env, _)) = engine.store.get_json::<Envelope>(&Key::seal(run)).await? else {
        return Err(planted("vanished".into()));
    };
    let mut trusted = vec![key.public()];
    for path in &engine.config.trusted_keys {
        trusted.push(seal_fs::keys::load_public_key(path).map_err(|e| internal(run, e))?);
    }
    let verified = sealing::verify_envelope(&env, &trusted)
        .map_err(|e| planted(format!("not a seal of this deployment: {e}")))?;
    seal_core::bound::check(&Key::seal(run), &verified.statement)
        .map_err(|e| planted(e.to_string()))?;
    let subject = verified.statement.subject.first();
    let expected = Key::evidence(run);
    match subject {
        Some(s) if s.name == expected.as_str() && s.digest.sha256 == evidence_hash.as_str() => {
            Ok(())
        }
        _ => Err(planted(
            "the seal's subject is not this run's stored evidence".into(),
        )),
    }
}

/// The judged rolls of an open run, in order: each stored record whose receipt verifies for
/// the bytes the run's state was loaded with is taken as it is (the sha256 of each such record
/// is returned too, so that the first gate does not read its receipt again); any other roll
/// whose proof package is stored (an interrupted judging, a record without its receipt) is
/// judged now, in the order the roll-order rule allows, through [`roll::judge_open_roll`],
/// which adopts what was committed and derives the rest (a planted record is named there,
/// never decided from).
async fn judge_pending(
    engine: &Engine,
    open: OpenRun,
) -> Result<(Vec<Roll>, Vec<Hash>), FinalizeError> {
    let mut judged: Vec<Roll> = Vec::new();
    let mut authenticated = Vec::new();
    for roll in RollId::ALL {
        let before: Vec<Outcome> = judged.iter().map(|r| r.roll_outcome).collect();
        if !merge::may_follow(&before, roll) {
            break;
        }
        let key = |file| Key::roll_file(open.run(), roll, file);
        if let Some((record, hash)) = open.stored_record(roll) {
            match engine
                .notary
                .require(&engine.store, ReceiptKind::Roll, &key("roll.json"), hash)
                .await
            {
                Ok(()) => {
                    judged.push(record.clone());
                    authenticated.push(hash.clone());
                    continue;
                }
                // Not finished (a crash before its receipt), or planted: judged below.
                Err(ReceiptError::Unauthenticated { .. } | ReceiptError::Uncommitted { .. }) => {}
                Err(ReceiptError::Store(e)) => return Err(e.into()),
            }
        } else if !engine.store.exists(&key("proof-package.json")).await? {
            break;
        }
        let view = open.with_rolls(judged.clone());
        let report = roll::judge_open_roll(engine, &view, roll, &Source::Live).await?;
        judged.push(report.into_roll());
    }
    Ok((judged, authenticated))
}

/// The JUDGING snapshot the postguard decides from: the document, the sha256 of its stored
/// bytes, and the value its schema is checked on (those bytes parsed).
struct Snapshot {
    doc: Evidence,
    hash: Hash,
    value: serde_json::Value,
    /// The submitted header it was derived from (read once, for the derivation and the run
    /// cost check).
    header: Evidence,
}

/// The JUDGING snapshot, derived from the header and the rolls' documents as the final audit
/// loaded them, and stored create-only. Objects the rolls bind that are missing, other bytes
/// than recorded, or unreadable are no inputs to decide on: refused, nothing derived. A
/// snapshot an earlier finalize stored must be exactly the one derived now (the run takes no
/// rolls once it exists, so an honest one always is): any other bytes are planted, never
/// decided from.
async fn stored_snapshot(
    store: &Store,
    run: &RunId,
    header: Evidence,
    loaded: &audit::Loaded,
) -> Result<Snapshot, FinalizeError> {
    // Incomplete: every problem the load met says why; complete: only the corrupt ones stop it.
    let complete = loaded.complete();
    let corrupt: Vec<String> = loaded
        .problems()
        .filter(|p| p.corrupt || !complete)
        .take(5)
        .map(|p| p.to_string())
        .collect();
    let judged = match loaded.judged() {
        Some(j) if corrupt.is_empty() && complete => j,
        _ => {
            return Err(FinalizeError::Corrupt {
                run: run.clone(),
                problems: corrupt.join("; "),
            })
        }
    };
    let doc = derive::judging_snapshot(&header, &judged);
    let snap_key = Key::judging(run);
    // Never store a snapshot the postguard (or verify) could not read back.
    let (bytes, hash) = canonical::canonical_with_hash(&doc).map_err(|e| internal(run, e))?;
    let size = bytes.len() as u64;
    if size > store.doc_limit() {
        return Err(StoreError::TooLarge {
            key: snap_key.to_string(),
            size,
            limit: store.doc_limit(),
        }
        .into());
    }
    // The schema is checked on the stored bytes as parsed, as `seal verify` reads them.
    let value = seal_core::json::parse(&bytes, store.doc_limit()).map_err(|e| internal(run, e))?;
    match store.put(&snap_key, bytes::Bytes::from(bytes)).await {
        Ok(_) => {}
        Err(StoreError::Conflict {
            existing,
            attempted,
            ..
        }) => {
            return Err(FinalizeError::Planted {
                object: snap_key.to_string(),
                kind: "snapshot",
                reason: format!(
                    "stored sha256 {existing}, but the authenticated rolls derive {attempted}"
                ),
            })
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Snapshot {
        doc,
        hash,
        value,
        header,
    })
}

/// Seals stored evidence and logs the seal, the log first (docs/DESIGN.md §13): the seal's
/// bytes are computed (ed25519 and the canonical envelope are deterministic), their entry is
/// appended, and only then is the seal stored, create-only. A crash in between leaves a logged
/// run without its seal, which the next finalize completes with the very bytes logged; so a
/// stored seal the log lacks is refused, never appended (planted, or the log lost it).
async fn seal_and_log(
    engine: &Engine,
    run: &RunId,
    key: &sealing::SigningKey,
    evidence: Evidence,
    evidence_hash: Hash,
    wrote: bool,
) -> Result<Finalized, FinalizeError> {
    let store = &engine.store;
    let log_err = |source| FinalizeError::Log {
        run: run.clone(),
        source,
    };
    // A seal stored before evidence this very call created can only be planted: no read for
    // it first (one request a run on S3); the seal's create-only put meets it and it is judged
    // there, as below. Any other finalize (a retry, a racing replica) looks first.
    if !wrote {
        if let Some(stored) = store.get_opt(&Key::seal(run)).await? {
            return stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await;
        }
    }
    let statement =
        sealing::statement_for(run, &evidence, &evidence_hash).map_err(|e| internal(run, e))?;
    let envelope = sealing::sign(key, &statement).map_err(|e| internal(run, e))?;
    let (bytes, envelope_hash) =
        canonical::canonical_with_hash(&envelope).map_err(|e| internal(run, e))?;
    let key_id = match envelope.signatures.as_slice() {
        [s] => s.keyid.clone(),
        _ => return Err(internal(run, "a seal carries exactly one signature")),
    };
    let entry = seal_log::seal_entry(run, &evidence, &evidence_hash, &envelope_hash, &key_id)
        .ok_or_else(|| internal(run, "only DECIDED evidence is sealed"))?;
    // Evidence this finalize created cannot be named by a leaf from before this process.
    let fresh = match wrote {
        true => seal_log::EvidenceWas::CreatedNow,
        false => seal_log::EvidenceWas::Stored,
    };
    match engine
        .log
        .append_seal_as(run, &entry, key, fresh)
        .await
        .map_err(log_err)?
    {
        SealLogged::Appended(a) => {
            tracing::debug!(index = a.index, created = a.created, "seal logged")
        }
        // A finalizer holding another key logged its seal of this evidence first: that seal
        // is the run's, stored by its signer in a moment.
        SealLogged::Rival(rival) => {
            let stored = rival_seal(store, run, &rival).await?;
            return stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await;
        }
    }
    seal_log::append_delay().await;
    match store.put_seal(&decided::seal(run.clone(), bytes)).await {
        // The store holds exactly these canonical bytes now (created, or identical ones were).
        Ok(_) => Ok(Finalized {
            evidence,
            evidence_hash,
            envelope,
            envelope_hash,
            wrote,
        }),
        // Other bytes got there first: they count only if the log holds them.
        Err(StoreError::Conflict { .. }) => {
            let stored = store
                .get_opt(&Key::seal(run))
                .await?
                .ok_or_else(|| internal(run, "the seal vanished after a conflict"))?;
            stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await
        }
        Err(e) => Err(e.into()),
    }
}

/// How long a finalizer waits for the seal a rival logged (its signer logs, publishes a
/// checkpoint, then stores the seal: milliseconds, unless it crashed).
const RIVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The stored bytes of the seal a rival logged, once its signer has stored them.
async fn rival_seal(
    store: &Store,
    run: &RunId,
    rival: &seal_core::tlog::LogEntry,
) -> Result<bytes::Bytes, FinalizeError> {
    let start = std::time::Instant::now();
    loop {
        if let Some(stored) = store.get_opt(&Key::seal(run)).await? {
            return Ok(stored);
        }
        if start.elapsed() > RIVAL_WAIT {
            return Err(FinalizeError::Log {
                run: run.clone(),
                source: seal_log::LogError::NotSealed {
                    run: run.clone(),
                    detail: format!(
                        "another seal of this evidence (seal sha256 {}, key {}) is logged, and its signer has not stored it: it will, when it finalizes the run again",
                        rival.seal_sha256, rival.key_id
                    ),
                },
            });
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// A seal found stored: it is the run's only if the log holds it for this evidence.
async fn stored_seal(
    engine: &Engine,
    run: &RunId,
    key: &sealing::SigningKey,
    (evidence, evidence_hash): (Evidence, Hash),
    wrote: bool,
    stored: bytes::Bytes,
) -> Result<Finalized, FinalizeError> {
    let envelope_hash = Hash::of(&stored);
    let logged = engine
        .log
        .require_logged(run, &envelope_hash, key, &[])
        .await
        .map_err(|source| FinalizeError::Log {
            run: run.clone(),
            source,
        })?;
    if !logged.is_over(&evidence_hash) {
        return Err(internal(
            run,
            format!(
                "the logged seal (leaf {}) is over other evidence than the stored {evidence_hash}",
                logged.index
            ),
        ));
    }
    let envelope: Envelope = parse_stored(&Key::seal(run), &stored, engine.store.doc_limit())?;
    Ok(Finalized {
        evidence,
        evidence_hash,
        envelope,
        envelope_hash,
        wrote,
    })
}

/// Every postguard check on the stored snapshot, each recorded whether it passed or not.
/// `brief`: the brief's bytes as the first gate authenticated them.
async fn postguard_checks(
    store: &Store,
    run: &RunId,
    snapshot: &Snapshot,
    loaded: audit::Loaded,
    brief: Option<&[u8]>,
) -> Result<Vec<Check<AuditCheck>>, FinalizeError> {
    let snap = &snapshot.doc;
    let audit::Audited {
        mut problems, docs, ..
    } = audit::compare(store, loaded, snap, brief).await;
    problems.extend(document_problems(run, snap, &snapshot.value));
    problems.extend(audit::run_cost(&Key::judging(run), &snapshot.header, snap));
    // Independence holds for the source roll, if it was dispatched.
    if let Some(r) = merge::source_roll_index(&snap.rolls).map(|i| &snap.rolls[i]) {
        if let Some(d) = docs.iter().find(|d| d.roll.roll_id == r.roll_id) {
            let failed = d.consensus.independence_checks.failed();
            if r.roll_guard.status == GuardStatus::Pass && !failed.is_empty() {
                problems.push(Problem::new(
                    AuditCheck::Independence,
                    &r.judge_consensus_ref,
                    format!(
                        "source roll {} failed required independence checks: {}",
                        r.roll_id,
                        seal_core::vocab::join(&failed, ", ")
                    ),
                ));
            }
        }
    }
    Ok(AuditCheck::POSTGUARD
        .iter()
        .map(|id| audit::record_check(*id, &problems))
        .collect())
}

/// The snapshot's schema (on `value`, the snapshot as parsed from its stored bytes) and its
/// cross-field invariants.
fn document_problems(run: &RunId, snap: &Evidence, value: &serde_json::Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    for f in seal_core::contracts::validate(Kind::PlaytestV3, value) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        problems.push(Problem::new(AuditCheck::SchemaValid, object, f.message));
    }
    for f in invariants::evidence(snap) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        let detail = format!("{} {}", f.rule, f.message);
        problems.push(Problem::new(AuditCheck::Invariants, object, detail));
    }
    problems
}
