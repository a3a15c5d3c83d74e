//! The rule that keeps seal from signing a log that hides a run (G2, docs/DESIGN.md §13):
//! before a process appends anything, the log must account for every seal in the store, and
//! must be neither shorter than a checkpoint it signed nor forked.
//!
//! Why refuse instead of repairing: the postguard logs a seal before storing it, so a stored
//! seal the log lacks is never seal's own crash. It was planted, or the log lost entries (a
//! deleted `log/`, a dropped entry); appending it quietly would sign a fresh checkpoint over a
//! log that no longer holds what it held, which is exactly how a deleted run disappears. So
//! `seal serve` does not start, `seal judge` does not judge, and no finalize appends, until an
//! operator has looked (`seal log verify`) and run `seal log rebuild`.
//!
//! A deleted run (logged, gone from the store) and checkpoints no trusted key signed do not stop
//! appends; `seal log verify` names them (docs/DECISIONS.md, "A deleted run does not stop
//! appends").

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::error::LogError;
use crate::finding::Finding;
use crate::storage::LogStorage;
use crate::view::{LogView, READ_AHEAD};
use seal_core::canonical::Hash;
use seal_core::fault::HasFault;
use seal_core::ids::RunId;
use seal_core::tlog::LogTrust;
use seal_core::vocab::AuditCheck;
use seal_store::{Key, StoreError};

/// A stored seal: its sha256, or why it cannot be read as an object.
pub type StoredSeal = (RunId, Result<Hash, StoreError>);

/// Every seal in the store and its sha256. Read *before* the log: a seal is stored after its
/// entry, so every seal read here has its entry in the log read next, even while another
/// replica seals runs.
pub async fn stored_seals(store: &impl LogStorage) -> Result<Vec<StoredSeal>, StoreError> {
    let runs = store.runs().await?;
    futures::stream::iter(runs.into_iter().map(|run| {
        let store = store.clone();
        async move {
            let read = match store.get_opt(&Key::seal(&run)).await {
                Ok(b) => b.map(|b: Bytes| Ok(Hash::of(&b))),
                Err(e) if e.fault().is_environmental() => return Err(e),
                // A FIFO or an oversized object where a seal belongs: named, never skipped.
                Err(e) => Some(Err(e)),
            };
            Ok(read.map(|r| (run, r)))
        }
    }))
    .buffered(READ_AHEAD)
    .try_filter_map(|found| async move { Ok(found) })
    .try_collect()
    .await
}

/// What stops an append: the view's own refusals, then every stored seal that is not logged
/// for its run. No exception: even an import logs a run before it stores its seal.
pub fn refusals(view: &LogView, seals: &[StoredSeal]) -> Vec<Finding> {
    let mut problems = view.refusals().to_vec();
    for (run, hash) in seals {
        match hash {
            Ok(hash) => {
                let logged = view.seal_leaves(run.as_str());
                if !logged.iter().any(|l| l.names_seal(hash)) {
                    problems.push(unlogged_seal(run, !logged.is_empty()));
                }
            }
            Err(detail) => problems.push(Finding::new(
                AuditCheck::RunUnlogged,
                Key::seal(run).as_str(),
                format!("a seal that cannot be read, and so is in no log entry: {detail}"),
            )),
        }
    }
    problems
}

/// The problem of a stored seal the log lacks; `other_logged`: the run is logged with
/// another seal.
pub fn unlogged_seal(run: &RunId, other_logged: bool) -> Finding {
    if other_logged {
        Finding::new(
            AuditCheck::RunReplaced,
            Key::seal(run).as_str(),
            "the stored seal is not the one the log holds for this run: it was replaced",
        )
    } else {
        Finding::new(
            AuditCheck::RunUnlogged,
            format!("runs/{run}"),
            "sealed, but not in the transparency log: the seal was planted, or the log lost its entry",
        )
    }
}

/// The guard: reads the stored seals, then the log (checkpoints trusted under `trusted`), and
/// hands out the log view when nothing stops an append; else refuses, naming every problem.
pub async fn check(store: &impl LogStorage, trust: &LogTrust) -> Result<LogView, LogError> {
    let seals = stored_seals(store).await?;
    let view = LogView::load(store, trust).await?;
    let problems = refusals(&view, &seals);
    if problems.is_empty() {
        Ok(view)
    } else {
        Err(LogError::Refused { problems })
    }
}
