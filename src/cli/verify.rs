//! `seal verify`: runs proven again from the store, in parallel, one report a run.
//!
//! Exit 0 every run verified, 1 some run not verified (each report says why), 2 could not run
//! (no store, a named run not in it, no trusted key, a bad witness policy, a failed read).

use std::path::PathBuf;

use seal_core::ids::RunId;
use seal_engine::resume::orphans::{Orphan, Scan};
use seal_engine::verify::{RunReport, Scope, Verifier};
use seal_store::Store;

use super::args::{self, StoreArg, WitnessArgs};
use super::bulk;
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::{progress, terminal_safe};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Run ids to verify.
    #[arg(
        value_name = "RUN_ID",
        required_unless_present = "all",
        conflicts_with = "all",
        value_parser = args::run_id
    )]
    pub runs: Vec<RunId>,
    /// Verify every run in the store.
    #[arg(long)]
    pub all: bool,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted of the
    /// config. A stored review by any other key fails its run.
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    #[command(flatten)]
    pub witnesses: WitnessArgs,
    /// Runs verified at once.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print the reports as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(ctx: &Context, args: VerifyArgs) -> Result<ExitStatus, CliError> {
    let policy = args.witnesses.policy(ctx.config())?;
    let trusted = ctx.trusted(&args.trust, None)?;
    let reviewers = ctx.reviewer_keys(&args.trust_reviewer)?;
    let url = ctx.store_url(args.store.as_ref())?;
    ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        // This future runs on the thread that called `block_on`, not on a runtime worker, and
        // nothing else runs here meanwhile: its sequential start-up (the pass over the log,
        // a stat of each run's seal) reads a `file://` store directly. Through the blocking
        // pool each of those reads was two thread hand-offs, and the start-up took ~10% of
        // `verify --all` on one core (docs/BENCHMARKS.md, stop 43).
        let store = store.with_direct_io();
        let (ids, reports) = targets(ctx, &store, &url, &args).await?;
        let jobs = args.jobs.unwrap_or_else(bulk::default_jobs).max(1);
        // The transparency log is read once for all runs (each run's inclusion is checked),
        // and every run is proven against the latest checkpoint: it needs the witness quorum.
        // `explain`, `export` and `stats` ask the same verifier (`Context::verifier`).
        // Named runs are read by their pointers in the log when they can be (O(log n) each),
        // `--all` against the whole log, read once.
        let scope = if args.all {
            Scope::All
        } else {
            Scope::Runs(&ids)
        };
        let verifier = Verifier::load(&store, trusted, &ctx.config().log_origin, &policy, scope)
            .await?
            .with_reviewers(reviewers);
        // Crash leftovers are warnings, not failures: an unsealed run the log does not hold is
        // not verified but listed with what completes it (docs/DESIGN.md §2, "Crash safety").
        // The scan looks into the runs not verified here; a verified run hands it the `cas/`
        // objects it names, so its folder is not read twice.
        let ids = if args.all {
            with_logged(&store, ids, &verifier).await?
        } else {
            ids
        };
        if args.all && ids.is_empty() && reports.is_empty() {
            return Err(CliError::Usage(format!("no runs in {url}, none logged")));
        }
        let mut scan = args.all.then(Scan::new);
        let ids = match scan.as_mut() {
            Some(scan) => {
                let (keep, apart) = undecided_apart(&store, ids, &verifier).await?;
                scan.look_into(&store, apart).await?;
                keep
            }
            None => ids,
        };
        let mut printer = VerifyPrinter::new(args.json, progress(ids.len() as u64, args.all));
        let done = verify_in_parallel(&store, ids, verifier, jobs, &mut printer, scan.as_mut());
        let unproven = match done.await {
            Ok(unproven) => unproven,
            Err(e) => {
                printer.bar.finish_and_clear();
                return Err(e);
            }
        };
        if let Some(mut scan) = scan {
            scan.look_into(&store, unproven).await?;
            printer.warnings = scan.finish(&store).await?;
        }
        for r in &reports {
            printer.print(r);
        }
        Ok(printer.finish())
    })
}

/// The runs to verify, and a report for every folder under `runs/` that cannot be (a name
/// that is not a run id is listed as not verified, never skipped).
async fn targets(
    ctx: &Context,
    store: &Store,
    url: &StoreArg,
    args: &VerifyArgs,
) -> Result<(Vec<RunId>, Vec<RunReport>), CliError> {
    if args.all {
        let seal_store::RunListing { runs: ids, invalid } = store.runs().await?;
        let reports = invalid
            .into_iter()
            .map(RunReport::unverifiable_folder)
            .collect();
        return Ok((ids, reports));
    }
    // Named runs must exist (ids from --all came from the listing itself).
    for id in &args.runs {
        ctx.named_run(store, url, id).await?;
    }
    Ok((args.runs.clone(), Vec::new()))
}

/// The runs of the `runs/` listing and every run the log holds a seal of that the listing
/// lacks: a logged run deleted from the store is verified, and fails (`run_missing`), never
/// skipped.
async fn with_logged(
    store: &Store,
    mut ids: Vec<RunId>,
    verifier: &Verifier,
) -> Result<Vec<RunId>, CliError> {
    let listed: std::collections::BTreeSet<RunId> = ids.iter().cloned().collect();
    for run in verifier.logged_candidates(store).await? {
        if !listed.contains(&run) && verifier.is_logged(store, &run).await? {
            ids.push(run);
        }
    }
    Ok(ids)
}

/// The runs to verify, and those to leave to the crash-leftover scan: a run without a seal
/// that the log does not hold is not verified (it was never sealed); one the log holds is (its
/// seal is missing).
async fn undecided_apart(
    store: &Store,
    ids: Vec<RunId>,
    verifier: &Verifier,
) -> Result<(Vec<RunId>, Vec<RunId>), CliError> {
    let (mut keep, mut apart) = (Vec::new(), Vec::new());
    for id in ids {
        // The seal first: a stat, where the log is asked by the run's pointers.
        if store.exists(&seal_store::Key::seal(&id)).await?
            || verifier.is_logged(store, &id).await?
        {
            keep.push(id);
        } else {
            apart.push(id);
        }
    }
    Ok((keep, apart))
}

/// Verifies runs on their own threads, at most `jobs` at once (see [`bulk`]), each
/// reading a `file://` store directly; reports are printed in the order of `ids` as they
/// finish, and none is kept. With a `scan`, each verified run hands it the `cas/` objects it
/// names; the runs that did not verify are returned, for the scan to look into.
async fn verify_in_parallel(
    store: &Store,
    ids: Vec<RunId>,
    verifier: Verifier,
    jobs: usize,
    printer: &mut VerifyPrinter,
    mut scan: Option<&mut Scan>,
) -> Result<Vec<RunId>, CliError> {
    let store = store.clone();
    let named = scan.is_some();
    let work = move |id: RunId| {
        let (store, verifier) = (store.clone(), verifier.clone());
        async move {
            let (report, proof) = verifier
                .verdict(&store, &id)
                .await
                .map_err(|e| CliError::within(format!("run {id}"), e))?;
            // Only what the scan needs leaves the worker: the `cas/` objects the run names.
            let cas = proof
                .filter(|_| named && report.verified)
                .map(|p| p.named().to_vec());
            Ok((id, report, cas))
        }
    };
    let mut unproven = Vec::new();
    let sink =
        |r: Result<(RunId, RunReport, Option<Vec<seal_core::canonical::Hash>>), CliError>| {
            printer.bar.inc(1);
            r.map(|(id, report, cas)| {
                printer.print(&report);
                match (scan.as_deref_mut(), cas) {
                    (Some(scan), Some(cas)) => scan.named(&cas),
                    (Some(_), None) => unproven.push(id),
                    (None, _) => {}
                }
            })
        };
    bulk::in_order(ids, jobs, work, sink)
        .await
        .map_err(CliError::failed)??;
    Ok(unproven)
}

/// Prints verify reports as they come: a block of lines a run, or with `--json` one JSON
/// line a run (NDJSON); [`VerifyPrinter::finish`] prints the summary and gives the exit code.
struct VerifyPrinter {
    json: bool,
    bar: indicatif::ProgressBar,
    runs: usize,
    failed: usize,
    /// Crash leftovers (`--all`): printed before the summary, never failures.
    warnings: Vec<Orphan>,
}

impl VerifyPrinter {
    fn new(json: bool, bar: indicatif::ProgressBar) -> VerifyPrinter {
        VerifyPrinter {
            json,
            bar,
            runs: 0,
            failed: 0,
            warnings: Vec::new(),
        }
    }

    fn print(&mut self, r: &RunReport) {
        self.runs += 1;
        if !r.verified {
            self.failed += 1;
        }
        let text = if self.json {
            serde_json::to_string(r).unwrap_or_default()
        } else {
            verify_lines(r)
        };
        self.bar.suspend(|| println!("{text}"));
    }

    fn finish(self) -> ExitStatus {
        self.bar.finish_and_clear();
        let (n, failed) = (self.runs, self.failed);
        if self.json {
            let mut doc =
                serde_json::json!({"runs": n, "verified": n - failed, "notVerified": failed});
            if !self.warnings.is_empty() {
                doc["warnings"] = serde_json::json!(self.warnings);
            }
            println!("{doc}");
        } else {
            for line in super::gc::orphan_lines(&self.warnings) {
                println!("warning  {line}");
            }
            let plural = if n == 1 { "" } else { "s" };
            println!(
                "{n} run{plural}: {} verified, {failed} not verified",
                n - failed
            );
        }
        ExitStatus::yes_if(failed == 0)
    }
}

/// One run's report for a terminal (every problem on a line of its own).
fn verify_lines(r: &RunReport) -> String {
    let run = terminal_safe(&r.run_id);
    if r.verified {
        let outcome = r.outcome.as_deref().unwrap_or("?");
        let key = r.key_id.as_deref().unwrap_or("?");
        return format!("verified      {run} ({outcome}, keyid {key})");
    }
    let n = r.problems.len();
    let mut text = format!(
        "NOT VERIFIED  {run}: {n} problem{}",
        if n == 1 { "" } else { "s" }
    );
    for p in &r.problems {
        text.push_str("\n    ");
        text.push_str(&terminal_safe(&p.to_string()));
    }
    text
}
