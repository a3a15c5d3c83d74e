//! Every stored document is bound to the key it is stored under.
//!
//! A document that names its run, roll, slot, attempt or review index says *where* it belongs;
//! the key it was read from says where it is. The rule, checked here and only here ([`check`]):
//! **every identity field a document carries equals the same part of the key it was read from,
//! wherever that key names the part.** A document whose fields disagree with its key was
//! copied or moved there by someone else (seal writes each document under the key its own
//! fields name): it is *planted*, named with the key, and never silently reinterpreted under
//! either identity.
//!
//! Why it matters: a MAC or a receipt authenticates bytes *for the identity written inside
//! them* (a cost reservation's MAC is keyed by its own `rollId`); without this rule, a genuine
//! document of roll 1 copied to `roll-2/` still authenticates, and roll 2 is judged under it.
//!
//! What the key names ([`Key::identity`]): `runs/<run>/…`, `receipts/<run>/…` and
//! `leases/<run>/…` name the run; a next segment `roll-<n>` the roll, then `judge-<s>` the slot,
//! then `attempt-<k>` the attempt; `runs/<run>/reviews/<n>.dsse.json` the review index. A
//! document at a key that does not name a part (a failure record under `cas/`, a slot's
//! `parsed.json`, which names no attempt) is not held to that part.

use crate::doc::{
    AttemptFailure, CostReservation, Evidence, ImageManifest, JudgeConsensus, JudgePackage,
    JudgeResult, ProofPackage, Roll, SlotMeta,
};
use crate::ids::{RollId, Slot};
use crate::key::{Key, REVIEWS};
use crate::receipt::Receipt;
use crate::review::ReviewStatement;
use crate::sealing::Statement;

/// One part of a stored object's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    Run(&'a str),
    /// The roll's number (`roll-2` is 2), so a stored roll number of 3 is compared too.
    Roll(u64),
    Slot(Slot),
    Attempt(u64),
    Review(u64),
}

impl Part<'_> {
    fn dimension(&self) -> usize {
        match self {
            Part::Run(_) => 0,
            Part::Roll(_) => 1,
            Part::Slot(_) => 2,
            Part::Attempt(_) => 3,
            Part::Review(_) => 4,
        }
    }
}

impl std::fmt::Display for Part<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Run(r) => write!(f, "run {r}"),
            Part::Roll(n) => write!(f, "roll-{n}"),
            Part::Slot(s) => write!(f, "judge-{s}"),
            Part::Attempt(k) => write!(f, "attempt-{k}"),
            Part::Review(n) => write!(f, "review {n}"),
        }
    }
}

/// What a key names: at most one part of each dimension.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity<'a> {
    parts: [Option<Part<'a>>; 5],
}

impl<'a> Identity<'a> {
    fn with(mut self, part: Part<'a>) -> Self {
        self.parts[part.dimension()] = Some(part);
        self
    }
    /// The part of `part`'s dimension this identity names, if any.
    pub fn get(&self, dimension: Part<'_>) -> Option<Part<'a>> {
        self.parts[dimension.dimension()]
    }
}

impl Key {
    /// The run, roll, slot, attempt and review index this key names (see the module's doc).
    pub fn identity(&self) -> Identity<'_> {
        identity_of(self.as_str())
    }
}

/// What the key spelled `key` names (a key or a document's `object` field).
fn identity_of(key: &str) -> Identity<'_> {
    let mut id = Identity::default();
    let mut parts = key.split('/');
    let (Some(top), Some(run)) = (parts.next(), parts.next()) else {
        return id;
    };
    if !matches!(top, "runs" | "receipts" | "leases") {
        return id;
    }
    id = id.with(Part::Run(run));
    let Some(third) = parts.next() else {
        return id;
    };
    if third == REVIEWS {
        // A review's key names its index only in the canonical spelling (`review_number`).
        if let Some(n) = parts
            .next()
            .and_then(|f| f.strip_suffix(".dsse.json"))
            .filter(|n| !n.is_empty() && (*n == "0" || !n.starts_with('0')))
            .and_then(|n| n.parse().ok())
        {
            id = id.with(Part::Review(n));
        }
        return id;
    }
    let Ok(roll) = RollId::parse(third) else {
        return id;
    };
    id = id.with(Part::Roll(roll.number()));
    let slot = match parts.next() {
        Some("judge-a") => Slot::A,
        Some("judge-b") => Slot::B,
        _ => return id,
    };
    id = id.with(Part::Slot(slot));
    if let Some(k) = parts
        .next()
        .and_then(|s| s.strip_prefix("attempt-"))
        .and_then(|k| k.parse().ok())
    {
        id = id.with(Part::Attempt(k));
    }
    id
}

/// A document kind whose fields name where it belongs.
pub trait Bound {
    /// The kind, for the refusal (`cost reservation`, `roll record`, …).
    const KIND: &'static str;
    /// Each identity field the document carries: its JSON name and the part it names.
    fn claims(&self) -> Vec<(&'static str, Part<'_>)>;
}

/// A document read from `key` whose fields name another place: planted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{key}: planted document: this {kind} says {field} {claimed}, but it is stored under \
     {named} (copied or moved from where it belongs; never read as either)"
)]
pub struct Unbound {
    /// The key it was read from.
    pub key: Key,
    pub kind: &'static str,
    /// The document's field that disagrees (`rollId`, `slot`, …).
    pub field: &'static str,
    /// What the field says, and what the key names.
    pub claimed: String,
    pub named: String,
}

/// The rule: every identity field `doc` carries equals the part of `key` of the same
/// dimension, wherever `key` names one (pure; the only place it is decided).
pub fn check<T: Bound>(key: &Key, doc: &T) -> Result<(), Unbound> {
    let named = key.identity();
    for (field, claimed) in doc.claims() {
        if let Some(part) = named.get(claimed) {
            if part != claimed {
                return Err(Unbound {
                    key: key.clone(),
                    kind: T::KIND,
                    field,
                    claimed: claimed.to_string(),
                    named: part.to_string(),
                });
            }
        }
    }
    Ok(())
}

impl Bound for CostReservation {
    const KIND: &'static str = "cost reservation";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("rollId", Part::Roll(self.roll_id.number()))]
    }
}

impl Bound for ProofPackage {
    const KIND: &'static str = "proof package";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("rollId", Part::Roll(self.roll_id.number()))]
    }
}

impl Bound for JudgeConsensus {
    const KIND: &'static str = "consensus";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("rollId", Part::Roll(self.roll_id.number()))]
    }
}

/// `roll.json`: both its `rollId` and its `roll` number.
impl Bound for Roll {
    const KIND: &'static str = "roll record";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![
            ("rollId", Part::Roll(self.roll_id.number())),
            ("roll", Part::Roll(self.roll)),
        ]
    }
}

impl Bound for SlotMeta {
    const KIND: &'static str = "attempt meta";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![
            ("slot", Part::Slot(self.slot)),
            ("attempt", Part::Attempt(u64::from(self.attempt))),
        ]
    }
}

impl Bound for AttemptFailure {
    const KIND: &'static str = "attempt failure record";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![
            ("slot", Part::Slot(self.slot)),
            ("attempt", Part::Attempt(u64::from(self.attempt))),
        ]
    }
}

impl Bound for JudgeResult {
    const KIND: &'static str = "normalized result";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("slot", Part::Slot(self.slot))]
    }
}

/// The blinded package and its image manifest name no run, roll or slot (blinding keeps
/// identities out of what judges see): the roll record binds them by sha256 alone.
impl Bound for JudgePackage {
    const KIND: &'static str = "judge package";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        Vec::new()
    }
}

impl Bound for ImageManifest {
    const KIND: &'static str = "image manifest";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        Vec::new()
    }
}

/// The header, the JUDGING snapshot and the DECIDED evidence (one document type).
impl Bound for Evidence {
    const KIND: &'static str = "run document";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("runId", Part::Run(&self.run_id))]
    }
}

/// A seal's statement: its predicate's run.
impl Bound for Statement {
    const KIND: &'static str = "seal statement";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![("predicate.runId", Part::Run(&self.predicate.run_id))]
    }
}

impl Bound for ReviewStatement {
    const KIND: &'static str = "review";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        vec![
            ("predicate.runId", Part::Run(&self.predicate.run_id)),
            (
                "predicate.reviewIndex",
                Part::Review(self.predicate.review_index),
            ),
        ]
    }
}

/// A receipt at `receipts/<run>/…` vouches for `runs/<run>/…`: its `runId` and every part
/// its `object` names are held to its own key (which mirrors the object's).
impl Bound for Receipt {
    const KIND: &'static str = "receipt";
    fn claims(&self) -> Vec<(&'static str, Part<'_>)> {
        let mut claims = vec![("runId", Part::Run(self.run_id.as_str()))];
        let object = identity_of(&self.object);
        claims.extend(object.parts.into_iter().flatten().map(|p| ("object", p)));
        claims
    }
}

#[cfg(test)]
mod tests;
