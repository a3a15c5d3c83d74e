//! Judge prompt artifacts: `prompts/registry.toml` and the files it lists, embedded in the
//! binary so that a prompt's hash is a property of the build, recorded in every SlotMeta/1.

use serde::Deserialize;

use crate::canonical::Hash;

const REGISTRY: &str = include_str!("../../../prompts/registry.toml");
const FILES: &[(&str, &str)] = &[
    ("judge-a.md", include_str!("../../../prompts/judge-a.md")),
    ("judge-b.md", include_str!("../../../prompts/judge-b.md")),
];

/// One prompt artifact: id, version, text and the sha256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArtifact {
    pub id: String,
    pub version: String,
    pub text: &'static str,
    pub hash: Hash,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
    prompt: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    version: String,
    file: String,
}

/// Why a prompt could not be had (the registry is embedded: a build fault, or a config naming
/// a prompt the build does not have).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("prompts/registry.toml: {0}")]
    Registry(String),
    #[error("prompts/registry.toml: {id} lists unknown file {file}")]
    UnknownFile { id: String, file: String },
    #[error("no prompt {0:?} in prompts/registry.toml")]
    NoPrompt(String),
}

/// Every registered prompt.
pub fn all() -> Result<Vec<PromptArtifact>, PromptError> {
    let reg: Registry =
        toml::from_str(REGISTRY).map_err(|e| PromptError::Registry(e.to_string()))?;
    reg.prompt
        .into_iter()
        .map(|e| {
            let text = FILES
                .iter()
                .find(|(f, _)| *f == e.file)
                .map(|(_, t)| *t)
                .ok_or_else(|| PromptError::UnknownFile {
                    id: e.id.clone(),
                    file: e.file.clone(),
                })?;
            Ok(PromptArtifact {
                hash: Hash::of(text.as_bytes()),
                id: e.id,
                version: e.version,
                text,
            })
        })
        .collect()
}

/// The prompt with this id.
pub fn get(id: &str) -> Result<PromptArtifact, PromptError> {
    all()?
        .into_iter()
        .find(|p| p.id == id)
        .ok_or_else(|| PromptError::NoPrompt(id.to_owned()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn registry_lists_two_different_prompts() {
        let all = super::all().unwrap();
        assert_eq!(all.len(), 2);
        assert_ne!(all[0].hash, all[1].hash);
        for p in &all {
            for needle in [
                "sequenceRefs",
                "frameHashes",
                "not_observed",
                "untrusted",
                "obligations",
            ] {
                assert!(
                    p.text.to_lowercase().contains(&needle.to_lowercase()),
                    "{} lacks {needle}",
                    p.id
                );
            }
        }
    }
}
