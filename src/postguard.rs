//! finalPostguard: the only code that produces a DECIDED document (placeholder for the token).

/// Proof that the postguard is writing: only this module can construct it, and
/// [`crate::store::Store::put_decided`] demands it.
pub struct DecidedWrite(());
