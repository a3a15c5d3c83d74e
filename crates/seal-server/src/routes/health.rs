//! Probes and the log admission gate: `/livez` (the process answers, no I/O), `/readyz` (the
//! store answers, the log was not refused, and at least one judge slot is up), and [`AdmissionGate`], which lets the daemon
//! bind its port before the log admission (G2, docs/DESIGN.md §13) has read the history.
//!
//! Only finalize, the one route that appends a seal to the log, waits for the admission (at most
//! [`crate::admission::FINALIZE_WAIT`], then 503 `log_not_admitted` with Retry-After); intake,
//! rolls and reads run at once. Nothing is signed before the log is known to account for the
//! store, so G2 holds (docs/DECISIONS.md, "Start-up independent of history").

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use seal_core::key::Key;

use crate::AppState;

pub use crate::admission::Admission;

/// Longest `/readyz` waits for the store.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /livez`: the process serves. No I/O, so a store outage never restarts a pod.
pub(crate) async fn livez() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// `GET /readyz`: the store answers within [`STORE_PROBE_TIMEOUT`], the log admission was
/// not refused (pending is ready: intake and rolls run meanwhile) and not both judge slots are
/// down (one down still judges, degraded); else 503 with what failed. The judges' state is the
/// breakers' (`judge_http::health`), so this answers without calling them.
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    let health = Key::health();
    let probe = tokio::time::timeout(STORE_PROBE_TIMEOUT, state.engine.store().exists(&health));
    let store = match probe.await {
        Ok(Ok(_)) => state
            .store_writes
            .failing()
            .unwrap_or_else(|| "ok".to_string()),
        Ok(Err(e)) => format!("unreachable: {e}"),
        Err(_) => format!("no answer within {} ms", STORE_PROBE_TIMEOUT.as_millis()),
    };
    let admission = state.admission.get();
    let judges = state.engine.judges();
    let judges_down = judges.unavailable().is_some();
    let ready = store == "ok" && admission != Admission::Refused && !judges_down;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if ready { "ok" } else { "unavailable" },
        "store": store,
        "admission": admission.as_str(),
        "judges": {"a": judges.a.health().describe(), "b": judges.b.health().describe()},
    });
    (status, Json(body)).into_response()
}
