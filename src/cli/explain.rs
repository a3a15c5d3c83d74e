//! `seal explain`: the decision tree of a sealed run, as JSON or a page.
//!
//! Exit 0 explained, 1 the run does not verify (its problems on stderr, nothing written), 2
//! could not run (no such run, no store, an existing `--out`, …).

use std::path::PathBuf;

use seal_core::ids::RunId;
use seal_engine::explain_load::{ExplainError, Explanation};

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::{terminal_safe, write_output};

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The run id.
    #[arg(value_parser = args::run_id)]
    pub run_id: RunId,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted. Reviews
    /// by these keys are shown as human nodes; a review by any other key fails the run.
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    /// Write the tree as canonical JSON (the default).
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write the page (HTML) instead of the JSON.
    #[arg(long)]
    pub html: bool,
    /// Write to this new file instead of stdout (never overwritten, never through a link).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
}

pub fn run(ctx: &Context, args: ExplainArgs) -> Result<ExitStatus, CliError> {
    let trusted = ctx.trusted(&args.trust, None)?;
    let reviewers = ctx.reviewer_keys(&args.trust_reviewer)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let run = &args.run_id;
    let explained = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        ctx.named_run(&store, &url, run).await?;
        let verifier = ctx
            .verifier(
                &store,
                trusted,
                &args.witnesses,
                seal_engine::verify::Scope::Runs(std::slice::from_ref(run)),
            )
            .await?
            .with_reviewers(reviewers);
        Ok::<_, CliError>(seal_engine::explain_load::explain(&store, run, &verifier).await)
    })?;
    let explained = match explained {
        Ok(e) => e,
        Err(ExplainError::NotVerified(report)) => {
            eprintln!("seal: run {run} does not verify; it is not explained:");
            for p in &report.problems {
                eprintln!("    {}", terminal_safe(&p.to_string()));
            }
            return Ok(ExitStatus::No);
        }
        Err(e) => return Err(CliError::failed(e)),
    };
    let bytes = if args.html {
        page(ctx, &args, &url, &explained)
    } else {
        let mut b = explained.tree_bytes.clone();
        b.push(b'\n');
        b
    };
    write_output(args.out.as_deref(), &bytes)?;
    Ok(ExitStatus::Yes)
}

/// The page, with the `seal verify` command that re-proves the run (no local path in it:
/// `explain::html::verify_command`).
fn page(ctx: &Context, args: &ExplainArgs, url: &StoreArg, explained: &Explanation) -> Vec<u8> {
    let shown = |p: &std::path::PathBuf| p.display().to_string();
    let trust: Vec<String> = ctx
        .config()
        .trusted_keys
        .iter()
        .chain(&args.trust)
        .map(shown)
        .collect();
    let reviewers: Vec<String> = ctx
        .config()
        .reviewer_keys
        .iter()
        .chain(&args.trust_reviewer)
        .map(shown)
        .collect();
    let mut cmd = seal_engine::explain_load::html::verify_command(
        args.run_id.as_str(),
        url.as_str(),
        &trust,
        &reviewers,
    );
    // The witnesses asked for here are asked for there too (the config's apply to both).
    for p in &args.witnesses.keys {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        cmd.push_str(&format!(" --witness {}", name.unwrap_or_default()));
    }
    if let Some(n) = args.witnesses.quorum {
        cmd.push_str(&format!(" --witness-quorum {n}"));
    }
    explained.html(&cmd).into_bytes()
}
