//! Stage 1, the roll guard: the checks made before any judge is called (the header and brief
//! it is judged under, a fresh play-spec, the roll order, every frame present and hashing
//! right, the image budget). The header's and the play-spec's sha256 are named in their
//! checks' details, so the sealed roll binds the exact documents it was judged under.

use base64::Engine as _;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

use super::inputs::RollInputs;
use super::{internal, JudgingError};
use crate::engine::Engine;
use crate::intake;
use crate::notary::ReceiptKind;
use crate::run_state::OpenRun;
use seal_core::blinding;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RollId, RunId};
use seal_core::merge;
use seal_core::vocab::GuardCheck;
use seal_store::{Key, Store, StoreError};

/// What the guard read and found.
pub(super) struct Guarded {
    pub run: RunId,
    pub roll: RollId,
    pub header: Evidence,
    pub proof: ProofPackage,
    pub proof_key: Key,
    pub proof_hash: Hash,
    pub brief_text: String,
    pub frames: Frames,
    pub checks: Vec<Check<GuardCheck>>,
}

/// The roll's frames as loaded and verified.
pub(super) struct Frames {
    pub entries: Vec<ManifestEntry>,
    /// hash → (media type, base64), loaded once per roll and shared by both slots.
    pub images: HashMap<String, (String, String)>,
    pub problems: Vec<String>,
    pub total_bytes: u64,
}

fn entry(id: GuardCheck, ok: bool, detail: impl Into<String>) -> Check<GuardCheck> {
    Check::new(id, ok, detail)
}

pub(super) async fn check(
    engine: &Engine,
    open: &OpenRun,
    inputs: RollInputs,
) -> Result<Guarded, JudgingError> {
    let store = &engine.store;
    let run = open.run();
    let RollInputs {
        roll,
        proof,
        proof_key,
        proof_hash,
    } = inputs;
    // Intake stores a package only under the roll it names; another roll's here is planted.
    seal_core::bound::check(&proof_key, &proof)?;
    let header = open.header();
    let mut checks = vec![entry(
        GuardCheck::Header,
        header.phase == Phase::Judging && header.rolls.is_empty(),
        GuardCheck::Header.binding_detail(open.header_hash(), None),
    )];
    let (brief_check, brief_text) = brief(engine, run, header).await?;
    checks.push(brief_check);
    checks.push(play_spec(engine, run, header).await?);
    let order_ok = merge::may_follow(&open.outcomes_before(roll), roll);
    checks.push(entry(
        GuardCheck::RollOrder,
        order_ok,
        if order_ok {
            "roll order holds"
        } else {
            "roll-2 needs a judged, indecisive roll-1"
        },
    ));
    let frames = load_frames(store, &proof).await?;
    checks.push(entry(
        GuardCheck::Blobs,
        frames.problems.is_empty(),
        if frames.problems.is_empty() {
            format!("{} frames present, hashes verified", frames.entries.len())
        } else {
            frames.problems.join("; ")
        },
    ));
    let image_limit = engine.config.max_request_image_bytes;
    checks.push(entry(
        GuardCheck::ImagesWithinLimit,
        frames.total_bytes <= image_limit,
        format!("{} image bytes, limit {image_limit}", frames.total_bytes),
    ));
    if proof.roll_id != roll {
        return Err(internal(
            run,
            roll,
            "the stored proof package is for another roll",
        ));
    }
    Ok(Guarded {
        run: run.clone(),
        roll,
        header: header.clone(),
        proof,
        proof_key,
        proof_hash,
        brief_text,
        frames,
        checks,
    })
}

async fn brief(
    engine: &Engine,
    run: &RunId,
    header: &Evidence,
) -> Result<(Check<GuardCheck>, String), JudgingError> {
    let store = &engine.store;
    Ok(match store.get_opt(&Key::brief(run)).await? {
        Some(b) => {
            let h = Hash::of(&b);
            engine
                .notary
                .require(store, ReceiptKind::Brief, &Key::brief(run), &h)
                .await?;
            let c = entry(
                GuardCheck::BriefHash,
                h == header.brief_hash,
                format!("brief sha256 {h}, header briefHash {}", header.brief_hash),
            );
            (c, String::from_utf8_lossy(&b).into_owned())
        }
        None => (
            entry(GuardCheck::BriefHash, false, "no brief stored for the run"),
            String::new(),
        ),
    })
}

async fn play_spec(
    engine: &Engine,
    run: &RunId,
    header: &Evidence,
) -> Result<Check<GuardCheck>, JudgingError> {
    let store = &engine.store;
    let id = GuardCheck::PlaySpecFresh;
    Ok(match store.get_json::<Value>(&Key::play_spec(run)).await? {
        Some((s, spec_hash)) => {
            engine
                .notary
                .require(
                    store,
                    ReceiptKind::PlaySpec,
                    &Key::play_spec(run),
                    &spec_hash,
                )
                .await?;
            let problems = intake::play_spec_problems(&s, header);
            let note = if problems.is_empty() {
                "derivedFrom.sourceHash is the artifactHash".to_string()
            } else {
                problems.join("; ")
            };
            entry(
                id,
                problems.is_empty(),
                id.binding_detail(&spec_hash, Some(&note)),
            )
        }
        None => {
            let needs = header
                .proof_obligations
                .iter()
                .any(|o| o.source == ObligationSource::PlaySpec);
            let detail = if needs {
                "no play-spec submitted; play-spec obligations carry their checks"
            } else {
                "no play-spec"
            };
            entry(id, true, detail)
        }
    })
}

async fn load_frames(store: &Store, proof: &ProofPackage) -> Result<Frames, StoreError> {
    let mut out = Frames {
        entries: Vec::new(),
        images: HashMap::new(),
        problems: Vec::new(),
        total_bytes: 0,
    };
    let mut seen = BTreeSet::new();
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
                let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
                out.images
                    .insert(f.hash.to_string(), (media.to_string(), b64));
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
