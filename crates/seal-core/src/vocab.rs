//! The words seal writes into documents, as types: roll errors, guard checks, judge error
//! classes, decision reasons, independence checks and the checks of the audit (postguard,
//! `seal verify`, the log view). Each has one `Display` (how it is written) and one `FromStr`
//! (how it is read back), so a word is never `format!`ed on one side and `split_once`d on the
//! other. Documents keep them as strings (the schemas say so); code holds them typed.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

use crate::canonical::Hash;
use crate::ids::Slot;

/// A word that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {shown:?}: not a known value")]
pub struct UnknownWord {
    pub what: &'static str,
    pub shown: String,
}

fn unknown(what: &'static str, s: &str) -> UnknownWord {
    UnknownWord {
        what,
        shown: s.chars().take(80).collect(),
    }
}

/// `words` as written, separated by `sep` (what `[String]::join` gives for their strings).
pub fn join<W: fmt::Display>(words: &[W], sep: &str) -> String {
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(&w.to_string());
    }
    out
}

/// Implements `Display`, `FromStr` and string serde for an enum of fixed words.
macro_rules! words {
    ($(#[$m:meta])* $name:ident, $what:literal { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<Self, UnknownWord> {
                match s { $($text => Ok($name::$variant),)+ _ => Err(unknown($what, s)) }
            }
        }
        string_serde!($name);
    };
}

/// Serde as the `Display` string, parsed back with `FromStr`.
macro_rules! string_serde {
    ($name:ident) => {
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

words!(
    /// The checks of a roll guard, made before any judge is called (docs/DESIGN.md §5).
    GuardCheck, "guard check" {
        Header = "header",
        BriefHash = "brief_hash",
        PlaySpecFresh = "play_spec_fresh",
        RollOrder = "roll_order",
        Blobs = "blobs",
        ImagesWithinLimit = "images_within_limit",
        /// Recorded only when it fails: the built package breaks the blinding rule
        /// (`blinding::guard_check`), so it is never sent.
        Blinding = "blinding",
        IndependencePreflight = "independence_preflight",
        Budget = "budget",
    }
);

impl GuardCheck {
    /// The submitted document whose sha256 this check's detail names, so that the sealed
    /// roll binds the exact header and play-spec it was judged under.
    pub fn bound_document(self) -> Option<&'static str> {
        match self {
            GuardCheck::Header => Some("header.json"),
            GuardCheck::PlaySpecFresh => Some("play-spec.json"),
            _ => None,
        }
    }

    /// The detail text that binds `hash` (`header.json sha256 <hex>[: note]`).
    pub fn binding_detail(self, hash: &Hash, note: Option<&str>) -> String {
        let doc = self.bound_document().unwrap_or("document");
        match note {
            Some(n) => format!("{doc} sha256 {hash}: {n}"),
            None => format!("{doc} sha256 {hash}"),
        }
    }

    /// The sha256 a detail written by [`GuardCheck::binding_detail`] names, if any.
    pub fn bound_hash(self, detail: &str) -> Option<Hash> {
        let rest = detail
            .strip_prefix(self.bound_document()?)?
            .strip_prefix(" sha256 ")?;
        Hash::parse(rest.get(..64)?).ok()
    }
}

words!(
    /// How a judge attempt failed (docs/DESIGN.md §4). Recorded in SlotMeta/1, attempt failure
    /// records and `slotFailed.errorClass`.
    ErrorClass, "judge error class" {
        /// The request could not be built (a bug or a config fault).
        RequestBuild = "request_build",
        Timeout = "timeout",
        Connect = "connect",
        Transport = "transport",
        ConnectionReset = "connection_reset",
        ResponseTooLarge = "response_too_large",
        Http408 = "http_408",
        Http429 = "http_429",
        Http4xx = "http_4xx",
        Http5xx = "http_5xx",
        BodyNotJson = "body_not_json",
        ProviderError = "provider_error",
        NoChoices = "no_choices",
        Refusal = "refusal",
        Truncated = "truncated",
        EmptyContent = "empty_content",
        NotJson = "not_json",
        NotJsonObject = "not_json_object",
        MultipleJson = "multiple_json",
        SchemaMismatch = "schema_mismatch",
        DuplicateObligation = "duplicate_obligation",
        /// The roll guard blocked the roll: the slot was never called.
        NotDispatched = "not_dispatched",
        /// No attempt is recorded for the slot.
        NoAttempt = "no_attempt",
        /// The roll was reserved under another judge configuration (a restart with a changed
        /// model, prompt or endpoint while the roll was in flight): the slot's next attempt is
        /// not sent under the new configuration and the slot ends here (docs/DESIGN.md §2).
        ConfigChanged = "config_changed",
    }
);

impl ErrorClass {
    /// Whether another attempt can help. Client errors other than 408/429 are configuration
    /// faults (bad key, unknown model) that a retry cannot fix; an unbuildable request or a
    /// blocked roll is not a judge failure at all.
    pub fn is_retryable(self) -> bool {
        !matches!(
            self,
            ErrorClass::Http4xx
                | ErrorClass::RequestBuild
                | ErrorClass::NotDispatched
                | ErrorClass::NoAttempt
                | ErrorClass::ConfigChanged
        )
    }

    /// Failures before any HTTP answer (no `raw.json` from the judge, a transport record).
    pub fn is_transport(self) -> bool {
        matches!(
            self,
            ErrorClass::Timeout
                | ErrorClass::Connect
                | ErrorClass::Transport
                | ErrorClass::ConnectionReset
                | ErrorClass::ResponseTooLarge
                | ErrorClass::RequestBuild
                | ErrorClass::ConfigChanged
        )
    }
}

words!(
    /// The required independence checks of a roll (docs/DESIGN.md §5), as named in
    /// `independenceChecks` and in `independence:<check>` roll errors. `sameModel` is recorded
    /// only, never required, so it is not one of them.
    IndependenceCheck, "independence check" {
        DifferentLogicalClient = "differentLogicalClient",
        DifferentSession = "differentSession",
        DifferentPolicySeed = "differentPolicySeed",
        DifferentPromptArtifact = "differentPromptArtifact",
        DifferentEvidenceDir = "differentEvidenceDir",
        DifferentRawFile = "differentRawFile",
        SameJudgePackage = "sameJudgePackage",
        SameImageManifest = "sameImageManifest",
    }
);

words!(
    /// What an audit of stored objects checks, each named in its problems: the postguard's
    /// checks (`finalPostguard.checks[].id`, `postguard_<check>` reasons), those `seal verify`
    /// adds on a sealed run, and those of the transparency log's view and its witnesses.
    AuditCheck, "audit check" {
        /// Every referenced object exists and hashes to its record.
        Refs = "refs_resolve",
        SchemaValid = "schema_valid",
        Normalization = "normalization_recomputes",
        Consensus = "consensus_recomputes",
        Independence = "independence",
        Blinding = "blinding",
        Cost = "cost_within_budget",
        Mirror = "source_roll_mirrored",
        Invariants = "invariants",
        /// `seal verify`: the DSSE signature of the seal.
        Signature = "signature",
        /// `seal verify`: the seal's subject is the stored evidence.
        SubjectDigest = "subject_digest",
        /// `seal verify`: the seal's predicate is the one derived from the evidence.
        Predicate = "predicate",
        /// `seal verify`: the evidence is a readable, valid, DECIDED document.
        Evidence = "evidence",
        /// `seal verify`: the evidence is of the run it is stored under.
        RunId = "run_id",
        /// `seal verify`: the JUDGING snapshot the postguard decided from.
        JudgingSnapshot = "judging_snapshot",
        /// An entry object is missing, unreadable or not a canonical entry.
        LogEntries = "log_entries",
        /// An entry past every trusted checkpoint that does not authenticate as this log's
        /// (no `auth`, or one not by a trusted key for this origin and index): planted.
        PlantedLogEntry = "planted_log_entry",
        /// A checkpoint is missing, unsigned, or commits to entries the store lacks.
        LogCheckpoint = "log_checkpoint",
        /// A stored hash tile is not the hashes of the log's entries, or one a reader of the
        /// latest checkpoint needs is missing.
        LogTiles = "log_tiles",
        /// A leaf of a run that the latest checkpoint covers has no pointer
        /// (`log/runs/<run>/<index>`), so a reader of that run alone would not find it.
        LogPointers = "log_pointers",
        /// Two signed trees of one size with different roots.
        LogFork = "log_fork",
        /// The log is not an append-only extension of an older checkpoint (rollback, rewrite).
        LogConsistency = "log_consistency",
        /// A logged run is gone from the store.
        RunMissing = "run_missing",
        /// A logged run's seal is not stored (its logged evidence is).
        SealMissing = "seal_missing",
        /// A logged review is not stored.
        ReviewMissing = "review_missing",
        /// A logged reliability report is not stored, or not as the bytes logged.
        ReportMissing = "report_missing",
        /// A logged run's evidence or seal is not the one logged.
        RunReplaced = "run_replaced",
        /// A sealed run in the store is not in the log.
        RunUnlogged = "run_unlogged",
        /// A run appears in the log more than once (judged again under the same id).
        RunRelogged = "run_relogged",
        /// `seal verify`: the run's seal is not proven included in the latest checkpoint.
        LogInclusion = "log_inclusion",
        /// N of M witnesses cosigned the checkpoint relied on.
        LogWitness = "log_witness",
        /// A review's envelope: one signature, by a trusted reviewer key (never a seal key),
        /// that verifies; stored as the canonical bytes seal wrote.
        ReviewSignature = "review_signature",
        /// A review's subjects are the run's evidence and seal, byte for byte.
        ReviewSubject = "review_subject",
        /// A review decides only obligations the run has, each once.
        ReviewContent = "review_content",
        /// A review is in the transparency log and in its run's chain of reviews.
        ReviewLog = "review_log",
        /// `seal verify`: the judge policy a run's attempts name was registered in the log
        /// before the run's first judge call.
        JudgePolicy = "judge_policy",
    }
);

impl AuditCheck {
    /// The checks of the finalPostguard, in the order `finalPostguard.checks` lists them
    /// (the order is stored: it is never the enum's `Ord`).
    pub const POSTGUARD: [AuditCheck; 9] = [
        AuditCheck::Refs,
        AuditCheck::SchemaValid,
        AuditCheck::Normalization,
        AuditCheck::Consensus,
        AuditCheck::Independence,
        AuditCheck::Blinding,
        AuditCheck::Cost,
        AuditCheck::Mirror,
        AuditCheck::Invariants,
    ];

    /// Whether the postguard records this check (and may name it in a `postguard_` reason).
    pub fn is_postguard(self) -> bool {
        AuditCheck::POSTGUARD.contains(&self)
    }
}

/// Why a roll is not a clean two-judge roll, as written in `rolls[i].errors`:
/// `guard:<check>`, `judge-<slot>:<errorClass>`, `independence:<check>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RollError {
    /// A guard check failed: no judge was called.
    Guard(GuardCheck),
    /// A judge slot has no valid answer after all its attempts.
    Judge { slot: Slot, class: ErrorClass },
    /// A required independence check is false: the roll is void.
    Independence(IndependenceCheck),
}

impl fmt::Display for RollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollError::Guard(c) => write!(f, "guard:{c}"),
            RollError::Judge { slot, class } => write!(f, "judge-{slot}:{class}"),
            RollError::Independence(c) => write!(f, "independence:{c}"),
        }
    }
}

impl FromStr for RollError {
    type Err = UnknownWord;
    fn from_str(s: &str) -> Result<RollError, UnknownWord> {
        let bad = || unknown("roll error", s);
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        match kind {
            "guard" => Ok(RollError::Guard(rest.parse()?)),
            "independence" => Ok(RollError::Independence(rest.parse()?)),
            "judge-a" => Ok(RollError::Judge {
                slot: Slot::A,
                class: rest.parse()?,
            }),
            "judge-b" => Ok(RollError::Judge {
                slot: Slot::B,
                class: rest.parse()?,
            }),
            _ => Err(bad()),
        }
    }
}
string_serde!(RollError);

fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The infrastructure cause behind an `infra_<cause>` reason.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InfraCause {
    /// The cost reservation would have exceeded the run budget.
    Budget,
    /// Another guard check blocked the roll.
    Guard(GuardCheck),
    /// A required independence check failed: the roll is void.
    Independence,
    /// Both judges failed.
    JudgesFailed,
    /// One judge failed and the other would have passed the run alone (`finalPostguard/1`).
    SingleJudge,
    /// The judge of this slot failed (no valid answer after its attempts), so the run could
    /// not be decided by both: `finalPostguard/2` says so instead of `obligation_disputed`.
    JudgeUnavailable(Slot),
}

impl fmt::Display for InfraCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InfraCause::Budget => f.write_str("budget"),
            InfraCause::Guard(c) => write!(f, "guard_{c}"),
            InfraCause::Independence => f.write_str("independence"),
            InfraCause::JudgesFailed => f.write_str("judges_failed"),
            InfraCause::SingleJudge => f.write_str("single_judge"),
            InfraCause::JudgeUnavailable(slot) => write!(f, "judge_{slot}_unavailable"),
        }
    }
}

impl FromStr for InfraCause {
    type Err = UnknownWord;
    fn from_str(s: &str) -> Result<InfraCause, UnknownWord> {
        match s {
            "budget" => Ok(InfraCause::Budget),
            "independence" => Ok(InfraCause::Independence),
            "judges_failed" => Ok(InfraCause::JudgesFailed),
            "single_judge" => Ok(InfraCause::SingleJudge),
            "judge_a_unavailable" => Ok(InfraCause::JudgeUnavailable(Slot::A)),
            "judge_b_unavailable" => Ok(InfraCause::JudgeUnavailable(Slot::B)),
            _ => match s.strip_prefix("guard_") {
                Some(c) => Ok(InfraCause::Guard(c.parse()?)),
                None => Err(unknown("infra cause", s)),
            },
        }
    }
}

impl InfraCause {
    /// The cause a roll error amounts to, if it is one on its own (a single failed judge is
    /// not: only both failing is).
    pub fn of(e: &RollError) -> Option<InfraCause> {
        match e {
            RollError::Guard(GuardCheck::Budget) => Some(InfraCause::Budget),
            RollError::Guard(c) => Some(InfraCause::Guard(*c)),
            RollError::Independence(_) => Some(InfraCause::Independence),
            RollError::Judge { .. } => None,
        }
    }
}

/// One reason of a decision (`decision.reasons`, sorted in the document).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    Accept,
    ObligationFailed(String),
    ObligationDisputed(String),
    FloorFailed(String),
    Infra(InfraCause),
    /// A postguard check failed.
    Postguard(AuditCheck),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Accept => f.write_str("accept"),
            Reason::ObligationFailed(id) => write!(f, "obligation_failed:{id}"),
            Reason::ObligationDisputed(id) => write!(f, "obligation_disputed:{id}"),
            Reason::FloorFailed(id) => write!(f, "floor_failed:{id}"),
            Reason::Infra(c) => write!(f, "infra_{c}"),
            Reason::Postguard(c) => write!(f, "postguard_{c}"),
        }
    }
}

impl FromStr for Reason {
    type Err = UnknownWord;
    fn from_str(s: &str) -> Result<Reason, UnknownWord> {
        let bad = || unknown("decision reason", s);
        if s == "accept" {
            return Ok(Reason::Accept);
        }
        if let Some((kind, id)) = s.split_once(':') {
            if !is_id(id) {
                return Err(bad());
            }
            return match kind {
                "obligation_failed" => Ok(Reason::ObligationFailed(id.into())),
                "obligation_disputed" => Ok(Reason::ObligationDisputed(id.into())),
                "floor_failed" => Ok(Reason::FloorFailed(id.into())),
                _ => Err(bad()),
            };
        }
        if let Some(c) = s.strip_prefix("infra_") {
            return Ok(Reason::Infra(c.parse()?));
        }
        match s.strip_prefix("postguard_").map(str::parse::<AuditCheck>) {
            Some(Ok(c)) if c.is_postguard() => Ok(Reason::Postguard(c)),
            _ => Err(bad()),
        }
    }
}
string_serde!(Reason);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_itself() {
        let mut errors: Vec<RollError> = GuardCheck::ALL
            .iter()
            .map(|c| RollError::Guard(*c))
            .collect();
        for class in ErrorClass::ALL {
            for slot in [Slot::A, Slot::B] {
                errors.push(RollError::Judge {
                    slot,
                    class: *class,
                });
            }
        }
        errors.extend(
            IndependenceCheck::ALL
                .iter()
                .map(|c| RollError::Independence(*c)),
        );
        for e in errors {
            assert_eq!(e.to_string().parse::<RollError>(), Ok(e.clone()), "{e}");
        }
        let mut reasons = vec![
            Reason::Accept,
            Reason::ObligationFailed("core.loop".into()),
            Reason::ObligationDisputed("core.loop".into()),
            Reason::FloorFailed("floor".into()),
            Reason::Postguard(AuditCheck::Refs),
            Reason::Infra(InfraCause::Budget),
            Reason::Infra(InfraCause::Independence),
            Reason::Infra(InfraCause::JudgesFailed),
            Reason::Infra(InfraCause::SingleJudge),
        ];
        reasons.extend(
            GuardCheck::ALL
                .iter()
                .map(|c| Reason::Infra(InfraCause::Guard(*c))),
        );
        for r in reasons {
            assert_eq!(r.to_string().parse::<Reason>(), Ok(r.clone()), "{r}");
        }
    }

    #[test]
    fn unknown_words_are_refused() {
        for bad in [
            "guard:nope",
            "judge-c:timeout",
            "judge-a:",
            "independence:",
            "independence:sameModel",
            "x",
            "",
        ] {
            assert!(bad.parse::<RollError>().is_err(), "{bad}");
        }
        for bad in [
            "infra_nope",
            "obligation_failed:",
            "postguard_",
            "postguard_signature",
            "postguard_nope",
            "accepted",
            "obligation_failed:a b",
        ] {
            assert!(bad.parse::<Reason>().is_err(), "{bad}");
        }
        assert!(!ErrorClass::Http4xx.is_retryable());
        assert!(ErrorClass::Http429.is_retryable());
    }
}
