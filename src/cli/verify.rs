//! `seal verify`: runs proven again from the store, in parallel, one report a run.

use super::*;

pub(super) fn run_ids(ids: &[String]) -> Result<Vec<seal_core::ids::RunId>, u8> {
    ids.iter()
        .map(|s| seal_core::ids::RunId::parse(s).map_err(fail))
        .collect()
}

pub(super) fn cmd_verify(
    cli: &Cli,
    runs: &[String],
    all: bool,
    store: Option<&str>,
    (trust, witnesses): (&[PathBuf], &super::log::WitnessArgs),
    jobs: Option<usize>,
    json: bool,
) -> u8 {
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let policy = match witnesses.policy(&config) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let trusted = match trusted_keys(&config, trust) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let url = store
            .map(str::to_owned)
            .unwrap_or_else(|| config.store.clone());
        let store = match Store::open_existing(&url).await {
            Ok(s) => s.with_doc_limit(config.max_document_bytes),
            Err(e) => return fail(e),
        };
        let (ids, mut reports) = match verify_targets(&store, &url, all, runs).await {
            Ok(t) => t,
            Err(code) => return code,
        };
        let jobs = jobs.unwrap_or_else(super::bulk::default_jobs).max(1);
        // The transparency log is read once for all runs (each run's inclusion is checked).
        let log = match seal_engine::verify::load_log(&store, &trusted).await {
            Ok(v) => Arc::new(v),
            Err(e) => return fail(e),
        };
        // Every run is proven against the latest checkpoint: it needs the witness quorum.
        let unwitnessed =
            match seal_engine::witness::check::quorum_problem(&store, &policy, log.latest.as_ref())
                .await
            {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
        let mut printer = VerifyPrinter::new(json, progress(ids.len() as u64, all));
        let log = (log, unwitnessed);
        let run = verify_in_parallel(&store, ids, Arc::new(trusted), log, jobs, &mut printer);
        if let Err(e) = run.await {
            printer.bar.finish_and_clear();
            return fail(e);
        }
        for r in reports.drain(..) {
            printer.print(&r);
        }
        printer.finish()
    })
}

/// The runs to verify, and a report for every folder under `runs/` that cannot be (a name
/// that is not a run id is listed as not verified, never skipped).
pub(super) async fn verify_targets(
    store: &Store,
    url: &str,
    all: bool,
    runs: &[String],
) -> Result<
    (
        Vec<seal_core::ids::RunId>,
        Vec<seal_engine::verify::RunReport>,
    ),
    u8,
> {
    if all {
        let seal_store::RunListing { runs: ids, invalid } = store.runs().await.map_err(fail)?;
        if ids.is_empty() && invalid.is_empty() {
            return Err(fail(format!("no runs in {url}")));
        }
        let reports = invalid
            .into_iter()
            .map(seal_engine::verify::RunReport::unverifiable_folder)
            .collect();
        return Ok((ids, reports));
    }
    let ids = run_ids(runs)?;
    // Named runs must exist (ids from --all came from the listing itself).
    for id in &ids {
        match seal_engine::verify::run_exists(store, id).await {
            Ok(true) => {}
            Ok(false) => return Err(fail(format!("no run {id} in {url}"))),
            Err(e) => return Err(fail(e)),
        }
    }
    Ok((ids, Vec::new()))
}

/// Verifies runs on their own threads, at most `jobs` at once (see [`crate::bulk`]), each
/// reading a `file://` store directly; reports are printed in the order of `ids` as they
/// finish, and none is kept.
pub(super) async fn verify_in_parallel(
    store: &Store,
    ids: Vec<seal_core::ids::RunId>,
    trusted: Arc<Vec<seal_core::sealing::PublicKey>>,
    (log, unwitnessed): (
        Arc<seal_engine::transparency::LogView>,
        Option<seal_engine::audit::Problem>,
    ),
    jobs: usize,
    printer: &mut VerifyPrinter,
) -> Result<(), String> {
    let store = store.clone().with_direct_io();
    let work = move |id: seal_core::ids::RunId| {
        let (store, trusted, log) = (store.clone(), trusted.clone(), log.clone());
        async move {
            seal_engine::verify::verify_run_logged(&store, &id, &trusted, &log)
                .await
                .map_err(|e| format!("run {id}: {e}"))
        }
    };
    let sink = |r: Result<seal_engine::verify::RunReport, String>| {
        printer.bar.inc(1);
        r.map(|mut report| {
            seal_engine::witness::check::require(&mut report, unwitnessed.as_ref());
            printer.print(&report)
        })
    };
    super::bulk::in_order(ids, jobs, work, sink)
        .await
        .map_err(|e| e.to_string())?
}

/// Prints verify reports as they come: a block of lines a run, or with `--json` one JSON
/// line a run (NDJSON); [`VerifyPrinter::finish`] prints the summary and gives the exit code.
pub(super) struct VerifyPrinter {
    json: bool,
    bar: indicatif::ProgressBar,
    runs: usize,
    failed: usize,
}

impl VerifyPrinter {
    fn new(json: bool, bar: indicatif::ProgressBar) -> VerifyPrinter {
        VerifyPrinter {
            json,
            bar,
            runs: 0,
            failed: 0,
        }
    }

    fn print(&mut self, r: &seal_engine::verify::RunReport) {
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

    fn finish(self) -> u8 {
        self.bar.finish_and_clear();
        let (n, failed) = (self.runs, self.failed);
        if self.json {
            let doc = serde_json::json!({"runs": n, "verified": n - failed, "notVerified": failed});
            println!("{doc}");
        } else {
            let plural = if n == 1 { "" } else { "s" };
            println!(
                "{n} run{plural}: {} verified, {failed} not verified",
                n - failed
            );
        }
        u8::from(failed > 0)
    }
}

/// One run's report for a terminal (every problem on a line of its own).
pub(super) fn verify_lines(r: &seal_engine::verify::RunReport) -> String {
    let run = super::output::terminal_safe(&r.run_id);
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
        text.push_str(&super::output::terminal_safe(&p.to_string()));
    }
    text
}
