//! How a command ends: [`ExitStatus`] when it answered, [`CliError`] when it could not, and
//! [`exit_code`], the one place either becomes a process exit code.
//!
//! The rule (README, every command): **0** the answer is yes; **1** the command judged its
//! input and the answer is no (a document invalid, a run not verified, a run folder or Verdict
//! refused, some replays failed, a log not verified); **2** the command could not answer
//! (usage, config, key files, the store, a named run absent, an input file unreadable or an
//! output file existing, infrastructure, corruption).
//!
//! The fault of an error ([`HasFault`]) is printed with it but does not pick the code. A command
//! that judges an input turns a refusal of *that input* into `Ok(ExitStatus::No)` in one line of
//! its own file ([`refused`]); every other error is a [`CliError`], exit 2 (docs/DECISIONS.md,
//! "Errors by fault, mapped once").

use std::fmt::Display;

use seal_core::adapt::AdaptError;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::sealing::KeyError;
use seal_engine::config::ConfigError;
use seal_fs::fsio::FsError;
use seal_store::StoreError;

use super::terminal::terminal_safe;

/// What a command answered when it ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Valid, verified, sealed, written, served until stopped: exit 0.
    Yes,
    /// The command judged its input and the answer is no: exit 1.
    No,
    /// Stopped by SIGINT or SIGTERM after saying what was done and how to go on: exit 130.
    Interrupted,
}

impl ExitStatus {
    /// `Yes` when `yes`, else `No`.
    pub fn yes_if(yes: bool) -> ExitStatus {
        if yes {
            ExitStatus::Yes
        } else {
            ExitStatus::No
        }
    }
}

/// An error that says whose fault it is, for [`CliError::Failed`].
pub trait FaultError: std::error::Error + HasFault + Send + Sync + 'static {}
impl<E: std::error::Error + HasFault + Send + Sync + 'static> FaultError for E {}

/// Why a command could not answer: always exit 2, its fault printed with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line asks for something that cannot be done (no trusted key, a refused
    /// `memory://` store, an unsafe listen address, a bad witness policy).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Key(#[from] KeyError),
    /// An input file unreadable, an output file existing or unwritable.
    #[error(transparent)]
    File(#[from] FsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `seal serve` on a `file://` store whose folder is missing, without `--create-store`.
    #[error(
        "store {url} ({from}): the folder {} does not exist; check the path, or give \
         --create-store to start a new, empty store there",
        path.display()
    )]
    MissingStore {
        url: String,
        path: std::path::PathBuf,
        /// Where the URL came from: `--store` or the config's `store`.
        from: String,
    },
    /// A run named on the command line is not in the store (or the archive).
    #[error("no run {run} in {store}")]
    NoRun { run: RunId, store: String },
    /// `seal validate`: files (or JSON lines) that are not documents seal can check (each named
    /// on stderr).
    #[error("{files} of {of} document(s) could not be validated")]
    Unusable { files: usize, of: usize },
    /// The judges or the embedded contracts could not be set up from the configuration.
    #[error("cannot start: {0}")]
    Setup(String),
    /// A run folder could not be written (`seal adapt verdict`).
    #[error(transparent)]
    Adapt(AdaptError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// `seal serve` could not take its address (in use, not on this host, not permitted): the
    /// address is the flag's or the config's, so the operator's to change.
    #[error("cannot listen on {addr} ({from}): {source}")]
    Listen {
        addr: String,
        /// `--listen` or `server.listen of <config>`.
        from: String,
        source: std::io::Error,
    },
    /// Writing the answer failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// A witness could not be asked (`seal log verify --witness-url`).
    #[error("{0}")]
    Witness(String),
    /// A use case failed (import, replay, the log, explain, stats, a batch …).
    #[error("{0}")]
    Failed(Box<dyn FaultError>),
    /// A use case failed while doing `what` (a run of a batch, serving).
    #[error("{what}: {cause}")]
    Within {
        what: String,
        cause: Box<dyn FaultError>,
    },
}

impl CliError {
    /// A use case's error, which says its own fault.
    pub fn failed(e: impl FaultError) -> CliError {
        CliError::Failed(Box::new(e))
    }

    /// A use case's error, with what it was doing.
    pub fn within(what: impl Into<String>, e: impl FaultError) -> CliError {
        CliError::Within {
            what: what.into(),
            cause: Box::new(e),
        }
    }

    /// Writing to `what` (stdout, a listener) failed.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
        let what = what.into();
        move |source| CliError::Io { what, source }
    }
}

impl HasFault for CliError {
    fn fault(&self) -> Fault {
        match self {
            CliError::Usage(_) | CliError::NoRun { .. } | CliError::Unusable { .. } => {
                Fault::Caller
            }
            // The config file, a variable, a flag or a key file: the operator's to fix.
            CliError::Config(_)
            | CliError::Key(_)
            | CliError::MissingStore { .. }
            | CliError::Setup(_)
            | CliError::Listen { .. } => Fault::Config,
            CliError::File(e) => e.fault(),
            CliError::Store(e) => e.fault(),
            CliError::Failed(e) | CliError::Within { cause: e, .. } => e.fault(),
            // An existing output folder is the caller's; a write that failed is not.
            CliError::Adapt(AdaptError::OutFolder { .. }) => Fault::Caller,
            CliError::Adapt(_) => Fault::Infrastructure,
            CliError::Runtime(_) | CliError::Io { .. } | CliError::Witness(_) => {
                Fault::Infrastructure
            }
        }
    }
}

/// The exit code of a command's result, printing the error when there is one: the only place
/// an exit code is chosen (clap's own usage errors aside, which are 2 as well).
pub fn exit_code(result: Result<ExitStatus, CliError>) -> u8 {
    match result {
        Ok(ExitStatus::Yes) => 0,
        Ok(ExitStatus::No) => 1,
        Ok(ExitStatus::Interrupted) => 130,
        Err(e) => {
            report(&e);
            2
        }
    }
}

/// Prints an error on stderr, a line at a time (each made safe for a terminal), then, unless
/// it is the caller's, what kind of failure it was.
fn report(e: &CliError) {
    print_lines(e);
    match e.fault() {
        Fault::Caller => {}
        Fault::Config => eprintln!(
            "seal: (configuration: fix the file, variable, flag or key named above and start again; as it is, it fails the same way)"
        ),
        Fault::Infrastructure => {
            eprintln!("seal: (infrastructure: trying again later may help)")
        }
        Fault::Corruption => {
            eprintln!("seal: (corruption: a stored object is not what seal wrote; not retried)")
        }
    }
}

/// `seal: ` and the first line, then the others as they are (a list of problems, indented);
/// every line made safe for a terminal.
fn print_lines(why: &dyn Display) {
    let text = why.to_string();
    let mut lines = text.lines();
    eprintln!("seal: {}", terminal_safe(lines.next().unwrap_or_default()));
    for line in lines {
        eprintln!("{}", terminal_safe(line));
    }
}

/// The command judged its input and the answer is no, for the reason `why`, printed on stderr.
pub fn refused(why: &dyn Display) -> ExitStatus {
    print_lines(why);
    ExitStatus::No
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_error_gives_the_same_code_whatever_its_fault() {
        let caller = CliError::Store(StoreError::Url {
            url: "x".into(),
            reason: "no store there".into(),
        });
        assert_eq!(caller.fault(), Fault::Caller);
        assert_eq!(exit_code(Err(caller)), 2);
        let infra = CliError::Store(StoreError::Backend {
            key: "k".into(),
            op: "get",
            detail: "down".into(),
        });
        assert_eq!(infra.fault(), Fault::Infrastructure);
        assert_eq!(exit_code(Err(infra)), 2);
        assert_eq!(exit_code(Ok(ExitStatus::Yes)), 0);
        assert_eq!(exit_code(Ok(ExitStatus::No)), 1);
    }
}
