//! Who is at fault when something fails, answered by every error type seal returns, and mapped
//! once: to HTTP statuses in `server::error`, to exit codes in [`Fault::exit_code`].
//!
//! Three kinds, because each is handled differently by whoever called seal:
//! - **Caller**: the request, the command line or the submitted documents are wrong (HTTP 4xx,
//!   exit 1). Retrying the same thing gives the same answer.
//! - **Infrastructure**: the store, the network or a judge endpoint failed (HTTP 5xx, exit 2).
//!   Retrying later may succeed; nothing was decided on the way.
//! - **Corruption**: a stored object is not what seal wrote (wrong hash, unparseable, torn).
//!   Loud, never retried, never reported as the caller's mistake (HTTP 500, exit 2).

/// The party at fault for an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Caller,
    Infrastructure,
    Corruption,
}

impl Fault {
    /// The process exit code for a command that failed with this fault.
    pub fn exit_code(self) -> u8 {
        match self {
            Fault::Caller => 1,
            Fault::Infrastructure | Fault::Corruption => 2,
        }
    }

    /// Whether trying again later can help.
    pub fn is_retryable(self) -> bool {
        self == Fault::Infrastructure
    }
}

/// Implemented by every error type seal returns to a caller.
pub trait HasFault {
    fn fault(&self) -> Fault;
}
