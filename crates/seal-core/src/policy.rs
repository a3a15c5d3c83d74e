//! The judging policy a run is judged under, registered before any judge is asked
//! (`seal.judge-policy/1`). Pure: the engine builds one from its configuration, stores its
//! canonical bytes at `policies/<sha256>.json` and appends a [`crate::tlog::PolicyEntry`] naming
//! that digest to the transparency log before the first judge call; every attempt's SlotMeta/1
//! then names the policy leaf ([`PolicyRef`]).
//!
//! Why a policy is logged and not only recorded per attempt: a record written with the answers
//! can be tuned after the answers are seen; a leaf the log holds before the run's first receipt
//! cannot (`seal verify` checks the order). The policy is what a judging set-up *is*: per slot
//! the endpoint host, the model requested, the prompt artifact, the sampling settings, the
//! structured-output mode and the prices; and the versions of the rules the roll applies.
//!
//! [`check_attempt`] is the postguard's test that an attempt was made as its policy says;
//! [`diff`] is what `seal policy diff` prints.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::{self, CanonicalError, Hash};
pub use crate::doc::PolicyRef;
use crate::doc::{PromptArtifactRef, SlotMeta};
use crate::ids::Slot;

/// `schemaVersion` of a judge policy.
pub const SCHEMA_VERSION: &str = "seal.judge-policy/1";

/// The most bytes a stored policy is read for (a policy is about 1 KB).
pub const MAX_POLICY_BYTES: u64 = 64 * 1024;

/// The rules a roll applies, by version: a change of any is a change of policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rules {
    /// The consensus strategy (`JudgeConsensus/1`).
    pub consensus: String,
    /// The judge package the blinding builds (`JudgePackage/1`) and its rule set.
    pub blinding: String,
    /// The independence rules (the preflight and the consensus's `independenceChecks`).
    pub independence: String,
    /// The stage that writes the outcome (`finalPostguard/2`: `crate::derive::Rules`).
    pub postguard: String,
}

impl Rules {
    /// The rules this build applies.
    pub fn current() -> Rules {
        Rules {
            consensus: crate::doc::JUDGE_CONSENSUS.into(),
            blinding: crate::blinding::RULES.into(),
            independence: crate::independence::RULES.into(),
            postguard: crate::decided::VERSION.into(),
        }
    }
}

/// How a slot samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Sampling {
    pub temperature: f64,
    pub max_tokens: u64,
}

/// What a slot's answers cost (RMB), as the budget charges them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Prices {
    pub input_rmb_per_mtok: f64,
    pub output_rmb_per_mtok: f64,
    pub image_rmb: f64,
}

/// One judge slot's set-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlotPolicy {
    /// `host[:port]` of the endpoint (never its path or credentials).
    pub endpoint_host: String,
    pub model_requested: String,
    pub prompt_artifact: PromptArtifactRef,
    pub sampling: Sampling,
    /// Whether the request asks for a JSON-schema answer (`response_format`).
    pub structured_output: bool,
    pub max_attempts: u32,
    pub prices: Prices,
}

/// `seal.judge-policy/1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgePolicy {
    pub schema_version: String,
    pub a: SlotPolicy,
    pub b: SlotPolicy,
    /// Whether a roll whose two accepted answers were served by the same model is refused by
    /// the postguard (recorded either way, as the consensus's `sameModel`).
    pub require_distinct_served_models: bool,
    pub rules: Rules,
}

impl JudgePolicy {
    pub fn new(a: SlotPolicy, b: SlotPolicy, require_distinct_served_models: bool) -> JudgePolicy {
        JudgePolicy {
            schema_version: SCHEMA_VERSION.into(),
            a,
            b,
            require_distinct_served_models,
            rules: Rules::current(),
        }
    }

    /// The canonical bytes: what is stored and what the digest is of.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::canonical_bytes(self)
    }

    /// Parses stored bytes strictly: canonical JSON of a policy of this version, valid against
    /// its schema (`judge-policy.schema.json`), nothing else.
    pub fn from_bytes(bytes: &[u8]) -> Result<JudgePolicy, PolicyError> {
        let value = crate::json::parse(bytes, MAX_POLICY_BYTES)
            .map_err(|e| PolicyError::Malformed(e.to_string()))?;
        let invalid = crate::contracts::validate(crate::contracts::Kind::JudgePolicy, &value);
        if let Some(f) = invalid.first() {
            return Err(PolicyError::Malformed(format!(
                "{} {}",
                f.pointer, f.message
            )));
        }
        let policy: JudgePolicy =
            serde_json::from_value(value).map_err(|e| PolicyError::Malformed(e.to_string()))?;
        if policy.schema_version != SCHEMA_VERSION {
            return Err(PolicyError::Malformed(format!(
                "schemaVersion {:?}, expected {SCHEMA_VERSION:?}",
                policy.schema_version
            )));
        }
        let again = policy
            .to_bytes()
            .map_err(|e| PolicyError::Malformed(e.to_string()))?;
        if again != bytes {
            return Err(PolicyError::Malformed("not canonical JSON".into()));
        }
        Ok(policy)
    }

    pub fn slot(&self, slot: Slot) -> &SlotPolicy {
        match slot {
            Slot::A => &self.a,
            Slot::B => &self.b,
        }
    }
}

/// A policy's bytes with their digest: the only way to a digest is through the bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Canonical {
    pub policy: JudgePolicy,
    pub bytes: Vec<u8>,
    pub sha256: Hash,
}

impl Canonical {
    pub fn of(policy: JudgePolicy) -> Result<Canonical, CanonicalError> {
        let bytes = policy.to_bytes()?;
        let sha256 = Hash::of(&bytes);
        Ok(Canonical {
            policy,
            bytes,
            sha256,
        })
    }

    /// Stored bytes read back under the digest they are stored by: they must hash to it and
    /// parse strictly.
    pub fn read(bytes: &[u8], expected: &Hash) -> Result<Canonical, PolicyError> {
        let sha256 = Hash::of(bytes);
        if &sha256 != expected {
            return Err(PolicyError::Digest {
                expected: expected.clone(),
                found: sha256,
            });
        }
        let policy = JudgePolicy::from_bytes(bytes)?;
        Ok(Canonical {
            policy,
            bytes: bytes.to_vec(),
            sha256,
        })
    }
}

/// Why stored policy bytes are not a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("not a {SCHEMA_VERSION} document: {0}")]
    Malformed(String),
    #[error("the bytes hash to {found}, not to the digest {expected} they are stored by")]
    Digest { expected: Hash, found: Hash },
}

/// How an attempt departs from its policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("judge {slot} attempt {attempt}: {field} is {found:?}, the policy says {expected:?}")]
pub struct Mismatch {
    pub slot: Slot,
    pub attempt: u32,
    pub field: &'static str,
    pub expected: String,
    pub found: String,
}

/// Whether an attempt was made as `policy` says for its slot: the endpoint, the model
/// requested, and the prompt artifact. (The request's bytes are the request this set-up
/// builds: the attempt MAC binds them on resume, and the postguard re-reads them.)
pub fn check_attempt(policy: &JudgePolicy, meta: &SlotMeta) -> Result<(), Mismatch> {
    let slot = policy.slot(meta.slot);
    let mismatch = |field, expected: &str, found: &str| Mismatch {
        slot: meta.slot,
        attempt: meta.attempt,
        field,
        expected: expected.to_string(),
        found: found.to_string(),
    };
    if meta.endpoint_host != slot.endpoint_host {
        return Err(mismatch(
            "endpointHost",
            &slot.endpoint_host,
            &meta.endpoint_host,
        ));
    }
    if meta.model_requested != slot.model_requested {
        return Err(mismatch(
            "modelRequested",
            &slot.model_requested,
            &meta.model_requested,
        ));
    }
    let (want, got) = (&slot.prompt_artifact, &meta.prompt_artifact);
    if want != got {
        return Err(mismatch(
            "promptArtifact",
            &format!("{}@{} sha256:{}", want.id, want.version, want.hash),
            &format!("{}@{} sha256:{}", got.id, got.version, got.hash),
        ));
    }
    if meta.attempt > slot.max_attempts {
        return Err(mismatch(
            "attempt",
            &format!("at most {}", slot.max_attempts),
            &meta.attempt.to_string(),
        ));
    }
    Ok(())
}

/// Whether the first request of `request` (the stored chat-completions body) asks as the
/// slot's policy says: the model, the temperature, the token cap and the structured-output
/// mode. `None` when it does; else the first field that differs.
pub fn check_request(slot: &SlotPolicy, request: &Value) -> Option<(&'static str, String)> {
    let model = request.get("model").and_then(Value::as_str);
    if model != Some(slot.model_requested.as_str()) {
        return Some(("model", format!("{model:?}")));
    }
    let temperature = request.get("temperature").and_then(Value::as_f64);
    if temperature != Some(slot.sampling.temperature) {
        return Some(("temperature", format!("{temperature:?}")));
    }
    let max_tokens = request.get("max_tokens").and_then(Value::as_u64);
    if max_tokens != Some(slot.sampling.max_tokens) {
        return Some(("max_tokens", format!("{max_tokens:?}")));
    }
    let structured = request
        .get("response_format")
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        == Some("json_schema");
    if structured != slot.structured_output {
        return Some(("response_format", format!("structured {structured}")));
    }
    None
}

/// Whether RFC 3339 time `a` is strictly before `b` (unparseable times compare as text: the
/// store's times are seal's own, written in one format).
pub fn earlier(a: &str, b: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    match (
        time::OffsetDateTime::parse(a, &Rfc3339),
        time::OffsetDateTime::parse(b, &Rfc3339),
    ) {
        (Ok(x), Ok(y)) => x < y,
        _ => a < b,
    }
}

/// How far the clocks of two replicas sharing a store may disagree (`leases.max_clock_skew_ms`
/// by default): a registration by one replica may carry a time this much later than a judge
/// call another replica made after reading it.
pub const CLOCK_SKEW_SECONDS: i64 = 10;

/// Whether a policy registered at `registered_at` was in the log when a judge was first
/// called at `first_call`: registered before it, within [`CLOCK_SKEW_SECONDS`]. Unparseable
/// times are not before anything.
pub fn registered_before(registered_at: &str, first_call: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    match (
        time::OffsetDateTime::parse(registered_at, &Rfc3339),
        time::OffsetDateTime::parse(first_call, &Rfc3339),
    ) {
        (Ok(r), Ok(f)) => r <= f + time::Duration::seconds(CLOCK_SKEW_SECONDS),
        _ => false,
    }
}

/// One field that differs between two policies: its JSON path, the value before and after
/// (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What changed from `before` to `after`, field by field in path order (empty: the same
/// policy).
pub fn diff(before: &JudgePolicy, after: &JudgePolicy) -> Vec<Change> {
    let (Ok(b), Ok(a)) = (serde_json::to_value(before), serde_json::to_value(after)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk("", Some(&b), Some(&a), &mut out);
    out
}

fn walk(path: &str, b: Option<&Value>, a: Option<&Value>, out: &mut Vec<Change>) {
    match (b, a) {
        (Some(Value::Object(bo)), Some(Value::Object(ao))) => {
            let keys: std::collections::BTreeSet<&String> = bo.keys().chain(ao.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(&p, bo.get(k), ao.get(k), out);
            }
        }
        (b, a) if b == a => {}
        (b, a) => out.push(Change {
            path: path.to_string(),
            before: b.map(Value::to_string),
            after: a.map(Value::to_string),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn slot(model: &str, prompt: &str) -> SlotPolicy {
        SlotPolicy {
            endpoint_host: "judge.example:8443".into(),
            model_requested: model.into(),
            prompt_artifact: PromptArtifactRef {
                id: prompt.into(),
                version: "1.0.0".into(),
                hash: Hash::of(prompt.as_bytes()),
            },
            sampling: Sampling {
                temperature: 0.0,
                max_tokens: 1200,
            },
            structured_output: true,
            max_attempts: 3,
            prices: Prices {
                input_rmb_per_mtok: 2.0,
                output_rmb_per_mtok: 8.0,
                image_rmb: 0.01,
            },
        }
    }

    fn policy() -> JudgePolicy {
        JudgePolicy::new(slot("m-a", "judge-a"), slot("m-b", "judge-b"), false)
    }

    /// The golden bytes: a change here is a change of every policy's digest.
    #[test]
    fn the_canonical_bytes_are_pinned() {
        let c = Canonical::of(policy()).unwrap();
        let text = String::from_utf8(c.bytes.clone()).unwrap();
        assert!(text.starts_with("{\"a\":{\"endpointHost\":\"judge.example:8443\",\"maxAttempts\":3,\"modelRequested\":\"m-a\""), "{text}");
        assert!(text.contains("\"rules\":{\"blinding\":\"blinding/1\",\"consensus\":\"JudgeConsensus/1\",\"independence\":\"independence/1\",\"postguard\":\"finalPostguard/2\"}"), "{text}");
        assert!(
            text.ends_with("\"schemaVersion\":\"seal.judge-policy/1\"}"),
            "{text}"
        );
        // Same inputs, same bytes; and the bytes read back as the same policy.
        assert_eq!(Canonical::of(policy()).unwrap(), c);
        assert_eq!(Canonical::read(&c.bytes, &c.sha256).unwrap(), c);
    }

    #[test]
    fn stored_bytes_must_hash_to_their_name_and_be_canonical() {
        let c = Canonical::of(policy()).unwrap();
        let other = Hash::of(b"other");
        assert!(matches!(
            Canonical::read(&c.bytes, &other),
            Err(PolicyError::Digest { .. })
        ));
        let spaced = format!(" {}", String::from_utf8(c.bytes.clone()).unwrap());
        let h = Hash::of(spaced.as_bytes());
        assert!(matches!(
            Canonical::read(spaced.as_bytes(), &h),
            Err(PolicyError::Malformed(_))
        ));
        let mut v: Value = serde_json::from_slice(&c.bytes).unwrap();
        v["extra"] = Value::Bool(true);
        let extra = canonical::canonical_bytes(&v).unwrap();
        assert!(JudgePolicy::from_bytes(&extra).is_err());
        let mut v: Value = serde_json::from_slice(&c.bytes).unwrap();
        v["schemaVersion"] = "seal.judge-policy/2".into();
        let later = canonical::canonical_bytes(&v).unwrap();
        assert!(JudgePolicy::from_bytes(&later).is_err());
    }

    #[test]
    fn a_policy_is_valid_against_its_schema_and_a_bad_one_is_named() {
        use crate::contracts::{validate, Kind};
        let c = Canonical::of(policy()).unwrap();
        let v: Value = serde_json::from_slice(&c.bytes).unwrap();
        assert_eq!(Kind::detect(&v), Ok(Kind::JudgePolicy));
        assert!(validate(Kind::JudgePolicy, &v).is_empty());
        let mut hot = policy();
        hot.b.sampling.temperature = 3.0;
        let hot = Canonical::of(hot).unwrap();
        let e = JudgePolicy::from_bytes(&hot.bytes).unwrap_err();
        assert!(e.to_string().contains("/b/sampling/temperature"), "{e}");
    }

    #[test]
    fn a_registration_counts_before_a_call_within_the_clock_skew_only() {
        let call = "2026-12-07T10:00:00.5Z";
        assert!(registered_before("2026-12-07T09:00:00Z", call));
        assert!(
            registered_before("2026-12-07T10:00:10.5Z", call),
            "at the bound"
        );
        assert!(
            !registered_before("2026-12-07T10:00:10.6Z", call),
            "past it"
        );
        assert!(!registered_before("2026-12-08T00:00:00Z", call));
        assert!(!registered_before("yesterday", call), "unparseable");
        assert!(!registered_before("2026-12-07T09:00:00Z", "never"));
        assert!(earlier("2026-12-07T09:00:00Z", "2026-12-07T09:00:00.1Z"));
        assert!(!earlier("2026-12-07T09:00:00.1Z", "2026-12-07T09:00:00.1Z"));
        assert!(earlier("a", "b"), "text order for what does not parse");
    }

    #[test]
    fn diff_names_each_changed_field() {
        let before = policy();
        let mut after = policy();
        after.b.model_requested = "m-b-2".into();
        after.a.sampling.temperature = 0.2;
        after.require_distinct_served_models = true;
        let changes = diff(&before, &after);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "a.sampling.temperature",
                "b.modelRequested",
                "requireDistinctServedModels"
            ]
        );
        assert_eq!(changes[1].before.as_deref(), Some("\"m-b\""));
        assert_eq!(changes[1].after.as_deref(), Some("\"m-b-2\""));
        assert!(diff(&before, &before).is_empty());
    }

    fn meta(slot: Slot, model: &str, prompt: &str) -> SlotMeta {
        let p = super::tests::slot(model, prompt);
        serde_json::from_value(serde_json::json!({
            "schemaVersion": "SlotMeta/1", "slot": slot, "attempt": 1,
            "logicalClientId": "c", "sessionId": "s", "policySeed": 1,
            "endpointHost": p.endpoint_host, "modelRequested": model,
            "modelAnswered": null, "systemFingerprint": null,
            "promptArtifact": p.prompt_artifact, "packageHash": Hash::of(b"p"),
            "requestRef": null, "requestHash": null,
            "rawRef": "runs/r/roll-1/judge-a/attempt-1/raw.json", "rawHash": Hash::of(b"r"),
            "httpStatus": 200, "startedAt": "t", "endedAt": "t", "latencyMs": 1,
            "usage": null, "costRmb": 0.0, "errorClass": null, "errorDetail": null,
            "accepted": true
        }))
        .unwrap()
    }

    #[test]
    fn an_attempt_is_checked_against_its_slot() {
        let p = policy();
        assert_eq!(check_attempt(&p, &meta(Slot::A, "m-a", "judge-a")), Ok(()));
        assert_eq!(check_attempt(&p, &meta(Slot::B, "m-b", "judge-b")), Ok(()));
        // B's model in slot A, or A's prompt in slot B: not this policy's.
        let e = check_attempt(&p, &meta(Slot::A, "m-b", "judge-a")).unwrap_err();
        assert_eq!(e.field, "modelRequested");
        let e = check_attempt(&p, &meta(Slot::B, "m-b", "judge-a")).unwrap_err();
        assert_eq!(e.field, "promptArtifact");
        let mut m = meta(Slot::A, "m-a", "judge-a");
        m.endpoint_host = "evil.example".into();
        assert_eq!(check_attempt(&p, &m).unwrap_err().field, "endpointHost");
        m = meta(Slot::A, "m-a", "judge-a");
        m.attempt = 4;
        assert_eq!(check_attempt(&p, &m).unwrap_err().field, "attempt");
    }

    #[test]
    fn a_request_is_checked_against_its_slot() {
        let s = slot("m-a", "judge-a");
        let ok = serde_json::json!({"model": "m-a", "temperature": 0.0, "max_tokens": 1200,
            "response_format": {"type": "json_schema"}});
        assert_eq!(check_request(&s, &ok), None);
        let mut hot = ok.clone();
        hot["temperature"] = 0.7.into();
        assert_eq!(check_request(&s, &hot).unwrap().0, "temperature");
        let mut free = ok.clone();
        free.as_object_mut().unwrap().remove("response_format");
        assert_eq!(check_request(&s, &free).unwrap().0, "response_format");
        let mut other = ok;
        other["model"] = "m-x".into();
        assert_eq!(check_request(&s, &other).unwrap().0, "model");
    }
}
