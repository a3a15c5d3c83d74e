//! The `seal` command line: clap definitions, one function per command, exit codes in one place.
//!
//! Exit codes: 0 success (valid, verified, sealed); 1 a negative answer (invalid document, not
//! verified, a run folder refused); 2 could not run (bad arguments, unreadable input, store,
//! config or key errors).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Validate documents: kind by schemaVersion, JSON Schema 2020-12, then DESIGN §6 invariants.
    Validate {
        /// Files to validate.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Size limit in bytes (default: limits.max_document_bytes of the config, 64 MiB).
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
    },
    /// Make an ed25519 key pair: DIR/seal.key.pem (PKCS#8, 0600) and DIR/seal.pub.pem (SPKI).
    Keygen {
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
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

fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
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
    if config.seed_salt_is_default {
        tracing::warn!("no seed salt in the environment: using the development salt (policy seeds are predictable)");
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
        Command::Keygen { out } => {
            let key = SigningKey::generate();
            match key.write_pair(out) {
                Ok((k, p)) => {
                    println!(
                        "private key {} (mode 0600)\npublic key  {}\nkeyid       {}",
                        k.display(),
                        p.display(),
                        key.key_id
                    );
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Judge {
            run_dir,
            store,
            key,
            json,
        } => {
            init_logging(cli.log_format, "warn");
            let config = match load_config(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let key_path = key.clone().unwrap_or_else(|| config.signing_key.clone());
            let key = match load_key(&key_path) {
                Ok(k) => k,
                Err(code) => return code,
            };
            let rt = match runtime() {
                Ok(r) => r,
                Err(code) => return code,
            };
            rt.block_on(async {
                let folder =
                    match crate::runfolder::RunFolder::read(run_dir, config.max_document_bytes) {
                        Ok(f) => f,
                        Err(e) => {
                            eprintln!("seal: {e}");
                            return 1;
                        }
                    };
                let engine = match engine(config, store.as_deref(), Some(key)).await {
                    Ok(e) => e,
                    Err(code) => return code,
                };
                match crate::runfolder::judge(&engine, &folder).await {
                    Ok(done) => {
                        let summary = match report::summarize(&engine.store, &done).await {
                            Ok(s) => s,
                            Err(e) => return fail(e),
                        };
                        if *json {
                            println!(
                                "{}",
                                serde_json::to_string_pretty(&summary).unwrap_or_default()
                            );
                        } else {
                            print!("{}", report::render(&summary));
                        }
                        0
                    }
                    Err(crate::runfolder::JudgeRunError::Intake(e)) => {
                        eprintln!("seal: {e}");
                        1
                    }
                    Err(e) => fail(e),
                }
            })
        }
    }
}

fn cmd_validate(files: &[PathBuf], limit: u64) -> u8 {
    let mut worst = 0u8;
    for file in files {
        let report = validate::validate_file(file, limit);
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
