//! The `seal` command line: clap definitions, one file per command, exit codes in one place.
//!
//! Exit codes: 0 success (valid, verified, sealed); 1 a negative answer (invalid document, not
//! verified, a run folder refused); 2 could not run (bad arguments, unreadable input, store,
//! config or key errors).
//!
//! - shared: [`context`] (logging, config, runtime, keys, engine), [`error`] (how a command
//!   fails), [`output`] (progress, output files, terminal-safe text), [`bulk`] (worker threads
//!   of `verify --all` and `replay --all`);
//! - one file per command: [`validate`], [`keygen`], [`verify`], [`explain`], [`stats`],
//!   [`replay`], [`serve`], [`adapt`], [`export`], [`log`], [`witness`], [`judge`].

pub mod adapt;
pub mod bulk;
pub mod context;
pub mod error;
pub mod explain;
pub mod export;
pub mod judge;
pub mod keygen;
pub mod log;
pub mod output;
pub mod replay;
pub mod serve;
pub mod stats;
pub mod validate;
pub mod verify;
pub mod witness;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use seal_core::sealing::SigningKey;
use seal_core::validate::Report;
use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_engine::replay::JudgesFrom;
use seal_engine::summary;
use seal_store::Store;

use adapt::cmd_adapt;
use context::*;
use error::*;
use explain::{cmd_explain, ExplainArgs};
use export::cmd_export_verdict;
use judge::cmd_judge;
use keygen::cmd_keygen;
use log::cmd_log;
use output::*;
use replay::{cmd_replay, ReplayArgs};
use serve::cmd_serve;
use stats::{cmd_stats, StatsArgs};
use validate::cmd_validate;
use verify::cmd_verify;
use witness::cmd_witness;

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
        witnesses: log::WitnessArgs,
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
        judges: JudgesArg,
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
    Log(log::LogCommand),
    /// Run a transparency-log witness (C2SP tlog-witness) for a seal log.
    #[command(subcommand)]
    Witness(witness::WitnessCommand),
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

/// `--judges` of `seal replay`: where replayed judge answers come from.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum JudgesArg {
    /// Re-use the stored raw answers (no model call, no cost).
    Stored,
    /// Ask both judges again.
    Live,
}

impl From<JudgesArg> for JudgesFrom {
    fn from(a: JudgesArg) -> JudgesFrom {
        match a {
            JudgesArg::Stored => JudgesFrom::Stored,
            JudgesArg::Live => JudgesFrom::Live,
        }
    }
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
                query: seal_engine::stats::Query {
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
                judges: (*judges).into(),
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
