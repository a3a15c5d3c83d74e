//! `seal gc --dry-run`: what honest crashes left in the store (docs/DESIGN.md §2, "Crash
//! safety"): objects written before a step's commit object that no commit object names yet,
//! and run folders not decided. One line each: kind, object, step, what completes it.
//!
//! Listing only: `--dry-run` is required and the command never writes (docs/DECISIONS.md,
//! "`seal gc` only lists").
//!
//! Exit 0 listed (orphans are not failures), 2 could not run (no store, no `--dry-run`).

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::terminal_safe;

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// List what would be collected; nothing is deleted (required: see the command's doc).
    #[arg(long)]
    pub dry_run: bool,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(ctx: &Context, args: GcArgs) -> Result<ExitStatus, CliError> {
    if !args.dry_run {
        return Err(CliError::Usage(
            "seal gc deletes nothing: objects are create-only (and locked under Object Lock); \
             run `seal gc --dry-run` to list what crashes left"
                .into(),
        ));
    }
    let url = ctx.store_url(args.store.as_ref())?;
    ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        let orphans = seal_engine::resume::orphans::scan(&store).await?;
        if args.json {
            let doc = serde_json::json!({"orphans": orphans});
            println!("{doc}");
        } else {
            for line in orphan_lines(&orphans) {
                println!("{line}");
            }
            println!("{} orphaned object(s)", orphans.len());
        }
        Ok(ExitStatus::Yes)
    })
}

/// One terminal line per orphan: `kind  object  step: what completes it` (names escaped).
pub fn orphan_lines(orphans: &[seal_engine::resume::orphans::Orphan]) -> Vec<String> {
    orphans
        .iter()
        .map(|o| {
            format!(
                "{:<20}  {}  {}: {}",
                o.warning,
                terminal_safe(&o.object),
                o.step,
                o.redo
            )
        })
        .collect()
}
