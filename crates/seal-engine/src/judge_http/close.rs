//! Closing an attempt that is never sent: a slot the roll guard kept from being called
//! (`not_dispatched`), or the next attempt of a slot whose roll was reserved under another
//! configuration (`config_changed`, see [`super::walk`]). Either way the attempt still gets its
//! records, so every ref of the roll exists and the audit re-derives the slot's failure from
//! them: a failure record at `raw.json` (content-addressed first), then the MAC'd meta (the
//! commit), then `raw.json`. The records carry no clock, so a redo (a restart, a second
//! replica) writes the same bytes.

use bytes::Bytes;

use super::client::{JudgeClient, SlotJob};
use super::parse::{ErrorClass, ParseFailure};
use super::slot::AttemptRecord;
use crate::resume::{self, ResumeError};
use seal_core::doc::*;
use seal_store::{Key, Store, StoreError, Stored};

/// An attempt closed unsent, and why.
pub struct Closing {
    pub attempt: u32,
    /// The attempt's stored request (authenticated by the caller) and its bytes, if one was
    /// stored before the attempt was closed.
    pub request: Option<(Stored, Bytes)>,
    pub stage: FailureStage,
    pub class: ErrorClass,
    /// The model the attempt's request asks for (or would have).
    pub model: String,
    pub detail: String,
}

impl JudgeClient {
    /// Stores the records of an attempt that is never sent (see the module docs).
    pub async fn close_unsent(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        c: Closing,
    ) -> Result<AttemptRecord, ResumeError> {
        let k = c.attempt;
        let raw_key = Key::attempt_file(job.run, job.roll, self.slot, k, "raw.json");
        let record = AttemptFailure {
            schema_version: ATTEMPT_FAILURE.into(),
            slot: self.slot,
            session_id: job.session_id.clone(),
            attempt: k,
            stage: c.stage,
            error_class: c.class,
            detail: seal_core::contracts::shorten(&c.detail, 1000),
            started_at: None,
            ended_at: None,
        };
        let record_bytes = seal_core::canonical::canonical_bytes(&record)
            .map(Bytes::from)
            .map_err(|source| StoreError::Canonical {
                key: raw_key.clone(),
                source,
            })?;
        let raw = super::put_answer(store, &raw_key, &record_bytes).await?;
        let request = c.request.as_ref().map(|(s, _)| s);
        let meta = self.unsent_meta(job, &c, request, &raw, &record.detail);
        let id = self.attempt_id(job, k);
        let meta = resume::sign_meta(job.salt, id, meta);
        let (meta, meta_stored) = put_or_keep(
            store,
            &Key::attempt_file(job.run, job.roll, self.slot, k, "meta.json"),
            &meta,
        )
        .await?;
        // Records kept from an earlier run of this attempt must be this daemon's.
        let (_, raw) = put_or_keep(store, &raw_key, &record).await?;
        let raw_bytes = store.get(&raw.key).await?;
        let request_bytes = c.request.as_ref().map(|(_, b)| b.as_ref());
        resume::check(
            job.salt,
            id,
            request_bytes,
            &resume::Stored {
                request: request_bytes,
                raw: &raw_bytes,
                meta: Some(&meta),
            },
        )?;
        Ok(AttemptRecord {
            attempt: k,
            request: c.request.map(|(s, _)| s),
            raw,
            meta,
            meta_hash: meta_stored.hash,
            outcome: Err(ParseFailure::new(c.class, record.detail)),
        })
    }

    /// The SlotMeta of an attempt never sent: no answer, no cost, no clock.
    fn unsent_meta(
        &self,
        job: &SlotJob<'_>,
        c: &Closing,
        request: Option<&Stored>,
        raw: &Stored,
        detail: &str,
    ) -> SlotMeta {
        SlotMeta {
            schema_version: SLOT_META.into(),
            slot: self.slot,
            attempt: c.attempt,
            logical_client_id: self.logical_client_id.clone(),
            session_id: job.session_id.clone(),
            policy_seed: job.seed,
            endpoint_host: self.config.host(),
            model_requested: c.model.clone(),
            model_answered: None,
            system_fingerprint: None,
            prompt_artifact: PromptArtifactRef {
                id: self.prompt.id.clone(),
                version: self.prompt.version.clone(),
                hash: self.prompt.hash.clone(),
            },
            package_hash: job.package_hash.clone(),
            request_ref: request.map(|s| s.key.clone()),
            request_hash: request.map(|s| s.hash.clone()),
            raw_ref: raw.key.clone(),
            raw_hash: raw.hash.clone(),
            http_status: None,
            started_at: "1970-01-01T00:00:00Z".into(),
            ended_at: "1970-01-01T00:00:00Z".into(),
            latency_ms: 0,
            usage: None,
            cost_rmb: 0.0,
            error_class: Some(c.class),
            error_detail: Some(detail.to_string()),
            accepted: false,
            attempt_mac: None,
            unredacted_raw_hash: None,
            policy: job.policy.clone(),
        }
    }
}

/// Puts `doc` create-only; when an earlier run of this attempt stored other bytes there, the
/// stored record stands, for the caller to authenticate (judge attempt records, whose MAC
/// [`crate::resume::check`] verifies).
async fn put_or_keep<T: serde::Serialize + serde::de::DeserializeOwned>(
    store: &Store,
    key: &Key,
    doc: &T,
) -> Result<(T, Stored), StoreError> {
    let bad = |detail: String| StoreError::BadDocument {
        key: key.clone(),
        detail,
    };
    match store.put_json(key, doc).await {
        Ok(p) => {
            let value = serde_json::to_value(doc).map_err(|e| bad(e.to_string()))?;
            let typed = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            Ok((typed, p.stored))
        }
        Err(StoreError::Conflict { .. }) => {
            let bytes = store.get(key).await?;
            let v = seal_core::json::parse_as::<T>(&bytes, store.doc_limit())
                .map_err(|e| bad(e.to_string()))?;
            let stored = Stored {
                key: key.clone(),
                hash: seal_core::canonical::Hash::of(&bytes),
                size: bytes.len() as u64,
            };
            Ok((v, stored))
        }
        Err(e) => Err(e),
    }
}
