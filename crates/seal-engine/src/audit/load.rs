//! Audit step 1: load what a roll record references, each object re-hashed against its
//! recorded sha256 and schema-checked, and note every key it binds.

use bytes::Bytes;
use serde_json::Value;
use std::collections::BTreeSet;

use super::{Audit, Problem};
use seal_core::bound::Bound;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RunId, Slot};
use seal_core::invariants::Checked;
use seal_core::judge::parse::evaluate_raw;
use seal_core::judge::{AttemptRecord, SlotRun};
use seal_core::validate::checked;
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store, Stored};

/// Everything audited about one roll, for callers that need the documents.
pub struct RollDocs {
    pub roll: Roll,
    pub proof: ProofPackage,
    pub consensus: JudgeConsensus,
}

/// One slot as stored: its normalized result, its parsed document's bytes, its attempts.
pub(super) struct LoadedSlot {
    pub result: JudgeResult,
    pub parsed_bytes: Bytes,
    pub run: SlotRun,
    /// The stored request of each attempt that sent one.
    pub requests: Vec<(u32, Value)>,
}

impl LoadedSlot {
    pub fn final_request(&self) -> Option<&Value> {
        let f = self.run.final_attempt()?;
        self.requests
            .iter()
            .find(|(k, _)| *k == f.attempt)
            .map(|(_, v)| v)
    }
}

/// One roll as stored.
pub(super) struct LoadedRoll {
    pub proof: ProofPackage,
    pub package: JudgePackage,
    pub package_bytes: Bytes,
    pub manifest: ImageManifest,
    pub reservation: CostReservation,
    pub consensus: JudgeConsensus,
    pub slots: [LoadedSlot; 2],
}

impl LoadedRoll {
    pub fn into_docs(self, r: &Roll) -> RollDocs {
        RollDocs {
            roll: r.clone(),
            proof: self.proof,
            consensus: self.consensus,
        }
    }
}

impl Audit {
    /// Reads a JSON document by the hash it is bound by and parses it (strictly) into a tree;
    /// None (with a problem) if unusable.
    async fn tree(&mut self, store: &Store, key: &Key, hash: &Hash) -> Option<(Value, Bytes)> {
        self.bound.insert(key.clone());
        let bytes = match store.get_verified(key, hash).await {
            Ok(b) => b,
            Err(e) => {
                self.store_error(e);
                return None;
            }
        };
        match seal_core::json::parse(&bytes, store.doc_limit()) {
            Ok(v) => Some((v, bytes)),
            Err(e) => {
                self.push(
                    AuditCheck::SchemaValid,
                    key.as_str(),
                    format!("not JSON: {e}"),
                );
                None
            }
        }
    }

    /// Reads a document of a known kind by its hash: schema and invariants checked and the
    /// typed value built from one parse ([`checked`]), and bound to its key
    /// ([`Audit::bound_to`]); None (with a problem) if unusable.
    async fn doc<T: Checked + Bound>(
        &mut self,
        store: &Store,
        key: &Key,
        hash: &Hash,
    ) -> Option<(T, Bytes)> {
        let (value, bytes) = self.tree(store, key, hash).await?;
        match checked::<T>(&value) {
            Ok(t) => {
                self.bound_to(key, &t);
                Some((t, bytes))
            }
            Err(findings) => {
                let first = findings.first().map(|f| f.to_string()).unwrap_or_default();
                self.push(
                    AuditCheck::SchemaValid,
                    key.as_str(),
                    format!(
                        "invalid {}: {} problems, first: {first}",
                        <T as Checked>::KIND.name(),
                        findings.len()
                    ),
                );
                None
            }
        }
    }
}

impl Audit {
    /// The one rule of `seal_core::bound`: a document whose run, roll, slot or attempt is not
    /// its key's was copied there (planted). Named with its key; the postguard refuses such a
    /// run (corrupt) rather than decide on it.
    pub(super) fn bound_to<T: Bound>(&mut self, key: &Key, doc: &T) {
        if let Err(e) = seal_core::bound::check(key, doc) {
            self.problems.push(Problem {
                corrupt: true,
                ..Problem::mismatch(
                    AuditCheck::Refs,
                    key.as_str(),
                    &e.named,
                    &e.claimed,
                    e.to_string(),
                )
            });
        }
    }
}

/// Loads the stored record of roll `r` (with the sha256 of its bytes) and every object `r`
/// references; `None` (with problems) for what is unusable.
pub(super) async fn roll(
    a: &mut Audit,
    store: &Store,
    run: &RunId,
    r: &Roll,
) -> (Option<(Roll, Hash)>, Option<LoadedRoll>) {
    // The record and the documents it names are read concurrently, each with an audit of
    // its own, and taken in that order (see [`documents`]).
    let record = async {
        let mut p = Audit::default();
        let got = record(&mut p, store, run, r).await;
        (p, got)
    };
    let docs = async {
        let mut p = Audit::default();
        let got = documents(&mut p, store, run, r).await;
        (p, got)
    };
    let ((rp, stored), (dp, docs)) = tokio::join!(record, docs);
    a.absorb(rp);
    a.absorb(dp);
    (stored, docs)
}

/// Every object roll `r` references; None (with problems) when one is unusable.
///
/// The parts of a roll are read concurrently (on S3 a GET each: about one round trip for the
/// roll instead of one per object), each part with an audit of its own. What the parts found
/// is then taken in the order of one sequential walk, which stops at the first unusable part:
/// the problems and the bound keys are exactly those of that walk.
async fn documents(a: &mut Audit, store: &Store, run: &RunId, r: &Roll) -> Option<LoadedRoll> {
    let proof = async {
        let mut p = Audit::default();
        let proof = p
            .doc::<ProofPackage>(store, &r.proof_package_ref, &r.proof_package_hash)
            .await;
        if let Some((proof, _)) = &proof {
            frames(&mut p, store, proof).await;
        }
        (p, proof.map(|(proof, _)| proof))
    };
    let package = async {
        let mut p = Audit::default();
        let got = async {
            let (package, bytes) = p
                .doc::<JudgePackage>(store, &r.judge_package_ref, &r.judge_package_hash)
                .await?;
            let manifest_key = Key::roll_file(run, r.roll_id, "image-manifest.json");
            let (manifest, _) = p
                .doc::<ImageManifest>(store, &manifest_key, &package.image_manifest_hash)
                .await?;
            Some((package, bytes, manifest))
        }
        .await;
        (p, got)
    };
    let reservation =
        part::<CostReservation>(store, &r.cost_reservation_ref, &r.cost_reservation_hash);
    let consensus = part::<JudgeConsensus>(store, &r.judge_consensus_ref, &r.judge_consensus_hash);
    let slot_part = |which| async move {
        let mut p = Audit::default();
        let got = slot(&mut p, store, run, r, which).await;
        (p, got)
    };
    let (proof, package, reservation, consensus, slot_a, slot_b) = tokio::join!(
        proof,
        package,
        reservation,
        consensus,
        slot_part(Slot::A),
        slot_part(Slot::B)
    );
    let proof = a.take(proof)?;
    let (package, package_bytes, manifest) = a.take(package)?;
    let reservation = a.take(reservation)?;
    let consensus = a.take(consensus)?;
    let slot_a = a.take(slot_a)?;
    let slot_b = a.take(slot_b)?;
    Some(LoadedRoll {
        proof,
        package,
        package_bytes,
        manifest,
        reservation,
        consensus,
        slots: [slot_a, slot_b],
    })
}

/// One document of a roll as a part of its concurrent load (see [`documents`]).
async fn part<T: Checked + Bound>(store: &Store, key: &Key, hash: &Hash) -> (Audit, Option<T>) {
    let mut p = Audit::default();
    let got = p.doc::<T>(store, key, hash).await.map(|(doc, _)| doc);
    (p, got)
}

impl Audit {
    /// What a part of the load found, after what was found before it; its result.
    fn take<T>(&mut self, (part, got): (Audit, Option<T>)) -> Option<T> {
        self.absorb(part);
        got
    }
}

/// The roll record as stored must be this roll (a swapped roll folder is caught here).
/// Returns it with the sha256 of its bytes.
async fn record(a: &mut Audit, store: &Store, run: &RunId, r: &Roll) -> Option<(Roll, Hash)> {
    let roll_key = Key::roll_file(run, r.roll_id, "roll.json");
    a.bound.insert(roll_key.clone());
    let limit = store.doc_limit();
    let stored = store.get_opt_hashed(&roll_key).await.and_then(|found| {
        found
            .map(|(bytes, hash)| {
                seal_store::parse_stored::<Roll>(&roll_key, &bytes, limit).map(|r| (r, hash))
            })
            .transpose()
    });
    if let Ok(Some((stored, _))) = &stored {
        a.bound_to(&roll_key, stored);
    }
    match stored {
        Ok(Some((stored, hash))) => {
            if &stored != r {
                a.push(
                    AuditCheck::Refs,
                    roll_key.as_str(),
                    "the stored roll record differs from the evidence's roll",
                );
            }
            return Some((stored, hash));
        }
        Ok(None) => a.push(
            AuditCheck::Refs,
            roll_key.as_str(),
            "the roll record is missing",
        ),
        Err(e) => a.push(
            AuditCheck::Refs,
            roll_key.as_str(),
            format!("unreadable roll record: {e}"),
        ),
    }
    None
}

/// Every frame blob of the proof package exists and hashes to its name.
async fn frames(a: &mut Audit, store: &Store, proof: &ProofPackage) {
    let mut seen = BTreeSet::new();
    for f in &proof.frames {
        if seen.insert(f.hash.clone()) {
            a.bound.insert(Key::cas(&f.hash));
            a.named.push(f.hash.clone());
            if let Err(e) = store.verify(&Key::cas(&f.hash), &f.hash).await {
                a.store_error(e);
            }
        }
    }
}

/// A slot's normalized result, parsed document and every attempt the result lists.
async fn slot(
    a: &mut Audit,
    store: &Store,
    run: &RunId,
    r: &Roll,
    slot: Slot,
) -> Option<LoadedSlot> {
    let sref = r.slot_ref(slot);
    let (result, _) = a
        .doc::<JudgeResult>(store, &sref.normalized_ref, &sref.result_hash)
        .await?;
    if result.slot != slot {
        a.mismatch(
            AuditCheck::Refs,
            &sref.normalized_ref,
            slot,
            result.slot,
            "normalized result of the other judge",
        );
    }
    let parsed_key = sref.parsed_ref.clone();
    a.bound.insert(parsed_key.clone());
    let parsed_bytes = match store.get_verified(&parsed_key, &sref.parsed_hash).await {
        Ok(b) => b,
        Err(e) => {
            a.store_error(e);
            return None;
        }
    };
    let mut attempts = Vec::new();
    let mut requests = Vec::new();
    for h in &result.attempts {
        if let Some((rec, request)) = attempt(a, store, run, r, slot, h).await {
            requests.extend(request.map(|v| (h.attempt, v)));
            attempts.push(rec);
        }
    }
    Some(LoadedSlot {
        result,
        parsed_bytes,
        run: SlotRun { slot, attempts },
        requests,
    })
}

/// One attempt: raw answer, SlotMeta and request, each by the hash the result binds.
async fn attempt(
    a: &mut Audit,
    store: &Store,
    run: &RunId,
    r: &Roll,
    slot: Slot,
    h: &AttemptHashes,
) -> Option<(AttemptRecord, Option<Value>)> {
    let key = |f: &str| Key::attempt_file(run, r.roll_id, slot, h.attempt, f);
    a.bound.insert(key("raw.json"));
    a.named.push(h.raw_hash.clone());
    let raw = match store.get_verified(&key("raw.json"), &h.raw_hash).await {
        Ok(b) => b,
        Err(e) => {
            a.store_error(e);
            return None;
        }
    };
    let (meta, _) = a
        .doc::<SlotMeta>(store, &key("meta.json"), &h.meta_hash)
        .await?;
    meta_checks(a, &meta, h, &key("raw.json"));
    let (request, request_stored) = match &h.request_hash {
        Some(rh) => match a.tree(store, &key("request.json"), rh).await {
            Some((v, bytes)) => {
                let stored = Stored {
                    key: key("request.json"),
                    hash: rh.clone(),
                    size: bytes.len() as u64,
                };
                (Some(v), Some(stored))
            }
            None => (None, None),
        },
        None => (None, None),
    };
    let record = AttemptRecord {
        attempt: h.attempt,
        request: request_stored,
        raw: Stored {
            key: key("raw.json"),
            hash: h.raw_hash.clone(),
            size: raw.len() as u64,
        },
        outcome: evaluate_raw(&raw, meta.http_status),
        meta,
        meta_hash: h.meta_hash.clone(),
    };
    Some((record, request))
}

/// The SlotMeta names this attempt's raw answer and request (that it is this attempt's, its
/// slot and number those of its folder, is the rule [`Audit::doc`] checks).
fn meta_checks(a: &mut Audit, meta: &SlotMeta, h: &AttemptHashes, raw_key: &Key) {
    if meta.raw_hash != h.raw_hash {
        a.mismatch(
            AuditCheck::Refs,
            format!("{}/meta.json", raw_key.dir()),
            &h.raw_hash,
            &meta.raw_hash,
            "meta names another raw answer",
        );
    }
    if meta.request_hash != h.request_hash {
        a.mismatch(
            AuditCheck::Refs,
            format!("{}/meta.json", raw_key.dir()),
            show(h.request_hash.as_ref()),
            show(meta.request_hash.as_ref()),
            "meta names another request",
        );
    }
}

fn show(h: Option<&Hash>) -> String {
    h.map(|h| h.to_string()).unwrap_or_else(|| "none".into())
}
