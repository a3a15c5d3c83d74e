//! `seal export verdict`: the agent-loop Verdict of a sealed run that verifies.
//!
//! Exit 0 exported; 1 the run does not verify, or was decided without a Verdict (a retry, no
//! `_versionId`, …): the command judged the run and the answer is no; 2 could not run (no such
//! run, no store, an existing `--out`, …).

use std::path::PathBuf;

use seal_core::ids::RunId;

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{refused, CliError, ExitStatus};
use super::output::{terminal_safe, write_output};

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The run id.
    #[arg(value_parser = args::run_id)]
    pub run_id: RunId,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Write the Verdict here instead of stdout (a new file: never overwritten, never
    /// written through a link).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config. The
    /// run must verify under one of them before anything is exported.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
}

pub fn run(ctx: &Context, args: ExportArgs) -> Result<ExitStatus, CliError> {
    let trusted = ctx.trusted(&args.trust, None)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let run = &args.run_id;
    let proven = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        ctx.named_run(&store, &url, run).await?;
        let verifier = ctx
            .verifier(
                &store,
                trusted,
                &args.witnesses,
                seal_engine::verify::Scope::Runs(std::slice::from_ref(run)),
            )
            .await?;
        Ok::<_, CliError>(verifier.prove(&store, run).await?)
    })?;
    let verified = match proven {
        Ok(v) => v,
        Err(report) => {
            eprintln!("seal: run {run} does NOT VERIFY; nothing exported");
            for p in &report.problems {
                eprintln!("    {}", terminal_safe(&p.to_string()));
            }
            return Ok(ExitStatus::No);
        }
    };
    let verdict = match seal_core::adapt::evidence_to_verdict(verified.evidence()) {
        Ok(v) => v,
        // Decided without a Verdict (a retry, no versionId, …): the answer for this run.
        Err(e) => return Ok(refused(&e)),
    };
    // A `Value` prints infallibly; `{:#}` is `to_string_pretty`'s layout.
    let text = format!("{verdict:#}\n");
    write_output(args.out.as_deref(), text.as_bytes())?;
    Ok(ExitStatus::Yes)
}
