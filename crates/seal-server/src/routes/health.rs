//! Probes and the log admission gate: `/livez` (the process answers, no I/O), `/readyz` (the
//! store answers and the log was not refused), and [`AdmissionGate`], which lets the daemon
//! bind its port before the log admission (G2, docs/DESIGN.md §13) has read the history.
//!
//! Decision: only what signs a log waits for the admission. Finalize is the one route that
//! appends a seal to the log, so it waits (at most [`FINALIZE_WAIT`], then 503
//! `log_not_admitted` with Retry-After); intake, rolls and reads run at once. Nothing is
//! signed before the log is known to account for the store, so G2 holds, while a restart no
//! longer costs a read of the whole history before the first request (and a liveness probe
//! on S3 no longer restarts every pod when S3 blinks).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tokio::sync::watch;

use seal_core::key::Key;

use crate::{ApiError, AppState};

/// Longest a finalize waits for the log admission before answering 503.
pub const FINALIZE_WAIT: Duration = Duration::from_secs(5);
/// What a client is told to wait after `log_not_admitted` (seconds).
const ADMISSION_RETRY_AFTER_S: u64 = 5;
/// Longest `/readyz` waits for the store.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the log admission stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Still reading the history: nothing may be appended to the log yet.
    Pending,
    /// The log accounts for the store.
    Admitted,
    /// It does not: nothing is ever appended by this process (it exits).
    Refused,
}

impl Admission {
    pub fn as_str(self) -> &'static str {
        match self {
            Admission::Pending => "pending",
            Admission::Admitted => "admitted",
            Admission::Refused => "refused",
        }
    }
}

/// The admission's state, shared by the task that runs it and every request that waits on it.
#[derive(Clone, Debug)]
pub struct AdmissionGate(watch::Sender<Admission>);

impl AdmissionGate {
    /// A gate in `state`.
    pub fn new(state: Admission) -> AdmissionGate {
        AdmissionGate(watch::Sender::new(state))
    }

    /// Records the admission's result.
    pub fn set(&self, state: Admission) {
        self.0.send_replace(state);
    }

    pub fn get(&self) -> Admission {
        *self.0.borrow()
    }

    /// Waits up to `limit` for the admission to end: Ok once admitted, else the API error to
    /// answer (503 `log_not_admitted` while pending, 409 `log_refused` when refused).
    pub async fn wait_admitted(&self, limit: Duration) -> Result<(), ApiError> {
        let mut rx = self.0.subscribe();
        let waited = tokio::time::timeout(limit, rx.wait_for(|s| *s != Admission::Pending)).await;
        match waited.ok().and_then(Result::ok).map(|s| *s) {
            Some(Admission::Admitted) => Ok(()),
            Some(_) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "log_refused",
                "the transparency log does not account for the store; this replica appends \
                 nothing (the operator runs `seal log rebuild`)",
                None,
            )),
            None => {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "log_not_admitted",
                    "the transparency log is still being checked against the store after a \
                     start; retry later",
                    None,
                );
                e.retry_after = Some(ADMISSION_RETRY_AFTER_S);
                Err(e)
            }
        }
    }
}

/// `GET /livez`: the process serves. No I/O, so a store outage never restarts a pod.
pub(crate) async fn livez() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// `GET /readyz`: the store answers within [`STORE_PROBE_TIMEOUT`] and the log admission was
/// not refused (pending is ready: intake and rolls run meanwhile); else 503 with what failed.
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    let health = Key::health();
    let probe = tokio::time::timeout(STORE_PROBE_TIMEOUT, state.engine.store().exists(&health));
    let store = match probe.await {
        Ok(Ok(_)) => "ok".to_string(),
        Ok(Err(e)) => format!("unreachable: {e}"),
        Err(_) => format!("no answer within {} ms", STORE_PROBE_TIMEOUT.as_millis()),
    };
    let admission = state.admission.get();
    let ready = store == "ok" && admission != Admission::Refused;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if ready { "ok" } else { "unavailable" },
        "store": store,
        "admission": admission.as_str(),
    });
    (status, Json(body)).into_response()
}
