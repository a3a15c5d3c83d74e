//! `seal stats`: judge agreement and costs over proven runs, people against the judges, and
//! the adjudication queue, as a table, JSON or a page.
//!
//! Exit 0 (runs that do not verify are counted and listed, not an answer of no), 2 could not
//! run: a bad `--since`, `--until` or `--genre` (a usage error), no store, an existing
//! `--html` file, ….

use std::path::PathBuf;

use super::args::{self, StoreArg, WindowArgs};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::write_output;

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted. Reviews
    /// by these keys are compared with the judges and take a run off the adjudication queue;
    /// a run with a review by any other key does not verify (listed, not counted).
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    #[command(flatten)]
    pub window: WindowArgs,
    /// Print the figures as canonical JSON (seal.stats/1).
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write the page (HTML with SVG charts) to FILE, a new file (never overwritten, never
    /// through a link).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
}

pub fn run(ctx: &Context, args: StatsArgs) -> Result<ExitStatus, CliError> {
    let stats = compute(
        ctx,
        args.store.as_ref(),
        &args.trust,
        &args.trust_reviewer,
        &args.window,
        &args.witnesses,
    )?;
    if stats.report.runs.not_verified > 0 {
        eprintln!(
            "seal: {} decided run(s) do not verify and are not counted (listed in the report)",
            stats.report.runs.not_verified
        );
    }
    if let Some(path) = &args.html {
        write_output(Some(path), stats.html().as_bytes())?;
    } else if args.json {
        write_output(None, &stats.bytes)?;
    } else {
        let text = super::terminal::lines_for_terminal(&stats.text());
        write_output(None, text.as_bytes())?;
    }
    Ok(ExitStatus::Yes)
}

/// The figures over the store's runs that verify under the trusted keys (what `seal stats` and
/// `seal report reliability` both compute).
pub(super) fn compute(
    ctx: &Context,
    store: Option<&StoreArg>,
    trust: &[PathBuf],
    trust_reviewer: &[PathBuf],
    window: &WindowArgs,
    witnesses: &args::WitnessArgs,
) -> Result<seal_engine::stats_load::Stats, CliError> {
    let trusted = ctx.trusted(trust, None)?;
    let reviewers = ctx.reviewer_keys(trust_reviewer)?;
    let url = ctx.store_url(store)?;
    let query = window.query();
    ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        // On the `block_on` thread, alone: `file://` reads without a hand-off each (see
        // `seal verify`).
        let store = store.with_direct_io();
        let verifier = ctx
            .verifier(&store, trusted, witnesses, seal_engine::verify::Scope::All)
            .await?
            .with_reviewers(reviewers);
        seal_engine::stats_load::stats(&store, &verifier, query)
            .await
            .map_err(CliError::failed)
    })
}
