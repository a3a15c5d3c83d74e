//! Independence checks (docs/DESIGN.md §4), computed from what was recorded, never asserted. Pure.
//!
//! The inputs are the stored SlotMeta/1 and request of each slot's final attempt and the
//! refs and hashes of their raw answers; the roll, `seal verify` and replay all call
//! [`checks`] on the same stored objects, so the recorded booleans can be recomputed.

use serde_json::Value;

use crate::canonical::Hash;
use crate::doc::{ImageManifest, IndependenceChecks, SlotMeta};
use crate::judge::request;
use crate::key::Key;

/// The version of the independence rules (the preflight's and these checks): a judge policy
/// names it (`crate::policy`).
pub const RULES: &str = "independence/1";

/// What was recorded for one slot.
#[derive(Debug, Clone, Copy)]
pub struct SlotRecord<'a> {
    pub meta: Option<&'a SlotMeta>,
    pub raw_ref: &'a Key,
    pub raw_hash: &'a Hash,
    /// The stored request of the final attempt (None when no request was made).
    pub request: Option<&'a Value>,
}

fn dir(key: &str) -> &str {
    key.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

fn carries(r: &SlotRecord<'_>, package_hash: &Hash) -> bool {
    let meta_ok = r.meta.is_some_and(|m| &m.package_hash == package_hash);
    let request_ok =
        r.request.and_then(request::embedded_package_hash).as_ref() == Some(package_hash);
    meta_ok && request_ok
}

fn shows_manifest(r: &SlotRecord<'_>, manifest: &ImageManifest) -> bool {
    let Some(req) = r.request else { return false };
    let mut got = request::placeholders(req);
    got.sort();
    let want: Vec<String> = manifest.frames.iter().map(|f| f.hash.to_string()).collect();
    got == want
}

/// Whether the slot's final attempt was its accepted answer.
fn accepted(r: &SlotRecord<'_>) -> bool {
    r.meta.is_some_and(|m| m.accepted)
}

/// The checks of docs/DESIGN.md §4. `differentRawFile` is about answers: byte-identical
/// accepted answers mean a cache or proxy answered both judges; two failed slots that got
/// the same gateway error body (a 503 page, a 401 message) judged nothing, so their bytes
/// being equal says nothing about the independence of judgments.
pub fn checks(
    a: SlotRecord<'_>,
    b: SlotRecord<'_>,
    package_hash: &Hash,
    manifest: &ImageManifest,
) -> IndependenceChecks {
    let both = |f: &dyn Fn(&SlotMeta, &SlotMeta) -> bool| match (a.meta, b.meta) {
        (Some(x), Some(y)) => f(x, y),
        _ => false,
    };
    let model = |m: &SlotMeta| {
        m.model_answered
            .clone()
            .unwrap_or_else(|| m.model_requested.clone())
    };
    IndependenceChecks {
        different_logical_client: both(&|x, y| x.logical_client_id != y.logical_client_id),
        different_session: both(&|x, y| x.session_id != y.session_id),
        different_policy_seed: both(&|x, y| x.policy_seed != y.policy_seed),
        different_prompt_artifact: both(&|x, y| x.prompt_artifact.hash != y.prompt_artifact.hash),
        different_evidence_dir: dir(a.raw_ref.as_str()) != dir(b.raw_ref.as_str())
            && dir(dir(a.raw_ref.as_str())) != dir(dir(b.raw_ref.as_str())),
        different_raw_file: a.raw_ref != b.raw_ref
            && (a.raw_hash != b.raw_hash || !(accepted(&a) && accepted(&b))),
        same_judge_package: carries(&a, package_hash) && carries(&b, package_hash),
        same_image_manifest: shows_manifest(&a, manifest) && shows_manifest(&b, manifest),
        same_model: both(&|x, y| model(x) == model(y)),
    }
}
