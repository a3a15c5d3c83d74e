//! Validation of any document seal knows: kind detection, schema, then the cross-field
//! invariants. Reading a file to validate is the CLI's (`seal validate`).

use serde_json::Value;

use crate::contracts::{self, Finding, Kind};
use crate::invariants::{self, Checked};

/// The result of validating one file.
#[derive(Debug)]
pub enum Report {
    /// Valid document of this kind.
    Valid(Kind),
    /// Parsed, known kind, but violations.
    Invalid(Kind, Vec<Finding>),
    /// Could not read, not JSON, or unknown kind: no answer for this file.
    Unusable(String),
}

/// Validates a parsed document: kind detection, schema, then invariants (only when the schema
/// holds, so invariant messages never restate a shape error).
pub fn validate_value(doc: &Value) -> Report {
    let kind = match Kind::detect(doc) {
        Ok(k) => k,
        Err(e) => return Report::Unusable(e.to_string()),
    };
    validate_as(kind, doc)
}

pub fn validate_as(kind: Kind, doc: &Value) -> Report {
    let mut findings = contracts::validate(kind, doc);
    if findings.is_empty() {
        findings = invariants::check(kind, doc);
    }
    if findings.is_empty() {
        Report::Valid(kind)
    } else {
        Report::Invalid(kind, findings)
    }
}

/// A document of type `T` from its parsed tree: `T`'s schema, then `T`'s invariants on one
/// typed deserialization, which is also the value returned (issue 25, "typed parsing": the
/// tree is walked by the schema and by serde once each, never copied). `Ok` exactly when
/// [`validate_as`]`(T::KIND, doc)` is [`Report::Valid`], with the same findings otherwise
/// (`tests/typed_parsing.rs`).
pub fn checked<T: Checked>(doc: &Value) -> Result<T, Vec<Finding>> {
    let findings = contracts::validate(T::KIND, doc);
    if !findings.is_empty() {
        return Err(findings);
    }
    invariants::typed::<T>(doc)
}

/// Parses (strictly) and validates bytes already read.
pub fn validate_bytes(bytes: &[u8], limit: u64) -> Report {
    match crate::json::parse(bytes, limit) {
        Ok(v) => validate_value(&v),
        Err(e) => Report::Unusable(e.to_string()),
    }
}
