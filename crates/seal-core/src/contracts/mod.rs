//! The contracts: every JSON Schema seal knows, embedded in the binary, and the validator.
//!
//! Upstream schemas (`upstream/`) are vendored byte-for-byte; the project's own (`schemas/`)
//! define the `$defs` v3 references plus the project documents. All are registered under their
//! `$id`s in one `jsonschema` registry with retrieval switched off, so a relative `$ref` in the
//! v3 schema resolves to the embedded sibling and nothing is ever fetched from the network.
//!
//! [`validate`] is schema validation only; cross-field rules live in [`crate::invariants`].

use serde_json::Value;
use std::sync::OnceLock;

/// Upstream contracts, unchanged.
pub const UPSTREAM: &[(&str, &str)] = &[
    (
        "playtest-evidence-v3.schema.json",
        include_str!("upstream/playtest-evidence-v3.schema.json"),
    ),
    (
        "verdict.schema.json",
        include_str!("upstream/verdict.schema.json"),
    ),
    (
        "play-spec.schema.json",
        include_str!("upstream/play-spec.schema.json"),
    ),
    (
        "solver-report-decision-tree.schema.json",
        include_str!("upstream/solver-report-decision-tree.schema.json"),
    ),
];

/// Schemas authored by this project.
pub const AUTHORED: &[(&str, &str)] = &[
    (
        "playtest-evidence.schema.json",
        include_str!("schemas/playtest-evidence.schema.json"),
    ),
    (
        "game-event.schema.json",
        include_str!("schemas/game-event.schema.json"),
    ),
    (
        "actor-selection.schema.json",
        include_str!("schemas/actor-selection.schema.json"),
    ),
    (
        "target-resolution.schema.json",
        include_str!("schemas/target-resolution.schema.json"),
    ),
    (
        "proof-package.schema.json",
        include_str!("schemas/proof-package.schema.json"),
    ),
    (
        "judge-package.schema.json",
        include_str!("schemas/judge-package.schema.json"),
    ),
    (
        "image-manifest.schema.json",
        include_str!("schemas/image-manifest.schema.json"),
    ),
    (
        "slot-meta.schema.json",
        include_str!("schemas/slot-meta.schema.json"),
    ),
    (
        "judge-result.schema.json",
        include_str!("schemas/judge-result.schema.json"),
    ),
    (
        "judge-consensus.schema.json",
        include_str!("schemas/judge-consensus.schema.json"),
    ),
    (
        "cost-reservation.schema.json",
        include_str!("schemas/cost-reservation.schema.json"),
    ),
    (
        "judge-output.schema.json",
        include_str!("schemas/judge-output.schema.json"),
    ),
    (
        "judge-attempt-failure.schema.json",
        include_str!("schemas/judge-attempt-failure.schema.json"),
    ),
    (
        "decision-tree.schema.json",
        include_str!("schemas/decision-tree.schema.json"),
    ),
    (
        "stats.schema.json",
        include_str!("schemas/stats.schema.json"),
    ),
    (
        "shadow-report.schema.json",
        include_str!("schemas/shadow-report.schema.json"),
    ),
    (
        "review.schema.json",
        include_str!("schemas/review.schema.json"),
    ),
    (
        "label.schema.json",
        include_str!("schemas/label.schema.json"),
    ),
    (
        "judge-policy.schema.json",
        include_str!("schemas/judge-policy.schema.json"),
    ),
    (
        "reliability.schema.json",
        include_str!("schemas/reliability.schema.json"),
    ),
];

/// The kinds of document seal validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    PlaytestV3,
    ProofPackage,
    JudgePackage,
    ImageManifest,
    SlotMeta,
    JudgeResult,
    JudgeConsensus,
    CostReservation,
    JudgeAttemptFailure,
    JudgeOutput,
    PlaySpec,
    Verdict,
    /// One element of playtest/3 `rolls` (seal stores each finished roll on its own).
    V3Roll,
    /// The decision tree of a sealed run (`seal explain --json`).
    DecisionTree,
    /// The figures of `seal stats --json`.
    Stats,
    /// The pairing of `seal shadow-report --json`.
    ShadowReport,
    /// The in-toto statement of a person's review of a sealed run (`crate::review`).
    Review,
    /// One line of `seal export labels`.
    Label,
    /// A judge policy (`crate::policy`), as stored at `policies/<sha256>.json`.
    JudgePolicy,
    /// The in-toto statement of a signed reliability report (`crate::stats::report`).
    Reliability,
}

impl Kind {
    pub const ALL: [Kind; 20] = [
        Kind::PlaytestV3,
        Kind::ProofPackage,
        Kind::JudgePackage,
        Kind::ImageManifest,
        Kind::SlotMeta,
        Kind::JudgeResult,
        Kind::JudgeConsensus,
        Kind::CostReservation,
        Kind::JudgeAttemptFailure,
        Kind::JudgeOutput,
        Kind::PlaySpec,
        Kind::Verdict,
        Kind::V3Roll,
        Kind::DecisionTree,
        Kind::Stats,
        Kind::ShadowReport,
        Kind::Review,
        Kind::Label,
        Kind::JudgePolicy,
        Kind::Reliability,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::PlaytestV3 => "playtest/3",
            Kind::ProofPackage => "ProofPackage/1",
            Kind::JudgePackage => "JudgePackage/1",
            Kind::ImageManifest => "ImageManifest/1",
            Kind::SlotMeta => "SlotMeta/1",
            Kind::JudgeResult => "JudgeResult/1",
            Kind::JudgeConsensus => "JudgeConsensus/1",
            Kind::CostReservation => "CostReservation/1",
            Kind::JudgeAttemptFailure => "JudgeAttemptFailure/1",
            Kind::JudgeOutput => "JudgeOutput",
            Kind::PlaySpec => "PlaySpec",
            Kind::Verdict => "Verdict",
            Kind::V3Roll => "playtest/3 roll",
            Kind::DecisionTree => "seal.decision-tree/1",
            Kind::Stats => "seal.stats/1",
            Kind::ShadowReport => "seal.shadow-report/1",
            Kind::Review => "seal.review/1",
            Kind::Label => "seal.label/1",
            Kind::JudgePolicy => "seal.judge-policy/1",
            Kind::Reliability => "seal.reliability/1",
        }
    }

    /// The schema a document of this kind must satisfy, as a `$ref` to the registered `$id`.
    fn schema_ref(self) -> &'static str {
        match self {
            Kind::PlaytestV3 => "https://wanxiang.ai/contracts/play-loop/playtest-evidence-v3.schema.json",
            Kind::ProofPackage => "https://wanxiang.ai/contracts/play-loop/proof-package.schema.json",
            Kind::JudgePackage => "https://wanxiang.ai/contracts/play-loop/judge-package.schema.json",
            Kind::ImageManifest => "https://wanxiang.ai/contracts/play-loop/image-manifest.schema.json",
            Kind::SlotMeta => "https://wanxiang.ai/contracts/play-loop/slot-meta.schema.json",
            Kind::JudgeResult => "https://wanxiang.ai/contracts/play-loop/judge-result.schema.json",
            Kind::JudgeConsensus => "https://wanxiang.ai/contracts/play-loop/judge-consensus.schema.json",
            Kind::CostReservation => "https://wanxiang.ai/contracts/play-loop/cost-reservation.schema.json",
            Kind::JudgeAttemptFailure => {
                "https://wanxiang.ai/contracts/play-loop/judge-attempt-failure.schema.json"
            }
            Kind::JudgeOutput => "https://wanxiang.ai/contracts/play-loop/judge-output.schema.json",
            Kind::PlaySpec => "https://wanxiang.ai/contracts/play-loop/play-spec.schema.json",
            Kind::Verdict => "https://wanxiang.ai/contracts/agent-loop/verdict.schema.json",
            Kind::V3Roll => {
                "https://wanxiang.ai/contracts/play-loop/playtest-evidence-v3.schema.json#/$defs/roll"
            }
            Kind::DecisionTree => {
                "https://wanxiang.ai/contracts/play-loop/decision-tree.schema.json"
            }
            Kind::Stats => "https://wanxiang.ai/contracts/play-loop/stats.schema.json",
            Kind::ShadowReport => {
                "https://wanxiang.ai/contracts/play-loop/shadow-report.schema.json"
            }
            Kind::Review => "https://wanxiang.ai/contracts/play-loop/review.schema.json",
            Kind::Label => "https://wanxiang.ai/contracts/play-loop/label.schema.json",
            Kind::JudgePolicy => {
                "https://wanxiang.ai/contracts/play-loop/judge-policy.schema.json"
            }
            Kind::Reliability => "https://wanxiang.ai/contracts/play-loop/reliability.schema.json",
        }
    }

    /// Detects the kind of a document by its `schemaVersion`. Two upstream documents carry no
    /// version: a PlaySpec is known by `derivedFrom`, a Verdict by `designId`.
    pub fn detect(doc: &Value) -> Result<Kind, UnknownKind> {
        let Some(obj) = doc.as_object() else {
            return Err(UnknownKind::NotAnObject(type_name(doc)));
        };
        match obj.get("schemaVersion") {
            Some(Value::String(v)) => match v.as_str() {
                "playtest/3" => Ok(Kind::PlaytestV3),
                "ProofPackage/1" => Ok(Kind::ProofPackage),
                "JudgePackage/1" => Ok(Kind::JudgePackage),
                "ImageManifest/1" => Ok(Kind::ImageManifest),
                "SlotMeta/1" => Ok(Kind::SlotMeta),
                "JudgeResult/1" => Ok(Kind::JudgeResult),
                "JudgeConsensus/1" => Ok(Kind::JudgeConsensus),
                "CostReservation/1" => Ok(Kind::CostReservation),
                "JudgeAttemptFailure/1" => Ok(Kind::JudgeAttemptFailure),
                "seal.decision-tree/1" => Ok(Kind::DecisionTree),
                "seal.stats/1" => Ok(Kind::Stats),
                "seal.shadow-report/1" => Ok(Kind::ShadowReport),
                "seal.label/1" => Ok(Kind::Label),
                "seal.judge-policy/1" => Ok(Kind::JudgePolicy),
                v if v.starts_with("play-spec/") => Ok(Kind::PlaySpec),
                other => Err(UnknownKind::Version(other.chars().take(64).collect())),
            },
            Some(other) => Err(UnknownKind::VersionType(type_name(other))),
            // An in-toto statement carries its version in `predicateType` (a review's:
            // `review::PREDICATE_TYPE`, a rule of a higher layer, spelled out here).
            None if obj.get("predicateType").and_then(Value::as_str)
                == Some("https://wanxiang.ai/seal/review/v1") =>
            {
                Ok(Kind::Review)
            }
            None if obj.get("predicateType").and_then(Value::as_str)
                == Some("https://wanxiang.ai/seal/reliability/v1") =>
            {
                Ok(Kind::Reliability)
            }
            None if obj.contains_key("derivedFrom") => Ok(Kind::PlaySpec),
            None if obj.contains_key("designId") => Ok(Kind::Verdict),
            None if obj.contains_key("rollId") && obj.contains_key("rollGuard") => Ok(Kind::V3Roll),
            None => Err(UnknownKind::NoVersion),
        }
    }
}

/// Why a document's kind cannot be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownKind {
    #[error("a document must be a JSON object, found {0}")]
    NotAnObject(&'static str),
    #[error("unknown schemaVersion {0:?}")]
    Version(String),
    #[error("schemaVersion must be a string, found {0}")]
    VersionType(&'static str),
    #[error("no schemaVersion: cannot tell what kind of document this is")]
    NoVersion,
}

/// An embedded schema that does not parse or compile: a build bug, found by [`self_check`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct SchemaError {
    what: String,
    reason: String,
}

fn schema_error(what: impl Into<String>, reason: impl std::fmt::Display) -> SchemaError {
    SchemaError {
        what: what.into(),
        reason: reason.to_string(),
    }
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One thing wrong with a document: where (JSON pointer), which rule, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub pointer: String,
    pub rule: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{p}: [{}] {}", self.rule, self.message)
    }
}

struct Validators {
    by_kind: Vec<(Kind, jsonschema::Validator)>,
}

fn validators() -> &'static Result<Validators, SchemaError> {
    static V: OnceLock<Result<Validators, SchemaError>> = OnceLock::new();
    V.get_or_init(build_validators)
}

/// Parses every embedded schema (they are part of the binary; a failure here is a build bug).
pub fn embedded_schemas() -> Result<Vec<(String, Value)>, SchemaError> {
    UPSTREAM
        .iter()
        .chain(AUTHORED)
        .map(|(name, text)| {
            let v: Value = serde_json::from_str(text).map_err(|e| schema_error(*name, e))?;
            let id = v
                .get("$id")
                .and_then(Value::as_str)
                .ok_or_else(|| schema_error(*name, "no $id"))?
                .to_owned();
            Ok((id, v))
        })
        .collect()
}

fn build_validators() -> Result<Validators, SchemaError> {
    let schemas = embedded_schemas()?;
    let mut builder = jsonschema::Registry::new();
    for (id, v) in &schemas {
        builder = builder
            .add(id.as_str(), v)
            .map_err(|e| schema_error(format!("register {id}"), e))?;
    }
    let registry = builder
        .prepare()
        .map_err(|e| schema_error("prepare registry", e))?;
    let mut by_kind = Vec::new();
    for kind in Kind::ALL {
        let wrapper = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": kind.schema_ref()
        });
        let v = jsonschema::options()
            .with_registry(&registry)
            .offline()
            .should_validate_formats(true)
            .build(&wrapper)
            .map_err(|e| schema_error(format!("compile {}", kind.name()), e))?;
        by_kind.push((kind, v));
    }
    Ok(Validators { by_kind })
}

/// Checks that every embedded schema compiles; used by tests and at daemon start.
pub fn self_check() -> Result<(), SchemaError> {
    validators().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Validates `doc` against the schema of `kind`: every violation, with pointer and rule.
pub fn validate(kind: Kind, doc: &Value) -> Vec<Finding> {
    let vals = match validators() {
        Ok(v) => v,
        Err(e) => {
            return vec![Finding {
                pointer: String::new(),
                rule: "schema.build".into(),
                message: e.to_string(),
            }]
        }
    };
    let Some((_, validator)) = vals.by_kind.iter().find(|(k, _)| *k == kind) else {
        return vec![Finding {
            pointer: String::new(),
            rule: "schema.build".into(),
            message: format!("no validator for {}", kind.name()),
        }];
    };
    // Nearly every document is valid: the yes/no walk stops at nothing and builds no error
    // values, so the full list is only collected for a document that fails it.
    if validator.is_valid(doc) {
        return Vec::new();
    }
    let mut out: Vec<Finding> = validator
        .iter_errors(doc)
        .map(|e| {
            let schema_path = e.schema_path().as_str().to_string();
            let keyword = schema_path.rsplit('/').next().unwrap_or("").to_string();
            let pointer = e.instance_path().as_str().to_string();
            // The v3 schema's only `not` at the root is the DECIDED-fields rule: say it plainly
            // instead of echoing the whole document.
            let message = if keyword == "not" && pointer.is_empty() && kind == Kind::PlaytestV3 {
                "outcome, finalPostguard, decision and compatibility must be absent unless phase is DECIDED".to_string()
            } else {
                shorten(&e.to_string(), 300)
            };
            Finding { pointer, rule: format!("schema.{keyword}"), message }
        })
        .collect();
    out.sort_by(|a, b| a.pointer.cmp(&b.pointer).then(a.rule.cmp(&b.rule)));
    out.dedup();
    out
}

/// The JudgeOutput schema as sent in `response_format` (strict): the same shape without the
/// keywords strict structured-output endpoints refuse. Answers are still validated locally
/// against the full schema.
pub fn judge_output_wire_schema() -> Value {
    fn strip(v: &mut Value) {
        if let Value::Object(m) = v {
            for k in [
                "$schema",
                "$id",
                "title",
                "maxItems",
                "maxLength",
                "minLength",
                "pattern",
                "minimum",
            ] {
                m.remove(k);
            }
            for (_, child) in m.iter_mut() {
                strip(child);
            }
        } else if let Value::Array(items) = v {
            items.iter_mut().for_each(strip);
        }
    }
    let mut v: Value = serde_json::from_str(include_str!("schemas/judge-output.schema.json"))
        .unwrap_or(Value::Null);
    strip(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_schema_compiles() {
        self_check().unwrap();
    }

    #[test]
    fn vendored_upstream_is_byte_for_byte() {
        // The upstream folder is checked against ../shared in tests/contracts.rs when present;
        // here: every upstream file parses and keeps its upstream $id.
        for (name, text) in UPSTREAM {
            let v: Value = serde_json::from_str(text).unwrap();
            assert!(v["$id"].as_str().unwrap().ends_with(name), "{name}");
        }
    }

    #[test]
    fn detect_kinds() {
        use serde_json::json;
        assert_eq!(
            Kind::detect(&json!({"schemaVersion":"playtest/3"})).unwrap(),
            Kind::PlaytestV3
        );
        assert_eq!(
            Kind::detect(&json!({"derivedFrom":{}})).unwrap(),
            Kind::PlaySpec
        );
        assert_eq!(
            Kind::detect(&json!({"designId":"x"})).unwrap(),
            Kind::Verdict
        );
        assert!(Kind::detect(&json!({"schemaVersion":"playtest/9"})).is_err());
        assert!(Kind::detect(&json!({"schemaVersion":3})).is_err());
        assert!(Kind::detect(&json!([1])).is_err());
    }

    #[test]
    fn wire_schema_keeps_shape() {
        let v = judge_output_wire_schema();
        assert_eq!(v["required"][0], "obligations");
        assert!(v.get("$id").is_none());
        assert!(v["properties"]["obligations"].get("maxItems").is_none());
    }
}
