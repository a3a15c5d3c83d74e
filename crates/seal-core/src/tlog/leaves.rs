//! The kinds of leaf besides a seal's entry and a rebuild's (`super`): a review's, a judge
//! policy's registration and a signed reliability report's, and [`Leaf`], which tells them
//! apart by their `kind` and parses each strictly (canonical bytes, nothing else).

use serde::{Deserialize, Serialize};

use super::{LogEntry, ReadLeaf, RebuildEntry, TlogError, KIND_REBUILD, MAX_LEAF_BYTES};
use crate::canonical::{self, CanonicalError};

/// The `kind` of a review entry.
const KIND_REVIEW: &str = "review";

/// The leaf a stored review of a sealed run is logged as (`crate::review`), before it is
/// stored: the review's own bytes are signed by its reviewer, so the entry needs no signature
/// of its own; `seal verify` checks that the stored review is the one logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewEntry {
    /// Always `"review"`.
    pub kind: String,
    pub run_id: String,
    pub review_index: u64,
    /// sha256 of the stored envelope bytes.
    pub review_sha256: String,
    /// The reviewer key's id.
    pub key_id: String,
    pub reviewed_at: String,
}

impl ReviewEntry {
    pub fn new(
        run_id: &str,
        review_index: u64,
        review_sha256: &str,
        key_id: &str,
        reviewed_at: &str,
    ) -> ReviewEntry {
        ReviewEntry {
            kind: KIND_REVIEW.into(),
            run_id: run_id.into(),
            review_index,
            review_sha256: review_sha256.into(),
            key_id: key_id.into(),
            reviewed_at: reviewed_at.into(),
        }
    }

    /// The exact leaf bytes (canonical JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }
}

/// The `kind` of a judge policy's entry.
const KIND_POLICY: &str = "judge-policy";

/// The leaf a judge policy is registered by (`crate::policy`), before any judge is asked under
/// it: the policy's own bytes are stored at `policies/<sha256>.json`, and the leaf (signed for
/// its index by the log key, as every leaf is: `auth`) fixes them and the time in the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyEntry {
    /// Always `"judge-policy"`.
    pub kind: String,
    /// sha256 of the policy's canonical bytes.
    pub policy_sha256: String,
    /// When the registering process appended it (RFC 3339, its clock).
    pub registered_at: String,
}

impl PolicyEntry {
    pub fn new(policy_sha256: &crate::canonical::Hash, registered_at: &str) -> PolicyEntry {
        PolicyEntry {
            kind: KIND_POLICY.into(),
            policy_sha256: policy_sha256.to_string(),
            registered_at: registered_at.into(),
        }
    }

    /// The policy's digest, parsed (a leaf with another spelling does not name a policy).
    pub fn sha256(&self) -> Option<crate::canonical::Hash> {
        crate::canonical::Hash::parse(&self.policy_sha256).ok()
    }

    /// The exact leaf bytes (canonical JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }
}

/// The `kind` of a reliability report's entry.
const KIND_REPORT: &str = "reliability-report";

/// The leaf a signed reliability report (`crate::stats::report`) is logged as, after its
/// envelope is stored at `reports/<sha256>.json`: the report's own bytes are signed by the
/// seal key, and the leaf fixes which report was published when, so that a report cannot be
/// made again and again until its figures please, then shown alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReportEntry {
    /// Always `"reliability-report"`.
    pub kind: String,
    /// sha256 of the stored envelope bytes.
    pub report_sha256: String,
    /// The signing key's id.
    pub key_id: String,
    /// The report's `generatedAt`.
    pub generated_at: String,
}

impl ReportEntry {
    pub fn new(
        report_sha256: &crate::canonical::Hash,
        key_id: &str,
        generated_at: &str,
    ) -> ReportEntry {
        ReportEntry {
            kind: KIND_REPORT.into(),
            report_sha256: report_sha256.to_string(),
            key_id: key_id.into(),
            generated_at: generated_at.into(),
        }
    }

    /// The report's digest, parsed (a leaf with another spelling names no report).
    pub fn sha256(&self) -> Option<crate::canonical::Hash> {
        crate::canonical::Hash::parse(&self.report_sha256).ok()
    }

    /// The exact leaf bytes (canonical JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }
}

/// A leaf of the log: a seal's entry, the record of a rebuild, a review's entry, a judge
/// policy's registration, or a reliability report's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leaf {
    Seal(LogEntry),
    Rebuild(RebuildEntry),
    Review(ReviewEntry),
    Policy(PolicyEntry),
    Report(ReportEntry),
}

/// Parses a kind of leaf strictly: its canonical bytes, nothing else.
fn strict<T: serde::de::DeserializeOwned + Serialize>(
    value: serde_json::Value,
    bytes: &[u8],
) -> Result<T, TlogError> {
    let entry: T = serde_json::from_value(value).map_err(|e| TlogError::Entry(e.to_string()))?;
    let again = canonical::canonical_bytes(&entry).map_err(|e| TlogError::Entry(e.to_string()))?;
    if again != bytes {
        return Err(TlogError::Entry("not canonical JSON".into()));
    }
    Ok(entry)
}

impl Leaf {
    /// Parses leaf bytes strictly (canonical JSON of one of the kinds, with or without an
    /// `auth` member: [`auth`]), not checking `auth`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Leaf, TlogError> {
        ReadLeaf::parse(bytes).map(|r| r.leaf)
    }

    /// Parses the bytes of a leaf without `auth` (canonical JSON of one of the kinds).
    pub(super) fn from_unsigned(bytes: &[u8]) -> Result<Leaf, TlogError> {
        let value = crate::json::parse(bytes, MAX_LEAF_BYTES)
            .map_err(|e| TlogError::Entry(e.to_string()))?;
        match value.get("kind") {
            None => LogEntry::from_bytes(bytes).map(Leaf::Seal),
            Some(k) if k == KIND_REBUILD => strict(value, bytes).map(Leaf::Rebuild),
            Some(k) if k == KIND_REVIEW => strict(value, bytes).map(Leaf::Review),
            Some(k) if k == KIND_POLICY => strict(value, bytes).map(Leaf::Policy),
            Some(k) if k == KIND_REPORT => strict(value, bytes).map(Leaf::Report),
            Some(_) => Err(TlogError::Entry("unknown leaf kind".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_leaf_round_trips_strictly() {
        let e = ReviewEntry::new(
            "run-1",
            0,
            &"a".repeat(64),
            &"b".repeat(64),
            "2026-12-02T00:00:00Z",
        );
        let bytes = e.to_bytes().unwrap();
        assert_eq!(Leaf::from_bytes(&bytes).unwrap(), Leaf::Review(e));
        let text = String::from_utf8(bytes).unwrap();
        assert!(Leaf::from_bytes(format!("{text} ").as_bytes()).is_err());
        let extra = text.replacen('{', "{\"extra\":1,", 1);
        assert!(Leaf::from_bytes(extra.as_bytes()).is_err());
    }

    #[test]
    fn a_policy_leaf_round_trips_strictly() {
        let h = crate::canonical::Hash::of(b"policy");
        let e = PolicyEntry::new(&h, "2026-12-07T00:00:00Z");
        let bytes = e.to_bytes().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"kind\":\"judge-policy\",\"policySha256\":\"{h}\",\"registeredAt\":\"2026-12-07T00:00:00Z\"}}"
            )
        );
        assert_eq!(Leaf::from_bytes(&bytes).unwrap(), Leaf::Policy(e.clone()));
        assert_eq!(e.sha256(), Some(h));
        assert!(Leaf::from_bytes(format!("{text} ").as_bytes()).is_err());
        let extra = text.replacen('{', "{\"extra\":1,", 1);
        assert!(Leaf::from_bytes(extra.as_bytes()).is_err());
        let bad = PolicyEntry {
            policy_sha256: "not hex".into(),
            ..e
        };
        assert_eq!(bad.sha256(), None);
    }

    #[test]
    fn a_report_leaf_round_trips_strictly() {
        let h = crate::canonical::Hash::of(b"report");
        let e = ReportEntry::new(&h, &"b".repeat(64), "2026-12-07T00:00:00Z");
        let bytes = e.to_bytes().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"generatedAt\":\"2026-12-07T00:00:00Z\",\"keyId\":\"{}\",\"kind\":\"reliability-report\",\"reportSha256\":\"{h}\"}}",
                "b".repeat(64)
            )
        );
        assert_eq!(Leaf::from_bytes(&bytes).unwrap(), Leaf::Report(e.clone()));
        assert_eq!(e.sha256(), Some(h));
        assert!(Leaf::from_bytes(format!("{text} ").as_bytes()).is_err());
        let extra = text.replacen('{', "{\"extra\":1,", 1);
        assert!(Leaf::from_bytes(extra.as_bytes()).is_err());
    }
}
