//! One roll, end to end: guard, blinded package, cost reservation, Judge A ∥ Judge B, parsed
//! and normalized results, independence, consensus, and the roll record (`roll.json`).
//!
//! Every step writes create-only and derives its bytes from what is already stored, so running
//! a roll again (a retry, a restart after a crash, a second replica) converges on the same
//! objects and pays no judge twice for an answer already held.

use base64::Engine as _;
use serde_json::Value;
use std::collections::HashMap;
use tracing::Instrument;

use crate::blinding;
use crate::canonical::Hash;
use crate::consensus::{self, ConsensusInput};
use crate::doc::*;
use crate::engine::Engine;
use crate::ids::{RollId, RunId, Slot};
use crate::independence::{self, SlotRecord};
use crate::intake::{self, IntakeError};
use crate::judge::normalize::{self, SlotAnswer};
use crate::judge::{self, JudgeClient, SlotJob, SlotRun};
use crate::merge::{next_after, Next};
use crate::store::{Key, Store, StoreError, Stored};

#[derive(Debug, thiserror::Error)]
pub enum RollError {
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("run {run} {roll}: {reason}")]
    Internal {
        run: RunId,
        roll: RollId,
        reason: String,
    },
}

/// The result of a judged roll.
#[derive(Debug, Clone)]
pub struct RollReport {
    pub roll: Roll,
    pub consensus: JudgeConsensus,
    pub next: Next,
}

fn roll_key(run: &RunId, roll: RollId) -> Key {
    Key::roll_file(run, roll, "roll.json")
}

/// How a roll guard names the header it was judged under (verify reads it back).
pub const GUARD_HEADER_PREFIX: &str = "header.json";
/// How a roll guard names the play-spec it was judged under (verify reads it back).
pub const GUARD_SPEC_PREFIX: &str = "play-spec.json";

/// The sha256 a roll guard check names for `prefix` (`header.json sha256 <hex>…`), if any.
pub fn guard_named_hash(roll: &Roll, check: &str, prefix: &str) -> Option<Hash> {
    let c = roll.roll_guard.checks.iter().find(|c| c.id == check)?;
    let rest = c.detail.strip_prefix(prefix)?.strip_prefix(" sha256 ")?;
    Hash::parse(rest.get(..64)?).ok()
}

/// Where a roll's judge answers come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Ask both judges over HTTP.
    Live,
    /// Historical replay: every stored attempt (and the cost reservation) of the same roll of
    /// `from` is copied byte for byte, then parsed, normalized and judged by the current code.
    Stored { from: RunId },
}

/// Judges roll `roll` of `run` (its proof package must be stored). Idempotent.
pub async fn judge_roll(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
) -> Result<RollReport, RollError> {
    judge_roll_from(engine, run, roll, &Source::Live).await
}

/// Judges a roll with answers from `source`.
pub async fn judge_roll_from(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    source: &Source,
) -> Result<RollReport, RollError> {
    let span = tracing::info_span!("roll", run = %run, roll = %roll);
    judge_roll_inner(engine, run, roll, source)
        .instrument(span)
        .await
}

/// Copies one object byte for byte (create-only).
async fn copy_object(store: &Store, from: &Key, to: &Key) -> Result<Stored, StoreError> {
    let bytes = store.get(from).await?;
    store.put_bytes(to, bytes).await
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
                copy_object(store, &src, &Key::attempt_file(run, roll, slot, k, file)).await?;
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
        let request = store.get_opt(&key("request.json")).await?.map(|b| Stored {
            key: key("request.json"),
            hash: Hash::of(&b),
            size: b.len() as u64,
        });
        attempts.push(judge::AttemptRecord {
            attempt: k,
            request,
            raw: Stored {
                key: key("raw.json"),
                hash: Hash::of(&raw),
                size: raw.len() as u64,
            },
            outcome: judge::client::evaluate_raw(&raw, meta.http_status),
            meta,
            meta_hash,
        });
    }
    Ok(SlotRun { slot, attempts })
}

/// The stored record of a judged roll, if any.
pub async fn stored_roll(
    store: &Store,
    run: &RunId,
    roll: RollId,
) -> Result<Option<RollReport>, RollError> {
    let Some((r, _)) = store.get_json::<Roll>(&roll_key(run, roll)).await? else {
        return Ok(None);
    };
    let consensus: JudgeConsensus = store
        .get_json_verified(
            &Key::parse(&r.judge_consensus_ref).map_err(|e| internal(run, roll, e))?,
            &r.judge_consensus_hash,
        )
        .await?;
    let next = next_after(roll.number(), r.roll_outcome);
    Ok(Some(RollReport {
        roll: r,
        consensus,
        next,
    }))
}

fn internal(run: &RunId, roll: RollId, e: impl std::fmt::Display) -> RollError {
    RollError::Internal {
        run: run.clone(),
        roll,
        reason: e.to_string(),
    }
}

async fn put_or_keep<T: serde::Serialize + serde::de::DeserializeOwned>(
    store: &Store,
    key: &Key,
    doc: &T,
) -> Result<(T, Stored), StoreError> {
    match store.put_json(key, doc).await {
        Ok(s) => Ok((
            serde_json::from_value(serde_json::to_value(doc).map_err(|e| {
                StoreError::BadDocument {
                    key: key.clone(),
                    detail: e.to_string(),
                }
            })?)
            .map_err(|e| StoreError::BadDocument {
                key: key.clone(),
                detail: e.to_string(),
            })?,
            s,
        )),
        // Written by an earlier run of this roll with other inputs (a changed config, say):
        // the stored record is what the roll was judged with, and stands.
        Err(StoreError::Conflict { .. }) => {
            let bytes = store.get(key).await?;
            let v = crate::json::parse_as::<T>(&bytes, store.doc_limit()).map_err(|e| {
                StoreError::BadDocument {
                    key: key.clone(),
                    detail: e.to_string(),
                }
            })?;
            Ok((
                v,
                Stored {
                    key: key.clone(),
                    hash: Hash::of(&bytes),
                    size: bytes.len() as u64,
                },
            ))
        }
        Err(e) => Err(e),
    }
}

struct Frames {
    entries: Vec<ManifestEntry>,
    images: HashMap<String, (String, String)>,
    problems: Vec<String>,
    total_bytes: u64,
}

async fn load_frames(store: &Store, proof: &ProofPackage) -> Result<Frames, StoreError> {
    let mut out = Frames {
        entries: Vec::new(),
        images: HashMap::new(),
        problems: Vec::new(),
        total_bytes: 0,
    };
    let mut seen = std::collections::BTreeSet::new();
    for f in &proof.frames {
        if !seen.insert(f.hash.clone()) {
            continue;
        }
        let key = Key::cas(&f.hash);
        match store.get_verified(&key, &f.hash).await {
            Ok(bytes) => {
                let Some(media) = blinding::sniff_media_type(&bytes) else {
                    out.problems
                        .push(format!("{key}: not a PNG, JPEG, WebP or GIF image"));
                    continue;
                };
                out.total_bytes += bytes.len() as u64;
                out.entries.push(ManifestEntry {
                    hash: f.hash.clone(),
                    media_type: media.into(),
                    bytes: bytes.len() as u64,
                });
                out.images.insert(
                    f.hash.to_string(),
                    (
                        media.to_string(),
                        base64::engine::general_purpose::STANDARD.encode(&bytes),
                    ),
                );
            }
            Err(
                e @ (StoreError::NotFound { .. }
                | StoreError::HashMismatch { .. }
                | StoreError::TooLarge { .. }),
            ) => out.problems.push(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The roll costs recorded before this one (roll 1 when judging roll 2).
async fn spent_before_micro(
    store: &Store,
    run: &RunId,
    roll: RollId,
    header: &Evidence,
) -> Result<u64, StoreError> {
    let mut micro = rmb_to_micro(header.cost_rmb);
    if roll == RollId::R2 {
        if let Some((r1, _)) = store.get_json::<Roll>(&roll_key(run, RollId::R1)).await? {
            micro += rmb_to_micro(r1.cost_rmb);
        }
    }
    Ok(micro)
}

fn slot_price(client: &JudgeClient, request: &Value, images: u64) -> SlotPrice {
    let input = JudgeClient::input_token_bound(request);
    let attempts = client.config.max_attempts();
    let worst = client.worst_case_attempt_micro(input, images) * u64::from(attempts);
    SlotPrice {
        model: client.config.model.clone(),
        input_rmb_per_m_tok: client.config.prices.input_rmb_per_mtok,
        output_rmb_per_m_tok: client.config.prices.output_rmb_per_mtok,
        image_rmb: client.config.prices.image_rmb,
        max_attempts: attempts,
        max_input_tokens: input,
        max_output_tokens: client.config.max_tokens,
        images,
        worst_case_rmb: micro_to_rmb(worst),
    }
}

/// Stores the records of a slot that was never called (the guard blocked the roll).
async fn not_dispatched(
    store: &Store,
    client: &JudgeClient,
    job: &SlotJob<'_>,
    why: &str,
) -> Result<SlotRun, StoreError> {
    let raw_key = Key::attempt_file(job.run, job.roll, client.slot, 1, "raw.json");
    let record = AttemptFailure {
        schema_version: ATTEMPT_FAILURE.into(),
        slot: client.slot,
        session_id: job.session_id.to_string(),
        attempt: 1,
        stage: FailureStage::Guard,
        error_class: "not_dispatched".into(),
        detail: format!("roll guard blocked: {why}"),
        started_at: None,
        ended_at: None,
    };
    let (_, raw) = put_or_keep(store, &raw_key, &record).await?;
    let meta = SlotMeta {
        schema_version: SLOT_META.into(),
        slot: client.slot,
        attempt: 1,
        logical_client_id: client.logical_client_id.clone(),
        session_id: job.session_id.to_string(),
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
        error_class: Some("not_dispatched".into()),
        error_detail: Some(record.detail.clone()),
        accepted: false,
    };
    let (meta, meta_stored) = put_or_keep(
        store,
        &Key::attempt_file(job.run, job.roll, client.slot, 1, "meta.json"),
        &meta,
    )
    .await?;
    let outcome = Err(judge::parse::ParseFailure::new(
        "not_dispatched",
        record.detail,
    ));
    Ok(SlotRun {
        slot: client.slot,
        attempts: vec![judge::AttemptRecord {
            attempt: 1,
            request: None,
            raw,
            meta,
            meta_hash: meta_stored.hash,
            outcome,
        }],
    })
}

/// What a slot's attempts amount to: parsed.json and normalized.json, stored.
pub struct SlotOutcome {
    pub slot_ref: JudgeSlotRef,
    pub result: JudgeResult,
    pub result_hash: Hash,
    pub final_meta: Option<SlotMeta>,
    pub final_request: Option<Value>,
    pub cost_micro: u64,
}

/// The parsed document and normalized result of a slot (pure; replay and verify use it on
/// stored attempts). The prompt hash and session are the recorded ones of the final attempt.
pub fn slot_documents(
    slot: Slot,
    run: &SlotRun,
    package: &JudgePackage,
    package_hash: &Hash,
) -> (Value, JudgeResult) {
    let final_meta = run.final_attempt().map(|a| &a.meta);
    let prompt_hash = &final_meta
        .map(|m| m.prompt_artifact.hash.clone())
        .unwrap_or_else(|| Hash::of(b""));
    let session_id = final_meta.map(|m| m.session_id.as_str()).unwrap_or("");
    let hashes: Vec<AttemptHashes> = run
        .attempts
        .iter()
        .map(|a| AttemptHashes {
            attempt: a.attempt,
            request_hash: a.request.as_ref().map(|r| r.hash.clone()),
            raw_hash: a.raw.hash.clone(),
            meta_hash: a.meta_hash.clone(),
            accepted: a.outcome.is_ok(),
        })
        .collect();
    match run.accepted() {
        Some(a) => {
            let output = a.outcome.as_ref().ok().cloned().unwrap_or(JudgeOutput {
                obligations: Vec::new(),
            });
            let model = a.meta.model_answered.clone();
            let result = normalize::normalize(
                slot,
                package,
                package_hash,
                prompt_hash,
                SlotAnswer::Answered {
                    output: &output,
                    model,
                },
                hashes,
            );
            (serde_json::to_value(&output).unwrap_or(Value::Null), result)
        }
        None => {
            let last = run.attempts.last();
            let (class, detail, attempt) = match last.map(|a| &a.outcome) {
                Some(Err(f)) => (
                    f.class.clone(),
                    f.detail.clone(),
                    last.map(|a| a.attempt).unwrap_or(0),
                ),
                _ => (
                    "no_attempt".to_string(),
                    "the slot made no attempt".to_string(),
                    0,
                ),
            };
            let failure = AttemptFailure {
                schema_version: ATTEMPT_FAILURE.into(),
                slot,
                session_id: session_id.to_string(),
                attempt,
                stage: FailureStage::Parse,
                error_class: class.clone(),
                detail,
                started_at: None,
                ended_at: None,
            };
            let attempts_made = run.attempts.iter().filter(|a| a.request.is_some()).count() as u32;
            let model = last.and_then(|a| a.meta.model_answered.clone());
            let result = normalize::normalize(
                slot,
                package,
                package_hash,
                prompt_hash,
                SlotAnswer::Failed {
                    error_class: class,
                    attempts: attempts_made,
                    model,
                },
                hashes,
            );
            (
                serde_json::to_value(&failure).unwrap_or(Value::Null),
                result,
            )
        }
    }
}

async fn finish_slot(
    store: &Store,
    run_id: &RunId,
    roll: RollId,
    client: &JudgeClient,
    run: &SlotRun,
    package: &JudgePackage,
    package_hash: &Hash,
) -> Result<SlotOutcome, RollError> {
    let slot = client.slot;
    let final_attempt = run
        .final_attempt()
        .ok_or_else(|| internal(run_id, roll, format!("judge {slot}: no attempt recorded")))?;
    let (parsed, result) = slot_documents(slot, run, package, package_hash);
    let parsed_key = Key::slot_file(run_id, roll, slot, "parsed.json");
    let normalized_key = Key::slot_file(run_id, roll, slot, "normalized.json");
    let ((_, parsed_stored), (result, normalized_stored)) = tokio::try_join!(
        put_or_keep(store, &parsed_key, &parsed),
        put_or_keep(store, &normalized_key, &result)
    )?;
    let final_request = match &final_attempt.request {
        Some(r) => Some(
            crate::json::parse(
                &store.get_verified(&r.key, &r.hash).await?,
                store.doc_limit(),
            )
            .map_err(|e| internal(run_id, roll, e))?,
        ),
        None => None,
    };
    Ok(SlotOutcome {
        slot_ref: JudgeSlotRef {
            raw_ref: final_attempt.raw.key.to_string(),
            raw_hash: final_attempt.raw.hash.clone(),
            parsed_ref: parsed_stored.key.to_string(),
            parsed_hash: parsed_stored.hash.clone(),
            normalized_ref: normalized_stored.key.to_string(),
            result_hash: normalized_stored.hash.clone(),
        },
        result,
        result_hash: normalized_stored.hash,
        final_meta: Some(final_attempt.meta.clone()),
        final_request,
        cost_micro: run.cost_micro(),
    })
}

async fn judge_roll_inner(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    source: &Source,
) -> Result<RollReport, RollError> {
    let store = &engine.store;
    if let Some(done) = stored_roll(store, run, roll).await? {
        tracing::info!(outcome = %done.roll.roll_outcome, "roll already judged");
        return Ok(done);
    }
    let (header, header_hash) = intake::header(store, run).await?;
    let proof_key = Key::roll_file(run, roll, "proof-package.json");
    let Some((proof, proof_hash)) = store.get_json::<ProofPackage>(&proof_key).await? else {
        return Err(IntakeError::NotFound {
            object: format!("run {run} {roll}"),
            reason: "no proof package submitted".into(),
        }
        .into());
    };
    let brief = store.get_opt(&Key::brief(run)).await?;
    let spec = store.get_json::<Value>(&Key::play_spec(run)).await?;

    // The guard: everything that must hold before any judge is called. The header's and the
    // play-spec's hashes are named in their checks' details, so that the sealed roll binds
    // the exact documents it was judged under (verify re-hashes them).
    let mut checks = vec![Check::new(
        "header",
        header.phase == Phase::Judging && header.rolls.is_empty(),
        format!("{} sha256 {header_hash}", GUARD_HEADER_PREFIX),
    )];
    let brief_text = match &brief {
        Some(b) => {
            let h = Hash::of(b);
            checks.push(Check::new(
                "brief_hash",
                h == header.brief_hash,
                format!("brief sha256 {h}, header briefHash {}", header.brief_hash),
            ));
            String::from_utf8_lossy(b).into_owned()
        }
        None => {
            checks.push(Check::new(
                "brief_hash",
                false,
                "no brief stored for the run",
            ));
            String::new()
        }
    };
    match &spec {
        Some((s, spec_hash)) => {
            let problems = intake::play_spec_problems(s, &header);
            checks.push(Check::new(
                "play_spec_fresh",
                problems.is_empty(),
                if problems.is_empty() {
                    format!("{GUARD_SPEC_PREFIX} sha256 {spec_hash}: derivedFrom.sourceHash is the artifactHash")
                } else {
                    format!("{GUARD_SPEC_PREFIX} sha256 {spec_hash}: {}", problems.join("; "))
                },
            ));
        }
        None => {
            let needs = header
                .proof_obligations
                .iter()
                .any(|o| o.source == ObligationSource::PlaySpec);
            checks.push(Check::new(
                "play_spec_fresh",
                true,
                if needs {
                    "no play-spec submitted; play-spec obligations carry their checks"
                } else {
                    "no play-spec"
                },
            ));
        }
    }
    let order_ok = match roll {
        RollId::R1 => true,
        RollId::R2 => {
            matches!(stored_roll(store, run, RollId::R1).await?, Some(r) if !r.roll.roll_outcome.is_decisive())
        }
    };
    checks.push(Check::new(
        "roll_order",
        order_ok,
        if order_ok {
            "roll order holds"
        } else {
            "roll-2 needs a judged, indecisive roll-1"
        },
    ));
    let frames = load_frames(store, &proof).await?;
    checks.push(Check::new(
        "blobs",
        frames.problems.is_empty(),
        if frames.problems.is_empty() {
            format!("{} frames present, hashes verified", frames.entries.len())
        } else {
            frames.problems.join("; ")
        },
    ));
    let image_limit = engine.config.max_request_image_bytes;
    checks.push(Check::new(
        "images_within_limit",
        frames.total_bytes <= image_limit,
        format!("{} image bytes, limit {image_limit}", frames.total_bytes),
    ));

    // The blinded package and its image manifest, written together (both are derived here).
    let manifest = blinding::image_manifest(frames.entries.clone());
    let (_, manifest_hash) =
        crate::canonical::canonical_with_hash(&manifest).map_err(|e| internal(run, roll, e))?;
    let package = blinding::judge_package(&header, &brief_text, &proof, &manifest_hash);
    let (package_canonical, computed_package_hash) =
        crate::canonical::canonical_with_hash(&package).map_err(|e| internal(run, roll, e))?;
    let manifest_key = Key::roll_file(run, roll, "image-manifest.json");
    let package_key = Key::roll_file(run, roll, "judge-package.json");
    let ((manifest, manifest_stored), (package, package_stored)) = tokio::try_join!(
        put_or_keep(store, &manifest_key, &manifest),
        put_or_keep(store, &package_key, &package)
    )?;
    if manifest_stored.hash != manifest_hash {
        return Err(internal(
            run,
            roll,
            "the stored image manifest differs from this roll's frames",
        ));
    }
    let package_bytes = if package_stored.hash == computed_package_hash {
        bytes::Bytes::from(package_canonical)
    } else {
        store
            .get_verified(&package_stored.key, &package_stored.hash)
            .await?
    };
    let package_hash = package_stored.hash.clone();

    // Per-slot identity, and the preflight that A and B are independent before either is asked.
    let salt = engine.judges.salt();
    let (seed_a, seed_b) = judge::policy_seeds(salt, run, roll);
    let session_a = judge::session_id(salt, run, roll, Slot::A);
    let session_b = judge::session_id(salt, run, roll, Slot::B);
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let preflight = [
        ("clients", ja.logical_client_id != jb.logical_client_id),
        ("sessions", session_a != session_b),
        ("seeds", seed_a != seed_b),
        ("prompts", ja.prompt.hash != jb.prompt.hash),
        (
            "folders",
            Key::slot_file(run, roll, Slot::A, "x") != Key::slot_file(run, roll, Slot::B, "x"),
        ),
    ];
    let bad: Vec<&str> = preflight
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| *n)
        .collect();
    checks.push(Check::new(
        "independence_preflight",
        bad.is_empty(),
        if bad.is_empty() {
            "distinct clients, sessions, seeds, prompts, folders".to_string()
        } else {
            format!("not distinct: {}", bad.join(", "))
        },
    ));

    let job_a = SlotJob {
        run,
        roll,
        package_bytes: &package_bytes,
        package_hash: &package_hash,
        manifest: &manifest,
        images: &frames.images,
        seed: seed_a,
        session_id: &session_a,
    };
    let job_b = SlotJob {
        run,
        roll,
        package_bytes: &package_bytes,
        package_hash: &package_hash,
        manifest: &manifest,
        images: &frames.images,
        seed: seed_b,
        session_id: &session_b,
    };

    // Cost: reserve the worst case of both slots before any call.
    let images = manifest.frames.len() as u64;
    let price_a = slot_price(ja, &ja.build_request(&job_a), images);
    let price_b = slot_price(jb, &jb.build_request(&job_b), images);
    let spent_before =
        spent_before_micro(store, run, roll, &header).await? + rmb_to_micro(proof.actor_cost_rmb);
    let reserved = rmb_to_micro(price_a.worst_case_rmb) + rmb_to_micro(price_b.worst_case_rmb);
    let budget = engine.config.budget_run_micro;
    let reservation = CostReservation {
        schema_version: COST_RESERVATION.into(),
        roll_id: roll,
        budget_rmb: micro_to_rmb(budget),
        spent_before_rmb: micro_to_rmb(spent_before),
        reserved_rmb: micro_to_rmb(reserved),
        within_budget: spent_before + reserved <= budget,
        price_table: PriceTable {
            a: price_a,
            b: price_b,
        },
    };
    let reservation_key = Key::roll_file(run, roll, "cost-reservation.json");
    let (reservation, reservation_stored) = match source {
        Source::Live => put_or_keep(store, &reservation_key, &reservation).await?,
        Source::Stored { from } => {
            // A replay spends nothing new: it carries the reservation its answers were bought under.
            let from_key = Key::roll_file(from, roll, "cost-reservation.json");
            match copy_object(store, &from_key, &reservation_key).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            let (r, h) = store
                .get_json::<CostReservation>(&reservation_key)
                .await?
                .ok_or_else(|| StoreError::NotFound {
                    key: reservation_key.clone(),
                })?;
            let size = store.get(&reservation_key).await?.len() as u64;
            (
                r,
                Stored {
                    key: reservation_key.clone(),
                    hash: h,
                    size,
                },
            )
        }
    };
    checks.push(Check::new(
        "budget",
        reservation.within_budget,
        format!(
            "spent {} + reserved {} RMB, budget {} RMB",
            reservation.spent_before_rmb, reservation.reserved_rmb, reservation.budget_rmb
        ),
    ));

    let guard = Guard {
        status: if checks.iter().all(|c| c.ok) {
            GuardStatus::Pass
        } else {
            GuardStatus::Blocked
        },
        checks,
    };
    let (run_a, run_b) = if let Source::Stored { from } = source {
        tracing::info!(from = %from, "replaying stored judge answers");
        (
            copy_attempts(store, from, run, roll, Slot::A).await?,
            copy_attempts(store, from, run, roll, Slot::B).await?,
        )
    } else if guard.status == GuardStatus::Pass {
        tracing::info!(package = %package_hash, "dispatching judge A and judge B");
        let (a, b) = tokio::join!(ja.run_slot(store, &job_a), jb.run_slot(store, &job_b));
        (a?, b?)
    } else {
        let why: Vec<&str> = guard
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.id.as_str())
            .collect();
        tracing::warn!(failed = ?why, "roll guard blocked: no judge is called");
        let why = why.join(", ");
        (
            not_dispatched(store, ja, &job_a, &why).await?,
            not_dispatched(store, jb, &job_b, &why).await?,
        )
    };

    let (out_a, out_b) = tokio::try_join!(
        finish_slot(store, run, roll, ja, &run_a, &package, &package_hash),
        finish_slot(store, run, roll, jb, &run_b, &package, &package_hash)
    )?;
    let record = |o: &'_ SlotOutcome| -> (Option<SlotMeta>, Option<Value>) {
        (o.final_meta.clone(), o.final_request.clone())
    };
    let (meta_a, req_a) = record(&out_a);
    let (meta_b, req_b) = record(&out_b);
    let independence = independence::checks(
        SlotRecord {
            meta: meta_a.as_ref(),
            raw_ref: &out_a.slot_ref.raw_ref,
            raw_hash: &out_a.slot_ref.raw_hash,
            request: req_a.as_ref(),
        },
        SlotRecord {
            meta: meta_b.as_ref(),
            raw_ref: &out_b.slot_ref.raw_ref,
            raw_hash: &out_b.slot_ref.raw_hash,
            request: req_b.as_ref(),
        },
        &package_hash,
        &manifest,
    );
    let consensus = consensus::decide(&ConsensusInput {
        roll_id: roll,
        package: &package,
        package_hash: &package_hash,
        floor_passed: proof.floor.passed,
        a: &out_a.result,
        a_hash: &out_a.result_hash,
        b: &out_b.result,
        b_hash: &out_b.result_hash,
        independence,
    });
    let (consensus, consensus_stored) = put_or_keep(
        store,
        &Key::roll_file(run, roll, "consensus.json"),
        &consensus,
    )
    .await?;

    let mut errors: Vec<String> = guard
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| format!("guard:{}", c.id))
        .collect();
    if guard.status == GuardStatus::Pass {
        for (slot, out) in [(Slot::A, &out_a), (Slot::B, &out_b)] {
            if let Some(f) = &out.result.slot_failed {
                errors.push(format!("judge-{slot}:{}", f.error_class));
            }
        }
        errors.extend(
            consensus
                .independence_checks
                .failed()
                .iter()
                .map(|c| format!("independence:{c}")),
        );
    }
    let roll_outcome = if guard.status == GuardStatus::Blocked {
        Outcome::InfraError
    } else {
        consensus.decision
    };
    let roll_record = Roll {
        roll_id: roll,
        roll: roll.number(),
        requested_game_seed: proof.requested_game_seed,
        actual_game_seed: proof.actual_game_seed,
        policy_seed: proof.policy_seed,
        actor_session_id: proof.actor_session_id.clone(),
        proof_package_ref: proof_key.to_string(),
        proof_package_hash: proof_hash,
        judge_package_ref: package_stored.key.to_string(),
        judge_package_hash: package_hash.clone(),
        judge_a_hash: out_a.slot_ref.result_hash.clone(),
        judge_a_ref: out_a.slot_ref.clone(),
        judge_b_hash: out_b.slot_ref.result_hash.clone(),
        judge_b_ref: out_b.slot_ref.clone(),
        judge_consensus_ref: consensus_stored.key.to_string(),
        judge_consensus_hash: consensus_stored.hash.clone(),
        cost_reservation_ref: reservation_stored.key.to_string(),
        cost_reservation_hash: reservation_stored.hash.clone(),
        roll_guard: guard,
        roll_outcome,
        errors,
        cost_rmb: micro_to_rmb(
            rmb_to_micro(proof.actor_cost_rmb) + out_a.cost_micro + out_b.cost_micro,
        ),
    };
    let (roll_record, _) = put_or_keep(store, &roll_key(run, roll), &roll_record).await?;
    tracing::info!(outcome = %roll_record.roll_outcome, decision = %consensus.decision, "roll judged");
    let next = next_after(roll.number(), roll_record.roll_outcome);
    Ok(RollReport {
        roll: roll_record,
        consensus,
        next,
    })
}
