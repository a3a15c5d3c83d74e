//! The judges' pure half: what is sent to the two OpenAI-compatible chat-completions slots, A
//! and B, and what is made of their answers. No I/O: the HTTP client is the engine's.
//!
//! - [`request`]: the request body, stored with image placeholders.
//! - [`parse`]: a response body → a validated JudgeOutput or a classified failure.
//! - [`normalize`]: JudgeOutput → JudgeResult/1.
//! - [`slot`]: a slot's stored attempts → its parsed and normalized documents.
//! - [`redact`]: secrets kept out of what is stored.
//! - [`seeds`]: the per-roll policy seeds and session ids (HMAC of the seed salt).
//! - [`mac`]: the attempt MAC that lets a daemon resume only attempts it wrote.
//! - [`health`]: a slot's circuit breaker over its calls' outcomes (time is the caller's).
//! - [`reservation`]: the reservation MAC that lets it resume a roll reserved under another
//!   configuration.

pub mod health;
pub mod mac;
pub mod normalize;
pub mod parse;
pub mod redact;
pub mod request;
pub mod reservation;
pub mod seeds;
pub mod slot;

pub use seeds::{policy_seeds, session_id};
pub use slot::{AttemptRecord, SlotRun};
