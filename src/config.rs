//! Configuration: `config/seal.toml` (embedded as the default), then environment overrides.
//!
//! Parsed in two steps, as ripgrep does with its arguments: the TOML is read into a raw serde
//! struct that refuses unknown keys, then converted once into a checked [`Config`]. Every error
//! names the file and the field.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zeroize::Zeroizing;

use crate::ids::Slot;

/// The embedded default configuration (the repository's `config/seal.toml`).
pub const EMBEDDED: &str = include_str!("../config/seal.toml");
/// Where `--config` points when not given.
pub const DEFAULT_PATH: &str = "config/seal.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config {path}: {reason}")]
    Invalid { path: String, reason: String },
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

/// Attempt leases across replicas (`[leases]`, see `crate::lease`).
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
    #[serde(default)]
    admission_bytes: Option<u64>,
}

/// Default memory budget of the roll requests in progress (1 GiB).
pub const DEFAULT_ADMISSION_BYTES: u64 = 1 << 30;

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
    pub base_url: url::Url,
    pub model: String,
    pub api_key: Option<Secret>,
    pub api_key_source: String,
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
            "{}/chat/completions",
            self.base_url.as_str().trim_end_matches('/')
        )
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
    pub package_limits: crate::limits::PackageLimits,
    /// Memory budget of the roll requests in progress: each is charged its body size times
    /// `server::ROLL_AMPLIFICATION`; past the budget the API answers 429.
    pub admission_bytes: u64,
    pub budget_run_micro: u64,
    pub signing_key: PathBuf,
    pub trusted_keys: Vec<PathBuf>,
    /// Where the deployment secret comes from; read only by the commands that need it
    /// ([`Config::deployment_secret`]).
    pub secret: SecretSource,
    /// The transparency log's origin line and signed-note key name (`log.origin`).
    pub log_origin: String,
    pub leases: LeaseSettings,
    /// Witnesses every checkpoint is sent to, and whose cosignatures verifiers require
    /// (`[[witnesses]]`, docs/DESIGN.md §13).
    pub witnesses: Vec<crate::witness::WitnessSpec>,
    /// How many of them must have cosigned (`witness_quorum`; None: all).
    pub witness_quorum: Option<usize>,
    pub server: ServerConfig,
    pub a: SlotConfig,
    pub b: SlotConfig,
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
                let text = read_limited(p).map_err(|reason| ConfigError::Invalid {
                    path: p.display().to_string(),
                    reason,
                })?;
                (p.display().to_string(), text)
            }
            None if Path::new(DEFAULT_PATH).is_file() => {
                let p = Path::new(DEFAULT_PATH);
                let text = read_limited(p).map_err(|reason| ConfigError::Invalid {
                    path: DEFAULT_PATH.into(),
                    reason,
                })?;
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
            Some(v) => Some(v.parse::<u64>().ok().filter(|&ms| ms > 0 && ms <= 3_600_000).ok_or_else(
                || err(format!("SEAL_JUDGE_TIMEOUT_MS={v:?} is not a number of milliseconds in 1..=3600000")),
            )?),
            None => None,
        };
        let a = slot_config(source, Slot::A, &raw.judges.a, env, timeout_override)?;
        let b = slot_config(source, Slot::B, &raw.judges.b, env, timeout_override)?;
        if a.prompt == b.prompt {
            return Err(err(
                "judges.a.prompt and judges.b.prompt must differ (independent prompt artifacts)"
                    .into(),
            ));
        }
        check_bounds(&raw).map_err(err)?;
        let (l, s) = (&raw.limits, &raw.server);
        let signing_key = PathBuf::from(&raw.keys.signing_key);
        let secret = SecretSource {
            env_var: raw.policy.seed_salt_env.clone(),
            env_value: nonempty(env(&raw.policy.seed_salt_env)).map(Secret::new),
            file: match &raw.keys.secret {
                Some(p) => PathBuf::from(p),
                None => default_secret_file(&signing_key),
            },
            file_configured: raw.keys.secret.is_some(),
        };
        let log_origin = log_origin(raw.log.as_ref()).map_err(err)?;
        let leases = lease_settings(raw.leases.as_ref(), env).map_err(err)?;
        let witnesses = witness_specs(&raw.witnesses, raw.witness_quorum).map_err(err)?;
        Ok(Config {
            source: source.to_string(),
            store: raw.store,
            max_document_bytes: l.max_document_bytes,
            max_blob_bytes: l.max_blob_bytes,
            max_request_image_bytes: l.max_request_image_bytes,
            package_limits: {
                let d = crate::limits::PackageLimits::default();
                crate::limits::PackageLimits {
                    max_events: l.max_events.unwrap_or(d.max_events),
                    max_actions: l.max_actions.unwrap_or(d.max_actions),
                    max_frames: l.max_frames.unwrap_or(d.max_frames),
                }
            },
            admission_bytes: l.admission_bytes.unwrap_or(DEFAULT_ADMISSION_BYTES),
            budget_run_micro: crate::doc::rmb_to_micro(raw.budget.run_rmb),
            signing_key,
            trusted_keys: raw.keys.trusted.into_iter().map(PathBuf::from).collect(),
            secret,
            log_origin,
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
            },
            a,
            b,
        })
    }

    pub fn slot(&self, slot: Slot) -> &SlotConfig {
        match slot {
            Slot::A => &self.a,
            Slot::B => &self.b,
        }
    }
}

/// The name `seal keygen` gives the deployment secret's file, beside the signing key.
pub const SECRET_FILE: &str = "seal.secret";
/// The shortest deployment secret accepted, in bytes (256 bits: never guessable).
pub const MIN_SECRET_BYTES: usize = 32;
/// Largest secret file read (`keygen` writes 65 bytes).
const MAX_SECRET_FILE: u64 = 4096;

/// Where the deployment secret comes from (docs/DESIGN.md §4): the environment variable named
/// by `policy.seed_salt_env` when it is set, else the file `keys.secret` (default:
/// `seal.secret` beside `keys.signing_key`). Seeds, sessions and attempt MACs are keyed by it.
///
/// Decision: there is no fallback. A constant in the source would let anyone who reads it
/// forge attempt MACs; a command that needs the secret and finds none refuses, saying how to
/// make one. Read-only commands (verify, explain, stats, log, export, validate) never ask.
#[derive(Debug, Clone)]
pub struct SecretSource {
    /// `policy.seed_salt_env`.
    pub env_var: String,
    /// That variable's value when the configuration was loaded (None: unset or empty).
    env_value: Option<Secret>,
    /// `keys.secret`: read when the variable is unset.
    pub file: PathBuf,
    /// Whether `keys.secret` was set (else `file` follows the signing key in use).
    file_configured: bool,
}

/// Why the deployment secret cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "{source_name}: the deployment secret is {len} bytes, at least {MIN_SECRET_BYTES} are \
         required (e.g. `openssl rand -hex 32`)"
    )]
    TooShort { source_name: String, len: usize },
    #[error("no deployment secret: {var} is not set and {path} does not exist; {how}")]
    Missing {
        var: String,
        path: String,
        how: String,
    },
    #[error("deployment secret {path}: {reason}")]
    Unusable { path: String, reason: String },
    #[error("deployment secret {0}")]
    File(crate::fsio::FsError),
}

impl crate::fault::HasFault for SecretError {
    fn fault(&self) -> crate::fault::Fault {
        // Like a missing signing key: the deployment is not set up to judge or seal.
        crate::fault::Fault::Infrastructure
    }
}

impl SecretSource {
    /// The secret: the variable's value, else the file's text (mode 0600, no link, no special
    /// file, one trailing newline ignored); at least [`MIN_SECRET_BYTES`] either way.
    pub fn load(&self) -> Result<Secret, SecretError> {
        if let Some(value) = &self.env_value {
            let len = value.expose().len();
            if len < MIN_SECRET_BYTES {
                return Err(SecretError::TooShort {
                    source_name: self.env_var.clone(),
                    len,
                });
            }
            return Ok(value.clone());
        }
        read_secret_file(&self.file).map_err(|e| match e {
            SecretError::File(crate::fsio::FsError::Missing { .. }) => SecretError::Missing {
                var: self.env_var.clone(),
                path: self.file.display().to_string(),
                how: how_to_make(&self.file, &self.env_var),
            },
            other => other,
        })
    }
}

impl Config {
    /// The deployment secret (see [`SecretSource`]): only the commands that judge, resume or
    /// seal call this.
    pub fn deployment_secret(&self) -> Result<Secret, SecretError> {
        self.secret.load()
    }

    /// This configuration signing with the key at `path` (a `--key` option) when given:
    /// unless `keys.secret` names the secret file, it is then the `seal.secret` beside that
    /// key, where `seal keygen` put it.
    pub fn with_signing_key(mut self, path: Option<&Path>) -> Config {
        if let Some(path) = path {
            if !self.secret.file_configured {
                self.secret.file = default_secret_file(path);
            }
            self.signing_key = path.to_path_buf();
        }
        self
    }
}

/// `seal.secret` in the signing key's folder.
fn default_secret_file(signing_key: &Path) -> PathBuf {
    match signing_key.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(SECRET_FILE),
        _ => PathBuf::from(SECRET_FILE),
    }
}

fn how_to_make(file: &Path, var: &str) -> String {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if file.file_name().and_then(|n| n.to_str()) == Some(SECRET_FILE) {
        format!(
            "make one with `seal keygen --out {} --if-missing`, or set {var} to at least \
             {MIN_SECRET_BYTES} random bytes",
            dir.display()
        )
    } else {
        format!(
            "make one with `(umask 077; openssl rand -hex 32 > {})`, or set {var} to at least \
             {MIN_SECRET_BYTES} random bytes",
            file.display()
        )
    }
}

/// Reads a secret file the way a private key is read: the mode of the file actually opened
/// must deny group and others, and at most [`MAX_SECRET_FILE`] bytes are read.
fn read_secret_file(path: &Path) -> Result<Secret, SecretError> {
    use std::os::unix::fs::PermissionsExt;
    let unusable = |reason: String| SecretError::Unusable {
        path: path.display().to_string(),
        reason,
    };
    let file = crate::fsio::open(path).map_err(SecretError::File)?;
    let mode = file
        .metadata()
        .map_err(|e| unusable(format!("cannot read: {e}")))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(unusable(format!(
            "readable by group or others (mode {mode:o}); run chmod 600 on it"
        )));
    }
    let bytes = Zeroizing::new(
        crate::fsio::read_open(path, file, MAX_SECRET_FILE).map_err(SecretError::File)?,
    );
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| unusable("not text (seal keygen writes 64 hex digits)".into()))?;
    let text = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(text);
    if text.len() < MIN_SECRET_BYTES {
        return Err(SecretError::TooShort {
            source_name: path.display().to_string(),
            len: text.len(),
        });
    }
    Ok(Secret::new(text.to_string()))
}

/// Writes a new deployment secret at `path`: 32 random bytes as 64 lowercase hex digits and a
/// newline, mode 0600, never overwriting and never through a link (`fsio::write_new`). Text,
/// so that the same value can be moved into the environment variable unchanged: the secret is
/// the text's bytes either way.
pub fn write_secret_file(path: &Path) -> Result<(), SecretError> {
    use rand_core::RngCore;
    let mut raw = Zeroizing::new([0u8; 32]);
    rand_core::OsRng.fill_bytes(raw.as_mut());
    let mut text = Zeroizing::new(hex::encode(raw.as_ref()));
    text.push('\n');
    crate::fsio::write_new(path, text.as_bytes(), 0o600).map_err(SecretError::File)
}

fn read_limited(p: &Path) -> Result<String, String> {
    // No link, no FIFO or device, at most 1 MiB read (see `fsio`).
    crate::fsio::read_string(p, 1024 * 1024).map_err(|e| match e {
        crate::fsio::FsError::TooLarge { .. } => "a config file is at most 1 MiB".to_string(),
        other => format!("cannot read: {other}"),
    })
}

/// A slot's retry, token, temperature and price settings are in range (the reason, else).
fn slot_limits(r: &RawSlot, field: &dyn Fn(&str) -> String) -> Result<(), String> {
    if r.max_retries > 2 {
        return Err(format!(
            "{}: {} > 2 (docs/DESIGN.md §4: at most 2 retries)",
            field("max_retries"),
            r.max_retries
        ));
    }
    if r.max_tokens == 0 || r.max_tokens > 1_000_000 {
        return Err(format!("{}: must be in 1..=1000000", field("max_tokens")));
    }
    if !(0.0..=2.0).contains(&r.temperature) {
        return Err(format!("{}: must be in 0..=2", field("temperature")));
    }
    let p = &r.prices;
    for (name, v) in [
        ("input_rmb_per_mtok", p.input_rmb_per_mtok),
        ("output_rmb_per_mtok", p.output_rmb_per_mtok),
        ("image_rmb", p.image_rmb),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(format!(
                "{}: must be a non-negative number",
                field(&format!("prices.{name}"))
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
    let url_text =
        nonempty(env(&format!("SEAL_JUDGE_{up}_URL"))).unwrap_or_else(|| r.base_url.clone());
    let base_url = url::Url::parse(&url_text)
        .map_err(|e| err(format!("{}: {url_text:?}: {e}", field("base_url"))))?;
    if !matches!(base_url.scheme(), "http" | "https") {
        return Err(err(format!(
            "{}: scheme must be http or https",
            field("base_url")
        )));
    }
    if base_url.scheme() == "http"
        && !crate::store::is_loopback_host(base_url.host_str().unwrap_or(""))
    {
        return Err(err(format!(
            "{}: plain http is allowed only for a loopback judge (API keys would travel in clear)",
            field("base_url")
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
    slot_limits(r, &field).map_err(err)?;
    let p = &r.prices;
    let timeout_ms = timeout_override.unwrap_or(r.timeout_ms);
    if timeout_ms == 0 {
        return Err(err(format!("{}: must be positive", field("timeout_ms"))));
    }
    Ok(SlotConfig {
        slot,
        base_url,
        model,
        api_key,
        api_key_source,
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

/// The numeric and URL bounds of a parsed config file, each naming its field.
fn check_bounds(raw: &RawConfig) -> Result<(), String> {
    if !raw.budget.run_rmb.is_finite() || raw.budget.run_rmb < 0.0 {
        return Err("budget.run_rmb: must be a non-negative number".into());
    }
    let l = &raw.limits;
    if l.max_document_bytes < 1024 || l.max_blob_bytes < 1024 {
        return Err("limits: max_document_bytes and max_blob_bytes must be at least 1024".into());
    }
    let s = &raw.server;
    if s.max_rolls_in_progress == 0 || s.max_inflight_per_slot == 0 {
        return Err(
            "server: max_rolls_in_progress and max_inflight_per_slot must be positive".into(),
        );
    }
    crate::store::StoreUrl::parse(&raw.store).map_err(|e| format!("store: {e}"))?;
    Ok(())
}

/// `log.origin`, or the default, checked.
fn log_origin(raw: Option<&RawLog>) -> Result<String, String> {
    let origin = raw
        .map(|l| l.origin.clone())
        .unwrap_or_else(|| crate::transparency::DEFAULT_ORIGIN.to_string());
    if !crate::tlog::is_origin_valid(&origin) {
        return Err(format!(
            "log.origin: {origin:?} must be non-empty, without spaces or '+' (e.g. seal.example.com/log)"
        ));
    }
    Ok(origin)
}

/// `[[witnesses]]` and `witness_quorum`, checked: valid distinct names, http(s) URLs, a key
/// path each, a timeout of at most 10 minutes, a quorum between 1 and the number of witnesses.
fn witness_specs(
    raw: &[RawWitness],
    quorum: Option<usize>,
) -> Result<Vec<crate::witness::WitnessSpec>, String> {
    let mut out: Vec<crate::witness::WitnessSpec> = Vec::new();
    for (i, w) in raw.iter().enumerate() {
        let field = |f: &str| format!("witnesses[{i}].{f}");
        if !signed_note::is_key_name_valid(&w.name) || out.iter().any(|o| o.name == w.name) {
            return Err(format!(
                "{}: {:?} must be a distinct name without spaces or '+' (e.g. witness.example.com/w1)",
                field("name"),
                w.name
            ));
        }
        let url = url::Url::parse(&w.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.query().is_none())
            .ok_or_else(|| format!("{}: {:?} is not an http(s) URL prefix", field("url"), w.url))?;
        if w.public_key.is_empty() {
            return Err(format!("{}: empty", field("public_key")));
        }
        if w.timeout_ms == 0 || w.timeout_ms > 600_000 {
            return Err(format!("{}: must be in 1..=600000", field("timeout_ms")));
        }
        out.push(crate::witness::WitnessSpec {
            name: w.name.clone(),
            url,
            public_key: PathBuf::from(&w.public_key),
            timeout: Duration::from_millis(w.timeout_ms),
        });
    }
    if let Some(q) = quorum {
        if q == 0 || q > out.len() {
            return Err(format!(
                "witness_quorum: {q} must be between 1 and the {} [[witnesses]] configured",
                out.len()
            ));
        }
    }
    Ok(out)
}

/// `[leases]` and `SEAL_REPLICA_ID`, checked.
fn lease_settings(
    raw: Option<&RawLeases>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LeaseSettings, String> {
    let (margin_ms, skew_ms) = raw
        .map(|r| (r.margin_ms, r.max_clock_skew_ms))
        .unwrap_or((default_lease_margin_ms(), default_max_clock_skew_ms()));
    if margin_ms > 3_600_000 || skew_ms > 3_600_000 {
        return Err("leases: margin_ms and max_clock_skew_ms must be at most 3600000 (1 h)".into());
    }
    let replica_id = match env("SEAL_REPLICA_ID").filter(|s| !s.is_empty()) {
        Some(id) => {
            let ok = id.len() <= 128
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b));
            if !ok {
                let shown: String = id.chars().take(40).flat_map(char::escape_default).collect();
                return Err(format!(
                    "SEAL_REPLICA_ID={shown:?}: at most 128 of letters, digits, '.', '_', '-', ':'"
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn embedded_default_parses() {
        let c = Config::parse("embedded", EMBEDDED, &env(&[])).unwrap();
        assert_eq!(c.store, "file://./var/store");
        assert_eq!(c.max_document_bytes, 64 * 1024 * 1024);
        assert!(c.a.api_key.is_none());
        assert_eq!(c.secret.file, PathBuf::from("var/keys/seal.secret"));
    }

    #[test]
    fn env_overrides_slots_and_keys_stay_secret() {
        let c = Config::parse(
            "embedded",
            EMBEDDED,
            &env(&[
                ("SEAL_JUDGE_A_URL", "http://127.0.0.1:9/v1"),
                ("SEAL_JUDGE_A_MODEL", "m-a"),
                ("SEAL_JUDGE_A_KEY", "sk-very-secret"),
                ("SEAL_JUDGE_TIMEOUT_MS", "1500"),
            ]),
        )
        .unwrap();
        assert_eq!(c.a.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(c.a.model, "m-a");
        assert_eq!(c.a.timeout, Duration::from_millis(1500));
        assert_eq!(c.b.timeout, Duration::from_millis(1500));
        assert!(!format!("{c:?}").contains("sk-very-secret"));
    }

    #[test]
    fn lease_settings_and_replica_ids_are_checked() {
        let c = Config::parse("embedded", EMBEDDED, &env(&[])).unwrap();
        assert_eq!(c.leases.margin, Duration::from_millis(5_000));
        assert_eq!(c.leases.max_clock_skew, Duration::from_millis(10_000));
        assert_eq!(c.leases.replica_id, None);
        let ok = Config::parse("e", EMBEDDED, &env(&[("SEAL_REPLICA_ID", "seal-7f9c:0")])).unwrap();
        assert_eq!(ok.leases.replica_id.as_deref(), Some("seal-7f9c:0"));
        // Hostile or oversized replica ids and lease times are refused, naming the field.
        let long = "r".repeat(129);
        for (id, field) in [
            ("bad id\u{1b}[31m", "SEAL_REPLICA_ID"),
            ("a/b", "SEAL_REPLICA_ID"),
            (long.as_str(), "SEAL_REPLICA_ID"),
        ] {
            let e = Config::parse("e", EMBEDDED, &env(&[("SEAL_REPLICA_ID", id)])).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(field) && !msg.contains('\u{1b}'), "{msg}");
        }
        let big = EMBEDDED.replace("max_clock_skew_ms = 10000", "max_clock_skew_ms = 99999999");
        let e = Config::parse("e", &big, &env(&[])).unwrap_err();
        assert!(e.to_string().contains("max_clock_skew_ms"), "{e}");
        let unknown = EMBEDDED.replace("margin_ms = 5000", "margin_ms = 5000\nttl_ms = 1");
        assert!(Config::parse("e", &unknown, &env(&[]))
            .unwrap_err()
            .to_string()
            .contains("ttl_ms"));
    }

    /// The embedded config with `keys.secret` at `file`.
    fn with_secret_file(file: &Path) -> String {
        EMBEDDED.replace(
            "[keys]\n",
            &format!("[keys]\nsecret = {:?}\n", file.display().to_string()),
        )
    }

    #[test]
    fn no_constant_salt_a_missing_or_short_secret_is_refused_naming_its_source() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys/seal.secret");
        let text = with_secret_file(&file);
        // Neither the variable nor the file: refused, saying how to make one.
        let c = Config::parse("t", &text, &env(&[])).unwrap();
        let e = c.deployment_secret().unwrap_err().to_string();
        assert!(
            e.contains("SEAL_SEED_SALT") && e.contains("seal keygen --out") && e.contains("keys"),
            "{e}"
        );
        // A short variable: refused naming the variable, never used.
        let c = Config::parse("t", &text, &env(&[("SEAL_SEED_SALT", "test-salt")])).unwrap();
        let e = c.deployment_secret().unwrap_err().to_string();
        assert!(e.contains("SEAL_SEED_SALT") && e.contains("9 bytes"), "{e}");
        let long = "0123456789abcdef0123456789abcdef";
        let c = Config::parse("t", &text, &env(&[("SEAL_SEED_SALT", long)])).unwrap();
        assert_eq!(c.deployment_secret().unwrap().expose(), long);
        assert!(!format!("{c:?}").contains(long), "the secret never prints");
    }

    #[test]
    fn no_constant_salt_the_secret_file_is_read_like_a_private_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("seal.secret");
        write_secret_file(&file).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let c = Config::parse("t", &with_secret_file(&file), &env(&[])).unwrap();
        let secret = c.deployment_secret().unwrap();
        assert_eq!(secret.expose().len(), 64);
        assert!(secret.expose().bytes().all(|b| b.is_ascii_hexdigit()));
        // Never overwritten; a second one is another secret.
        assert!(write_secret_file(&file).is_err());
        let other = dir.path().join("other.secret");
        write_secret_file(&other).unwrap();
        assert_ne!(
            std::fs::read(&file).unwrap(),
            std::fs::read(&other).unwrap()
        );
        // The variable, when set, wins over the file.
        let long = "x".repeat(40);
        let c = Config::parse(
            "t",
            &with_secret_file(&file),
            &env(&[("SEAL_SEED_SALT", &long)]),
        )
        .unwrap();
        assert_eq!(c.deployment_secret().unwrap().expose(), long);
        // Readable by others, a link, a FIFO, too short: refused naming the file.
        let loose = dir.path().join("loose.secret");
        std::fs::write(&loose, "y".repeat(64)).unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link.secret");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let short = dir.path().join("short.secret");
        crate::fsio::write_new(&short, b"tiny\n", 0o600).unwrap();
        for (path, needle) in [
            (&loose, "chmod 600"),
            (&link, "symbolic link"),
            (&short, "at least 32"),
        ] {
            let c = Config::parse("t", &with_secret_file(path), &env(&[])).unwrap();
            let e = c.deployment_secret().unwrap_err().to_string();
            assert!(
                e.contains(needle) && e.contains(&*path.display().to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn the_secret_file_defaults_to_beside_the_signing_key() {
        let text = EMBEDDED.replace(
            "signing_key = \"var/keys/seal.key.pem\"",
            "signing_key = \"/etc/seal/k/seal.key.pem\"",
        );
        let c = Config::parse("t", &text, &env(&[])).unwrap();
        assert_eq!(c.secret.file, PathBuf::from("/etc/seal/k/seal.secret"));
        // `--key` moves the default along; an explicit keys.secret stays.
        let c = c.with_signing_key(None);
        assert_eq!(c.secret.file, PathBuf::from("/etc/seal/k/seal.secret"));
        let c = c.with_signing_key(Some(Path::new("keys/seal.key.pem")));
        assert_eq!(c.secret.file, PathBuf::from("keys/seal.secret"));
        assert_eq!(c.signing_key, PathBuf::from("keys/seal.key.pem"));
        let pinned = with_secret_file(Path::new("/run/s/x.secret"));
        let c = Config::parse("t", &pinned, &env(&[])).unwrap();
        let c = c.with_signing_key(Some(Path::new("keys/seal.key.pem")));
        assert_eq!(c.secret.file, PathBuf::from("/run/s/x.secret"));
    }

    #[test]
    fn witnesses_and_their_quorum_are_checked() {
        let with = |quorum: &str, tables: &str| {
            let text = EMBEDDED.replacen("[limits]", &format!("{quorum}\n[limits]"), 1);
            Config::parse("w.toml", &format!("{text}\n{tables}"), &env(&[]))
        };
        let two = "[[witnesses]]\nname = \"w.example/1\"\nurl = \"https://w1.example\"\npublic_key = \"keys/w1.pem\"\n\
                   [[witnesses]]\nname = \"w.example/2\"\nurl = \"http://127.0.0.1:9\"\npublic_key = \"keys/w2.pem\"\ntimeout_ms = 500\n";
        let c = with("witness_quorum = 2", two).unwrap();
        assert_eq!(c.witnesses.len(), 2);
        assert_eq!(c.witness_quorum, Some(2));
        assert_eq!(c.witnesses[1].timeout, Duration::from_millis(500));
        assert_eq!(c.witnesses[0].timeout, Duration::from_millis(10_000));
        assert!(Config::parse("e", EMBEDDED, &env(&[]))
            .unwrap()
            .witnesses
            .is_empty());
        for (quorum, tables, field) in [
            ("witness_quorum = 3", two.to_string(), "witness_quorum"),
            ("witness_quorum = 0", two.to_string(), "witness_quorum"),
            ("witness_quorum = 1", String::new(), "witness_quorum"),
            (
                "",
                two.replace("w.example/2", "w.example/1"),
                "witnesses[1].name",
            ),
            (
                "",
                two.replace("w.example/2", "w example"),
                "witnesses[1].name",
            ),
            (
                "",
                two.replace("https://w1.example", "ftp://w1.example"),
                "witnesses[0].url",
            ),
            (
                "",
                two.replace("timeout_ms = 500", "timeout_ms = 0"),
                "witnesses[1].timeout_ms",
            ),
            (
                "",
                two.replace("public_key = \"keys/w1.pem\"", "public_key = \"\""),
                "witnesses[0].public_key",
            ),
            ("", format!("{two}colour = 1\n"), "colour"),
        ] {
            let e = with(quorum, &tables).unwrap_err().to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }

    #[test]
    fn bad_configs_name_the_field() {
        let cases = [
            (
                EMBEDDED.replace("max_retries = 2", "max_retries = 3"),
                "max_retries",
            ),
            (
                EMBEDDED.replace("store = \"file://./var/store\"", "store = \"ftp://x\""),
                "store",
            ),
            (
                EMBEDDED.replace("run_rmb = 5.0", "run_rmb = -1.0"),
                "run_rmb",
            ),
            (
                EMBEDDED.replace("[budget]", "[budget]\nsurprise = 1"),
                "surprise",
            ),
            (
                EMBEDDED.replace("prompt = \"judge-b\"", "prompt = \"judge-a\""),
                "prompt",
            ),
            ("not toml [".to_string(), "config"),
        ];
        for (text, needle) in cases {
            let e = Config::parse("x.toml", &text, &env(&[]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let e = Config::parse(
            "x",
            EMBEDDED,
            &env(&[("SEAL_JUDGE_B_URL", "http://example.com/v1")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        let e =
            Config::parse("x", EMBEDDED, &env(&[("SEAL_JUDGE_TIMEOUT_MS", "soon")])).unwrap_err();
        assert!(e.to_string().contains("SEAL_JUDGE_TIMEOUT_MS"), "{e}");
    }
}
