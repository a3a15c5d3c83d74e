//! Why a log operation failed ([`LogError`]), and the message of a refusal (G2).

use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::tlog::TlogError;
use seal_store::{Key, StoreError};

use crate::finding::Finding;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{key}: {detail}")]
    Corrupt { key: String, detail: String },
    #[error("run {run}: {detail}")]
    NotSealed { run: RunId, detail: String },
    #[error("run {run} is not in the transparency log")]
    NotLogged { run: RunId },
    #[error("the store holds no signed log checkpoint")]
    NoCheckpoint,
    #[error("log format: {0}")]
    Format(#[from] TlogError),
    /// The log does not account for the store (G2): seal signs nothing until an operator
    /// has looked and run `seal log rebuild`.
    #[error("{}", refusal_text(.problems))]
    Refused { problems: Vec<Finding> },
}

/// How many problems a refusal names in its message (all of them: `seal log verify`).
const REFUSAL_SHOWN: usize = 3;

fn refusal_text(problems: &[Finding]) -> String {
    let shown: Vec<String> = problems
        .iter()
        .take(REFUSAL_SHOWN)
        .map(Finding::to_string)
        .collect();
    let more = problems.len().saturating_sub(REFUSAL_SHOWN);
    format!(
        "the transparency log does not account for this store, so seal signs nothing: {}{}. \
         `seal log verify` names every problem; once you know why, `seal log rebuild` records \
         a rebuild in the log and relogs the sealed runs (docs/DEPLOYING.md)",
        shown.join("; "),
        if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        }
    )
}

impl HasFault for LogError {
    fn fault(&self) -> Fault {
        match self {
            LogError::Store(e) => e.fault(),
            LogError::Corrupt { .. } | LogError::Format(_) | LogError::Refused { .. } => {
                Fault::Corruption
            }
            LogError::NotSealed { .. } | LogError::NotLogged { .. } | LogError::NoCheckpoint => {
                Fault::Caller
            }
        }
    }
}

pub(crate) fn corrupt(key: &Key, detail: impl std::fmt::Display) -> LogError {
    LogError::Corrupt {
        key: key.to_string(),
        detail: detail.to_string(),
    }
}
