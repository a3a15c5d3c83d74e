//! `seal export labels`: per-obligation labels of the runs that verify, as JSON lines
//! (`seal.label/1`, `seal_engine::labels`).
//!
//! Exit 0 written (runs that do not verify are left out and named on stderr), 2 could not run
//! (no store, a bad `--since`/`--until`/`--genre`, an existing `--out`, a key file).

use std::path::PathBuf;

use super::args::{self, StoreArg, WindowArgs};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::{terminal_safe, write_output};

#[derive(Debug, clap::Args)]
pub struct LabelsArgs {
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted seal public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted. A run
    /// with a review by another key does not verify and gives no lines.
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    #[command(flatten)]
    pub window: WindowArgs,
    /// The JSONL file to write (a new file: never overwritten, never through a link).
    #[arg(long, value_name = "FILE.jsonl")]
    pub out: PathBuf,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
    /// Also export `historical_replay` runs (left out by default: a replay re-judges a run
    /// whose labels are already there). Each line names its `acceptanceMode` and `parentRunId`.
    #[arg(long)]
    pub include_replays: bool,
}

pub fn run(ctx: &Context, args: LabelsArgs) -> Result<ExitStatus, CliError> {
    let trusted = ctx.trusted(&args.trust, None)?;
    let reviewers = ctx.reviewer_keys(&args.trust_reviewer)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let query = args.window.query();
    let labels = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        // On the `block_on` thread, alone: `file://` reads without a hand-off each (see
        // `seal verify`).
        let store = store.with_direct_io();
        // `seal verify`'s verdict, with these reviewer keys: labels only runs it verifies.
        let verifier = ctx
            .verifier(
                &store,
                trusted,
                &args.witnesses,
                seal_engine::verify::Scope::All,
            )
            .await?
            .with_reviewers(reviewers);
        let replays = if args.include_replays {
            seal_engine::labels::Replays::Included
        } else {
            seal_engine::labels::Replays::LeftOut
        };
        seal_engine::labels::labels(&store, &verifier, &query, replays)
            .await
            .map_err(CliError::failed)
    })?;
    for (run, why) in &labels.not_verified {
        eprintln!(
            "seal: run {} does not verify; no labels: {}",
            terminal_safe(run),
            terminal_safe(why)
        );
    }
    let mut bytes = Vec::new();
    for line in &labels.lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    write_output(Some(&args.out), &bytes)?;
    eprintln!(
        "seal: {} label(s) of {} run(s) written to {}",
        labels.lines.len(),
        labels.runs,
        args.out.display()
    );
    if labels.replays_left_out > 0 {
        eprintln!(
            "seal: {} replay run(s) left out (--include-replays exports them)",
            labels.replays_left_out
        );
    }
    Ok(ExitStatus::Yes)
}
