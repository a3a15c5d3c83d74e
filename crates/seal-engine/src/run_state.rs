//! The phase of a run, loaded once per request and per CLI call: [`RunState::Open`] (header
//! stored, rolls being judged) or [`RunState::Decided`] (evidence sealed). Everything that adds
//! to a run (intake, a roll, `seal judge`, replay into an id) asks for an [`OpenRun`] first, so
//! a decided run refuses new bytes before any judge is called or anything is stored.

use seal_core::canonical::Hash;
use seal_core::doc::{Evidence, Outcome, Roll};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_store::{Key, Store, StoreError};

/// A run whose header is stored and which is not decided yet. Made only by [`RunState::load`]
/// (and [`RunState::decided_view`]): its fields are what the store held.
#[derive(Debug, Clone)]
pub struct OpenRun {
    run: RunId,
    header: Evidence,
    header_hash: Hash,
    /// The stored header's size in bytes.
    header_size: u64,
    /// The judged rolls (`roll.json` present), in order.
    rolls: Vec<Roll>,
    /// The sha256 of each stored `roll.json` as it was read, in the order of `rolls`.
    roll_hashes: Vec<Hash>,
}

impl OpenRun {
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn header(&self) -> &Evidence {
        &self.header
    }
    /// The sha256 of the stored header.
    pub fn header_hash(&self) -> &Hash {
        &self.header_hash
    }
    /// The stored header's size in bytes (what the JUDGING snapshot must make room for).
    pub fn header_size(&self) -> u64 {
        self.header_size
    }
    /// The judged rolls, in order.
    pub fn rolls(&self) -> &[Roll] {
        &self.rolls
    }
    /// The header and the judged rolls, taken out.
    pub(crate) fn into_parts(self) -> (Evidence, Vec<Roll>) {
        (self.header, self.rolls)
    }
    /// The same run as it stands with `rolls` judged (the postguard's view while it judges
    /// the rolls an interrupted finalize left pending).
    pub(crate) fn with_rolls(&self, rolls: Vec<Roll>) -> OpenRun {
        OpenRun {
            rolls,
            roll_hashes: Vec::new(),
            ..self.clone()
        }
    }
    /// The stored record of `roll` as this run was loaded, with the sha256 of its bytes (which
    /// its receipt must name before it counts as judged).
    pub(crate) fn stored_record(&self, roll: RollId) -> Option<(&Roll, &Hash)> {
        self.rolls
            .iter()
            .zip(&self.roll_hashes)
            .find(|(r, _)| r.roll_id == roll)
    }
    /// The outcomes of the judged rolls before `roll`.
    pub fn outcomes_before(&self, roll: RollId) -> Vec<Outcome> {
        self.rolls
            .iter()
            .filter(|r| r.roll_id < roll)
            .map(|r| r.roll_outcome)
            .collect()
    }
    pub fn judged(&self, roll: RollId) -> Option<&Roll> {
        self.rolls.iter().find(|r| r.roll_id == roll)
    }
}

/// A run whose evidence is stored (sealed or about to be). Made only by [`RunState::load`].
#[derive(Debug, Clone)]
pub struct DecidedRun {
    run: RunId,
    evidence: Evidence,
    evidence_hash: Hash,
}

impl DecidedRun {
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
    /// The sha256 of the stored evidence.
    pub fn evidence_hash(&self) -> &Hash {
        &self.evidence_hash
    }
    pub(crate) fn into_parts(self) -> (Evidence, Hash) {
        (self.evidence, self.evidence_hash)
    }
}

#[derive(Debug, Clone)]
pub enum RunState {
    /// Taking rolls.
    Open(OpenRun),
    /// A finalize stored the JUDGING snapshot (`judging.json`) and was interrupted, or is
    /// running: no more rolls; the next finalize decides the stored snapshot.
    Finalizing(OpenRun),
    Decided(DecidedRun),
}

#[derive(Debug, thiserror::Error)]
pub enum RunStateError {
    #[error("run {run}: not found: no header submitted")]
    NotFound { run: RunId },
    #[error("run {run}: already decided ({outcome}): nothing can be added to a decided run (seal verify {run})")]
    Decided { run: RunId, outcome: String },
    #[error(
        "run {run}: being finalized (its JUDGING snapshot is stored): no more rolls; finalize it"
    )]
    Finalizing { run: RunId },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A header, evidence or roll record stored under another run's or roll's key
    /// (`seal_core::bound`): planted, never loaded as this run's.
    #[error(transparent)]
    Planted(#[from] seal_core::bound::Unbound),
}

impl HasFault for RunStateError {
    fn fault(&self) -> Fault {
        match self {
            RunStateError::NotFound { .. }
            | RunStateError::Decided { .. }
            | RunStateError::Finalizing { .. } => Fault::Caller,
            RunStateError::Store(e) => e.fault(),
            RunStateError::Planted(_) => Fault::Corruption,
        }
    }
}

impl RunState {
    /// Loads the phase of `run` as the store holds it (every byte read and hashed): decided
    /// if `evidence.json` exists, else open if the header does. Each request of the daemon
    /// loads it once, under the run's lock, and hands it on (`tests/it/loads.rs` counts the
    /// reads).
    pub async fn load(store: &Store, run: &RunId) -> Result<RunState, RunStateError> {
        // On an object backend one listing of the run's folder answers which of the objects
        // below exist, instead of a request per absent one (issue 25: three of them per load
        // of an open run). A key it lacks is absent, as a read would have said; a key it names
        // is read as before.
        let listed = store
            .keys_within(&Key::run_dir(run), MAX_LISTED_RUN_OBJECTS)
            .await?;
        let maybe = |k: &Key| listed.as_ref().is_none_or(|l| l.contains(k));
        let evidence_key = Key::evidence(run);
        if maybe(&evidence_key) {
            if let Some((evidence, evidence_hash)) =
                store.get_json::<Evidence>(&evidence_key).await?
            {
                seal_core::bound::check(&evidence_key, &evidence)?;
                return Ok(RunState::Decided(DecidedRun {
                    run: run.clone(),
                    evidence,
                    evidence_hash,
                }));
            }
        }
        let header_key = Key::header(run);
        let header = match maybe(&header_key) {
            true => read_header(store, &header_key).await?,
            false => None,
        };
        let Some((header, header_hash, header_size)) = header else {
            return Err(RunStateError::NotFound { run: run.clone() });
        };
        seal_core::bound::check(&header_key, &header)?;
        let mut rolls = Vec::new();
        let mut roll_hashes = Vec::new();
        for roll in RollId::ALL {
            let key = Key::roll_file(run, roll, "roll.json");
            if !maybe(&key) {
                break;
            }
            match store.get_json::<Roll>(&key).await? {
                Some((r, hash)) => {
                    seal_core::bound::check(&key, &r)?;
                    rolls.push(r);
                    roll_hashes.push(hash);
                }
                None => break,
            }
        }
        let open = OpenRun {
            run: run.clone(),
            header,
            header_hash,
            header_size,
            rolls,
            roll_hashes,
        };
        let judging = Key::judging(run);
        let finalizing = match &listed {
            Some(l) => l.contains(&judging),
            None => store.exists(&judging).await?,
        };
        if finalizing {
            return Ok(RunState::Finalizing(open));
        }
        Ok(RunState::Open(open))
    }

    /// The header and judged rolls of a decided run, as an [`OpenRun`] is loaded (the
    /// derivation that re-proves its evidence starts from them); `None` without a header.
    pub(crate) async fn decided_view(
        store: &Store,
        run: &RunId,
    ) -> Result<Option<OpenRun>, RunStateError> {
        let header_key = Key::header(run);
        let Some((header, header_hash, header_size)) = read_header(store, &header_key).await?
        else {
            return Ok(None);
        };
        seal_core::bound::check(&header_key, &header)?;
        let (rolls, roll_hashes) = judged_rolls(store, run).await?.into_iter().unzip();
        Ok(Some(OpenRun {
            run: run.clone(),
            header,
            header_hash,
            header_size,
            rolls,
            roll_hashes,
        }))
    }

    /// The open run, or the refusal a decided run gets.
    pub fn open(self) -> Result<OpenRun, RunStateError> {
        match self {
            RunState::Open(o) => Ok(o),
            RunState::Finalizing(o) => Err(RunStateError::Finalizing { run: o.run }),
            RunState::Decided(d) => Err(decided_error(&d)),
        }
    }
}

impl RunState {
    /// The phase as the API names it: `JUDGING` (taking rolls), `FINALIZING` (the JUDGING
    /// snapshot is stored) or `DECIDED`.
    pub fn phase_name(&self) -> &'static str {
        match self {
            RunState::Open(_) => "JUDGING",
            RunState::Finalizing(_) => "FINALIZING",
            RunState::Decided(_) => "DECIDED",
        }
    }
    /// The judged rolls: the stored records of an open run, the evidence's of a decided one.
    pub fn rolls(&self) -> &[Roll] {
        match self {
            RunState::Open(o) | RunState::Finalizing(o) => o.rolls(),
            RunState::Decided(d) => &d.evidence.rolls,
        }
    }
    /// What the pipeline sends next (`roll-1`, `roll-2` or `finalize`); `None` once decided.
    /// The roll-order rule decides it from the last judged roll's outcome.
    pub fn next(&self) -> Option<&'static str> {
        match self {
            RunState::Decided(_) => None,
            RunState::Finalizing(_) => Some("finalize"),
            RunState::Open(o) => Some(match o.rolls().last() {
                None => "roll-1",
                Some(r) => match seal_core::merge::next_after(r.roll_id, r.roll_outcome) {
                    seal_core::merge::Next::Roll2 => "roll-2",
                    seal_core::merge::Next::Finalize => "finalize",
                },
            }),
        }
    }
}

/// The refusal for adding to a decided run.
pub fn decided_error(d: &DecidedRun) -> RunStateError {
    RunStateError::Decided {
        run: d.run.clone(),
        outcome: d
            .evidence
            .outcome
            .map(|o| o.to_string())
            .unwrap_or_else(|| "no outcome".into()),
    }
}

/// The stored header at `key`: parsed, with the sha256 and size of its bytes.
async fn read_header(
    store: &Store,
    key: &Key,
) -> Result<Option<(Evidence, Hash, u64)>, RunStateError> {
    let Some((bytes, hash)) = store.get_opt_hashed(key).await? else {
        return Ok(None);
    };
    let header: Evidence = seal_store::parse_stored(key, &bytes, store.doc_limit())?;
    Ok(Some((header, hash, bytes.len() as u64)))
}

/// More objects than a run of two rolls can hold (about 50, more with judge retries): a run
/// folder listing beyond it is not used (see [`RunState::load`]).
const MAX_LISTED_RUN_OBJECTS: usize = 2_000;

/// Rolls as stored in their folders (`roll.json`), in order, up to the first missing one;
/// a record stored under another roll's key is planted. Each with the sha256 of its bytes.
async fn judged_rolls(store: &Store, run: &RunId) -> Result<Vec<(Roll, Hash)>, RunStateError> {
    let mut rolls = Vec::new();
    for roll in RollId::ALL {
        let key = Key::roll_file(run, roll, "roll.json");
        match store.get_json::<Roll>(&key).await? {
            Some((r, hash)) => {
                seal_core::bound::check(&key, &r)?;
                rolls.push((r, hash))
            }
            None => break,
        }
    }
    Ok(rolls)
}
