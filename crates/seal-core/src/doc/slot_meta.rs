//! SlotMeta/1: the record of one judge attempt.

use serde::{Deserialize, Serialize};

use crate::canonical::Hash;
use crate::ids::Slot;
use crate::key::Key;

pub const SLOT_META: &str = "SlotMeta/1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptArtifactRef {
    pub id: String,
    pub version: String,
    pub hash: Hash,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlotMeta {
    pub schema_version: String,
    pub slot: Slot,
    pub attempt: u32,
    pub logical_client_id: String,
    pub session_id: String,
    pub policy_seed: u64,
    pub endpoint_host: String,
    pub model_requested: String,
    pub model_answered: Option<String>,
    pub system_fingerprint: Option<String>,
    pub prompt_artifact: PromptArtifactRef,
    pub package_hash: Hash,
    pub request_ref: Option<Key>,
    pub request_hash: Option<Hash>,
    pub raw_ref: Key,
    pub raw_hash: Hash,
    pub http_status: Option<u16>,
    pub started_at: String,
    pub ended_at: String,
    pub latency_ms: u64,
    pub usage: Option<Usage>,
    pub cost_rmb: f64,
    pub error_class: Option<crate::vocab::ErrorClass>,
    pub error_detail: Option<String>,
    pub accepted: bool,
    /// `hmac-sha256:<hex>`: the MAC of the daemon that stored the attempt (see `resume`).
    /// Absent in attempts stored before it existed; only resume checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_mac: Option<String>,
    /// Present when a configured secret was scrubbed from the raw answer before it was stored:
    /// the sha256 of the bytes as received (`judge::redact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unredacted_raw_hash: Option<Hash>,
    /// The judge policy the attempt was made under: its log leaf and digest
    /// (`crate::policy`). Absent in attempts copied from runs judged before policies were
    /// logged (a stored-answer replay copies its source's attempts byte for byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyRef>,
}

/// Where an attempt names its judge policy (`crate::policy`): the log leaf that registered it
/// and the sha256 of its canonical bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyRef {
    pub leaf_index: u64,
    pub sha256: Hash,
}
