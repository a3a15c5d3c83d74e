//! The pure rules of admission (what the engine's intake applies before it stores anything):
//! a proof package parsed once ([`ProofSubmission`]), the one answer to "the same submission
//! again?" ([`same_submission`]), the provenance a submitter may claim, whether a play-spec fits
//! its header, and the room a run's snapshot needs. The CLI's run folder and the HTTP API both
//! come through them.

use bytes::Bytes;
use serde_json::Value;

use crate::canonical::{canonical_value_bytes, Hash};
use crate::contracts::{Finding, Kind};
use crate::doc::*;
use crate::ids::{RollId, RunId};
use crate::limits::{check_package, OverLimit, PackageLimits};
use crate::validate::checked;

/// A proof package as submitted, parsed once: its element bounds counted on the raw bytes, the
/// strict parse, its schema and cross-field invariants, the typed package, and the canonical
/// bytes (what is stored) with their sha256. Made only by [`ProofSubmission::parse`].
#[derive(Debug, Clone)]
pub struct ProofSubmission {
    package: ProofPackage,
    canonical: Bytes,
    hash: Hash,
}

/// Why submitted bytes are not a proof package.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SubmissionError {
    /// More events, actions or frames than the daemon admits.
    #[error(transparent)]
    OverLimit(#[from] OverLimit),
    #[error("{0}")]
    Json(String),
    #[error("invalid {kind}: {}", findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid {
        kind: &'static str,
        findings: Vec<Finding>,
    },
}

impl ProofSubmission {
    /// Parses submitted bytes: the element bounds of `limits` first (a streaming count that
    /// allocates nothing per element; `None` for an operator's run folder, which is read within
    /// the document limit only), then the strict parse within `doc_limit`, the schema and
    /// invariants of ProofPackage/1, the typed package and its canonical bytes.
    pub fn parse(
        bytes: &[u8],
        limits: Option<&PackageLimits>,
        doc_limit: u64,
    ) -> Result<ProofSubmission, SubmissionError> {
        if let Some(l) = limits {
            check_package(bytes, l)?;
        }
        let json = |e: &dyn std::fmt::Display| SubmissionError::Json(e.to_string());
        let doc = crate::json::parse(bytes, doc_limit).map_err(|e| json(&e))?;
        // Schema, invariants and the typed package from one pass over the tree.
        let package =
            checked::<ProofPackage>(&doc).map_err(|findings| SubmissionError::Invalid {
                kind: Kind::ProofPackage.name(),
                findings,
            })?;
        let canonical = canonical_value_bytes(&doc).map_err(|e| json(&e))?;
        Ok(ProofSubmission {
            package,
            hash: Hash::of(&canonical),
            canonical: Bytes::from(canonical),
        })
    }

    pub fn package(&self) -> &ProofPackage {
        &self.package
    }

    /// The roll the package says it is for.
    pub fn roll_id(&self) -> RollId {
        self.package.roll_id
    }

    /// The bytes stored for it (RFC 8785 canonical).
    pub fn canonical(&self) -> &Bytes {
        &self.canonical
    }

    /// The sha256 of [`ProofSubmission::canonical`].
    pub fn hash(&self) -> &Hash {
        &self.hash
    }
}

/// Whether a submission whose canonical bytes hash to `submitted` is the document stored with
/// sha256 `stored`. Documents are compared in canonical form only (key order and whitespace
/// are not the document), so a client that re-serializes the same package retries the same
/// submission. The one answer to "the same submission again?": a roll retried over HTTP, a
/// run folder judged again (its header and its proof packages).
pub fn same_submission(submitted: &Hash, stored: &Hash) -> bool {
    submitted == stored
}

/// Who submits a header, which decides what provenance it may claim. Replay and legacy
/// provenance are facts only seal asserts: `historical_replay` headers and `<id>.replay-<n>`
/// run ids are made by `seal replay` alone; `legacy-adapted` headers by `seal adapt`, whose
/// run folders the operator judges with `seal judge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The pipeline, over the HTTP API: native runs only.
    Pipeline,
    /// An operator's run folder (`seal judge`): native or adapted runs.
    Operator,
    /// `seal replay`, building a `historical_replay` run.
    Replay,
}

/// What provenance `origin` may not claim.
pub fn provenance_problem(origin: Origin, run: &RunId, h: &Evidence) -> Option<String> {
    let replay_id = run.is_replay_id();
    match origin {
        Origin::Replay => (h.acceptance_mode != AcceptanceMode::HistoricalReplay)
            .then(|| "a replay header must be historical_replay".to_string()),
        Origin::Pipeline | Origin::Operator => {
            if h.acceptance_mode == AcceptanceMode::HistoricalReplay {
                Some("acceptanceMode historical_replay is made only by seal replay".into())
            } else if replay_id {
                Some(format!(
                    "run ids of the form <id>.replay-<n> are reserved for seal replay ({run})"
                ))
            } else if origin == Origin::Pipeline && h.evidence_mode == EvidenceMode::LegacyAdapted {
                Some("evidenceMode legacy-adapted is made only by seal adapt".into())
            } else {
                None
            }
        }
    }
}

/// Why a play-spec cannot be used with this header (stale, or checks it does not contain).
pub fn play_spec_problems(spec: &Value, header: &Evidence) -> Vec<String> {
    let mut out = Vec::new();
    let source = spec
        .pointer("/derivedFrom/sourceHash")
        .and_then(Value::as_str)
        .unwrap_or("");
    if source != header.artifact_hash.as_str() {
        out.push(format!(
            "stale play-spec: derivedFrom.sourceHash {source:?} is not the header's artifactHash {}",
            header.artifact_hash
        ));
    }
    let assertions: Vec<Assertion> = spec
        .get("assertAfterPlay")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    for o in &header.proof_obligations {
        if let (ObligationSource::PlaySpec, Some(c)) = (o.source, &o.check) {
            if !assertions.contains(c) {
                out.push(format!(
                    "obligation {} checks an assertion the play-spec does not make",
                    o.id
                ));
            }
        }
    }
    out
}

/// Room the JUDGING snapshot and the evidence need beyond the header and the source roll's
/// proof package (roll records, merge, consensus projection, decision): an eighth of the
/// document limit, at most 1 MiB (a sealed two-roll run needs a few KiB).
pub fn snapshot_reserve(doc_limit: u64) -> u64 {
    (doc_limit / 8).min(1024 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../sealed-fixtures/inputs/run-narrative-0010-pass/roll-1/proof-package.json"
        );
        std::fs::read(path).expect("example proof package")
    }

    #[test]
    fn a_reserialized_package_is_the_same_submission() {
        let bytes = example();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        let a = ProofSubmission::parse(&bytes, None, 1 << 26).unwrap();
        let b = ProofSubmission::parse(&pretty, None, 1 << 26).unwrap();
        assert!(same_submission(a.hash(), b.hash()));
        assert_eq!(a.hash(), &Hash::of(a.canonical()));
        assert_eq!(a.roll_id(), RollId::R1);
    }

    #[test]
    fn element_limits_apply_only_when_given() {
        let bytes = example();
        let tight = PackageLimits {
            max_events: 1,
            ..PackageLimits::default()
        };
        let err = ProofSubmission::parse(&bytes, Some(&tight), 1 << 26).unwrap_err();
        assert!(matches!(err, SubmissionError::OverLimit(_)), "{err}");
        assert!(ProofSubmission::parse(&bytes, None, 1 << 26).is_ok());
    }

    #[test]
    fn a_package_that_breaks_its_schema_is_invalid_not_parsed() {
        let mut value: Value = serde_json::from_slice(&example()).unwrap();
        value["rollId"] = "roll-9".into();
        let err = ProofSubmission::parse(&serde_json::to_vec(&value).unwrap(), None, 1 << 26)
            .unwrap_err();
        assert!(matches!(err, SubmissionError::Invalid { .. }), "{err}");
        let err = ProofSubmission::parse(b"{\"a\":1,\"a\":2}", None, 1 << 26).unwrap_err();
        assert!(matches!(err, SubmissionError::Json(_)), "{err}");
    }
}
