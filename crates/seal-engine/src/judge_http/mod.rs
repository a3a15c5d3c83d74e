//! The judges: two OpenAI-compatible chat-completions slots, A and B.
//!
//! - [`request`], [`parse`], [`normalize`], [`slot`], [`redact`], the seeds and the attempt MAC:
//!   the pure half, in [`seal_core::judge`] (re-exported here).
//! - the HTTP edge, in three files that import downward only: [`walk`] (a slot's attempts:
//!   retries with capped exponential backoff and jitter, resuming what is stored, leases),
//!   [`attempt`] (one call; its answer into `cas/`, the MAC'd meta as the commit, `raw.json`) and
//!   [`client`] (one `reqwest::Client` per slot, the logical client, and both slots); beside
//!   them [`health`], each slot's circuit breaker and its probe.
//!
//! Per roll each slot gets a policy seed and a session id derived from (runId, rollId, slot)
//! and a secret salt: distinct between A and B, fresh for every roll, unpredictable without the
//! salt, and the same after a crash, so a resumed roll re-sends byte-identical requests.

mod attempt;
pub mod check;
pub mod client;
mod close;
pub mod health;
mod transport;
mod walk;

pub use attempt::put_answer;
pub(crate) use client::now_rfc3339;
pub use client::{JudgeClient, Judges, JudgesError, Pinned, SlotJob};
pub use close::Closing;
pub use seal_core::judge::*;

/// The request a slot's job builds under this configuration, as its live attempts stored it
/// (`request.json`): the value and the sha256 of its canonical bytes.
#[derive(Debug, Clone)]
pub struct Built {
    pub value: serde_json::Value,
    pub hash: seal_core::canonical::Hash,
}
