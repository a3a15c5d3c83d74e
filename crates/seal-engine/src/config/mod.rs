//! Configuration: `config/seal.toml` (embedded as the default), then environment overrides.
//!
//! Parsed in two steps, as ripgrep does with its arguments: the TOML is read into a raw serde
//! struct that refuses unknown keys, then converted once into a checked [`Config`]. Every error
//! names the file and the field.

mod judge_auth;
mod reviewer_tokens;
mod secret;

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zeroize::Zeroizing;

pub use judge_auth::{JudgeAuth, JudgeHeader, MissingCredentials};
pub use reviewer_tokens::{ReviewerToken, MIN_TOKEN_CHARS};
pub use secret::{write_secret_file, SecretError, SecretSource, MIN_SECRET_BYTES, SECRET_FILE};

use seal_core::ids::Slot;
pub use seal_log::cosign::WitnessSpec;

/// The embedded default configuration (the repository's `config/seal.toml`).
pub const EMBEDDED: &str = include_str!("../../../../config/seal.toml");
/// Where `--config` points when not given.
pub const DEFAULT_PATH: &str = "config/seal.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config {path}: {reason}")]
    Invalid { path: String, reason: String },
    /// An environment variable that overrides the config file holds a bad value: named as
    /// the source, since the file is not where the fix goes.
    #[error("environment variable {var}{overrides}: {reason}")]
    Env {
        var: String,
        /// ` (overrides judges.a.base_url of <config>)`, or empty.
        overrides: String,
        reason: String,
    },
}

fn env_error(var: &str, overrides: Option<String>, reason: String) -> ConfigError {
    ConfigError::Env {
        var: var.to_string(),
        overrides: overrides
            .map(|o| format!(" (overrides {o})"))
            .unwrap_or_default(),
        reason,
    }
}

/// A secret (API key, token, salt). Zeroed on drop; `Debug` never prints it.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(s: String) -> Secret {
        Secret(Zeroizing::new(s))
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    store: String,
    limits: RawLimits,
    budget: RawBudget,
    keys: RawKeys,
    policy: RawPolicy,
    server: RawServer,
    judges: RawJudges,
    #[serde(default)]
    log: Option<RawLog>,
    #[serde(default)]
    leases: Option<RawLeases>,
    #[serde(default)]
    witnesses: Vec<RawWitness>,
    #[serde(default)]
    witness_quorum: Option<usize>,
    #[serde(default)]
    telemetry: Option<RawTelemetry>,
    #[serde(default)]
    reviewers: Option<RawReviewers>,
}

/// `[telemetry]`: where traces go (docs/DEPLOYING.md §7).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTelemetry {
    #[serde(default)]
    otlp_endpoint: Option<String>,
}

/// Trace export, off unless an endpoint is configured (here or by the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT`, which the binary reads).
#[derive(Debug, Clone, Default)]
pub struct TelemetrySettings {
    /// `telemetry.otlp_endpoint`: the OTLP/HTTP base URL (`http://collector:4318`); traces are
    /// posted to its `/v1/traces`.
    pub otlp_endpoint: Option<String>,
}

/// `[reviewers]`: the people whose signed reviews of sealed runs are trusted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReviewers {
    trusted: Vec<String>,
    /// The environment variable holding the reviewers' read tokens (see `reviewer_tokens`).
    #[serde(default = "default_reviewer_tokens_env")]
    tokens_env: String,
}

fn default_reviewer_tokens_env() -> String {
    "SEAL_REVIEWER_TOKENS".into()
}

/// One `[[witnesses]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWitness {
    name: String,
    url: String,
    public_key: String,
    #[serde(default = "default_witness_timeout_ms")]
    timeout_ms: u64,
}

fn default_witness_timeout_ms() -> u64 {
    10_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLeases {
    #[serde(default = "default_lease_margin_ms")]
    margin_ms: u64,
    #[serde(default = "default_max_clock_skew_ms")]
    max_clock_skew_ms: u64,
}

fn default_lease_margin_ms() -> u64 {
    5_000
}
fn default_max_clock_skew_ms() -> u64 {
    10_000
}

/// Attempt leases across replicas (`[leases]`, see `crate::leasing`).
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    /// Added to a slot's timeout for a lease's lifetime.
    pub margin: Duration,
    /// Clock disagreement between replicas that leases tolerate.
    pub max_clock_skew: Duration,
    /// `SEAL_REPLICA_ID`: this replica's stable name (else one is made per process).
    pub replica_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLog {
    origin: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_document_bytes: u64,
    max_blob_bytes: u64,
    max_request_image_bytes: u64,
    #[serde(default)]
    max_events: Option<usize>,
    #[serde(default)]
    max_actions: Option<usize>,
    #[serde(default)]
    max_frames: Option<usize>,
    /// `admission_bytes` is this key's earlier name, still read.
    #[serde(default, alias = "admission_bytes")]
    request_memory_bytes: Option<u64>,
}

/// Default memory budget of the roll requests in progress (1 GiB).
pub const DEFAULT_REQUEST_MEMORY_BYTES: u64 = 1 << 30;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    run_rmb: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKeys {
    signing_key: String,
    trusted: Vec<String>,
    /// The deployment secret's file; default: `seal.secret` beside `signing_key`.
    #[serde(default)]
    secret: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    seed_salt_env: String,
    /// Refuse a roll whose two accepted answers were served by the same model.
    #[serde(default)]
    require_distinct_served_models: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: String,
    bearer_token_env: String,
    /// The read-only token `/metrics` also takes (see `server::metrics_auth`).
    #[serde(default = "default_metrics_token_env")]
    metrics_token_env: String,
    max_rolls_in_progress: usize,
    queue_bound: usize,
    max_inflight_per_slot: usize,
    request_timeout_ms: u64,
    shutdown_grace_ms: u64,
    #[serde(default = "default_max_connections")]
    max_connections: usize,
    #[serde(default = "default_header_timeout_ms")]
    header_timeout_ms: u64,
    #[serde(default = "default_body_timeout_ms")]
    body_timeout_ms: u64,
    /// Judge calls failing in a row at the transport or auth level that take a slot down
    /// (`seal_core::judge::health`); 0 turns the breaker off.
    #[serde(default = "default_breaker_failures")]
    judge_breaker_failures: u32,
    #[serde(default = "default_breaker_cooldown_ms")]
    judge_breaker_cooldown_ms: u64,
    #[serde(default = "default_breaker_max_cooldown_ms")]
    judge_breaker_max_cooldown_ms: u64,
}

fn default_breaker_failures() -> u32 {
    seal_core::judge::health::Policy::default().failures
}
fn default_breaker_cooldown_ms() -> u64 {
    seal_core::judge::health::Policy::default().cooldown_ms
}
fn default_breaker_max_cooldown_ms() -> u64 {
    seal_core::judge::health::Policy::default().max_cooldown_ms
}

fn default_metrics_token_env() -> String {
    "SEAL_METRICS_TOKEN".into()
}
fn default_max_connections() -> usize {
    1024
}
fn default_header_timeout_ms() -> u64 {
    10_000
}
fn default_body_timeout_ms() -> u64 {
    30_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJudges {
    a: RawSlot,
    b: RawSlot,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlot {
    base_url: String,
    model: String,
    api_key_env: String,
    /// `bearer` (the default: the key is required) or `none` (an endpoint that takes no key).
    #[serde(default)]
    auth: judge_auth::RawAuth,
    /// Plain `http://` to a host that is not loopback (an in-cluster gateway); logged at start.
    #[serde(default)]
    allow_plain_http: bool,
    /// Extra request headers: header name → the env var holding its (secret) value.
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    prompt: String,
    timeout_ms: u64,
    max_retries: u32,
    structured_output: bool,
    max_tokens: u64,
    temperature: f64,
    backoff_base_ms: u64,
    backoff_cap_ms: u64,
    prices: RawPrices,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrices {
    input_rmb_per_mtok: f64,
    output_rmb_per_mtok: f64,
    image_rmb: f64,
}

/// Prices of one judge model, in micro-RMB so that costs add up exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    pub input_rmb_per_mtok: f64,
    pub output_rmb_per_mtok: f64,
    pub image_rmb: f64,
}

impl Prices {
    /// Cost of one call in micro-RMB, rounded up (a reservation must never undercount).
    pub fn cost_micro(&self, input_tokens: u64, output_tokens: u64, images: u64) -> u64 {
        let micro = input_tokens as f64 * self.input_rmb_per_mtok
            + output_tokens as f64 * self.output_rmb_per_mtok
            + images as f64 * self.image_rmb * 1_000_000.0;
        micro.max(0.0).ceil() as u64
    }
}

/// One judge slot, checked.
#[derive(Debug, Clone)]
pub struct SlotConfig {
    pub slot: Slot,
    /// The base URL, `/chat/completions` appended by [`SlotConfig::endpoint`]; a configured URL
    /// that already ended in it has lost that suffix here ([`SlotConfig::base_url_note`]).
    pub base_url: url::Url,
    /// Why the configured base URL was changed (it ended in `/chat/completions`), naming where
    /// it came from: `seal judges check` prints it and `serve` warns with it at start.
    pub base_url_note: Option<String>,
    pub model: String,
    pub api_key: Option<Secret>,
    pub api_key_source: String,
    /// Whether the judge takes a bearer key (`judges.<s>.auth`).
    pub auth: JudgeAuth,
    /// With `auth = "none"`: the key variable that is set all the same (its value is never
    /// sent); the judges warn about it at start.
    pub unused_key_var: Option<String>,
    /// `judges.<s>.allow_plain_http`: plain http to a non-loopback host was asked for.
    pub allow_plain_http: bool,
    /// `judges.<s>.headers`: sent with every call; values are secrets.
    pub headers: Vec<JudgeHeader>,
    pub prompt: String,
    pub timeout: Duration,
    pub max_retries: u32,
    pub structured_output: bool,
    pub max_tokens: u64,
    pub temperature: f64,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub prices: Prices,
}

impl SlotConfig {
    /// The chat-completions endpoint.
    pub fn endpoint(&self) -> String {
        format!(
            "{}{ENDPOINT_PATH}",
            self.base_url.as_str().trim_end_matches('/')
        )
    }
    /// [`SlotConfig::endpoint`] as printed: without user info, which may hold a password.
    pub fn shown_endpoint(&self) -> String {
        format!("{}{ENDPOINT_PATH}", without_userinfo(&self.base_url))
    }
    pub fn host(&self) -> String {
        let host = self.base_url.host_str().unwrap_or("");
        match self.base_url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        }
    }
    pub fn max_attempts(&self) -> u32 {
        self.max_retries + 1
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: String,
    /// The API token: every route but `/healthz` demands it when set.
    pub bearer_token: Option<Secret>,
    /// The read-only metrics token: `/metrics` takes it (and the API token), nothing else does.
    pub metrics_token: Option<Secret>,
    pub max_rolls_in_progress: usize,
    pub queue_bound: usize,
    pub max_inflight_per_slot: usize,
    pub request_timeout: Duration,
    pub shutdown_grace: Duration,
    /// Open connections served at once; past it a new connection gets 503 and is closed.
    pub max_connections: usize,
    /// Longest wait for a request's head, also the idle keep-alive time.
    pub header_timeout: Duration,
    /// Longest a request body may stall between two chunks.
    pub body_timeout: Duration,
    /// When a judge slot counts as down, and how it is probed (docs/DESIGN.md §8).
    pub judge_breaker: seal_core::judge::health::Policy,
}

/// The checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub source: String,
    pub store: String,
    pub max_document_bytes: u64,
    pub max_blob_bytes: u64,
    pub max_request_image_bytes: u64,
    /// Most events, actions and frames of one proof package.
    pub package_limits: seal_core::limits::PackageLimits,
    /// Memory budget of the roll requests in progress: each is charged its body size times
    /// `server::ROLL_AMPLIFICATION`; past the budget the API answers 429.
    pub request_memory_bytes: u64,
    pub budget_run_micro: u64,
    pub signing_key: PathBuf,
    pub trusted_keys: Vec<PathBuf>,
    /// SPKI PEM public keys of the reviewers whose reviews are trusted (`reviewers.trusted`,
    /// also `--trust-reviewer`); a seal key is never one.
    pub reviewer_keys: Vec<PathBuf>,
    /// The reviewers' read tokens for the review workbench (`reviewers.tokens_env`, from the
    /// environment only); none: the workbench is closed.
    pub reviewer_tokens: Vec<ReviewerToken>,
    /// Where the deployment secret comes from; read only by the commands that need it
    /// ([`Config::deployment_secret`]).
    pub secret: SecretSource,
    /// The transparency log's origin line and signed-note key name (`log.origin`).
    pub log_origin: String,
    /// `policy.require_distinct_served_models`: the judge policy's
    /// `requireDistinctServedModels` (a roll whose two accepted answers name the same served
    /// model fails the postguard's `independence` check).
    pub require_distinct_served_models: bool,
    pub leases: LeaseSettings,
    /// Witnesses every checkpoint is sent to, and whose cosignatures verifiers require
    /// (`[[witnesses]]`, docs/DESIGN.md §13).
    pub witnesses: Vec<WitnessSpec>,
    /// How many of them must have cosigned (`witness_quorum`; None: all).
    pub witness_quorum: Option<usize>,
    pub server: ServerConfig,
    pub a: SlotConfig,
    pub b: SlotConfig,
    pub telemetry: TelemetrySettings,
}

impl Config {
    /// Loads `path` (or the embedded default when `path` is None and `config/seal.toml` is
    /// absent), applying environment overrides from the process environment.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_with_env(path, &|k| std::env::var(k).ok())
    }

    pub fn load_with_env(
        path: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let (source, text) = match path {
            Some(p) => {
                let text = read_limited(p, &p.display().to_string())?;
                (p.display().to_string(), text)
            }
            None if Path::new(DEFAULT_PATH).is_file() => {
                let p = Path::new(DEFAULT_PATH);
                let text = read_limited(p, DEFAULT_PATH)?;
                (DEFAULT_PATH.to_string(), text)
            }
            None => (
                "<embedded config/seal.toml>".to_string(),
                EMBEDDED.to_string(),
            ),
        };
        Self::parse(&source, &text, env)
    }

    /// Parses TOML text and applies environment overrides.
    pub fn parse(
        source: &str,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let err = |reason: String| ConfigError::Invalid {
            path: source.to_string(),
            reason,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
        let timeout_override = match nonempty(env("SEAL_JUDGE_TIMEOUT_MS")) {
            Some(v) => Some(
                v.parse::<u64>()
                    .ok()
                    .filter(|&ms| ms > 0 && ms <= 3_600_000)
                    .ok_or_else(|| {
                        env_error(
                            "SEAL_JUDGE_TIMEOUT_MS",
                            Some(format!("judges.*.timeout_ms of {source}")),
                            format!("{v:?} is not a number of milliseconds in 1..=3600000"),
                        )
                    })?,
            ),
            None => None,
        };
        // The breaker's threshold from the environment: `0` turns it off (a test that scripts
        // judge outages on purpose), a number sets it.
        let breaker_failures = match nonempty(env("SEAL_JUDGE_BREAKER_FAILURES")) {
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= 1000)
                .ok_or_else(|| {
                    env_error(
                        "SEAL_JUDGE_BREAKER_FAILURES",
                        Some(format!("server.judge_breaker_failures of {source}")),
                        format!("{v:?} is not a number of calls in 0..=1000"),
                    )
                })?,
            None => raw.server.judge_breaker_failures,
        };
        let a = slot_config(source, Slot::A, &raw.judges.a, env, timeout_override)?;
        let b = slot_config(source, Slot::B, &raw.judges.b, env, timeout_override)?;
        if a.prompt == b.prompt {
            return Err(err(
                "judges.a.prompt and judges.b.prompt must differ (independent prompt artifacts)"
                    .into(),
            ));
        }
        check_bounds(source, &raw)?;
        let (l, s) = (&raw.limits, &raw.server);
        let signing_key = PathBuf::from(&raw.keys.signing_key);
        let tokens_env = raw
            .reviewers
            .as_ref()
            .map(|r| r.tokens_env.clone())
            .unwrap_or_else(default_reviewer_tokens_env);
        let reviewer_tokens = reviewer_tokens::parse(&tokens_env, env(&tokens_env).as_deref())?;
        let secret = SecretSource {
            env_var: raw.policy.seed_salt_env.clone(),
            env_value: nonempty(env(&raw.policy.seed_salt_env)).map(Secret::new),
            file: match &raw.keys.secret {
                Some(p) => PathBuf::from(p),
                None => secret::default_secret_file(&signing_key),
            },
            file_configured: raw.keys.secret.is_some(),
        };
        let log_origin = log_origin(source, raw.log.as_ref())?;
        let leases = lease_settings(source, raw.leases.as_ref(), env)?;
        let witnesses = witness_specs(source, &raw.witnesses, raw.witness_quorum)?;
        let telemetry = telemetry_settings(source, raw.telemetry.as_ref())?;
        Ok(Config {
            source: source.to_string(),
            store: raw.store,
            max_document_bytes: l.max_document_bytes,
            max_blob_bytes: l.max_blob_bytes,
            max_request_image_bytes: l.max_request_image_bytes,
            package_limits: {
                let d = seal_core::limits::PackageLimits::default();
                seal_core::limits::PackageLimits {
                    max_events: l.max_events.unwrap_or(d.max_events),
                    max_actions: l.max_actions.unwrap_or(d.max_actions),
                    max_frames: l.max_frames.unwrap_or(d.max_frames),
                }
            },
            request_memory_bytes: l
                .request_memory_bytes
                .unwrap_or(DEFAULT_REQUEST_MEMORY_BYTES),
            budget_run_micro: seal_core::doc::rmb_to_micro(raw.budget.run_rmb),
            signing_key,
            trusted_keys: raw.keys.trusted.into_iter().map(PathBuf::from).collect(),
            reviewer_keys: raw
                .reviewers
                .as_ref()
                .map(|r| r.trusted.iter().map(PathBuf::from).collect())
                .unwrap_or_default(),
            reviewer_tokens,
            secret,
            log_origin,
            require_distinct_served_models: raw.policy.require_distinct_served_models,
            leases,
            witnesses,
            witness_quorum: raw.witness_quorum,
            server: ServerConfig {
                listen: s.listen.clone(),
                bearer_token: nonempty(env(&s.bearer_token_env)).map(Secret::new),
                metrics_token: nonempty(env(&s.metrics_token_env)).map(Secret::new),
                max_rolls_in_progress: s.max_rolls_in_progress,
                queue_bound: s.queue_bound,
                max_inflight_per_slot: s.max_inflight_per_slot,
                request_timeout: Duration::from_millis(s.request_timeout_ms.max(1)),
                shutdown_grace: Duration::from_millis(s.shutdown_grace_ms),
                max_connections: s.max_connections.max(1),
                header_timeout: Duration::from_millis(s.header_timeout_ms.max(1)),
                body_timeout: Duration::from_millis(s.body_timeout_ms.max(1)),
                judge_breaker: seal_core::judge::health::Policy {
                    failures: breaker_failures,
                    cooldown_ms: s.judge_breaker_cooldown_ms.max(1),
                    max_cooldown_ms: s
                        .judge_breaker_max_cooldown_ms
                        .max(s.judge_breaker_cooldown_ms.max(1)),
                },
            },
            a,
            b,
            telemetry,
        })
    }

    pub fn slot(&self, slot: Slot) -> &SlotConfig {
        match slot {
            Slot::A => &self.a,
            Slot::B => &self.b,
        }
    }
}

/// A configuration file `source` that breaks a rule, with the reason.
fn invalid(source: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path: source.to_string(),
        reason: reason.into(),
    }
}

fn read_limited(p: &Path, shown: &str) -> Result<String, ConfigError> {
    // No link, no FIFO or device, at most 1 MiB read (see `fsio`).
    seal_fs::fsio::read_string(p, 1024 * 1024).map_err(|e| match e {
        seal_fs::fsio::FsError::TooLarge { .. } => invalid(shown, "a config file is at most 1 MiB"),
        other => invalid(shown, format!("cannot read: {other}")),
    })
}

/// A slot's retry, token, temperature and price settings are in range (the reason, else).
fn slot_limits(
    source: &str,
    r: &RawSlot,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    if r.max_retries > 2 {
        return Err(invalid(
            source,
            format!(
                "{}: {} > 2 (docs/DESIGN.md §2: at most 3 attempts)",
                field("max_retries"),
                r.max_retries
            ),
        ));
    }
    if r.max_tokens == 0 || r.max_tokens > 1_000_000 {
        return Err(invalid(
            source,
            format!("{}: must be in 1..=1000000", field("max_tokens")),
        ));
    }
    if !(0.0..=2.0).contains(&r.temperature) {
        return Err(invalid(
            source,
            format!("{}: must be in 0..=2", field("temperature")),
        ));
    }
    let p = &r.prices;
    for (name, v) in [
        ("input_rmb_per_mtok", p.input_rmb_per_mtok),
        ("output_rmb_per_mtok", p.output_rmb_per_mtok),
        ("image_rmb", p.image_rmb),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(invalid(
                source,
                format!(
                    "{}: must be a non-negative number",
                    field(&format!("prices.{name}"))
                ),
            ));
        }
    }
    Ok(())
}

/// One judge slot's configuration: the file's values under the environment's overrides,
/// each checked (a loopback judge alone may speak plain http; at most 2 retries; sane limits).
fn slot_config(
    source: &str,
    slot: Slot,
    r: &RawSlot,
    env: &dyn Fn(&str) -> Option<String>,
    timeout_override: Option<u64>,
) -> Result<SlotConfig, ConfigError> {
    let err = |reason: String| ConfigError::Invalid {
        path: source.to_string(),
        reason,
    };
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let up = slot.upper();
    let field = |name: &str| format!("judges.{}.{name}", slot.as_str());
    let url_var = format!("SEAL_JUDGE_{up}_URL");
    let from_env = nonempty(env(&url_var));
    let url_err = |reason: String| match from_env.is_some() {
        true => env_error(
            &url_var,
            Some(format!("{} of {source}", field("base_url"))),
            reason,
        ),
        false => err(format!("{}: {reason}", field("base_url"))),
    };
    let (url_text, url_from) = match &from_env {
        Some(u) => (u.clone(), url_var.clone()),
        None => (
            r.base_url.clone(),
            format!("{} of {source}", field("base_url")),
        ),
    };
    let base_url = url::Url::parse(&url_text).map_err(|e| url_err(format!("{url_text:?}: {e}")))?;
    let (base_url, base_url_note) = without_endpoint_suffix(base_url, &url_from);
    if !matches!(base_url.scheme(), "http" | "https") {
        return Err(url_err("scheme must be http or https".into()));
    }
    if base_url.scheme() == "http"
        && !r.allow_plain_http
        && !seal_store::is_loopback_host(base_url.host_str().unwrap_or(""))
    {
        return Err(url_err(format!(
            "plain http is allowed only for a loopback judge (API keys would travel in \
             clear); set {} = true for an in-cluster gateway",
            field("allow_plain_http")
        )));
    }
    let model = nonempty(env(&format!("SEAL_JUDGE_{up}_MODEL"))).unwrap_or_else(|| r.model.clone());
    if model.is_empty() {
        return Err(err(format!("{}: empty", field("model"))));
    }
    let (api_key, api_key_source) = match nonempty(env(&format!("SEAL_JUDGE_{up}_KEY"))) {
        Some(k) => (Some(Secret::new(k)), format!("SEAL_JUDGE_{up}_KEY")),
        None => (
            nonempty(env(&r.api_key_env)).map(Secret::new),
            r.api_key_env.clone(),
        ),
    };
    let auth: JudgeAuth = r.auth.into();
    let unused_key_var =
        (auth == JudgeAuth::None && api_key.is_some()).then(|| api_key_source.clone());
    // `auth = "none"` sends no key even when one is set: the setting says what the judge takes.
    let api_key = api_key.filter(|_| auth == JudgeAuth::Bearer);
    let headers = judge_auth::headers(source, &field("headers"), &r.headers, env)?;
    slot_limits(source, r, &field)?;
    let p = &r.prices;
    let timeout_ms = timeout_override.unwrap_or(r.timeout_ms);
    if timeout_ms == 0 {
        return Err(err(format!("{}: must be positive", field("timeout_ms"))));
    }
    Ok(SlotConfig {
        slot,
        base_url,
        base_url_note,
        model,
        api_key,
        api_key_source,
        auth,
        unused_key_var,
        allow_plain_http: r.allow_plain_http,
        headers,
        prompt: r.prompt.clone(),
        timeout: Duration::from_millis(timeout_ms),
        max_retries: r.max_retries,
        structured_output: r.structured_output,
        max_tokens: r.max_tokens,
        temperature: r.temperature,
        backoff_base: Duration::from_millis(r.backoff_base_ms),
        backoff_cap: Duration::from_millis(r.backoff_cap_ms.max(r.backoff_base_ms)),
        prices: Prices {
            input_rmb_per_mtok: p.input_rmb_per_mtok,
            output_rmb_per_mtok: p.output_rmb_per_mtok,
            image_rmb: p.image_rmb,
        },
    })
}

/// The path seal appends to a judge's base URL.
const ENDPOINT_PATH: &str = "/chat/completions";

/// `url` without a trailing `/chat/completions`, and the note saying so (naming `from`, the
/// setting or variable it came from). Providers document the full endpoint as often as the base
/// URL, so either is taken: refusing the full one would only send the operator to edit a value
/// whose meaning is plain, and appending again would post to `…/chat/completions/chat/completions`,
/// which every provider answers 404 (read as "model unknown").
fn without_endpoint_suffix(mut url: url::Url, from: &str) -> (url::Url, Option<String>) {
    let path = url.path().trim_end_matches('/');
    let Some(base) = path.strip_suffix(ENDPOINT_PATH) else {
        return (url, None);
    };
    let base = base.to_string();
    url.set_path(&base);
    let note = format!(
        "{from} ends in {ENDPOINT_PATH}, which seal appends itself: using {} as the base URL \
         (drop the suffix to silence this note)",
        without_userinfo(&url)
    );
    (url, Some(note))
}

/// `url` without user info and trailing `/`, for output and logs.
fn without_userinfo(url: &url::Url) -> String {
    let mut shown = url.clone();
    // Only a URL that cannot have user info (no host) refuses these, and it has none.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.as_str().trim_end_matches('/').to_string()
}

/// The numeric and URL bounds of a parsed config file, each naming its field.
fn check_bounds(source: &str, raw: &RawConfig) -> Result<(), ConfigError> {
    if !raw.budget.run_rmb.is_finite() || raw.budget.run_rmb < 0.0 {
        return Err(invalid(
            source,
            "budget.run_rmb: must be a non-negative number",
        ));
    }
    let l = &raw.limits;
    if l.max_document_bytes < 1024 || l.max_blob_bytes < 1024 {
        return Err(invalid(
            source,
            "limits: max_document_bytes and max_blob_bytes must be at least 1024",
        ));
    }
    let s = &raw.server;
    if s.max_rolls_in_progress == 0 || s.max_inflight_per_slot == 0 {
        return Err(invalid(
            source,
            "server: max_rolls_in_progress and max_inflight_per_slot must be positive",
        ));
    }
    seal_store::StoreUrl::parse(&raw.store).map_err(|e| invalid(source, format!("store: {e}")))?;
    Ok(())
}

/// `log.origin`, or the default, checked.
fn log_origin(source: &str, raw: Option<&RawLog>) -> Result<String, ConfigError> {
    let origin = raw
        .map(|l| l.origin.clone())
        .unwrap_or_else(|| seal_core::tlog::DEFAULT_ORIGIN.to_string());
    if !seal_core::tlog::is_origin_valid(&origin) {
        return Err(invalid(source, format!(
            "log.origin: {origin:?} must be non-empty, without spaces or '+' (e.g. seal.example.com/log)"
        )));
    }
    Ok(origin)
}

/// `[[witnesses]]` and `witness_quorum`, checked: valid distinct names, http(s) URLs, a key
/// path each, a timeout of at most 10 minutes, a quorum between 1 and the number of witnesses.
fn witness_specs(
    source: &str,
    raw: &[RawWitness],
    quorum: Option<usize>,
) -> Result<Vec<WitnessSpec>, ConfigError> {
    let mut out: Vec<WitnessSpec> = Vec::new();
    for (i, w) in raw.iter().enumerate() {
        let field = |f: &str| format!("witnesses[{i}].{f}");
        if !signed_note::is_key_name_valid(&w.name) || out.iter().any(|o| o.name == w.name) {
            return Err(invalid(source, format!(
                "{}: {:?} must be a distinct name without spaces or '+' (e.g. witness.example.com/w1)",
                field("name"),
                w.name
            )));
        }
        let url = url::Url::parse(&w.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.query().is_none())
            .ok_or_else(|| {
                invalid(
                    source,
                    format!("{}: {:?} is not an http(s) URL prefix", field("url"), w.url),
                )
            })?;
        if w.public_key.is_empty() {
            return Err(invalid(source, format!("{}: empty", field("public_key"))));
        }
        if w.timeout_ms == 0 || w.timeout_ms > 600_000 {
            return Err(invalid(
                source,
                format!("{}: must be in 1..=600000", field("timeout_ms")),
            ));
        }
        out.push(WitnessSpec {
            name: w.name.clone(),
            url,
            public_key: PathBuf::from(&w.public_key),
            timeout: Duration::from_millis(w.timeout_ms),
        });
    }
    if let Some(q) = quorum {
        if q == 0 || q > out.len() {
            return Err(invalid(
                source,
                format!(
                    "witness_quorum: {q} must be between 1 and the {} [[witnesses]] configured",
                    out.len()
                ),
            ));
        }
    }
    Ok(out)
}

/// `[telemetry]`, checked: an endpoint is an http(s) URL without user info (it is logged).
fn telemetry_settings(
    source: &str,
    raw: Option<&RawTelemetry>,
) -> Result<TelemetrySettings, ConfigError> {
    let Some(text) = raw.and_then(|r| r.otlp_endpoint.as_deref()) else {
        return Ok(TelemetrySettings::default());
    };
    let bad = |why: &str| {
        let shown: String = text
            .chars()
            .take(200)
            .flat_map(char::escape_default)
            .collect();
        invalid(source, format!("telemetry.otlp_endpoint: {shown:?}: {why}"))
    };
    let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad("an http(s) URL with a host is required"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "no user info: put credentials in OTEL_EXPORTER_OTLP_HEADERS",
        ));
    }
    Ok(TelemetrySettings {
        otlp_endpoint: Some(text.trim_end_matches('/').to_string()),
    })
}

/// `[leases]` and `SEAL_REPLICA_ID`, checked.
fn lease_settings(
    source: &str,
    raw: Option<&RawLeases>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LeaseSettings, ConfigError> {
    let (margin_ms, skew_ms) = raw
        .map(|r| (r.margin_ms, r.max_clock_skew_ms))
        .unwrap_or((default_lease_margin_ms(), default_max_clock_skew_ms()));
    if margin_ms > 3_600_000 || skew_ms > 3_600_000 {
        return Err(invalid(
            source,
            "leases: margin_ms and max_clock_skew_ms must be at most 3600000 (1 h)",
        ));
    }
    let replica_id = match env("SEAL_REPLICA_ID").filter(|s| !s.is_empty()) {
        Some(id) => {
            let ok = id.len() <= 128
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b));
            if !ok {
                let shown: String = id.chars().take(40).flat_map(char::escape_default).collect();
                return Err(invalid(
                    source,
                    format!(
                    "SEAL_REPLICA_ID={shown:?}: at most 128 of letters, digits, '.', '_', '-', ':'"
                ),
                ));
            }
            Some(id)
        }
        None => None,
    };
    Ok(LeaseSettings {
        margin: Duration::from_millis(margin_ms),
        max_clock_skew: Duration::from_millis(skew_ms),
        replica_id,
    })
}

#[cfg(test)]
mod tests;
