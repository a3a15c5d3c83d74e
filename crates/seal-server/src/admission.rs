//! The log admission gate: `seal serve` binds first and admits the transparency log in the
//! background (G2, docs/DESIGN.md §13); finalize waits on this gate, readiness reads it.

use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::watch;

use crate::error::ApiError;

/// Longest a finalize waits for the log admission before answering 503.
pub const FINALIZE_WAIT: Duration = Duration::from_secs(5);
/// What a client is told to wait after `log_not_admitted` (seconds).
const ADMISSION_RETRY_AFTER_S: u64 = 5;

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
