//! Registering the judge policy (`seal_core::policy`) before anything is judged under it.
//!
//! The first live roll of a process (`seal serve`, `seal judge`, a live replay) registers the
//! policy its configuration makes, once: the canonical bytes go to `policies/<sha256>.json`
//! (create-only, so bytes planted there under that name are a conflict, never adopted), then a
//! `judge-policy` leaf naming the digest is appended to the transparency log and a checkpoint
//! covering it is published. Only then is a judge called; every attempt's SlotMeta/1 names the
//! leaf. A policy registered already (this configuration, an earlier process) is not
//! registered again: its first leaf is reused.

use bytes::Bytes;

use crate::config::{Config, SlotConfig};
use crate::engine::Engine;
use seal_core::canonical::Hash;
use seal_core::doc::PromptArtifactRef;
use seal_core::fault::{Fault, HasFault};
use seal_core::policy::{self, Canonical, JudgePolicy, PolicyRef, SlotPolicy};
use seal_core::tlog::PolicyEntry;
use seal_store::{Key, StoreError};

/// The test hook that dates a registration (debug builds only; see [`register`]).
pub const REGISTERED_AT_HOOK: &str = "SEAL_TEST_POLICY_REGISTERED_AT";

/// Why the policy could not be registered (no judge is called then).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the judge policy could not be written as canonical JSON: {0}")]
    Canonical(#[from] seal_core::canonical::CanonicalError),
    #[error("judge policy {key}: {source}")]
    Store {
        key: Key,
        #[source]
        source: StoreError,
    },
    #[error("judge policy {sha256}: the transparency log: {source}")]
    Log {
        sha256: Hash,
        #[source]
        source: seal_log::LogError,
    },
    /// A slot names a prompt the build does not carry.
    #[error(transparent)]
    Prompt(#[from] seal_core::prompts::PromptError),
    #[error("this process holds no signing key: it cannot register its judge policy in the log")]
    NoKey,
}

impl HasFault for PolicyError {
    fn fault(&self) -> Fault {
        match self {
            PolicyError::Canonical(_) => Fault::Corruption,
            // Other bytes under a content address were not written by seal: planted.
            PolicyError::Store { source, .. } if source.is_corruption() => Fault::Corruption,
            PolicyError::Store { source, .. } => source.fault(),
            PolicyError::Log { source, .. } => source.fault(),
            PolicyError::NoKey | PolicyError::Prompt(_) => Fault::Config,
        }
    }
}

/// The policy `config` judges under (its prompts as this build carries them).
pub fn of(config: &Config) -> Result<JudgePolicy, PolicyError> {
    Ok(JudgePolicy::new(
        slot(&config.a)?,
        slot(&config.b)?,
        config.require_distinct_served_models,
    ))
}

/// [`of`], canonical.
pub fn canonical(config: &Config) -> Result<Canonical, PolicyError> {
    Ok(Canonical::of(of(config)?)?)
}

fn slot(c: &SlotConfig) -> Result<SlotPolicy, PolicyError> {
    let prompt = seal_core::prompts::get(&c.prompt)?;
    Ok(SlotPolicy {
        endpoint_host: c.host(),
        model_requested: c.model.clone(),
        prompt_artifact: PromptArtifactRef {
            id: prompt.id,
            version: prompt.version,
            hash: prompt.hash,
        },
        sampling: policy::Sampling {
            temperature: c.temperature,
            max_tokens: c.max_tokens,
        },
        structured_output: c.structured_output,
        max_attempts: c.max_attempts(),
        prices: policy::Prices {
            input_rmb_per_mtok: c.prices.input_rmb_per_mtok,
            output_rmb_per_mtok: c.prices.output_rmb_per_mtok,
            image_rmb: c.prices.image_rmb,
        },
    })
}

impl Engine {
    /// Whether this engine's policy is registered (a live roll would not append to the log
    /// for it).
    pub fn policy_logged(&self) -> bool {
        self.policy.initialized()
    }

    /// The policy this engine judges under, registered (see the module doc) the first time it
    /// is asked for; the same answer afterwards.
    pub async fn policy(&self) -> Result<PolicyRef, PolicyError> {
        self.policy
            .get_or_try_init(|| async {
                let key = self.key.as_deref().ok_or(PolicyError::NoKey)?;
                let doc = canonical(&self.config)?;
                register(self, &doc, key).await
            })
            .await
            .cloned()
    }
}

async fn register(
    engine: &Engine,
    doc: &Canonical,
    key: &seal_core::sealing::SigningKey,
) -> Result<PolicyRef, PolicyError> {
    let at = Key::policy(&doc.sha256);
    engine
        .store
        .put(&at, Bytes::from(doc.bytes.clone()))
        .await
        .map_err(|source| PolicyError::Store {
            key: at.clone(),
            source,
        })?;
    // The judges' clock: the attempts' `startedAt` are compared with this time.
    #[allow(unused_mut)]
    let mut at = crate::judge_http::now_rfc3339();
    // Test builds only (debug assertions, what `cargo test` runs): a registration dated
    // later, as a policy logged after its runs' answers would be. The shipped binary has no
    // hook, whatever its environment says.
    #[cfg(debug_assertions)]
    if let Ok(t) = std::env::var(REGISTERED_AT_HOOK) {
        at = t;
    }
    let entry = PolicyEntry::new(&doc.sha256, &at);
    let appended = engine
        .log
        .append_policy(&entry, key)
        .await
        .map_err(|source| PolicyError::Log {
            sha256: doc.sha256.clone(),
            source,
        })?;
    tracing::info!(
        policy = %doc.sha256,
        leaf = appended.index,
        registered_now = appended.created,
        "judge policy registered"
    );
    Ok(PolicyRef {
        leaf_index: appended.index,
        sha256: doc.sha256.clone(),
    })
}

/// The stored policy of digest `sha256`, read back and checked (it hashes to its name and
/// parses strictly): `None` when it is not stored.
pub async fn stored(
    store: &seal_store::Store,
    sha256: &Hash,
) -> Result<Option<Result<Canonical, policy::PolicyError>>, StoreError> {
    let key = Key::policy(sha256);
    let Some(bytes) = store.get_opt(&key).await? else {
        return Ok(None);
    };
    Ok(Some(Canonical::read(&bytes, sha256)))
}
