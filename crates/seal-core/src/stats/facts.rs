//! What `seal stats` reads from one verified run, reduced to the facts the figures need. The
//! loader fills these from the stored, verified documents; the aggregator consumes them one
//! run at a time. Pure data.

use crate::doc::{JudgeStatus, ObligationStatus};
use crate::vocab::Reason;

/// One decided run that verified.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub run_id: String,
    pub genre: String,
    /// `YYYY-MM-DD` of `finalPostguard.decidedAt` (UTC).
    pub day: String,
    pub outcome: String,
    pub action: String,
    pub reasons: Vec<Reason>,
    /// `parentRunId` of a `historical_replay` run; None for an original run.
    pub replay_of: Option<String>,
    /// roll-1 judge A `rawHash`: a stored replay copies it byte for byte, a live one does not.
    pub first_raw_a: Option<String>,
    pub cost_micro: u64,
    pub rolls: Vec<RollFacts>,
    /// `finalPostguard.decidedAt` as sealed, and as Unix nanoseconds (the queue's order).
    pub decided_at: String,
    pub decided_nanos: i128,
    /// Whether the run has a trusted review (verified under the trusted reviewer keys, logged).
    pub reviewed: bool,
    /// The latest trusted review's decision of each obligation it decides.
    pub human: std::collections::BTreeMap<String, crate::review::Status>,
    /// sha256 of the run's seal envelope, and (index, sha256) of each trusted review: what a
    /// signed reliability report names as its subjects.
    pub seal_sha256: String,
    pub review_sha256: Vec<(u64, String)>,
    /// The judge policies the run's judge calls name (`SlotMeta.policy`), sorted, once each:
    /// empty for a run judged before policies were logged.
    pub policies: Vec<crate::doc::PolicyRef>,
}

/// One roll of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RollFacts {
    pub roll_id: String,
    pub outcome: String,
    /// The guard passed and the judges were called.
    pub dispatched: bool,
    pub degraded: bool,
    pub cost_micro: u64,
    pub obligations: Vec<ObligationFacts>,
    pub slots: [SlotFacts; 2],
}

/// One obligation of a dispatched roll: both judges' raw category (index into
/// [`super::kappa::CATEGORIES`]), their normalized statuses, the consensus status, and the
/// result of the PlaySpec check when the obligation has one.
#[derive(Debug, Clone, PartialEq)]
pub struct ObligationFacts {
    pub id: String,
    pub a: usize,
    pub b: usize,
    pub a_status: JudgeStatus,
    pub b_status: JudgeStatus,
    pub consensus: ObligationStatus,
    pub check: Option<bool>,
}

/// One judge slot of a roll.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotFacts {
    pub slot: String,
    /// The answered model of the final attempt, else the requested one.
    pub model: String,
    /// `<prompt id>@<version>`.
    pub prompt: String,
    /// The endpoint host and the model requested (with the prompt: the judging set-up a
    /// served-model change is looked for within).
    pub host: String,
    pub requested: String,
    /// What the endpoint said it served in the accepted answer (None: no accepted answer).
    pub served: Option<Served>,
    pub failed_class: Option<String>,
    pub attempts: Vec<AttemptFacts>,
}

/// The served identity of an accepted answer: the response's `model` (the requested one when
/// the endpoint named none) and `system_fingerprint`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Served {
    pub model: String,
    pub fingerprint: Option<String>,
}

/// One attempt (SlotMeta/1).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFacts {
    pub latency_ms: u64,
    pub cost_micro: u64,
    pub error_class: Option<String>,
}

/// A run listed in the store that did not verify: counted and listed, never used.
#[derive(Debug, Clone, PartialEq)]
pub struct Unverified {
    pub run_id: String,
    pub problems: usize,
    pub first_problem: String,
}
