//! The HTTP edge of a judge slot: attempts, retries, and storing every byte.
//!
//! Order of writes per attempt `k` (what makes a crash harmless): `request.json` before the
//! call, `raw.json` the moment the answer (or the transport error) is in, then `meta.json`.
//! A restarted roll walks the attempts: an attempt whose `raw.json` is stored is never sent
//! again (no judge is paid twice for an answer seal holds); an attempt with a request but no
//! raw answer is re-sent from the stored request bytes.

use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use super::parse::{self, evaluate_raw, ErrorClass, ParseFailure, MAX_RESPONSE_BYTES};
use super::request;
use super::slot::{AttemptRecord, SlotRun};
use crate::canonical::Hash;
use crate::config::{Config, Secret, SlotConfig};
use crate::doc::*;
use crate::ids::{RollId, RunId, Slot};
use crate::prompts::{self, PromptArtifact};
use crate::store::{Key, Store, StoreError, Stored};

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
}

/// One judge slot: its configuration, prompt, and its own HTTP client.
pub struct JudgeClient {
    pub slot: Slot,
    pub config: SlotConfig,
    pub prompt: PromptArtifact,
    /// Identifies this slot's `reqwest::Client` instance in every SlotMeta/1.
    pub logical_client_id: String,
    http: reqwest::Client,
    inflight: Arc<Semaphore>,
    metrics: Arc<crate::metrics::Metrics>,
}

/// Both slots and the secret salt their seeds and sessions derive from.
pub struct Judges {
    pub a: JudgeClient,
    pub b: JudgeClient,
    salt: Secret,
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Judges {
    pub fn new(config: &Config) -> Result<Judges, String> {
        let instance = crate::store::random_hex(6);
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let make = |c: &SlotConfig| -> Result<JudgeClient, String> {
            let http = reqwest::Client::builder()
                .timeout(c.timeout)
                .connect_timeout(c.timeout.min(Duration::from_secs(10)))
                .pool_idle_timeout(Duration::from_secs(30))
                .user_agent(concat!("seal/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("judge {}: HTTP client: {e}", c.slot))?;
            Ok(JudgeClient {
                slot: c.slot,
                config: c.clone(),
                prompt: prompts::get(&c.prompt)?,
                logical_client_id: format!("seal/{instance}/judge-{}/reqwest", c.slot),
                http,
                inflight: Arc::new(Semaphore::new(config.server.max_inflight_per_slot)),
                metrics: metrics.clone(),
            })
        };
        Ok(Judges {
            a: make(&config.a)?,
            b: make(&config.b)?,
            salt: config.seed_salt.clone(),
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
}

/// How a call ended at the HTTP level.
enum Exchange {
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

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

impl JudgeClient {
    fn redact(&self, s: &str) -> String {
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

    fn backoff(&self, attempt_done: u32, retry_after: Option<Duration>) -> Duration {
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

    async fn send(&self, job: &SlotJob<'_>, stored_request: &Value) -> Exchange {
        let body = match live_body(job, stored_request) {
            Ok(b) => b,
            Err(failed) => return failed,
        };
        let _permit = self.inflight.acquire().await;
        let resp = match self.post(job, body).send().await {
            Ok(r) => r,
            Err(e) => {
                let class = if e.is_timeout() {
                    ErrorClass::Timeout
                } else if e.is_connect() {
                    ErrorClass::Connect
                } else {
                    ErrorClass::Transport
                };
                return self.transport_failure(class, &e);
            }
        };
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        match self.read_body(resp).await {
            Ok(body) => Exchange::Answered {
                status,
                retry_after,
                body: Bytes::from(body),
            },
            Err(failed) => failed,
        }
    }

    /// The HTTP request of one attempt: the live body, the session header and the API key.
    fn post(&self, job: &SlotJob<'_>, body: Vec<u8>) -> reqwest::RequestBuilder {
        let req = self
            .http
            .post(self.config.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Session-Id", job.session_id.as_str())
            .body(body);
        match &self.config.api_key {
            Some(key) => req.bearer_auth(key.expose()),
            None => req,
        }
    }

    /// Reads the response body, refusing more than [`MAX_RESPONSE_BYTES`].
    async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, Exchange> {
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                        return Err(Exchange::Failed {
                            class: ErrorClass::ResponseTooLarge,
                            detail: format!("response body over {MAX_RESPONSE_BYTES} bytes"),
                        });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    let class = if e.is_timeout() {
                        ErrorClass::Timeout
                    } else {
                        ErrorClass::ConnectionReset
                    };
                    return Err(self.transport_failure(class, &e));
                }
            }
        }
    }

    /// A transport error as an exchange, its text without the API key.
    fn transport_failure(&self, class: ErrorClass, e: &reqwest::Error) -> Exchange {
        Exchange::Failed {
            class,
            detail: self.redact(&error_chain(e)),
        }
    }

    /// Runs this slot for a job: resumes stored attempts, makes new ones up to the retry limit.
    pub async fn run_slot(&self, store: &Store, job: &SlotJob<'_>) -> Result<SlotRun, StoreError> {
        use tracing::Instrument;
        let span = tracing::info_span!("judge", slot = %self.slot, session = %job.session_id);
        self.run_attempts(store, job).instrument(span).await
    }

    async fn run_attempts(&self, store: &Store, job: &SlotJob<'_>) -> Result<SlotRun, StoreError> {
        let max = self.config.max_attempts();
        let mut attempts: Vec<AttemptRecord> = Vec::new();
        let mut last_retry_after = None;
        for k in 1..=max {
            let keys = AttemptKeys::new(job, self.slot, k);

            // An answer seal already holds is never asked for again.
            let record = if let Some(raw) = store.get_opt(&keys.raw).await? {
                self.held_attempt(store, job, k, &keys, raw).await?
            } else {
                let (request_value, request_stored) =
                    self.attempt_request(store, job, &keys.request).await?;
                if let Some(prev) = attempts.last() {
                    self.back_off(k, prev.attempt, last_retry_after.take())
                        .await;
                }
                let (record, retry_after) = self
                    .new_attempt(store, job, k, &keys, &request_value, request_stored)
                    .await?;
                last_retry_after = retry_after;
                record
            };
            let done = is_final(&record.outcome);
            attempts.push(record);
            if done {
                break;
            }
        }
        Ok(SlotRun {
            slot: self.slot,
            attempts,
        })
    }

    /// An attempt whose answer is already stored: its record, with its meta recovered if a
    /// crash came between `raw.json` and `meta.json`.
    async fn held_attempt(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        keys: &AttemptKeys,
        raw: Bytes,
    ) -> Result<AttemptRecord, StoreError> {
        let raw_stored = stored(&keys.raw, &raw);
        let request_stored = store
            .get_opt(&keys.request)
            .await?
            .map(|b| stored(&keys.request, &b));
        let (meta, meta_hash) = match store.get_json::<SlotMeta>(&keys.meta).await? {
            Some(found) => found,
            None => {
                self.recover_meta(
                    store,
                    job,
                    k,
                    keys,
                    request_stored.as_ref(),
                    &raw_stored,
                    &raw,
                )
                .await?
            }
        };
        let outcome = evaluate_raw(&raw, meta.http_status);
        tracing::info!(
            attempt = k,
            held = true,
            ok = outcome.is_ok(),
            "attempt answer already stored"
        );
        Ok(AttemptRecord {
            attempt: k,
            request: request_stored,
            raw: raw_stored,
            meta,
            meta_hash,
            outcome,
        })
    }

    /// Writes the meta of a held answer that has none; the HTTP status is inferred from the
    /// body (a `finish_reason` means the judge answered 200) and the timings are unknown.
    #[allow(clippy::too_many_arguments)]
    async fn recover_meta(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        keys: &AttemptKeys,
        request_stored: Option<&Stored>,
        raw_stored: &Stored,
        raw: &[u8],
    ) -> Result<(SlotMeta, Hash), StoreError> {
        let status = if parse::response_facts(raw).finish_reason.is_some() {
            Some(200)
        } else {
            None
        };
        let outcome = evaluate_raw(raw, status);
        let now = now_rfc3339();
        let m = self.meta(
            job,
            k,
            request_stored,
            raw_stored,
            status,
            raw,
            &now,
            &now,
            0,
            &outcome,
            Some("meta recovered after a restart: timings unknown"),
        );
        self.put_meta(store, &keys.meta, &m).await
    }

    /// The request: the stored one if this attempt was started before, else a new one.
    async fn attempt_request(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        req_key: &Key,
    ) -> Result<(Value, Stored), StoreError> {
        match store.get_opt(req_key).await? {
            Some(b) => parse_request(store, req_key, &b),
            None => {
                let v = self.build_request(job);
                match store.put_json(req_key, &v).await {
                    Ok(s) => Ok((v, s)),
                    Err(StoreError::Conflict { .. }) => {
                        let b = store.get(req_key).await?;
                        parse_request(store, req_key, &b)
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Sleeps the backoff before attempt `k` (the previous attempt was `prev_attempt`).
    async fn back_off(&self, k: u32, prev_attempt: u32, retry_after: Option<Duration>) {
        let wait = self.backoff(prev_attempt, retry_after);
        tracing::info!(
            attempt = k,
            wait_ms = wait.as_millis() as u64,
            "backing off before retry"
        );
        tokio::time::sleep(wait).await;
    }

    /// Sends attempt `k` and stores its answer and meta; also returns the judge's
    /// Retry-After, if it answered.
    async fn new_attempt(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        keys: &AttemptKeys,
        request_value: &Value,
        request_stored: Stored,
    ) -> Result<(AttemptRecord, Option<Duration>), StoreError> {
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        let exchange = self.send(job, request_value).await;
        let latency_ms = t0.elapsed().as_millis() as u64;
        let ended_at = now_rfc3339();

        let (raw_bytes, status, retry_after) =
            self.exchange_raw(job, k, keys, exchange, &started_at, &ended_at)?;
        let (raw_stored, raw_bytes, status) = store_raw(store, keys, raw_bytes, status).await?;
        let outcome = evaluate_raw(&raw_bytes, status);
        let meta = self.meta(
            job,
            k,
            Some(&request_stored),
            &raw_stored,
            status,
            &raw_bytes,
            &started_at,
            &ended_at,
            latency_ms,
            &outcome,
            None,
        );
        let (meta, meta_hash) = self.put_meta(store, &keys.meta, &meta).await?;
        self.report_attempt(k, latency_ms, status, &outcome, &meta);
        let record = AttemptRecord {
            attempt: k,
            request: Some(request_stored),
            raw: raw_stored,
            meta,
            meta_hash,
            outcome,
        };
        Ok((record, retry_after))
    }

    /// The bytes `raw.json` gets for an exchange: the answer as received, or a
    /// JudgeAttemptFailure/1 record of the transport error. Also the HTTP status and
    /// Retry-After of an answer.
    fn exchange_raw(
        &self,
        job: &SlotJob<'_>,
        k: u32,
        keys: &AttemptKeys,
        exchange: Exchange,
        started_at: &str,
        ended_at: &str,
    ) -> Result<(Bytes, Option<u16>, Option<Duration>), StoreError> {
        match exchange {
            Exchange::Answered {
                status,
                retry_after,
                body,
            } => Ok((body, Some(status), retry_after)),
            Exchange::Failed { class, detail } => {
                let record = AttemptFailure {
                    schema_version: ATTEMPT_FAILURE.into(),
                    slot: self.slot,
                    session_id: job.session_id.to_string(),
                    attempt: k,
                    stage: FailureStage::Transport,
                    error_class: class,
                    detail: crate::contracts::shorten(&detail, 1000),
                    started_at: Some(started_at.to_string()),
                    ended_at: Some(ended_at.to_string()),
                };
                let bytes = crate::canonical::canonical_bytes(&record).map_err(|source| {
                    StoreError::Canonical {
                        key: keys.raw.clone(),
                        source,
                    }
                })?;
                Ok((Bytes::from(bytes), None, None))
            }
        }
    }

    /// Metrics and the log line of a finished attempt.
    fn report_attempt(
        &self,
        k: u32,
        latency_ms: u64,
        status: Option<u16>,
        outcome: &Result<JudgeOutput, ParseFailure>,
        meta: &SlotMeta,
    ) {
        self.metrics.judge_attempt(
            self.slot.as_str(),
            k,
            latency_ms as f64 / 1000.0,
            outcome.as_ref().err().map(|f| f.class.as_str()),
            meta.cost_rmb,
        );
        match outcome {
            Ok(_) => tracing::info!(attempt = k, latency_ms, status, "judge answered"),
            Err(f) => {
                tracing::warn!(attempt = k, latency_ms, status, class = %f.class, detail = %f.detail, "judge attempt failed")
            }
        }
    }

    async fn put_meta(
        &self,
        store: &Store,
        key: &Key,
        meta: &SlotMeta,
    ) -> Result<(SlotMeta, Hash), StoreError> {
        match store.put_json(key, meta).await {
            Ok(s) => Ok((meta.clone(), s.hash)),
            // Written by an earlier run of this attempt: the first record stands.
            Err(StoreError::Conflict { .. }) => match store.get_json::<SlotMeta>(key).await? {
                Some(found) => Ok(found),
                None => Err(StoreError::NotFound { key: key.clone() }),
            },
            Err(e) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn meta(
        &self,
        job: &SlotJob<'_>,
        attempt: u32,
        request: Option<&Stored>,
        raw: &Stored,
        status: Option<u16>,
        raw_bytes: &[u8],
        started_at: &str,
        ended_at: &str,
        latency_ms: u64,
        outcome: &Result<JudgeOutput, ParseFailure>,
        note: Option<&str>,
    ) -> SlotMeta {
        let facts = if status.is_some() {
            parse::response_facts(raw_bytes)
        } else {
            Default::default()
        };
        let images = job.manifest.frames.len() as u64;
        let ok_http = status.is_some_and(|s| (200..300).contains(&s));
        let cost_micro = match (ok_http, facts.usage) {
            (true, Some(u)) => {
                self.config
                    .prices
                    .cost_micro(u.prompt_tokens, u.completion_tokens, images)
            }
            // A success without usage is charged as the worst case: a budget must not undercount.
            (true, None) => {
                self.worst_case_attempt_micro(request.map(|r| r.size).unwrap_or(0), images)
            }
            (false, _) => 0,
        };
        let (error_class, error_detail) = match outcome {
            Ok(_) => (None, note.map(str::to_owned)),
            Err(f) => (Some(f.class), Some(self.redact(&f.detail))),
        };
        SlotMeta {
            schema_version: SLOT_META.into(),
            slot: self.slot,
            attempt,
            logical_client_id: self.logical_client_id.clone(),
            session_id: job.session_id.to_string(),
            policy_seed: job.seed,
            endpoint_host: self.config.host(),
            model_requested: self.config.model.clone(),
            model_answered: facts.model,
            system_fingerprint: facts.system_fingerprint,
            prompt_artifact: PromptArtifactRef {
                id: self.prompt.id.clone(),
                version: self.prompt.version.clone(),
                hash: self.prompt.hash.clone(),
            },
            package_hash: job.package_hash.clone(),
            request_ref: request.map(|r| r.key.to_string()),
            request_hash: request.map(|r| r.hash.clone()),
            raw_ref: raw.key.to_string(),
            raw_hash: raw.hash.clone(),
            http_status: status,
            started_at: started_at.to_string(),
            ended_at: ended_at.to_string(),
            latency_ms,
            usage: facts.usage,
            cost_rmb: micro_to_rmb(cost_micro),
            error_class,
            error_detail,
            accepted: outcome.is_ok(),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// The keys of one attempt's three files.
struct AttemptKeys {
    request: Key,
    raw: Key,
    meta: Key,
}

impl AttemptKeys {
    fn new(job: &SlotJob<'_>, slot: Slot, k: u32) -> AttemptKeys {
        let key = |file: &str| Key::attempt_file(job.run, job.roll, slot, k, file);
        AttemptKeys {
            request: key("request.json"),
            raw: key("raw.json"),
            meta: key("meta.json"),
        }
    }
}

/// What a read found at `key`: its hash and size.
fn stored(key: &Key, bytes: &[u8]) -> Stored {
    Stored {
        key: key.clone(),
        hash: Hash::of(bytes),
        size: bytes.len() as u64,
    }
}

/// A stored request, parsed strictly.
fn parse_request(store: &Store, key: &Key, bytes: &[u8]) -> Result<(Value, Stored), StoreError> {
    let v = crate::json::parse(bytes, store.doc_limit()).map_err(|e| StoreError::BadDocument {
        key: key.clone(),
        detail: e.to_string(),
    })?;
    Ok((v, stored(key, bytes)))
}

/// Stores `raw.json`. Another replica may have stored an answer for this attempt meanwhile:
/// theirs wins, with the HTTP status their meta recorded.
async fn store_raw(
    store: &Store,
    keys: &AttemptKeys,
    raw_bytes: Bytes,
    status: Option<u16>,
) -> Result<(Stored, Bytes, Option<u16>), StoreError> {
    match store.put_bytes(&keys.raw, raw_bytes.clone()).await {
        Ok(s) => Ok((s, raw_bytes, status)),
        Err(StoreError::Conflict { .. }) => {
            let theirs = store.get(&keys.raw).await?;
            let s = stored(&keys.raw, &theirs);
            let their_status = store
                .get_json::<SlotMeta>(&keys.meta)
                .await?
                .and_then(|(m, _)| m.http_status);
            Ok((s, theirs, their_status))
        }
        Err(e) => Err(e),
    }
}

/// Whether the slot stops after this outcome: an answer, or a failure not worth retrying.
fn is_final(outcome: &Result<JudgeOutput, ParseFailure>) -> bool {
    outcome
        .as_ref()
        .map(|_| true)
        .unwrap_or_else(|f| !f.class.is_retryable())
}

/// The body sent to the judge: the stored request with its image placeholders filled in.
fn live_body(job: &SlotJob<'_>, stored_request: &Value) -> Result<Vec<u8>, Exchange> {
    let live = request::materialize(stored_request, job.images).map_err(|e| Exchange::Failed {
        class: ErrorClass::RequestBuild,
        detail: e,
    })?;
    serde_json::to_vec(&live).map_err(|e| Exchange::Failed {
        class: ErrorClass::RequestBuild,
        detail: e.to_string(),
    })
}

/// A Retry-After header in seconds (the HTTP-date form is ignored).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}
