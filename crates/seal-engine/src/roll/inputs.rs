//! A roll's authenticated inputs, made once and handed on: the header the open run was loaded
//! with, vouched for by this deployment's receipt, and the roll's proof package with its own.
//! Made either from what intake has just accepted under the run's lock ([`RollInputs::accepted`]:
//! `POST …/rolls/{n}`, where intake required the header's receipt and stored the package with a
//! receipt moments ago) or by one authenticated load ([`RollInputs::load`]: a roll judged from
//! the command line, resumed, or re-judged by the postguard). The guard takes them from here
//! instead of reading and checking them again. (The postguard's final audit still re-reads
//! everything on purpose.)

use seal_core::canonical::Hash;
use seal_core::doc::ProofPackage;
use seal_core::ids::RollId;
use seal_core::key::Stored;
use seal_store::Key;

use super::JudgingError;
use crate::engine::Engine;
use crate::notary::ReceiptKind;
use crate::run_state::OpenRun;

/// See the module doc. Only the two constructors make one.
pub struct RollInputs {
    pub(super) roll: RollId,
    pub(super) proof: ProofPackage,
    pub(super) proof_key: Key,
    pub(super) proof_hash: Hash,
}

impl RollInputs {
    /// From a proof package intake has just accepted for `roll` (`stored`: where it was stored
    /// and the sha256 of its bytes, the submission's canonical bytes), on a run whose header
    /// receipt intake required.
    pub(crate) fn accepted(roll: RollId, proof: ProofPackage, stored: &Stored) -> RollInputs {
        RollInputs {
            roll,
            proof,
            proof_key: stored.key.clone(),
            proof_hash: stored.hash.clone(),
        }
    }

    /// One authenticated load: the header's receipt must vouch for the header `open` was
    /// loaded with, and the stored proof package of `roll` must have a receipt of its own.
    pub(crate) async fn load(
        engine: &Engine,
        open: &OpenRun,
        roll: RollId,
    ) -> Result<RollInputs, JudgingError> {
        let store = &engine.store;
        let run = open.run();
        let proof_key = Key::roll_file(run, roll, "proof-package.json");
        let Some((proof, proof_hash)) = store.get_json::<ProofPackage>(&proof_key).await? else {
            return Err(JudgingError::NoProofPackage {
                run: run.clone(),
                roll,
            });
        };
        // Only what this deployment accepted is judged: a swapped or planted input is named
        // here, before anything is derived from it or any judge is paid.
        let notary = &engine.notary;
        notary.require_header(store, open).await?;
        notary
            .require(store, ReceiptKind::ProofPackage, &proof_key, &proof_hash)
            .await?;
        Ok(RollInputs {
            roll,
            proof,
            proof_key,
            proof_hash,
        })
    }
}
