//! One attempt of a judge slot: the call (body capped, transport errors classified), the raw
//! answer (redacted of every configured secret) stored content-addressed the moment it is in,
//! then its signed `meta.json` (the attempt's commit point), then `raw.json`, a copy of the
//! bytes the meta names. [`super::walk`] decides which attempt to make.

use bytes::Bytes;
use serde_json::Value;
use std::time::{Duration, Instant};

use super::client::{now_rfc3339, Exchange, JudgeClient, SlotJob};
use super::parse::{self, evaluate_raw, ErrorClass, ParseFailure, MAX_RESPONSE_BYTES};
use super::request;
use super::slot::AttemptRecord;
use super::transport::{class_of_send, error_chain};
use crate::leasing::{self, AttemptRef};
use crate::resume::{self, ResumeError};
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_store::{Key, Store, StoreError, Stored};

/// How often to look for the meta of an attempt another replica answered first.
/// How long a raw answer may wait for its meta when no live lease says someone is writing it.
const META_GRACE_MS: u64 = 2_000;

/// The W3C trace context (`traceparent`, `tracestate`) of the current span, for a judge
/// request: none when no OpenTelemetry layer is installed (the library in tests), so a judge
/// sees exactly the headers it did before.
fn trace_headers() -> std::collections::HashMap<String, String> {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    let mut headers = std::collections::HashMap::new();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut headers));
    headers
}

/// Polls for `key` until it exists (true) or the lease clock passes `until_ms` (false).
pub(super) async fn wait_for(store: &Store, key: &Key, until_ms: u64) -> Result<bool, StoreError> {
    let mut polls = 0;
    loop {
        if store.exists(key).await? {
            return Ok(true);
        }
        let now = leasing::now_ms();
        if now > until_ms {
            return Ok(false);
        }
        let left = Duration::from_millis(until_ms - now + 1);
        tokio::time::sleep(leasing::poll_delay(polls).min(left)).await;
        polls += 1;
    }
}

impl JudgeClient {
    /// One HTTP exchange with the judge: the live body (images put back), the POST, the
    /// answer read up to its cap. Every failure is classified, never raised.
    async fn send(&self, job: &SlotJob<'_>, stored_request: &Value) -> Exchange {
        let body = match live_body(job, stored_request) {
            Ok(b) => b,
            Err(failed) => return failed,
        };
        let _permit = self.inflight.acquire().await;
        let mut req = super::client::authorized_post(&self.http, &self.config)
            .header("X-Session-Id", job.session_id.as_str())
            .body(body);
        // The trace this attempt belongs to (the worker's, when it sent one), as W3C headers.
        for (name, value) in trace_headers() {
            req = req.header(name, value);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                return Exchange::Failed {
                    class: class_of_send(&e),
                    detail: self.redact(&error_chain(&e)),
                };
            }
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        match self.read_capped(resp).await {
            Ok(body) => Exchange::Answered {
                status,
                retry_after,
                body,
            },
            Err(failed) => failed,
        }
    }
    /// The answer's body, at most [`MAX_RESPONSE_BYTES`]; a body cut off or too large is a
    /// classified failure.
    async fn read_capped(&self, mut resp: reqwest::Response) -> Result<Bytes, Exchange> {
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
                Ok(None) => return Ok(Bytes::from(body)),
                Err(e) => {
                    let class = if e.is_timeout() {
                        ErrorClass::Timeout
                    } else {
                        ErrorClass::ConnectionReset
                    };
                    return Err(Exchange::Failed {
                        class,
                        detail: self.redact(&error_chain(&e)),
                    });
                }
            }
        }
    }
    /// A `raw.json` found without a committed meta (only a binary that stored the raw answer
    /// before its meta, or a writer of the store, leaves one): its request must be the one this
    /// configuration builds and a meta must have arrived whose MAC verifies (see [`resume`]);
    /// else it is planted.
    pub(super) async fn resume_stored(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        expected: &Bytes,
        raw: Bytes,
    ) -> Result<AttemptRecord, ResumeError> {
        let key = |file: &str| Key::attempt_file(job.run, job.roll, self.slot, k, file);
        let request = store.get_opt(&key("request.json")).await?;
        let meta = store.get_json::<SlotMeta>(&key("meta.json")).await?;
        resume::check(
            job.salt,
            self.attempt_id(job, k),
            Some(expected),
            &resume::Stored {
                request: request.as_deref(),
                raw: &raw,
                meta: meta.as_ref().map(|(m, _)| m),
            },
        )?;
        let (meta, meta_hash) = meta.ok_or_else(|| StoreError::NotFound {
            key: key("meta.json"),
        })?;
        Ok(AttemptRecord {
            attempt: k,
            request: request.map(|b| Stored::of(key("request.json"), &b)),
            raw: Stored::of(key("raw.json"), &raw),
            outcome: evaluate_raw(&raw, meta.http_status),
            meta,
            meta_hash,
        })
    }
    /// Sends one attempt and stores its raw answer and signed meta.
    pub(super) async fn attempt(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        request_value: &Value,
        request_stored: Stored,
    ) -> Result<(AttemptRecord, Option<Duration>), ResumeError> {
        let raw_key = Key::attempt_file(job.run, job.roll, self.slot, k, "raw.json");
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        // `attempt` as i64: OpenTelemetry has no unsigned attributes (a u32 would become text).
        let span = tracing::info_span!("judge.attempt", slot = %self.slot, attempt = i64::from(k));
        let exchange = {
            use tracing::Instrument;
            // Counted while the call is out, dropped or not (a cancelled roll ends it too).
            let _in_flight = self.metrics.judge_call(self.slot.as_str());
            self.send(job, request_value).instrument(span).await
        };
        let latency_ms = t0.elapsed().as_millis() as u64;
        let ended_at = now_rfc3339();
        let RawAnswer {
            bytes: raw_bytes,
            status,
            retry_after,
            unredacted,
        } = self.raw_of(job, k, &exchange, (&started_at, &ended_at))?;
        // The answer's bytes first, content-addressed: harmless if the meta never follows.
        let raw_stored = put_answer(store, &raw_key, &raw_bytes).await?;
        let outcome = evaluate_raw(&raw_bytes, status);
        let mut meta = self.meta(
            job,
            k,
            Some(&request_stored),
            &raw_stored,
            status,
            &raw_bytes,
            (&started_at, &ended_at, latency_ms),
            &outcome,
            None,
        );
        if unredacted.is_some() {
            tracing::warn!(
                attempt = k,
                "a configured secret was echoed by the judge endpoint: redacted before storing"
            );
        }
        meta.unredacted_raw_hash = unredacted;
        let Some((meta, meta_hash)) = self.put_meta(store, job, k, &meta).await? else {
            // Another replica committed this attempt first: its answer stands, ours is an
            // orphan in `cas/` (paid for, and counted).
            self.metrics.answer_discarded(self.slot.as_str());
            let expected = store.get(&request_stored.key).await?;
            let record = self.resume_committed(store, job, k, &expected).await?;
            return Ok((record, None));
        };
        complete_raw(store, self.attempt_id(job, k), &raw_key, &raw_bytes).await?;
        self.report(k, latency_ms, status, &outcome, meta.cost_rmb);
        if outcome.is_ok() {
            self.metrics.served_model(
                self.slot.as_str(),
                meta.model_answered
                    .as_deref()
                    .unwrap_or(&meta.model_requested),
                meta.system_fingerprint.as_deref(),
            );
        }
        if let Some(u) = &meta.usage {
            let slot = self.slot.as_str();
            self.metrics
                .judge_tokens(slot, u.prompt_tokens, u.completion_tokens);
        }
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
    /// What `raw.json` stores for an exchange: the answer's bytes with every configured
    /// secret redacted (and the hash of the unredacted bytes when one was found), or a
    /// JudgeAttemptFailure/1 record when no answer came; with the HTTP status and Retry-After.
    fn raw_of(
        &self,
        job: &SlotJob<'_>,
        k: u32,
        exchange: &Exchange,
        times: (&str, &str),
    ) -> Result<RawAnswer, StoreError> {
        Ok(match exchange {
            Exchange::Answered {
                status,
                retry_after,
                body,
            } => {
                let (scrubbed, unredacted) = self.redactor.scrub(body);
                RawAnswer {
                    bytes: scrubbed.into(),
                    status: Some(*status),
                    retry_after: *retry_after,
                    unredacted,
                }
            }
            Exchange::Failed { class, detail } => RawAnswer {
                bytes: self.failure_record(job, k, *class, detail, times)?,
                status: None,
                retry_after: None,
                unredacted: None,
            },
        })
    }
    /// Metrics and the log line of one finished attempt.
    fn report(
        &self,
        k: u32,
        latency_ms: u64,
        status: Option<u16>,
        outcome: &Result<JudgeOutput, crate::judge_http::parse::ParseFailure>,
        cost_rmb: f64,
    ) {
        self.health
            .attempt(outcome.as_ref().err().map(|f| f.class), status);
        self.metrics.judge_attempt(
            self.slot.as_str(),
            k,
            latency_ms as f64 / 1000.0,
            outcome.as_ref().err().map(|f| f.class.as_str()),
            cost_rmb,
        );
        match outcome {
            Ok(_) => tracing::info!(attempt = k, latency_ms, status, "judge answered"),
            Err(f) => {
                tracing::warn!(attempt = k, latency_ms, status, class = %f.class, detail = %f.detail, "judge attempt failed")
            }
        }
    }
    /// The raw record of an attempt that got no HTTP answer.
    fn failure_record(
        &self,
        job: &SlotJob<'_>,
        k: u32,
        class: ErrorClass,
        detail: &str,
        (started_at, ended_at): (&str, &str),
    ) -> Result<Bytes, StoreError> {
        let record = AttemptFailure {
            schema_version: ATTEMPT_FAILURE.into(),
            slot: self.slot,
            session_id: job.session_id.to_string(),
            attempt: k,
            stage: FailureStage::Transport,
            error_class: class,
            detail: seal_core::contracts::shorten(detail, 1000),
            started_at: Some(started_at.to_string()),
            ended_at: Some(ended_at.to_string()),
        };
        seal_core::canonical::canonical_bytes(&record)
            .map(Bytes::from)
            .map_err(|source| StoreError::Canonical {
                key: Key::attempt_file(job.run, job.roll, self.slot, k, "raw.json"),
                source,
            })
    }
    /// Waits for an attempt's meta.json, which its writer stores right after raw.json: while
    /// another replica's lease on the attempt is live, or else a moment. A raw answer still
    /// without its meta afterwards is judged by [`resume::check`] (planted).
    pub(super) async fn settle_meta(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
    ) -> Result<(), StoreError> {
        let meta_key = Key::attempt_file(job.run, job.roll, self.slot, k, "meta.json");
        if store.exists(&meta_key).await? {
            return Ok(());
        }
        let at = AttemptRef {
            run: job.run,
            roll: job.roll,
            slot: self.slot,
            attempt: k,
        };
        let until = match leasing::live_until(store, &self.lease, at, self.config.timeout).await? {
            Some(until) => until,
            None => leasing::now_ms().saturating_add(META_GRACE_MS),
        };
        wait_for(store, &meta_key, until).await.map(|_| ())
    }
    /// A committed attempt (its `meta.json` is stored): the request must be the one this
    /// configuration builds and the meta's MAC must verify over it and the raw answer the meta
    /// names; a `raw.json` a crash kept from being written is copied from `cas/` (once the MAC
    /// verified), one holding other bytes is planted, and a commit whose answer the store lost
    /// is a corrupt store.
    pub(super) async fn resume_committed(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        expected: &Bytes,
    ) -> Result<AttemptRecord, ResumeError> {
        let key = |file: &str| Key::attempt_file(job.run, job.roll, self.slot, k, file);
        let (meta, meta_hash) = store
            .get_json::<SlotMeta>(&key("meta.json"))
            .await?
            .ok_or_else(|| StoreError::NotFound {
                key: key("meta.json"),
            })?;
        let request = store.get_opt(&key("request.json")).await?;
        let (raw, copied) = match store.get_opt(&key("raw.json")).await? {
            Some(raw) => (raw, false),
            None => {
                let cas = Key::cas(&meta.raw_hash);
                (store.get_verified(&cas, &meta.raw_hash).await?, true)
            }
        };
        let id = self.attempt_id(job, k);
        resume::check(
            job.salt,
            id,
            Some(expected),
            &resume::Stored {
                request: request.as_deref(),
                raw: &raw,
                meta: Some(&meta),
            },
        )?;
        if copied {
            complete_raw(store, id, &key("raw.json"), &raw).await?;
        }
        Ok(AttemptRecord {
            attempt: k,
            request: request.map(|b| Stored::of(key("request.json"), &b)),
            raw: Stored::of(key("raw.json"), &raw),
            outcome: evaluate_raw(&raw, meta.http_status),
            meta,
            meta_hash,
        })
    }
    /// Signs and stores an attempt's meta, the attempt's commit point. `None`: another
    /// replica committed this attempt first (its meta is judged by [`Self::resume_committed`]).
    async fn put_meta(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        meta: &SlotMeta,
    ) -> Result<Option<(SlotMeta, Hash)>, ResumeError> {
        let key = Key::attempt_file(job.run, job.roll, self.slot, k, "meta.json");
        let meta = resume::sign_meta(job.salt, self.attempt_id(job, k), meta.clone());
        match store.put_json(&key, &meta).await {
            Ok(p) => Ok(Some((meta, p.stored.hash))),
            Err(StoreError::Conflict { .. }) => Ok(None),
            Err(e) => Err(e.into()),
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
        (started_at, ended_at, latency_ms): (&str, &str, u64),
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
            Err(f) => {
                let said = parse::with_provider_message(f, status, raw_bytes);
                (Some(f.class), Some(self.redact(&said)))
            }
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
            request_ref: request.map(|r| r.key.clone()),
            request_hash: request.map(|r| r.hash.clone()),
            raw_ref: raw.key.clone(),
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
            attempt_mac: None,
            unredacted_raw_hash: None,
            policy: job.policy.clone(),
        }
    }
}

/// Stores an attempt's answer at `cas/sha256/<h>` before its meta commits it: what `raw.json`
/// (`raw_key`) will hold once the meta is stored. Content-addressed, so an answer whose meta
/// never follows (a crash, a lost race) is a harmless orphan (`seal gc --dry-run`).
pub async fn put_answer(store: &Store, raw_key: &Key, bytes: &Bytes) -> Result<Stored, StoreError> {
    let hash = Hash::of(bytes);
    store.put(&Key::cas(&hash), bytes.clone()).await?;
    Ok(Stored {
        key: raw_key.clone(),
        hash,
        size: bytes.len() as u64,
    })
}

/// Writes `raw.json` of a committed attempt: the bytes its meta names. Other bytes there
/// contradict the commit: planted.
pub(crate) async fn complete_raw(
    store: &Store,
    id: resume::AttemptId<'_>,
    raw_key: &Key,
    bytes: &Bytes,
) -> Result<(), ResumeError> {
    match store.put(raw_key, bytes.clone()).await {
        Ok(_) => Ok(()),
        Err(StoreError::Conflict { .. }) => Err(ResumeError::Planted(
            id.planted("raw.json holds other bytes than the answer its committed SlotMeta names"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// What `raw.json` of an attempt holds, and what the HTTP exchange said besides.
struct RawAnswer {
    bytes: Bytes,
    status: Option<u16>,
    retry_after: Option<Duration>,
    /// The sha256 of the answer before a configured secret was redacted from it.
    unredacted: Option<Hash>,
}

/// The request body sent to the judge: the stored request with its images put back.
fn live_body(job: &SlotJob<'_>, stored_request: &Value) -> Result<Vec<u8>, Exchange> {
    let failed = |detail: String| Exchange::Failed {
        class: ErrorClass::RequestBuild,
        detail,
    };
    let live =
        request::materialize(stored_request, job.images).map_err(|e| failed(e.to_string()))?;
    serde_json::to_vec(&live).map_err(|e| failed(e.to_string()))
}
