//! The transparency log of seals, kept in the object store next to the runs (docs/DESIGN.md
//! §13): every seal the postguard writes is appended as a leaf, and a C2SP signed checkpoint
//! of a tree holding it is stored before its seal (one per batch of appends under load:
//! `Log::publish_covering`), so that no decided run can vanish or be replaced unnoticed.
//!
//! Layout, create-only like everything else:
//! - `log/entries/<index, 20 digits>`: the canonical [`LogEntry`] bytes of leaf `index`;
//! - `log/checkpoints/<size, 20 digits>`: the signed note of the tree of `size` leaves;
//! - `log/tile/8/<level>/<index>[.p/<width>]`: the tree's hash tiles (C2SP tlog-tiles),
//!   stored before each checkpoint ([`tiles`]);
//! - `log/runs/<run>/<index, 20 digits>`: an empty pointer, leaf `index` is about `run`, stored
//!   with the tiles before the first checkpoint that covers the leaf, so before the seal or
//!   review it logs is stored (`store_pointers`): what lets `seal verify <run>` read a run's
//!   leaves without the whole log ([`runs`]).
//!
//! Only create-only puts, no conditional *update*: a replica takes the next index by creating
//! `log/entries/<n>`; losing the race, it reads the winner and tries `n+1`. Before writing at
//! index `n` an appender has read every entry below `n`, so the same seal is never appended
//! twice (docs/DECISIONS.md, "The log uses create-only puts only").
//!
//! Log before seal (docs/DESIGN.md §13): the postguard computes the seal's bytes (ed25519 and
//! the canonical envelope are deterministic), appends the entry naming their sha256, and only
//! then stores the seal. A crash in between leaves a logged run whose seal is missing, which
//! the next finalize completes with the very bytes logged. So a stored seal the log lacks was
//! planted, or the log lost it: seal then signs nothing (`guard`) until an operator runs
//! `seal log rebuild` (`rebuild`), which records itself as a signed leaf. Nothing is ever
//! appended to the log behind an operator's back.
//!
//! Each new checkpoint is also offered to the configured witnesses ([`publish`]), in the
//! background: cosigning never holds sealing back.

//!
//! The witnesses themselves (`seal witness serve`'s decision and state, and what a verifier
//! requires of them) are [`witness`]'s.
//!
//! The crate sits over seal-core's vocabulary (`seal_core::tlog`, `seal_core::witness`, the
//! `log/…` keys) and the store, and below the use cases: what it finds wrong is its own
//! [`Finding`], which the engine's verifier turns into its problems.

#![forbid(unsafe_code)]

mod append;
mod cache;
mod checkpoints;
pub mod cosign;
mod error;
mod finding;
pub mod guard;
mod history;
mod leaf;
mod log;
mod log_audit;
pub mod publish;
pub mod rebuild;
pub mod runs;
mod storage;
mod store_driver;
mod stored;
pub mod stream;
pub mod tiles;
pub mod view;

pub use append::{Appended, EvidenceWas, NewLeaf, SealLogged};
pub use checkpoints::{bounded_checkpoint, checkpoint_sizes, sign_checkpoint, trust};
pub use error::LogError;
pub use finding::Finding;
pub use leaf::SealLeaf;
pub use log::{append_delay, Log, APPEND_DELAY_ENV};
pub use log_audit::{verify_log, Consistency, LogReport, RebuildNote, ReportNote, ReviewNote};
pub use seal_core::key::{LOG_CHECKPOINTS, LOG_ENTRIES, LOG_RUNS};
pub use seal_core::tlog::DEFAULT_ORIGIN;
pub use storage::{removable, LogStorage};
pub use stored::{entry_for, seal_entry, stored_run, StoredRun};
pub use view::{latest_checkpoint, LogView, WholeLog};
