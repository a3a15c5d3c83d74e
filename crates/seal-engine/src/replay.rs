//! `seal replay`: re-judge decided runs into new `historical_replay` runs (docs/DESIGN.md §7).
//!
//! A replay is a new run (`<source>.replay-<n>`, `parentRunId` = the source, publishFrozen) made
//! from the source's stored inputs. `stored` copies every stored judge attempt byte for byte and
//! re-parses, re-normalizes and re-judges them with the current code: no model call, nothing
//! new spent, and with an unchanged strategy every consensus hash must reproduce. `live` asks
//! both judges again over HTTP with the same blinded package (fresh sessions and seeds).
//!
//! The source is verified first (`seal verify`: seal by a trusted key, every ref re-hashed):
//! history that does not verify is not replayed. With `--from`, the source run is first imported
//! from an archive (an archive bucket, the committed fixtures) by [`crate::import`]: staged,
//! verified there, and only then copied, so the result is self-contained.

use serde::Serialize;

use crate::engine::Engine;
use crate::intake::{self, IntakeError, Origin};
use crate::postguard::{self, FinalizeError};
use crate::roll::{self, JudgingError, Source, SubmitError, Submitted};
use crate::verify::VerifiedRun;
use seal_core::consensus;
use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RunId, Slot};
use seal_core::stats::retest::RetestPair;
use seal_core::submission::ProofSubmission;
use seal_core::vocab::GuardCheck;
use seal_store::{Key, Store, StoreError};

/// Where replayed judge answers come from (the CLI maps its `--judges` value onto it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgesFrom {
    /// Re-use the stored raw answers (no model call, no cost).
    Stored,
    /// Ask both judges again.
    Live,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("run {run}: not decided (no evidence.json): only decided runs are replayed")]
    NotDecided { run: RunId },
    #[error("run {run}: does not verify, not replaying it: {problems}")]
    Unsound { run: RunId, problems: String },
    #[error("unknown consensus strategy {0:?}: this build implements dual-strict/1")]
    Strategy(String),
    #[error("run {run}: no free replay id")]
    NoId { run: RunId },
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error(transparent)]
    Roll(#[from] JudgingError),
    #[error(transparent)]
    Submit(#[from] SubmitError),
    #[error(transparent)]
    Finalize(#[from] FinalizeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Log(#[from] seal_log::LogError),
}

impl HasFault for ReplayError {
    fn fault(&self) -> Fault {
        match self {
            ReplayError::NotDecided { .. }
            | ReplayError::Unsound { .. }
            | ReplayError::Strategy(_)
            | ReplayError::NoId { .. } => Fault::Caller,
            ReplayError::Intake(e) => e.fault(),
            ReplayError::Roll(e) => e.fault(),
            ReplayError::Submit(e) => e.fault(),
            ReplayError::Finalize(e) => e.fault(),
            ReplayError::Store(e) => e.fault(),
            ReplayError::Log(e) => e.fault(),
        }
    }
}

/// What one replay did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replayed {
    pub source: String,
    pub replay: String,
    pub old_outcome: Option<Outcome>,
    pub new_outcome: Option<Outcome>,
    /// Every roll present in both runs has a byte-identical consensus.
    pub consensus_reproduced: bool,
    /// Obligations of the rolls present in both runs, compared by consensus status; and how
    /// many of them have another status now. A live replay of unchanged judges gets new
    /// answer bytes (new hashes, so no byte-identical consensus) and 0 changed here.
    pub obligations_compared: usize,
    pub obligations_changed: usize,
    /// Money spent by this replay (0 for stored answers).
    pub new_cost_rmb: f64,
    /// Each judge's status per obligation in the source and in this replay, for the rolls
    /// present in both: the test–retest of `--retest`. Live replays only (stored answers
    /// repeat themselves by construction).
    #[serde(skip)]
    pub retest: Vec<RetestPair>,
}

async fn next_replay_id(store: &Store, source: &RunId) -> Result<RunId, ReplayError> {
    for n in 1..10_000 {
        let Ok(id) = source.replay(n) else {
            break;
        };
        if !store.exists(&Key::header(&id)).await? {
            return Ok(id);
        }
    }
    Err(ReplayError::NoId {
        run: source.clone(),
    })
}

/// The last replay of `source` in the store (the highest `<source>.replay-<n>` with a
/// header), if any.
async fn last_replay(store: &Store, source: &RunId) -> Result<Option<RunId>, ReplayError> {
    let mut last = None;
    for n in 1..10_000 {
        let Ok(id) = source.replay(n) else {
            break;
        };
        if !store.exists(&Key::header(&id)).await? {
            break;
        }
        last = Some(id);
    }
    Ok(last)
}

/// What a resumable replay ([`replay_resumable`]) did.
#[derive(Debug, Clone)]
pub enum Resumed {
    /// The source was replayed now (or an interrupted replay of it was finished).
    Replayed(Replayed),
    /// A decided replay of the source was already there: it was not replayed again.
    AlreadyReplayed { source: RunId, replay: RunId },
}

/// Replays one decided run the way `seal replay --all` does, so that a rerun after a kill
/// goes on where it stopped: when the source's last replay is decided it is not replayed
/// again (its seal and log entry are completed if the kill came between them); when it is
/// not decided, that same replay id is continued (every step is create-only and idempotent,
/// and judge attempts found in the store are copies of the source's, byte for byte); else a
/// new replay starts. The source is verified (or its import's `proof` taken) in every case
/// but the first.
pub async fn replay_resumable(
    engine: &Engine,
    source: &RunId,
    judges: JudgesFrom,
    strategy: Option<&str>,
    trusted: &[seal_core::sealing::PublicKey],
    proof: SourceProof,
) -> Result<Resumed, ReplayError> {
    // The source is proven first, whatever is found of its replay: nothing of a replay is
    // finalized, resumed or copied on the word of a source that does not verify.
    let verified = prove_source(engine, source, strategy, trusted, proof).await?;
    let last = last_replay(&engine.store, source).await?;
    if let Some(id) = &last {
        if engine.store.exists(&Key::evidence(id)).await? {
            if engine.store.exists(&Key::seal(id)).await? {
                // Sealed (perhaps by the key of another deployment whose store this is): acted
                // on only once it verifies under the keys the source was proven with.
                prove_source(engine, id, None, trusted, SourceProof::Verify).await?;
            } else {
                // Killed between evidence and seal: the postguard derives the evidence again
                // and seals it only if it is the same.
                postguard::finalize(engine, id).await?;
            }
            return Ok(Resumed::AlreadyReplayed {
                source: source.clone(),
                replay: id.clone(),
            });
        }
    }
    let id = match last {
        Some(id) => id,
        None => next_replay_id(&engine.store, source).await?,
    };
    start_replay(engine, &verified, source, &id).await?;
    let done = replay_rolls(engine, &verified, source, &id, judges).await?;
    Ok(Resumed::Replayed(done))
}

/// Replays one decided run into a new replay id. The source must verify under `trusted`
/// (signature, subject, every ref), or have been verified by the import that copied it
/// (`proof`): history that does not verify is not replayed.
pub async fn replay(
    engine: &Engine,
    source: &RunId,
    judges: JudgesFrom,
    strategy: Option<&str>,
    trusted: &[seal_core::sealing::PublicKey],
    proof: SourceProof,
) -> Result<Replayed, ReplayError> {
    let verified = prove_source(engine, source, strategy, trusted, proof).await?;
    // The last replay killed before its seal (no `seal.dsse.json`) is this replay, finished
    // under its own id: a kill never leaves an open or unsealed replay beside a new one. Every
    // step is create-only and idempotent, so the rerun writes what the killed one would have.
    let id = match last_replay(&engine.store, source).await? {
        Some(id) if !engine.store.exists(&Key::seal(&id)).await? => id,
        _ => next_replay_id(&engine.store, source).await?,
    };
    start_replay(engine, &verified, source, &id).await?;
    replay_rolls(engine, &verified, source, &id, judges).await
}

/// Whether the replay `id` takes no more rolls: finalizing, or decided but (killed before its
/// seal) not sealed; the postguard then finishes it from what is stored.
async fn past_rolls(store: &Store, id: &RunId) -> bool {
    matches!(
        crate::run_state::RunState::load(store, id).await,
        Ok(crate::run_state::RunState::Finalizing(_) | crate::run_state::RunState::Decided(_))
    )
}

/// How a replay's source is known to verify.
#[derive(Debug)]
pub enum SourceProof {
    /// Verify it in this store now (`seal replay <id>`, `--all`).
    Verify,
    /// It was just imported (`--from`): [`crate::import`] verified exactly the bytes it copied
    /// here, in its staging area, and logged the run before storing its seal. Verifying the
    /// copy again would audit the same bytes twice; everything the replay then reads of the
    /// source is read against the hashes this proof binds, so a copy swapped since is caught
    /// there.
    Imported(Box<VerifiedRun>),
}

/// The source must be decided and verify under `trusted`; it is then logged here.
async fn prove_source(
    engine: &Engine,
    source: &RunId,
    strategy: Option<&str>,
    trusted: &[seal_core::sealing::PublicKey],
    proof: SourceProof,
) -> Result<VerifiedRun, ReplayError> {
    if let Some(s) = strategy.filter(|s| *s != consensus::STRATEGY) {
        return Err(ReplayError::Strategy(s.to_string()));
    }
    if let SourceProof::Imported(verified) = proof {
        if verified.evidence().run_id != source.as_str() {
            return Err(ReplayError::Unsound {
                run: source.clone(),
                problems: format!(
                    "the import's proof is of run {:?}, not of this source",
                    verified.evidence().run_id
                ),
            });
        }
        return Ok(*verified);
    }
    let store = &engine.store;
    if !store.exists(&Key::evidence(source)).await? {
        return Err(ReplayError::NotDecided {
            run: source.clone(),
        });
    }
    let verified = match crate::verify::prove(store, source, trusted).await? {
        Ok(v) => v,
        Err(report) => {
            return Err(ReplayError::Unsound {
                run: source.clone(),
                problems: report.summary(3),
            });
        }
    };
    // The source's seal must be in this store's log: an archive's run was logged when it was
    // imported; a run of this store whose seal the log lacks was planted (docs/DESIGN.md §13),
    // and is refused, never appended here. The keys trusted to have sealed the sources are
    // trusted for this store's log too (its leaves and checkpoints may be theirs).
    if let Some(key) = &engine.key {
        engine
            .log
            .require_logged(source, verified.seal_hash(), key, trusted)
            .await?;
    }
    Ok(verified)
}

/// Stores the replay run's header (historical_replay, parent = the source), brief and
/// play-spec under `id`, each read against the hash the verified source binds. The header's
/// bytes depend on the source only, so storing them again for an interrupted replay is a
/// no-op; a replay already finalizing has nothing to add.
async fn start_replay(
    engine: &Engine,
    verified: &VerifiedRun,
    source: &RunId,
    id: &RunId,
) -> Result<(), ReplayError> {
    let store = &engine.store;
    if past_rolls(store, id).await {
        return Ok(());
    }
    let bound = |check| {
        verified
            .evidence()
            .rolls
            .first()
            .and_then(|r| seal_core::derive::guard_bound_hash(r, check))
    };
    let header_hash = bound(GuardCheck::Header).ok_or_else(|| ReplayError::Unsound {
        run: source.clone(),
        problems: "its first roll's guard names no header".into(),
    })?;
    // Every source object is read (against the hash the proof binds) before anything of the
    // replay is stored: a swapped one stops the replay before its run exists.
    let mut header: Evidence = store
        .get_json_verified(&Key::header(source), &header_hash)
        .await?;
    let brief = match store
        .get_verified(&Key::brief(source), &verified.evidence().brief_hash)
        .await
    {
        Ok(b) => Some(b),
        Err(StoreError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let spec = match bound(GuardCheck::PlaySpecFresh) {
        Some(spec_hash) => Some(
            store
                .get_verified(&Key::play_spec(source), &spec_hash)
                .await?,
        ),
        None => None,
    };
    header.run_id = id.to_string();
    header.parent_run_id = Some(source.to_string());
    header.acceptance_mode = AcceptanceMode::HistoricalReplay;
    let header_bytes = seal_core::canonical::canonical_bytes(&header)
        .map_err(|e| StoreError::Upload(e.to_string()))?;
    intake::put_header(engine, id, &header_bytes, Origin::Replay).await?;
    if let Some(b) = brief {
        intake::put_brief(engine, id, &b).await?;
    }
    if let Some(spec) = spec {
        intake::put_play_spec(engine, id, &spec).await?;
    }
    Ok(())
}

/// Judges the replay's rolls from the verified source's proof packages, then finalizes.
async fn replay_rolls(
    engine: &Engine,
    verified: &VerifiedRun,
    source: &RunId,
    id: &RunId,
    judges: JudgesFrom,
) -> Result<Replayed, ReplayError> {
    let store = &engine.store;
    let old = verified.evidence();
    let id = id.clone();
    let source_mode = match judges {
        JudgesFrom::Stored => Source::Stored {
            from: source.clone(),
            rolls: std::sync::Arc::new(old.rolls.clone()),
        },
        JudgesFrom::Live => Source::Live,
    };
    let rolls = if past_rolls(store, &id).await {
        &[][..]
    } else {
        &old.rolls[..]
    };
    let mut reproduced = true;
    let (mut compared, mut changed) = (0usize, 0usize);
    let mut retest = Vec::new();
    for old_roll in rolls {
        let proof = store
            .get_verified(&old_roll.proof_package_ref, &old_roll.proof_package_hash)
            .await?;
        let roll = old_roll.roll_id;
        let submission = ProofSubmission::parse(&proof, None, store.doc_limit())
            .map_err(|e| IntakeError::submission(&id, roll, e))?;
        let report = match roll::submit(engine, &id, roll, &submission).await {
            Ok(Submitted::AlreadyJudged(report)) => *report,
            Ok(Submitted::Accepted(accepted)) => accepted.judge(&source_mode).await?,
            // The current strategy found roll 1 decisive: there is no roll 2 any more.
            Err(SubmitError::Intake(IntakeError::Order { .. })) => {
                reproduced = false;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        reproduced &= report.roll().judge_consensus_hash == old_roll.judge_consensus_hash;
        // The source is verified, so its consensus is read by the hash its roll names.
        let before: seal_core::doc::JudgeConsensus = store
            .get_json_verified(
                &old_roll.judge_consensus_ref,
                &old_roll.judge_consensus_hash,
            )
            .await?;
        let (c, d) = status_changes(&before, report.consensus());
        compared += c;
        changed += d;
        if judges == JudgesFrom::Live {
            retest.extend(retest_pairs(store, old_roll, report.roll()).await?);
        }
    }
    let done = postguard::finalize(engine, &id).await?;
    // Live spending is the judges' part of each new roll; stored answers cost nothing new.
    let new_cost = if judges == JudgesFrom::Live {
        judges_cost_micro(store, done.evidence()).await?
    } else {
        0
    };
    reproduced &= done.evidence().rolls.len() == old.rolls.len()
        && done
            .evidence()
            .rolls
            .iter()
            .zip(&old.rolls)
            .all(|(new, old)| new.judge_consensus_hash == old.judge_consensus_hash);
    Ok(Replayed {
        source: source.to_string(),
        replay: id.to_string(),
        old_outcome: old.outcome,
        new_outcome: done.evidence().outcome,
        consensus_reproduced: reproduced,
        obligations_compared: compared,
        obligations_changed: changed,
        new_cost_rmb: micro_to_rmb(new_cost),
        retest,
    })
}

/// What the judges of a decided run cost: each roll's cost less the actor's part its proof
/// package declares, the package read against the hash the evidence binds.
async fn judges_cost_micro(store: &Store, ev: &Evidence) -> Result<u64, StoreError> {
    let mut cost = 0u64;
    for r in &ev.rolls {
        let proof: ProofPackage = store
            .get_json_verified(&r.proof_package_ref, &r.proof_package_hash)
            .await?;
        cost += rmb_to_micro(r.cost_rmb).saturating_sub(rmb_to_micro(proof.actor_cost_rmb));
    }
    Ok(cost)
}

/// Each judge's normalized status per obligation of a roll, in the source and in the replay,
/// read against the hashes the two rolls bind. An obligation a judge did not answer (or a
/// failed slot) is `missing`.
async fn retest_pairs(
    store: &Store,
    before: &Roll,
    after: &Roll,
) -> Result<Vec<RetestPair>, StoreError> {
    let mut results = Vec::with_capacity(4);
    for roll in [before, after] {
        for slot in [Slot::A, Slot::B] {
            let r = roll.slot_ref(slot);
            let result: JudgeResult = store
                .get_json_verified(&r.normalized_ref, &r.result_hash)
                .await?;
            results.push(result);
        }
    }
    let status = |res: &JudgeResult, id: &str| {
        res.obligations
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.status)
            .unwrap_or(JudgeStatus::Missing)
    };
    let ids: std::collections::BTreeSet<&str> = results
        .iter()
        .flat_map(|r| r.obligations.iter().map(|o| o.id.as_str()))
        .collect();
    Ok(ids
        .into_iter()
        .map(|id| RetestPair {
            obligation: id.to_string(),
            before: [status(&results[0], id), status(&results[1], id)],
            after: [status(&results[2], id), status(&results[3], id)],
        })
        .collect())
}

/// The estimate of a live replay, before any judge is called: what the sources' judges cost
/// when they were sealed, from their verified evidence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostEstimate {
    /// Sources estimated, and their judges' cost in micro-RMB.
    pub runs: usize,
    pub micro: u64,
    /// Sources that could not be estimated (not decided, or not verified), each with why.
    pub unestimated: Vec<String>,
}

/// Estimates a live replay of `sources` read from `store` (the destination, or an archive
/// opened as a store), each proven under `trusted` first: an estimate from bytes nobody
/// authenticated could be made as small as a cap needs.
/// With `all`, an undecided source is passed over silently (`--all` replays decided runs).
pub async fn estimate_live_cost(
    store: &Store,
    sources: &[RunId],
    trusted: &[seal_core::sealing::PublicKey],
    all: bool,
) -> Result<CostEstimate, StoreError> {
    let mut e = CostEstimate::default();
    for run in sources {
        if !store.exists(&Key::evidence(run)).await? {
            if !all {
                e.unestimated.push(format!("{run}: not decided"));
            }
            continue;
        }
        match crate::verify::prove(store, run, trusted).await? {
            Ok(v) => {
                if v.evidence().acceptance_mode == AcceptanceMode::HistoricalReplay {
                    continue;
                }
                e.micro += judges_cost_micro(store, v.evidence()).await?;
                e.runs += 1;
            }
            Err(report) => e
                .unestimated
                .push(format!("{run}: does not verify ({})", report.summary(1))),
        }
    }
    Ok(e)
}

/// Obligations of `before` compared with `after` by id: (how many, how many with another
/// status, or gone). An obligation only `after` has is counted as changed as well.
fn status_changes(
    before: &seal_core::doc::JudgeConsensus,
    after: &seal_core::doc::JudgeConsensus,
) -> (usize, usize) {
    use std::collections::BTreeMap;
    let map =
        |c: &seal_core::doc::JudgeConsensus| -> BTreeMap<String, seal_core::doc::ObligationStatus> {
            c.obligation_results
                .iter()
                .map(|o| (o.id.clone(), o.status))
                .collect()
        };
    let (b, a) = (map(before), map(after));
    let ids: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
    let changed = ids.iter().filter(|id| b.get(**id) != a.get(**id)).count();
    (ids.len(), changed)
}

/// The runs `--all` replays: every run with an `evidence.json` that does not say it is a
/// replay. A run whose evidence cannot be read is included, so that its replay reports it
/// (and the others go on).
pub async fn replayable_runs(store: &Store) -> Result<Vec<RunId>, StoreError> {
    let mut out = Vec::new();
    for run in store.runs().await?.runs {
        if is_replayable(store, &run).await? {
            out.push(run);
        }
    }
    Ok(out)
}

/// Whether `--all` replays `run` (see [`replayable_runs`]); `seal replay --all` asks it of
/// each listed run inside that run's job, not in a serial pass before the first replay.
pub async fn is_replayable(store: &Store, run: &RunId) -> Result<bool, StoreError> {
    match store.get_json::<Evidence>(&Key::evidence(run)).await {
        Ok(None) => Ok(false),
        Ok(Some((ev, _))) => Ok(ev.acceptance_mode != AcceptanceMode::HistoricalReplay),
        Err(e) if e.fault().is_environmental() => Err(e),
        Err(_) => Ok(true),
    }
}
