//! JudgePackage/1 (what both judges see) and ImageManifest/1 (the frames shown as images).

use serde::{Deserialize, Serialize};

use super::common::*;
use crate::canonical::Hash;

pub const JUDGE_PACKAGE: &str = "JudgePackage/1";
pub const IMAGE_MANIFEST: &str = "ImageManifest/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brief {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageObligation {
    pub id: String,
    pub description: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Assertion>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PackageFrame {
    pub hash: Hash,
    pub at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgePackage {
    pub schema_version: String,
    pub genre: Genre,
    pub brief: Brief,
    pub obligations: Vec<PackageObligation>,
    pub actions: Vec<Action>,
    pub events: Vec<GameEvent>,
    pub frames: Vec<PackageFrame>,
    pub image_manifest_hash: Hash,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestEntry {
    pub hash: Hash,
    pub media_type: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: String,
    pub frames: Vec<ManifestEntry>,
}
