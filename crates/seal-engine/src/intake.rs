//! Intake: the documents the pipeline submits (header, brief, play-spec, frames, proof
//! packages), checked and stored. The CLI's run folder and the HTTP API both come through here,
//! so both refuse the same things with the same messages. Nothing is stored unless it passed.

use bytes::Bytes;
use serde_json::Value;

use crate::engine::Engine;
use crate::notary::{ReceiptError, ReceiptKind};
use crate::run_state::{decided_error, DecidedRun, OpenRun, RunState, RunStateError};
use seal_core::canonical::Hash;
use seal_core::contracts::{Finding, Kind};
use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_core::limits::OverLimit;
use seal_core::merge;
use seal_core::validate::{self, Report};
use seal_store::{Key, Put, StoreError, Stored};
use serde::Deserialize;

pub use seal_core::submission::{
    play_spec_problems, provenance_problem, snapshot_reserve, Origin, ProofSubmission,
    SubmissionError,
};

/// Why a submission was refused. `object` names what was submitted.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("{object}: not acceptable JSON: {reason}")]
    Json { object: String, reason: String },
    #[error("{object}: invalid {kind}: {}", findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid {
        object: String,
        kind: &'static str,
        findings: Vec<Finding>,
    },
    #[error("{object}: {reason}")]
    Mismatch { object: String, reason: String },
    #[error("{object}: already stored with other content (stored sha256 {existing}, submitted sha256 {attempted})")]
    Conflict {
        object: String,
        existing: Hash,
        attempted: Hash,
    },
    #[error("{object}: missing frame blobs: {}", missing.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(", "))]
    MissingBlobs { object: String, missing: Vec<Hash> },
    #[error("{object}: {reason}")]
    Order { object: String, reason: String },
    #[error("{object}: not found: {reason}")]
    NotFound { object: String, reason: String },
    #[error("{object}: {reason}")]
    Provenance { object: String, reason: String },
    /// More events, actions or frames than the daemon admits (counted before any parse).
    #[error("{limit}")]
    OverLimit { object: String, limit: OverLimit },
    #[error(transparent)]
    State(#[from] RunStateError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored input this deployment never accepted (see [`crate::notary`]).
    #[error(transparent)]
    Receipt(#[from] ReceiptError),
}

impl HasFault for IntakeError {
    fn fault(&self) -> Fault {
        match self {
            IntakeError::State(e) => e.fault(),
            IntakeError::Store(e) => e.fault(),
            IntakeError::Receipt(e) => e.fault(),
            _ => Fault::Caller,
        }
    }
}

/// What an accepted input's put did: created, or found the same content already there.
#[derive(Debug, Clone)]
pub struct Accepted {
    stored: Stored,
    created: bool,
    /// Set when the document was re-sent to a run that takes no more documents (its bytes
    /// are the stored ones): where that run stands, so a retrying worker learns the result.
    closed: Option<Closed>,
}

/// A run that takes no more documents, as intake loaded it.
#[derive(Debug, Clone)]
pub enum Closed {
    /// Its JUDGING snapshot is stored: the next finalize decides it.
    Finalizing(RunId),
    Decided(Box<DecidedRun>),
}

impl Closed {
    /// The open run, or where a closed one stands.
    fn of(state: RunState) -> Result<OpenRun, Closed> {
        match state {
            RunState::Open(o) => Ok(o),
            RunState::Finalizing(o) => Err(Closed::Finalizing(o.run().clone())),
            RunState::Decided(d) => Err(Closed::Decided(Box::new(d))),
        }
    }

    /// The refusal of new bytes for this run.
    fn refusal(&self) -> RunStateError {
        match self {
            Closed::Finalizing(run) => RunStateError::Finalizing { run: run.clone() },
            Closed::Decided(d) => decided_error(d),
        }
    }
}

impl Accepted {
    /// The object as stored.
    pub fn stored(&self) -> &Stored {
        &self.stored
    }
    /// This submission created it; `false`: the same bytes were there already.
    pub fn created(&self) -> bool {
        self.created
    }
    /// Where the run stands when the document was re-sent to a run that takes no more
    /// documents (`None`: the run is open).
    pub fn closed(&self) -> Option<&Closed> {
        self.closed.as_ref()
    }
}

fn parse(object: &str, bytes: &[u8], limit: u64) -> Result<Value, IntakeError> {
    seal_core::json::parse(bytes, limit).map_err(|e| IntakeError::Json {
        object: object.into(),
        reason: e.to_string(),
    })
}

fn check(object: &str, kind: Kind, doc: &Value) -> Result<(), IntakeError> {
    match validate::validate_as(kind, doc) {
        Report::Valid(_) => Ok(()),
        Report::Invalid(k, findings) => Err(IntakeError::Invalid {
            object: object.into(),
            kind: k.name(),
            findings,
        }),
        Report::Unusable(reason) => Err(IntakeError::Json {
            object: object.into(),
            reason,
        }),
    }
}

/// Stores an accepted input create-only, then its receipt (also when identical bytes were
/// there already: a retry after a crash between the two writes completes the receipt).
async fn create(
    engine: &Engine,
    kind: ReceiptKind,
    object: &str,
    key: &Key,
    bytes: Bytes,
) -> Result<Accepted, IntakeError> {
    let store = &engine.store;
    match store.put(key, bytes).await {
        Ok(Put { stored, created }) => {
            engine.receipt(kind, &stored, None).await?;
            Ok(Accepted {
                stored,
                created,
                closed: None,
            })
        }
        Err(StoreError::Conflict {
            existing,
            attempted,
            ..
        }) => Err(IntakeError::Conflict {
            object: object.into(),
            existing,
            attempted,
        }),
        Err(e) => Err(e.into()),
    }
}

/// On a finalizing or decided run, a re-sent document is accepted when its bytes (`candidate`:
/// canonical JSON, or the brief's bytes) are the ones stored at `key`: a worker retrying after a
/// lost answer gets success, not `run_decided`. Nothing is written, so no guarantee changes;
/// other bytes get the refusal of `closed` (409 `run_decided` / `run_finalizing`).
async fn same_as_stored(
    engine: &Engine,
    key: &Key,
    candidate: Option<Bytes>,
    closed: Closed,
) -> Result<Accepted, IntakeError> {
    let Some(candidate) = candidate else {
        return Err(closed.refusal().into());
    };
    match engine.store.get_opt(key).await? {
        Some(stored) if stored == candidate => Ok(Accepted {
            stored: Stored::of(key.clone(), &stored),
            created: false,
            closed: Some(closed),
        }),
        _ => Err(closed.refusal().into()),
    }
}

/// The canonical form of a JSON document re-sent to a decided run (None when it is not JSON:
/// it cannot be the stored document).
fn canonical_resent(bytes: &[u8], limit: u64) -> Option<Bytes> {
    let doc = seal_core::json::parse(bytes, limit).ok()?;
    seal_core::canonical::canonical_bytes(&doc)
        .ok()
        .map(Bytes::from)
}

/// Where a run that takes no more documents stands, or None when it is open or new.
async fn closed(engine: &Engine, run: &RunId) -> Result<Option<Closed>, IntakeError> {
    match RunState::load(&engine.store, run).await {
        Ok(state) => Ok(Closed::of(state).err()),
        Err(RunStateError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn canonical(object: &str, doc: &Value) -> Result<Bytes, IntakeError> {
    seal_core::canonical::canonical_value_bytes(doc)
        .map(Bytes::from)
        .map_err(|e| IntakeError::Json {
            object: object.into(),
            reason: e.to_string(),
        })
}

/// The run a brief or play-spec is submitted to, loaded once: open, or where a run that takes
/// no more documents stands (`Err(closed)`; an identical re-send is still accepted).
async fn document_target(
    engine: &Engine,
    run: &RunId,
) -> Result<Result<OpenRun, Closed>, IntakeError> {
    Ok(Closed::of(RunState::load(&engine.store, run).await?))
}

/// The header of an open run, once its receipt says this deployment accepted it.
async fn open_header(engine: &Engine, open: OpenRun) -> Result<Evidence, IntakeError> {
    let run = open.run().clone();
    engine
        .notary
        .require(
            &engine.store,
            ReceiptKind::Header,
            &Key::header(&run),
            open.header_hash(),
        )
        .await?;
    Ok(open.into_parts().0)
}

/// Submits the run header: a playtest/3 document in phase JUDGING with no rolls yet, with
/// the provenance `origin` may claim, for a run that is not decided.
pub async fn put_header(
    engine: &Engine,
    run: &RunId,
    bytes: &[u8],
    origin: Origin,
) -> Result<Accepted, IntakeError> {
    // One submission to a run at a time in this process (replicas: create-only writes).
    let _run_lock = engine.lock_run(run).await;
    let store = &engine.store;
    let object = format!("run {run} header");
    if let Some(closed) = closed(engine, run).await? {
        let resent = canonical_resent(bytes, store.doc_limit());
        return same_as_stored(engine, &Key::header(run), resent, closed).await;
    }
    let doc = parse(&object, bytes, store.doc_limit())?;
    check(&object, Kind::PlaytestV3, &doc)?;
    let h = Evidence::deserialize(&doc).map_err(|e| IntakeError::Json {
        object: object.clone(),
        reason: e.to_string(),
    })?;
    let mismatch = |reason: String| {
        Err(IntakeError::Mismatch {
            object: object.clone(),
            reason,
        })
    };
    if h.run_id != run.as_str() {
        return mismatch(format!(
            "runId {:?} differs from the run id {run:?} it is submitted under",
            h.run_id
        ));
    }
    if let Some(reason) = provenance_problem(origin, run, &h) {
        return Err(IntakeError::Provenance { object, reason });
    }
    if h.phase != Phase::Judging {
        return mismatch(format!(
            "phase must be JUDGING for a submitted header, found {:?}",
            h.phase
        ));
    }
    if !h.rolls.is_empty() || h.merge.is_some() || h.source_roll_id.is_some() || h.judge.is_some() {
        return mismatch(
            "a submitted header has rolls [] and merge, sourceRollId, judge null".into(),
        );
    }
    let bytes = canonical(&object, &doc)?;
    create(
        engine,
        ReceiptKind::Header,
        &object,
        &Key::header(run),
        bytes,
    )
    .await
}

/// Submits the brief: its bytes must hash to the header's briefHash.
pub async fn put_brief(
    engine: &Engine,
    run: &RunId,
    bytes: &[u8],
) -> Result<Accepted, IntakeError> {
    let _run_lock = engine.lock_run(run).await;
    let store = &engine.store;
    let object = format!("run {run} brief");
    let open = match document_target(engine, run).await? {
        Ok(open) => open,
        Err(closed) => {
            let resent = Some(Bytes::copy_from_slice(bytes));
            return same_as_stored(engine, &Key::brief(run), resent, closed).await;
        }
    };
    let h = open_header(engine, open).await?;
    if bytes.len() as u64 > store.doc_limit() {
        return Err(IntakeError::Json {
            object,
            reason: format!("{} bytes is over the limit", bytes.len()),
        });
    }
    let actual = Hash::of(bytes);
    if actual != h.brief_hash {
        return Err(IntakeError::Mismatch {
            object,
            reason: format!(
                "brief hashes to {actual}, the header's briefHash is {}",
                h.brief_hash
            ),
        });
    }
    if std::str::from_utf8(bytes).is_err() {
        return Err(IntakeError::Json {
            object,
            reason: "the brief is not UTF-8 text".into(),
        });
    }
    create(
        engine,
        ReceiptKind::Brief,
        &object,
        &Key::brief(run),
        Bytes::copy_from_slice(bytes),
    )
    .await
}

/// Submits the play-spec: schema-valid and derived from the header's artifact.
pub async fn put_play_spec(
    engine: &Engine,
    run: &RunId,
    bytes: &[u8],
) -> Result<Accepted, IntakeError> {
    let _run_lock = engine.lock_run(run).await;
    let store = &engine.store;
    let object = format!("run {run} play-spec");
    let open = match document_target(engine, run).await? {
        Ok(open) => open,
        Err(closed) => {
            let resent = canonical_resent(bytes, store.doc_limit());
            return same_as_stored(engine, &Key::play_spec(run), resent, closed).await;
        }
    };
    let h = open_header(engine, open).await?;
    let doc = parse(&object, bytes, store.doc_limit())?;
    check(&object, Kind::PlaySpec, &doc)?;
    if let Some(reason) = play_spec_problems(&doc, &h).into_iter().next() {
        return Err(IntakeError::Mismatch { object, reason });
    }
    create(
        engine,
        ReceiptKind::PlaySpec,
        &object,
        &Key::play_spec(run),
        canonical(&object, &doc)?,
    )
    .await
}

/// The JUDGING snapshot (and the evidence) hold the header plus the source roll's proof
/// package: a roll whose documents could not fit in one readable document is refused before
/// anything is judged, so that every accepted roll can be decided.
fn snapshot_fits(
    store: &seal_store::Store,
    open: &OpenRun,
    roll: RollId,
    proof_len: u64,
) -> Result<(), IntakeError> {
    let run = open.run();
    let header_len = open.header_size();
    let reserve = snapshot_reserve(store.doc_limit());
    let size = header_len + proof_len + reserve;
    if size > store.doc_limit() {
        return Err(IntakeError::Store(StoreError::TooLarge {
            key: format!(
                "run {run} {roll}: header ({header_len} bytes) + proof package ({proof_len} bytes) \
                 + {reserve} bytes of snapshot records, which judging.json must hold,"
            ),
            size,
            limit: store.doc_limit(),
        }));
    }
    Ok(())
}

/// Accepts the proof package of roll `roll` of an open run (loaded and locked by the caller,
/// [`crate::roll::submit`]): for that roll, the header one this deployment accepted, every frame
/// already stored, roll 2 only after an indecisive roll 1, room in the snapshot; then stored
/// with its receipt.
pub(crate) async fn accept_proof_package(
    engine: &Engine,
    open: &OpenRun,
    roll: RollId,
    submission: &ProofSubmission,
) -> Result<Accepted, IntakeError> {
    let store = &engine.store;
    let run = open.run();
    let object = package_object(run, roll);
    engine.notary.require_header(store, open).await?;
    let p = submission.package();
    if p.roll_id != roll {
        return Err(IntakeError::Mismatch {
            object,
            reason: format!("rollId is {}, submitted as {roll}", p.roll_id),
        });
    }
    let before = open.outcomes_before(roll);
    if open.judged(roll).is_none() && !merge::may_follow(&before, roll) {
        let reason = match before.first() {
            None => "roll-2 before roll-1 was judged".to_string(),
            Some(o) => format!("roll-1 was decisive ({o}): there is no roll-2"),
        };
        return Err(IntakeError::Order { object, reason });
    }
    let mut missing = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in &p.frames {
        if seen.insert(f.hash.clone()) && !store.exists(&Key::cas(&f.hash)).await? {
            missing.push(f.hash.clone());
        }
    }
    if !missing.is_empty() {
        return Err(IntakeError::MissingBlobs { object, missing });
    }
    let bytes = submission.canonical().clone();
    snapshot_fits(store, open, roll, bytes.len() as u64)?;
    create(
        engine,
        ReceiptKind::ProofPackage,
        &object,
        &Key::roll_file(run, roll, "proof-package.json"),
        bytes,
    )
    .await
}

/// What a proof package of `roll` is called in errors.
fn package_object(run: &RunId, roll: RollId) -> String {
    format!("run {run} {roll} proof package")
}

impl IntakeError {
    /// The refusal of bytes submitted as the proof package of roll `roll` of `run`.
    pub fn submission(run: &RunId, roll: RollId, e: SubmissionError) -> IntakeError {
        let object = package_object(run, roll);
        match e {
            SubmissionError::OverLimit(limit) => IntakeError::OverLimit { object, limit },
            SubmissionError::Json(reason) => IntakeError::Json { object, reason },
            SubmissionError::Invalid { kind, findings } => IntakeError::Invalid {
                object,
                kind,
                findings,
            },
        }
    }
}
