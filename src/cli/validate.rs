//! `seal validate`: documents checked (kind, schema, invariants) from files. A `.jsonl` or
//! `.ndjson` file holds one document a line (`seal export labels` writes one): each line is
//! checked on its own and reported as `FILE:LINE`.
//!
//! Exit 0 every file valid, 1 some document invalid (the answer is no), 2 some file could not
//! be validated at all (unreadable, over the limit, not a kind seal knows): then there is no
//! answer for it, whatever the other files say.

use std::path::{Path, PathBuf};

use seal_core::validate::Report;
use seal_engine::config::Config;

use super::error::{CliError, ExitStatus};

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Files to validate.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Size limit in bytes (default: limits.max_document_bytes of the config, 64 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_bytes: Option<u64>,
}

/// Validates every file, a line (or block) each; the configuration is read only for its
/// document limit, when `--max-bytes` is not given.
pub fn run(config: Option<&Path>, args: ValidateArgs) -> Result<ExitStatus, CliError> {
    let limit = match args.max_bytes {
        Some(b) => b,
        None => Config::load(config)?.max_document_bytes,
    };
    let (mut invalid, mut unusable, mut documents) = (0usize, 0usize, 0usize);
    for file in &args.files {
        for (name, report) in validate_path(file, limit) {
            documents += 1;
            match report {
                Report::Valid(kind) => println!("valid    {name} ({})", kind.name()),
                Report::Invalid(kind, findings) => {
                    invalid += 1;
                    println!(
                        "INVALID  {name} ({}): {} problem{}",
                        kind.name(),
                        findings.len(),
                        if findings.len() == 1 { "" } else { "s" }
                    );
                    for f in findings {
                        println!("    {f}");
                    }
                }
                Report::Unusable(reason) => {
                    unusable += 1;
                    eprintln!("ERROR    {name}: {reason}");
                }
            }
        }
    }
    if unusable > 0 {
        return Err(CliError::Unusable {
            files: unusable,
            of: documents,
        });
    }
    Ok(ExitStatus::yes_if(invalid == 0))
}

/// The reports of one file: one for a document, one a line for JSON lines (`.jsonl`,
/// `.ndjson`; blank lines skipped), each with the name it is shown under (`FILE`, `FILE:LINE`).
/// File names and lines are escaped for the terminal: both come from outside.
fn validate_path(path: &Path, limit: u64) -> Vec<(String, Report)> {
    let shown = super::output::terminal_safe(&path.display().to_string()).into_owned();
    let jsonl = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson"));
    if !jsonl {
        return vec![(shown, validate_file(path, limit))];
    }
    let bytes = match seal_fs::fsio::read(path, limit) {
        Ok(b) => b,
        Err(e) => return vec![(shown, Report::Unusable(unusable_file(e)))],
    };
    let reports: Vec<(String, Report)> = bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(i, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            (
                format!("{shown}:{}", i + 1),
                seal_core::validate::validate_bytes(line, limit),
            )
        })
        .collect();
    if reports.is_empty() {
        return vec![(
            shown,
            Report::Unusable("no document: every line is blank".into()),
        )];
    }
    reports
}

/// Reads (through [`seal_fs::fsio`]: no link, no special file, at most `limit` bytes read) and
/// validates one file.
pub fn validate_file(path: &Path, limit: u64) -> Report {
    match seal_fs::fsio::read(path, limit) {
        Ok(bytes) => seal_core::validate::validate_bytes(&bytes, limit),
        Err(e) => Report::Unusable(unusable_file(e)),
    }
}

fn unusable_file(e: seal_fs::fsio::FsError) -> String {
    use seal_fs::fsio::FsError;
    match e {
        FsError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
        FsError::Symlink { .. } => "not a regular file (a symbolic link)".into(),
        FsError::TooLarge { limit, .. } => format!("over the size limit of {limit} bytes"),
        FsError::Missing { .. } => "cannot read: no such file".into(),
        other => format!("cannot read: {other}"),
    }
}
