//! API errors: every failure becomes `{"error": {"code", "message", "object"}}` with the HTTP
//! status chosen here, in one place, by who is at fault: the caller (4xx), the infrastructure
//! (503, retry later), or stored evidence that is corrupt (500, never retried silently).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use seal_core::fault::{Fault, HasFault};
use seal_engine::explain_load::ExplainError;
use seal_engine::intake::IntakeError;
use seal_engine::postguard::FinalizeError;
use seal_engine::roll::{JudgingError, SubmitError};
use seal_engine::run_state::RunStateError;
use seal_engine::stats_load::StatsError;
use seal_log::LogError;
use seal_store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub object: Option<String>,
    pub retry_after: Option<u64>,
    /// The store operation that failed, when the store is why (an infrastructure fault).
    pub store_op: Option<&'static str>,
}

/// What an answered 5xx was, for the middleware that logs and counts it
/// ([`crate::routes::observe`]); carried as a response extension, never sent.
#[derive(Debug, Clone)]
pub struct Reported {
    pub code: &'static str,
    pub message: String,
    pub object: Option<String>,
    pub store_op: Option<&'static str>,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
        object: Option<String>,
    ) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            object,
            retry_after: None,
            store_op: None,
        }
    }
    pub fn busy(retry_after: u64) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: "busy",
            message: "too many rolls in progress and queued; retry later".into(),
            object: None,
            retry_after: Some(retry_after),
            store_op: None,
        }
    }
    /// Both judge slots are down (their breakers open): nothing can be judged now, and nothing
    /// was; the roll's package is stored, so the same POST later continues it.
    pub fn judges_unavailable(run: &str, roll: &str, retry_after: std::time::Duration) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "judges_unavailable",
            message: "both judges are unreachable (see /readyz); the roll was not judged: send it again after Retry-After".into(),
            object: Some(format!("run {run} {roll}")),
            retry_after: Some(retry_after.as_secs_f64().ceil().max(1.0) as u64),
            store_op: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            json!({"error": {"code": self.code, "message": self.message, "object": self.object}});
        let mut resp = (self.status, axum::Json(body)).into_response();
        if self.status.is_server_error() {
            resp.extensions_mut().insert(Reported {
                code: self.code,
                message: self.message,
                object: self.object,
                store_op: self.store_op,
            });
        }
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl ApiError {
    /// The one mapping from fault to status: corruption is 500 and infrastructure 503 whatever
    /// the error; a caller's fault gets the 4xx status and code its error names.
    fn by_fault(
        fault: Fault,
        caller: (StatusCode, &'static str),
        message: String,
        object: Option<String>,
    ) -> ApiError {
        let (status, code) = match fault {
            Fault::Caller => caller,
            Fault::Config => (StatusCode::SERVICE_UNAVAILABLE, "misconfigured"),
            Fault::Infrastructure => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Fault::Corruption => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_store"),
        };
        let mut e = ApiError::new(status, code, message, object);
        if fault.is_retryable() {
            e.retry_after = Some(RETRY_AFTER_S);
        }
        e
    }
}

/// Seconds a client should wait before retrying an infrastructure failure.
const RETRY_AFTER_S: u64 = 2;

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let caller = match &e {
            StoreError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            StoreError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            StoreError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            StoreError::Reserved { .. } => (StatusCode::FORBIDDEN, "reserved"),
            _ => (StatusCode::BAD_REQUEST, "bad_request"),
        };
        let mut api = ApiError::by_fault(e.fault(), caller, e.to_string(), e.object());
        if e.fault() == Fault::Infrastructure {
            api.store_op = Some(match &e {
                StoreError::Backend { op, .. } => op,
                StoreError::Upload(_) => "upload",
                _ => "other",
            });
        }
        api
    }
}

impl From<RunStateError> for ApiError {
    fn from(e: RunStateError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        let (caller, run) = match e {
            RunStateError::NotFound { run } => ((StatusCode::NOT_FOUND, "not_found"), run),
            RunStateError::Decided { run, .. } => ((StatusCode::CONFLICT, "run_decided"), run),
            RunStateError::Finalizing { run } => ((StatusCode::CONFLICT, "run_finalizing"), run),
            RunStateError::Store(s) => return s.into(),
            RunStateError::Planted(p) => {
                return ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "planted_document",
                    msg,
                    Some(p.key.to_string()),
                )
            }
        };
        ApiError::by_fault(fault, caller, msg, Some(format!("run {run}")))
    }
}

impl From<IntakeError> for ApiError {
    fn from(e: IntakeError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        let (caller, object) = match e {
            IntakeError::Json { object, .. } => ((StatusCode::BAD_REQUEST, "bad_json"), object),
            IntakeError::Invalid { object, .. } => (
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_document"),
                object,
            ),
            IntakeError::Mismatch { object, .. } => {
                ((StatusCode::UNPROCESSABLE_ENTITY, "mismatch"), object)
            }
            IntakeError::Provenance { object, .. } => {
                ((StatusCode::UNPROCESSABLE_ENTITY, "provenance"), object)
            }
            IntakeError::MissingBlobs { object, .. } => {
                ((StatusCode::UNPROCESSABLE_ENTITY, "missing_blobs"), object)
            }
            IntakeError::Conflict { object, .. } => ((StatusCode::CONFLICT, "conflict"), object),
            IntakeError::Order { object, .. } => ((StatusCode::CONFLICT, "out_of_order"), object),
            IntakeError::NotFound { object, .. } => ((StatusCode::NOT_FOUND, "not_found"), object),
            IntakeError::OverLimit { object, .. } => {
                ((StatusCode::UNPROCESSABLE_ENTITY, "limit_exceeded"), object)
            }
            IntakeError::State(s) => return s.into(),
            IntakeError::Store(s) => return s.into(),
            IntakeError::Receipt(r) => return r.into(),
        };
        ApiError::by_fault(fault, caller, msg, Some(object))
    }
}

impl From<SubmitError> for ApiError {
    fn from(e: SubmitError) -> ApiError {
        match e {
            SubmitError::OtherPackage { run, roll } => ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                SubmitError::OtherPackage {
                    run: run.clone(),
                    roll,
                }
                .to_string(),
                Some(format!("run {run} {roll}")),
            ),
            SubmitError::State(s) => s.into(),
            SubmitError::Intake(i) => i.into(),
            SubmitError::Judging(j) => j.into(),
        }
    }
}

impl From<JudgingError> for ApiError {
    fn from(e: JudgingError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        match e {
            JudgingError::State(s) => s.into(),
            JudgingError::Store(s) => s.into(),
            JudgingError::NoProofPackage { run, roll } => ApiError::by_fault(
                fault,
                (StatusCode::NOT_FOUND, "not_found"),
                msg,
                Some(format!("run {run} {roll}")),
            ),
            JudgingError::Internal { run, roll, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                msg,
                Some(format!("run {run} {roll}")),
            ),
            JudgingError::Resume(seal_engine::resume::ResumeError::Store(s)) => s.into(),
            JudgingError::Receipt(r) => r.into(),
            // No judge was called: the store or the log refused the policy's registration.
            JudgingError::Policy(p) => ApiError::by_fault(
                fault,
                (StatusCode::SERVICE_UNAVAILABLE, "judge_policy"),
                msg,
                match p {
                    seal_engine::policy::PolicyError::Store { key, .. } => Some(key.to_string()),
                    _ => None,
                },
            ),
            JudgingError::Planted { key, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "planted_document",
                msg,
                Some(key),
            ),
            JudgingError::Resume(seal_engine::resume::ResumeError::Planted(
                seal_engine::resume::Planted { key, .. },
            )) => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "planted_attempt"),
                msg,
                Some(key),
            ),
        }
    }
}

/// An object seal cannot authenticate: 500 `planted_<kind>`, naming it (never retried
/// silently, never a caller's fault); one without its receipt was never committed: 409
/// `uncommitted`, naming it and what to re-send.
impl From<seal_engine::notary::ReceiptError> for ApiError {
    fn from(e: seal_engine::notary::ReceiptError) -> ApiError {
        let msg = e.to_string();
        match e {
            seal_engine::notary::ReceiptError::Store(s) => s.into(),
            seal_engine::notary::ReceiptError::Uncommitted { object, .. } => ApiError::new(
                StatusCode::CONFLICT,
                seal_engine::notary::UNCOMMITTED,
                msg,
                Some(object),
            ),
            seal_engine::notary::ReceiptError::Unauthenticated { object, kind, .. } => {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    kind.code(),
                    msg,
                    Some(object),
                )
            }
        }
    }
}

impl From<FinalizeError> for ApiError {
    fn from(e: FinalizeError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        match e {
            FinalizeError::NoRolls { run } => ApiError::by_fault(
                fault,
                (StatusCode::CONFLICT, "no_rolls"),
                msg,
                Some(format!("run {run}")),
            ),
            FinalizeError::NoKey { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_signing_key", msg, None)
            }
            FinalizeError::State(s) => s.into(),
            FinalizeError::Roll(r) => r.into(),
            FinalizeError::Receipt(r) => r.into(),
            FinalizeError::Planted { object, kind, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                match kind {
                    "seal" => "planted_seal",
                    "snapshot" => "planted_snapshot",
                    "document" => "planted_document",
                    _ => "planted_evidence",
                },
                msg,
                Some(object),
            ),
            FinalizeError::Corrupt { run, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "corrupt_store",
                msg,
                Some(format!("run {run}")),
            ),
            FinalizeError::Store(s) => s.into(),
            FinalizeError::Log { run, source } => {
                let mut e = ApiError::from(source);
                e.message = msg;
                e.object = Some(format!("run {run}"));
                e
            }
            FinalizeError::Internal { run, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                msg,
                Some(format!("run {run}")),
            ),
        }
    }
}

impl From<ExplainError> for ApiError {
    fn from(e: ExplainError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        match e {
            ExplainError::Store(s) => s.into(),
            ExplainError::NotFound { run } => ApiError::by_fault(
                fault,
                (StatusCode::NOT_FOUND, "not_found"),
                msg,
                Some(format!("run {run}")),
            ),
            ExplainError::NotVerified(report) => {
                let first = report.problems.first().map(|p| p.to_string());
                ApiError::by_fault(
                    fault,
                    (StatusCode::CONFLICT, "not_verified"),
                    match first {
                        Some(p) => format!("{msg}; first: {p}"),
                        None => msg,
                    },
                    Some(format!("run {}", report.run_id)),
                )
            }
            ExplainError::Corrupt { key, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_store"),
                msg,
                Some(key),
            ),
            ExplainError::Invalid { run, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                msg,
                Some(format!("run {run}")),
            ),
        }
    }
}

impl From<LogError> for ApiError {
    fn from(e: LogError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        match e {
            LogError::Store(s) => s.into(),
            LogError::NotLogged { run } => ApiError::by_fault(
                fault,
                (StatusCode::NOT_FOUND, "not_logged"),
                msg,
                Some(format!("run {run}")),
            ),
            LogError::NoCheckpoint => ApiError::by_fault(
                fault,
                (StatusCode::NOT_FOUND, "no_checkpoint"),
                msg,
                Some(seal_log::LOG_CHECKPOINTS.into()),
            ),
            LogError::NotSealed { run, .. } => ApiError::by_fault(
                fault,
                (StatusCode::CONFLICT, "not_sealed"),
                msg,
                Some(format!("run {run}")),
            ),
            LogError::Corrupt { key, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_store"),
                msg,
                Some(key),
            ),
            LogError::Format(_) => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_store"),
                msg,
                None,
            ),
            LogError::Refused { .. } => ApiError::by_fault(
                fault,
                (StatusCode::CONFLICT, "log_refused"),
                msg,
                Some(seal_log::LOG_ENTRIES.into()),
            ),
        }
    }
}

impl From<StatsError> for ApiError {
    fn from(e: StatsError) -> ApiError {
        let msg = e.to_string();
        let fault = e.fault();
        match e {
            StatsError::Store(s) => s.into(),
            StatsError::BadTime { .. } | StatsError::BadGenre(_) | StatsError::BadPolicy(_) => {
                ApiError::by_fault(fault, (StatusCode::BAD_REQUEST, "bad_query"), msg, None)
            }
            StatsError::Corrupt { key, .. } => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_store"),
                msg,
                Some(key),
            ),
            StatsError::Invalid(_) => ApiError::by_fault(
                fault,
                (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                msg,
                None,
            ),
        }
    }
}
