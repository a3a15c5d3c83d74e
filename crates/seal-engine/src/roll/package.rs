//! Stage 2: the ONE blinded judge package of a roll and its image manifest (both derived from
//! the header, the brief and the proof package by [`seal_core::blinding`], stored together).

use bytes::Bytes;

use super::guard::Guarded;
use super::{internal, put_derived, JudgingError};
use seal_core::blinding;
use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::doc::*;
use seal_core::vocab::GuardCheck;
use seal_store::{Key, Store, Stored};

pub(super) struct Packaged {
    pub manifest: ImageManifest,
    pub package: JudgePackage,
    /// The canonical bytes both judges are sent.
    pub package_bytes: Bytes,
    pub package_hash: Hash,
    pub package_stored: Stored,
}

pub(super) async fn build(store: &Store, g: &Guarded) -> Result<Packaged, JudgingError> {
    let (run, roll) = (&g.run, g.roll);
    let manifest = blinding::image_manifest(g.frames.entries.clone());
    let (_, manifest_hash) = canonical_with_hash(&manifest).map_err(|e| internal(run, roll, e))?;
    let package = blinding::judge_package(&g.header, &g.brief_text, &g.proof, &manifest_hash);
    let (package_canonical, computed_hash) =
        canonical_with_hash(&package).map_err(|e| internal(run, roll, e))?;
    let manifest_key = Key::roll_file(run, roll, "image-manifest.json");
    let package_key = Key::roll_file(run, roll, "judge-package.json");
    // Both are pure functions of the authenticated header, brief and proof package: a stored
    // package other than the one derived here was never built by seal, and is never sent.
    let (manifest_stored, package_stored) = tokio::try_join!(
        put_derived(store, &manifest_key, &manifest),
        put_derived(store, &package_key, &package)
    )?;
    if manifest_stored.hash != manifest_hash || package_stored.hash != computed_hash {
        return Err(internal(
            run,
            roll,
            "a derived document hashed differently when stored",
        ));
    }
    Ok(Packaged {
        manifest,
        package,
        package_bytes: Bytes::from(package_canonical),
        package_hash: package_stored.hash.clone(),
        package_stored,
    })
}

/// The roll guard's `blinding` check: the one blinding predicate (`blinding::guard_check`, the
/// same the postguard and `seal verify` run on the stored package) on the bytes both judges
/// would be sent. `None` when the package passes; a failed check blocks the roll.
pub(super) fn blinding_check(g: &Guarded, p: &Packaged) -> Option<Check<GuardCheck>> {
    blinding::guard_check(&p.package_bytes, &g.header, &g.proof)
}
