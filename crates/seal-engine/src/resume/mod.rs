//! Authenticated resume, as the engine meets it: the attempt MAC and the checks of a stored
//! attempt are pure ([`seal_core::judge::mac`], re-exported here); reading the attempt from the
//! store can fail too, so a resume fails with a planted attempt or a store error.

use seal_core::fault::{Fault, HasFault};
use seal_store::StoreError;

pub use seal_core::judge::mac::*;

/// Why a stored attempt could not be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Planted(#[from] Planted),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HasFault for ResumeError {
    fn fault(&self) -> Fault {
        match self {
            ResumeError::Planted(p) => p.fault(),
            ResumeError::Store(e) => e.fault(),
        }
    }
}

pub mod orphans;
