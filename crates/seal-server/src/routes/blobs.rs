//! `PUT /v1/blobs/sha256/{hex}`: a frame streamed into the store under its hash, refused when
//! its bytes hash otherwise or exceed the blob limit.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures::TryStreamExt;
use serde_json::json;

use seal_core::canonical::Hash;
use seal_store::Key;

use super::runs::created;
use crate::{ApiError, AppState};

pub(crate) async fn put_blob(
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
    let stream = body.into_data_stream().map_err(|e| e.to_string());
    let put = match state
        .engine
        .store()
        .put_blob_once(
            Box::pin(stream),
            Some(&hash),
            state.engine.config().max_blob_bytes,
        )
        .await
    {
        Ok(s) => s,
        Err(seal_store::StoreError::HashMismatch {
            expected, actual, ..
        }) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "hash_mismatch",
                format!("the bytes hash to {actual}, not {expected}: nothing stored"),
                Some(key.to_string()),
            ))
        }
        Err(seal_store::StoreError::TooLarge { size, limit, .. }) => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("blob over {limit} bytes (got at least {size})"),
                Some(key.to_string()),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let stored = put.stored;
    Ok(created(
        put.created,
        json!({"key": stored.key.as_str(), "sha256": stored.hash, "bytes": stored.size}),
    ))
}
