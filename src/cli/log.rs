//! `seal log …`: the transparency log on the command line (docs/DESIGN.md §13).
//!
//! `checkpoint` prints the latest checkpoint a trusted key signed, exactly as stored (a note is
//! signed bytes: nothing may be added, not even a newline) but for control characters, which no
//! note of seal's holds ([`note_for_terminal`]); `prove` prints a run's inclusion proof; `verify`
//! checks the whole log against the store and, given one, an older checkpoint; `rebuild` is
//! the operator's explicit answer to a log seal refuses to sign (a signed rebuild entry).
//!
//! Exit codes: 0 yes; 1 no (the log not verified, the run not in the log, no checkpoint yet, a
//! rebuild refused); 2 could not run (no store, a named run not in it, no trusted key, …).
//! Every command opens an existing store only: a mistyped path is an error, never created.
//!
//! Checkpoints are trusted under the same keys as seals (`keys.trusted`, `--trust`); `prove`
//! also trusts the public half of the configured signing key, so an operator on the signing host
//! needs no extra flag (docs/DECISIONS.md, "Log with the seal signing key").

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::args::{self, StoreArg, WitnessArgs};
use super::context::Context;
use super::error::{refused, CliError, ExitStatus};
use super::output::terminal_safe;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_engine::engine::Clock;
use seal_log::{self, LogError, LogReport};
use seal_store::Store;

/// Largest older-checkpoint file read (a note is a few hundred bytes).
const MAX_NOTE_FILE: u64 = 1 << 20;

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print the latest checkpoint (a C2SP signed note) that a trusted key signed, exactly as
    /// stored; a larger stored one that no trusted key signed is passed over.
    Checkpoint {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
        /// Public key trusted to sign checkpoints (SPKI PEM); repeatable; adds to keys.trusted
        /// and the public half of keys.signing_key when readable.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
    },
    /// Print the inclusion proof of a run's seal against the latest checkpoint.
    Prove {
        /// The run id.
        #[arg(value_parser = args::run_id)]
        run_id: RunId,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
        /// Public key trusted to sign checkpoints (SPKI PEM); repeatable; adds to keys.trusted
        /// and the public half of keys.signing_key when readable.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Print {runId, leafIndex, treeSize, entry, auditPath, checkpoint} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the log: entries and checkpoints agree, append-only since an older checkpoint,
    /// every logged run present with the logged seal, every sealed run logged. Exit 0 verified,
    /// 1 not, 2 could not run.
    Verify {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
        /// An older signed checkpoint (note text) the log must be consistent with.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
        /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        #[command(flatten)]
        witnesses: WitnessArgs,
        /// Ask the witness at this URL prefix for its latest cosigned checkpoint of the log and
        /// require the store to hold it (a larger one there means a rolled-back store); repeatable.
        #[arg(long, value_name = "URL")]
        witness_url: Vec<String>,
        /// Print the report (with the consistency proof) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild a log seal refuses to sign (a sealed run it lacks, a log shorter than a
    /// checkpoint it signed, a fork): keep the prefix that agrees, move the rest under
    /// log/superseded/, append a signed rebuild entry, then every sealed run the kept log
    /// lacks. Stop every seal process of the store first. Exit 0 rebuilt or nothing to do,
    /// 1 refused (a run that cannot be relogged), 2 could not run.
    Rebuild {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
        /// The signing key (default: keys.signing_key of the config).
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// Public key whose seals and checkpoints count too (SPKI PEM); repeatable; adds to
        /// keys.trusted.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted. The
        /// stored reviews whose leaves are relogged are re-checked under these keys.
        #[arg(long, value_name = "PEM")]
        trust_reviewer: Vec<PathBuf>,
        /// A decision the rebuilt log may lose: a run id (its seal and review leaves), or
        /// leaf:<index> for a leaf whose entry is gone; repeatable. The rebuild refuses while
        /// it would lose one not named, and records each named one in its signed entry.
        #[arg(long, value_name = "RUN|leaf:N")]
        drop: Vec<seal_log::rebuild::Dropped>,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `seal log` command.
pub fn run(ctx: &Context, cmd: LogCommand) -> Result<ExitStatus, CliError> {
    ctx.block_on(async {
        match cmd {
            LogCommand::Checkpoint { store, trust } => {
                checkpoint(ctx, store.as_ref(), &trust).await
            }
            LogCommand::Prove {
                run_id,
                store,
                trust,
                json,
            } => prove(ctx, &run_id, store.as_ref(), &trust, json).await,
            LogCommand::Verify {
                store,
                checkpoint,
                trust,
                witnesses,
                witness_url,
                json,
            } => {
                let witnessing = Witnessing {
                    policy: witnesses.policy(ctx.config())?,
                    urls: witness_url,
                };
                let old = checkpoint.as_deref();
                verify(ctx, store.as_ref(), old, &trust, &witnessing, json).await
            }
            LogCommand::Rebuild {
                store,
                key,
                trust,
                trust_reviewer,
                drop,
                json,
            } => {
                let keys = RebuildKeys {
                    key: key.as_deref(),
                    trust: &trust,
                    trust_reviewer: &trust_reviewer,
                };
                rebuild(ctx, store.as_ref(), keys, &drop, json).await
            }
        }
    })
}

/// The store, existing only: a store that does not exist is an error, never created.
async fn open(ctx: &Context, store: Option<&StoreArg>) -> Result<(Store, StoreArg), CliError> {
    let url = ctx.store_url(store)?;
    Ok((ctx.read_store(&url).await?, url))
}

async fn checkpoint(
    ctx: &Context,
    store: Option<&StoreArg>,
    trust: &[PathBuf],
) -> Result<ExitStatus, CliError> {
    let keys = ctx.trusted(trust, ctx.own_public_key())?;
    let (store, _) = open(ctx, store).await?;
    let trust = seal_log::trust(&ctx.config().log_origin, &keys);
    let Some(signed) = seal_log::latest_checkpoint(&store, &trust).await? else {
        return Ok(refused(&LogError::NoCheckpoint));
    };
    use std::io::Write;
    let mut out = std::io::stdout();
    out.write_all(super::terminal::lines_for_terminal(&signed.text).as_bytes())
        .and_then(|_| out.flush())
        .map_err(CliError::io("stdout"))?;
    Ok(ExitStatus::Yes)
}

async fn prove(
    ctx: &Context,
    run: &RunId,
    store: Option<&StoreArg>,
    trust: &[PathBuf],
    json: bool,
) -> Result<ExitStatus, CliError> {
    let keys = ctx.trusted(trust, ctx.own_public_key())?;
    let (store, url) = open(ctx, store).await?;
    ctx.named_run(&store, &url, run).await?;
    let scope = seal_engine::verify::Scope::Runs(std::slice::from_ref(run));
    let trust = seal_log::trust(&ctx.config().log_origin, &keys);
    let view = seal_engine::verify::load_log(&store, &trust, scope).await?;
    let proof = match view.proof(&store, run).await {
        Ok(p) => p,
        // In the store, not in the log: the answer for this run is no.
        Err(e) if e.fault() == Fault::Caller => return Ok(refused(&e)),
        Err(e) => return Err(CliError::failed(e)),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&proof).unwrap_or_default()
        );
    } else {
        println!(
            "run {}: leaf {} of a tree of {}",
            proof.run_id, proof.leaf_index, proof.tree_size
        );
        println!("entry {}", terminal_safe(&proof.entry));
        println!("audit path (leaf to root, RFC 9162):");
        for h in &proof.audit_path {
            println!("  {h}");
        }
        print!(
            "checkpoint:\n{}",
            super::terminal::lines_for_terminal(&proof.checkpoint)
        );
    }
    Ok(ExitStatus::Yes)
}

fn read_note(path: &Path) -> Result<Vec<u8>, CliError> {
    // Through fsio: no link followed, no FIFO waited on, at most MAX_NOTE_FILE bytes read.
    seal_fs::fsio::read(path, MAX_NOTE_FILE).map_err(|e| match e {
        seal_fs::fsio::FsError::TooLarge { .. } => CliError::Usage(format!(
            "{}: not a checkpoint (over {MAX_NOTE_FILE} bytes)",
            path.display()
        )),
        other => CliError::File(other),
    })
}

/// What `seal log verify` requires of witnesses.
struct Witnessing {
    policy: seal_log::cosign::check::Policy,
    urls: Vec<String>,
}

async fn verify(
    ctx: &Context,
    store: Option<&StoreArg>,
    old: Option<&Path>,
    trust: &[PathBuf],
    witnessing: &Witnessing,
    json: bool,
) -> Result<ExitStatus, CliError> {
    let keys = ctx.trusted(trust, None)?;
    let (store, _) = open(ctx, store).await?;
    let old = old.map(read_note).transpose()?;
    let raw = seal_log::trust(&ctx.config().log_origin, &keys);
    let mut report = seal_log::verify_log(&store, &raw, old.as_deref()).await?;
    let lines = witness_checks(&store, &raw, witnessing, &mut report).await?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}{}", lines, render(&report));
    }
    Ok(ExitStatus::yes_if(report.verified))
}

/// The witness checks of `seal log verify`: the quorum on the latest checkpoint, then each
/// `--witness-url`; problems go into the report, the summary lines are returned.
async fn witness_checks(
    store: &Store,
    trust: &seal_core::tlog::LogTrust,
    w: &Witnessing,
    report: &mut LogReport,
) -> Result<String, CliError> {
    use seal_log::cosign::check;
    let mut lines = String::new();
    let latest = match &report.checkpoint {
        Some(note) => trust.open_checkpoint(note.as_bytes()).ok(),
        None => None,
    };
    if let (false, Some(c)) = (w.policy.is_empty(), &latest) {
        let seen = check::witnessed(store, &w.policy, c).await?;
        lines.push_str(&format!(
            "checkpoint of size {} cosigned by {} of {} witnesses (quorum {}){}\n",
            seen.size,
            seen.cosigned_by.len(),
            w.policy.keys.len(),
            seen.quorum,
            if seen.missing.is_empty() {
                String::new()
            } else {
                format!("; missing: {}", seen.missing.join(", "))
            }
        ));
        report.problems.extend(seen.problem());
    }
    let origin = trust.origin();
    for url in &w.urls {
        let asked = check::ask_witness(store, trust, url, origin, report.checkpoint_size)
            .await
            .map_err(|e| CliError::Witness(e.to_string()))?;
        lines.push_str(&format!(
            "witness {}: holds {}\n",
            asked.url,
            asked
                .size
                .map_or("no checkpoint of this log".to_string(), |s| format!(
                    "the checkpoint of size {s}"
                ))
        ));
        report.problems.extend(asked.problems);
    }
    report.verified = report.problems.is_empty();
    Ok(lines)
}

/// `seal log verify`'s text: the log's history, what it stores, what is pending, the verdict.
fn render(r: &LogReport) -> String {
    let mut out = String::new();
    render_history(r, &mut out);
    render_stored(r, &mut out);
    render_pending(r, &mut out);
    render_verdict(r, &mut out);
    out
}

/// The log's size and latest checkpoint, its consistency with an older one, its rebuilds.
fn render_history(r: &LogReport, out: &mut String) {
    out.push_str(&format!(
        "log {}: {} entries, {} runs, latest checkpoint {}\n",
        r.origin.as_deref().unwrap_or("(no checkpoint)"),
        r.entries,
        r.runs_logged,
        r.checkpoint_size
            .map(|s| format!("of size {s}"))
            .unwrap_or_else(|| "none".into())
    ));
    if let Some(c) = &r.consistency {
        out.push_str(&format!(
            "append-only since the checkpoint of size {} (consistency proof of {} hashes to size {})\n",
            c.old_size,
            c.proof.len(),
            c.new_size
        ));
    }
    for b in &r.rebuilds {
        out.push_str(&format!(
            "rebuilt by `seal log rebuild` at leaf {} on {}: kept {} leaves, moved {} objects{}, relogged {} sealed runs ({} problems found)\n",
            b.leaf_index,
            b.rebuilt_at,
            b.kept_entries,
            b.moved_objects,
            b.superseded
                .as_deref()
                .map(|f| format!(" to {f}/"))
                .unwrap_or_default(),
            b.runs_appended,
            b.problem_count
        ));
    }
}

/// The tiles and run pointers the log stores beside its entries.
fn render_stored(r: &LogReport, out: &mut String) {
    if r.tiles_checked > 0 || r.tiles_missing > 0 {
        out.push_str(&format!(
            "{} hash tiles stored, each the hashes of the entries ({} of the latest checkpoint's missing)\n",
            r.tiles_checked, r.tiles_missing
        ));
    } else if r.checkpoint_size.is_some() {
        out.push_str(
            "no hash tiles stored yet (a log from before them): the next checkpoint stores them\n",
        );
    }
    if r.pointers_missing > 0 {
        out.push_str(&format!(
            "{} run pointer(s) missing for leaves the latest checkpoint covers\n",
            r.pointers_missing
        ));
    }
}

/// Seals logged but not stored yet, the review leaves, reviews logged but not stored, the
/// reliability reports published.
fn render_pending(r: &LogReport, out: &mut String) {
    for run in &r.seal_pending {
        out.push_str(&format!(
            "run {run}: logged, its seal not stored yet (a finalize was interrupted between the log append and the seal: finalize the run again to store the very seal logged)\n"
        ));
    }
    for v in &r.reviews {
        out.push_str(&format!(
            "review {} of run {} at leaf {} (sha256 {}, reviewer key {}, {})\n",
            v.review_index,
            super::output::terminal_safe(&v.run_id),
            v.leaf_index,
            v.review_sha256,
            super::output::terminal_safe(&v.key_id),
            super::output::terminal_safe(&v.reviewed_at)
        ));
    }
    for p in &r.review_pending {
        out.push_str(&format!(
            "review {p}: logged, not stored (interrupted before its write, or it lost its index to another review: send it again)\n"
        ));
    }
    for v in &r.reports {
        out.push_str(&format!(
            "reliability report at leaf {} (sha256 {}, key {}, generated {})\n",
            v.leaf_index,
            super::output::terminal_safe(&v.report_sha256),
            super::output::terminal_safe(&v.key_id),
            super::output::terminal_safe(&v.generated_at)
        ));
    }
}

/// `verified`, or the problems.
fn render_verdict(r: &LogReport, out: &mut String) {
    if r.verified {
        out.push_str("verified\n");
    } else {
        let n = r.problems.len();
        out.push_str(&format!(
            "NOT VERIFIED: {n} problem{}\n",
            if n == 1 { "" } else { "s" }
        ));
        for p in &r.problems {
            out.push_str(&format!("    {p}\n"));
        }
    }
}

/// The keys of `seal log rebuild`.
struct RebuildKeys<'a> {
    key: Option<&'a Path>,
    trust: &'a [PathBuf],
    trust_reviewer: &'a [PathBuf],
}

async fn rebuild(
    ctx: &Context,
    store: Option<&StoreArg>,
    keys: RebuildKeys<'_>,
    drop: &[seal_log::rebuild::Dropped],
    json: bool,
) -> Result<ExitStatus, CliError> {
    let RebuildKeys {
        key,
        trust,
        trust_reviewer,
    } = keys;
    // An existing store only: a mistyped path must not be "rebuilt" as an empty store.
    let (store, _) = open(ctx, store).await?;
    let signing = ctx.signing(key)?;
    let trusted = ctx.public_keys(trust)?;
    let reviewers = ctx.reviewer_keys(trust_reviewer)?;
    let url = store.url().to_string();
    let log = seal_log::Log::new(store.clone(), &ctx.config().log_origin);
    let now = seal_engine::engine::SystemClock.now_rfc3339();
    // Every stored review, re-checked under the reviewer keys against its run proven under the
    // keys whose seals count (the signing key's and `--trust`).
    let mut signers = vec![signing.key().public()];
    signers.extend(trusted.iter().cloned());
    let reviews = seal_engine::reviewing::stored_for_rebuild(&store, &signers, &reviewers)
        .await
        .map_err(CliError::failed)?;
    let rebuilt = match log
        .rebuild(signing.key(), &trusted, &reviews, &now, drop)
        .await
    {
        Ok(r) => r,
        // A sealed run that cannot be relogged: the operator has a run to restore first.
        Err(e) if e.fault() == Fault::Caller => return Ok(refused(&e)),
        Err(e) => return Err(CliError::failed(e)),
    };
    if json {
        let value = match &rebuilt {
            Some(r) => serde_json::json!({
                "rebuilt": true,
                "leafIndex": r.index,
                "entry": r.entry,
                "relogged": r.relogged.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                "reviewsRelogged": r.reviews_relogged,
                "treeSize": r.tree_size,
            }),
            None => serde_json::json!({ "rebuilt": false }),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(ExitStatus::Yes);
    }
    match rebuilt {
        None => println!("the log of {url} accounts for every sealed run: nothing to rebuild"),
        Some(r) => {
            for line in render_rebuilt(&url, &r).lines() {
                println!("{}", terminal_safe(line));
            }
        }
    }
    Ok(ExitStatus::Yes)
}

fn render_rebuilt(url: &str, r: &seal_log::rebuild::Rebuilt) -> String {
    let e = &r.entry;
    let mut out = format!(
        "rebuilt the log of {url}: kept {} leaves, rebuild entry at leaf {}, relogged {} sealed runs, checkpoint of size {}\n",
        e.kept_entries,
        r.index,
        r.relogged.len(),
        r.tree_size
    );
    if let Some(folder) = &e.superseded {
        out.push_str(&format!(
            "moved {} objects of the previous log to {folder}/\n",
            e.moved_objects
        ));
    }
    out.push_str(&format!("why ({} problems):\n", e.problem_count));
    for p in &e.problems {
        out.push_str(&format!("    {p}\n"));
    }
    if e.dropped_count > 0 {
        out.push_str(&format!("dropped, as named ({}):\n", e.dropped_count));
        for d in &e.dropped {
            out.push_str(&format!("    {d}\n"));
        }
    }
    for run in &r.relogged {
        out.push_str(&format!("relogged {run}\n"));
    }
    for review in &r.reviews_relogged {
        out.push_str(&format!("relogged review {review}\n"));
    }
    out
}
