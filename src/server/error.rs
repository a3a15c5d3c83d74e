//! API errors: every failure becomes `{"error": {"code", "message", "object"}}` with the HTTP
//! status chosen here, in one place, by who is at fault: the caller (4xx), the infrastructure
//! (503, retry later), or stored evidence that is corrupt (500, never retried silently).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::intake::IntakeError;
use crate::postguard::FinalizeError;
use crate::roll::RollError;
use crate::store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub object: Option<String>,
    pub retry_after: Option<u64>,
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
        }
    }
    pub fn busy(retry_after: u64) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: "busy",
            message: "too many rolls in progress and queued; retry later".into(),
            object: None,
            retry_after: Some(retry_after),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            json!({"error": {"code": self.code, "message": self.message, "object": self.object}});
        let mut resp = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let msg = e.to_string();
        match &e {
            StoreError::Conflict { key, .. } => {
                ApiError::new(StatusCode::CONFLICT, "conflict", msg, Some(key.to_string()))
            }
            StoreError::HashMismatch { key, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "corrupt",
                msg,
                Some(key.to_string()),
            ),
            StoreError::NotFound { key } => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                msg,
                Some(key.to_string()),
            ),
            StoreError::TooLarge { key, .. } => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                msg,
                Some(key.clone()),
            ),
            StoreError::BadDocument { key, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "corrupt",
                msg,
                Some(key.to_string()),
            ),
            StoreError::Upload(_) => ApiError::new(StatusCode::BAD_REQUEST, "bad_body", msg, None),
            _ => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                msg,
                None,
            ),
        }
    }
}

impl From<IntakeError> for ApiError {
    fn from(e: IntakeError) -> ApiError {
        let msg = e.to_string();
        match e {
            IntakeError::Json { object, .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_json", msg, Some(object))
            }
            IntakeError::Invalid { object, .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_document",
                msg,
                Some(object),
            ),
            IntakeError::Mismatch { object, .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "mismatch",
                msg,
                Some(object),
            ),
            IntakeError::MissingBlobs { object, .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "missing_blobs",
                msg,
                Some(object),
            ),
            IntakeError::Conflict { object, .. } => {
                ApiError::new(StatusCode::CONFLICT, "conflict", msg, Some(object))
            }
            IntakeError::Order { object, .. } => {
                ApiError::new(StatusCode::CONFLICT, "out_of_order", msg, Some(object))
            }
            IntakeError::NotFound { object, .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", msg, Some(object))
            }
            IntakeError::Store(s) => s.into(),
        }
    }
}

impl From<RollError> for ApiError {
    fn from(e: RollError) -> ApiError {
        match e {
            RollError::Intake(i) => i.into(),
            RollError::Store(s) => s.into(),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                other.to_string(),
                None,
            ),
        }
    }
}

impl From<FinalizeError> for ApiError {
    fn from(e: FinalizeError) -> ApiError {
        let msg = e.to_string();
        match e {
            FinalizeError::NoRolls { run } => ApiError::new(
                StatusCode::CONFLICT,
                "no_rolls",
                msg,
                Some(format!("run {run}")),
            ),
            FinalizeError::NoKey { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_signing_key", msg, None)
            }
            FinalizeError::Intake(i) => i.into(),
            FinalizeError::Roll(r) => r.into(),
            FinalizeError::Store(s) => s.into(),
            FinalizeError::Internal { run, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                msg,
                Some(format!("run {run}")),
            ),
        }
    }
}
