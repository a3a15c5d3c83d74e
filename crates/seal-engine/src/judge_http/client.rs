//! A judge slot's client ([`JudgeClient`]: one `reqwest::Client`, its configuration, prompt and
//! secrets) and both slots ([`Judges`]), built once per engine; what a request is and how long
//! to wait before the next attempt. Sending an attempt is [`super::attempt`]'s, walking a slot's
//! attempts [`super::walk`]'s.

use bytes::Bytes;
use seal_core::fault::{Fault, HasFault};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use super::parse::ErrorClass;
use super::request;
use crate::config::{Config, Secret, SlotConfig};
use crate::leasing::LeasePolicy;
use crate::resume::AttemptId;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RollId, RunId, Slot};
use seal_core::judge::health;
use seal_core::prompts::{self, PromptArtifact};

/// A slot job: what one slot is asked to judge in one roll.
pub struct SlotJob<'a> {
    pub run: &'a RunId,
    pub roll: RollId,
    pub package_bytes: &'a [u8],
    pub package_hash: &'a Hash,
    pub manifest: &'a ImageManifest,
    /// hash → (media type, base64), loaded once per roll and shared by both slots.
    pub images: &'a HashMap<String, (String, String)>,
    pub seed: u64,
    pub session_id: String,
    /// The secret seed salt: seeds, sessions and the attempt MAC derive from it.
    pub salt: &'a [u8],
    /// What the roll's stored, MAC-verified cost reservation names for this slot; set once the
    /// reservation is stored (`None` before, and for reservations older than the pin).
    pub pinned: Option<Pinned>,
    /// The judge policy registered for this set-up (`crate::policy`), named in every
    /// attempt's SlotMeta/1; `None` only for a roll no judge is called for.
    pub policy: Option<seal_core::policy::PolicyRef>,
}

/// A slot as its roll's reservation fixed it: the request every attempt sends, how many
/// attempts were reserved, and the model asked for. When this configuration builds another
/// request, the roll was reserved under another configuration (`judge::walk`).
#[derive(Debug, Clone, PartialEq)]
pub struct Pinned {
    pub request: Hash,
    pub max_attempts: u32,
    pub model: String,
}

impl Pinned {
    /// The pin a reservation's slot price carries, if it names a request.
    pub fn of(price: &SlotPrice) -> Option<Pinned> {
        Some(Pinned {
            request: price.request_sha256.clone()?,
            max_attempts: price.max_attempts,
            model: price.model.clone(),
        })
    }
}

/// One judge slot: its configuration, prompt, and its own HTTP client.
pub struct JudgeClient {
    pub slot: Slot,
    pub config: SlotConfig,
    pub prompt: PromptArtifact,
    /// Identifies this slot's `reqwest::Client` instance in every SlotMeta/1.
    pub logical_client_id: String,
    pub(super) http: reqwest::Client,
    pub(super) inflight: Arc<Semaphore>,
    pub(super) metrics: Arc<crate::metrics::Metrics>,
    /// Every configured secret, scrubbed from answers before they are stored.
    pub(super) redactor: Arc<super::redact::Redactor>,
    /// Who calls the judge for an attempt when replicas share the store.
    pub(super) lease: Arc<LeasePolicy>,
    /// Whether the judge can be reached (its circuit breaker, [`super::health`]).
    pub(super) health: super::health::SlotHealth,
}

/// Both slots and the secret salt their seeds and sessions derive from.
pub struct Judges {
    pub a: JudgeClient,
    pub b: JudgeClient,
    salt: Secret,
    /// This replica's name (leases, receipts).
    replica: String,
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// Why the judge clients could not be built from a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgesError {
    #[error(transparent)]
    Secret(#[from] crate::config::SecretError),
    /// A judge slot names a prompt the build does not carry.
    #[error(transparent)]
    Prompt(#[from] seal_core::prompts::PromptError),
    #[error("judge {slot}: HTTP client: {reason}")]
    Client {
        slot: seal_core::ids::Slot,
        reason: String,
    },
    /// A judge that takes a bearer key has none (or a header's variable is unset): refused
    /// here too, for a caller that skipped the start-up check (`Config::judge_credentials`).
    #[error("refusing to call the judges: {0}")]
    Credentials(#[from] crate::config::MissingCredentials),
}

impl HasFault for JudgesError {
    fn fault(&self) -> Fault {
        match self {
            JudgesError::Secret(e) => e.fault(),
            // The configuration names them: the operator's to fix.
            JudgesError::Prompt(_) => Fault::Config,
            JudgesError::Client { .. } => Fault::Infrastructure,
            JudgesError::Credentials(e) => e.fault(),
        }
    }
}

impl Judges {
    /// Both slots, refusing a judge without its credentials: a request without
    /// `Authorization` would be answered 401 and the run sealed INFRA_ERROR for good. A judge
    /// with `auth = "none"` while its key variable is set is started with a warning (the key
    /// is not sent: the setting may be a mistake).
    pub fn new(config: &Config) -> Result<Judges, JudgesError> {
        config.judge_credentials()?;
        for c in [&config.a, &config.b] {
            if let Some(note) = &c.base_url_note {
                tracing::warn!(slot = c.slot.as_str(), "judge base URL: {note}");
            }
            if let Some(var) = &c.unused_key_var {
                tracing::warn!(
                    slot = c.slot.as_str(),
                    var = %var,
                    "judge auth = \"none\" but {var} is set: the key is not sent"
                );
            }
        }
        Self::build(config)
    }

    /// Both slots for a replay of stored answers (`seal replay --judges stored`), which calls
    /// no judge: built without the credential check of [`Judges::new`].
    pub fn for_stored_answers(config: &Config) -> Result<Judges, JudgesError> {
        Self::build(config)
    }

    fn build(config: &Config) -> Result<Judges, JudgesError> {
        // 12 hex digits naming this process's clients (logical client ids, replica ids).
        let instance = hex::encode(rand::random::<[u8; 6]>());
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let salt = config.deployment_secret()?;
        let redactor = Arc::new(secrets_of(config, &salt));
        let lease = Arc::new(LeasePolicy {
            holder: config
                .leases
                .replica_id
                .clone()
                .unwrap_or_else(|| default_replica_id(&instance)),
            margin: config.leases.margin,
            max_clock_skew: config.leases.max_clock_skew,
        });
        let make = |c: &SlotConfig| -> Result<JudgeClient, JudgesError> {
            let http = http_client(c)?;
            Ok(JudgeClient {
                slot: c.slot,
                config: c.clone(),
                prompt: prompts::get(&c.prompt)?,
                logical_client_id: format!("seal/{instance}/judge-{}/reqwest", c.slot),
                http,
                inflight: Arc::new(Semaphore::new(config.server.max_inflight_per_slot)),
                metrics: metrics.clone(),
                redactor: redactor.clone(),
                lease: lease.clone(),
                health: super::health::SlotHealth::new(
                    c.slot,
                    config.server.judge_breaker,
                    metrics.clone(),
                ),
            })
        };
        Ok(Judges {
            a: make(&config.a)?,
            b: make(&config.b)?,
            salt,
            replica: lease.holder.clone(),
            metrics,
        })
    }

    pub fn get(&self, slot: Slot) -> &JudgeClient {
        match slot {
            Slot::A => &self.a,
            Slot::B => &self.b,
        }
    }

    pub fn salt(&self) -> &[u8] {
        self.salt.expose().as_bytes()
    }

    /// Probes each slot whose breaker says a probe is due, both at once.
    pub async fn probe_due(&self) {
        tokio::join!(self.a.probe_if_due(), self.b.probe_if_due());
    }

    /// `Some(wait)` while both slots are down: no roll can be judged, and the next probe is
    /// due in `wait` (at least a second, as a Retry-After).
    pub fn unavailable(&self) -> Option<Duration> {
        let (a, b) = (self.a.health(), self.b.health());
        (a.is_down() && b.is_down()).then(|| {
            a.retry_after()
                .min(b.retry_after())
                .max(Duration::from_secs(1))
        })
    }

    /// This replica's name (`SEAL_REPLICA_ID`, else host, pid and random bits).
    pub fn replica(&self) -> &str {
        &self.replica
    }
}

/// A slot's HTTP client: its timeouts and user agent. `seal judges check` builds its client
/// here too, so the check goes through the production path.
pub fn http_client(c: &SlotConfig) -> Result<reqwest::Client, JudgesError> {
    reqwest::Client::builder()
        .timeout(c.timeout)
        .connect_timeout(c.timeout.min(Duration::from_secs(10)))
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("seal/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| JudgesError::Client {
            slot: c.slot,
            reason: e.to_string(),
        })
}

/// A POST to the slot's endpoint with its credentials: the bearer key (`auth = "bearer"`) and
/// every configured header. Shared by the attempts and `seal judges check`.
pub fn authorized_post(http: &reqwest::Client, c: &SlotConfig) -> reqwest::RequestBuilder {
    let mut req = http
        .post(c.endpoint())
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    if let Some(key) = &c.api_key {
        req = req.bearer_auth(key.expose());
    }
    for h in &c.headers {
        if let Some(value) = &h.value {
            req = req.header(h.name.as_str(), value.expose());
        }
    }
    req
}

/// How a call ended at the HTTP level.
pub(super) enum Exchange {
    Answered {
        status: u16,
        retry_after: Option<Duration>,
        body: Bytes,
    },
    Failed {
        class: ErrorClass,
        detail: String,
    },
}

/// A redactor for every secret of the configuration (DESIGN §4).
fn secrets_of<'a>(config: &'a Config, salt: &'a Secret) -> super::redact::Redactor {
    let mut secrets: Vec<&str> = vec![salt.expose()];
    for k in [
        &config.a.api_key,
        &config.b.api_key,
        &config.server.bearer_token,
        &config.server.metrics_token,
    ]
    .into_iter()
    .flatten()
    {
        secrets.push(k.expose());
    }
    let header_values = config.a.headers.iter().chain(&config.b.headers);
    secrets.extend(header_values.filter_map(|h| h.value.as_ref().map(Secret::expose)));
    super::redact::Redactor::new(secrets)
}

/// A replica name unique to this set of judge clients, in the form of
/// [`crate::leasing::DefaultReplicaId`]: host, pid, this process's token and the clients'
/// instance. A restarted process on the same host recognises its dead predecessor's leases by
/// it (`leasing::holder_gone`) and takes them over at once.
fn default_replica_id(instance: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(64)
        .collect();
    let host = if host.is_empty() { "host".into() } else { host };
    format!(
        "{host}:{}:{}:{instance}",
        std::process::id(),
        process_token()
    )
}

/// 12 hex digits drawn once per process: what tells a process from an earlier one that had its
/// pid (a restarted container's process is often pid 1 again).
fn process_token() -> &'static str {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| hex::encode(rand::random::<[u8; 6]>()))
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

impl JudgeClient {
    pub(super) fn redact(&self, s: &str) -> String {
        match &self.config.api_key {
            Some(k) if !k.expose().is_empty() => s.replace(k.expose(), "[redacted]"),
            _ => s.to_string(),
        }
    }
    /// The worst-case cost of one attempt of this slot, in micro-RMB.
    pub fn worst_case_attempt_micro(&self, input_tokens: u64, images: u64) -> u64 {
        self.config
            .prices
            .cost_micro(input_tokens, self.config.max_tokens, images)
    }
    /// Upper bound on input tokens of a request: its text bytes (no tokenizer emits more
    /// tokens than bytes), images excluded (priced per image).
    pub fn input_token_bound(request: &Value) -> u64 {
        serde_json::to_vec(request)
            .map(|b| b.len() as u64)
            .unwrap_or(u64::MAX / 4)
    }
    /// Builds this slot's stored request for a job.
    pub fn build_request(&self, job: &SlotJob<'_>) -> Value {
        request::build(&request::RequestSpec {
            slot: self.slot,
            model: &self.config.model,
            prompt: &self.prompt,
            package_bytes: job.package_bytes,
            package_hash: job.package_hash,
            manifest: job.manifest,
            seed: job.seed,
            session_id: &job.session_id,
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            structured_output: self.config.structured_output,
        })
    }
    pub(super) fn backoff(&self, attempt_done: u32, retry_after: Option<Duration>) -> Duration {
        use rand::Rng;
        let base = self.config.backoff_base.as_millis() as u64;
        let exp = base.saturating_mul(1u64 << attempt_done.saturating_sub(1).min(16));
        let capped = exp.min(self.config.backoff_cap.as_millis() as u64);
        let jittered = (capped as f64 * rand::thread_rng().gen_range(0.5..=1.0)) as u64;
        let wait = Duration::from_millis(jittered);
        // Honour Retry-After, but never wait longer than a minute on a judge's word.
        match retry_after {
            Some(ra) => wait.max(ra.min(Duration::from_secs(60))),
            None => wait,
        }
    }
    pub(super) fn attempt_id<'a>(&self, job: &SlotJob<'a>, attempt: u32) -> AttemptId<'a> {
        AttemptId {
            run: job.run,
            roll: job.roll,
            slot: self.slot,
            attempt,
        }
    }
}

/// Longest a health probe waits for an answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

impl JudgeClient {
    /// Probes this slot if its breaker says a probe is due (never probed yet, or down with its
    /// cooldown over); records what the probe showed.
    pub async fn probe_if_due(&self) {
        if !self.health.with(|b, now| b.take_probe(now)) {
            return;
        }
        let outcome = self.probe().await;
        let t = self.health.with(|b, now| b.probe_result(now, outcome));
        self.health.report(t);
    }

    /// A POST of `{"model": …}` (no messages) to the slot's own endpoint with its own
    /// credentials: an OpenAI-compatible server answers 400 without running the model (nothing
    /// is paid), while a dead port, a wrong base URL (404) or a refused key (401/403) shows as
    /// down, exactly the faults the breaker is for.
    async fn probe(&self) -> health::Outcome {
        let body = serde_json::json!({ "model": self.config.model }).to_string();
        let sent = authorized_post(&self.http, &self.config)
            .timeout(PROBE_TIMEOUT)
            .body(body)
            .send()
            .await;
        match sent {
            Ok(resp) => health::Outcome::of_probe_status(resp.status().as_u16()),
            Err(e) => {
                let detail = self.redact(&super::transport::error_chain(&e));
                let detail: String = detail.chars().take(300).collect();
                health::Outcome::Down(format!(
                    "{} (no answer): {detail}",
                    super::transport::class_of_send(&e)
                ))
            }
        }
    }

    /// This slot's health.
    pub fn health(&self) -> &super::health::SlotHealth {
        &self.health
    }
}
