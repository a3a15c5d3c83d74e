//! `seal replay`: decided runs judged again from stored or live judges, as new runs.
//!
//! Exit 0 every source replayed (or already replayed), 1 some replays failed (each named on
//! stdout; the others are still replayed), 2 could not run: a named run not in the store (or
//! in the `--from` archive), the store missing when replaying in place, an unknown strategy,
//! key, config, judges.

use std::path::PathBuf;
use std::sync::Arc;

use seal_core::ids::RunId;
use seal_engine::engine::Engine;
use seal_engine::import::Archive;
use seal_store::Store;

use super::args::{self, JudgesArg, StoreArg, Strategy};
use super::bulk;
use super::context::{Context, Opening, Signing};
use super::error::{CliError, ExitStatus};
use super::output::progress;
use seal_core::stats::kappa::key_seed;
use seal_core::stats::retest::{RetestAcc, RetestReport};

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Run ids to replay.
    #[arg(
        value_name = "RUN_ID",
        required_unless_present = "all",
        conflicts_with = "all",
        value_parser = args::run_id
    )]
    pub runs: Vec<RunId>,
    /// Replay every decided run that is not itself a replay.
    #[arg(long)]
    pub all: bool,
    /// Where the judge answers come from.
    #[arg(long, value_enum)]
    pub judges: JudgesArg,
    /// Consensus strategy to replay with (this build: dual-strict/1).
    #[arg(long, value_name = "V", value_parser = args::strategy)]
    pub strategy: Option<Strategy>,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Import the source runs from this store first (an archive, the committed fixtures).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub from: Option<StoreArg>,
    /// Public key trusted to have sealed the sources (SPKI PEM); repeatable; adds to
    /// keys.trusted of the config and this replay's own key.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Signing key (default: keys.signing_key of the config).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// With --all: replay every source into a new replay id, also those replayed before.
    /// Without it, --all resumes: a source whose last replay is decided is skipped, and an
    /// interrupted replay (killed) is finished under its own id.
    #[arg(long, requires = "all")]
    pub again: bool,
    /// With named runs: resume as --all does (a source whose last replay is decided is
    /// skipped, an interrupted one is finished under its own id). The command an interrupted
    /// replay of named runs prints carries it.
    #[arg(long, conflicts_with = "again")]
    pub resume: bool,
    /// Runs replayed at once (default: four per core; replay waits on fsyncs).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// With --judges live: report how often each judge repeats its own status on the same
    /// package (self-agreement and κ per slot and obligation), beside A-vs-B agreement.
    #[arg(long)]
    pub retest: bool,
    /// Replay a sample of N of the sources (chosen by sha256 of the seed and the run id: the
    /// same seed and sources give the same sample).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sample: Option<u64>,
    /// The seed of --sample.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "sample")]
    pub sample_seed: u64,
    /// With --judges live: refuse to start when the estimated cost (what the sources' judges
    /// cost when sealed) is above this many RMB, or when a source cannot be estimated.
    #[arg(long, value_name = "RMB", value_parser = args::rmb)]
    pub max_cost: Option<f64>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(ctx: &Context, args: ReplayArgs) -> Result<ExitStatus, CliError> {
    let signing = ctx.signing(args.key.as_deref())?;
    let trusted = ctx.trusted(&args.trust, Some(signing.key().public()))?;
    let limits = seal_engine::import::Limits {
        document: ctx.config().max_document_bytes,
        blob: ctx.config().max_blob_bytes,
    };
    let url = ctx.store_url(args.store.as_ref())?;
    let live = matches!(args.judges, JudgesArg::Live);
    if !live && (args.retest || args.max_cost.is_some()) {
        return Err(CliError::Usage(
            "--retest and --max-cost ask the judges again: they need --judges live".into(),
        ));
    }
    if live {
        ctx.judge_keys(&signing)?;
    }
    ctx.block_on(async {
        // The archive first: a mistyped --from creates no store.
        let archive = match &args.from {
            Some(from) => Some(
                Archive::open(from.as_str())
                    .await
                    .map_err(CliError::failed)?,
            ),
            None => None,
        };
        // A replayed run is reported once its seal is put, and the flush before the seal's
        // rename settles the names of the run's documents written before it: one flush a
        // document instead of two (docs/DECISIONS.md, "Durable writes"). What a failed run
        // left is settled at the end.
        let store = destination(ctx, &signing, &url, archive.as_ref(), &args)
            .await?
            .with_names_settled_by_seal();
        let engine = if live {
            ctx.engine(signing, store)?
        } else {
            // Stored answers call no judge: no judge key is required.
            ctx.engine_for_stored_answers(signing, store)?
        };
        let mut errors = Vec::new();
        let ids = sources(&engine, archive.as_ref(), &args, &mut errors).await?;
        if live {
            check_cost(&engine, archive.as_ref(), &ids, &trusted, &args).await?;
        }
        let job = ReplayJob {
            engine,
            archive,
            trusted,
            limits,
            all: args.all,
            resume: (args.all && !args.again) || args.resume,
            judges: args.judges.into(),
            strategy: args.strategy,
        };
        run_batch(job, ids, errors, &args).await
    })
}

/// The sources to replay: the named runs, or with `--all` the replayable runs listed (the
/// work to do, not every run: replays and undecided runs are no sources, so the progress
/// bar's total, the estimate and a sample count only sources); then `--sample`'s choice.
async fn sources(
    engine: &Engine,
    archive: Option<&Archive>,
    args: &ReplayArgs,
    errors: &mut Vec<String>,
) -> Result<Vec<RunId>, CliError> {
    let ids = if args.all {
        let listed = all_sources(archive, engine, errors).await?;
        replayable(engine, archive, listed).await?
    } else {
        args.runs.clone()
    };
    Ok(match args.sample {
        Some(n) => sample(engine, archive, ids, n, args.sample_seed).await?,
        None => ids,
    })
}

/// Replays `ids`, `--jobs` at once, and reports them. SIGINT or SIGTERM drops the replays in
/// flight where they stand (each step is create-only, as after a kill -9), then says what was
/// done and how to go on (exit 130).
async fn run_batch(
    job: ReplayJob,
    ids: Vec<RunId>,
    errors: Vec<String>,
    args: &ReplayArgs,
) -> Result<ExitStatus, CliError> {
    let jobs = args.jobs.unwrap_or_else(bulk::default_write_jobs);
    let bar = progress(ids.len() as u64, args.all);
    let mut tally = ReplayTally::new(job.judges, args.json, errors, bar, args.retest);
    let store = job.engine.store().clone();
    let replayed = tokio::select! {
        r = replay_in_parallel(job, ids.clone(), jobs, &mut tally) => Some(r),
        () = super::context::shutdown_signal() => None,
    };
    let settled = store.settle().await;
    let Some(replayed) = replayed else {
        let resume = resume_command(args, &tally.finished_sources());
        let _ = tally.finish();
        eprintln!("seal: interrupted; what is stored stays, and the runs replayed above are done.");
        eprintln!("seal: to go on without paying again for what is stored: {resume}");
        return Ok(ExitStatus::Interrupted);
    };
    replayed?;
    settled.map_err(CliError::failed)?;
    Ok(tally.finish())
}

/// What every replay of a batch shares.
struct ReplayJob {
    engine: Engine,
    archive: Option<Archive>,
    trusted: Vec<seal_core::sealing::PublicKey>,
    limits: seal_engine::import::Limits,
    all: bool,
    /// `--all` without `--again`: see [`seal_engine::replay::replay_resumable`].
    resume: bool,
    judges: seal_engine::replay::JudgesFrom,
    strategy: Option<Strategy>,
}

/// One source run: import it when `--from`, then replay it (with `--all`, resumably: see
/// [`seal_engine::replay::replay_resumable`]). None when there is nothing to replay.
async fn replay_one(
    job: &ReplayJob,
    id: RunId,
    errors: &mut Vec<String>,
) -> Option<seal_engine::replay::Resumed> {
    let engine = &job.engine;
    let mut proof = seal_engine::replay::SourceProof::Verify;
    if let Some(src) = &job.archive {
        let (trusted, limits) = (&job.trusted, job.limits);
        match import_one(src, engine, &id, trusted, limits, job.all, errors).await {
            Some(verified) => proof = seal_engine::replay::SourceProof::Imported(verified),
            None => return None,
        }
    }
    if job.all && job.archive.is_none() {
        match seal_engine::replay::is_replayable(engine.store(), &id).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                errors.push(e.to_string());
                return None;
            }
        }
    }
    let strategy = job.strategy.map(Strategy::as_str);
    let done = if job.resume {
        seal_engine::replay::replay_resumable(
            engine,
            &id,
            job.judges,
            strategy,
            &job.trusted,
            proof,
        )
        .await
    } else {
        seal_engine::replay::replay(engine, &id, job.judges, strategy, &job.trusted, proof)
            .await
            .map(seal_engine::replay::Resumed::Replayed)
    };
    done.map_err(|e| errors.push(e.to_string())).ok()
}

/// Replays runs on their own threads, at most `jobs` at once (see [`bulk`]), reading
/// a `file://` store directly; results are tallied in the order of `ids`.
async fn replay_in_parallel(
    mut job: ReplayJob,
    ids: Vec<RunId>,
    jobs: usize,
    tally: &mut ReplayTally,
) -> Result<(), CliError> {
    job.engine = job.engine.clone().with_direct_io();
    let witnesses = job.engine.witnesses().clone();
    let job = Arc::new(job);
    let work = move |id: RunId| {
        let job = job.clone();
        async move {
            let mut errors = Vec::new();
            let done = replay_one(&job, id, &mut errors).await;
            (done, errors)
        }
    };
    let sink = |(done, errors): (Option<seal_engine::replay::Resumed>, Vec<String>)| {
        tally.add(done, errors);
        Ok::<(), CliError>(())
    };
    let done = bulk::in_order(ids, jobs, work, sink).await;
    // The checkpoints this replay published reach the witnesses before the process exits.
    witnesses.settle().await;
    done.map_err(CliError::failed)?
}

/// The replays of a batch as they finish: a line each on a terminal (streamed), and what
/// the summary needs.
struct ReplayTally {
    judges: seal_engine::replay::JudgesFrom,
    json: bool,
    bar: indicatif::ProgressBar,
    done: Vec<seal_engine::replay::Replayed>,
    already: Vec<(String, String)>,
    errors: Vec<String>,
    retest: bool,
}

impl ReplayTally {
    fn new(
        judges: seal_engine::replay::JudgesFrom,
        json: bool,
        errors: Vec<String>,
        bar: indicatif::ProgressBar,
        retest: bool,
    ) -> ReplayTally {
        ReplayTally {
            judges,
            json,
            bar,
            done: Vec::new(),
            already: Vec::new(),
            errors,
            retest,
        }
    }

    fn add(&mut self, done: Option<seal_engine::replay::Resumed>, mut errors: Vec<String>) {
        self.bar.inc(1);
        self.errors.append(&mut errors);
        match done {
            Some(seal_engine::replay::Resumed::Replayed(r)) => {
                if !self.json {
                    self.bar.suspend(|| println!("{}", replay_line(&r)));
                }
                self.done.push(r);
            }
            Some(seal_engine::replay::Resumed::AlreadyReplayed { source, replay }) => {
                if !self.json {
                    self.bar
                        .suspend(|| println!("{source} -> {replay}: already replayed, skipped"));
                }
                self.already.push((source.to_string(), replay.to_string()));
            }
            None => {}
        }
    }

    /// The sources replayed (or found replayed) so far.
    fn finished_sources(&self) -> Vec<String> {
        self.done
            .iter()
            .map(|r| r.source.clone())
            .chain(self.already.iter().map(|(s, _)| s.clone()))
            .collect()
    }

    fn finish(self) -> ExitStatus {
        self.bar.finish_and_clear();
        let retest = self.retest.then(|| retest_report(&self.done));
        print_replays(
            &self.done,
            &self.already,
            &self.errors,
            self.judges,
            self.json,
            retest.as_ref(),
        );
        ExitStatus::yes_if(self.errors.is_empty())
    }
}

fn replay_line(r: &seal_engine::replay::Replayed) -> String {
    let show = |o: Option<seal_core::doc::Outcome>| o.map(|o| o.as_str()).unwrap_or("?");
    format!(
        "{} -> {}: {} -> {}{}",
        r.source,
        r.replay,
        show(r.old_outcome),
        show(r.new_outcome),
        agreement(r)
    )
}

/// How the replay's consensus compares with its source's: byte for byte, or the same
/// obligation statuses over new answers (a live replay of unchanged judges), or statuses
/// changed (how many).
fn agreement(r: &seal_engine::replay::Replayed) -> String {
    if r.consensus_reproduced {
        ", consensus reproduced".into()
    } else if r.obligations_changed == 0 && r.old_outcome == r.new_outcome {
        format!(
            ", same outcome and statuses ({} obligations; new answers, so new hashes)",
            r.obligations_compared
        )
    } else {
        format!(
            ", consensus CHANGED ({} of {} obligation statuses)",
            r.obligations_changed, r.obligations_compared
        )
    }
}

/// With `--all`: every run of the archive (its unreadable entries go to `errors`) or of the
/// store; which of them are decided sources is asked in each run's job ([`replay_one`]).
async fn all_sources(
    archive: Option<&Archive>,
    engine: &Engine,
    errors: &mut Vec<String>,
) -> Result<Vec<RunId>, CliError> {
    match archive {
        Some(a) => {
            let (ids, problems) = a.runs().await.map_err(CliError::failed)?;
            errors.extend(problems);
            Ok(ids)
        }
        None => Ok(engine.store().runs().await?.runs),
    }
}

/// The store replays are written to, once the named sources are known to exist: in the
/// archive before the store is opened (a run that is not there creates nothing), or in place
/// in the store, which must then exist.
async fn destination(
    ctx: &Context,
    signing: &Signing,
    url: &StoreArg,
    archive: Option<&Archive>,
    args: &ReplayArgs,
) -> Result<Store, CliError> {
    let named = if args.all { &[][..] } else { &args.runs[..] };
    match archive {
        Some(a) => {
            named_in_archive(a, args.from.as_ref(), named).await?;
            ctx.write_store(signing, url, Opening::CreateIfMissing)
                .await
        }
        None => {
            let store = ctx.write_store(signing, url, Opening::ExistingOnly).await?;
            for id in named {
                ctx.named_run(&store, url, id).await?;
            }
            Ok(store)
        }
    }
}

/// Named runs imported with `--from` must be in the archive. Whatever stands at a run's
/// name counts (a link, a file): the import then refuses it, named, as it refuses any
/// source it cannot trust — the answer for that run, not "no such run".
async fn named_in_archive(
    archive: &Archive,
    from: Option<&StoreArg>,
    runs: &[RunId],
) -> Result<(), CliError> {
    for id in runs {
        let present = match archive {
            Archive::Folder { root, .. } => {
                seal_fs::fsio::kind(&root.join("runs").join(id.as_str()))?.is_some()
            }
            Archive::Store(store) => seal_engine::verify::run_exists(store, id).await?,
        };
        if !present {
            return Err(CliError::NoRun {
                run: id.clone(),
                store: from.map(StoreArg::to_string).unwrap_or_default(),
            });
        }
    }
    Ok(())
}

/// Imports one run from an archive before its replay: the proof of what was copied, or None
/// when it is not to be replayed (already a replay, undecided under `--all`, or refused: the
/// reason is in `errors`).
async fn import_one(
    src: &Archive,
    engine: &Engine,
    id: &RunId,
    trusted: &[seal_core::sealing::PublicKey],
    limits: seal_engine::import::Limits,
    all: bool,
    errors: &mut Vec<String>,
) -> Option<Box<seal_engine::verify::VerifiedRun>> {
    // The imported run verified against the trusted keys: this store's log accounts for it
    // (a checkpoint signed by this process's key) before its seal is stored.
    let imported = match &engine.key() {
        Some(key) => {
            seal_engine::import::import_logged(
                src,
                engine.store(),
                id,
                trusted,
                limits,
                all,
                engine.log(),
                key,
            )
            .await
        }
        None => {
            seal_engine::import::import_run(src, engine.store(), id, trusted, limits, all).await
        }
    };
    match imported {
        Ok(seal_engine::import::Imported::Copied { verified, .. }) => Some(verified),
        Ok(seal_engine::import::Imported::IsReplay) => None,
        // --all takes decided runs only; an undecided one is not an error there.
        Err(seal_engine::import::ImportError::NotDecided { .. }) if all => None,
        Err(e) => {
            errors.push(format!("{id}: import: {e}"));
            None
        }
    }
}

/// The replay summary: JSON, or (the replay lines were streamed) the errors, the totals and
/// the flipped outcomes.
fn print_replays(
    done: &[seal_engine::replay::Replayed],
    already: &[(String, String)],
    errors: &[String],
    judges: seal_engine::replay::JudgesFrom,
    json: bool,
    retest: Option<&RetestReport>,
) {
    let reproduced = done.iter().filter(|r| r.consensus_reproduced).count();
    // Same outcome and every obligation status, over new answer bytes (live judges).
    let same_statuses = done
        .iter()
        .filter(|r| {
            !r.consensus_reproduced && r.obligations_changed == 0 && r.old_outcome == r.new_outcome
        })
        .count();
    let statuses_changed: usize = done.iter().map(|r| r.obligations_changed).sum();
    let flipped: Vec<&seal_engine::replay::Replayed> = done
        .iter()
        .filter(|r| r.old_outcome != r.new_outcome)
        .collect();
    // Summed from +0.0: an empty f64 sum is -0.0, printed "-0.0000".
    let cost = done.iter().fold(0.0, |sum, r| sum + r.new_cost_rmb);
    if json {
        let already: Vec<serde_json::Value> = already
            .iter()
            .map(|(s, r)| serde_json::json!({"source": s, "replay": r}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({
            "runs": done.len(), "consensusReproduced": reproduced, "sameStatuses": same_statuses, "obligationStatusesChanged": statuses_changed, "outcomesChanged": flipped.len(), "flipped": flipped, "costRmb": cost, "replays": done, "alreadyReplayed": already, "errors": errors, "retest": retest
        })).unwrap_or_default());
        return;
    }
    for e in errors {
        println!("ERROR {e}");
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    println!(
        "replayed {} run{} ({:?} judges): {} consensus reproduced, {} same outcome and statuses over new answers, {} obligation status{} changed, {} outcome{} changed, cost {:.4} RMB",
        done.len(), plural(done.len()), judges, reproduced, same_statuses, statuses_changed,
        if statuses_changed == 1 { "" } else { "es" }, flipped.len(), plural(flipped.len()), cost
    );
    if !already.is_empty() {
        println!(
            "{} run{} already replayed before, skipped",
            already.len(),
            plural(already.len())
        );
    }
    let show = |o: Option<seal_core::doc::Outcome>| o.map(|o| o.as_str()).unwrap_or("?");
    for r in &flipped {
        println!(
            "  flipped {}: {} -> {}",
            r.source,
            show(r.old_outcome),
            show(r.new_outcome)
        );
    }
    if let Some(r) = retest {
        print!("{}", retest_table(r));
    }
}

/// The test–retest figures of the batch, seeded by the sha256 of its source ids (sorted):
/// the same replays give the same intervals.
fn retest_report(done: &[seal_engine::replay::Replayed]) -> RetestReport {
    let mut acc = RetestAcc::default();
    let mut ids: Vec<&str> = done.iter().map(|r| r.source.as_str()).collect();
    ids.sort_unstable();
    for r in done {
        r.retest.iter().for_each(|p| acc.add(p));
    }
    acc.finish(key_seed(0, &ids.join("\n")), 6)
}

fn retest_table(r: &RetestReport) -> String {
    use std::fmt::Write;
    let fig = seal_core::stats::reliability::Figure::text;
    let mut out = String::from(
        "test-retest (each judge then x now over the same packages; A x B over the sources' answers)\n",
    );
    let _ = writeln!(
        out,
        "  {:<28} {:>5} {:<22} {:<22} {:<22} {:<22} {:<22}",
        "obligation",
        "n",
        "A self-agreement",
        "B self-agreement",
        "A kappa",
        "B kappa",
        "A x B agreement"
    );
    let rows = std::iter::once(("all", &r.all))
        .chain(r.by_obligation.iter().map(|(k, v)| (k.as_str(), v)));
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "  {:<28} {:>5} {:<22} {:<22} {:<22} {:<22} {:<22}",
            super::terminal::terminal_safe(k),
            v.judge_a.n,
            fig(&v.judge_a.agreement),
            fig(&v.judge_b.agreement),
            fig(&v.judge_a.kappa),
            fig(&v.judge_b.kappa),
            fig(&v.a_vs_b.agreement)
        );
    }
    out
}

/// The command that goes on after an interruption: this one, where `--all` resumes by itself
/// (without `--again`, which would replay everything anew), and named runs lose those already
/// replayed and gain `--resume`, so that one interrupted mid-replay is finished under its own
/// id rather than paid for again under the next.
fn resume_command(args: &ReplayArgs, finished: &[String]) -> String {
    let argv: Vec<String> = std::env::args().collect();
    let mut out: Vec<String> = Vec::with_capacity(argv.len() + 1);
    for a in argv {
        if a == "--again" || (!args.all && finished.contains(&a)) {
            continue;
        }
        out.push(super::output::shell_word(&a));
    }
    if !args.all && !args.resume {
        out.push("--resume".into());
    }
    out.join(" ")
}

/// Where the sources are read before their replays: the archive (a folder opened as a store),
/// or the store replayed in place.
async fn source_store(engine: &Engine, archive: Option<&Archive>) -> Result<Store, CliError> {
    Ok(match archive {
        Some(Archive::Store(s)) => s.clone(),
        Some(Archive::Folder { url, .. }) => Store::open(url).await?,
        None => engine.store().clone(),
    })
}

/// The sources among `ids` that are replayable (decided, not a replay; a run whose evidence
/// cannot be read stays, so that its replay reports it). The choice trusts nothing it reads:
/// each source is verified by its replay.
async fn replayable(
    engine: &Engine,
    archive: Option<&Archive>,
    ids: Vec<RunId>,
) -> Result<Vec<RunId>, CliError> {
    let source = source_store(engine, archive).await?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if seal_engine::replay::is_replayable(&source, &id).await? {
            out.push(id);
        }
    }
    Ok(out)
}

/// A sample of `n` sources: the ones with the smallest sha256(seed ‖ run id) (its first 8
/// bytes), in id order, among the replayable ones (so the sample is of runs that will be
/// replayed).
async fn sample(
    engine: &Engine,
    archive: Option<&Archive>,
    ids: Vec<RunId>,
    n: u64,
    seed: u64,
) -> Result<Vec<RunId>, CliError> {
    let mut pool: Vec<(u64, RunId)> = replayable(engine, archive, ids)
        .await?
        .into_iter()
        .map(|id| (key_seed(seed, id.as_str()), id))
        .collect();
    pool.sort();
    let mut chosen: Vec<RunId> = pool
        .into_iter()
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .map(|(_, id)| id)
        .collect();
    chosen.sort();
    Ok(chosen)
}

/// Estimates a live replay before any judge is called (stderr), and refuses it above
/// `--max-cost`, or when `--max-cost` is given and a source cannot be estimated.
async fn check_cost(
    engine: &Engine,
    archive: Option<&Archive>,
    ids: &[RunId],
    trusted: &[seal_core::sealing::PublicKey],
    args: &ReplayArgs,
) -> Result<(), CliError> {
    let source = source_store(engine, archive).await?;
    let e = seal_engine::replay::estimate_live_cost(&source, ids, trusted, args.all).await?;
    let rmb = seal_core::doc::micro_to_rmb(e.micro);
    eprintln!(
        "seal: live replay of {} run(s): estimated {rmb:.4} RMB (what their judges cost when sealed){}",
        e.runs,
        if e.unestimated.is_empty() {
            String::new()
        } else {
            format!("; {} source(s) not estimated", e.unestimated.len())
        }
    );
    let Some(cap) = args.max_cost else {
        return Ok(());
    };
    if let Some(first) = e.unestimated.first() {
        return Err(CliError::Usage(format!(
            "--max-cost {cap}: {} source(s) cannot be estimated, so the cost cannot be capped (first: {})",
            e.unestimated.len(),
            super::terminal::terminal_safe(first)
        )));
    }
    if rmb > cap {
        return Err(CliError::Usage(format!(
            "the live replay of {} run(s) is estimated at {rmb:.4} RMB, above --max-cost {cap} RMB: nothing was judged (replay fewer runs, e.g. --sample N, or raise the cap)",
            e.runs
        )));
    }
    Ok(())
}
