//! Walking a judge slot's attempts: retries with capped backoff, resuming what is stored,
//! leases between replicas, and storing every byte.
//!
//! Order of writes per attempt `k` (docs/DESIGN.md §2, "Crash safety"): `request.json` before
//! the call, the lease, the answer (or the transport error's record) at `cas/sha256/<h>` the
//! moment it is in, then `meta.json` (MAC'd over request and answer): the commit point; then
//! `raw.json`, a copy of the bytes the meta names. An attempt is done iff its meta is stored.
//! A restarted roll walks the attempts: a committed attempt is never sent again (no judge is
//! paid twice for an answer seal committed; a missing `raw.json` is copied from `cas/`); an
//! uncommitted one (a request, maybe an orphan answer in `cas/`) is re-sent from the stored
//! request bytes under the next lease: the one call lost with the crash is paid again.

use bytes::Bytes;
use serde_json::Value;
use std::time::Duration;

use super::attempt::wait_for;
use super::client::{JudgeClient, SlotJob};
use super::slot::{AttemptRecord, SlotRun};
use crate::leasing::{self, AttemptRef, Taken};
use crate::resume::{self, ResumeError};
use seal_store::{Key, Store, StoreError, Stored};

impl JudgeClient {
    /// Runs this slot for a job: resumes stored attempts (only those [`resume::check`]
    /// authenticates), makes new ones up to the retry limit. With the attempts comes the
    /// request every one of them stored (`None`: the slot was reserved under another
    /// configuration, whose request this process does not build), so that the roll's record
    /// is derived from it without reading it back.
    pub async fn run_slot(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
    ) -> Result<(SlotRun, Option<super::Built>), ResumeError> {
        use tracing::Instrument;
        let span = tracing::info_span!("judge", slot = %self.slot, session = %job.session_id);
        self.run_attempts(store, job).instrument(span).await
    }
    async fn run_attempts(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
    ) -> Result<(SlotRun, Option<super::Built>), ResumeError> {
        let max = self.config.max_attempts();
        let (request_value, expected) = self.request_bytes(job)?;
        if let Some(pin) = job
            .pinned
            .as_ref()
            .filter(|p| p.request != seal_core::canonical::Hash::of(&expected))
        {
            return Ok((self.run_reserved_elsewhere(store, job, pin).await?, None));
        }
        let mut attempts: Vec<AttemptRecord> = Vec::new();
        let mut last_retry_after = None;
        for k in 1..=max {
            // The request first: created now, the attempt never started (its request is the
            // first thing an attempt stores), so nothing of it is committed and its folder is
            // not asked about (one listing a slot on an object store).
            let request = self.create_request(store, job, k, &expected).await?;
            let committed = match request {
                Request::Created(_) => false,
                Request::Same(_) | Request::Other => self.is_committed(store, job, k).await?,
            };
            // A committed answer is never asked for again, and used only if ours.
            let record = match committed {
                true => {
                    let record = self.resume_committed(store, job, k, &expected).await?;
                    tracing::info!(
                        attempt = k,
                        held = true,
                        ok = record.outcome.is_ok(),
                        "attempt answer already committed"
                    );
                    record
                }
                false => {
                    let request_stored = match request {
                        Request::Created(stored) | Request::Same(stored) => stored,
                        Request::Other => self.other_request(store, job, k, &expected).await?,
                    };
                    if let Some(prev) = attempts.last() {
                        let wait = self.backoff(prev.attempt, last_retry_after.take());
                        tracing::info!(
                            attempt = k,
                            wait_ms = wait.as_millis() as u64,
                            "backing off before retry"
                        );
                        tokio::time::sleep(wait).await;
                    }
                    let (record, retry_after) = self
                        .call_or_wait(store, job, k, &request_value, request_stored)
                        .await?;
                    last_retry_after = retry_after;
                    record
                }
            };
            let done = ends_slot(&record);
            attempts.push(record);
            if done {
                break;
            }
        }
        let built = super::Built {
            hash: seal_core::canonical::Hash::of(&expected),
            value: request_value,
        };
        let run = SlotRun {
            slot: self.slot,
            attempts,
        };
        Ok((run, Some(built)))
    }
    /// The request this configuration builds for `job`, and its canonical bytes (what every
    /// attempt stores as `request.json`).
    fn request_bytes(&self, job: &SlotJob<'_>) -> Result<(serde_json::Value, Bytes), StoreError> {
        let value = self.build_request(job);
        let bytes = seal_core::canonical::canonical_bytes(&value).map_err(|source| {
            StoreError::Canonical {
                key: Key::attempt_file(job.run, job.roll, self.slot, 1, "request.json"),
                source,
            }
        })?;
        Ok((value, Bytes::from(bytes)))
    }
    /// The slot of a roll reserved under another configuration: this configuration builds
    /// another request than the one the roll's authenticated reservation names (`pin`; a
    /// restart with another model, prompt or price while the roll was in flight). Attempts the
    /// old configuration committed stand (their request must be the pinned one, their MAC
    /// ours); the first attempt not committed is closed unsent as `config_changed` and the
    /// slot ends there. Neither request is sent: the old one was built for a configuration this
    /// process no longer holds, the new one was never reserved. The roll is then decided like
    /// any roll with a failed judge, so the run never hangs.
    async fn run_reserved_elsewhere(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        pin: &super::Pinned,
    ) -> Result<SlotRun, ResumeError> {
        let mut attempts: Vec<AttemptRecord> = Vec::new();
        for k in 1..=pin.max_attempts {
            let req_key = Key::attempt_file(job.run, job.roll, self.slot, k, "request.json");
            let request = store.get_opt(&req_key).await?;
            if let Some(b) = &request {
                if seal_core::canonical::Hash::of(b) != pin.request {
                    return Err(ResumeError::Planted(self.attempt_id(job, k).planted(
                        "the stored request is neither the one this configuration builds nor \
                         the one the roll's authenticated reservation names",
                    )));
                }
            }
            // An old-configuration replica may still be calling this attempt: its answer,
            // once committed, stands.
            self.settle_meta(store, job, k).await?;
            if self.is_committed(store, job, k).await? {
                let Some(request) = request else {
                    return Err(ResumeError::Planted(
                        self.attempt_id(job, k)
                            .planted("a committed attempt without its stored request"),
                    ));
                };
                let record = self.resume_committed(store, job, k, &request).await?;
                let done = ends_slot(&record);
                attempts.push(record);
                if done {
                    break;
                }
                continue;
            }
            tracing::warn!(
                attempt = k,
                reserved_model = %pin.model,
                model = %self.config.model,
                "roll reserved under another configuration: attempt closed as config_changed"
            );
            let closing = super::Closing {
                attempt: k,
                request: request.map(|b| (Stored::of(req_key, &b), b)),
                stage: seal_core::doc::FailureStage::Config,
                class: super::parse::ErrorClass::ConfigChanged,
                model: pin.model.clone(),
                detail: format!(
                    "not sent: the roll was reserved under another configuration (model {}, \
                     request sha256 {}); this configuration builds another request (model {})",
                    pin.model, pin.request, self.config.model
                ),
            };
            attempts.push(self.close_unsent(store, job, closing).await?);
            break;
        }
        Ok(SlotRun {
            slot: self.slot,
            attempts,
        })
    }
    /// Whether attempt `k` is committed (its meta is stored). A `raw.json` without a meta
    /// is no state this binary leaves: an older binary's writer may still be adding the meta
    /// (a rolling upgrade), so it is waited for; still without a meta, it is planted.
    async fn is_committed(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
    ) -> Result<bool, ResumeError> {
        let file = |f: &str| Key::attempt_file(job.run, job.roll, self.slot, k, f);
        // On an object backend one listing of the attempt's folder says whether its meta and
        // raw answer exist (one request instead of two absent ones before a first call); a
        // key it names is still read as before.
        let meta_key = file("meta.json");
        let raw_key = file("raw.json");
        let listed = store
            .keys_within(meta_key.dir(), MAX_LISTED_ATTEMPT_OBJECTS)
            .await?;
        let committed = match &listed {
            Some(l) => l.contains(&meta_key),
            None => store.exists(&meta_key).await?,
        };
        if committed {
            return Ok(true);
        }
        let raw = match &listed {
            Some(l) if !l.contains(&raw_key) => None,
            _ => store.get_opt(&raw_key).await?,
        };
        let Some(raw) = raw else {
            return Ok(false);
        };
        self.settle_meta(store, job, k).await?;
        if store.exists(&file("meta.json")).await? {
            return Ok(true);
        }
        let expected = store
            .get_opt(&file("request.json"))
            .await?
            .unwrap_or_default();
        // No meta: `resume_stored` names it planted.
        self.resume_stored(store, job, k, &expected, raw).await?;
        Ok(true)
    }
    /// An attempt with no stored answer: call the judge under the attempt's lease, or, while
    /// another replica holds a live lease, wait for the answer it stores (see [`lease`]). A
    /// lease that expires without an answer is taken over.
    async fn call_or_wait(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        request_value: &Value,
        request_stored: Stored,
    ) -> Result<(AttemptRecord, Option<Duration>), ResumeError> {
        let at = AttemptRef {
            run: job.run,
            roll: job.roll,
            slot: self.slot,
            attempt: k,
        };
        let meta_key = Key::attempt_file(job.run, job.roll, self.slot, k, "meta.json");
        let count = |result: &str| self.metrics.lease(self.slot.as_str(), result);
        loop {
            match leasing::take(store, &self.lease, at, self.config.timeout).await? {
                Taken::Held { epoch, takeover } => {
                    count(if takeover { "takeover" } else { "held" });
                    // A crashed holder may have committed just before we took over.
                    if takeover && store.exists(&meta_key).await? {
                        let expected = store.get(&request_stored.key).await?;
                        let record = self.resume_committed(store, job, k, &expected).await?;
                        return Ok((record, None));
                    }
                    tracing::debug!(attempt = k, epoch, "attempt lease held: calling the judge");
                    return self
                        .attempt(store, job, k, request_value, request_stored)
                        .await;
                }
                Taken::Busy { holder, until_ms } => {
                    count("waited");
                    tracing::info!(
                        attempt = k,
                        holder = ?holder,
                        "another replica is calling this judge: waiting for its answer"
                    );
                    let t0 = std::time::Instant::now();
                    let answered = wait_for(store, &meta_key, until_ms).await?;
                    self.metrics
                        .lease_waited(self.slot.as_str(), t0.elapsed().as_secs_f64());
                    if answered {
                        let expected = store.get(&request_stored.key).await?;
                        let record = self.resume_committed(store, job, k, &expected).await?;
                        return Ok((record, None));
                    }
                }
            }
        }
    }
    /// Creates attempt `k`'s request, create-only: what the store then held.
    async fn create_request(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        expected: &Bytes,
    ) -> Result<Request, ResumeError> {
        let req_key = Key::attempt_file(job.run, job.roll, self.slot, k, "request.json");
        match store.put(&req_key, expected.clone()).await {
            Ok(p) if p.created => Ok(Request::Created(p.stored)),
            Ok(p) => Ok(Request::Same(p.stored)),
            // Read and named by `other_request` unless the attempt is committed.
            Err(StoreError::Conflict { .. }) => Ok(Request::Other),
            Err(e) => Err(e.into()),
        }
    }
    /// The request stored for attempt `k` when the create found other bytes there (and the
    /// attempt is not committed): read once and named, never sent. Identical bytes (written
    /// there meanwhile) are the request; anything else is planted, or the request of another
    /// configuration, which [`resume::check_request`] tells apart.
    async fn other_request(
        &self,
        store: &Store,
        job: &SlotJob<'_>,
        k: u32,
        expected: &Bytes,
    ) -> Result<Stored, ResumeError> {
        let req_key = Key::attempt_file(job.run, job.roll, self.slot, k, "request.json");
        if let Some(b) = store.get_opt(&req_key).await? {
            if b == *expected {
                return Ok(Stored::of(req_key, &b));
            }
            resume::check_request(self.attempt_id(job, k), expected, &b)?;
        }
        Err(ResumeError::Planted(resume::Planted {
            key: req_key.to_string(),
            reason: "the stored request is not the one this configuration and seed salt build"
                .into(),
        }))
    }
}

/// What an attempt's create-only request put found.
enum Request {
    /// Created by this put: the attempt never started.
    Created(Stored),
    /// The same bytes were stored: the attempt started before (a restart, another replica).
    Same(Stored),
    /// Other bytes are stored there.
    Other,
}

/// More objects than an attempt folder holds (request, raw, meta, a failure note): a listing
/// beyond it is not used.
const MAX_LISTED_ATTEMPT_OBJECTS: usize = 64;

/// Whether an attempt ends its slot: an answer, or a failure another attempt cannot help.
fn ends_slot(record: &AttemptRecord) -> bool {
    record
        .outcome
        .as_ref()
        .map(|_| true)
        .unwrap_or_else(|f| !f.class.is_retryable())
}
