//! The `seal` command line: clap definitions, one file per command, exit codes in one place.
//!
//! Every command is `run(…) -> Result<ExitStatus, CliError>`; [`main`] maps that to the exit
//! code once ([`error::exit_code`]): **0** the answer is yes (valid, verified, sealed,
//! written); **1** the command judged its input and the answer is no (a document invalid, a run
//! not verified, a run folder or Verdict refused, some replays failed, a log not verified);
//! **2** the command could not answer (usage and bad values, config, key files, the store, a
//! named run absent, an unreadable input or an existing output, infrastructure, corruption).
//!
//! - shared: [`args`] (values checked where clap reads them), [`context`] (logging, config,
//!   runtime, keys, stores, engine), [`error`] (how a command ends), [`output`] (progress,
//!   output files), [`terminal`] (text made safe for a terminal), [`bulk`] (worker threads
//!   of `verify --all` and `replay --all`);
//! - one file per command: [`validate`], [`keygen`], [`verify`], [`explain`], [`stats`],
//!   [`replay`], [`review`], [`labels`], [`serve`], [`adapt`], [`export`], [`log`], [`witness`], [`judge`], [`judges`],
//!   [`shadow_report`], [`gc`].

pub mod adapt;
pub mod args;
pub mod bulk;
pub mod context;
pub mod error;
pub mod explain;
pub mod export;
pub mod gc;
pub mod judge;
pub mod judges;
pub mod keygen;
pub mod labels;
pub mod log;
pub mod output;
pub mod policy;
pub mod replay;
pub mod report;
pub mod review;
pub mod serve;
pub mod shadow_report;
pub mod stats;
pub mod telemetry;
pub mod terminal;
pub mod validate;
pub mod verify;
pub mod witness;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

use context::Context;
use error::{CliError, ExitStatus};

/// `seal --version`: the package version, the commit it was built from and the compiler
/// (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SEAL_GIT_COMMIT"),
    ", rustc ",
    env!("SEAL_RUSTC_VERSION"),
    ")"
);

/// What `seal_build_info` and the start-up line say about this binary.
pub fn build_info() -> seal_server::BuildInfo {
    seal_server::BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("SEAL_GIT_COMMIT"),
        rustc: env!("SEAL_RUSTC_VERSION"),
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "seal",
    version = VERSION,
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
    /// Validate documents: kind by schemaVersion, JSON Schema 2020-12, then the cross-field
    /// invariants. Exit 0 all valid, 1 some invalid, 2 some file unusable.
    Validate(validate::ValidateArgs),
    /// Make an ed25519 key pair, DIR/seal.key.pem (PKCS#8, 0600) and DIR/seal.pub.pem (SPKI),
    /// and the deployment secret DIR/seal.secret (32 random bytes as hex, 0600). DIR is created
    /// 0700; a link or a folder writable by others is refused. Exit 0 written, 2 refused.
    Keygen(keygen::KeygenArgs),
    /// Verify sealed runs: signature, subject, schemas, every ref re-hashed, consensus,
    /// independence and blinding recomputed, invariants. Exit 0 verified, 1 not, 2 could not run.
    Verify(verify::VerifyArgs),
    /// Review a sealed run: a person's per-obligation decision, signed with their own ed25519
    /// key (DSSE, in-toto), logged, then stored beside the run; the run must verify first.
    /// Exit 0 stored, 1 refused, 2 could not run.
    Review(review::ReviewArgs),
    /// Explain a sealed run: its evidence-bound decision tree (seal.decision-tree/1) as JSON,
    /// or as a self-contained HTML page. The run is verified first. Exit 0 explained, 1 the run
    /// does not verify, 2 could not run.
    Explain(explain::ExplainArgs),
    /// Figures over the decided runs that verify: judge agreement (confusion matrices, Cohen's
    /// kappa with a seeded 95% bootstrap interval) per obligation, genre and day; outcomes,
    /// roll 2, infra causes; slot attempts, latency and cost; replay flips. Runs that do not
    /// verify are counted and listed, never used. Exit 0, 2 could not run (bad options too).
    Stats(stats::StatsArgs),
    /// Signed reports over the store's verified runs.
    #[command(subcommand)]
    Report(ReportCommand),
    /// List what crashes left in the store (uncommitted objects, undecided runs) with what
    /// completes each; deletes nothing. Exit 0 listed, 2 could not run (or no --dry-run).
    Gc(gc::GcArgs),
    /// Re-judge decided runs into new historical_replay runs. Exit 0 all replayed, 1 some
    /// failed, 2 could not run.
    Replay(replay::ReplayArgs),
    /// Run the HTTP/JSON daemon for the pipeline's workers. Exit 0 after SIGTERM, 2 refused.
    Serve(serve::ServeArgs),
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
    /// Judge a run folder end to end: rolls, finalPostguard, seal. Exit 0 sealed, 1 the
    /// folder refused, 2 could not run.
    Judge(judge::JudgeArgs),
    /// The judge policy (seal.judge-policy/1): `show` one, `diff` two, `log` the registrations
    /// in the transparency log.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// The configured judges: `check` sends each slot one minimal request.
    #[command(subcommand)]
    Judges(judges::JudgesCommand),
    /// Legacy agent-loop Verdicts (a JSONL ledger) against the verified v3_shadow runs of the
    /// same designs: legacy accept/fix/kill × v3 outcome, agreement and Cohen's kappa on
    /// accept-vs-not (seeded 95% bootstrap interval) per genre and evidence mode, every
    /// disagreement. Exit 0, 2 could not run.
    ShadowReport(shadow_report::ShadowReportArgs),
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// How far the judges can be trusted, calibrated on trusted human reviews (accuracy, error
    /// correlation, effective votes, consensus coverage and agreement, served models), as an
    /// in-toto Statement (predicate seal.reliability/1) in a DSSE envelope signed by the seal
    /// key. Exit 0 written, 2 could not run.
    Reliability(report::ReliabilityArgs),
}

#[derive(Debug, Subcommand)]
pub enum AdaptCommand {
    /// An agent-loop Verdict (verdict.schema.json) → a run folder `seal judge` accepts.
    /// Exit 0 written, 1 the Verdict refused, 2 could not run.
    Verdict(adapt::AdaptArgs),
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A decided run carrying _designId, _taskId and _traceId → a Verdict record. Exit 0
    /// exported, 1 the run does not verify or has no Verdict, 2 could not run.
    Verdict(export::ExportArgs),
    /// Per-obligation labels (judge A, judge B, consensus, PlaySpec check, latest trusted human
    /// review) of the runs that verify, one JSON line (seal.label/1) per run, roll and
    /// obligation, in a fixed order. Exit 0 written, 2 could not run.
    Labels(labels::LabelsArgs),
}

impl Command {
    /// The log level when `SEAL_LOG` is not set: the daemons say where they listen.
    fn log_level(&self) -> &'static str {
        match self {
            Command::Serve(_) | Command::Witness(_) => "info",
            _ => "warn",
        }
    }
}

/// Entry point used by the binary: parse, run, and map the result to the exit code.
pub fn main() -> ExitCode {
    main_with(|| {})
}

/// [`main`], calling `quiet_pipes` first for every command but the daemons (`serve`, `witness
/// serve`): the binary passes a function that restores SIGPIPE's default, so a command whose
/// reader went away ends quietly instead of panicking on EPIPE.
pub fn main_with(quiet_pipes: fn()) -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // A usage error is "could not answer"; --help and --version are answers.
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if !matches!(cli.command, Command::Serve(_) | Command::Witness(_)) {
        quiet_pipes();
    }
    ExitCode::from(error::exit_code(run(cli)))
}

/// Runs a parsed command.
pub fn run(cli: Cli) -> Result<ExitStatus, CliError> {
    let config = cli.config.as_deref();
    // The commands that share a context load the configuration before logging starts: its
    // `[telemetry]` says where traces go. A configuration that does not load is reported as
    // the command's error, after logging is set up.
    let ctx = match &cli.command {
        Command::Validate(_) | Command::Keygen(_) | Command::Adapt(_) | Command::Witness(_) => None,
        _ => Some(Context::new(config)),
    };
    let otlp = match &ctx {
        Some(Ok(c)) => c.config().telemetry.otlp_endpoint.clone(),
        _ => None,
    };
    let traces = context::init_logging(cli.log_format, cli.command.log_level(), otlp.as_deref());
    let done = dispatch(cli.command, cli.log_format, config, ctx);
    traces.shutdown();
    done
}

/// Runs `command`, on `ctx` (loaded by [`run`]) when it needs one.
fn dispatch(
    command: Command,
    format: LogFormat,
    config: Option<&std::path::Path>,
    ctx: Option<Result<Context, CliError>>,
) -> Result<ExitStatus, CliError> {
    let ctx = move || ctx.unwrap_or_else(|| Context::new(config));
    match command {
        // No store, no runtime: these read files only.
        Command::Validate(args) => validate::run(config, args),
        Command::Keygen(args) => keygen::run(args),
        Command::Adapt(AdaptCommand::Verdict(args)) => adapt::run(args),
        // A witness runs on another host, with nothing of seal's configuration.
        Command::Witness(cmd) => witness::run_command(cmd),
        // The others share one context: the configuration and a runtime.
        Command::Verify(args) => verify::run(&ctx()?, args),
        Command::Explain(args) => explain::run(&ctx()?, args),
        Command::Review(args) => review::run(&ctx()?, args),
        Command::Stats(args) => stats::run(&ctx()?, args),
        Command::Report(ReportCommand::Reliability(args)) => report::reliability(&ctx()?, args),
        Command::Replay(args) => replay::run(&ctx()?, args),
        Command::Gc(args) => gc::run(&ctx()?, args),
        Command::Serve(args) => serve::run(&ctx()?, args, format),
        Command::Export(ExportCommand::Verdict(args)) => export::run(&ctx()?, args),
        Command::Export(ExportCommand::Labels(args)) => labels::run(&ctx()?, args),
        Command::Log(cmd) => log::run(&ctx()?, cmd),
        Command::Judge(args) => judge::run(&ctx()?, args),
        Command::Judges(cmd) => judges::run(&ctx()?, cmd),
        Command::Policy(cmd) => policy::run(&ctx()?, cmd),
        Command::ShadowReport(args) => shadow_report::run(&ctx()?, args),
    }
}
