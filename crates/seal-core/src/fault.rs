//! Who is at fault when something fails, answered by every error type seal returns, and mapped
//! once to HTTP statuses (seal-server's `error`). Exit codes are not chosen by fault: the CLI
//! decides them in one place (`src/cli/error.rs`) by whether a command could answer at all.
//!
//! Three kinds, because each is handled differently by whoever called seal:
//! - **Caller**: the request, the command line or the submitted documents are wrong (HTTP 4xx).
//!   Retrying the same thing gives the same answer.
//! - **Infrastructure**: the store, the network or a judge endpoint failed (HTTP 5xx).
//!   Retrying later may succeed; nothing was decided on the way.
//! - **Corruption**: a stored object is not what seal wrote (wrong hash, unparseable, torn).
//!   Loud, never retried, never reported as the caller's mistake (HTTP 500).

/// The party at fault for an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Caller,
    Infrastructure,
    Corruption,
}

impl Fault {
    /// Whether trying again later can help.
    pub fn is_retryable(self) -> bool {
        self == Fault::Infrastructure
    }
}

/// Implemented by every error type seal returns to a caller.
pub trait HasFault {
    fn fault(&self) -> Fault;
}
