//! The pure half of witness cosigning (docs/DESIGN.md §13, guarantee G3): the wire format
//! and the cosignatures. A witness's state, its service and server, and the client that
//! publishes checkpoints are the engine's and the server's.
//!
//! - [`protocol`]: C2SP `tlog-witness` on the wire (the `add-checkpoint` body, the 409 size, the
//!   monitoring path).
//! - [`cosig`]: C2SP `tlog-cosignature`, Ed25519 `cosignature/v1` lines: make, read, verify.

pub mod cosig;
pub mod protocol;
