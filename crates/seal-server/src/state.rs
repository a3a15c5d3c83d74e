//! The daemon's shared state ([`AppState`]: the engine, the trusted keys, and the bounds on
//! rolls in progress) and the place of a roll request in their queue.

use axum::http::StatusCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

use seal_core::ids::RunId;
use seal_core::sealing::PublicKey;
use seal_engine::engine::Engine;

use crate::ApiError;

/// Shared state of the daemon.
#[derive(Clone)]
pub struct AppState {
    pub(crate) engine: Engine,
    pub(crate) rolls: Arc<Semaphore>,
    pub(crate) queued: Arc<AtomicUsize>,
    pub(crate) queue_limit: usize,
    /// Memory budget of roll requests in progress, in KiB permits.
    pub(crate) memory: Arc<Semaphore>,
    pub(crate) memory_kib: u32,
    pub(crate) trusted: Arc<Vec<PublicKey>>,
    /// Reviewer keys whose reviews are trusted (`reviewers.trusted`); none by default.
    pub(crate) reviewers: Arc<Vec<PublicKey>>,
    /// Whether the log may be appended to yet (see [`crate::routes::health`]).
    pub(crate) admission: crate::admission::AdmissionGate,
    /// The server's own metrics (requests, rolls in progress, fsyncs, the log admission, build).
    pub(crate) metrics: Arc<crate::metrics::ServerMetrics>,
    /// Whether the store takes writes, as answered requests showed (`/readyz`).
    pub(crate) store_writes: Arc<crate::store_health::StoreWrites>,
    /// The review workbench's sessions (this process's only).
    pub(crate) sessions: Arc<crate::sessions::Sessions>,
}

/// The binary's version, the commit it was built from and the compiler (the `seal` package's
/// build script knows them; this crate has none).
#[derive(Debug, Clone, Copy)]
pub struct BuildInfo {
    pub version: &'static str,
    pub commit: &'static str,
    pub rustc: &'static str,
}

/// What a roll request may take in memory per byte of its proof package, at peak (parse tree,
/// typed copy, canonical bytes, judge packages): measured in docs/BENCHMARKS.md.
pub const ROLL_AMPLIFICATION: u64 = 16;

impl AppState {
    pub fn new(engine: Engine, trusted: Vec<PublicKey>) -> AppState {
        let s = &engine.config().server;
        let queue_limit = s.max_rolls_in_progress + s.queue_bound;
        let memory_kib = u32::try_from((engine.config().request_memory_bytes / 1024).max(1))
            .unwrap_or(Semaphore::MAX_PERMITS as u32)
            .min(Semaphore::MAX_PERMITS as u32);
        AppState {
            memory: Arc::new(Semaphore::new(memory_kib as usize)),
            memory_kib,
            rolls: Arc::new(Semaphore::new(s.max_rolls_in_progress)),
            queued: Arc::new(AtomicUsize::new(0)),
            queue_limit,
            trusted: Arc::new(trusted),
            reviewers: Arc::new(Vec::new()),
            admission: crate::admission::AdmissionGate::new(crate::admission::Admission::Admitted),
            metrics: Arc::new(crate::metrics::ServerMetrics::new()),
            store_writes: Arc::default(),
            sessions: Arc::default(),
            engine,
        }
    }

    /// The same state, trusting reviews signed by `reviewers` (`reviewers.trusted`).
    pub fn with_reviewers(mut self, reviewers: Vec<PublicKey>) -> AppState {
        self.reviewers = Arc::new(reviewers);
        self
    }

    /// The same state, reporting `build` in `seal_build_info`.
    pub fn with_build(self, build: BuildInfo) -> AppState {
        self.metrics.set_build(&build);
        self
    }

    /// The log admission gate: admitted unless the caller sets it pending and runs the
    /// admission itself (`seal serve` does, after binding its port).
    pub fn admission_gate(&self) -> crate::admission::AdmissionGate {
        self.admission.clone()
    }
}

/// Releases a place in the queue of roll requests when one ends (success, error or cancellation).
pub(crate) struct QueuePlace(pub(crate) Arc<AtomicUsize>);
impl Drop for QueuePlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) fn run_id(s: &str) -> Result<RunId, ApiError> {
    RunId::parse(s).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_run_id",
            e.to_string(),
            Some(s.chars().take(80).collect()),
        )
    })
}

/// Charges a roll request its expected peak memory against the budget (never more than the
/// whole budget, so that one largest package still runs alone); 429 when it does not fit.
pub(crate) fn charge_memory(
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
