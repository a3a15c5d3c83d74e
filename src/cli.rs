//! The `seal` command line: clap definitions, one function per command, exit codes in one place.
//!
//! Exit codes: 0 success (valid, verified, sealed), 1 a negative answer (invalid document, not
//! verified), 2 could not run (bad arguments, unreadable input, store or config errors).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::validate::{self, Report};

#[derive(Debug, Parser)]
#[command(name = "seal", version, about = "Dual-judge consensus and evidence sealing for playtest/3")]
pub struct Cli {
    /// Configuration file (default: config/seal.toml, else the embedded default).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
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

fn load_config(cli: &Cli) -> Result<Config, u8> {
    Config::load(cli.config.as_deref()).map_err(|e| {
        eprintln!("seal: {e}");
        2
    })
}

/// Runs a parsed command; returns the exit code.
pub fn run(cli: Cli) -> u8 {
    match &cli.command {
        Command::Validate { files, max_bytes } => {
            let limit = match max_bytes {
                Some(b) => *b,
                None => match load_config(&cli) {
                    Ok(c) => c.max_document_bytes,
                    Err(code) => return code,
                },
            };
            cmd_validate(files, limit)
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
