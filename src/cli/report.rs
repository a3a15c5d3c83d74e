//! `seal report reliability`: the people-calibrated reliability figures of `seal stats` as a
//! signed in-toto Statement (DSSE, the seal key), whose subjects are the judge policies the
//! runs were judged under and the reviewed runs' seals and reviews, by digest; published
//! (stored at `reports/<sha256>.json` and appended to the transparency log,
//! `seal_engine::reports`), then written to `--out`; optionally its page.
//!
//! Exit 0 published and written, 2 could not run (no store, no key, an existing `--out` or
//! `--html` file, a bad window or policy).

use std::path::PathBuf;

use seal_engine::engine::Clock;

use super::args::{self, StoreArg, WindowArgs};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::write_output;

#[derive(Debug, clap::Args)]
pub struct ReliabilityArgs {
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted: the
    /// people the judges are calibrated on.
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    #[command(flatten)]
    pub window: WindowArgs,
    /// The seal key that signs the report (default: keys.signing_key of the config).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Write the signed report (a DSSE envelope, canonical JSON) to FILE, a new file (the
    /// same bytes are stored at `reports/<sha256>.json` and logged).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Also write its page (HTML with SVG charts, no script) to FILE, a new file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
}

pub fn reliability(ctx: &Context, args: ReliabilityArgs) -> Result<ExitStatus, CliError> {
    // The key and the output files first: a report nobody can sign, or that would be
    // published and then not written, is not computed.
    let signing = ctx.signing(args.key.as_deref())?;
    for p in std::iter::once(&args.out).chain(&args.html) {
        if p.symlink_metadata().is_ok() {
            return Err(CliError::Setup(format!(
                "{}: exists, and a report is never written over a file",
                p.display()
            )));
        }
    }
    let stats = super::stats::compute(
        ctx,
        args.store.as_ref(),
        &args.trust,
        &args.trust_reviewer,
        &args.window,
        &args.witnesses,
    )?;
    if stats.report.runs.not_verified > 0 {
        eprintln!(
            "seal: {} decided run(s) do not verify and are not counted",
            stats.report.runs.not_verified
        );
    }
    let now = seal_engine::engine::SystemClock.now_rfc3339();
    let statement = seal_core::stats::report::statement(&stats.report, &now);
    let payload = seal_core::canonical::canonical_bytes(&statement)
        .map_err(|e| CliError::Setup(format!("the report's statement: {e}")))?;
    let envelope = seal_core::sealing::envelope(signing.key(), &payload);
    let bytes = seal_core::canonical::canonical_bytes(&envelope)
        .map_err(|e| CliError::Setup(format!("the report's envelope: {e}")))?;
    let url = ctx.store_url(args.store.as_ref())?;
    let published = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        let log = seal_log::Log::new(store.clone(), &ctx.config().log_origin);
        seal_engine::reports::publish(&store, &log, signing.key(), &bytes, &now)
            .await
            .map_err(CliError::failed)
    })?;
    let digest = published.sha256.to_string();
    write_output(Some(&args.out), &bytes)?;
    if let Some(page) = &args.html {
        let html =
            seal_core::stats::html::render_reliability(&statement, &digest, &signing.key().key_id);
        write_output(Some(page), html.as_bytes())?;
    }
    let rel = &statement.predicate.reliability;
    println!(
        "reliability report sha256 {digest} (stored as {}, log leaf {}): {} reviewed runs, {} reviewed obligations{}, {} subjects",
        published.key,
        published.leaf.index,
        statement.predicate.reviewed_runs,
        rel.all.counts.n,
        if rel.all.too_few_reviews {
            format!(" (fewer than {}: counts only)", rel.min_reviewed)
        } else {
            String::new()
        },
        statement.subject.len()
    );
    Ok(ExitStatus::Yes)
}
