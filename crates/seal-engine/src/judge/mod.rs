//! The judges: two OpenAI-compatible chat-completions slots, A and B.
//!
//! - [`request`], [`parse`], [`normalize`], [`slot`], [`redact`], the seeds and the attempt MAC:
//!   the pure half, in [`seal_core::judge`] (re-exported here).
//! - [`client`]: the HTTP edge: one `reqwest::Client` per slot (the logical client), attempts,
//!   retries with capped exponential backoff and jitter, every byte stored before it is used.
//!
//! Per roll each slot gets a policy seed and a session id derived from (runId, rollId, slot)
//! and a secret salt: distinct between A and B, fresh for every roll, unpredictable without the
//! salt, and the same after a crash, so a resumed roll re-sends byte-identical requests.

pub mod client;

pub use client::{JudgeClient, Judges, SlotJob};
pub use seal_core::judge::*;
