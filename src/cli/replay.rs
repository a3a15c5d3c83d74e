//! `seal replay`: decided runs judged again from stored or live judges, as new runs.

use super::verify::run_ids;
use super::*;

pub(super) struct ReplayArgs<'a> {
    pub(super) runs: &'a [String],
    pub(super) all: bool,
    pub(super) judges: seal_engine::replay::JudgesFrom,
    pub(super) strategy: Option<&'a str>,
    pub(super) store: Option<&'a str>,
    pub(super) from: Option<&'a str>,
    pub(super) trust: &'a [PathBuf],
    pub(super) key: Option<&'a Path>,
    pub(super) resume: bool,
    pub(super) jobs: Option<usize>,
    pub(super) json: bool,
}

pub(super) fn cmd_replay(cli: &Cli, args: ReplayArgs<'_>) -> u8 {
    let ReplayArgs {
        runs,
        all,
        judges,
        strategy,
        store,
        from,
        trust,
        key,
        resume,
        jobs,
        json,
    } = args;
    init_logging(cli.log_format, "warn");
    if let Some(s) = strategy.filter(|s| *s != seal_core::consensus::STRATEGY) {
        return fail(format!(
            "unknown consensus strategy {s:?}: this build implements {}",
            seal_core::consensus::STRATEGY
        ));
    }
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // `--key`, when given, is the key; the default secret file is the one beside it.
    let config = config.with_signing_key(key);
    let key = match load_key(&config.signing_key) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let mut trusted = vec![key.public()];
    match load_trusted(&config, trust) {
        Ok(more) => trusted.extend(more),
        Err(code) => return code,
    }
    let limits = seal_engine::import::Limits {
        document: config.max_document_bytes,
        blob: config.max_blob_bytes,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let archive = match from {
            Some(url) => match seal_engine::import::Archive::open(url).await {
                Ok(a) => Some(a),
                Err(e) => return fail(e),
            },
            None => None,
        };
        let engine = match engine(config, store, Some(key)).await {
            Ok(e) => e,
            Err(code) => return code,
        };
        let mut errors = Vec::new();
        let ids = match replay_ids(archive.as_ref(), &engine, all, runs, &mut errors).await {
            Ok(ids) => ids,
            Err(code) => return code,
        };
        let job = ReplayJob {
            engine,
            archive,
            trusted,
            limits,
            all,
            resume,
            judges,
            strategy: strategy.map(str::to_owned),
        };
        let jobs = jobs.unwrap_or_else(super::bulk::default_write_jobs);
        let mut tally = ReplayTally::new(judges, json, errors, progress(ids.len() as u64, all));
        match replay_in_parallel(job, ids, jobs, &mut tally).await {
            Ok(()) => tally.finish(),
            Err(e) => fail(e),
        }
    })
}

/// What every replay of a batch shares.
pub(super) struct ReplayJob {
    pub(super) engine: Engine,
    pub(super) archive: Option<seal_engine::import::Archive>,
    pub(super) trusted: Vec<seal_core::sealing::PublicKey>,
    pub(super) limits: seal_engine::import::Limits,
    pub(super) all: bool,
    /// `--all` without `--again`: see [`seal_engine::replay::replay_resumable`].
    pub(super) resume: bool,
    pub(super) judges: seal_engine::replay::JudgesFrom,
    pub(super) strategy: Option<String>,
}

/// One source run: import it when `--from`, then replay it (with `--all`, resumably: see
/// [`seal_engine::replay::replay_resumable`]). None when there is nothing to replay.
pub(super) async fn replay_one(
    job: &ReplayJob,
    id: seal_core::ids::RunId,
    errors: &mut Vec<String>,
) -> Option<seal_engine::replay::Resumed> {
    let engine = &job.engine;
    if let Some(src) = &job.archive {
        let (trusted, limits) = (&job.trusted, job.limits);
        if !import_one(src, engine, &id, trusted, limits, job.all, errors).await {
            return None;
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
    let strategy = job.strategy.as_deref();
    let done = if job.resume {
        seal_engine::replay::replay_resumable(engine, &id, job.judges, strategy, &job.trusted).await
    } else {
        seal_engine::replay::replay(engine, &id, job.judges, strategy, &job.trusted)
            .await
            .map(seal_engine::replay::Resumed::Replayed)
    };
    done.map_err(|e| errors.push(e.to_string())).ok()
}

/// Replays runs on their own threads, at most `jobs` at once (see [`crate::bulk`]), reading
/// a `file://` store directly; results are tallied in the order of `ids`.
pub(super) async fn replay_in_parallel(
    mut job: ReplayJob,
    ids: Vec<seal_core::ids::RunId>,
    jobs: usize,
    tally: &mut ReplayTally,
) -> Result<(), String> {
    job.engine = job.engine.clone().with_direct_io();
    let witnesses = job.engine.witnesses().clone();
    let job = Arc::new(job);
    let work = move |id: seal_core::ids::RunId| {
        let job = job.clone();
        async move {
            let mut errors = Vec::new();
            let done = replay_one(&job, id, &mut errors).await;
            (done, errors)
        }
    };
    let sink = |(done, errors): (Option<seal_engine::replay::Resumed>, Vec<String>)| {
        tally.add(done, errors);
        Ok::<(), String>(())
    };
    let done = super::bulk::in_order(ids, jobs, work, sink).await;
    // The checkpoints this replay published reach the witnesses before the process exits.
    witnesses.settle().await;
    done.map_err(|e| e.to_string())?
}

/// The replays of a batch as they finish: a line each on a terminal (streamed), and what
/// the summary needs.
pub(super) struct ReplayTally {
    judges: seal_engine::replay::JudgesFrom,
    json: bool,
    bar: indicatif::ProgressBar,
    done: Vec<seal_engine::replay::Replayed>,
    already: Vec<(String, String)>,
    errors: Vec<String>,
}

impl ReplayTally {
    fn new(
        judges: seal_engine::replay::JudgesFrom,
        json: bool,
        errors: Vec<String>,
        bar: indicatif::ProgressBar,
    ) -> ReplayTally {
        ReplayTally {
            judges,
            json,
            bar,
            done: Vec::new(),
            already: Vec::new(),
            errors,
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

    fn finish(self) -> u8 {
        self.bar.finish_and_clear();
        print_replays(
            &self.done,
            &self.already,
            &self.errors,
            self.judges,
            self.json,
        );
        u8::from(!self.errors.is_empty())
    }
}

pub(super) fn replay_line(r: &seal_engine::replay::Replayed) -> String {
    let show = |o: Option<seal_core::doc::Outcome>| o.map(|o| o.as_str()).unwrap_or("?");
    format!(
        "{} -> {}: {} -> {}{}",
        r.source,
        r.replay,
        show(r.old_outcome),
        show(r.new_outcome),
        if r.consensus_reproduced {
            ", consensus reproduced"
        } else {
            ", consensus CHANGED"
        }
    )
}

/// The runs to replay: the named ones, or with `--all` every decided run of the archive (its
/// unreadable entries go to `errors`) or of the store.
pub(super) async fn replay_ids(
    archive: Option<&seal_engine::import::Archive>,
    engine: &Engine,
    all: bool,
    runs: &[String],
    errors: &mut Vec<String>,
) -> Result<Vec<seal_core::ids::RunId>, u8> {
    if !all {
        return run_ids(runs);
    }
    let listed = match archive {
        Some(a) => a.runs().await.map(|(ids, problems)| {
            errors.extend(problems);
            ids
        }),
        // Which of them are decided sources is asked in each run's job (replay_one).
        None => engine
            .store()
            .runs()
            .await
            .map(|l| l.runs)
            .map_err(seal_engine::import::ImportError::from),
    };
    listed.map_err(fail)
}

/// Imports one run from an archive before its replay; false when it is not to be replayed
/// (already a replay, undecided under `--all`, or refused: the reason is in `errors`).
pub(super) async fn import_one(
    src: &seal_engine::import::Archive,
    engine: &Engine,
    id: &seal_core::ids::RunId,
    trusted: &[seal_core::sealing::PublicKey],
    limits: seal_engine::import::Limits,
    all: bool,
    errors: &mut Vec<String>,
) -> bool {
    match seal_engine::import::import_run(src, engine.store(), id, trusted, limits, all).await {
        // The imported run verified against the trusted keys: this store's log now accounts
        // for it (a checkpoint signed by this process's key).
        Ok(seal_engine::import::Imported::Copied { .. }) => {
            if let Some(key) = engine.key() {
                if let Err(e) = engine.log().append_trusted(id, key, trusted).await {
                    errors.push(format!("{id}: log: {e}"));
                    return false;
                }
            }
            true
        }
        Ok(seal_engine::import::Imported::IsReplay) => false,
        // --all takes decided runs only; an undecided one is not an error there.
        Err(seal_engine::import::ImportError::NotDecided { .. }) if all => false,
        Err(e) => {
            errors.push(format!("{id}: import: {e}"));
            false
        }
    }
}

/// The replay summary: JSON, or (the replay lines were streamed) the errors, the totals and
/// the flipped outcomes.
pub(super) fn print_replays(
    done: &[seal_engine::replay::Replayed],
    already: &[(String, String)],
    errors: &[String],
    judges: seal_engine::replay::JudgesFrom,
    json: bool,
) {
    let reproduced = done.iter().filter(|r| r.consensus_reproduced).count();
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
            "runs": done.len(), "consensusReproduced": reproduced, "flipped": flipped, "costRmb": cost, "replays": done, "alreadyReplayed": already, "errors": errors
        })).unwrap_or_default());
        return;
    }
    for e in errors {
        println!("ERROR {e}");
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    println!(
        "replayed {} run{} ({:?} judges): {} consensus reproduced, {} outcome{} flipped, cost {:.4} RMB",
        done.len(), plural(done.len()), judges, reproduced, flipped.len(), plural(flipped.len()), cost
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
}
