//! Witness cosigning of the transparency log (docs/DESIGN.md §13, guarantee G3): independent
//! witnesses cosign each checkpoint only if it extends, append-only, the last one they cosigned,
//! so a store rolled back as a whole (runs, log entries and checkpoints deleted together) can no
//! longer show a cosigned latest checkpoint, and a verifier that trusts only the seal key and the
//! witness keys notices.
//!
//! - [`protocol`]: C2SP `tlog-witness` on the wire (the `add-checkpoint` body, the 409 size, the
//!   monitoring path), pure ([`seal_core::witness`]).
//! - [`cosig`]: C2SP `tlog-cosignature`, Ed25519 `cosignature/v1` lines: make, read, verify, pure
//!   ([`seal_core::witness`]).
//! - [`state`]: what a witness remembers, one JSON file written atomically and durably.
//! - [`service`]: the witness's decision (rollbacks, forks and bad proofs refused) and signing.
//! - `seal witness serve` on HTTP is the server crate's (`seal_server::witness_http`).
//! - the client inside every process that publishes checkpoints (sends each new checkpoint with
//!   a consistency proof, stores the cosignatures under `log/cosignatures/<size>/`, never
//!   blocks sealing) is the log's: [`crate::publish`].
//! - [`check`]: what `seal log verify` and `seal verify` require: N of M valid cosignatures on the
//!   checkpoint they rely on, and, asked, a witness's own latest checkpoint against the store.
//!
//! A witness is a separate process with its own key and state, run by someone who does not run
//! the store (docs/DECISIONS.md, "A witness is a separate process").

pub mod check;
pub mod service;
pub mod state;

pub use seal_core::witness::{cosig, protocol};

pub use seal_core::key::LOG_COSIGNATURES;

use std::path::PathBuf;
use std::time::Duration;

/// One witness of the configuration (`[[witnesses]]`), checked by the
/// engine's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessSpec {
    /// The name it cosigns under (a signed-note key name).
    pub name: String,
    /// Its URL prefix (`<url>/add-checkpoint`, `<url>/<origin hash>/checkpoint`).
    pub url: url::Url,
    /// Its Ed25519 public key (SPKI PEM).
    pub public_key: PathBuf,
    /// Longest wait for one answer.
    pub timeout: Duration,
}
