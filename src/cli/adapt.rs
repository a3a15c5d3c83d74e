//! `seal adapt verdict`: an agent-loop Verdict into a run folder.
//!
//! Exit 0 written, 1 the Verdict refused (not a valid Verdict, or one playtest/3 cannot carry),
//! 2 could not run: the file unreadable or over the limit (as `seal validate`), the output
//! folder existing and not empty, a write that failed.

use std::path::PathBuf;

use seal_core::adapt::{self, AdaptError};
use seal_core::doc::Genre;

use super::args;
use super::error::{refused, CliError, ExitStatus};

#[derive(Debug, clap::Args)]
pub struct AdaptArgs {
    /// The Verdict JSON file.
    pub file: PathBuf,
    /// The run folder to write (must not exist or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Genre of the game (a Verdict does not say): narrative, trpg, heritage, puzzle, sim-business.
    #[arg(long, default_value = "narrative", value_parser = args::genre)]
    pub genre: Genre,
}

pub fn run(args: AdaptArgs) -> Result<ExitStatus, CliError> {
    let bytes = seal_fs::fsio::read(&args.file, adapt::VERDICT_LIMIT)?;
    let object = args.file.display().to_string();
    let adapted = match adapt::adapt_verdict(&object, &bytes, args.genre) {
        Ok(a) => a,
        Err(e @ (AdaptError::InvalidVerdict { .. } | AdaptError::Unmappable { .. })) => {
            return Ok(refused(&e))
        }
        Err(e) => return Err(CliError::Adapt(e)),
    };
    seal_fs::adapt::write_run_folder(&adapted, &args.out).map_err(CliError::Adapt)?;
    println!(
        "wrote run folder {} (run {}, evidenceMode legacy-adapted)",
        args.out.display(),
        adapted.run
    );
    Ok(ExitStatus::Yes)
}
