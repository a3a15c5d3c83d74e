//! `seal serve`: the HTTP/JSON API the pipeline's workers call (docs/DESIGN.md §8).
//!
//! Stateless besides the store: any number of replicas can share one S3 bucket, and a restart
//! resumes from what is stored (a resubmitted roll continues where it stopped; a judge answer
//! already held is never bought again). [`run`] takes its listener and its shutdown trigger as
//! arguments, so tests bind `127.0.0.1:0` and stop the server at will.
//!
//! Bounded work: a roll takes a permit from a semaphore of `max_rolls_in_progress` before it
//! starts; at most `queue_bound` more may wait for one; past that the API answers 429 with
//! Retry-After, so memory stays flat whatever the load. Judge calls are bounded per slot too.

mod error;
pub mod listen;
pub mod uniform;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use bytes::Bytes;
use futures::TryStreamExt;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use error::ApiError;

use crate::canonical::Hash;
use crate::config::Secret;
use crate::engine::Engine;
use crate::ids::{RollId, RunId};
use crate::intake::{self, Origin};
use crate::merge::Next as NextStep;
use crate::roll;
use crate::run_state::RunState;
use crate::sealing::PublicKey;
use crate::store::Key;

/// Shared state of the daemon.
#[derive(Clone)]
pub struct AppState {
    engine: Engine,
    rolls: Arc<Semaphore>,
    admitted: Arc<AtomicUsize>,
    admit_limit: usize,
    /// Memory budget of roll requests in progress, in KiB permits.
    memory: Arc<Semaphore>,
    memory_kib: u32,
    trusted: Arc<Vec<PublicKey>>,
}

/// What a roll request may take in memory per byte of its proof package, at peak (parse tree,
/// typed copy, canonical bytes, judge packages): measured in docs/BENCHMARKS.md.
pub const ROLL_AMPLIFICATION: u64 = 16;

impl AppState {
    pub fn new(engine: Engine, trusted: Vec<PublicKey>) -> AppState {
        let s = &engine.config.server;
        let admit_limit = s.max_rolls_in_progress + s.queue_bound;
        let memory_kib = u32::try_from((engine.config.admission_bytes / 1024).max(1))
            .unwrap_or(Semaphore::MAX_PERMITS as u32)
            .min(Semaphore::MAX_PERMITS as u32);
        AppState {
            memory: Arc::new(Semaphore::new(memory_kib as usize)),
            memory_kib,
            rolls: Arc::new(Semaphore::new(s.max_rolls_in_progress)),
            admitted: Arc::new(AtomicUsize::new(0)),
            admit_limit,
            trusted: Arc::new(trusted),
            engine,
        }
    }
}

/// Releases an admission slot when the roll request ends (success, error or cancellation).
struct Admission(Arc<AtomicUsize>);
impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run_id(s: &str) -> Result<RunId, ApiError> {
    RunId::parse(s).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_run_id",
            e.to_string(),
            Some(s.chars().take(80).collect()),
        )
    })
}

/// The router (exposed for tests that want it without a socket).
pub fn router(state: AppState) -> Router {
    let doc_limit = state.engine.config.max_document_bytes as usize;
    let timeout = state.engine.config.server.request_timeout;
    let docs = Router::new()
        .route("/v1/runs/{run_id}", put(put_header).get(get_run))
        .route("/v1/runs/{run_id}/play-spec", put(put_play_spec))
        .route("/v1/runs/{run_id}/rolls/{n}", post(post_roll))
        .route("/v1/runs/{run_id}/finalize", post(post_finalize))
        .route("/v1/runs/{run_id}/verify", get(get_verify))
        .route("/v1/runs/{run_id}/explain", get(get_explain))
        .route("/v1/runs/{run_id}/log-proof", get(get_log_proof))
        .route("/v1/log/checkpoint", get(get_log_checkpoint))
        .route("/v1/stats", get(get_stats))
        .route_layer(middleware::from_fn(uniform::json_only))
        .route("/v1/runs/{run_id}/brief", put(put_brief))
        .layer(DefaultBodyLimit::max(doc_limit));
    let blobs = Router::new()
        .route("/v1/blobs/sha256/{hex}", put(put_blob))
        .layer(DefaultBodyLimit::disable());
    let metrics = Router::new()
        .route("/metrics", get(get_metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), metrics_auth));
    Router::new()
        .merge(docs)
        .merge(blobs)
        .route("/openapi.json", get(get_openapi))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth))
        .merge(metrics)
        .route("/healthz", get(healthz))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "no_route", "no such route", None)
        })
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(middleware::from_fn_with_state(
            state.engine.config.server.body_timeout,
            uniform::body_timeout,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .layer(middleware::from_fn(uniform::uri_bound))
        .layer(middleware::from_fn(uniform::uniform_errors))
        .with_state(state)
}

/// Serves on `listener` until `shutdown` resolves; then stops accepting and gives in-flight
/// requests up to the configured grace period to finish.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server_cfg = &state.engine.config.server;
    let grace = server_cfg.shutdown_grace;
    let limits = listen::ConnLimits {
        max_connections: server_cfg.max_connections,
        header_timeout: server_cfg.header_timeout,
    };
    if let Some((soft, hard)) = listen::raise_fd_limit() {
        tracing::info!(soft, hard, "open-file limit");
    }
    let (tx, rx) = tokio::sync::watch::channel(false);
    let app = router(state);
    let server = listen::serve(listener, app, limits, async move {
        shutdown.await;
        let _ = tx.send(true);
        tracing::info!("shutting down: no new connections, finishing in-flight work");
    });
    let mut rx = rx;
    let deadline = async move {
        let _ = rx.wait_for(|v| *v).await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        r = server => r,
        _ = deadline => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "grace period over: exiting with work in flight (it resumes from the store)");
            Ok(())
        }
    }
}

async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let server = &state.engine.config.server;
    guarded(req, next, &[server.bearer_token.as_ref()]).await
}

/// `/metrics` takes the read-only metrics token as well as the API token, so that a scraper
/// holds no write access; the metrics token opens nothing else (it is checked only here).
async fn metrics_auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let server = &state.engine.config.server;
    let tokens = [server.bearer_token.as_ref(), server.metrics_token.as_ref()];
    guarded(req, next, &tokens).await
}

/// Runs `req` when no token guards the route, or when it carries one of the configured
/// tokens; else 401.
async fn guarded(req: Request, next: Next, tokens: &[Option<&Secret>]) -> Response {
    if tokens.iter().any(Option::is_some) && !admitted(bearer(&req), tokens) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
            None,
        )
        .into_response();
    }
    next.run(req).await
}

/// The credentials of an `Authorization: Bearer <token>` header. The scheme is matched
/// case-insensitively (RFC 7235 §2.1: `bearer`, `BEARER` are the same scheme); None when the
/// header is absent, not text, or of another scheme.
fn bearer(req: &Request) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credentials) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_matches(' '))
}

/// Whether `given` is one of the configured tokens: each compared in constant time, all of
/// them compared whatever the first answered.
fn admitted(given: Option<&str>, tokens: &[Option<&Secret>]) -> bool {
    use subtle::ConstantTimeEq;
    let given = given.unwrap_or("");
    tokens
        .iter()
        .flatten()
        .fold(subtle::Choice::from(0), |ok, t| {
            ok | given.as_bytes().ct_eq(t.expose().as_bytes())
        })
        .into()
}

/// Where `seal serve` is about to listen, as far as authentication goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Every address it resolves to is loopback: only this machine can connect.
    Loopback,
    /// Reachable from the network, and an API token guards every route.
    Authenticated,
    /// Reachable from the network without a token: `--insecure-no-auth` said so.
    OpenToNetwork,
}

/// Why `seal serve` refuses an address.
#[derive(Debug, thiserror::Error)]
pub enum ExposureError {
    #[error("cannot resolve the listen address {addr:?}: {detail}")]
    Unresolved { addr: String, detail: String },
    #[error(
        "refusing to listen on {addr} without an API token: it is not a loopback address, so \
         every route that submits, judges or finalizes would be open to the network. Set the \
         token's env var (server.bearer_token_env, SEAL_API_TOKEN), listen on 127.0.0.1, or \
         pass --insecure-no-auth if that is really meant"
    )]
    NoToken { addr: String },
}

impl crate::fault::HasFault for ExposureError {
    fn fault(&self) -> crate::fault::Fault {
        crate::fault::Fault::Caller
    }
}

/// Judges the listen address `addr` (every address it resolves to) before the daemon starts:
/// beyond loopback an API token is required unless `insecure_no_auth`.
pub fn exposure(
    addr: &str,
    has_token: bool,
    insecure_no_auth: bool,
) -> Result<Exposure, ExposureError> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| ExposureError::Unresolved {
            addr: addr.chars().take(200).collect(),
            detail: e.to_string(),
        })?
        .collect();
    // An IPv4-mapped IPv6 loopback (::ffff:127.0.0.1) is loopback; an unspecified address
    // (0.0.0.0, ::) is every interface.
    let loopback = |a: &std::net::SocketAddr| a.ip().to_canonical().is_loopback();
    if !addrs.is_empty() && addrs.iter().all(loopback) {
        Ok(Exposure::Loopback)
    } else if has_token {
        Ok(Exposure::Authenticated)
    } else if insecure_no_auth {
        Ok(Exposure::OpenToNetwork)
    } else {
        Err(ExposureError::NoToken {
            addr: addr.chars().take(200).collect(),
        })
    }
}

async fn healthz(State(state): State<AppState>) -> Response {
    match state
        .engine
        .store
        .exists(&Key::parse("healthz").unwrap_or_else(|_| Key::cas(&Hash::of(b""))))
        .await
    {
        Ok(_) => Json(json!({"status": "ok", "store": state.engine.store.url().to_string()}))
            .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The API description (docs/openapi.yaml, as JSON).
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

async fn get_openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON).into_response()
}

async fn get_metrics(State(state): State<AppState>) -> Response {
    let in_progress =
        (state.engine.config.server.max_rolls_in_progress - state.rolls.available_permits()) as f64;
    let admitted = state.admitted.load(Ordering::SeqCst) as f64;
    let text = state.engine.judges.metrics.render(&[
        (
            "seal_rolls_in_progress",
            "rolls being judged now",
            in_progress,
        ),
        (
            "seal_rolls_admitted",
            "rolls in progress or waiting for a permit",
            admitted,
        ),
    ]);
    // The file store's durable writes: how many fsyncs the disk is asked for (folder fsyncs
    // are shared by concurrent writers, so `folder` grows slower than `file` under load).
    let (folder, file) = crate::store::fsync_counts();
    let text = format!(
        "{text}# HELP seal_store_fsyncs_total fsyncs of the file store's durable writes\n\
         # TYPE seal_store_fsyncs_total counter\n\
         seal_store_fsyncs_total{{kind=\"file\"}} {file}\n\
         seal_store_fsyncs_total{{kind=\"folder\"}} {folder}\n"
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

fn created(created: bool, body: Value) -> Response {
    (
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        Json(body),
    )
        .into_response()
}

async fn put_header(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let _run_lock = state.engine.lock_run(&run).await;
    let a = intake::put_header(&state.engine, &run, &body, Origin::Pipeline).await?;
    Ok(created(
        a.created,
        json!({"runId": run, "key": a.stored.key.as_str(), "sha256": a.stored.hash}),
    ))
}

async fn put_brief(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let _run_lock = state.engine.lock_run(&run).await;
    let a = intake::put_brief(&state.engine, &run, &body).await?;
    Ok(created(
        a.created,
        json!({"runId": run, "key": a.stored.key.as_str(), "sha256": a.stored.hash}),
    ))
}

async fn put_play_spec(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let _run_lock = state.engine.lock_run(&run).await;
    let a = intake::put_play_spec(&state.engine, &run, &body).await?;
    Ok(created(
        a.created,
        json!({"runId": run, "key": a.stored.key.as_str(), "sha256": a.stored.hash}),
    ))
}

async fn put_blob(
    State(state): State<AppState>,
    Path(hex): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let hash = Hash::parse(&hex).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_hash",
            e.to_string(),
            Some(hex.chars().take(80).collect()),
        )
    })?;
    let key = Key::cas(&hash);
    let existed = state.engine.store.exists(&key).await?;
    let stream = body.into_data_stream().map_err(|e| e.to_string());
    let stored = match state
        .engine
        .store
        .put_blob(
            Box::pin(stream),
            Some(&hash),
            state.engine.config.max_blob_bytes,
        )
        .await
    {
        Ok(s) => s,
        Err(crate::store::StoreError::HashMismatch {
            expected, actual, ..
        }) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "hash_mismatch",
                format!("the bytes hash to {actual}, not {expected}: nothing stored"),
                Some(key.to_string()),
            ))
        }
        Err(crate::store::StoreError::TooLarge { size, limit, .. }) => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("blob over {limit} bytes (got at least {size})"),
                Some(key.to_string()),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    Ok(created(
        !existed,
        json!({"key": stored.key.as_str(), "sha256": stored.hash, "bytes": stored.size}),
    ))
}

fn roll_body(run: &RunId, r: &roll::RollReport) -> Value {
    json!({
        "runId": run,
        "rollId": r.roll.roll_id,
        "rollOutcome": r.roll.roll_outcome,
        "decision": r.consensus.decision,
        "degraded": r.consensus.degraded,
        "conflicts": r.consensus.conflicts,
        "errors": r.roll.errors,
        "costRmb": r.roll.cost_rmb,
        "consensusRef": r.roll.judge_consensus_ref,
        "consensusHash": r.roll.judge_consensus_hash,
        "next": r.next,
    })
}

async fn post_roll(
    State(state): State<AppState>,
    Path((id, n)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let roll = n
        .parse::<u64>()
        .ok()
        .and_then(|n| RollId::from_number(n).ok())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_roll",
                "roll must be 1 or 2",
                Some(format!("run {run} roll {n}")),
            )
        })?;
    // Admission before any work: past the bound, the caller retries later.
    if state.admitted.fetch_add(1, Ordering::SeqCst) >= state.admit_limit {
        state.admitted.fetch_sub(1, Ordering::SeqCst);
        return Err(ApiError::busy(2));
    }
    let _admission = Admission(state.admitted.clone());
    let _memory = admit_memory(&state, body.len())?;
    crate::limits::check_package(&body, &state.engine.config.package_limits).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "limit_exceeded",
            e.to_string(),
            Some(format!("run {run} {roll} proof package")),
        )
    })?;
    let engine = &state.engine;
    let _run_lock = engine.lock_run(&run).await;
    let phase = RunState::load(&engine.store, &run).await?;
    // A decided run takes no roll: only a retry of a roll it was sealed with gets its stored
    // answer; nothing is judged, nothing is stored.
    if let RunState::Decided(d) = &phase {
        if d.evidence.rolls.iter().any(|r| r.roll_id == roll) {
            if let Some(answer) = already_judged(engine, &run, roll, &body).await? {
                return Ok(answer);
            }
        }
    }
    let open = phase.open()?;
    if open.judged(roll).is_some() {
        // A record seal finished is answered; one without its receipt is judged (again),
        // which commits it only if it is exactly what seal derives.
        if let Some(answer) = already_judged(engine, &run, roll, &body).await? {
            return Ok(answer);
        }
    }
    intake::put_proof_package(engine, &run, roll, &body).await?;
    let _permit = state.rolls.acquire().await.map_err(|_| ApiError::busy(2))?;
    let report = roll::judge_open_roll(engine, &open, roll, &roll::Source::Live).await?;
    engine.judges.metrics.roll_judged(
        &report.roll.roll_id.to_string(),
        report.roll.roll_outcome.as_str(),
        report.consensus.degraded,
        report
            .consensus
            .obligation_results
            .iter()
            .map(|o| o.status.as_str()),
    );
    Ok((StatusCode::OK, Json(roll_body(&run, &report))).into_response())
}

/// Charges a roll request its expected peak memory against the budget (never more than the
/// whole budget, so that one largest package still runs alone); 429 when it does not fit.
fn admit_memory(
    state: &AppState,
    body_len: usize,
) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    let kib = (body_len as u64).saturating_mul(ROLL_AMPLIFICATION) / 1024 + 1;
    let kib = u32::try_from(kib).unwrap_or(u32::MAX).min(state.memory_kib);
    state
        .memory
        .clone()
        .try_acquire_many_owned(kib)
        .map_err(|_| {
            let mut e = ApiError::busy(2);
            e.message = "the memory budget of rolls in progress is spent; retry later".into();
            e
        })
}

/// A roll seal already judged (its record's receipt verifies): the same proof package gets
/// the stored answer, another one a conflict. `None` when no such record is stored.
async fn already_judged(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    body: &[u8],
) -> Result<Option<Response>, ApiError> {
    let store = &engine.store;
    let Some(done) = roll::stored_roll(engine, run, roll).await? else {
        return Ok(None);
    };
    let submitted = crate::json::parse(body, store.doc_limit())
        .ok()
        .and_then(|v| crate::canonical::canonical_bytes(&v).ok())
        .map(|b| crate::canonical::Hash::of(&b));
    if submitted.as_ref() != Some(&done.roll.proof_package_hash) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("{roll} was judged with another proof package"),
            Some(format!("run {run} {roll}")),
        ));
    }
    Ok(Some(
        (StatusCode::OK, Json(roll_body(run, &done))).into_response(),
    ))
}

async fn post_finalize(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let done = crate::postguard::finalize(&state.engine, &run).await?;
    if done.wrote {
        let outcome = done.evidence.outcome.map(|o| o.as_str()).unwrap_or("?");
        state.engine.judges.metrics.add(
            "seal_runs_decided_total",
            &format!("outcome=\"{outcome}\""),
            1.0,
        );
    }
    let e = &done.evidence;
    Ok(Json(json!({
        "runId": run,
        "outcome": e.outcome,
        "decision": e.decision,
        "sourceRollId": e.source_roll_id,
        "costRmb": e.cost_rmb,
        "evidenceRef": Key::evidence(&run).as_str(),
        "evidenceSha256": done.evidence_hash,
        "sealRef": Key::seal(&run).as_str(),
        "sealSha256": done.envelope_hash,
        "keyId": done.envelope.signatures.first().map(|s| s.keyid.clone()),
    }))
    .into_response())
}

async fn get_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let rolls = |rolls: &[crate::doc::Roll]| -> Vec<Value> {
        rolls
            .iter()
            .map(|r| json!({"rollId": r.roll_id, "rollOutcome": r.roll_outcome}))
            .collect()
    };
    let (open, phase) = match RunState::load(&state.engine.store, &run).await? {
        RunState::Decided(d) => {
            let ev = &d.evidence;
            return Ok(Json(json!({
                "runId": run, "phase": "DECIDED", "outcome": ev.outcome, "decision": ev.decision,
                "rolls": rolls(&ev.rolls), "evidenceSha256": d.evidence_hash, "next": null
            }))
            .into_response());
        }
        RunState::Open(o) => (o, "JUDGING"),
        RunState::Finalizing(o) => (o, "FINALIZING"),
    };
    let next = match (phase, open.rolls.last()) {
        ("FINALIZING", _) => "finalize",
        (_, None) => "roll-1",
        (_, Some(r)) => match crate::merge::next_after(r.roll_id, r.roll_outcome) {
            NextStep::Roll2 => "roll-2",
            NextStep::Finalize => "finalize",
        },
    };
    Ok(
        Json(json!({"runId": run, "phase": phase, "rolls": rolls(&open.rolls), "next": next}))
            .into_response(),
    )
}

async fn get_verify(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    if !crate::verify::run_exists(&state.engine.store, &run).await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no run {run}"),
            Some(format!("run {run}")),
        ));
    }
    let report = crate::verify::verify_run(&state.engine.store, &run, &state.trusted).await?;
    Ok(Json(report).into_response())
}

/// The decision tree of a sealed run: the page for `Accept: text/html`, else the JSON.
async fn get_explain(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let explained = crate::explain::explain(&state.engine.store, &run, &state.trusted).await?;
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if wants_html {
        let cmd = format!(
            "seal verify {run} --store {} --trust seal.pub.pem",
            state.engine.store.url()
        );
        Ok((
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CONTENT_SECURITY_POLICY, crate::explain::html::CSP),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            explained.html(&cmd),
        )
            .into_response())
    } else {
        Ok((
            [(header::CONTENT_TYPE, "application/json")],
            explained.tree_bytes,
        )
            .into_response())
    }
}

/// The latest signed checkpoint of the transparency log, the note text exactly as stored.
async fn get_log_checkpoint(State(state): State<AppState>) -> Result<Response, ApiError> {
    match crate::transparency::latest_checkpoint(&state.engine.store).await? {
        Some(note) => {
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], note).into_response())
        }
        None => Err(crate::transparency::LogError::NoCheckpoint.into()),
    }
}

/// The inclusion proof of a run's seal against the latest checkpoint (`seal log prove --json`).
async fn get_log_proof(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let view = crate::verify::load_log(&state.engine.store, &state.trusted).await?;
    let proof = view.proof(&run)?;
    Ok(Json(proof).into_response())
}

/// The query of `GET /v1/stats`: `since`, `until`, `genre` (each at most once); anything else
/// is refused.
fn stats_query(raw: Option<&str>) -> Result<crate::stats::Query, ApiError> {
    let mut q = crate::stats::Query::default();
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "bad_query", m, None);
    for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let slot = match k.as_ref() {
            "since" => &mut q.since,
            "until" => &mut q.until,
            "genre" => &mut q.genre,
            other => {
                let name: String = other.chars().take(64).collect();
                return Err(bad(format!(
                    "unknown query parameter {name:?} (since, until, genre)"
                )));
            }
        };
        if slot.replace(v.into_owned()).is_some() {
            return Err(bad(format!("query parameter {k} given twice")));
        }
    }
    Ok(q)
}

/// The figures of `seal stats`: the page for `Accept: text/html`, else the JSON (seal.stats/1).
async fn get_stats(
    State(state): State<AppState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let query = stats_query(raw.as_deref())?;
    let stats = crate::stats::stats(&state.engine.store, &state.trusted, query).await?;
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if wants_html {
        Ok((
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CONTENT_SECURITY_POLICY, crate::explain::html::CSP),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            stats.html(),
        )
            .into_response())
    } else {
        Ok(([(header::CONTENT_TYPE, "application/json")], stats.bytes).into_response())
    }
}

/// How long a client should wait after a 429 (seconds).
pub const RETRY_AFTER_S: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    fn with_authorization(value: &str) -> Request {
        let mut req = Request::new(Body::empty());
        req.headers_mut().insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_str(value).unwrap(),
        );
        req
    }

    #[test]
    fn the_bearer_scheme_is_matched_case_insensitively() {
        for value in ["Bearer tok", "bearer tok", "BEARER tok", "bEaReR  tok"] {
            assert_eq!(bearer(&with_authorization(value)), Some("tok"), "{value}");
        }
        for value in ["Basic tok", "Bearertok", "tok", "Bearer"] {
            assert_ne!(bearer(&with_authorization(value)), Some("tok"), "{value}");
        }
        assert_eq!(bearer(&Request::new(Body::empty())), None);
        let (api, metrics) = (Secret::new("api".into()), Secret::new("met".into()));
        assert!(admitted(Some("api"), &[Some(&api), Some(&metrics)]));
        assert!(admitted(Some("met"), &[Some(&api), Some(&metrics)]));
        assert!(!admitted(Some("met"), &[Some(&api)]));
        assert!(!admitted(None, &[Some(&api), None]));
    }

    #[test]
    fn a_non_loopback_listen_address_needs_a_token_or_insecure_no_auth() {
        for addr in [
            "127.0.0.1:0",
            "[::1]:0",
            "localhost:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            assert_eq!(
                exposure(addr, false, false).unwrap(),
                Exposure::Loopback,
                "{addr}"
            );
        }
        for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.7:7878"] {
            let e = exposure(addr, false, false).unwrap_err().to_string();
            assert!(
                e.contains("--insecure-no-auth") && e.contains("SEAL_API_TOKEN"),
                "{e}"
            );
            assert_eq!(
                exposure(addr, true, false).unwrap(),
                Exposure::Authenticated
            );
            assert_eq!(
                exposure(addr, false, true).unwrap(),
                Exposure::OpenToNetwork
            );
        }
        assert!(matches!(
            exposure("no port here", true, true),
            Err(ExposureError::Unresolved { .. })
        ));
    }
}
