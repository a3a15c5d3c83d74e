//! Stage 4: Judge A ∥ Judge B. Per-slot identity (policy seed and session id derived from the
//! run, roll and slot under the secret salt), the independence preflight, and then one of: both
//! judges over HTTP, concurrently; the stored answers of another run (replay); or, when the
//! guard blocked the roll, a `not_dispatched` record per slot so every ref still exists.

use super::guard::Guarded;
use super::package::Packaged;
use super::{put_or_keep, JudgingError, Source};
use crate::doc::*;
use crate::engine::Engine;
use crate::ids::{RollId, RunId, Slot};
use crate::judge::parse::{evaluate_raw, ErrorClass, ParseFailure};
use crate::judge::{self, AttemptRecord, JudgeClient, SlotJob, SlotRun};
use crate::resume::{self, ResumeError};
use crate::store::{Key, Store, StoreError, Stored};
use crate::vocab::GuardCheck;

/// Both slots' jobs for one roll.
pub(super) struct Jobs<'a> {
    pub a: SlotJob<'a>,
    pub b: SlotJob<'a>,
}

impl<'a> Jobs<'a> {
    pub fn new(engine: &'a Engine, g: &'a Guarded, p: &'a Packaged) -> Jobs<'a> {
        let salt = engine.judges.salt();
        let (seed_a, seed_b) = judge::policy_seeds(salt, &g.run, g.roll);
        let job = |slot, seed| SlotJob {
            run: &g.run,
            roll: g.roll,
            package_bytes: &p.package_bytes,
            package_hash: &p.package_hash,
            manifest: &p.manifest,
            images: &g.frames.images,
            seed,
            session_id: judge::session_id(salt, &g.run, g.roll, slot),
            salt,
        };
        Jobs {
            a: job(Slot::A, seed_a),
            b: job(Slot::B, seed_b),
        }
    }
}

/// The independence preflight: A and B are distinct before either is asked.
pub(super) fn preflight(engine: &Engine, run: &RunId, roll: RollId, jobs: &Jobs<'_>) -> Check {
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let distinct = [
        ("clients", ja.logical_client_id != jb.logical_client_id),
        ("sessions", jobs.a.session_id != jobs.b.session_id),
        ("seeds", jobs.a.seed != jobs.b.seed),
        ("prompts", ja.prompt.hash != jb.prompt.hash),
        (
            "folders",
            Key::slot_file(run, roll, Slot::A, "x") != Key::slot_file(run, roll, Slot::B, "x"),
        ),
    ];
    let bad: Vec<&str> = distinct
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| *n)
        .collect();
    Check::new(
        GuardCheck::IndependencePreflight.as_str(),
        bad.is_empty(),
        if bad.is_empty() {
            "distinct clients, sessions, seeds, prompts, folders".to_string()
        } else {
            format!("not distinct: {}", bad.join(", "))
        },
    )
}

/// Runs both slots: the stored answers of a replay's source, both judges live, or (guard
/// blocked) nothing but the records that say so.
pub(super) async fn run(
    engine: &Engine,
    guard: &Guard,
    jobs: &Jobs<'_>,
    source: &Source,
) -> Result<(SlotRun, SlotRun), JudgingError> {
    let store = &engine.store;
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let (run, roll) = (jobs.a.run, jobs.a.roll);
    if let Source::Stored { from } = source {
        tracing::info!(from = %from, "replaying stored judge answers");
        return Ok((
            copy_attempts(store, from, run, roll, Slot::A).await?,
            copy_attempts(store, from, run, roll, Slot::B).await?,
        ));
    }
    if guard.status == GuardStatus::Pass {
        tracing::info!(package = %jobs.a.package_hash, "dispatching judge A and judge B");
        let (a, b) = tokio::join!(ja.run_slot(store, &jobs.a), jb.run_slot(store, &jobs.b));
        return Ok((a?, b?));
    }
    let why: Vec<&str> = guard
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.id.as_str())
        .collect();
    tracing::warn!(failed = ?why, "roll guard blocked: no judge is called");
    let why = why.join(", ");
    Ok((
        not_dispatched(store, ja, &jobs.a, &why).await?,
        not_dispatched(store, jb, &jobs.b, &why).await?,
    ))
}

/// Stores the records of a slot that was never called (the guard blocked the roll).
async fn not_dispatched(
    store: &Store,
    client: &JudgeClient,
    job: &SlotJob<'_>,
    why: &str,
) -> Result<SlotRun, ResumeError> {
    let raw_key = Key::attempt_file(job.run, job.roll, client.slot, 1, "raw.json");
    let record = AttemptFailure {
        schema_version: ATTEMPT_FAILURE.into(),
        slot: client.slot,
        session_id: job.session_id.clone(),
        attempt: 1,
        stage: FailureStage::Guard,
        error_class: ErrorClass::NotDispatched,
        detail: format!("roll guard blocked: {why}"),
        started_at: None,
        ended_at: None,
    };
    let (_, raw) = put_or_keep(store, &raw_key, &record).await?;
    let meta = not_dispatched_meta(client, job, &raw, &record.detail);
    let id = resume::AttemptId {
        run: job.run,
        roll: job.roll,
        slot: client.slot,
        attempt: 1,
    };
    let meta = resume::sign_meta(job.salt, id, meta);
    let (meta, meta_stored) = put_or_keep(
        store,
        &Key::attempt_file(job.run, job.roll, client.slot, 1, "meta.json"),
        &meta,
    )
    .await?;
    // Records kept from an earlier run of this roll must be this daemon's.
    let raw_bytes = store.get(&raw.key).await?;
    resume::check(
        job.salt,
        id,
        None,
        &resume::Stored {
            request: None,
            raw: &raw_bytes,
            meta: Some(&meta),
        },
    )?;
    let outcome = Err(ParseFailure::new(ErrorClass::NotDispatched, record.detail));
    Ok(SlotRun {
        slot: client.slot,
        attempts: vec![AttemptRecord {
            attempt: 1,
            request: None,
            raw,
            meta,
            meta_hash: meta_stored.hash,
            outcome,
        }],
    })
}

/// The SlotMeta of a slot the guard kept from being called: no request, no answer, no cost.
fn not_dispatched_meta(
    client: &JudgeClient,
    job: &SlotJob<'_>,
    raw: &Stored,
    detail: &str,
) -> SlotMeta {
    SlotMeta {
        schema_version: SLOT_META.into(),
        slot: client.slot,
        attempt: 1,
        logical_client_id: client.logical_client_id.clone(),
        session_id: job.session_id.clone(),
        policy_seed: job.seed,
        endpoint_host: client.config.host(),
        model_requested: client.config.model.clone(),
        model_answered: None,
        system_fingerprint: None,
        prompt_artifact: PromptArtifactRef {
            id: client.prompt.id.clone(),
            version: client.prompt.version.clone(),
            hash: client.prompt.hash.clone(),
        },
        package_hash: job.package_hash.clone(),
        request_ref: None,
        request_hash: None,
        raw_ref: raw.key.to_string(),
        raw_hash: raw.hash.clone(),
        http_status: None,
        started_at: "1970-01-01T00:00:00Z".into(),
        ended_at: "1970-01-01T00:00:00Z".into(),
        latency_ms: 0,
        usage: None,
        cost_rmb: 0.0,
        error_class: Some(ErrorClass::NotDispatched),
        error_detail: Some(detail.to_string()),
        accepted: false,
        attempt_mac: None,
        unredacted_raw_hash: None,
    }
}

/// Copies a slot's stored attempts from another run, then reads them back as a [`SlotRun`].
async fn copy_attempts(
    store: &Store,
    from: &RunId,
    run: &RunId,
    roll: RollId,
    slot: Slot,
) -> Result<SlotRun, StoreError> {
    for k in 1..=3 {
        if !store
            .exists(&Key::attempt_file(from, roll, slot, k, "raw.json"))
            .await?
        {
            break;
        }
        for file in ["request.json", "raw.json", "meta.json"] {
            let src = Key::attempt_file(from, roll, slot, k, file);
            if store.exists(&src).await? {
                store
                    .put_bytes(
                        &Key::attempt_file(run, roll, slot, k, file),
                        store.get(&src).await?,
                    )
                    .await?;
            }
        }
    }
    load_slot_run(store, run, roll, slot).await
}

/// Reads a slot's stored attempts (attempt-1, attempt-2, … while a raw answer exists).
pub async fn load_slot_run(
    store: &Store,
    run: &RunId,
    roll: RollId,
    slot: Slot,
) -> Result<SlotRun, StoreError> {
    let mut attempts = Vec::new();
    for k in 1..=3 {
        let key = |f: &str| Key::attempt_file(run, roll, slot, k, f);
        let Some(raw) = store.get_opt(&key("raw.json")).await? else {
            break;
        };
        let Some((meta, meta_hash)) = store.get_json::<SlotMeta>(&key("meta.json")).await? else {
            return Err(StoreError::NotFound {
                key: key("meta.json"),
            });
        };
        let request = store
            .get_opt(&key("request.json"))
            .await?
            .map(|b| Stored::of(key("request.json"), &b));
        attempts.push(AttemptRecord {
            attempt: k,
            request,
            raw: Stored::of(key("raw.json"), &raw),
            outcome: evaluate_raw(&raw, meta.http_status),
            meta,
            meta_hash,
        });
    }
    Ok(SlotRun { slot, attempts })
}
