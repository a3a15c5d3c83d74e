//! The `seal` command line: clap definitions, one function per command, exit codes in one place.
//!
//! Exit codes: 0 success (valid, verified, sealed); 1 a negative answer (invalid document, not
//! verified, a run folder refused); 2 could not run (bad arguments, unreadable input, store,
//! config or key errors).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::engine::Engine;
use crate::report;
use crate::sealing::SigningKey;
use crate::store::Store;
use crate::validate::{self, Report};

#[derive(Debug, Parser)]
#[command(
    name = "seal",
    version,
    about = "Dual-judge consensus and evidence sealing for playtest/3"
)]
pub struct Cli {
    /// Configuration file (default: config/seal.toml, else the embedded default).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate documents: kind by schemaVersion, JSON Schema 2020-12, then the cross-field invariants.
    Validate {
        /// Files to validate.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Size limit in bytes (default: limits.max_document_bytes of the config, 64 MiB).
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
    },
    /// Make an ed25519 key pair, DIR/seal.key.pem (PKCS#8, 0600) and DIR/seal.pub.pem (SPKI),
    /// and the deployment secret DIR/seal.secret (32 random bytes as hex, 0600). DIR is created
    /// 0700; a link or a folder writable by others is refused.
    Keygen {
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write only what DIR lacks (the key pair, the secret); succeed when it holds both.
        #[arg(long)]
        if_missing: bool,
    },
    /// Verify sealed runs: signature, subject, schemas, every ref re-hashed, consensus,
    /// independence and blinding recomputed, invariants. Exit 0 verified, 1 not, 2 could not run.
    Verify {
        /// Run ids to verify.
        #[arg(
            value_name = "RUN_ID",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        runs: Vec<String>,
        /// Verify every run in the store.
        #[arg(long)]
        all: bool,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        #[command(flatten)]
        witnesses: crate::cli_log::WitnessArgs,
        /// Runs verified at once.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Print the reports as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Explain a sealed run: its evidence-bound decision tree (seal.decision-tree/1) as JSON,
    /// or as a self-contained HTML page. The run is verified first. Exit 0 explained, 1 the run
    /// does not verify, 2 could not run.
    Explain {
        /// The run id.
        run_id: String,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Write the tree as canonical JSON (the default).
        #[arg(long, conflicts_with = "html")]
        json: bool,
        /// Write the page (HTML) instead of the JSON.
        #[arg(long)]
        html: bool,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Figures over the decided runs that verify: judge agreement (confusion matrices, Cohen's
    /// kappa with a seeded 95% bootstrap interval) per obligation, genre and day; outcomes,
    /// roll 2, infra causes; slot attempts, latency and cost; replay flips. Runs that do not
    /// verify are counted and listed, never used. Exit 0, 1 bad options, 2 could not run.
    Stats {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Only runs decided at or after this time (RFC 3339).
        #[arg(long, value_name = "RFC3339")]
        since: Option<String>,
        /// Only runs decided before this time (RFC 3339).
        #[arg(long, value_name = "RFC3339")]
        until: Option<String>,
        /// Only runs of this genre.
        #[arg(long, value_name = "G")]
        genre: Option<String>,
        /// Print the figures as canonical JSON (seal.stats/1).
        #[arg(long, conflicts_with = "html")]
        json: bool,
        /// Write the page (HTML with SVG charts) to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Re-judge decided runs into new historical_replay runs.
    Replay {
        /// Run ids to replay.
        #[arg(
            value_name = "RUN_ID",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        runs: Vec<String>,
        /// Replay every decided run that is not itself a replay.
        #[arg(long)]
        all: bool,
        /// Where the judge answers come from.
        #[arg(long, value_enum)]
        judges: crate::replay::JudgesFrom,
        /// Consensus strategy to replay with (this build: dual-strict/1).
        #[arg(long, value_name = "V")]
        strategy: Option<String>,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Import the source runs from this store first (an archive, the committed fixtures).
        #[arg(long, value_name = "URL")]
        from: Option<String>,
        /// Public key trusted to have sealed the sources (SPKI PEM); repeatable; adds to
        /// keys.trusted of the config and this replay's own key.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// Signing key (default: keys.signing_key of the config).
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// With --all: replay every source into a new replay id, also those replayed before.
        /// Without it, --all resumes: a source whose last replay is decided is skipped, and an
        /// interrupted replay (killed) is finished under its own id.
        #[arg(long, requires = "all")]
        again: bool,
        /// Runs replayed at once (default: four per core; replay waits on fsyncs).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the HTTP/JSON daemon for the pipeline's workers.
    Serve {
        /// Address to listen on (default: server.listen of the config, 127.0.0.1:7878).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Signing key (default: keys.signing_key of the config).
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// Listen on a non-loopback address without an API token (every route open to the
        /// network). Refused without this flag.
        #[arg(long)]
        insecure_no_auth: bool,
    },
    /// Turn an agent-loop Verdict into a run folder (evidenceMode legacy-adapted).
    #[command(subcommand)]
    Adapt(AdaptCommand),
    /// Export a decided run as an agent-loop Verdict record.
    #[command(subcommand)]
    Export(ExportCommand),
    /// The transparency log of seals: latest checkpoint, inclusion proofs, append-only checks.
    #[command(subcommand)]
    Log(crate::cli_log::LogCommand),
    /// Run a transparency-log witness (C2SP tlog-witness) for a seal log.
    #[command(subcommand)]
    Witness(crate::cli_witness::WitnessCommand),
    /// Judge a run folder end to end: rolls, finalPostguard, seal.
    Judge {
        /// The run folder (header.json, brief.md, roll-1/…, blobs/…).
        run_dir: PathBuf,
        /// Store URL (default: the config's, file://./var/store).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Signing key (default: keys.signing_key of the config).
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Allow a `memory://` store: the evidence vanishes when seal exits, although the
        /// judges are called (and paid) for real.
        #[arg(long)]
        allow_ephemeral_store: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdaptCommand {
    /// An agent-loop Verdict (verdict.schema.json) → a run folder `seal judge` accepts.
    Verdict {
        /// The Verdict JSON file.
        file: PathBuf,
        /// The run folder to write (must not exist or be empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Genre of the game (a Verdict does not say): narrative, trpg, heritage, puzzle, sim-business.
        #[arg(long, default_value = "narrative")]
        genre: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A decided run carrying _designId, _taskId and _traceId → a Verdict record.
    Verdict {
        /// The run id.
        run_id: String,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Write the Verdict here instead of stdout (a new file: never overwritten, never
        /// written through a link).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config. The
        /// run must verify under one of them before anything is exported.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
    },
}

/// Entry point used by the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    ExitCode::from(run(cli))
}

fn init_logging(format: LogFormat, default_level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("SEAL_LOG").unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Human => builder.try_init(),
    };
}

fn fail(msg: impl std::fmt::Display) -> u8 {
    eprintln!("seal: {msg}");
    2
}

fn load_config(path: Option<&Path>) -> Result<Config, u8> {
    Config::load(path).map_err(fail)
}

/// Threads for blocking file I/O (see `runtime`).
const MAX_BLOCKING_THREADS: usize = 32;

fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    // Blocking threads do the file store's I/O; a bound keeps memory flat under load while
    // staying far above what one disk can use.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
        .map_err(fail)
}

fn load_key(path: &Path) -> Result<SigningKey, u8> {
    SigningKey::load(path).map_err(fail)
}

async fn engine(
    config: Config,
    store_url: Option<&str>,
    key: Option<SigningKey>,
) -> Result<Engine, u8> {
    // Checked before the store is opened: a command that cannot judge creates nothing.
    if let Err(e) = config.deployment_secret() {
        return Err(fail(e));
    }
    let url = store_url
        .map(str::to_owned)
        .unwrap_or_else(|| config.store.clone());
    let store = Store::open(&url).await.map_err(fail)?;
    Engine::new(store, config, key).map_err(fail)
}

/// Runs a parsed command; returns the exit code.
pub fn run(cli: Cli) -> u8 {
    match &cli.command {
        Command::Validate { files, max_bytes } => {
            let limit = match max_bytes {
                Some(b) => *b,
                None => match load_config(cli.config.as_deref()) {
                    Ok(c) => c.max_document_bytes,
                    Err(code) => return code,
                },
            };
            cmd_validate(files, limit)
        }
        Command::Keygen { out, if_missing } => cmd_keygen(out, *if_missing),
        Command::Verify {
            runs,
            all,
            store,
            trust,
            witnesses,
            jobs,
            json,
        } => cmd_verify(
            &cli,
            runs,
            *all,
            store.as_deref(),
            (trust, witnesses),
            *jobs,
            *json,
        ),
        Command::Explain { .. } | Command::Stats { .. } | Command::Replay { .. } => {
            run_history(&cli)
        }
        Command::Adapt(AdaptCommand::Verdict { file, out, genre }) => cmd_adapt(file, out, genre),
        Command::Export(ExportCommand::Verdict {
            run_id,
            store,
            out,
            trust,
        }) => cmd_export_verdict(&cli, run_id, store.as_deref(), out.as_deref(), trust),
        Command::Log(cmd) => cmd_log(&cli, cmd),
        Command::Witness(cmd) => cmd_witness(&cli, cmd),
        Command::Serve {
            listen,
            store,
            key,
            insecure_no_auth,
        } => cmd_serve(
            &cli,
            listen.as_deref(),
            store.as_deref(),
            key.as_deref(),
            *insecure_no_auth,
        ),
        Command::Judge {
            run_dir,
            store,
            key,
            json,
            allow_ephemeral_store,
        } => cmd_judge(
            &cli,
            run_dir,
            store.as_deref(),
            key.as_deref(),
            *json,
            *allow_ephemeral_store,
        ),
    }
}

/// The commands that read decided history: explain, stats and replay.
fn run_history(cli: &Cli) -> u8 {
    match &cli.command {
        Command::Explain {
            run_id,
            store,
            trust,
            json: _,
            html,
            out,
        } => cmd_explain(
            cli,
            ExplainArgs {
                run_id,
                store: store.as_deref(),
                trust,
                html: *html,
                out: out.as_deref(),
            },
        ),
        Command::Stats {
            store,
            trust,
            since,
            until,
            genre,
            json,
            html,
        } => cmd_stats(
            cli,
            StatsArgs {
                store: store.as_deref(),
                trust,
                query: crate::stats::Query {
                    since: since.clone(),
                    until: until.clone(),
                    genre: genre.clone(),
                },
                json: *json,
                html: html.as_deref(),
            },
        ),
        Command::Replay {
            runs,
            all,
            judges,
            strategy,
            store,
            from,
            trust,
            key,
            again,
            jobs,
            json,
        } => cmd_replay(
            cli,
            ReplayArgs {
                runs,
                all: *all,
                judges: *judges,
                strategy: strategy.as_deref(),
                store: store.as_deref(),
                from: from.as_deref(),
                trust,
                key: key.as_deref(),
                resume: *all && !*again,
                jobs: *jobs,
                json: *json,
            },
        ),
        // `run` sends only the three commands above here.
        _ => 2,
    }
}

/// Prints an error and returns the exit code its fault calls for (1 the caller's, 2 else).
fn fail_by_fault<E: crate::fault::HasFault + std::fmt::Display>(e: E) -> u8 {
    eprintln!("seal: {}", report::terminal_safe(&e.to_string()));
    e.fault().exit_code()
}

fn cmd_keygen(out: &Path, if_missing: bool) -> u8 {
    // The folder first: created 0700 whatever the umask, never a link, never writable by
    // others (see `fsio::private_folder`).
    if let Err(e) = crate::fsio::private_folder(out) {
        return fail(format!("--out {e}"));
    }
    let secret = out.join(crate::config::SECRET_FILE);
    let is_file = |p: &Path| matches!(crate::fsio::kind(p), Ok(Some(crate::fsio::Kind::File)));
    let have_pair = is_file(&out.join("seal.key.pem")) && is_file(&out.join("seal.pub.pem"));
    let have_secret = is_file(&secret);
    if !if_missing && !matches!(crate::fsio::kind(&secret), Ok(None)) {
        // Refused before anything is written: a half-made set is worse than none.
        return fail(format!(
            "{}: already exists: refusing to overwrite a secret (--if-missing keeps it)",
            secret.display()
        ));
    }
    if if_missing && have_pair {
        println!("key pair already in {}", out.display());
    } else {
        let key = SigningKey::generate();
        match key.write_pair(out) {
            Ok((k, p)) => println!(
                "private key {} (mode 0600)\npublic key  {}\nkeyid       {}",
                k.display(),
                p.display(),
                key.key_id
            ),
            Err(e) => return fail(e),
        }
    }
    if if_missing && have_secret {
        println!("secret already in {}", secret.display());
    } else {
        if let Err(e) = crate::config::write_secret_file(&secret) {
            return fail(e);
        }
        println!("secret      {} (mode 0600)", secret.display());
    }
    0
}

fn cmd_adapt(file: &Path, out: &Path, genre: &str) -> u8 {
    let genre: crate::doc::Genre =
        match serde_json::from_value(serde_json::Value::String(genre.to_string())) {
            Ok(g) => g,
            Err(_) => {
                return fail(format!(
                    "unknown genre {genre:?}: narrative, trpg, heritage, puzzle or sim-business"
                ))
            }
        };
    match crate::adapt::verdict_file_to_run_folder(file, genre, out) {
        Ok(run) => {
            println!(
                "wrote run folder {} (run {run}, evidenceMode legacy-adapted)",
                out.display()
            );
            0
        }
        Err(e) => {
            eprintln!("seal: {e}");
            1
        }
    }
}

fn cmd_log(cli: &Cli, cmd: &crate::cli_log::LogCommand) -> u8 {
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match runtime() {
        Ok(rt) => rt.block_on(crate::cli_log::run(&config, cmd)),
        Err(code) => code,
    }
}

fn cmd_witness(cli: &Cli, cmd: &crate::cli_witness::WitnessCommand) -> u8 {
    init_logging(cli.log_format, "info");
    match runtime() {
        Ok(rt) => rt.block_on(crate::cli_witness::run(cmd, shutdown_signal())),
        Err(code) => code,
    }
}

fn cmd_judge(
    cli: &Cli,
    run_dir: &Path,
    store: Option<&str>,
    key: Option<&Path>,
    json: bool,
    allow_ephemeral_store: bool,
) -> u8 {
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let url = store.unwrap_or(&config.store);
    if !allow_ephemeral_store
        && matches!(
            crate::store::StoreUrl::parse(url),
            Ok(crate::store::StoreUrl::Memory)
        )
    {
        return fail(
            "refusing to judge into memory://: the sealed evidence would vanish at exit \
             while the judges are paid; pass --allow-ephemeral-store if that is meant",
        );
    }
    // `--key`, when given, is the key; the default secret file is the one beside it.
    let config = config.with_signing_key(key);
    let key = match load_key(&config.signing_key) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let folder = match crate::runfolder::RunFolder::read(run_dir, config.max_document_bytes) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("seal: {e}");
                return 1;
            }
        };
        let engine = match engine(config, store, Some(key)).await {
            Ok(e) => e,
            Err(code) => return code,
        };
        // The log must account for the store before any judge is paid (G2, §13).
        if let Some(key) = engine.key.clone() {
            if let Err(e) = engine.log.admit(&key, &[]).await {
                return fail_by_fault(e);
            }
        }
        let judged = crate::runfolder::judge(&engine, &folder).await;
        // The checkpoint this process published reaches the witnesses before it exits.
        engine.witnesses.settle().await;
        match judged {
            Ok(done) => {
                let summary = match report::summarize(&engine.store, &done).await {
                    Ok(s) => s,
                    Err(e) => return fail(e),
                };
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&summary).unwrap_or_default()
                    );
                } else {
                    print!("{}", report::render(&summary));
                }
                0
            }
            Err(e) => fail_by_fault(e),
        }
    })
}

fn cmd_serve(
    cli: &Cli,
    listen: Option<&str>,
    store: Option<&str>,
    key: Option<&Path>,
    insecure_no_auth: bool,
) -> u8 {
    init_logging(cli.log_format, "info");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let addr = match serve_address(&config, listen, insecure_no_auth) {
        Ok(a) => a,
        Err(code) => return code,
    };
    // `--key`, when given, is the key; the default secret file is the one beside it.
    let config = config.with_signing_key(key);
    let key = match load_key(&config.signing_key) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let mut trusted = vec![key.public()];
    for p in &config.trusted_keys {
        match crate::sealing::PublicKey::load(p) {
            Ok(k) => trusted.push(k),
            Err(e) => return fail(e),
        }
    }
    if let Err(e) = crate::contracts::self_check() {
        return fail(e);
    }
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let engine = match engine(config, store, Some(key)).await {
            Ok(e) => e,
            Err(code) => return code,
        };
        // G2 (docs/DESIGN.md §13): never serve, and so never sign, a log that does not account
        // for the store's sealed runs; the operator looks, then runs `seal log rebuild`.
        if let Some(key) = engine.key.clone() {
            if let Err(e) = engine.log.admit(&key, &trusted).await {
                return fail(format!(
                    "refusing to serve: {}",
                    report::terminal_safe(&e.to_string())
                ));
            }
        }
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        tracing::info!(addr = %local, store = %engine.store.url(), "seal serve listening");
        // The first stdout line tells scripts (and tests binding port 0) where we are.
        println!("seal serve listening on http://{local}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let state = crate::server::AppState::new(engine, trusted);
        match crate::server::run(listener, state, shutdown_signal()).await {
            Ok(()) => {
                tracing::info!("stopped");
                0
            }
            Err(e) => fail(e),
        }
    })
}

/// The address `seal serve` listens on, checked before anything else: an open daemon on the
/// network is refused, not discovered later (see `server::exposure`).
fn serve_address(
    config: &Config,
    listen: Option<&str>,
    insecure_no_auth: bool,
) -> Result<String, u8> {
    let addr = listen
        .map(str::to_owned)
        .unwrap_or_else(|| config.server.listen.clone());
    let has_token = config.server.bearer_token.is_some();
    match crate::server::exposure(&addr, has_token, insecure_no_auth) {
        Ok(crate::server::Exposure::OpenToNetwork) => tracing::warn!(
            addr = %addr,
            "INSECURE: --insecure-no-auth: listening beyond loopback without an API token; \
             anyone who can reach this address can submit, judge and finalize runs"
        ),
        Ok(_) => {}
        Err(e) => return Err(fail(e)),
    }
    Ok(addr)
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn cmd_export_verdict(
    cli: &Cli,
    run_id: &str,
    store: Option<&str>,
    out: Option<&Path>,
    trust: &[PathBuf],
) -> u8 {
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let run = match crate::ids::RunId::parse(run_id) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let trusted = match trusted_keys(&config, trust) {
        Ok(t) if t.is_empty() => {
            return fail("no trusted public key: give --trust PEM (or keys.trusted in the config)")
        }
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
        // Read-only: a store that does not exist is an error, never created.
        let store = match Store::open_existing(&url).await {
            Ok(s) => s.with_doc_limit(config.max_document_bytes),
            Err(e) => return fail(e),
        };
        let verified = match crate::verify::prove(&store, &run, &trusted).await {
            Ok(Ok(v)) => v,
            Ok(Err(report)) => {
                eprintln!("seal: run {run} does NOT VERIFY; nothing exported");
                for p in &report.problems {
                    eprintln!("    {p}");
                }
                return 1;
            }
            Err(e) => return fail(e),
        };
        let text = match crate::adapt::evidence_to_verdict(verified.evidence()).and_then(|v| {
            serde_json::to_string_pretty(&v).map_err(|e| crate::adapt::AdaptError::Output {
                path: run.to_string(),
                reason: e.to_string(),
            })
        }) {
            Ok(t) => t + "\n",
            Err(e) => {
                eprintln!("seal: {e}");
                return 1;
            }
        };
        match out {
            Some(p) => match crate::fsio::write_new(p, text.as_bytes(), 0o644) {
                Ok(()) => {
                    println!("wrote {}", p.display());
                    0
                }
                Err(e @ crate::fsio::FsError::Exists { .. }) => {
                    eprintln!("seal: {e}");
                    1
                }
                Err(e) => fail(e),
            },
            None => {
                print!("{text}");
                0
            }
        }
    })
}

fn run_ids(ids: &[String]) -> Result<Vec<crate::ids::RunId>, u8> {
    ids.iter()
        .map(|s| crate::ids::RunId::parse(s).map_err(fail))
        .collect()
}

fn cmd_verify(
    cli: &Cli,
    runs: &[String],
    all: bool,
    store: Option<&str>,
    (trust, witnesses): (&[PathBuf], &crate::cli_log::WitnessArgs),
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
        let jobs = jobs.unwrap_or_else(crate::bulk::default_jobs).max(1);
        // The transparency log is read once for all runs (each run's inclusion is checked).
        let log = match crate::verify::load_log(&store, &trusted).await {
            Ok(v) => Arc::new(v),
            Err(e) => return fail(e),
        };
        // Every run is proven against the latest checkpoint: it needs the witness quorum.
        let unwitnessed =
            match crate::witness::check::quorum_problem(&store, &policy, log.latest.as_ref()).await
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

/// The config's trusted keys plus `--trust`; at least one.
fn trusted_keys(config: &Config, trust: &[PathBuf]) -> Result<Vec<crate::sealing::PublicKey>, u8> {
    let trusted = load_trusted(config, trust)?;
    if trusted.is_empty() {
        return Err(fail(
            "no trusted public key: give --trust PEM (or keys.trusted in the config)",
        ));
    }
    Ok(trusted)
}

/// The public keys of the config's `keys.trusted` and of every `--trust`, possibly none.
fn load_trusted(config: &Config, trust: &[PathBuf]) -> Result<Vec<crate::sealing::PublicKey>, u8> {
    config
        .trusted_keys
        .iter()
        .chain(trust)
        .map(|p| crate::sealing::PublicKey::load(p).map_err(fail))
        .collect()
}

/// The runs to verify, and a report for every folder under `runs/` that cannot be (a name
/// that is not a run id is listed as not verified, never skipped).
async fn verify_targets(
    store: &Store,
    url: &str,
    all: bool,
    runs: &[String],
) -> Result<(Vec<crate::ids::RunId>, Vec<crate::verify::RunReport>), u8> {
    if all {
        let (ids, invalid) = store.list_run_folders().await.map_err(fail)?;
        if ids.is_empty() && invalid.is_empty() {
            return Err(fail(format!("no runs in {url}")));
        }
        let reports = invalid
            .into_iter()
            .map(crate::verify::RunReport::unverifiable_folder)
            .collect();
        return Ok((ids, reports));
    }
    let ids = run_ids(runs)?;
    // Named runs must exist (ids from --all came from the listing itself).
    for id in &ids {
        match crate::verify::run_exists(store, id).await {
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
async fn verify_in_parallel(
    store: &Store,
    ids: Vec<crate::ids::RunId>,
    trusted: Arc<Vec<crate::sealing::PublicKey>>,
    (log, unwitnessed): (
        Arc<crate::transparency::LogView>,
        Option<crate::audit::Problem>,
    ),
    jobs: usize,
    printer: &mut VerifyPrinter,
) -> Result<(), String> {
    let store = store.clone().direct_io();
    let work = move |id: crate::ids::RunId| {
        let (store, trusted, log) = (store.clone(), trusted.clone(), log.clone());
        async move {
            crate::verify::verify_run_logged(&store, &id, &trusted, &log)
                .await
                .map_err(|e| format!("run {id}: {e}"))
        }
    };
    let sink = |r: Result<crate::verify::RunReport, String>| {
        printer.bar.inc(1);
        r.map(|mut report| {
            crate::witness::check::require(&mut report, unwitnessed.as_ref());
            printer.print(&report)
        })
    };
    crate::bulk::in_order(ids, jobs, work, sink)
        .await
        .map_err(|e| e.to_string())?
}

/// Prints verify reports as they come: a block of lines a run, or with `--json` one JSON
/// line a run (NDJSON); [`VerifyPrinter::finish`] prints the summary and gives the exit code.
struct VerifyPrinter {
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

    fn print(&mut self, r: &crate::verify::RunReport) {
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
fn verify_lines(r: &crate::verify::RunReport) -> String {
    let run = crate::report::terminal_safe(&r.run_id);
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
        text.push_str(&crate::report::terminal_safe(&p.to_string()));
    }
    text
}

fn progress(len: u64, wanted: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if wanted && std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(len);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed} {msg}")
        {
            bar.set_style(style);
        }
        bar
    } else {
        indicatif::ProgressBar::hidden()
    }
}

struct ExplainArgs<'a> {
    run_id: &'a str,
    store: Option<&'a str>,
    trust: &'a [PathBuf],
    html: bool,
    out: Option<&'a Path>,
}

/// Quotes a word for a POSIX shell when it needs quoting.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn cmd_explain(cli: &Cli, args: ExplainArgs<'_>) -> u8 {
    use crate::fault::HasFault;
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let run = match crate::ids::RunId::parse(args.run_id) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let trusted = match trusted_keys(&config, args.trust) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let url = args
        .store
        .map(str::to_owned)
        .unwrap_or_else(|| config.store.clone());
    let result = rt.block_on(async {
        // Read-only: a mistyped store is an error, never a new folder.
        let store = Store::open_existing(&url)
            .await?
            .with_doc_limit(config.max_document_bytes);
        crate::explain::explain(&store, &run, &trusted).await
    });
    let explained = match result {
        Ok(e) => e,
        Err(crate::explain::ExplainError::NotVerified(report)) => {
            eprintln!("seal: run {run} does not verify; it is not explained:");
            for p in &report.problems {
                eprintln!("    {p}");
            }
            return 1;
        }
        Err(e @ crate::explain::ExplainError::NotFound { .. }) => return fail(e),
        Err(e) => {
            eprintln!("seal: {e}");
            return e.fault().exit_code();
        }
    };
    let bytes = if args.html {
        let mut cmd = format!(
            "seal verify {} --store {}",
            shell_word(run.as_str()),
            shell_word(&url)
        );
        for p in config.trusted_keys.iter().chain(args.trust) {
            cmd.push_str(&format!(
                " --trust {}",
                shell_word(&p.display().to_string())
            ));
        }
        explained.html(&cmd).into_bytes()
    } else {
        let mut b = explained.tree_bytes.clone();
        b.push(b'\n');
        b
    };
    write_output(args.out, &bytes)
}

/// Writes `bytes` to `out`, or to stdout.
fn write_output(out: Option<&Path>, bytes: &[u8]) -> u8 {
    use std::io::Write;
    match out {
        Some(p) => match std::fs::write(p, bytes) {
            Ok(()) => {
                eprintln!("wrote {}", p.display());
                0
            }
            Err(e) => fail(format!("{}: {e}", p.display())),
        },
        None => match std::io::stdout().write_all(bytes) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
    }
}

struct StatsArgs<'a> {
    store: Option<&'a str>,
    trust: &'a [PathBuf],
    query: crate::stats::Query,
    json: bool,
    html: Option<&'a Path>,
}

fn cmd_stats(cli: &Cli, args: StatsArgs<'_>) -> u8 {
    use crate::fault::HasFault;
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let trusted = match trusted_keys(&config, args.trust) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let url = args
        .store
        .map(str::to_owned)
        .unwrap_or_else(|| config.store.clone());
    let result = rt.block_on(async {
        let store = Store::open_existing(&url)
            .await?
            .with_doc_limit(config.max_document_bytes);
        crate::stats::stats(&store, &trusted, args.query).await
    });
    let stats = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("seal: {e}");
            return e.fault().exit_code();
        }
    };
    if stats.report.runs.not_verified > 0 {
        eprintln!(
            "seal: {} decided run(s) do not verify and are not counted (listed in the report)",
            stats.report.runs.not_verified
        );
    }
    if let Some(path) = args.html {
        return write_output(Some(path), stats.html().as_bytes());
    }
    if args.json {
        write_output(None, &stats.bytes)
    } else {
        write_output(None, stats.text().as_bytes())
    }
}

struct ReplayArgs<'a> {
    runs: &'a [String],
    all: bool,
    judges: crate::replay::JudgesFrom,
    strategy: Option<&'a str>,
    store: Option<&'a str>,
    from: Option<&'a str>,
    trust: &'a [PathBuf],
    key: Option<&'a Path>,
    resume: bool,
    jobs: Option<usize>,
    json: bool,
}

fn cmd_replay(cli: &Cli, args: ReplayArgs<'_>) -> u8 {
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
    if let Some(s) = strategy.filter(|s| *s != crate::consensus::STRATEGY) {
        return fail(format!(
            "unknown consensus strategy {s:?}: this build implements {}",
            crate::consensus::STRATEGY
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
    let limits = crate::import::Limits {
        document: config.max_document_bytes,
        blob: config.max_blob_bytes,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let archive = match from {
            Some(url) => match crate::import::Archive::open(url).await {
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
        let jobs = jobs.unwrap_or_else(crate::bulk::default_write_jobs);
        let mut tally = ReplayTally::new(judges, json, errors, progress(ids.len() as u64, all));
        match replay_in_parallel(job, ids, jobs, &mut tally).await {
            Ok(()) => tally.finish(),
            Err(e) => fail(e),
        }
    })
}

/// What every replay of a batch shares.
struct ReplayJob {
    engine: Engine,
    archive: Option<crate::import::Archive>,
    trusted: Vec<crate::sealing::PublicKey>,
    limits: crate::import::Limits,
    all: bool,
    /// `--all` without `--again`: see [`crate::replay::replay_resumable`].
    resume: bool,
    judges: crate::replay::JudgesFrom,
    strategy: Option<String>,
}

/// One source run: import it when `--from`, then replay it (with `--all`, resumably: see
/// [`crate::replay::replay_resumable`]). None when there is nothing to replay.
async fn replay_one(
    job: &ReplayJob,
    id: crate::ids::RunId,
    errors: &mut Vec<String>,
) -> Option<crate::replay::Resumed> {
    let engine = &job.engine;
    if let Some(src) = &job.archive {
        let (trusted, limits) = (&job.trusted, job.limits);
        if !import_one(src, engine, &id, trusted, limits, job.all, errors).await {
            return None;
        }
    }
    if job.all && job.archive.is_none() {
        match crate::replay::is_replayable(&engine.store, &id).await {
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
        crate::replay::replay_resumable(engine, &id, job.judges, strategy, &job.trusted).await
    } else {
        crate::replay::replay(engine, &id, job.judges, strategy, &job.trusted)
            .await
            .map(crate::replay::Resumed::Replayed)
    };
    done.map_err(|e| errors.push(e.to_string())).ok()
}

/// Replays runs on their own threads, at most `jobs` at once (see [`crate::bulk`]), reading
/// a `file://` store directly; results are tallied in the order of `ids`.
async fn replay_in_parallel(
    mut job: ReplayJob,
    ids: Vec<crate::ids::RunId>,
    jobs: usize,
    tally: &mut ReplayTally,
) -> Result<(), String> {
    job.engine.store = job.engine.store.clone().direct_io();
    let witnesses = job.engine.witnesses.clone();
    let job = Arc::new(job);
    let work = move |id: crate::ids::RunId| {
        let job = job.clone();
        async move {
            let mut errors = Vec::new();
            let done = replay_one(&job, id, &mut errors).await;
            (done, errors)
        }
    };
    let sink = |(done, errors): (Option<crate::replay::Resumed>, Vec<String>)| {
        tally.add(done, errors);
        Ok::<(), String>(())
    };
    let done = crate::bulk::in_order(ids, jobs, work, sink).await;
    // The checkpoints this replay published reach the witnesses before the process exits.
    witnesses.settle().await;
    done.map_err(|e| e.to_string())?
}

/// The replays of a batch as they finish: a line each on a terminal (streamed), and what
/// the summary needs.
struct ReplayTally {
    judges: crate::replay::JudgesFrom,
    json: bool,
    bar: indicatif::ProgressBar,
    done: Vec<crate::replay::Replayed>,
    already: Vec<(String, String)>,
    errors: Vec<String>,
}

impl ReplayTally {
    fn new(
        judges: crate::replay::JudgesFrom,
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

    fn add(&mut self, done: Option<crate::replay::Resumed>, mut errors: Vec<String>) {
        self.bar.inc(1);
        self.errors.append(&mut errors);
        match done {
            Some(crate::replay::Resumed::Replayed(r)) => {
                if !self.json {
                    self.bar.suspend(|| println!("{}", replay_line(&r)));
                }
                self.done.push(r);
            }
            Some(crate::replay::Resumed::AlreadyReplayed { source, replay }) => {
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

fn replay_line(r: &crate::replay::Replayed) -> String {
    let show = |o: Option<crate::doc::Outcome>| o.map(|o| o.as_str()).unwrap_or("?");
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
async fn replay_ids(
    archive: Option<&crate::import::Archive>,
    engine: &Engine,
    all: bool,
    runs: &[String],
    errors: &mut Vec<String>,
) -> Result<Vec<crate::ids::RunId>, u8> {
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
            .store
            .list_runs()
            .await
            .map_err(crate::import::ImportError::from),
    };
    listed.map_err(fail)
}

/// Imports one run from an archive before its replay; false when it is not to be replayed
/// (already a replay, undecided under `--all`, or refused: the reason is in `errors`).
async fn import_one(
    src: &crate::import::Archive,
    engine: &Engine,
    id: &crate::ids::RunId,
    trusted: &[crate::sealing::PublicKey],
    limits: crate::import::Limits,
    all: bool,
    errors: &mut Vec<String>,
) -> bool {
    match crate::import::import_run(src, &engine.store, id, trusted, limits, all).await {
        // The imported run verified against the trusted keys: this store's log now accounts
        // for it (a checkpoint signed by this process's key).
        Ok(crate::import::Imported::Copied { .. }) => {
            if let Some(key) = &engine.key {
                if let Err(e) = engine.log.append_trusted(id, key, trusted).await {
                    errors.push(format!("{id}: log: {e}"));
                    return false;
                }
            }
            true
        }
        Ok(crate::import::Imported::IsReplay) => false,
        // --all takes decided runs only; an undecided one is not an error there.
        Err(crate::import::ImportError::NotDecided { .. }) if all => false,
        Err(e) => {
            errors.push(format!("{id}: import: {e}"));
            false
        }
    }
}

/// The replay summary: JSON, or (the replay lines were streamed) the errors, the totals and
/// the flipped outcomes.
fn print_replays(
    done: &[crate::replay::Replayed],
    already: &[(String, String)],
    errors: &[String],
    judges: crate::replay::JudgesFrom,
    json: bool,
) {
    let reproduced = done.iter().filter(|r| r.consensus_reproduced).count();
    let flipped: Vec<&crate::replay::Replayed> = done
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
    let show = |o: Option<crate::doc::Outcome>| o.map(|o| o.as_str()).unwrap_or("?");
    for r in &flipped {
        println!(
            "  flipped {}: {} -> {}",
            r.source,
            show(r.old_outcome),
            show(r.new_outcome)
        );
    }
}

fn cmd_validate(files: &[PathBuf], limit: u64) -> u8 {
    let mut worst = 0u8;
    for file in files {
        let report = validate_file(file, limit);
        match &report {
            Report::Valid(kind) => println!("valid    {} ({})", file.display(), kind.name()),
            Report::Invalid(kind, findings) => {
                println!(
                    "INVALID  {} ({}): {} problem{}",
                    file.display(),
                    kind.name(),
                    findings.len(),
                    if findings.len() == 1 { "" } else { "s" }
                );
                for f in findings {
                    println!("    {f}");
                }
            }
            Report::Unusable(reason) => eprintln!("ERROR    {}: {reason}", file.display()),
        }
        worst = worst.max(report.exit_code());
    }
    worst
}

/// Reads (through [`crate::fsio`]: no link, no special file, at most `limit` bytes read) and
/// validates one file.
pub fn validate_file(path: &Path, limit: u64) -> Report {
    match crate::fsio::read(path, limit) {
        Ok(bytes) => validate::validate_bytes(&bytes, limit),
        Err(e) => Report::Unusable(unusable_file(e)),
    }
}

fn unusable_file(e: crate::fsio::FsError) -> String {
    use crate::fsio::FsError;
    match e {
        FsError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
        FsError::Symlink { .. } => "not a regular file (a symbolic link)".into(),
        FsError::TooLarge { limit, .. } => format!("over the size limit of {limit} bytes"),
        FsError::Missing { .. } => "cannot read: no such file".into(),
        other => format!("cannot read: {other}"),
    }
}
