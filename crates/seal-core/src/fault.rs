//! Who is at fault when something fails, answered by every error type seal returns, and mapped
//! once to HTTP statuses (seal-server's `error`). Exit codes are not chosen by fault: the CLI
//! decides them in one place (`src/cli/error.rs`) by whether a command could answer at all.
//!
//! Four kinds, because each is handled differently by whoever called seal:
//! - **Caller**: the request, the command line or the submitted documents are wrong (HTTP 4xx).
//!   Retrying the same thing gives the same answer.
//! - **Config**: the deployment is set up wrong or not at all: the config file, an environment
//!   variable, a flag, a key or secret file (HTTP 503 `misconfigured`, no Retry-After). Its
//!   operator fixes the source the error names; retrying as is fails the same way.
//! - **Infrastructure**: the store, the network or a judge endpoint failed (HTTP 5xx).
//!   Retrying later may succeed; nothing was decided on the way.
//! - **Corruption**: a stored object is not what seal wrote (wrong hash, unparseable, torn).
//!   Loud, never retried, never reported as the caller's mistake (HTTP 500).

/// The party at fault for an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Caller,
    Config,
    Infrastructure,
    Corruption,
}

impl Fault {
    /// Whether trying again later can help.
    pub fn is_retryable(self) -> bool {
        self == Fault::Infrastructure
    }

    /// Whether the failure is the environment's (the infrastructure or the deployment's set-up)
    /// rather than the item at hand's: a batch stops on it instead of recording the item as
    /// failed.
    pub fn is_environmental(self) -> bool {
        matches!(self, Fault::Infrastructure | Fault::Config)
    }
}

/// Implemented by every error type seal returns to a caller.
pub trait HasFault {
    fn fault(&self) -> Fault;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the infrastructure is worth a retry; a batch stops on the environment's faults
    /// (infrastructure, set-up) and records the item's (caller, corruption) as the item's.
    #[test]
    fn retry_and_stop_follow_whose_fault_it_is() {
        let all = [
            Fault::Caller,
            Fault::Config,
            Fault::Infrastructure,
            Fault::Corruption,
        ];
        let retry: Vec<bool> = all.iter().map(|f| f.is_retryable()).collect();
        assert_eq!(retry, [false, false, true, false]);
        let stop: Vec<bool> = all.iter().map(|f| f.is_environmental()).collect();
        assert_eq!(stop, [false, true, true, false]);
    }
}
