//! `seal explain`: the evidence-bound decision tree of a sealed run, as JSON
//! (`seal.decision-tree/1`) and as a self-contained page a reviewer reads (docs/DESIGN.md §7).
//!
//! Three parts: this loader proves the run first with `seal verify`'s verdict
//! ([`crate::verify::Verifier`], the log and witness quorum included: a run that does not
//! verify is not explained) and then reads every document the tree needs by its ref and
//! the sha256 the sealed evidence records, so an object swapped after the proof is refused;
//! [`tree`] builds the tree from those documents (pure); [`html`] renders the page (pure).
//! The run's trusted reviews ([`Verifier::trusted_reviews`]) follow the sealed outcome as
//! `owner: "human"` nodes, off the selected path (the sealed decision is never rewritten).

pub use seal_core::explain::{html, svg, tree};

use std::collections::BTreeMap;

use crate::verify::{self, RunReport, VerifiedRun, Verifier};
use seal_core::canonical::{self, Hash};
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RunId, Slot};
use seal_core::review::TrustedReview;
use seal_core::validate::{validate_as, Report};
use seal_store::{Key, Store, StoreError};

use html::{FrameImage, MAX_FRAME_BYTES, MAX_PAGE_FRAME_BYTES};
use tree::{RollDocs, RunDocs, SlotDocs};

/// Why a run could not be explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("no run {run} in the store")]
    NotFound { run: String },
    #[error("run {} does not verify: {} problem(s); it is not explained", .0.run_id, .0.problems.len())]
    NotVerified(Box<RunReport>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{key}: {detail}")]
    Corrupt { key: String, detail: String },
    #[error("the decision tree of run {run} is not valid: {detail}")]
    Invalid { run: String, detail: String },
}

impl HasFault for ExplainError {
    fn fault(&self) -> Fault {
        match self {
            ExplainError::NotFound { .. } | ExplainError::NotVerified(_) => Fault::Caller,
            ExplainError::Store(e) => e.fault(),
            ExplainError::Corrupt { .. } | ExplainError::Invalid { .. } => Fault::Corruption,
        }
    }
}

/// A run explained: its tree (and the tree's canonical bytes and sha256) and what the page
/// shows besides the tree.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub tree: DecisionTree,
    pub tree_bytes: Vec<u8>,
    pub tree_hash: Hash,
    pub run: RunDocs,
    pub brief: String,
    pub frames: BTreeMap<Hash, FrameImage>,
    /// The run's trusted reviews, the tree's `owner: "human"` nodes.
    pub reviews: Vec<TrustedReview>,
}

impl Explanation {
    /// The page; `verify_command` is the `seal verify` command line shown on it.
    pub fn html(&self, verify_command: &str) -> String {
        html::render(&html::Page {
            tree: &self.tree,
            tree_hash: &self.tree_hash,
            run: &self.run,
            brief: &self.brief,
            frames: &self.frames,
            verify_command,
            reviews: &self.reviews,
        })
    }
}

/// Proves the run as `seal verify` does (`verifier`), then explains it.
pub async fn explain(
    store: &Store,
    run: &RunId,
    verifier: &Verifier,
) -> Result<Explanation, ExplainError> {
    if !verify::run_exists(store, run).await? {
        return Err(ExplainError::NotFound {
            run: run.to_string(),
        });
    }
    let proof = match verifier.prove(store, run).await? {
        Ok(p) => p,
        Err(report) => return Err(ExplainError::NotVerified(Box::new(report))),
    };
    let (docs, brief) = load(store, run, &proof).await?;
    let frames = load_frames(store, &docs).await?;
    // Only reviews that check under the verifier's reviewer keys and are logged are shown.
    let reviews = verifier.trusted_reviews(store, run, &proof).await?;
    let mut tree = tree::build(&docs);
    tree::add_reviews(&mut tree, &reviews);
    let invalid = |detail: String| ExplainError::Invalid {
        run: run.to_string(),
        detail,
    };
    let value = serde_json::to_value(&tree).map_err(|e| invalid(e.to_string()))?;
    if let Report::Invalid(_, findings) = validate_as(Kind::DecisionTree, &value) {
        let shown: Vec<String> = findings.iter().take(3).map(|f| f.to_string()).collect();
        return Err(invalid(shown.join("; ")));
    }
    let (tree_bytes, tree_hash) =
        canonical::canonical_with_hash(&value).map_err(|e| invalid(e.to_string()))?;
    Ok(Explanation {
        tree,
        tree_bytes,
        tree_hash,
        run: docs,
        brief,
        frames,
        reviews,
    })
}

/// Reads every document of every roll of the proven evidence, each by its recorded sha256.
async fn load(
    store: &Store,
    run: &RunId,
    proof: &VerifiedRun,
) -> Result<(RunDocs, String), ExplainError> {
    let ev = proof.evidence();
    let brief = store.get_verified(&Key::brief(run), &ev.brief_hash).await?;
    let mut rolls = Vec::with_capacity(ev.rolls.len());
    for r in &ev.rolls {
        rolls.push(load_roll(store, run, r).await?);
    }
    let docs = RunDocs {
        evidence: ev.clone(),
        evidence_hash: proof.evidence_hash().clone(),
        seal_hash: proof.seal_hash().clone(),
        key_id: proof.seal().key_id.clone(),
        rolls,
    };
    Ok((docs, String::from_utf8_lossy(&brief).into_owned()))
}

async fn load_roll(store: &Store, run: &RunId, r: &Roll) -> Result<RollDocs, ExplainError> {
    let proof: ProofPackage = store
        .get_json_verified(&r.proof_package_ref, &r.proof_package_hash)
        .await?;
    let package: JudgePackage = store
        .get_json_verified(&r.judge_package_ref, &r.judge_package_hash)
        .await?;
    let manifest_key = Key::roll_file(run, r.roll_id, "image-manifest.json");
    let manifest: ImageManifest = store
        .get_json_verified(&manifest_key, &package.image_manifest_hash)
        .await?;
    let consensus: JudgeConsensus = store
        .get_json_verified(&r.judge_consensus_ref, &r.judge_consensus_hash)
        .await?;
    let reservation: CostReservation = store
        .get_json_verified(&r.cost_reservation_ref, &r.cost_reservation_hash)
        .await?;
    let a = load_slot(store, run, r, Slot::A).await?;
    let b = load_slot(store, run, r, Slot::B).await?;
    Ok(RollDocs {
        roll: r.clone(),
        proof,
        package,
        manifest,
        slots: [a, b],
        consensus,
        reservation,
    })
}

async fn load_slot(
    store: &Store,
    run: &RunId,
    r: &Roll,
    slot: Slot,
) -> Result<SlotDocs, ExplainError> {
    let sref = r.slot_ref(slot);
    let result: JudgeResult = store
        .get_json_verified(&sref.normalized_ref, &sref.result_hash)
        .await?;
    let mut metas = Vec::with_capacity(result.attempts.len());
    for h in &result.attempts {
        let k = Key::attempt_file(run, r.roll_id, slot, h.attempt, "meta.json");
        metas.push(
            store
                .get_json_verified::<SlotMeta>(&k, &h.meta_hash)
                .await?,
        );
    }
    Ok(SlotDocs { result, metas })
}

/// The frames the page shows as thumbnails: in roll and capture order, each at most
/// [`MAX_FRAME_BYTES`] and all together at most [`MAX_PAGE_FRAME_BYTES`]; the others are
/// shown by hash. Every embedded frame is re-hashed.
async fn load_frames(
    store: &Store,
    run: &RunDocs,
) -> Result<BTreeMap<Hash, FrameImage>, ExplainError> {
    let mut out = BTreeMap::new();
    let mut budget = MAX_PAGE_FRAME_BYTES;
    for r in &run.rolls {
        for f in &r.proof.frames {
            if out.contains_key(&f.hash) {
                continue;
            }
            let entry = r.manifest.frames.iter().find(|e| e.hash == f.hash);
            let (media_type, size) = match entry {
                Some(e) => (e.media_type.clone(), e.bytes),
                None => (String::new(), 0),
            };
            let image = if entry.is_some()
                && html::embeddable(&media_type)
                && size <= MAX_FRAME_BYTES
                && size <= budget
            {
                let bytes = store.get_verified(&Key::cas(&f.hash), &f.hash).await?;
                budget -= size;
                FrameImage::Embedded {
                    media_type,
                    bytes: bytes.to_vec(),
                }
            } else {
                FrameImage::NotEmbedded { bytes: size }
            };
            out.insert(f.hash.clone(), image);
        }
    }
    Ok(out)
}
