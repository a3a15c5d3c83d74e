//! `seal log …`: the transparency log on the command line (docs/DESIGN.md §13).
//!
//! `checkpoint` prints the latest signed checkpoint exactly as stored (a note is signed bytes:
//! nothing may be added, not even a newline); `prove` prints a run's inclusion proof; `verify`
//! checks the whole log against the store and, given one, an older checkpoint; `rebuild` is
//! the operator's explicit answer to a log seal refuses to sign (a signed rebuild entry).
//!
//! Decision: checkpoints are trusted under the same keys as seals (`keys.trusted`, `--trust`),
//! because the log is signed with the seal signing key; `prove` also trusts the public half of
//! the configured signing key, so an operator on the signing host needs no extra flag.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::context::{init_logging, load_config, runtime};
use super::error::fail;
use super::output::terminal_safe;
use seal_core::fault::HasFault;
use seal_core::ids::RunId;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_engine::config::Config;
use seal_engine::engine::Clock;
use seal_engine::transparency::{self, LogReport};
use seal_store::Store;

/// Largest older-checkpoint file read (a note is a few hundred bytes).
const MAX_NOTE_FILE: u64 = 1 << 20;

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print the latest signed checkpoint (a C2SP signed note), exactly as stored.
    Checkpoint {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
    },
    /// Print the inclusion proof of a run's seal against the latest checkpoint.
    Prove {
        /// The run id.
        run_id: String,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
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
        #[arg(long, value_name = "URL")]
        store: Option<String>,
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
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// The signing key (default: keys.signing_key of the config).
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// Public key whose seals and checkpoints count too (SPKI PEM); repeatable; adds to
        /// keys.trusted.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The witnesses a verification requires (adds to `[[witnesses]]` of the config).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WitnessArgs {
    /// A witness public key (SPKI PEM) whose cosignature the checkpoint relied on must carry;
    /// repeatable.
    #[arg(long = "witness", value_name = "PEM")]
    pub keys: Vec<PathBuf>,
    /// How many of the witnesses must have cosigned (default: witness_quorum of the config,
    /// else all of them).
    #[arg(long = "witness-quorum", value_name = "N")]
    pub quorum: Option<usize>,
}

impl WitnessArgs {
    /// The checked policy: these flags over the config's witnesses.
    pub fn policy(&self, config: &Config) -> Result<seal_engine::witness::check::Policy, String> {
        seal_engine::witness::check::Policy::load(
            &config.witnesses,
            config.witness_quorum,
            &self.keys,
            self.quorum,
        )
        .map_err(|e| e.to_string())
    }
}

/// Runs a `seal log` command (on the caller's runtime); returns the exit code.
pub async fn run(config: &Config, cmd: &LogCommand) -> u8 {
    match cmd {
        LogCommand::Checkpoint { store } => checkpoint(config, store.as_deref()).await,
        LogCommand::Prove {
            run_id,
            store,
            trust,
            json,
        } => prove(config, run_id, store.as_deref(), trust, *json).await,
        LogCommand::Verify {
            store,
            checkpoint,
            trust,
            witnesses,
            witness_url,
            json,
        } => {
            let witnessing = match witnesses.policy(config) {
                Ok(policy) => Witnessing {
                    policy,
                    urls: witness_url.clone(),
                },
                Err(e) => return fail(e),
            };
            verify(
                config,
                store.as_deref(),
                checkpoint.as_deref(),
                trust,
                &witnessing,
                *json,
            )
            .await
        }
        LogCommand::Rebuild {
            store,
            key,
            trust,
            json,
        } => rebuild(config, store.as_deref(), key.as_deref(), trust, *json).await,
    }
}

async fn open(config: &Config, store: Option<&str>) -> Result<Store, u8> {
    let url = store.unwrap_or(&config.store);
    // Read-only: a store that does not exist is an error, never created.
    Store::open_existing(url)
        .await
        .map(|s| s.with_doc_limit(config.max_document_bytes))
        .map_err(fail)
}

/// Trusted keys: `keys.trusted`, every `--trust`, and (with `signer`) the public half of the
/// configured signing key when it loads.
fn trusted(config: &Config, trust: &[PathBuf], signer: bool) -> Result<Vec<PublicKey>, u8> {
    let mut keys = Vec::new();
    for p in config.trusted_keys.iter().chain(trust) {
        keys.push(PublicKey::load(p).map_err(fail)?);
    }
    if signer {
        if let Ok(k) = SigningKey::load(&config.signing_key) {
            keys.push(k.public());
        }
    }
    if keys.is_empty() {
        return Err(fail(
            "no trusted public key: give --trust PEM (or keys.trusted in the config)",
        ));
    }
    Ok(keys)
}

async fn checkpoint(config: &Config, store: Option<&str>) -> u8 {
    let store = match open(config, store).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    match transparency::latest_checkpoint(&store).await {
        Ok(Some(note)) => {
            use std::io::Write;
            let mut out = std::io::stdout();
            match out.write_all(&note).and_then(|_| out.flush()) {
                Ok(()) => 0,
                Err(e) => fail(e),
            }
        }
        Ok(None) => {
            eprintln!("seal: {}", transparency::LogError::NoCheckpoint);
            1
        }
        Err(e) => fail(e),
    }
}

async fn prove(
    config: &Config,
    run_id: &str,
    store: Option<&str>,
    trust: &[PathBuf],
    json: bool,
) -> u8 {
    let run = match RunId::parse(run_id) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let (store, keys) = match (open(config, store).await, trusted(config, trust, true)) {
        (Ok(s), Ok(k)) => (s, k),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let view = match seal_engine::verify::load_log(&store, &keys).await {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let proof = match view.proof(&run) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("seal: {e}");
            return 1;
        }
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
        println!("entry {}", proof.entry);
        println!("audit path (leaf to root, RFC 9162):");
        for h in &proof.audit_path {
            println!("  {h}");
        }
        print!("checkpoint:\n{}", proof.checkpoint);
    }
    0
}

fn read_note(path: &Path) -> Result<Vec<u8>, u8> {
    // Through fsio: no link followed, no FIFO waited on, at most MAX_NOTE_FILE bytes read.
    seal_core::fsio::read(path, MAX_NOTE_FILE).map_err(|e| match e {
        seal_core::fsio::FsError::TooLarge { .. } => fail(format!(
            "{}: not a checkpoint (over {MAX_NOTE_FILE} bytes)",
            path.display()
        )),
        other => fail(other),
    })
}

/// What `seal log verify` requires of witnesses.
struct Witnessing {
    policy: seal_engine::witness::check::Policy,
    urls: Vec<String>,
}

async fn verify(
    config: &Config,
    store: Option<&str>,
    old: Option<&Path>,
    trust: &[PathBuf],
    witnessing: &Witnessing,
    json: bool,
) -> u8 {
    let (store, keys) = match (open(config, store).await, trusted(config, trust, false)) {
        (Ok(s), Ok(k)) => (s, k),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let old = match old.map(read_note).transpose() {
        Ok(o) => o,
        Err(code) => return code,
    };
    let raw: Vec<[u8; 32]> = keys.iter().map(PublicKey::raw).collect();
    let mut report = match transparency::verify_log(&store, &raw, old.as_deref()).await {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let lines = match witness_checks(config, &store, &raw, witnessing, &mut report).await {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}{}", lines, render(&report));
    }
    if report.verified {
        0
    } else {
        1
    }
}

/// The witness checks of `seal log verify`: the quorum on the latest checkpoint, then each
/// `--witness-url`; problems go into the report, the summary lines are returned.
async fn witness_checks(
    config: &Config,
    store: &Store,
    trusted: &[[u8; 32]],
    w: &Witnessing,
    report: &mut LogReport,
) -> Result<String, String> {
    use seal_engine::witness::check;
    let mut lines = String::new();
    let latest = match &report.checkpoint {
        Some(note) => seal_core::tlog::open_checkpoint(note.as_bytes(), trusted).ok(),
        None => None,
    };
    if let (false, Some(c)) = (w.policy.is_empty(), &latest) {
        let seen = check::witnessed(store, &w.policy, c)
            .await
            .map_err(|e| e.to_string())?;
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
    let origin = report
        .origin
        .clone()
        .unwrap_or_else(|| config.log_origin.clone());
    for url in &w.urls {
        let asked = check::ask_witness(store, trusted, url, &origin, report.checkpoint_size)
            .await
            .map_err(|e| e.to_string())?;
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

fn render(r: &LogReport) -> String {
    let mut out = format!(
        "log {}: {} entries, {} runs, latest checkpoint {}\n",
        r.origin.as_deref().unwrap_or("(no checkpoint)"),
        r.entries,
        r.runs_logged,
        r.checkpoint_size
            .map(|s| format!("of size {s}"))
            .unwrap_or_else(|| "none".into())
    );
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
    for run in &r.seal_pending {
        out.push_str(&format!(
            "run {run}: logged, its seal not stored yet (a finalize was interrupted between the log append and the seal: finalize the run again to store the very seal logged)\n"
        ));
    }
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
    out
}

async fn rebuild(
    config: &Config,
    store: Option<&str>,
    key: Option<&Path>,
    trust: &[PathBuf],
    json: bool,
) -> u8 {
    // An existing store only: a mistyped path must not be "rebuilt" as an empty store.
    let url = store.unwrap_or(&config.store);
    let store = match Store::open_existing(url).await {
        Ok(s) => s.with_doc_limit(config.max_document_bytes),
        Err(e) => return fail(e),
    };
    let key = match SigningKey::load(key.unwrap_or(&config.signing_key)) {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let mut trusted = Vec::new();
    for p in config.trusted_keys.iter().chain(trust) {
        match PublicKey::load(p) {
            Ok(k) => trusted.push(k),
            Err(e) => return fail(e),
        }
    }
    let url = store.url().to_string();
    let log = transparency::Log::new(store, &config.log_origin);
    let now = seal_engine::engine::SystemClock.now_rfc3339();
    let rebuilt = match log.rebuild(&key, &trusted, &now).await {
        Ok(r) => r,
        Err(e) => {
            for line in format!("seal: {e}").lines() {
                eprintln!("{}", terminal_safe(line));
            }
            return e.fault().exit_code();
        }
    };
    if json {
        let value = match &rebuilt {
            Some(r) => serde_json::json!({
                "rebuilt": true,
                "leafIndex": r.index,
                "entry": r.entry,
                "relogged": r.relogged.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                "treeSize": r.tree_size,
            }),
            None => serde_json::json!({ "rebuilt": false }),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return 0;
    }
    match rebuilt {
        None => println!("the log of {url} accounts for every sealed run: nothing to rebuild"),
        Some(r) => {
            for line in render_rebuilt(&url, &r).lines() {
                println!("{}", terminal_safe(line));
            }
        }
    }
    0
}

fn render_rebuilt(url: &str, r: &transparency::rebuild::Rebuilt) -> String {
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
    for run in &r.relogged {
        out.push_str(&format!("relogged {run}\n"));
    }
    out
}

pub(super) fn cmd_log(cli: &super::Cli, cmd: &LogCommand) -> u8 {
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match runtime() {
        Ok(rt) => rt.block_on(run(&config, cmd)),
        Err(code) => code,
    }
}
